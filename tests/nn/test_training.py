"""batches() and fit(): mini-batches, shuffling, the training loop's output and History."""

from __future__ import annotations

import re

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn

# --- batches --------------------------------------------------------------------------------


def test_batches_cover_every_row_exactly_once() -> None:
    x = np.arange(23)
    y = np.arange(23) * 10
    seen = []
    for xb, yb in nn.batches(x, y, batch_size=5, seed=0):
        np.testing.assert_array_equal(yb, xb * 10)  # the same rows of each array
        seen.extend(xb.tolist())
    assert sorted(seen) == list(range(23))


def test_batches_sizes_and_smaller_last_batch() -> None:
    sizes = [len(xb) for (xb,) in nn.batches(np.zeros((23, 2)), batch_size=5, shuffle=False)]
    assert sizes == [5, 5, 5, 5, 3]
    sizes = [len(xb) for (xb,) in nn.batches(np.zeros((20, 2)), batch_size=5)]
    assert sizes == [5, 5, 5, 5]


def test_batches_without_shuffle_keep_the_order() -> None:
    out = [xb.tolist() for (xb,) in nn.batches(np.arange(7), batch_size=3, shuffle=False)]
    assert out == [[0, 1, 2], [3, 4, 5], [6]]


def test_batches_shuffle_reproducibly_with_a_seed() -> None:
    def order(seed: int) -> list[int]:
        return [int(v) for (xb,) in nn.batches(np.arange(50), batch_size=8, seed=seed)
                for v in xb]  # fmt: skip

    assert order(3) == order(3)
    assert order(3) != order(4)
    assert order(3) != list(range(50))  # shuffled


def test_batches_with_a_generator_give_a_new_order_each_epoch() -> None:
    rng = np.random.default_rng(0)
    first = np.concatenate([xb for (xb,) in nn.batches(np.arange(30), seed=rng)])
    second = np.concatenate([xb for (xb,) in nn.batches(np.arange(30), seed=rng)])
    assert sorted(first) == sorted(second) == list(range(30))
    assert not np.array_equal(first, second)


def test_batches_keep_the_trailing_dimensions() -> None:
    images = np.zeros((10, 4, 4))
    labels = np.zeros(10, np.int64)
    xb, yb = next(nn.batches(images, labels, batch_size=4))
    assert xb.shape == (4, 4, 4) and yb.shape == (4,)
    assert yb.dtype == np.int64


def test_batches_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match=r"as many rows, but array 0 has 10, array 1 has 9"):
        list(nn.batches(np.zeros(10), np.zeros(9)))


@pytest.mark.parametrize("size", [0, -1])
def test_batches_need_a_positive_batch_size(size: int) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        list(nn.batches(np.zeros(10), batch_size=size))


# --- fit ------------------------------------------------------------------------------------
def regression(n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """y = x · [2, -1] + 0.5, exactly."""
    x = np.random.default_rng(0).standard_normal((n, 2)).astype(np.float32)
    return x, (x @ np.array([[2.0], [-1.0]]) + 0.5).astype(np.float32)


def classification(n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(1).standard_normal((n, 2)).astype(np.float32)
    return x, (x[:, 0] > x[:, 1]).astype(np.int64)


def test_fit_prints_a_bar_per_epoch_and_loss_decreases() -> None:
    x, y = regression()
    model = nn.Sequential([nn.Dense(1)])
    lines: list[str] = []
    history = nn.fit(model, x, y, loss="mean_squared_error",
                     optimizer=nn.GradientDescentOptimizer(0.1), epochs=3, batch_size=16,
                     seed=0, print_fn=lines.append)  # fmt: skip
    assert len(lines) == 6
    for epoch in range(1, 4):
        assert lines[2 * epoch - 2] == f"Epoch {epoch}/3"
        bar = r"4/4 \[={30}\] - \d+s \d+(s|ms|us)/step - loss: \d+\.\d{4}"
        assert re.fullmatch(bar, lines[2 * epoch - 1])
    assert isinstance(history, nn.History)
    losses = history["loss"]
    assert len(losses) == 3
    assert losses[0] > losses[1] > losses[2]
    assert losses[2] < 0.5 * losses[0]
    # the printed loss is the History's
    assert f"loss: {losses[0]:.4f}" in lines[1]


def test_fit_learns_the_regression() -> None:
    x, y = regression()
    model = nn.Sequential([nn.Dense(1)])
    nn.fit(model, x, y, loss="mean_squared_error", optimizer=nn.GradientDescentOptimizer(0.1),
           epochs=20, batch_size=16, seed=0, verbose=False)  # fmt: skip
    np.testing.assert_allclose(model.layers[0].kernel.numpy().ravel(), [2.0, -1.0], atol=0.05)
    np.testing.assert_allclose(model.layers[0].bias.numpy(), [0.5], atol=0.05)


def test_fit_is_silent_when_not_verbose() -> None:
    x, y = regression(8)
    lines: list[str] = []
    nn.fit(nn.Sequential([nn.Dense(1)]), x, y, loss="mean_squared_error",
           optimizer=nn.GradientDescentOptimizer(0.1), verbose=False,
           print_fn=lines.append)  # fmt: skip
    assert lines == []


def test_fit_with_metrics_by_name_and_callable() -> None:
    x, y = classification()

    def mean_logit(labels, outputs):
        return ef.reduce_mean(outputs)

    lines: list[str] = []
    history = nn.fit(nn.Sequential([nn.Dense(2)]), x, y, loss="sparse_softmax_cross_entropy",
                     optimizer=nn.GradientDescentOptimizer(0.5), epochs=2, batch_size=20,
                     metrics=["accuracy", mean_logit], print_fn=lines.append)  # fmt: skip
    assert set(history.epochs[0]) == {"loss", "accuracy", "mean_logit"}
    assert all(0.0 <= a <= 1.0 for a in history["accuracy"])
    assert "accuracy" in lines[1] and "mean_logit" in lines[1]


def test_fit_metric_averages_are_weighted_by_batch_size() -> None:
    """With a constant-per-example metric, the epoch average must equal it exactly."""
    x, y = regression(10)

    def batch_size_metric(labels, outputs):
        return ef.constant(float(len(labels)))

    history = nn.fit(nn.Sequential([nn.Dense(1)]), x, y, loss="mean_squared_error",
                     optimizer=nn.GradientDescentOptimizer(0.01), batch_size=4,
                     metrics=[batch_size_metric], verbose=False)  # fmt: skip
    # batches of 4, 4, 2: (4·4 + 4·4 + 2·2) / 10
    assert history["batch_size_metric"] == [pytest.approx(3.6)]


def test_fit_with_a_loss_function() -> None:
    x, y = regression(16)
    calls = []

    def my_loss(labels, outputs):
        calls.append(len(labels))
        return nn.mean_squared_error(labels, outputs)

    history = nn.fit(nn.Sequential([nn.Dense(1)]), x, y, loss=my_loss,
                     optimizer=nn.GradientDescentOptimizer(0.1), epochs=2, batch_size=8,
                     verbose=False)  # fmt: skip
    assert calls == [8, 8, 8, 8]
    assert len(history["loss"]) == 2


def test_fit_validation_data_adds_val_loss_and_val_metrics() -> None:
    x, y = classification()
    lines: list[str] = []
    model = nn.Sequential([nn.Dense(2)])
    history = nn.fit(model, x[:40], y[:40], loss="sparse_softmax_cross_entropy",
                     optimizer=nn.GradientDescentOptimizer(0.5), epochs=2, metrics=["accuracy"],
                     validation_data=(x[40:], y[40:]), print_fn=lines.append)  # fmt: skip
    assert set(history.epochs[-1]) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert "val_loss" in lines[1]
    # the last epoch's val_loss is the trained model's loss on the validation data
    expected = ef.reduce_mean(nn.sparse_softmax_cross_entropy_with_logits(
        labels=y[40:], logits=model(x[40:])))  # fmt: skip
    assert history["val_loss"][-1] == pytest.approx(float(expected), rel=1e-6)


def test_fit_unknown_loss_name() -> None:
    x, y = regression(8)
    with pytest.raises(ValueError, match="mean_absolute_error"):
        nn.fit(nn.Sequential([nn.Dense(1)]), x, y, loss="mean_absolute_error",
               optimizer=nn.GradientDescentOptimizer(0.1), verbose=False)  # fmt: skip


def test_fit_unknown_metric_name() -> None:
    x, y = regression(8)
    with pytest.raises(ValueError, match="precision"):
        nn.fit(nn.Sequential([nn.Dense(1)]), x, y, loss="mean_squared_error",
               optimizer=nn.GradientDescentOptimizer(0.1), metrics=["precision"],
               verbose=False)  # fmt: skip


FIT_MISTAKES = {
    "x and y of other lengths": (
        {"y": np.ones((7, 1))},
        ValueError,
        "fit: every array needs as many rows, but x has 8, y has 7",
    ),
    "no examples": (
        {"x": np.ones((0, 1)), "y": np.ones((0, 1))},
        ValueError,
        "fit: x and y hold no examples",
    ),
    "x is one value": (
        {"x": "abc"},
        ValueError,
        "fit: x is the single value 'abc', not an array",
    ),
    "negative epochs": ({"epochs": -1}, ValueError, "fit: epochs must be >= 0, got -1"),
    "optimizer by name": ({"optimizer": "sgd"}, TypeError, "fit: optimizer must be an Optimizer"),
}


@pytest.mark.parametrize("mistake", list(FIT_MISTAKES))
def test_fit_mistakes_are_named_before_any_training(mistake: str) -> None:
    change, error, message = FIT_MISTAKES[mistake]
    x, y = regression(8)
    model = nn.Sequential([nn.Dense(1)])
    arguments = {"x": x, "y": y, "epochs": 1, "optimizer": nn.GradientDescentOptimizer(0.1)}
    arguments.update(change)
    lines: list[str] = []
    with pytest.raises(error, match=re.escape(message)):
        nn.fit(model, loss="mean_squared_error", print_fn=lines.append, **arguments)
    assert not model.built and not lines  # nothing ran


def test_fit_trains_with_dropout_in_training_mode() -> None:
    """fit passes training=True: a Dropout(0.5) layer zeroes activations during fit, so the
    training loss differs from the loss of the same model evaluated without dropout."""
    x, y = regression(32)
    model = nn.Sequential([nn.Dense(16), nn.Dropout(0.5), nn.Dense(1)])
    history = nn.fit(model, x, y, loss="mean_squared_error",
                     optimizer=nn.GradientDescentOptimizer(1e-9), batch_size=32,
                     shuffle=False, verbose=False)  # fmt: skip
    inference = float(nn.mean_squared_error(y, model(x)))
    assert history["loss"][0] != pytest.approx(inference, rel=1e-3)
