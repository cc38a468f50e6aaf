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


def test_cross_entropy_on_hidden_batches_in_both_modes(chapter):
    rng = np.random.default_rng(606)
    for batch, classes in [(1, 2), (5, 7)]:
        logits = (rng.normal(size=(batch, classes)) * 50).astype(np.float32)  # some large
        labels = rng.dirichlet(np.ones(classes), size=batch).astype(np.float32)
        expected = numpy_cross_entropy(logits, labels)
        got = chapter.cross_entropy(ef.constant(logits), ef.constant(labels))
        np.testing.assert_allclose(
            got.numpy(), expected, rtol=1e-4, atol=1e-4,
            err_msg=f"eagerly, a hidden ({batch}, {classes}) batch",
        )  # fmt: skip
        g = Graph()
        with g.as_default():
            z = placeholder(ef.float32, (None, classes))
            p = placeholder(ef.float32, (None, classes))
            loss = chapter.cross_entropy(z, p)
        with Session(g) as session:
            got = session.run(loss, {z: logits, p: labels})
        np.testing.assert_allclose(
            got, expected, rtol=1e-4, atol=1e-4,
            err_msg=f"in a graph, a hidden ({batch}, {classes}) batch",
        )  # fmt: skip


def test_gradient_graph_on_hidden_inputs(chapter):
    rng = np.random.default_rng(607)
    w = rng.normal(size=(3, 2))
    f = lambda x: ef.reduce_sum(ef.tanh(x @ ef.constant(w)) * ef.reduce_mean(x, 1, keepdims=True))  # noqa: E731
    graph, x, _, dy_dx = chapter.gradient_graph(f, (None, 3))
    value = rng.normal(size=(int(rng.integers(2, 6)), 3))
    with Session(graph) as session:
        got = session.run(dy_dx, {x: value})
    eager_x = ef.constant(value)
    with GradientTape() as tape:
        tape.watch(eager_x)
        eager_y = f(eager_x)
    np.testing.assert_allclose(got, tape.gradient(eager_y, eager_x).numpy(), rtol=1e-10,
                               err_msg="dy/dx of a hidden function")  # fmt: skip


def test_second_derivative_graph_on_a_hidden_polynomial(chapter):
    c = np.round(np.random.default_rng(608).uniform(-2, 2, 5), 2)

    def f(t):
        y = float(c[-1])
        for coefficient in c[-2::-1]:
            y = y * t + float(coefficient)
        return y

    graph, x, d2 = chapter.second_derivative_graph(f)
    second = np.polynomial.polynomial.polyder(c, 2)
    with Session(graph) as session:
        for v in (-1.3, 0.4, 1.7):
            np.testing.assert_allclose(
                session.run(d2, {x: v}), np.polynomial.polynomial.polyval(v, second),
                rtol=1e-10, err_msg=f"f'' of the hidden polynomial {c.tolist()} at {v}",
            )  # fmt: skip


def test_logging_context_on_a_hidden_program(chapter):
    rng = np.random.default_rng(609)
    steps = {"Tanh": ef.tanh, "Exp": ef.exp, "Neg": ef.negative, "Square": ef.square}
    names = [list(steps)[int(i)] for i in rng.integers(0, len(steps), 6)]
    x = ef.constant(rng.normal(size=(2, 3)) * 0.1)
    ctx = chapter.LoggingContext()
    t = x
    with execution.context(ctx):
        for name in names:
            t = steps[name](t)
    expected = x
    for name in names:
        expected = steps[name](expected)
    assert ctx.log == names, f"a hidden program ran {names}; the context logged {ctx.log}"
    assert type(t) is Tensor and t.dtype is ef.float64, f"expected a float64 Tensor, got {t!r}"
    np.testing.assert_allclose(t.numpy(), expected.numpy(), rtol=1e-12, err_msg="its value")
