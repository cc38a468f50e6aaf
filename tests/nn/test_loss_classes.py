"""Keras' loss classes (``nn.losses.MeanSquaredError``...): values against NumPy, the three
reductions, argument checks, float64 central-difference gradient checks, and ``fit``.

Their agreement with Keras 3 itself is in ``tests/conformance/cases_gaps.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import check_gradients
from eagerflow.nn import losses
from eagerflow.tensor.errors import DTypeError, ShapeError

SETTINGS = settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
RNG = np.random.default_rng(0)
Y = RNG.normal(size=(4, 3))
P = RNG.normal(size=(4, 3))


def test_reductions_are_mean_sum_and_per_example() -> None:
    per_example = ((P - Y) ** 2).mean(axis=-1)
    for reduction, expected in [("sum_over_batch_size", per_example.mean()),
                                ("sum", per_example.sum()), ("none", per_example)]:  # fmt: skip
        got = losses.MeanSquaredError(reduction=reduction)(Y, ef.constant(P))
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_huber_is_quadratic_then_linear() -> None:
    got = losses.Huber(delta=1.0, reduction="none")([[0.0, 0.0]], ef.constant([[0.5, 3.0]]))
    np.testing.assert_allclose(got.numpy(), [(0.125 + (3.0 - 0.5)) / 2])


def test_probability_losses_match_numpy() -> None:
    probs = np.array([[0.2, 0.5, 0.3], [0.1, 0.1, 0.8]])
    onehot = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    expected = -np.log([0.5, 0.8])
    categorical = losses.CategoricalCrossentropy(reduction="none")(onehot, ef.constant(probs))
    sparse = losses.SparseCategoricalCrossentropy(reduction="none")([1, 2], ef.constant(probs))
    np.testing.assert_allclose(categorical.numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(sparse.numpy(), expected, rtol=1e-6)
    bce = losses.BinaryCrossentropy(reduction="none")(onehot, ef.constant(probs))
    np.testing.assert_allclose(
        bce.numpy(), -(onehot * np.log(probs) + (1 - onehot) * np.log(1 - probs)).mean(-1)
    )


def test_from_logits_agrees_with_probabilities() -> None:
    probs = ef.nn.softmax(ef.constant(P))
    for cls, labels in [(losses.CategoricalCrossentropy, np.eye(3)[[0, 2, 1, 1]]),
                        (losses.SparseCategoricalCrossentropy, [0, 2, 1, 1])]:  # fmt: skip
        from_logits = cls(from_logits=True)(labels, ef.constant(P))
        np.testing.assert_allclose(from_logits.numpy(), cls()(labels, probs).numpy(), rtol=1e-9)
    sig = ef.sigmoid(ef.constant(P))
    a = losses.BinaryCrossentropy(from_logits=True)(Y > 0, ef.constant(P))
    np.testing.assert_allclose(a.numpy(), losses.BinaryCrossentropy()(Y > 0, sig).numpy())


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match=r"MeanSquaredError: reduction must be one of"):
        losses.MeanSquaredError(reduction="mean")
    with pytest.raises(DTypeError, match=r"huber: predictions must be floats"):
        losses.Huber()([1, 2], ef.constant([1, 2]))
    with pytest.raises(ShapeError, match=r"mean_absolute_error: labels .* same shape"):
        losses.MeanAbsoluteError()([1.0, 2.0], ef.constant([[1.0, 2.0, 3.0]]))


CLASSES = {
    "mse": (losses.MeanSquaredError, lambda y: y),
    "mae": (losses.MeanAbsoluteError, lambda y: y),
    "huber": (lambda **k: losses.Huber(0.7, **k), lambda y: y),
    "bce": (losses.BinaryCrossentropy, lambda y: (y > 0) * 1.0),
    "bce_logits": (lambda **k: losses.BinaryCrossentropy(from_logits=True, **k), lambda y: y > 0),
    "cce": (losses.CategoricalCrossentropy, lambda y: np.eye(3)[np.argmax(y, -1)]),
    "cce_logits": (
        lambda **k: losses.CategoricalCrossentropy(from_logits=True, **k),
        lambda y: np.eye(3)[np.argmax(y, -1)],
    ),
    "sparse": (losses.SparseCategoricalCrossentropy, lambda y: np.argmax(y, -1)),
    "sparse_logits": (
        lambda **k: losses.SparseCategoricalCrossentropy(from_logits=True, **k),
        lambda y: np.argmax(y, -1),
    ),
}


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum"])
@pytest.mark.parametrize("name", sorted(CLASSES))
def test_gradients_match_central_differences(name: str, reduction: str) -> None:
    make, labels_of = CLASSES[name]
    logits = name.endswith("logits") or name in ("mse", "mae", "huber")

    @SETTINGS
    @given(st.integers(1, 4), st.integers(0, 2**16))
    def check(rows: int, seed: int) -> None:
        draws = np.random.default_rng(seed)
        y = draws.normal(size=(rows, 3))
        # probabilities stay inside (ε, 1 - ε), errors away from Huber's and |x|'s kinks
        x = y + draws.choice([-1.0, 1.0], size=y.shape) * draws.uniform(0.1, 0.5, size=y.shape)
        if not logits:
            x = draws.uniform(0.1, 0.9, size=y.shape)
        loss = make(reduction=reduction)
        labels = labels_of(y)
        check_gradients(lambda t: loss(labels, t), [x])

    check()


def test_fit_takes_a_loss_object() -> None:
    x = RNG.normal(size=(32, 2)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0]], np.float32)).astype(np.float32)
    model = nn.Sequential([nn.Dense(1)])
    history = nn.fit(model, x, y, loss=losses.Huber(delta=0.5),
                     optimizer=nn.GradientDescentOptimizer(0.1), epochs=4, batch_size=8,
                     seed=0, print_fn=lambda _: None)  # fmt: skip
    assert history["loss"][-1] < history["loss"][0]
