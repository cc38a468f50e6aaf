"""``jit_compile=True`` end to end: functions, Sessions, tapes through compiled functions,
optimizers' updates, errors, buffers, the cache per input signature, and the source."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import (
    Graph,
    Session,
    TensorSpec,
    function,
    global_variables_initializer,
    gradients,
    placeholder,
)
from eagerflow.graph.compiler import kernels


def regression_step(w: Variable, b: Variable) -> Callable[[ef.Tensor, ef.Tensor], ef.Tensor]:
    def step(x: ef.Tensor, y: ef.Tensor) -> ef.Tensor:
        with GradientTape() as tape:
            err = w * x + b - y
            loss = ef.reduce_mean(err * err)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(0.01 * dw)
        b.assign_sub(0.01 * db)
        return loss

    return step


def data(n: int = 200) -> tuple[ef.Tensor, ef.Tensor]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n).astype(np.float32)
    return ef.constant(x), ef.constant((3 * x + 2 + rng.standard_normal(n)).astype(np.float32))


def test_a_compiled_training_step_matches_the_interpreted_one(backend: str) -> None:
    x, y = data()
    runs = []
    for jit in (False, True):
        w, b = Variable(np.float32(5.0)), Variable(np.float32(10.0))
        step = function(regression_step(w, b), jit_compile=jit)
        losses = [float(step(x, y)) for _ in range(30)]
        runs.append([*losses, float(w.numpy()), float(b.numpy())])
        assert step.trace_count == 1
    # the sums are added in another order: equal within float32 rounding, step after step
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-5)


def test_each_input_signature_gets_its_own_program_compiled_once(backend: str) -> None:
    concrete = function(lambda x: ef.reduce_sum(ef.tanh(x) * x), jit_compile=True)
    traced = concrete.get_concrete_function(TensorSpec((None,), ef.float32))
    for n in (5, 5, 7, 5):
        got = traced(ef.constant(np.linspace(-1, 1, n, dtype=np.float32)))
        expected = np.sum(
            np.tanh(np.linspace(-1, 1, n, dtype=np.float32))
            * np.linspace(-1, 1, n, dtype=np.float32)
        )
        assert float(got) == pytest.approx(float(expected), rel=1e-6)
    programs = traced.compiled().programs
    assert sorted(programs) == [((5,),), ((7,),)]
    assert all(p.compile_seconds > 0 for p in programs.values())


def test_a_tape_through_a_compiled_function_first_and_second_order(backend: str) -> None:
    def f(x: ef.Tensor) -> ef.Tensor:
        return ef.reduce_sum(ef.tanh(x * x) * x + ef.exp(-x))

    values = np.array([0.3, -1.2, 2.0], np.float64)
    results = []
    for g in (f, function(f), function(f, jit_compile=True)):
        x = ef.constant(values)
        with GradientTape() as outer:
            outer.watch(x)
            with GradientTape() as inner:
                inner.watch(x)
                y = g(x)
            dx = inner.gradient(y, x)
            total = ef.reduce_sum(dx)
        d2x = outer.gradient(total, x)
        results.append([float(y), *dx.numpy(), *d2x.numpy()])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)
    np.testing.assert_allclose(results[2], results[0], rtol=1e-12)


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda: nn.GradientDescentOptimizer(0.1),
        lambda: nn.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
        lambda: nn.AdamOptimizer(0.01),
    ],
    ids=["sgd", "nesterov", "adam"],
)
def test_optimizers_update_the_same_in_a_compiled_session(
    backend: str, make_optimizer: Callable[[], Any]
) -> None:
    rng = np.random.default_rng(1)
    x_np = rng.standard_normal((32, 4)).astype(np.float32)
    y_np = rng.integers(0, 3, 32)
    results = []
    for jit in (False, True):
        g = Graph()
        with g.as_default():
            ef.set_seed(0)
            model = nn.Sequential([nn.Dense(8, "relu"), nn.Dense(3)])
            x = placeholder(ef.float32, (None, 4))
            y = placeholder(ef.int64, (None,))
            loss = ef.reduce_mean(
                nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x))
            )
            train = make_optimizer().minimize(loss)
            init = global_variables_initializer()
        with Session(g, jit_compile=jit) as session:
            session.run(init)
            losses = [session.run([loss, train], {x: x_np, y: y_np})[0] for _ in range(20)]
            results.append([*losses, *(session.run(v).ravel() for v in model.trainable_variables)])
    np.testing.assert_allclose(
        np.hstack(results[1][20:]), np.hstack(results[0][20:]), rtol=2e-5, atol=1e-6
    )
    np.testing.assert_allclose(results[1][:20], results[0][:20], rtol=2e-5)


def test_a_fetched_value_is_a_copy_not_the_reused_buffer(backend: str) -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (4,))
        y = ef.tanh(x) * 2.0 + 1.0
    with Session(g, jit_compile=True) as session:
        first = session.run(y, {x: np.zeros(4, np.float32)})
        second = session.run(y, {x: np.ones(4, np.float32)})
    np.testing.assert_array_equal(first, np.ones(4, np.float32))
    assert not np.array_equal(first, second)


def test_temporaries_share_buffers_when_their_lifetimes_do_not_overlap(backend: str) -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (64, 64))
        w = placeholder(ef.float32, (64, 64))
        h = x
        for _ in range(4):  # four matmuls in a row: each result dies after the next one
            h = ef.matmul(ef.tanh(h), w)
    with Session(g, jit_compile=True) as session:
        feed = {x: np.eye(64, dtype=np.float32), w: np.eye(64, dtype=np.float32) * 0.5}
        got = session.run(h, feed)
        expected = Session(g).run(h, feed)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
        (program,) = session.compiled(session.plan(h, feed)).programs.values()
    stats = program.stats
    assert stats["buffer_bytes"] < stats["planned_bytes"]  # some buffers serve several values
    assert stats["buffers"] <= 3


def test_a_variable_updated_with_a_fused_value(backend: str) -> None:
    w = Variable(np.zeros(1000, np.float32))

    @function(jit_compile=True)
    def step(x: ef.Tensor) -> None:
        w.assign_add(ef.tanh(x) * 0.5)

    x = ef.constant(np.ones(1000, np.float32))
    step(x)
    before = w.numpy()
    step(x)
    np.testing.assert_allclose(w.numpy(), before + np.tanh(1.0) * 0.5, rtol=1e-6)


def test_errors_are_the_interpreters_with_the_node_named(backend: str) -> None:
    g = Graph()
    with g.as_default():
        a = placeholder(ef.float32, (None, None), name="a")
        b = placeholder(ef.float32, (None, None), name="b")
        c = ef.matmul(ef.exp(a) * 2.0, b, name="product")
    feed = {a: np.ones((2, 3), np.float32), b: np.ones((4, 5), np.float32)}
    caught = []
    for jit in (False, True):
        with Session(g, jit_compile=jit) as session, pytest.raises(ef.ShapeError) as info:
            session.run(c, feed)
        caught.append((str(info.value), info.value.__notes__))
    assert caught[0] == caught[1]
    assert "MatMul" in caught[0][0] and caught[0][1] == ["(in graph node 'product')"]


def test_compiled_source_shows_the_fused_loop_and_the_program(backend: str) -> None:
    w, b = Variable(np.float32(1.0)), Variable(np.float32(0.0))
    step = function(regression_step(w, b), jit_compile=True)
    x, y = data(50)
    source = step.get_concrete_function(x, y).compiled_source()
    assert "def program(" in source
    if backend == "numba":
        assert source.count("for i0 in range(n0):") == 1  # the whole step's elementwise work
        assert "acc0 +=" in source
    else:
        assert "out=b" in source  # NumPy calls into planned buffers


def test_without_numba_the_numpy_backend_is_used_and_said_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("EAGERFLOW_JIT_BACKEND", raising=False)
    monkeypatch.setattr(kernels, "numba_available", lambda: False)
    monkeypatch.setattr(kernels, "_told_about_numba", False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        f = function(lambda x: ef.tanh(x) * 2.0 + 1.0, jit_compile=True)
        f(ef.constant([1.0, 2.0]))
        g = function(lambda x: ef.exp(x) - 1.0, jit_compile=True)
        g(ef.constant([1.0, 2.0]))
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1 and "numba is not installed" in messages[0]
    assert f.get_concrete_function(ef.constant([1.0, 2.0])).compiled().backend == "numpy"


def test_a_bad_backend_name_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EAGERFLOW_JIT_BACKEND", "xla")
    with pytest.raises(ValueError, match="EAGERFLOW_JIT_BACKEND must be one of"):
        kernels.default_backend()


def test_graph_gradients_in_a_compiled_session(backend: str) -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, (None, 3))
        y = ef.reduce_sum(ef.tanh(x) * ef.exp(x * 0.5), axis=1)
        (dx,) = gradients(y, [x])
    feed = {x: np.linspace(-2, 2, 12).reshape(4, 3)}
    with Session(g) as plain, Session(g, jit_compile=True) as jit:
        np.testing.assert_allclose(jit.run(dx, feed), plain.run(dx, feed), rtol=1e-13)


def test_the_program_draws_its_clusters_and_buffers(backend: str) -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None, 3), name="x")
        y = ef.reduce_sum(ef.abs(x * 2.0 + 1.0), axis=1)
        z = ef.matmul(ef.reshape(y, (1, -1)), ef.reshape(y, (-1, 1)))
    with Session(g, jit_compile=True) as session:
        feed = {x: np.ones((4, 3), np.float32)}
        session.run(z, feed)
        (program,) = session.compiled(session.plan(z, feed)).programs.values()
    boxed = program.to_mermaid()
    assert "subgraph n_scope_loop_" in boxed and '["loop 0 over (4, 3)"]' in boxed
    assert "subgraph" not in program.to_mermaid(clusters=False)
    assert "x<br/><small>float32 (4, 3)</small>" in boxed
    assert "MatMul: float32 (1, 1) → b" in program.to_mermaid(buffers=True)
    bundle = program._repr_mimebundle_()  # what Jupyter shows: the boxed picture
    assert bundle["text/markdown"] == f"```mermaid\n{boxed}```\n"
    assert bundle["text/plain"] == repr(program)


def test_values_of_unknown_shape_run_as_interpreted(backend: str) -> None:
    """A range with a fed bound has a shape only running can tell: its ops are not fused,
    and the result is the interpreter's."""
    g = Graph()
    with g.as_default():
        n = placeholder(ef.int32, (), name="n")
        r = ef.cast(ef.range(n), ef.float32)
        y = ef.reduce_sum(ef.abs(r * 2.0 - 3.0))
    with Session(g) as plain, Session(g, jit_compile=True) as jit:
        for value in (4, 7):
            assert jit.run(y, {n: value}) == plain.run(y, {n: value})
        (program,) = jit.compiled(jit.plan(y, {n: 4})).programs.values()
    assert program.stats["clusters"] == 0


def test_an_empty_maximum_is_the_interpreters_value(backend: str) -> None:
    """The largest and smallest of no elements are -inf and inf, as in TensorFlow, compiled
    (where a fused loop starts from them) as interpreted."""
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        y = [ef.reduce_max(ef.abs(x) + 1.0), ef.reduce_min(x * 2.0, axis=0)]
    results = []
    for jit in (False, True):
        with Session(g, jit_compile=jit) as session:
            results.append(session.run(y, {x: np.zeros(0, np.float32)}))
    assert results[0] == results[1] == [-np.inf, np.inf]


def test_without_a_writable_cache_loops_compile_in_memory(
    backend: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    if backend != "numba":
        pytest.skip("the NumPy backend compiles no loops")
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    monkeypatch.setenv("EAGERFLOW_CACHE_DIR", str(not_a_directory))
    monkeypatch.setattr(kernels, "_compiled", {})  # nothing compiled yet in this process
    f = function(lambda x: ef.reduce_sum(ef.abs(x) * 3.0 - 0.5), jit_compile=True)
    assert float(f(ef.constant([1.0, -2.0, 0.25]))) == 8.25
    assert list(not_a_directory.parent.iterdir()) == [not_a_directory]  # no file written


def test_variable_updates_happen_in_place(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The program drops each value after its last use, so the update's kernel finds the
    variable's array unshared and writes into it: no new array is stored."""
    from eagerflow.autodiff import variables

    w = Variable(np.zeros((50, 4), np.float32))
    v = Variable(np.float32(0.0))

    @function(jit_compile=True)
    def step(x: ef.Tensor) -> ef.Tensor:
        w.assign_sub(ef.tanh(x * w + 1.0) * 0.1)
        v.assign_add(ef.reduce_sum(x))
        return ef.reduce_sum(w)

    x = ef.constant(np.ones((50, 4), np.float32))
    step(x)
    stored = []
    monkeypatch.setattr(variables, "_set", lambda *args: stored.append(args))
    step(x)
    assert stored == []


def test_threads_calling_one_compiled_function_get_their_own_buffers(backend: str) -> None:
    import threading

    f = function(lambda x: ef.reduce_sum(ef.abs(x * 2.0 - 1.0), axis=1) * 0.5, jit_compile=True)
    inputs = [np.full((64, 32), float(k), np.float32) for k in range(4)]
    f(ef.constant(inputs[0]))  # compiled in this thread first
    barrier = threading.Barrier(4)
    wrong = []

    def work(k: int) -> None:
        barrier.wait()
        for _ in range(200):
            got = f(ef.constant(inputs[k])).numpy()
            if not np.all(got == np.float32(32 * abs(2 * k - 1) * 0.5)):
                wrong.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_what_runs_inside_control_flow_is_compiled_too(backend: str) -> None:
    def collatz_like(x: ef.Tensor) -> ef.Tensor:
        total = ef.zeros_like(x)
        i = ef.constant(0)
        while i < 5:
            if ef.reduce_sum(x) > 0:  # noqa: SIM108 (an if statement is the point)
                x = ef.abs(x * 0.5 - 1.0)
            else:
                x = x * 2.0 + 1.0
            total += x
            i += 1
        return total

    x = ef.constant(np.linspace(-2, 2, 8, dtype=np.float32))
    plain, compiled = function(collatz_like), function(collatz_like, jit_compile=True)
    np.testing.assert_array_equal(compiled(x).numpy(), plain(x).numpy())
    graph = compiled.get_concrete_function(x).graph
    (loop,) = [op for op in graph.get_operations() if op.type == "While"]
    assert loop.attrs["body"].compiled_copy().compiled().programs  # the body ran compiled
    assert not loop.attrs["body"].jit_compile  # the graph's own op is unchanged


_WITHOUT_NUMBA = """
import sys, warnings
sys.modules["numba"] = None  # as if not installed: importing it fails
import numpy as np
import eagerflow.tensor as ef
from eagerflow.graph import function

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    f = function(lambda x: ef.reduce_sum(ef.abs(x * 2.0 - 1.0)), jit_compile=True)
    g = function(lambda x: ef.reduce_sum(ef.abs(x * 2.0 - 1.0)))
    x = ef.constant(np.linspace(-1, 1, 11, dtype=np.float32))
    print(float(f(x)) == float(g(x)), f.get_concrete_function(x).compiled().backend)
    f(x)
print(sum("numba is not installed" in str(w.message) for w in caught))
"""


def test_a_process_without_numba_runs_compiled_plans_with_numpy() -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "EAGERFLOW_JIT_BACKEND"}
    result = subprocess.run([sys.executable, "-c", _WITHOUT_NUMBA], capture_output=True,
                            text=True, check=True, env=env, timeout=120)  # fmt: skip
    assert result.stdout.split() == ["True", "numpy", "1"], result.stderr
