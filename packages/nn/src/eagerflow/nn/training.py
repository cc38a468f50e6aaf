"""Training loops: ``batches`` cuts NumPy data into shuffled mini-batches, ``fit`` trains
on arrays or on a ``data.Dataset``.

``fit`` is the loop a reader would write by hand (chapter 12 does, first): for each batch,
run the model under a GradientTape, take the loss's gradient for every trainable variable,
and let the optimizer apply it. Around that loop it calls Keras' callbacks
(``nn.callbacks``): the progress bar, ``History`` and any the caller gives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape
from eagerflow.graph import function
from eagerflow.nn import losses
from eagerflow.nn.callbacks import Callback, CallbackList, History, ProgbarLogger
from eagerflow.nn.callbacks.progbar import PROGRESS_EVERY, LineStream
from eagerflow.nn.data import INFINITE_CARDINALITY, Dataset
from eagerflow.nn.module import Layer
from eagerflow.nn.optimizers import Optimizer
from eagerflow.nn.replicas import current_replica_hook
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
    verbose: int | bool = 1,
    callbacks: Sequence[Callback] | None = None,
    print_fn: Callable[[str], None] = print,
    run_eagerly: bool = True,
) -> History:
    """Train ``model``; returns its ``History`` (also ``model.history``). The data comes one
    of two ways, as in Keras:

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

    ``callbacks`` (``nn.callbacks``) are called at each step of training, in Keras' order
    (see ``callbacks/base.py``); ``verbose`` 1 prints Keras' progress bar, 2 one line per
    epoch, 0 nothing, through ``print_fn`` if given (the bar is then printed finished). Each
    step runs eagerly, or with ``run_eagerly=False`` as one ``function`` (Keras' default).
    """
    loss_fn = _named(loss, LOSSES, "loss")
    metric_fns = {_label(m): _named(m, METRICS, "metric") for m in metrics}
    epoch_batches, steps = _epoch_source(x, y, batch_size=batch_size, shuffle=shuffle, seed=seed)
    _check_fit_arguments(optimizer, epochs, verbose, validation_data)
    params = {"epochs": epochs, "steps": steps, "verbose": int(verbose), "optimizer": optimizer,
              "input_shape": _input_shape(x)}  # fmt: skip
    hooks, history = _callback_list(callbacks, model, params, print_fn)
    step, logs = _train_step(model, loss_fn, optimizer, run_eagerly), dict[str, float]()
    hooks.on_train_begin()
    for epoch in range(epochs):
        hooks.on_epoch_begin(epoch)
        logs = _train_epoch(epoch_batches(), step, metric_fns, hooks)
        if not logs:
            raise ValueError(f"fit: the dataset gave no examples in epoch {epoch + 1}")
        logs.update(_validate(model, validation_data, loss_fn, metric_fns, hooks))
        hooks.on_epoch_end(epoch, logs)
        if model.stop_training:
            break
    hooks.on_train_end(logs)
    return history


def _check_replicated_order(x: Any, shuffle: bool | None, seed: int | None) -> None:
    """Under a distribution strategy each replica shuffles arrays on its own: they must draw
    the same orders (one seed) to cut the same global batches."""
    unseeded = seed is None and shuffle is not False and not isinstance(x, Dataset)
    if unseeded and current_replica_hook() is not None:
        raise ValueError("fit: under a distribution strategy give seed= (or shuffle=False), "
                         "so that every replica cuts the same global batches")  # fmt: skip


def _validate(
    model: Layer,
    data: tuple[Any, Any] | Dataset | None,
    loss_fn: LossFn,
    metric_fns: dict[str, LossFn],
    hooks: CallbackList,
) -> dict[str, float]:
    """The epoch's ``val_`` logs: none without validation data."""
    if data is None:
        return {}
    pair = (data, None) if isinstance(data, Dataset) else data
    return evaluate(model, *pair, loss=loss_fn, metrics=metric_fns, callbacks=hooks)


def _input_shape(x: Any) -> tuple[int, ...] | None:
    """The shape of one example of ``x`` (TensorBoard traces the model with it); None when
    the inputs are nested or not known."""
    if isinstance(x, Dataset):
        spec = x.element_spec[0] if isinstance(x.element_spec, tuple) else None
        shape = getattr(spec, "shape", None)
        dims = None if shape is None else tuple(shape)[1:]
        return dims if dims is not None and all(isinstance(n, int) for n in dims) else None
    return np.shape(x)[1:] if isinstance(x, np.ndarray | list) else None


def _check_fit_arguments(
    optimizer: Any, epochs: int, verbose: int | bool, validation_data: Any
) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(
            f"fit: optimizer must be an Optimizer such as nn.AdamOptimizer(), got {optimizer!r}"
        )
    if epochs < 0:
        raise ValueError(f"fit: epochs must be >= 0, got {epochs}")
    if verbose not in (0, 1, 2):
        raise ValueError(f"fit: verbose must be 0 (silent), 1 (a progress bar) or 2 (a line "
                         f"per epoch), got {verbose!r}")  # fmt: skip
    if isinstance(validation_data, Dataset):
        _check_finite("fit: validation_data", validation_data)


def _callback_list(
    callbacks: Sequence[Callback] | None,
    model: Layer,
    params: dict[str, Any],
    print_fn: Callable[[str], None],
) -> tuple[CallbackList, History]:
    """The user's callbacks, then (as Keras adds them) a progress bar and a ``History``,
    unless the list has its own; each told the model and ``fit``'s ``params``."""
    hooks = CallbackList(callbacks or ())
    if params["verbose"] and not any(isinstance(c, ProgbarLogger) for c in hooks.callbacks):
        hooks.append(ProgbarLogger(stream=None if print_fn is print else LineStream(print_fn)))
    history = next((c for c in hooks.callbacks if isinstance(c, History)), None)
    if history is None:
        history = History()
        hooks.append(history)
    hooks.set_model(model)
    hooks.set_params(params)
    model.stop_training = False  # a callback sets it to stop after this epoch (Keras' flag)
    return hooks, history


def _train_step(
    model: Layer, loss_fn: LossFn, optimizer: Optimizer, run_eagerly: bool
) -> Callable[[Any, Any], tuple[Tensor, Any]]:
    """One training step on a batch: the loss and the outputs, after the update; traced as
    a ``function`` unless ``run_eagerly``."""

    def train_step(xb: Any, yb: Any) -> tuple[Tensor, Any]:
        with GradientTape() as tape:
            outputs = model(xb, training=True)
            value = loss_fn(yb, outputs)
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(value, variables), variables, strict=True))
        return value, outputs

    return train_step if run_eagerly else function(train_step)


def _train_epoch(
    epoch: Iterator[tuple[Any, ...]],
    step: Callable[[Any, Any], tuple[Tensor, Any]],
    metric_fns: dict[str, LossFn],
    hooks: CallbackList,
) -> dict[str, float]:
    """One pass of ``fit`` over the epoch's batches, a step per batch; the loss and metrics
    averaged over the epoch's examples (each batch weighted by its size); {} if it had none."""
    sums = dict.fromkeys(["loss", *metric_fns], 0.0)
    seen = 0
    replicas = current_replica_hook()  # under a distribution strategy: this replica's rows
    for batch, (xb, yb) in enumerate(epoch):
        hooks.on_train_batch_begin(batch)
        if replicas is not None:
            xb, yb = replicas.shard(xb), replicas.shard(yb)
        value, outputs = step(xb, yb)
        rows = _rows(xb)
        sums["loss"] += float(value) * rows
        for name, fn in metric_fns.items():
            sums[name] += float(fn(yb, outputs)) * rows
        seen += rows
        hooks.on_train_batch_end(batch, {name: total / seen for name, total in sums.items()})
    return {name: total / seen for name, total in sums.items()} if seen else {}


def _epoch_source(
    x: Any, y: Any, *, batch_size: int | None, shuffle: bool | None, seed: int | None
) -> tuple[Callable[[], Iterator[tuple[Any, ...]]], int | None]:
    """``fit``'s data as a function giving each epoch's ``(x, y)`` batches, and the number of
    batches (steps) in an epoch (None for a Dataset: unknown until an epoch has run)."""
    _check_replicated_order(x, shuffle, seed)
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
    steps = -(-n // size) if size >= 1 else None  # batches() names a bad batch_size
    return (lambda: batches(x, y, batch_size=size, shuffle=mix, seed=rng)), steps


def evaluate(
    model: Layer,
    x: Any,
    y: Any = None,
    *,
    loss: LossFn,
    metrics: dict[str, LossFn],
    callbacks: CallbackList | None = None,
) -> dict[str, float]:
    """``val_loss`` and ``val_<metric>`` of ``model`` on arrays (x, y), in one batch, or on a
    Dataset ``x`` of (x, y) batches, averaged over its examples. ``callbacks`` get the test
    hooks, with the logs unprefixed (``loss``), as in Keras."""
    hooks = callbacks if callbacks is not None else CallbackList()
    pairs: Iterable[tuple[Any, Any]] = (
        (_pair("fit: validation_data", element) for element in x)
        if isinstance(x, Dataset) else [(x, y)]
    )  # fmt: skip
    fns = {"loss": loss, **metrics}
    sums = dict.fromkeys(fns, 0.0)
    seen = 0
    hooks.on_test_begin()
    for batch, (xb, yb) in enumerate(pairs):
        hooks.on_test_batch_begin(batch)
        outputs = model(xb)
        rows = _rows(xb)
        for name, fn in fns.items():
            sums[name] += float(fn(yb, outputs)) * rows
        seen += rows
        hooks.on_test_batch_end(batch, {name: total / seen for name, total in sums.items()})
    if seen == 0:
        raise ValueError("fit: the validation_data dataset gave no examples")
    logs = {name: total / seen for name, total in sums.items()}
    hooks.on_test_end(logs)
    return {f"val_{name}": value for name, value in logs.items()}


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
