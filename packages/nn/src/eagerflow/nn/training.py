"""Training loops: ``batches`` cuts NumPy data into shuffled mini-batches, ``fit`` trains.

``fit`` is the loop a reader would write by hand (chapter 11 does, first): for each batch,
run the model under a GradientTape, take the loss's gradient for every trainable variable,
and let the optimizer apply it. It prints one line per epoch, and a progress line whenever
an epoch runs for more than a few seconds, so long training is never silent.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape
from eagerflow.nn import losses
from eagerflow.nn.module import Layer
from eagerflow.nn.optimizers import Optimizer
from eagerflow.tensor import Tensor

LossFn = Callable[[Any, Any], Tensor]

LOSSES: dict[str, LossFn] = {
    "mean_squared_error": losses.mean_squared_error,
    "softmax_cross_entropy": lambda y, out: ef.reduce_mean(
        losses.softmax_cross_entropy_with_logits(labels=y, logits=out)),
    "sparse_softmax_cross_entropy": lambda y, out: ef.reduce_mean(
        losses.sparse_softmax_cross_entropy_with_logits(labels=y, logits=out)),
    "sigmoid_cross_entropy": lambda y, out: ef.reduce_mean(
        losses.sigmoid_cross_entropy_with_logits(labels=y, logits=out)),
}  # fmt: skip
METRICS: dict[str, LossFn] = {"accuracy": losses.accuracy}
PROGRESS_EVERY = 5.0  # seconds between progress lines inside one epoch


def batches(
    *arrays: Any,
    batch_size: int = 32,
    shuffle: bool = True,
    seed: int | np.random.Generator | None = None,
) -> Iterator[tuple[np.ndarray, ...]]:
    """Mini-batches of the same rows of each array (the last batch may be smaller)."""
    columns = [np.asarray(a) for a in arrays]
    n = _examples("batches", {f"array {i}": c for i, c in enumerate(columns)})
    if batch_size < 1:
        raise ValueError(f"batches: batch_size must be >= 1, got {batch_size}")
    order = np.random.default_rng(seed).permutation(n) if shuffle else np.arange(n)
    for start in range(0, n, batch_size):
        rows = order[start : start + batch_size]
        yield tuple(c[rows] for c in columns)


def _examples(caller: str, columns: dict[str, np.ndarray]) -> int:
    """How many examples (rows) the named arrays hold: the same number in each, or an error."""
    if not columns:
        raise ValueError(f"{caller}: give at least one array")
    for name, column in columns.items():
        if column.ndim == 0:
            raise ValueError(
                f"{caller}: {name} is the single value {column.item()!r:.40}, "
                "not an array of examples (one row each)"
            )
    lengths = {name: len(column) for name, column in columns.items()}
    if len(set(lengths.values())) != 1:
        rows = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise ValueError(f"{caller}: every array needs as many rows, but {rows}")
    return lengths.popitem()[1]


@dataclass
class History:
    """What ``fit`` measured: one dict of averages per epoch."""

    epochs: list[dict[str, float]] = field(default_factory=list)

    def __getitem__(self, name: str) -> list[float]:
        """One value per epoch: ``history["loss"]``."""
        return [logs[name] for logs in self.epochs]


def fit(
    model: Layer,
    x: Any,
    y: Any,
    *,
    loss: str | LossFn,
    optimizer: Optimizer,
    epochs: int = 1,
    batch_size: int = 32,
    metrics: Sequence[str | LossFn] = (),
    validation_data: tuple[Any, Any] | None = None,
    shuffle: bool = True,
    seed: int | None = None,
    verbose: bool = True,
    print_fn: Callable[[str], None] = print,
) -> History:
    """Train ``model`` on (x, y) in eager mode; returns the per-epoch averages.

    ``loss(labels, outputs)`` is a scalar loss (or a name from ``LOSSES``); each metric is a
    ``(labels, outputs)`` function or a name from ``METRICS``.
    """
    loss_fn = _named(loss, LOSSES, "loss")
    metric_fns = {_label(m): _named(m, METRICS, "metric") for m in metrics}
    if not isinstance(optimizer, Optimizer):
        raise TypeError(
            f"fit: optimizer must be an Optimizer such as nn.AdamOptimizer(), got {optimizer!r}"
        )
    if epochs < 0:
        raise ValueError(f"fit: epochs must be >= 0, got {epochs}")
    n = _examples("fit", {"x": np.asarray(x), "y": np.asarray(y)})
    if n == 0:
        raise ValueError("fit: x and y hold no examples")
    rng = np.random.default_rng(seed)
    history = History()
    for epoch in range(1, epochs + 1):
        start = last_print = time.perf_counter()
        sums = dict.fromkeys(["loss", *metric_fns], 0.0)
        seen = 0
        for xb, yb in batches(x, y, batch_size=batch_size, shuffle=shuffle, seed=rng):
            with GradientTape() as tape:
                outputs = model(xb, training=True)
                value = loss_fn(yb, outputs)
            variables = model.trainable_variables
            optimizer.apply_gradients(zip(tape.gradient(value, variables), variables, strict=True))
            sums["loss"] += float(value) * len(xb)
            for name, fn in metric_fns.items():
                sums[name] += float(fn(yb, outputs)) * len(xb)
            seen += len(xb)
            if verbose and time.perf_counter() - last_print > PROGRESS_EVERY:
                last_print = time.perf_counter()
                print_fn(f"epoch {epoch}/{epochs}  {seen}/{n} examples  "
                         f"loss {sums['loss'] / seen:.4f}")  # fmt: skip
        logs = {name: total / seen for name, total in sums.items()}
        if validation_data is not None:
            logs.update(evaluate(model, *validation_data, loss=loss_fn, metrics=metric_fns))
        history.epochs.append(logs)
        if verbose:
            shown = "  ".join(f"{name} {value:.4f}" for name, value in logs.items())
            print_fn(f"epoch {epoch}/{epochs}  {shown}  ({time.perf_counter() - start:.2f} s)")
    return history


def evaluate(
    model: Layer, x: Any, y: Any, *, loss: LossFn, metrics: dict[str, LossFn]
) -> dict[str, float]:
    """``val_loss`` and ``val_<metric>`` of ``model`` on (x, y), in one batch."""
    outputs = model(x)
    logs = {"val_loss": float(loss(y, outputs))}
    logs.update((f"val_{name}", float(fn(y, outputs))) for name, fn in metrics.items())
    return logs


def _named(fn: str | LossFn, table: dict[str, LossFn], kind: str) -> LossFn:
    if callable(fn):
        return fn
    if fn not in table:
        raise ValueError(f"unknown {kind} {fn!r}; known: {sorted(table)}")
    return table[fn]


def _label(fn: str | LossFn) -> str:
    return fn if isinstance(fn, str) else getattr(fn, "__name__", "metric")


__all__ = ["LOSSES", "METRICS", "PROGRESS_EVERY", "History", "LossFn", "batches", "evaluate", "fit"]
