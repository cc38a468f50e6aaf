"""The training runs the distribute tests compare, on one process (``strategy=None``) or as
one replica of a strategy: a small MLP, 4 steps of a global batch of 16 (modes eager,
function, jit, fit), and a small CNN on the first 192 handwritten digits with a global batch
of 64 (mode digits, through fit). Used by the thread tests and, in worker processes, by the
real 2-process tests."""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

import eagerflow.graph as eg
from eagerflow import nn
from eagerflow.autodiff import GradientTape
from eagerflow.nn import training

GLOBAL_BATCH, STEPS = 16, 4
MODES = ("eager", "function", "jit", "fit")
DIGITS_BATCH, DIGITS_STEPS = 64, 3


def data(mode: str = "fit") -> tuple[np.ndarray, np.ndarray]:
    if mode == "digits":
        (x, y), _ = nn.datasets.load_digits()
        images = x[: DIGITS_BATCH * DIGITS_STEPS, :, :, None].astype(np.float32) / 16
        return images, y[: DIGITS_BATCH * DIGITS_STEPS]
    rng = np.random.default_rng(7)
    x = rng.standard_normal((GLOBAL_BATCH * STEPS, 4)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 1).astype(np.int64)
    return x, y


class RowCounter(nn.Layer):
    """Passes its input on, noting how many rows each call had (a trace: once)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[int] = []

    def call(self, inputs: Any) -> Any:
        self.rows.append(int(inputs.shape[0]))
        return inputs


def model_and_optimizer(mode: str) -> tuple[nn.Model, nn.Optimizer]:
    """The same starting weights everywhere, set from a fixed generator after building."""
    if mode == "digits":  # chapter 16's CNN less its batch norms and dropout, whose
        # statistics and masks are per replica (TensorFlow's are too)
        layers = [nn.Conv2D(8, 3, padding="same", activation="relu"), nn.MaxPool2D(),
                  nn.Conv2D(16, 3, padding="same", activation="relu"), nn.Flatten(),
                  nn.Dense(10)]  # fmt: skip
        model = nn.Sequential([RowCounter(), *layers])
        model(np.zeros((1, 8, 8, 1), np.float32))
    else:
        model = nn.Sequential([RowCounter(), nn.Dense(8, "tanh"), nn.Dense(3)])
        model(np.zeros((1, 4), np.float32))
    rng = np.random.default_rng(3)
    for v in model.trainable_variables:
        v.assign((0.5 * rng.standard_normal(v.shape)).astype(np.float32))
    return model, nn.MomentumOptimizer(0.2, momentum=0.9)


def _loss(model: nn.Model, x: Any, y: Any) -> Any:
    logits = model(x, training=True)
    return training.LOSSES["sparse_softmax_cross_entropy"](y, logits)


def _custom_loop(model, optimizer, strategy, mode: str) -> list[float]:
    def step(x: Any, y: Any) -> Any:
        with GradientTape() as tape:
            loss = _loss(model, x, y)
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    if mode != "eager":
        step = eg.function(step, jit_compile=mode == "jit")
    x, y = data()
    batches = [
        (x[i : i + GLOBAL_BATCH], y[i : i + GLOBAL_BATCH]) for i in range(0, len(x), GLOBAL_BATCH)
    ]
    losses = []
    if strategy is None:
        for xb, yb in batches:
            losses.append(float(step(xb, yb)))
        return losses
    for xb, yb in strategy.experimental_distribute_dataset(batches):
        local = strategy.run(step, args=(xb, yb))
        losses.append(float(strategy.reduce("MEAN", local)))
    return losses


def _fit(model, optimizer, strategy, mode: str) -> list[float]:
    x, y = data(mode)
    scope = contextlib.nullcontext() if strategy is None else strategy.scope()
    batch, epochs = (DIGITS_BATCH, 1) if mode == "digits" else (GLOBAL_BATCH, 2)
    with scope:
        history = nn.fit(model, x, y, loss="sparse_softmax_cross_entropy", optimizer=optimizer,
                         batch_size=batch, seed=5, epochs=epochs, verbose=0)  # fmt: skip
    losses = [float(v) for v in history.history["loss"]]
    if strategy is None:
        return losses
    return [float(strategy.reduce("MEAN", v)) for v in losses]  # each replica's: its shards'


def train(strategy: Any, mode: str) -> dict[str, Any]:
    """Train; the final weights, the losses of each step (of each epoch, for fit) and the
    numbers of rows the model was called with."""
    scope = contextlib.nullcontext() if strategy is None else strategy.scope()
    with scope:
        model, optimizer = model_and_optimizer(mode)
    if mode in ("fit", "digits"):
        losses = _fit(model, optimizer, strategy, mode)
    else:
        losses = _custom_loop(model, optimizer, strategy, mode)
    rows = model.layers[0].rows[1:]  # (not the call that built the model)
    weights = [v.numpy() for v in model.trainable_variables]
    return {"weights": weights, "losses": losses, "rows": sorted(set(rows))}


__all__ = ["DIGITS_BATCH", "GLOBAL_BATCH", "MODES", "data", "train"]
