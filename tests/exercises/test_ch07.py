"""Chapter 7 exercises: one op, two modes.

``mini_gradients`` is a piece of the "Build a mini TensorFlow" track: one of its tests hands it
the reader's own gradient rules of chapter 3 (``add_gradient``, ``mul_gradient``) and skips,
saying "needs ch03.add_gradient first", until those are done.
"""

from __future__ import annotations

import dataclasses
from collections import Counter

import numpy as np
import pytest
from ready_made import refusing
from track import is_stub

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.autodiff.registry import GRADIENTS
from eagerflow.graph import Graph, Session, SymbolicTensor, placeholder
from eagerflow.nn import losses
from eagerflow.tensor import Tensor, execution, nn_ops
from eagerflow.tensor.errors import ShapeError
from eagerflow.tensor.registry import OPS

pytestmark = pytest.mark.ch07

LOGITS = np.array([[2.0, 1.0, 0.1], [0.0, 0.0, 0.0], [-1.0, 3.0, 0.5]], np.float32)
LABELS = np.eye(3, dtype=np.float32)[[0, 2, 1]]


def numpy_cross_entropy(logits: np.ndarray, labels: np.ndarray) -> np.ndarray:
    z = logits.astype(np.float64)
    m = z.max(axis=-1, keepdims=True)
    lse = m + np.log(np.exp(z - m).sum(axis=-1, keepdims=True))
    return (labels * (lse - z)).sum(axis=-1)


# --- cross_entropy --------------------------------------------------------------------------------
def refusing_the_built_in_loss():  # type: ignore[no-untyped-def]
    """eagerflow's own cross-entropy, and the (log-)softmax that makes it stable."""
    ready_made = [(losses, "softmax_cross_entropy_with_logits"),
                  (losses, "sparse_softmax_cross_entropy_with_logits"),
                  (nn_ops, "log_softmax"), (nn_ops, "softmax")]  # fmt: skip
    return refusing("cross_entropy", "the stable cross-entropy", *ready_made)


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
    with refusing_the_built_in_loss():
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
        with refusing_the_built_in_loss():
            got = chapter.cross_entropy(ef.constant(logits), ef.constant(labels))
        np.testing.assert_allclose(
            got.numpy(), expected, rtol=1e-4, atol=1e-4,
            err_msg=f"eagerly, a hidden ({batch}, {classes}) batch",
        )  # fmt: skip
        g = Graph()
        with g.as_default():
            z = placeholder(ef.float32, (None, classes))
            p = placeholder(ef.float32, (None, classes))
            with refusing_the_built_in_loss():
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


# --- MiniGraph and run_mini -----------------------------------------------------------------------
class Kernels:
    """Counts the kernel calls of every op (each OPS row replaced by a counting copy)."""

    def __init__(self, monkeypatch):
        self.calls = Counter()
        for name, op in list(OPS.items()):

            def counted(*args, kernel=op.kernel, name=name, **kwargs):
                self.calls[name] += 1
                return kernel(*args, **kwargs)

            monkeypatch.setitem(OPS, name, dataclasses.replace(op, kernel=counted))

    def total(self):
        return sum(self.calls.values())


class Seam:
    """The names of the ops the seam ran."""

    def __init__(self):
        self.names = []

    def record(self, op, inputs, attrs, outputs):
        self.names.append(op.name)


def build_mini(chapter, program, placeholders):
    """Build ``program`` on placeholders of the given (shape, dtype) in a MiniGraph."""
    g = chapter.MiniGraph()
    xs = [g.placeholder(shape, dtype) for shape, dtype in placeholders]
    seam = Seam()
    with execution.context(g), execution.recording(seam):
        y = program(*xs)
    return g, xs, y, seam


def check_program(chapter, monkeypatch, program, values, what):
    """Build ``program`` in a MiniGraph (no kernel may run), then run it with run_mini on
    ``values`` and compare with eager execution: shapes, dtypes, values, kernel counts."""
    tensors = [ef.constant(v) for v in values]
    expected = program(*tensors)
    kernels = Kernels(monkeypatch)
    g, xs, y, seam = build_mini(chapter, program, [(t.shape, t.dtype) for t in tensors])
    assert kernels.total() == 0, (
        f"{what}: building ran kernels {dict(kernels.calls)}: run_op must only make nodes "
        "(their shapes and dtypes come from op.shape_rule and op.dtype_rule)"
    )
    assert isinstance(y, Tensor) and not isinstance(y, SymbolicTensor), (
        f"{what}: expected the Symbol of a node, got {y!r}"
    )
    assert tuple(y.shape) == tuple(expected.shape) and y.dtype is expected.dtype, (
        f"{what}: the output should have shape {tuple(expected.shape)} and dtype "
        f"{expected.dtype.name} (as eagerly), got {y!r}"
    )
    assert len(g.nodes) == len(xs) + len(seam.names), (
        f"{what}: {len(seam.names)} ops ran through the seam, so the graph should have "
        f"{len(seam.names)} nodes besides its {len(xs)} placeholders; it has {len(g.nodes)}"
    )
    got = chapter.run_mini(y, {x: v for x, v in zip(xs, values, strict=True)})
    np.testing.assert_allclose(
        np.asarray(got), expected.numpy(), rtol=1e-5, atol=1e-6,
        err_msg=f"{what}: run_mini disagrees with eager execution",
    )  # fmt: skip
    assert kernels.total() <= len(seam.names), (
        f"{what}: run_mini ran {kernels.total()} kernels for {len(seam.names)} nodes: run each "
        "node once, however many nodes read it"
    )
    return g, y


def test_mini_graph_builds_nodes_and_run_mini_runs_them(chapter, monkeypatch):
    def program(x, w):
        h = ef.tanh(ef.matmul(x, w) + 1.0)
        return ef.reduce_sum(h * h, axis=1)  # h read twice: one node, run once

    values = [np.arange(6.0, dtype=np.float32).reshape(2, 3) / 6, np.ones((3, 4), np.float32)]
    check_program(chapter, monkeypatch, program, values, "reduce_sum(tanh(x @ w + 1)², axis=1)")


def test_mini_graph_outputs_have_the_rules_shape_and_dtype(chapter, monkeypatch):
    def program(x):
        return ef.cast(ef.transpose(x) > 0.0, ef.int32)

    check_program(chapter, monkeypatch, program, [np.ones((2, 5), np.float32)], "cast(xᵀ > 0)")


def test_mini_graph_refuses_bad_shapes_while_building(chapter, monkeypatch):
    kernels = Kernels(monkeypatch)
    g = chapter.MiniGraph()
    a, b = g.placeholder((2, 3), ef.float32), g.placeholder((2, 3), ef.float32)
    with pytest.raises(ShapeError), execution.context(g):
        ef.matmul(a, b)
    assert kernels.total() == 0, "a shape error is found by the shape rule, with no kernel"


def hidden_program(rng):
    """A random chain of ops with attributes, broadcasting and a value used twice."""
    n, m = int(rng.integers(2, 5)), int(rng.integers(2, 5))
    w = rng.uniform(-1, 1, (m, int(rng.integers(2, 4)))).astype(np.float32)
    steps = rng.permutation(5)[: int(rng.integers(2, 6))]

    def program(x, b):
        h = ef.matmul(x, ef.constant(w)) + b  # b broadcasts over the rows
        for step in steps:
            if step == 0:
                h = ef.reduce_sum(h, axis=0, keepdims=True) * h
            elif step == 1:
                h = ef.sigmoid(h) - h
            elif step == 2:
                h = ef.transpose(ef.reshape(h, (-1, 1))) * 0.5
            elif step == 3:
                h = ef.maximum(h, ef.square(h) - 0.25)
            else:
                h = ef.where(h > 0.0, h, ef.exp(h))
        return ef.reduce_mean(h, axis=-1)

    values = [rng.uniform(-1, 1, (n, m)).astype(np.float32),
              rng.uniform(-1, 1, (w.shape[1],)).astype(np.float32)]  # fmt: skip
    return program, values


def test_mini_graph_on_hidden_programs(chapter, monkeypatch):
    rng = np.random.default_rng(606)
    for i in range(8):
        program, values = hidden_program(rng)
        g, y = check_program(chapter, monkeypatch, program, values, f"hidden program {i}")
        # the same graph, fed again: the values come from run time, not from building
        other = [v * 2.0 - 0.5 for v in values]
        xs = [n.outputs[0] for n in g.nodes if n.op is None]
        got = chapter.run_mini(y, dict(zip(xs, other, strict=True)))
        np.testing.assert_allclose(
            np.asarray(got), program(*(ef.constant(v) for v in other)).numpy(),
            rtol=1e-5, atol=1e-6, err_msg=f"hidden program {i}, fed other values",
        )  # fmt: skip


# --- mini_gradients (stretch) ---------------------------------------------------------------------
def test_mini_gradients_stretch_on_hidden_programs(chapter, monkeypatch):
    rng = np.random.default_rng(616)
    for i in range(6):
        program, values = hidden_program(rng)
        tensors = [ef.constant(v) for v in values]
        with GradientTape() as tape:
            tape.watch(tensors[0])
            y = program(*tensors)
        expected = tape.gradient(y, tensors[0]).numpy()
        g, xs, y_symbol, _ = build_mini(chapter, program, [(t.shape, t.dtype) for t in tensors])
        before = len(g.nodes)
        with monkeypatch.context() as patch:
            kernels = Kernels(patch)

            def refuse(*args, **kwargs):
                raise AssertionError("mini_gradients used a GradientTape: build nodes instead")

            patch.setattr(GradientTape, "gradient", refuse)
            dx = chapter.mini_gradients(g, y_symbol, xs[0])
            assert kernels.total() == 0, (
                f"hidden program {i}: mini_gradients ran kernels {dict(kernels.calls)}: call "
                "the rules with the MiniGraph as the context, so that they add nodes"
            )
        assert dx is not None and not isinstance(dx, SymbolicTensor) and len(g.nodes) > before, (
            f"hidden program {i}: expected the symbol of a new node of the MiniGraph, got {dx!r}"
        )
        got = chapter.run_mini(dx, {x: t.numpy() for x, t in zip(xs, tensors, strict=True)})
        np.testing.assert_allclose(
            np.asarray(got), expected, rtol=1e-5, atol=1e-6,
            err_msg=f"hidden program {i}: the gradient of sum(y) by x, run with run_mini",
        )  # fmt: skip


def your_chapter_3_rules(earlier_piece, calls):
    """The gradient table with ``AddV2`` and ``Mul`` replaced by the reader's own rules of
    chapter 3 (``add_gradient`` and ``mul_gradient``, written for MiniTape), each counting its
    calls in ``calls``."""
    rules = dict(GRADIENTS)
    for op_name, piece in (("AddV2", "add_gradient"), ("Mul", "mul_gradient")):
        rule = earlier_piece("ch03", piece)

        def counted(op, grad, rule=rule, piece=piece):
            calls[piece] += 1
            return rule(op, grad)

        rules[op_name] = counted
    return rules


def test_mini_gradients_calls_your_chapter_3_rules(chapter, earlier_piece, monkeypatch):
    """One table for both modes: the rules the reader wrote for an eager tape in chapter 3
    build the gradient nodes of their MiniGraph, and give the numbers of GradientTape and of
    their own MiniTape reading the same table."""
    if is_stub(chapter.mini_gradients):  # its own stub first: "not attempted yet"
        chapter.mini_gradients(None, None, None)
    calls = Counter()
    rules = your_chapter_3_rules(earlier_piece, calls)  # (before MiniGraph and run_mini count)
    MiniTape = earlier_piece("ch03", "MiniTape")
    rng = np.random.default_rng(717)
    for i in range(4):
        program, values = hidden_program(rng)
        tensors = [ef.constant(v) for v in values]
        with GradientTape() as tape:
            tape.watch(tensors[1])
            y = program(*tensors)
        expected = tape.gradient(y, tensors[1]).numpy()  # b: broadcast over the rows
        g, xs, y_symbol, seam = build_mini(chapter, program, [(t.shape, t.dtype) for t in tensors])
        calls.clear()
        with monkeypatch.context() as patch:
            kernels = Kernels(patch)
            db = chapter.mini_gradients(g, y_symbol, xs[1], rules)
            assert kernels.total() == 0, (
                f"hidden program {i}: mini_gradients ran kernels {dict(kernels.calls)}"
            )
        for op_name, piece in (("AddV2", "add_gradient"), ("Mul", "mul_gradient")):
            if op_name in seam.names:
                assert calls[piece] > 0, (
                    f"hidden program {i} has {op_name} nodes, but mini_gradients never called "
                    f"your ch03.{piece} from the table it was given: look each rule up in "
                    "`rules`, the table a tape reads too"
                )
        got = chapter.run_mini(db, {x: t.numpy() for x, t in zip(xs, tensors, strict=True)})
        np.testing.assert_allclose(
            np.asarray(got), expected, rtol=1e-5, atol=1e-6,
            err_msg=f"hidden program {i}: the gradient by b, from your chapter 3 rules",
        )  # fmt: skip
        # the same table, read by your eager MiniTape of chapter 3: the same numbers
        with monkeypatch.context() as patch:
            for op_name in ("AddV2", "Mul"):
                patch.setitem(GRADIENTS, op_name, rules[op_name])
            mini = MiniTape(tensors[1])
            with execution.recording(mini):
                y = program(*tensors)
            eager = mini.gradient(y, tensors[1])
        np.testing.assert_allclose(
            np.asarray(got), np.asarray(eager), rtol=1e-5, atol=1e-6,
            err_msg=f"hidden program {i}: your graph's gradient and your MiniTape's, from one "
            "table of rules, disagree",
        )  # fmt: skip
