"""The callbacks that watch a number and act on it, with Keras' names and arguments:
``EarlyStopping``, ``ModelCheckpoint``, ``LearningRateScheduler``, ``ReduceLROnPlateau`` and
``CSVLogger``."""

from __future__ import annotations

import csv
import io
import math
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from eagerflow.graph.core.files import atomic_write
from eagerflow.nn.callbacks.base import Callback, Logs
from eagerflow.nn.checkpoint import Checkpoint
from eagerflow.nn.optimizers import hyperparameter


def _improved(mode: str, monitor: str) -> Callable[[float, float], bool]:
    """``better(new, best)`` for ``mode`` "min", "max" or "auto" (max for accuracies)."""
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"{monitor}: mode must be 'auto', 'min' or 'max', got {mode!r}")
    if mode == "max" or (mode == "auto" and ("acc" in monitor or monitor.endswith("auc"))):
        return lambda new, best: new > best
    return lambda new, best: new < best


def _monitored(owner: str, monitor: str, logs: Logs | None) -> float | None:
    """The monitored value, or None with a warning naming the values there are."""
    value = (logs or {}).get(monitor)
    if value is None:
        warnings.warn(f"{owner} monitors {monitor!r}, which is not in the logs "
                      f"(there are: {sorted(logs or {})})", stacklevel=3)  # fmt: skip
    return value


class EarlyStopping(Callback):
    """Stop ``fit`` when ``monitor`` has not improved by more than ``min_delta`` for
    ``patience`` epochs (from epoch ``start_from_epoch`` on); with ``restore_best_weights``
    the model gets back the weights of its best epoch. ``baseline``: a value it must beat."""

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0,
                 ) -> None:  # fmt: skip
        super().__init__()
        better = _improved(mode, monitor)
        delta = abs(min_delta)
        # improving by min_delta: for "min" new < best - delta, for "max" new > best + delta
        sign = 1.0 if better(1.0, 0.0) else -1.0
        self.improved = lambda new, best: better(new - sign * delta, best)
        self.monitor, self.patience, self.verbose = monitor, patience, verbose
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.worst = -math.inf if sign > 0 else math.inf
        self.best, self.wait, self.stopped_epoch, self.best_epoch = self.worst, 0, 0, 0
        self.best_weights: list[np.ndarray] | None = None

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self.best = self.worst
        self.wait, self.stopped_epoch, self.best_epoch, self.best_weights = 0, 0, 0, None

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        value = _monitored("EarlyStopping", self.monitor, logs)
        if value is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = [v.numpy() for v in self.model.variables]  # a first fallback
            self.best_epoch = epoch
        self.wait += 1
        if self.improved(value, self.best):
            self.best, self.best_epoch = value, epoch
            if self.restore_best_weights:
                self.best_weights = [v.numpy() for v in self.model.variables]
            if self.baseline is None or self.improved(value, self.baseline):
                self.wait = 0  # patience restarts only once the baseline is beaten
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs: Logs | None = None) -> None:
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose:
                print(f"Restoring the model's weights from the end of the best epoch: "
                      f"{self.best_epoch + 1}.")  # fmt: skip
            for variable, value in zip(self.model.variables, self.best_weights, strict=True):
                variable.assign(value)


class ModelCheckpoint(Callback):
    """Save the model after each epoch to ``filepath``, which may name the epoch and logs
    (``"ckpt-{epoch:02d}-{val_loss:.2f}.npz"``; the epoch counts from 1). With
    ``save_best_only`` only when ``monitor`` improves. The file is an ``nn.Checkpoint``
    (written atomically) of the model's weights, plus the optimizer's state unless
    ``save_weights_only`` (Keras would write a ``.keras`` model file instead)."""

    def __init__(self, filepath: str | os.PathLike[str], monitor: str = "val_loss",
                 verbose: int = 0, save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", optimizer: Any = None) -> None:  # fmt: skip
        super().__init__()
        self.filepath, self.monitor, self.verbose = os.fspath(filepath), monitor, verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self.better = _improved(mode, monitor)
        self.optimizer = optimizer
        self.best: float | None = None
        self.saved: list[str] = []

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        logs = logs or {}
        if self.save_best_only:
            value = _monitored("ModelCheckpoint", self.monitor, logs)
            if value is None or not (self.best is None or self.better(value, self.best)):
                return
            self.best = value
        try:
            path = self.filepath.format(epoch=epoch + 1, **logs)
        except KeyError as missing:
            raise KeyError(
                f"ModelCheckpoint: filepath {self.filepath!r} names {missing}, which is not "
                f"in the logs (there are: {sorted(logs)})"
            ) from None
        self._save(path)
        if self.verbose:
            print(f"Epoch {epoch + 1}: saving model to {path}")

    def _save(self, path: str) -> None:
        objects: dict[str, Any] = {"model": self.model}
        optimizer = self.optimizer or self.params.get("optimizer")
        if not self.save_weights_only and optimizer is not None:
            objects["optimizer"] = optimizer
        self.saved.append(Checkpoint(**objects).write(path))


def _optimizer(owner: str, callback: Callback) -> Any:
    optimizer = callback.params.get("optimizer")
    if optimizer is None:
        raise ValueError(f"{owner}: fit gave no optimizer to change the learning rate of")
    return optimizer


def current_rate(optimizer: Any) -> float:
    """The optimizer's learning rate now, as a Python float (Keras logs it as this)."""
    return float(np.asarray(optimizer.learning_rate))


class LearningRateScheduler(Callback):
    """Set the optimizer's learning rate at the start of each epoch to
    ``schedule(epoch, learning_rate)`` (the epoch counts from 0); the rate of each epoch is
    added to its logs as ``learning_rate``. The rate is a variable the update ops read, so
    the new rate reaches a training step traced by ``function`` without tracing it again."""

    def __init__(self, schedule: Callable[[int, float], float], verbose: int = 0) -> None:
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        optimizer = _optimizer("LearningRateScheduler", self)
        value = self.schedule(epoch, current_rate(optimizer))
        optimizer.learning_rate = hyperparameter(
            "LearningRateScheduler", "the schedule's learning_rate", value, "> 0")  # fmt: skip
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                  f"{current_rate(optimizer)}.")  # fmt: skip

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        if logs is not None:
            logs["learning_rate"] = current_rate(_optimizer("LearningRateScheduler", self))


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by ``factor`` (not below ``min_lr``) once ``monitor`` has
    not improved by more than ``min_delta`` for ``patience`` epochs; then wait ``cooldown``
    epochs before counting again. Each epoch's logs get its ``learning_rate``. Keras' callback
    and defaults; the rate changes in the optimizer's variable, traced steps included."""

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 verbose: int = 0, mode: str = "auto", min_delta: float = 1e-4,
                 cooldown: int = 0, min_lr: float = 0.0) -> None:  # fmt: skip
        super().__init__()
        if not factor < 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1, got {factor}")
        better = _improved(mode, monitor)
        sign = 1.0 if better(1.0, 0.0) else -1.0  # as EarlyStopping's min_delta
        self.improved = lambda new, best: better(new - sign * abs(min_delta), best)
        self.monitor, self.factor, self.patience, self.verbose = monitor, factor, patience, verbose
        self.cooldown, self.min_lr = cooldown, min_lr
        self.best: float | None = None
        self.wait = self.cooldown_counter = 0

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self.best, self.wait, self.cooldown_counter = None, 0, 0

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        logs = logs if logs is not None else {}
        optimizer = _optimizer("ReduceLROnPlateau", self)
        logs["learning_rate"] = current_rate(optimizer)
        value = _monitored("ReduceLROnPlateau", self.monitor, logs)
        if value is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        if self.best is None or self.improved(value, self.best):
            self.best, self.wait = value, 0
        elif self.cooldown_counter == 0:
            self.wait += 1
            if self.wait >= self.patience and self._reduce(optimizer, epoch):
                self.cooldown_counter, self.wait = self.cooldown, 0

    def _reduce(self, optimizer: Any, epoch: int) -> bool:
        """Lower the rate, unless it is at ``min_lr`` already (compared in float32, as the
        variable holds it); whether it did."""
        old = current_rate(optimizer)
        if not old > np.float32(self.min_lr):
            return False
        optimizer.learning_rate = max(old * self.factor, self.min_lr)
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing learning rate to "
                  f"{max(old * self.factor, self.min_lr)}.")  # fmt: skip
        return True


class CSVLogger(Callback):
    """Write each epoch's logs as a row of a CSV file (``epoch`` first, from 0, then the
    logs' names in sorted order). ``append`` keeps the rows of a previous run. The file is
    rewritten atomically after every epoch, so a reader never sees half a row."""

    def __init__(self, filename: str | os.PathLike[str], separator: str = ",",
                 append: bool = False) -> None:  # fmt: skip
        super().__init__()
        self.filename, self.separator, self.append = Path(filename), separator, append
        self.text, self.keys = "", list[str]()

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self.keys = []
        old = self.filename.read_text(encoding="utf-8") if self.append and \
            self.filename.exists() else ""  # fmt: skip
        self.text = old
        if old:  # continue its columns
            self.keys = next(csv.reader(io.StringIO(old), delimiter=self.separator))[1:]

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        logs = logs or {}
        row = io.StringIO()
        writer = csv.writer(row, delimiter=self.separator, lineterminator="\n")
        if not self.keys:
            self.keys = sorted(logs)
            writer.writerow(["epoch", *self.keys])
        writer.writerow([epoch, *(logs.get(key, "NA") for key in self.keys)])
        self.text += row.getvalue()
        with atomic_write(self.filename) as file:
            file.write(self.text)


__all__ = [
    "CSVLogger",
    "EarlyStopping",
    "LearningRateScheduler",
    "ModelCheckpoint",
    "ReduceLROnPlateau",
    "current_rate",
]
