"""Training loops: ``batches`` cuts NumPy data into shuffled mini-batches, ``fit`` trains
on arrays or on a ``data.Dataset``.

``fit`` is the loop a reader would write by hand (chapter 12 does, first): for each batch,
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
from eagerflow.nn.data import INFINITE_CARDINALITY, Dataset
from eagerflow.nn.module import Layer
from eagerflow.nn.optimizers import Optimizer
from eagerflow.tensor import Tensor, nest

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
    y: Any = None,
    *,
    loss: str | LossFn,
    optimizer: Optimizer,
    epochs: int = 1,
    batch_size: int | None = None,
    metrics: Sequence[str | LossFn] = (),
    validation_data: tuple[Any, Any] | Dataset | None = None,
    shuffle: bool | None = None,
    seed: int | None = None,
    verbose: bool = True,
    print_fn: Callable[[str], None] = print,
) -> History:
    """Train ``model`` in eager mode; returns the per-epoch averages.

    The data comes one of two ways, as in Keras:

    - arrays ``x`` and ``y`` (one row per example): ``fit`` cuts them into mini-batches of
      ``batch_size`` (32 if not given), in a new random order each epoch unless ``shuffle``
      is False; ``seed`` makes the orders reproducible;
    - a ``data.Dataset`` ``x`` whose elements are ``(x, y)`` batches: each epoch is one pass
      over it, batched and shuffled as the dataset says, so ``y``, ``batch_size``,
      ``shuffle`` and ``seed`` must not be given (each is an error, not silently ignored).
      It must be finite: a ``repeat()`` without a count would make the first epoch endless.

    ``loss(labels, outputs)`` is a scalar loss (or a name from ``LOSSES``); each metric is a
    ``(labels, outputs)`` function or a name from ``METRICS``. Each epoch's loss and metrics
    are averages over its examples (each batch weighted by its size). ``validation_data``,
    arrays ``(x, y)`` or a Dataset of ``(x, y)`` batches, adds ``val_loss`` and
    ``val_<metric>`` after each epoch.
    """
    loss_fn = _named(loss, LOSSES, "loss")
    metric_fns = {_label(m): _named(m, METRICS, "metric") for m in metrics}
    if not isinstance(optimizer, Optimizer):
        raise TypeError(
            f"fit: optimizer must be an Optimizer such as nn.AdamOptimizer(), got {optimizer!r}"
        )
    if epochs < 0:
        raise ValueError(f"fit: epochs must be >= 0, got {epochs}")
    epoch_batches, n = _epoch_source(x, y, batch_size=batch_size, shuffle=shuffle, seed=seed)
    if isinstance(validation_data, Dataset):
        _check_finite("fit: validation_data", validation_data)
    progress = _Progress(epochs, n, print_fn if verbose else None)
    history = History()
    for epoch in range(1, epochs + 1):
        progress.start(epoch)
        logs = _train_epoch(model, epoch_batches(), loss_fn, metric_fns, optimizer, progress)
        if isinstance(validation_data, Dataset):
            logs.update(evaluate(model, validation_data, loss=loss_fn, metrics=metric_fns))
        elif validation_data is not None:
            logs.update(evaluate(model, *validation_data, loss=loss_fn, metrics=metric_fns))
        history.epochs.append(logs)
        progress.end(logs)
    return history


def _train_epoch(
    model: Layer,
    epoch: Iterator[tuple[Any, ...]],
    loss_fn: LossFn,
    metric_fns: dict[str, LossFn],
    optimizer: Optimizer,
    progress: _Progress,
) -> dict[str, float]:
    """One pass of ``fit`` over the epoch's batches, a step per batch; the loss and metrics
    averaged over the epoch's examples (each batch weighted by its size)."""
    sums = dict.fromkeys(["loss", *metric_fns], 0.0)
    seen = 0
    for xb, yb in epoch:
        with GradientTape() as tape:
            outputs = model(xb, training=True)
            value = loss_fn(yb, outputs)
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(value, variables), variables, strict=True))
        rows = _rows(xb)
        sums["loss"] += float(value) * rows
        for name, fn in metric_fns.items():
            sums[name] += float(fn(yb, outputs)) * rows
        seen += rows
        progress.batch(seen, sums["loss"])
    if seen == 0:
        raise ValueError(f"fit: the dataset gave no examples in epoch {progress.epoch}")
    return {name: total / seen for name, total in sums.items()}


def _epoch_source(
    x: Any, y: Any, *, batch_size: int | None, shuffle: bool | None, seed: int | None
) -> tuple[Callable[[], Iterator[tuple[Any, ...]]], int | None]:
    """``fit``'s data as a function giving each epoch's ``(x, y)`` batches, and the number of
    examples (None for a Dataset: unknown until an epoch has run)."""
    if isinstance(x, Dataset):
        _check_dataset_arguments(x, y=y, batch_size=batch_size, shuffle=shuffle, seed=seed)
        return (lambda: (_pair("fit", element) for element in x)), None
    if y is None:
        raise ValueError("fit: give y, the labels of x (or make x a Dataset of (x, y) batches)")
    n = _examples("fit", {"x": np.asarray(x), "y": np.asarray(y)})
    if n == 0:
        raise ValueError("fit: x and y hold no examples")
    rng = np.random.default_rng(seed)
    size = 32 if batch_size is None else batch_size
    mix = True if shuffle is None else shuffle
    return (lambda: batches(x, y, batch_size=size, shuffle=mix, seed=rng)), n


class _Progress:
    """What ``fit`` prints: a line every ``PROGRESS_EVERY`` seconds within an epoch, and one
    at its end with its averages and time (nothing when ``print_fn`` is None)."""

    def __init__(self, epochs: int, n: int | None, print_fn: Callable[[str], None] | None) -> None:
        self.epochs, self.print_fn = epochs, print_fn
        self.of = "" if n is None else f"/{n}"  # "/1437" after the examples seen
        self.epoch, self.started, self.last_print = 0, 0.0, 0.0

    def start(self, epoch: int) -> None:
        self.epoch = epoch
        self.started = self.last_print = time.perf_counter()

    def batch(self, seen: int, loss_sum: float) -> None:
        if self.print_fn is None or time.perf_counter() - self.last_print <= PROGRESS_EVERY:
            return
        self.last_print = time.perf_counter()
        self.print_fn(f"epoch {self.epoch}/{self.epochs}  {seen}{self.of} examples  "
                      f"loss {loss_sum / seen:.4f}")  # fmt: skip

    def end(self, logs: dict[str, float]) -> None:
        if self.print_fn is None:
            return
        shown = "  ".join(f"{name} {value:.4f}" for name, value in logs.items())
        took = time.perf_counter() - self.started
        self.print_fn(f"epoch {self.epoch}/{self.epochs}  {shown}  ({took:.2f} s)")


def evaluate(
    model: Layer, x: Any, y: Any = None, *, loss: LossFn, metrics: dict[str, LossFn]
) -> dict[str, float]:
    """``val_loss`` and ``val_<metric>`` of ``model`` on arrays (x, y), in one batch, or on a
    Dataset ``x`` of (x, y) batches, averaged over its examples."""
    if not isinstance(x, Dataset):
        outputs = model(x)
        logs = {"val_loss": float(loss(y, outputs))}
        logs.update((f"val_{name}", float(fn(y, outputs))) for name, fn in metrics.items())
        return logs
    fns = {"val_loss": loss, **{f"val_{name}": fn for name, fn in metrics.items()}}
    sums = dict.fromkeys(fns, 0.0)
    seen = 0
    for element in x:
        xb, yb = _pair("fit: validation_data", element)
        outputs = model(xb)
        rows = _rows(xb)
        for name, fn in fns.items():
            sums[name] += float(fn(yb, outputs)) * rows
        seen += rows
    if seen == 0:
        raise ValueError("fit: the validation_data dataset gave no examples")
    return {name: total / seen for name, total in sums.items()}


def _check_dataset_arguments(dataset: Dataset, **given: Any) -> None:
    """A Dataset carries its own labels, batches and order: arguments that would set them
    again are mistakes (Keras refuses them too), named before anything trains."""
    why = {
        "y": "its elements are (x, y) batches, labels included",
        "batch_size": "it is batched already (dataset.batch(n))",
        "shuffle": "it shuffles itself if it should (dataset.shuffle(buffer_size))",
        "seed": "a shuffling dataset has its own (dataset.shuffle(buffer_size, seed=...))",
    }
    for name, value in given.items():
        if value is not None:
            raise ValueError(f"fit: x is a Dataset, so do not give {name}: {why[name]}")
    _check_finite("fit: x", dataset)


def _check_finite(what: str, dataset: Dataset) -> None:
    if dataset.cardinality() == INFINITE_CARDINALITY:
        raise ValueError(
            f"{what} is an infinite Dataset (repeat() without a count), so an epoch would "
            "never end; give repeat() a count, or take(n) batches"
        )


def _pair(what: str, element: Any) -> tuple[Any, Any]:
    """A Dataset element as (x, y), or an error saying what it was instead."""
    if not isinstance(element, tuple) or len(element) != 2:
        shape = f"a tuple of {len(element)}" if isinstance(element, tuple) else (
            type(element).__name__)  # fmt: skip
        raise ValueError(
            f"{what}: a Dataset's elements must be (x, y) batches, got {shape}; build it "
            "with Dataset.from_tensor_slices((x, y)).batch(n), or map its elements to pairs"
        )
    return element[0], element[1]


def _rows(xb: Any) -> int:
    """The examples in a batch: the length of its (first) input."""
    return len(nest.flatten(xb)[0])


def _named(fn: str | LossFn, table: dict[str, LossFn], kind: str) -> LossFn:
    if callable(fn):
        return fn
    if fn not in table:
        raise ValueError(f"unknown {kind} {fn!r}; known: {sorted(table)}")
    return table[fn]


def _label(fn: str | LossFn) -> str:
    return fn if isinstance(fn, str) else getattr(fn, "__name__", "metric")


__all__ = ["LOSSES", "METRICS", "PROGRESS_EVERY", "History", "LossFn", "batches", "evaluate", "fit"]
