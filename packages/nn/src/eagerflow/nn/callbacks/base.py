"""``Callback``, ``CallbackList`` and ``History``: Keras' hooks into ``fit``.

``fit`` calls each callback's hooks at fixed points, in the order Keras documents (and
``tests/nn/fixtures/keras_callback_order.json`` records from a real Keras ``fit``)::

    on_train_begin
      on_epoch_begin(epoch)                  epoch counts from 0
        on_train_batch_begin(batch)          batch counts from 0 in each epoch
        on_train_batch_end(batch, logs)      logs: the epoch's running averages so far
        ...
        on_test_begin                        only with validation_data
          on_test_batch_begin / _end(batch, logs)
        on_test_end(logs)                    logs: "loss", ... on the validation data
      on_epoch_end(epoch, logs)              logs: "loss", ..., "val_loss", ...
    on_train_end(logs)                       logs: the last epoch's

A callback reads the model through ``self.model`` and ``fit``'s settings through
``self.params``; it stops training by setting ``self.model.stop_training = True``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Logs = dict[str, float]


class Callback:
    """The base class: every hook does nothing; a subclass overrides the ones it needs."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict[str, Any] = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict[str, Any]) -> None:
        """``fit``'s settings: ``{"epochs": ..., "steps": ..., "verbose": ...}``."""
        self.params = params

    def on_train_begin(self, logs: Logs | None = None) -> None: ...
    def on_train_end(self, logs: Logs | None = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None: ...
    def on_train_batch_begin(self, batch: int, logs: Logs | None = None) -> None: ...
    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None: ...
    def on_test_begin(self, logs: Logs | None = None) -> None: ...
    def on_test_end(self, logs: Logs | None = None) -> None: ...
    def on_test_batch_begin(self, batch: int, logs: Logs | None = None) -> None: ...
    def on_test_batch_end(self, batch: int, logs: Logs | None = None) -> None: ...


class History(Callback):
    """What ``fit`` measured, returned by it (and kept as ``model.history``):
    ``history.history["loss"]`` holds one value per epoch, ``history.epoch`` the epoch
    numbers. eagerflow adds two shortcuts: ``history["loss"]`` and ``history.epochs``, the
    logs of each epoch as one dict."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list[float]] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        self.epoch.append(epoch)
        for name, value in (logs or {}).items():
            self.history.setdefault(name, []).append(value)
        if self.model is not None:
            self.model.history = self

    def __getitem__(self, name: str) -> list[float]:
        """One value per epoch: ``history["loss"]`` is ``history.history["loss"]``."""
        return self.history[name]

    @property
    def epochs(self) -> list[Logs]:
        """Each epoch's logs as one dict: ``history.epochs[0]["loss"]``."""
        return [{name: values[i] for name, values in self.history.items() if i < len(values)}
                for i in range(len(self.epoch))]  # fmt: skip


class CallbackList(Callback):
    """Many callbacks called as one, in the order given; ``fit`` adds a ``History`` (and a
    progress bar when ``verbose``) as Keras does, unless the list has one already."""

    def __init__(self, callbacks: Iterable[Callback] = (), model: Any = None,
                 **params: Any) -> None:  # fmt: skip
        super().__init__()
        self.callbacks = list(callbacks)
        for callback in self.callbacks:
            if not isinstance(callback, Callback):
                raise TypeError(f"fit: callbacks must be nn.callbacks.Callback objects, got "
                                f"{type(callback).__name__}")  # fmt: skip
        if model is not None:
            self.set_model(model)
        if params:
            self.set_params(params)

    def append(self, callback: Callback) -> None:
        self.callbacks.append(callback)

    def set_model(self, model: Any) -> None:
        super().set_model(model)
        for callback in self.callbacks:
            callback.set_model(model)

    def set_params(self, params: dict[str, Any]) -> None:
        super().set_params(params)
        for callback in self.callbacks:
            callback.set_params(params)

    def _call(self, hook: str, *args: Any) -> None:
        # one dict for all, as in Keras: a callback may add to it (LearningRateScheduler adds
        # "learning_rate"), and the callbacks after it, History last, see the addition
        logs = {} if args[-1] is None else args[-1]
        for callback in self.callbacks:
            getattr(callback, hook)(*args[:-1], logs)

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self._call("on_train_begin", logs)

    def on_train_end(self, logs: Logs | None = None) -> None:
        self._call("on_train_end", logs)

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        self._call("on_epoch_end", epoch, logs)

    def on_train_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        self._call("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        self._call("on_train_batch_end", batch, logs)

    def on_test_begin(self, logs: Logs | None = None) -> None:
        self._call("on_test_begin", logs)

    def on_test_end(self, logs: Logs | None = None) -> None:
        self._call("on_test_end", logs)

    def on_test_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        self._call("on_test_batch_begin", batch, logs)

    def on_test_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        self._call("on_test_batch_end", batch, logs)


__all__ = ["Callback", "CallbackList", "History", "Logs"]
