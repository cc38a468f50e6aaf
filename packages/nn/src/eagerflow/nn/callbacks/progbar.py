"""The progress bar ``fit`` prints, as Keras' ``Progbar`` and ``ProgbarLogger`` draw it.

``verbose=1`` draws a bar per epoch, redrawn in place on a terminal (with ``\\r``), and
finished with the epoch's time, time per step and averages::

    Epoch 1/5
    32/32 [==============================] - 0s 2ms/step - loss: 0.2380 - val_loss: 0.1945

while it runs, the bar has an arrow head and an estimate of the time left
(``12/32 [===========>..................] - ETA: 1s - loss: 0.4121``). ``verbose=2`` prints
only the finished line, without the bar (``32/32 - 0s 2ms/step - loss: 0.2380``), and
``verbose=0`` nothing. When the output is not a terminal (a file, a notebook's captured
output), the bar is printed once per epoch, when it is finished, plus a line every
``PROGRESS_EVERY`` seconds so that a long epoch is never silent.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Protocol

from eagerflow.nn.callbacks.base import Callback, Logs


class Stream(Protocol):
    """Where the bar goes: ``sys.stdout``, a file, or a ``LineStream``."""

    def write(self, text: str, /) -> int: ...
    def flush(self) -> None: ...
    def isatty(self) -> bool: ...


PROGRESS_EVERY = 5.0  # seconds between lines of a long epoch when the bar cannot redraw


def format_eta(seconds: float) -> str:
    """The time left as Keras shows it: ``7s``, ``2:05``, ``1:02:05``."""
    if seconds > 3600:
        return f"{seconds // 3600:.0f}:{seconds % 3600 // 60:02.0f}:{seconds % 60:02.0f}"
    if seconds > 60:
        return f"{seconds // 60:.0f}:{seconds % 60:02.0f}"
    return f"{seconds:.0f}s"


def format_per_step(seconds: float, unit: str = "step") -> str:
    """The time one step took, in the largest unit that shows it: ``2s``, ``2ms``, ``2us``."""
    if seconds >= 1:
        return f"{seconds:.0f}s/{unit}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit}"
    return f"{seconds * 1e6:.0f}us/{unit}"


def format_values(values: Logs) -> str:
    """`` - loss: 0.2380``: four decimals, or scientific notation for tiny numbers."""
    return "".join(f" - {name}: {value:.4f}" if abs(value) > 1e-3 else
                   f" - {name}: {value:.4e}" for name, value in values.items())  # fmt: skip


def format_bar(current: int, target: int, width: int = 30) -> str:
    """``12/32 [===========>..................]``: ``=`` for the steps done, ``>`` the head."""
    count = f"{current:{len(str(target))}d}/{target}"
    done = int(width * current / target)
    head = "" if done == 0 else "=" * (done - 1) + (">" if current < target else "=")
    return f"{count} [{head}{'.' * (width - done)}]"


class Progbar:
    """One epoch's bar: ``update(current, values)`` after each step, ``finalize=True`` at
    the end. ``target`` is the number of steps (None while unknown: ``7/Unknown``)."""

    def __init__(self, target: int | None, *, verbose: int = 1, width: int = 30,
                 stream: Stream | None = None, clock: Callable[[], float] = time.perf_counter,
                 interval: float = 0.05) -> None:  # fmt: skip
        self.target, self.verbose, self.width = target, verbose, width
        self.stream, self.clock, self.interval = stream, clock, interval
        self.started = self.last_update = clock()
        self.shown = 0  # the width of the line drawn last, to blank its rest on a redraw

    def _out(self) -> Stream:
        return self.stream if self.stream is not None else sys.stdout

    def _dynamic(self) -> bool:
        isatty = getattr(self._out(), "isatty", None)
        return bool(isatty and isatty())

    def update(self, current: int, values: Logs, finalize: bool = False) -> None:
        now = self.clock()
        if self.verbose == 0 or (self.verbose == 2 and not finalize):
            return
        every = self.interval if self._dynamic() else PROGRESS_EVERY
        if not finalize and now - self.last_update < every:
            return
        self.last_update = now
        line = self.line(current, values, now, finalize)
        if self._dynamic():
            self._out().write("\r" + line.ljust(self.shown) + ("\n" if finalize else ""))
            self.shown = len(line)
        else:
            self._out().write(line + "\n")
        self._out().flush()

    def line(self, current: int, values: Logs, now: float, finalize: bool) -> str:
        """The text of the bar after ``current`` steps at time ``now``."""
        elapsed = now - self.started
        per_step = elapsed / max(current, 1)
        if self.target is None:
            count = f"{current:7d}/Unknown"
        elif self.verbose == 2:
            count = f"{current:{len(str(self.target))}d}/{self.target}"
        else:
            count = format_bar(current, self.target, self.width)
        if finalize or self.target is None:
            timing = f" - {elapsed:.0f}s {format_per_step(per_step)}"
        else:
            timing = f" - ETA: {format_eta(per_step * (self.target - current))}"
        return count + timing + format_values(values)


class ProgbarLogger(Callback):
    """The callback that prints ``fit``'s progress (``fit`` adds it when ``verbose`` is 1
    or 2): ``Epoch 3/5`` when an epoch begins (if there are several), then its bar."""

    def __init__(self, stream: Stream | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:  # fmt: skip
        super().__init__()
        self.stream, self.clock = stream, clock
        self.progbar: Progbar | None = None
        self.seen = 0
        self.steps: int | None = None

    def set_params(self, params: dict[str, Any]) -> None:
        super().set_params(params)
        self.steps = params.get("steps")

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        verbose, epochs = self.params.get("verbose", 1), self.params.get("epochs", 1)
        if verbose and epochs > 1:
            (self.stream or sys.stdout).write(f"Epoch {epoch + 1}/{epochs}\n")
        self.seen = 0
        self.progbar = Progbar(self.steps, verbose=verbose, stream=self.stream,
                               clock=self.clock)  # fmt: skip

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        self.seen = batch + 1
        if self.progbar is not None:
            self.progbar.update(self.seen, logs or {})

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        if self.progbar is not None:
            self.progbar.target = self.steps = self.seen  # a Dataset's steps are known now
            self.progbar.update(self.seen, logs or {}, finalize=True)


class LineStream:
    """A stream that hands each finished line to ``print_fn`` (``fit(print_fn=...)``); it
    is not a terminal, so bars are printed finished rather than redrawn."""

    def __init__(self, print_fn: Callable[[str], None]) -> None:
        self.print_fn, self.pending = print_fn, ""

    def write(self, text: str) -> int:
        *lines, self.pending = (self.pending + text).split("\n")
        for line in lines:
            self.print_fn(line)
        return len(text)

    def flush(self) -> None: ...

    def isatty(self) -> bool:
        return False


__all__ = ["PROGRESS_EVERY", "LineStream", "Progbar", "ProgbarLogger", "Stream", "format_bar",
           "format_eta", "format_per_step", "format_values"]  # fmt: skip
