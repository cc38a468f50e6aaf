"""The training run the distribute tests compare: a small MLP, 4 steps of a global batch of
16, on one process (``strategy=None``) or as one replica of a strategy. Used by the thread
tests and, in worker processes, by the real 2-process tests."""

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


def data() -> tuple[np.ndarray, np.ndarray]:
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


def model_and_optimizer() -> tuple[nn.Model, nn.Optimizer]:
    """The same starting weights everywhere, set from a fixed generator after building."""
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


def _fit(model, optimizer, strategy) -> list[float]:
    x, y = data()
    scope = contextlib.nullcontext() if strategy is None else strategy.scope()
    with scope:
        history = nn.fit(model, x, y, loss="sparse_softmax_cross_entropy", optimizer=optimizer,
                         batch_size=GLOBAL_BATCH, shuffle=False, epochs=2, verbose=0)  # fmt: skip
    losses = [float(v) for v in history.history["loss"]]
    if strategy is None:
        return losses
    return [float(strategy.reduce("MEAN", v)) for v in losses]  # each replica's: its shards'


def train(strategy: Any, mode: str) -> dict[str, Any]:
    """Train; the final weights, the losses of each step (of each epoch, for fit) and the
    numbers of rows the model was called with."""
    scope = contextlib.nullcontext() if strategy is None else strategy.scope()
    with scope:
        model, optimizer = model_and_optimizer()
    if mode == "fit":
        losses = _fit(model, optimizer, strategy)
    else:
        losses = _custom_loop(model, optimizer, strategy, mode)
    rows = model.layers[0].rows[1:]  # (not the call that built the model)
    weights = [v.numpy() for v in model.trainable_variables]
    return {"weights": weights, "losses": losses, "rows": sorted(set(rows))}


__all__ = ["GLOBAL_BATCH", "MODES", "data", "train"]
