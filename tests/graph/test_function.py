"""@function: trace once per signature, run the graph after; gradients through calls."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable, check_gradients
from eagerflow.graph import Graph, Session, function, placeholder


def test_traces_once_per_signature_and_prints_only_while_tracing(capsys) -> None:  # type: ignore[no-untyped-def]
    @function
    def f(x, scale=2.0):  # type: ignore[no-untyped-def]
        print("tracing", x.shape, scale)
        return ef.reduce_sum(x * x) * scale

    a = ef.constant([1.0, 2.0])
    assert float(f(a)) == 10.0
    assert float(f(ef.constant([3.0, 4.0]))) == 50.0  # same signature: no retrace
    assert float(f(a, scale=3.0)) == 15.0  # a new Python value: retrace
    assert float(f(ef.constant([1.0, 2.0, 3.0]))) == 28.0  # a new shape: retrace
    assert float(f(ef.constant([1.0, 2.0], dtype=ef.float64))) == 10.0  # a new dtype: retrace
    assert f.trace_count == 4
    assert capsys.readouterr().out.splitlines() == [
        "tracing (2,) 2.0",
        "tracing (2,) 3.0",
        "tracing (3,) 2.0",
        "tracing (2,) 2.0",
    ]


def test_returns_eager_tensors_in_the_same_structure() -> None:
    @function
    def f(x):  # type: ignore[no-untyped-def]
        return {"double": x * 2.0, "pair": (x + 1.0, ef.reduce_sum(x))}

    out = f(np.array([1.0, 2.0]))  # NumPy arrays are tensors here
    assert isinstance(out["double"], ef.Tensor) and ef.executing_eagerly()
    assert out["double"].numpy().tolist() == [2.0, 4.0]
    assert out["pair"][1].numpy() == 3.0


def test_the_call_is_one_op_on_the_tape_and_differentiable() -> None:
    @function
    def f(x, y):  # type: ignore[no-untyped-def]
        return ef.reduce_sum(ef.tanh(x) * y)

    check_gradients(lambda x, y: f(x, y), [[0.5, -1.0], [2.0, 3.0]], order=2)
    x = ef.constant([0.5, -1.0])
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x, ef.constant([2.0, 3.0]))
    assert [entry[0].name for entry in tape._entries] == ["PartitionedCall"]  # private: one record
    (graph_op,) = [
        o for o in f.get_concrete_function(x, x).graph.get_operations() if o.type == "Tanh"
    ]
    assert graph_op is not None
    np.testing.assert_allclose(
        tape.gradient(y, x).numpy(), [2, 3] * (1 - np.tanh([0.5, -1.0]) ** 2), rtol=1e-6
    )


def test_variables_are_read_at_each_call_and_assignments_run() -> None:
    w = Variable(2.0, name="w")

    @function
    def bump(x):  # type: ignore[no-untyped-def]
        w.assign_add(1.0)
        return w * x  # read after the update, as in eager mode

    assert float(bump(ef.constant(1.0))) == 3.0
    assert float(w.numpy()) == 3.0
    assert float(bump(ef.constant(1.0))) == 4.0 and bump.trace_count == 1
    with GradientTape() as tape:
        y = bump(ef.constant(5.0))
    assert float(y) == 25.0
    assert float(tape.gradient(y, w)) == 5.0  # the tape saw the read of w


def test_training_step_as_a_function() -> None:
    rng = np.random.default_rng(0)
    xs = ef.constant(rng.standard_normal(500).astype(np.float32))
    ys = 3.0 * xs + 2.0
    w, b = Variable(5.0), Variable(10.0)

    @function
    def step(x, y):  # type: ignore[no-untyped-def]
        with GradientTape() as tape:
            err = w * x + b - y
            loss = ef.reduce_mean(err * err)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(0.1 * dw)
        b.assign_sub(0.1 * db)
        return loss

    losses = [float(step(xs, ys)) for _ in range(60)]
    assert step.trace_count == 1 and losses[-1] < 1e-4 < losses[0]
    assert abs(float(w.numpy()) - 3) < 0.01 and abs(float(b.numpy()) - 2) < 0.01


def test_variables_only_on_the_first_trace() -> None:
    created: list[Variable] = []

    @function
    def f(x):  # type: ignore[no-untyped-def]
        created.append(Variable(1.0))  # a new variable on every call: reusing it would lie
        return x * created[-1]

    # as TensorFlow: a trace that created variables is traced again, which must create none
    with pytest.raises(ValueError, match="only the first time"):
        f(ef.constant(3.0))

    @function
    def once(x):  # type: ignore[no-untyped-def]
        if not created:
            created.append(Variable(2.0))  # an eager variable: it outlives the trace
        created[0].assign_add(1.0)
        return x * created[0]

    created.clear()
    assert float(once(ef.constant(3.0))) == 9.0 and once.trace_count == 2
    assert once(ef.constant([1.0, 2.0])).numpy().tolist() == [4.0, 8.0]
    assert len(created) == 1


def test_calling_a_function_inside_a_graph() -> None:
    @function
    def square_sum(x):  # type: ignore[no-untyped-def]
        return ef.reduce_sum(x * x)

    g = Graph()
    with g.as_default():
        p = placeholder(ef.float32, (3,))
        y = square_sum(p) + 1.0
    assert "PartitionedCall" in {o.type for o in g.get_operations()}
    with Session(g) as s:
        assert s.run(y, {p: [1.0, 2.0, 3.0]}) == 15.0


def test_a_functions_repr_counts_its_traces_in_english() -> None:
    @function
    def double(x: ef.Tensor) -> ef.Tensor:
        return x * 2.0

    assert repr(double).endswith("(0 traces)>")
    double(ef.constant(1.0))
    assert repr(double).endswith("(1 trace)>")
    double(ef.constant([1.0, 2.0]))
    assert repr(double).endswith("(2 traces)>")


def test_a_general_trace_serves_many_shapes_with_bounded_caches() -> None:
    """A trace with a None size runs every length; remembering each exact shape for the fast
    path must not grow without end over a long run (one entry per batch size)."""
    from eagerflow.graph import TensorSpec
    from eagerflow.graph.tracing.function import FAST_CACHE_SIZE

    double = function(lambda x: x * 2.0)
    double.get_concrete_function(TensorSpec((None,), ef.float32))
    for n in range(1, FAST_CACHE_SIZE + 45):
        assert double(ef.ones((n,))).shape == (n,)
    assert double.trace_count == 1
    assert len(double._cache) == 1 and len(double._fast_cache) == FAST_CACHE_SIZE
