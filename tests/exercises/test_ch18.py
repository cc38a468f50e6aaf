"""Chapter 18 exercises: the whole stack (`exercises/ch18.py`)."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.graph import function
from eagerflow.tensor.execution import recording

pytestmark = pytest.mark.ch18


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
