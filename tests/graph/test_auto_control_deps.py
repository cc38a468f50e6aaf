"""A traced function keeps eager meaning for state: reads see earlier writes, every write
runs, in program order (automatic control dependencies, as in TensorFlow's tf.function)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import Graph, Session, cond, function, placeholder
from eagerflow.graph.core.auto_control_deps import add_automatic_control_dependencies


# --- the examples that used to give silent wrong answers -----------------------------------
def test_reads_see_the_writes_before_them() -> None:
    def f(x, y):  # type: ignore[no-untyped-def]
        a.assign(y * b)
        b.assign_add(x * a)
        return a + b

    a, b = Variable(1.0), Variable(2.0)
    assert float(f(1.0, 2.0)) == 10.0 and (a.numpy(), b.numpy()) == (4.0, 6.0)
    a, b = Variable(1.0), Variable(2.0)
    assert float(function(f)(1.0, 2.0)) == 10.0 and (a.numpy(), b.numpy()) == (4.0, 6.0)


def test_two_updates_in_a_row_both_count() -> None:
    v = Variable(3.0)

    @function
    def f():  # type: ignore[no-untyped-def]
        v.assign(v * 2)
        v.assign(v * 2)
        return v.read_value()

    assert float(f()) == 12.0 and float(f()) == 48.0


def test_a_value_computed_after_an_update_uses_the_update() -> None:
    w = Variable(1.0)

    @function
    def f(x):  # type: ignore[no-untyped-def]
        w.assign_add(10.0)
        return w * x

    assert float(f(2.0)) == 22.0 and float(w.numpy()) == 11.0


def test_assign_returns_the_variable_in_a_function_as_eagerly() -> None:
    def f():  # type: ignore[no-untyped-def]
        r = v.assign(5.0)
        v.assign(7.0)
        return r + 0.0  # r is the variable: read here, after the second assign

    v = Variable(1.0)
    eager = float(f())
    v = Variable(1.0)
    assert float(function(f)()) == eager == 7.0


# --- random programs: eager and traced agree, values and gradients ------------------------
KINDS = ("read", "assign", "assign_add", "assign_sub")
STEPS = st.lists(
    st.tuples(
        st.sampled_from(KINDS),
        st.integers(0, 1),  # the variable read or written
        st.integers(0, 1),  # the variable the written value is computed from
        st.sampled_from([0.5, 2.0, -1.5]),
    ),
    min_size=1,
    max_size=8,
)


def _program(steps, variables, x):  # type: ignore[no-untyped-def]
    """Reads and updates in the order of ``steps``; returns every read and the final sum."""
    results = []
    for kind, i, j, c in steps:
        if kind == "read":
            results.append(variables[i].read_value() * 1.0)
        else:
            getattr(variables[i], kind)(variables[j] * c + x)
    return [*results, variables[0] + variables[1] * x]


def _run(steps, traced: bool, calls: int = 2):  # type: ignore[no-untyped-def]
    variables = [Variable(np.float64(1.5)), Variable(np.float64(-0.5))]

    def program(x):  # type: ignore[no-untyped-def]
        return _program(steps, variables, x)

    run = function(program) if traced else program
    outputs, grads = [], []
    for k in range(calls):
        x = ef.constant(np.float64(0.25 + k))
        with GradientTape() as tape:
            tape.watch(x)
            out = run(x)
        outputs.append([o.numpy() for o in out])
        total = sum(out[1:], out[0])
        grads.append(
            [g.numpy() for g in tape.gradient(total, [x, *variables], unconnected_gradients="zero")]
        )
    return outputs, grads, [v.numpy() for v in variables]


@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_any_sequence_of_reads_and_writes_gives_the_eager_result(steps) -> None:  # type: ignore[no-untyped-def]
    eager_out, eager_grads, eager_final = _run(steps, traced=False)
    out, grads, final = _run(steps, traced=True)
    assert final == eager_final
    assert out == eager_out  # the same kernels in the same order: bit for bit
    for got, want in zip(grads, eager_grads, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


# --- the pass itself ----------------------------------------------------------------------
def _ops(graph, kind):  # type: ignore[no-untyped-def]
    return [o for o in graph.get_operations() if o.type == kind]


def test_the_edges_the_pass_adds() -> None:
    v, w = Variable(1.0, name="v"), Variable(2.0, name="w")

    @function
    def f(x):  # type: ignore[no-untyped-def]
        a = v * 1.0  # read v (1)
        b = w * 1.0  # read w: no order with v's ops
        v.assign(x)  # write v: after read (1)
        c = v * 2.0  # read v (2): after the write
        ef.random_uniform(())  # a barrier: after everything stateful so far
        return a + b + c + w  # read w (2): after the barrier

    graph = f.get_concrete_function(ef.constant(1.0)).graph
    read_v1, read_w1, read_v2, read_w2 = _ops(graph, "ReadVariableOp")
    (write,) = _ops(graph, "AssignVariableOp")
    (barrier,) = _ops(graph, "RandomUniform")
    assert read_v1.control_inputs == () and read_w1.control_inputs == ()
    assert write.control_inputs == (read_v1,)
    assert read_v2.control_inputs == (write,)
    assert set(barrier.control_inputs) == {write, read_v2, read_w1}
    assert read_w2.control_inputs == (barrier,)


def test_a_graph_built_for_a_session_keeps_tf1_semantics() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(1.0)
        read = v.read_value()
        v.assign(2.0)
    assert all(o.control_inputs == () for o in g.get_operations() if o.type != "NoOp")
    with Session(g) as s:
        s.run(v.initializer)
        assert s.run(read) == 1.0  # ordered by data edges only: the assign did not run


def test_pass_returns_the_ops_that_must_run() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(1.0)
        v.read_value()
        v.assign_add(1.0)
    effects = add_automatic_control_dependencies(g)
    assert [o.type for o in effects] == ["AssignVariableOp", "AssignAddVariableOp"]


# --- effects run once, and where the code put them -----------------------------------------
def test_an_assign_inside_a_cond_branch_runs() -> None:
    v = Variable(0.0)

    @function
    def f(p):  # type: ignore[no-untyped-def]
        def bump():  # type: ignore[no-untyped-def]
            v.assign_add(1.0)
            return ef.constant(1.0)

        return cond(p, bump, lambda: ef.constant(0.0))

    f(ef.constant(True))
    f(ef.constant(False))
    f(ef.constant(True))
    assert float(v.numpy()) == 2.0


def test_a_gradient_through_a_function_never_runs_its_updates_again() -> None:
    v = Variable(1.0)

    @function
    def f(x):  # type: ignore[no-untyped-def]
        v.assign_add(1.0)
        return v * x

    x = ef.constant(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    assert float(y) == 6.0 and float(v.numpy()) == 2.0
    assert float(tape.gradient(y, x)) == 2.0 and float(tape.gradient(y, v)) == 3.0
    assert float(v.numpy()) == 2.0  # the backward pass did not add 1 again


def test_a_gradient_through_a_function_sees_the_same_random_numbers() -> None:
    @function
    def f(x):  # type: ignore[no-untyped-def]
        return x * ef.random_uniform((5,), dtype=ef.float64)

    x = ef.constant(np.ones(5))
    with GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), y.numpy())


def test_second_order_through_a_function_that_reads_a_variable_after_a_write() -> None:
    v = Variable(np.float64(2.0))

    @function
    def f(x):  # type: ignore[no-untyped-def]
        v.assign(v * 1.0)  # a write; the read below must come after it
        return v * x * x * x

    x = ef.constant(np.float64(1.5))
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    assert float(dy) == pytest.approx(3 * 2.0 * 1.5**2)
    assert float(outer.gradient(dy, x)) == pytest.approx(6 * 2.0 * 1.5)


def test_a_function_called_in_a_session_graph_orders_its_effects() -> None:
    v = Variable(1.0)

    @function
    def f(x):  # type: ignore[no-untyped-def]
        v.assign_add(x)
        return v * 2.0

    g = Graph()
    with g.as_default():
        p = placeholder(ef.float32, ())
        y = f(p)
    with Session(g) as s:
        assert s.run(y, {p: 1.0}) == 4.0
        assert s.run(y, {p: 1.0}) == 6.0
