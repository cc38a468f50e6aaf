"""``create_file_writer``: a summary writer, the default one, and the step.

A writer owns one event file (TensorBoard's ``EventFileWriter`` writes it). Summaries go to
the *default* writer, the one whose ``as_default()`` block is open, at the *step* passed or
set by ``set_step``, as in TensorFlow. Both are per thread (a ``ContextVar``), like
TensorFlow's. With no default writer a summary writes nothing and returns ``False``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import time
import weakref
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from eagerflow.graph.export.summary.records import proto_module

_default_writer: ContextVar[SummaryWriter | None] = ContextVar("summary_writer", default=None)
_step: ContextVar[Any] = ContextVar("summary_step", default=None)
# the open writers by name: a summary op names its writer (as TensorFlow's names a resource),
# so a graph holding one is plain data; closing a writer takes it out
OPEN_WRITERS: weakref.WeakValueDictionary[str, SummaryWriter] = weakref.WeakValueDictionary()
_numbers = itertools.count(1)


class SummaryWriter:
    """Writes ``Event`` protos to one event file in ``logdir`` (made if missing)."""

    def __init__(self, logdir: str | os.PathLike[str], max_queue: int = 10,
                 flush_millis: int = 120_000, filename_suffix: str = ".v2") -> None:  # fmt: skip
        proto_module("event_pb2")  # a clear ImportError before anything is made
        from tensorboard.summary.writer.event_file_writer import EventFileWriter

        self.logdir = os.fspath(logdir)
        self._file = EventFileWriter(
            self.logdir, max_queue_size=max_queue, flush_secs=max(flush_millis / 1000, 1e-3),
            filename_suffix=filename_suffix,
        )  # fmt: skip
        self.closed = False
        self.name = f"{self.logdir}#{next(_numbers)}"
        OPEN_WRITERS[self.name] = self

    def write_event(self, **fields: Any) -> None:
        """Queue one ``Event`` (``step=``, ``summary=`` or ``graph_def=``), stamped now."""
        if self.closed:
            raise ValueError(f"this summary writer ({self.logdir}) is closed")
        self._file.add_event(proto_module("event_pb2").Event(wall_time=time.time(), **fields))

    @contextlib.contextmanager
    def as_default(self, step: Any = None) -> Iterator[SummaryWriter]:
        """Make this the default writer inside the block (and set the step, if given);
        flushes on leaving it, as TensorFlow's does."""
        token = _default_writer.set(self)
        step_token = _step.set(step) if step is not None else None
        try:
            yield self
        finally:
            _default_writer.reset(token)
            if step_token is not None:
                _step.reset(step_token)
            if not self.closed:
                self.flush()

    def set_as_default(self, step: Any = None) -> None:
        """Make this the default writer from now on (``as_default`` without the block)."""
        _default_writer.set(self)
        if step is not None:
            _step.set(step)

    def flush(self) -> None:
        """Write what is queued to the file now."""
        self._file.flush()

    def close(self) -> None:
        """Flush and close the file; writing to a closed writer is a ``ValueError``."""
        if not self.closed:
            self._file.close()
            self.closed = True
            OPEN_WRITERS.pop(self.name, None)

    def __repr__(self) -> str:
        return f"<SummaryWriter {self.logdir!r}{' closed' if self.closed else ''}>"


def create_file_writer(logdir: str | os.PathLike[str], max_queue: int = 10,
                       flush_millis: int = 120_000, filename_suffix: str = ".v2",
                       name: str | None = None) -> SummaryWriter:  # fmt: skip
    """A writer of a new event file in ``logdir`` (TensorFlow's ``tf.summary.create_file_writer``):
    events are queued and written every ``max_queue`` events, every ``flush_millis``
    milliseconds, on ``flush()`` and on ``close()``."""
    return SummaryWriter(logdir, max_queue, flush_millis, filename_suffix)


def default_writer() -> SummaryWriter | None:
    """The writer summaries go to now, or ``None``."""
    return _default_writer.get()


def get_step() -> Any:
    """The step summaries are written at when they are given none (``None`` if unset)."""
    return _step.get()


def set_step(step: Any) -> None:
    """Set the default step: an int, or a variable (read every time a summary runs)."""
    _step.set(step)


__all__ = [
    "OPEN_WRITERS",
    "SummaryWriter",
    "create_file_writer",
    "default_writer",
    "get_step",
    "set_step",
]
