"""Chapter 6 exercises: one op, two modes."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import Graph, Session, SymbolicTensor, placeholder
from eagerflow.tensor import Tensor, execution

pytestmark = pytest.mark.ch06

LOGITS = np.array([[2.0, 1.0, 0.1], [0.0, 0.0, 0.0], [-1.0, 3.0, 0.5]], np.float32)
LABELS = np.eye(3, dtype=np.float32)[[0, 2, 1]]


def numpy_cross_entropy(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64)
    m = z.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True))
    return (labels * (lse - z)).sum(axis=-1)


# --- cross_entropy --------------------------------------------------------------------------------
def test_cross_entropy_eagerly(chapter):
    got = chapter.cross_entropy(ef.constant(LOGITS), ef.constant(LABELS))
    assert isinstance(got, Tensor) and not isinstance(got, SymbolicTensor), (
        f"in eager mode expected an eager tensor, got {got!r}"
    )
    np.testing.assert_allclose(got.numpy(), numpy_cross_entropy(LOGITS, LABELS), rtol=1e-5)


def test_cross_entropy_builds_a_graph(chapter):
    g = Graph()
    with g.as_default():
        logits = placeholder(ef.float32, (None, 3), name="logits")
        labels = placeholder(ef.float32, (None, 3), name="labels")
        loss = chapter.cross_entropy(logits, labels)
    assert isinstance(loss, SymbolicTensor), f"in a graph expected a symbolic tensor, got {loss!r}"
    assert loss.shape == (None,), f"expected the static shape (None,), got {loss.shape}"
    with Session(g) as session:
        got = session.run(loss, {logits: LOGITS, labels: LABELS})
    np.testing.assert_allclose(got, numpy_cross_entropy(LOGITS, LABELS), rtol=1e-5)


def test_cross_entropy_is_stable_for_large_logits(chapter):
    big = np.array([[1000.0, 0.0, -1000.0], [500.0, 500.0, 0.0]], np.float32)
    labels = np.array([[0.0, 1.0, 0.0], [0.5, 0.5, 0.0]], np.float32)
    got = chapter.cross_entropy(ef.constant(big), ef.constant(labels)).numpy()
    assert np.all(np.isfinite(got)), f"expected finite losses for large logits, got {got}"
    np.testing.assert_allclose(got, numpy_cross_entropy(big, labels), rtol=1e-5)


# --- gradient_graph -------------------------------------------------------------------------------
FUNCTIONS = {
    "sum of cubes": lambda x: ef.reduce_sum(x * x * x),
    "sigmoid": ef.sigmoid,
    "matmul": lambda x: ef.matmul(x, ef.constant([[1.0], [-2.0]], ef.float64)),
    "softplus of a mean": lambda x: ef.log(1.0 + ef.exp(ef.reduce_mean(x))),
}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradient_graph_matches_the_tape(chapter, name):
    f = FUNCTIONS[name]
    value = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]])
    graph, x, y, dy_dx = chapter.gradient_graph(f, (None, 2))
    for t, what in ((x, "x"), (y, "y"), (dy_dx, "dy_dx")):
        assert isinstance(t, SymbolicTensor) and t.graph is graph, (
            f"expected {what} to be a symbolic tensor of the returned graph, got {t!r}"
        )
    assert x.op.type == "Placeholder" and x.dtype is ef.float64, f"x should be a float64 input: {x}"
    with Session(graph) as session:
        got_y, got_grad = session.run([y, dy_dx], {x: value})

    eager_x = ef.constant(value)
    with GradientTape() as tape:
        tape.watch(eager_x)
        eager_y = f(eager_x)
    expected_grad = tape.gradient(eager_y, eager_x).numpy()
    np.testing.assert_allclose(got_y, eager_y.numpy(), rtol=1e-12, err_msg=f"{name}: y")
    np.testing.assert_allclose(got_grad, expected_grad, rtol=1e-12, err_msg=f"{name}: dy/dx")


# --- second_derivative_graph ----------------------------------------------------------------------
SECOND = {
    "x³ → 6x": (lambda x: x * x * x, lambda v: 6 * v),
    "x·eˣ → (x + 2)·eˣ": (lambda x: x * ef.exp(x), lambda v: (v + 2) * np.exp(v)),
    "tanh → −2·tanh·(1 − tanh²)": (
        ef.tanh,
        lambda v: -2 * np.tanh(v) * (1 - np.tanh(v) ** 2),
    ),
    "3x + 1 → 0": (lambda x: 3.0 * x + 1.0, lambda v: 0.0),
}


@pytest.mark.parametrize("name", SECOND)
def test_second_derivative_graph(chapter, name):
    f, expected = SECOND[name]
    graph, x, d2 = chapter.second_derivative_graph(f)
    assert isinstance(d2, SymbolicTensor) and d2.graph is graph, (
        f"expected a symbolic tensor of the returned graph, got {d2!r}"
    )
    assert x.shape == () and x.dtype is ef.float64, f"x should be a float64 scalar: {x}"
    with Session(graph) as session:
        for v in (-1.5, 0.0, 0.7, 2.0):
            got = session.run(d2, {x: v})
            np.testing.assert_allclose(got, expected(v), rtol=1e-12, atol=1e-12, err_msg=name)


# --- LoggingContext -------------------------------------------------------------------------------
def test_logging_context_runs_ops_eagerly_and_logs_them(chapter):
    ctx = chapter.LoggingContext()
    assert ctx.log == [], f"a new context has an empty log, got {ctx.log}"
    a, b, c = ef.constant([[1.0, 2.0]]), ef.constant([[3.0], [4.0]]), ef.constant([1, 2, 3, 4])
    with execution.context(ctx):
        z = ef.matmul(a, b) + 1.0
        parts = ef.split(c, 2)
    assert type(z) is Tensor, f"expected an eager Tensor, got {z!r}"
    assert z.dtype is ef.float32 and z.numpy().tolist() == [[12.0]], f"got {z!r}"
    assert [p.numpy().tolist() for p in parts] == [[1, 2], [3, 4]], f"split gave {parts!r}"
    assert ctx.log == ["MatMul", "AddV2", "SplitV"], f"expected 3 ops logged, got {ctx.log}"


def test_logging_context_keeps_tapes_and_variables_working(chapter):
    ctx = chapter.LoggingContext()
    w = Variable(3.0)
    with execution.context(ctx), GradientTape() as tape:
        y = w * w
    assert ctx.log == ["ReadVariableOp", "ReadVariableOp", "Mul"], f"got {ctx.log}"
    assert float(tape.gradient(y, w)) == 6.0, "the tape should still record the ops"
    with execution.context(ctx):
        w.assign_add(1.0)
    assert w.numpy() == 4.0, f"expected the variable to become 4.0, got {w.numpy()}"
    assert ctx.log[-1] == "AssignAddVariableOp", f"got {ctx.log}"
