"""Chapter 20 exercises: the whole stack (`exercises/ch20.py`).

``stack_report`` measures what the layers make of one function. Then the capstone of the
"Build a mini TensorFlow" track, ``train`` and ``export``: the model trains on the reader's
own pieces (their MiniGraph, run_mini and mini_gradients of chapter 7, their Adam of chapter
5, their encode_attr and numpy_source of chapter 14), each counted by a spy, while
eagerflow's own tape, gradients, Session, @function, optimizers and Graph are refused. The
result is checked against a replay with eagerflow's tape and Adam's formulas, so a model
that learned some other way fails too.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
import test_ch14  # a module, not its names: pytest would collect an imported test again
from ready_made import refusing
from track import is_stub

import eagerflow.tensor as ef
from eagerflow.autodiff import ForwardAccumulator, GradientTape, Variable
from eagerflow.graph import Function, Graph, Session, function
from eagerflow.graph.core import gradients as graph_gradients
from eagerflow.graph.core.session import Plan
from eagerflow.graph.export import graph_def
from eagerflow.nn import optimizers
from eagerflow.tensor.execution import recording

pytestmark = pytest.mark.ch20


# --- stack_report ---------------------------------------------------------------------------------
class OpNames:
    def __init__(self):
        self.names = []

    def record(self, op, inputs, attrs, outputs):
        self.names.append(op.name)


def expected_report(fn, *args):
    """The three numbers, worked out here: a recorder for the eager ops, the trace's nodes."""
    with recording(OpNames()) as seen:
        fn(*args)
    types = [op.type for op in function(fn).get_concrete_function(*args).graph.get_operations()]
    return {"eager_ops": len(seen.names), "graph_nodes": len(types), "if_nodes": types.count("If")}


def loss(x, w):
    error = ef.matmul(x, w) - 1.0
    return ef.reduce_mean(error * error)


def clipped(x):
    norm = ef.sqrt(ef.reduce_sum(x * x))
    if norm > 1.0:
        x = x / norm
    return x * 2.0


def two_ifs(x, y):
    total = ef.reduce_sum(x)
    if total > 0.0:  # an if with an else: both branches in one If node
        y = y + 1.0
    else:
        y = y - 1.0
        y = ef.abs(y)
    if ef.reduce_max(x) > 2.0:
        y = y * 3.0
    return ef.tanh(y)


def python_if(x):
    scale = 2.0
    if scale > 1.0:  # a Python condition: no If node
        x = ef.exp(x)
    return x + scale


def arguments(seed):
    rng = np.random.default_rng(seed)
    return [
        (loss, ef.constant(rng.normal(size=(4, 3)).astype(np.float32)),
         ef.constant(rng.normal(size=(3, 1)).astype(np.float32))),
        (clipped, ef.constant(rng.normal(size=5).astype(np.float32))),
        (two_ifs, ef.constant(rng.normal(size=6).astype(np.float32)),
         ef.constant(rng.normal(size=6).astype(np.float32))),
        (python_if, ef.constant(rng.normal(size=2).astype(np.float32))),
    ]  # fmt: skip


def test_stack_report_of_a_loss(chapter):
    x = ef.constant([[1.0, 2.0, 3.0]])
    w = ef.constant([[0.5], [0.0], [-1.0]])
    got = chapter.stack_report(loss, x, w)
    assert got == expected_report(loss, x, w), f"expected {expected_report(loss, x, w)}, got {got}"
    assert got["if_nodes"] == 0


@pytest.mark.parametrize("seed", [0, 1])
def test_stack_report_on_hidden_functions(chapter, seed):
    for fn, *args in arguments(seed):
        expected = expected_report(fn, *args)
        got = chapter.stack_report(fn, *args)
        assert isinstance(got, dict) and set(got) == set(expected), f"{fn.__name__}: got {got}"
        assert {k: int(v) for k, v in got.items()} == expected, (
            f"{fn.__name__}: expected {expected}, got {got}"
        )


# --- the capstone ---------------------------------------------------------------------------------
PARAMETERS = ("w1", "b1", "w2", "b2")
# where each piece of the track comes from: the reader's earlier chapters
TRACK = {
    "MiniGraph": "ch07",
    "run_mini": "ch07",
    "mini_gradients": "ch07",
    "Adam": "ch05",
    "encode_attr": "ch14",
    "numpy_source": "ch14",
}


def the_machinery():  # type: ignore[no-untyped-def]
    """eagerflow's own machinery, which the reader's pieces replace."""
    ready_made = [(GradientTape, "__init__"), (GradientTape, "gradient"),
                  (ForwardAccumulator, "__init__"), (graph_gradients, "gradients"),
                  (Graph, "__init__"), (Session, "run"), (Plan, "__init__"),
                  (Function, "__call__"), (optimizers.Optimizer, "apply_gradients"),
                  (optimizers.Optimizer, "minimize"), (graph_def, "encode_attr")]  # fmt: skip
    return refusing("the capstone", "the stack from your own pieces", *ready_made)


def spied_pieces(chapter: Any, exercise: Any, earlier_piece: Any, calls: Counter) -> Any:
    """The reader's pieces, each counting its use in ``calls``; None while ``exercise`` itself
    is a stub (calling it then says "not attempted yet")."""
    if is_stub(exercise):
        return None
    got = {name: earlier_piece(where, name) for name, where in TRACK.items()}

    class MiniGraph(got["MiniGraph"]):  # type: ignore[misc,valid-type]
        def run_op(self, *args: Any, **kwargs: Any) -> Any:
            calls["MiniGraph.run_op"] += 1
            return super().run_op(*args, **kwargs)

    ran: list[np.ndarray] = []  # what run_mini returned since the last Adam step

    class Adam(got["Adam"]):  # type: ignore[misc,valid-type]
        def apply(self, variables: Any, grads: Any) -> Any:
            calls["Adam.apply"] += 1
            for g in grads:  # each gradient must be a value your graph computed
                if not any(np.array_equal(np.asarray(g), r) for r in ran):
                    calls["gradients not from run_mini"] += 1
            ran.clear()
            return super().apply(variables, grads)

    def counted(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] += 1
            result = got[name](*args, **kwargs)
            if name == "run_mini":
                ran.append(np.asarray(result))
            return result

        return call

    functions = {n: counted(n) for n in ("run_mini", "mini_gradients", "encode_attr",
                                         "numpy_source")}  # fmt: skip
    return chapter.Pieces(MiniGraph=MiniGraph, Adam=Adam, **functions)


# --- the replay: eagerflow's tape and Adam's formulas ---------------------------------------------
def forward(x: Any, p: dict[str, Any]) -> Any:
    return ef.matmul(ef.tanh(ef.matmul(x, p["w1"]) + p["b1"]), p["w2"]) + p["b2"]


def replay(x: np.ndarray, y: np.ndarray, params: dict[str, np.ndarray], steps: int,
           lr: float) -> tuple[dict[str, np.ndarray], list[float]]:  # fmt: skip
    """Full-batch Adam (β₁ 0.9, β₂ 0.999, ε 1e-7) with the tape's gradients."""
    w = {n: Variable(ef.constant(params[n])) for n in PARAMETERS}
    m = {n: np.zeros_like(params[n], np.float64) for n in PARAMETERS}
    v = {n: np.zeros_like(params[n], np.float64) for n in PARAMETERS}
    losses = []
    for t in range(1, steps + 1):
        with GradientTape() as tape:
            loss = ef.reduce_mean(ef.square(forward(ef.constant(x), w) - y))
        grads = tape.gradient(loss, [w[n] for n in PARAMETERS])
        losses.append(float(loss.numpy()))
        for n, g in zip(PARAMETERS, grads, strict=True):
            m[n] = 0.9 * m[n] + 0.1 * g.numpy()
            v[n] = 0.999 * v[n] + 0.001 * g.numpy() ** 2
            step = lr * (m[n] / (1 - 0.9**t)) / (np.sqrt(v[n] / (1 - 0.999**t)) + 1e-7)
            w[n].assign(ef.constant((w[n].numpy() - step).astype(np.float32)))
    return {n: w[n].numpy() for n in PARAMETERS}, losses


def hidden_task(seed: int, inputs: int, hidden: int, outputs: int) -> Any:
    """A small regression task nobody sees: a smooth function of the inputs, plus noise."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2, 2, (32, inputs)).astype(np.float32)
    mix = rng.standard_normal((inputs, outputs))
    y = np.sin(x @ mix) + 0.1 * rng.standard_normal((32, outputs))
    params = {
        "w1": (rng.standard_normal((inputs, hidden)) / np.sqrt(inputs)).astype(np.float32),
        "b1": np.zeros(hidden, np.float32),
        "w2": (rng.standard_normal((hidden, outputs)) / np.sqrt(hidden)).astype(np.float32),
        "b2": np.zeros(outputs, np.float32),
    }
    return x, y.astype(np.float32), params


TASKS = {"two_to_one": (1801, 2, 8, 1, 60, 0.05), "three_to_two": (1802, 3, 5, 2, 40, 0.03)}


@pytest.mark.parametrize("task", list(TASKS))
def test_train_learns_with_your_pieces_only(chapter, earlier_piece, task):
    seed, inputs, hidden, outputs, steps, lr = TASKS[task]
    x, y, params = hidden_task(seed, inputs, hidden, outputs)
    calls: Counter = Counter()
    pieces = spied_pieces(chapter, chapter.train, earlier_piece, calls)
    with the_machinery():
        trained, losses = chapter.train(pieces, x.copy(), y.copy(), dict(params), steps, lr)
    for piece, least in (("MiniGraph.run_op", 5), ("mini_gradients", 1), ("run_mini", steps)):
        assert calls[piece] >= least, (
            f"{task}: train called {piece} {calls[piece]} times; the model must be built, "
            "differentiated and run with your pieces"
        )
    assert calls["gradients not from run_mini"] == 0, (
        f"{task}: {calls['gradients not from run_mini']} gradients handed to your Adam were "
        "not values run_mini computed: run the gradient symbols of mini_gradients"
    )
    assert calls["Adam.apply"] == steps, (
        f"{task}: your Adam's apply ran {calls['Adam.apply']} times for {steps} steps"
    )
    expected, expected_losses = replay(x, y, params, steps, lr)
    assert len(losses) == steps, (
        f"{task}: expected {steps} losses (one per step), got {len(losses)}"
    )
    np.testing.assert_allclose(losses, expected_losses, rtol=1e-3, atol=1e-5,
                               err_msg=f"{task}: the loss before each step")  # fmt: skip
    assert set(trained) == set(PARAMETERS), f"{task}: expected parameters {PARAMETERS}"
    for n in PARAMETERS:
        got = np.asarray(trained[n])
        assert got.shape == params[n].shape, f"{task}: {n} has shape {got.shape}"
        np.testing.assert_allclose(got, expected[n], rtol=1e-3, atol=1e-4,
                                   err_msg=f"{task}: {n} after training")  # fmt: skip
    assert losses[-1] < 0.5 * losses[0], (
        f"{task}: the loss fell only from {losses[0]} to {losses[-1]}"
    )


def _predictions(source: str, x: np.ndarray) -> np.ndarray:
    run = test_ch14.run_function(source)
    got = run({"x": x.copy()})
    assert isinstance(got, list | tuple) and len(got) == 1, (
        f"run should return [prediction]: {got!r:.200}"
    )
    return np.asarray(got[0])


def check_export(chapter: Any, pieces: Any, calls: Counter, params: dict[str, np.ndarray],
                 x: np.ndarray, what: str) -> None:  # fmt: skip
    with the_machinery():
        source = chapter.export(pieces, params)
    assert calls["numpy_source"] == 1 and calls["MiniGraph.run_op"] >= 5, (
        f"{what}: export should build the model in your MiniGraph and write it with your "
        f"numpy_source (counted {dict(calls)})"
    )
    assert calls["encode_attr"] >= len(PARAMETERS), (
        f"{what}: the parameters are constants of the def, written by your encode_attr"
    )
    expected = forward(ef.constant(x), {n: ef.constant(v) for n, v in params.items()}).numpy()
    got = _predictions(source, x)
    assert got.shape == expected.shape and got.dtype == expected.dtype, (
        f"{what}: expected float32 predictions of shape {expected.shape}, got {got.dtype} "
        f"{got.shape}\n{source}"
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=f"{what}\n{source}")


def test_export_gives_the_models_predictions(chapter, earlier_piece):
    x, _, params = hidden_task(1803, 3, 6, 2)
    calls: Counter = Counter()
    pieces = spied_pieces(chapter, chapter.export, earlier_piece, calls)
    check_export(chapter, pieces, calls, params, x[:7], "hidden parameters, 7 rows")


def test_capstone_trains_then_exports(chapter, earlier_piece):
    seed, inputs, hidden, outputs, steps, lr = TASKS["two_to_one"]
    x, y, params = hidden_task(seed, inputs, hidden, outputs)
    calls: Counter = Counter()
    if is_stub(chapter.export) and not is_stub(chapter.train):
        chapter.export(None, params)  # its stub: "not attempted yet: ch20.export"
    pieces = spied_pieces(chapter, chapter.train, earlier_piece, calls)
    with the_machinery():
        trained, _ = chapter.train(pieces, x, y, params, steps, lr)
    calls.clear()
    check_export(chapter, pieces, calls, trained, x, "the trained model")
    loss = float(np.mean((_predictions(chapter.export(pieces, trained), x) - y) ** 2))
    assert loss < 0.1, f"the exported model's loss on the training data is {loss}"
