"""The callbacks that watch a number and act on it, with Keras' names and arguments:
``EarlyStopping``, ``ModelCheckpoint``, ``LearningRateScheduler`` and ``CSVLogger``."""

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


class LearningRateScheduler(Callback):
    """Set the optimizer's learning rate at the start of each epoch to
    ``schedule(epoch, learning_rate)`` (the epoch counts from 0); the rate of each epoch is
    added to its logs as ``learning_rate``."""

    def __init__(self, schedule: Callable[[int, float], float], verbose: int = 0) -> None:
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def _optimizer(self) -> Any:
        optimizer = self.params.get("optimizer")
        if optimizer is None:
            raise ValueError("LearningRateScheduler: fit gave no optimizer to schedule")
        return optimizer

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        optimizer = self._optimizer()
        value = self.schedule(epoch, optimizer.learning_rate)
        optimizer.learning_rate = hyperparameter(
            "LearningRateScheduler", "the schedule's learning_rate", value, "> 0")  # fmt: skip
        if self.verbose:
            print(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning rate to "
                  f"{optimizer.learning_rate}.")  # fmt: skip

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        if logs is not None:
            logs["learning_rate"] = float(self._optimizer().learning_rate)


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


__all__ = ["CSVLogger", "EarlyStopping", "LearningRateScheduler", "ModelCheckpoint"]
