"""Training by hand: the linear-regression loop of the TensorFlow 1.7 eager notebook."""

from __future__ import annotations

import itertools

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable

NUM_EXAMPLES = 1000
STEPS = 200
LEARNING_RATE = 0.01


def test_linear_regression_by_hand() -> None:
    # y = 3x + 2 + noise. After 200 steps at lr 0.01 gradient descent has left about
    # 8 · 0.98²⁰⁰ ≈ 0.14 of B's initial error, so the notebook's 0.15 tolerance is tight:
    # the seed is fixed, and with it the result (least squares: W ≈ 3.02, B ≈ 1.91; after
    # the loop: W ≈ 3.06, B ≈ 2.06).
    rng = np.random.default_rng(2)
    xs = rng.standard_normal(NUM_EXAMPLES).astype(np.float32)
    noise = rng.standard_normal(NUM_EXAMPLES).astype(np.float32)
    training_inputs = ef.constant(xs)
    training_outputs = ef.constant(xs * 3 + 2 + noise)

    def prediction(inputs: ef.Tensor, weight: Variable, bias: Variable) -> ef.Tensor:
        return inputs * weight + bias

    def loss(weights: Variable, biases: Variable) -> ef.Tensor:
        error = prediction(training_inputs, weights, biases) - training_outputs
        return ef.reduce_mean(ef.square(error))

    def grad(weights: Variable, biases: Variable) -> tuple[ef.Tensor, list[ef.Tensor]]:
        with GradientTape() as tape:
            loss_value = loss(weights, biases)
        return loss_value, tape.gradient(loss_value, [weights, biases])

    W = Variable(5.0)
    B = Variable(10.0)
    losses = []
    for _ in range(STEPS):
        loss_value, (dW, dB) = grad(W, B)
        assert dW.shape == () and dB.shape == ()
        W.assign_sub(dW * LEARNING_RATE)
        B.assign_sub(dB * LEARNING_RATE)
        losses.append(float(loss_value))
    losses.append(float(loss(W, B)))

    assert abs(W.numpy() - 3.0) < 0.15, W
    assert abs(B.numpy() - 2.0) < 0.15, B
    assert W.dtype is ef.float32 and W.shape == ()
    assert losses[-1] < losses[0] / 4
    # gradient descent on a convex quadratic with a small step: the loss never goes up
    assert all(later <= earlier for earlier, later in itertools.pairwise(losses))
    assert losses[-1] < 1.2  # close to the noise variance (about 1)


def test_first_gradient_matches_the_closed_form() -> None:
    # d/dW mean((Wx + B - y)²) = 2 mean((Wx + B - y) x); d/dB = 2 mean(Wx + B - y)
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(50)
    ys = 3 * xs + 2 + rng.standard_normal(50)
    W = Variable(5.0, dtype=ef.float64)
    B = Variable(10.0, dtype=ef.float64)
    with GradientTape() as tape:
        loss = ef.reduce_mean(ef.square(W * ef.constant(xs) + B - ef.constant(ys)))
    dW, dB = tape.gradient(loss, [W, B])
    residual = 5.0 * xs + 10.0 - ys
    np.testing.assert_allclose(dW.numpy(), 2 * np.mean(residual * xs), rtol=1e-12)
    np.testing.assert_allclose(dB.numpy(), 2 * np.mean(residual), rtol=1e-12)
