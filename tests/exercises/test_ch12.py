"""Chapter 12 exercises: optimizers and training (`exercises/ch12.py`)."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, Session, global_variables_initializer

pytestmark = pytest.mark.ch12

GRADIENTS = [[0.5, -2.0, 0.0], [0.5, 1.0, 3.0], [-1.0, 0.25, 3.0], [0.1, -0.1, 0.0]]


def adagrad_reference(start, gradients, learning_rate, initial):
    """NumPy Adagrad: the values of the variable after each step."""
    value = np.array(start, np.float64)
    accumulator = np.full_like(value, initial)
    values = []
    for g in gradients:
        g = np.array(g, np.float64)
        accumulator += g * g
        value -= learning_rate * g / np.sqrt(accumulator)
        values.append(value.copy())
    return values


# --- AdagradOptimizer -----------------------------------------------------------------------------
def test_adagrad_matches_numpy_step_by_step_eagerly(chapter):
    w = Variable([1.0, -2.0, 3.0], name="w")
    optimizer = chapter.AdagradOptimizer(0.5, initial_accumulator_value=0.1)
    expected = adagrad_reference([1.0, -2.0, 3.0], GRADIENTS, 0.5, 0.1)
    for step, (g, want) in enumerate(zip(GRADIENTS, expected, strict=True), start=1):
        optimizer.apply_gradients([(ef.constant(g), w)])
        np.testing.assert_allclose(
            w.numpy(),
            want,
            rtol=1e-5,
            err_msg=f"after step {step} (gradients so far {GRADIENTS[:step]}) expected {want}, "
            f"got {w.numpy()}",
        )
    slots = optimizer.slots()
    assert [name for name, _, _ in slots] == ["accumulator"], (
        f"expected one slot named 'accumulator' for w, got {[name for name, _, _ in slots]}"
    )
    accumulated = 0.1 + np.sum(np.square(GRADIENTS), axis=0)
    np.testing.assert_allclose(
        slots[0][2].numpy(), accumulated, rtol=1e-5, err_msg="the accumulator should be 0.1 + Σ g²"
    )


def test_adagrad_works_in_a_graph_through_minimize(chapter):
    targets = np.array([3.0, -1.0], np.float32)
    graph = Graph()
    optimizer = chapter.AdagradOptimizer(0.3, initial_accumulator_value=0.1)
    with graph.as_default():
        w = Variable([0.0, 0.0], name="w")
        loss = ef.reduce_sum(ef.square(w - targets))  # gradient 2 (w - targets)
        update = optimizer._apply(ef.constant([1.0, 1.0]), Variable([0.0, 0.0], name="probe"))
        if update is None:
            pytest.fail(
                "in a graph, _apply must *return* the assignment (return "
                "variable.assign_sub(...)): apply_gradients groups what _apply returns into the "
                "train op, and an assignment nobody returns is never run"
            )
        train = optimizer.minimize(loss, var_list=[w])
        init = global_variables_initializer()
    value, accumulator = np.zeros(2), np.full(2, 0.1)
    with Session(graph) as session:
        session.run(init)
        for step in range(1, 6):
            session.run(train)
            g = 2 * (value - targets)
            accumulator += g * g
            value = value - 0.3 * g / np.sqrt(accumulator)
            got = session.run(w)
            np.testing.assert_allclose(
                got, value, rtol=1e-5, err_msg=f"graph mode, after step {step}"
            )


# --- train_step -----------------------------------------------------------------------------------
class TrainingSpy(nn.Layer):
    def __init__(self):
        super().__init__(name="training_spy")
        self.seen = []

    def call(self, inputs, training=False):
        self.seen.append(training)
        return inputs


def softmax_loss_and_grads(x, y, kernel, bias):
    logits = x @ kernel + bias
    shifted = logits - logits.max(axis=1, keepdims=True)
    probabilities = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    n = len(x)
    loss = -np.mean(np.log(probabilities[np.arange(n), y]))
    delta = probabilities.copy()
    delta[np.arange(n), y] -= 1.0
    delta /= n
    return loss, x.T @ delta, delta.sum(axis=0)


def test_train_step_takes_one_gradient_step_on_the_mean_loss(chapter):
    ef.set_seed(1)
    spy = TrainingSpy()
    model = nn.Sequential([nn.Dense(3), spy])
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 2)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2], np.int64)
    model(x)  # build
    spy.seen.clear()
    kernel, bias = (v.numpy().astype(np.float64) for v in model.variables)
    loss, d_kernel, d_bias = softmax_loss_and_grads(x, y, kernel, bias)
    got = chapter.train_step(model, nn.GradientDescentOptimizer(0.5), x, y)
    assert isinstance(got, float), f"return the loss as a Python float, got {got!r}"
    assert got == pytest.approx(loss, rel=1e-5), (
        f"expected the mean cross-entropy before the update, {loss:.6f}, got {got}"
    )
    assert spy.seen == [True], (
        f"call the model once with training=True (the layers saw training={spy.seen})"
    )
    np.testing.assert_allclose(
        model.variables[0].numpy(),
        kernel - 0.5 * d_kernel,
        rtol=1e-4,
        err_msg="kernel after one step of gradient descent",
    )
    np.testing.assert_allclose(
        model.variables[1].numpy(),
        bias - 0.5 * d_bias,
        rtol=1e-4,
        atol=1e-6,
        err_msg="bias after one step",
    )


def test_train_step_builds_a_new_model_and_learns(chapter):
    ef.set_seed(2)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(64, 2)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    model = nn.Sequential([nn.Dense(8, "relu"), nn.Dense(2)])  # not built yet
    optimizer = nn.AdamOptimizer(0.05)
    losses = [chapter.train_step(model, optimizer, x, y) for _ in range(40)]
    assert len(model.variables) == 4, "the model should have been built by its first call"
    assert losses[-1] < losses[0] / 3, (
        f"40 Adam steps on a separable problem should cut the loss by 3x: {losses[0]:.3f} -> "
        f"{losses[-1]:.3f}"
    )
