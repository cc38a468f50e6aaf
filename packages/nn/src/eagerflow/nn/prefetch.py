"""``PrefetchIterator``: one pass over a prefetched dataset, made by a background thread
(``Dataset.prefetch``), so the next batch is being made while the model trains on this one."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

_POLL = 0.05  # seconds a prefetch thread waits on a full queue before it looks for a stop


class PrefetchIterator:
    """One pass over a prefetched dataset: a thread runs the pipeline into a queue of
    ``buffer_size`` elements, and ``next()`` takes from the queue.

    Lifetime: the thread ends by itself at the end of the input or at an error (which
    ``next()`` raises again, in the consumer). ``close()``, or dropping the iterator
    (``break`` out of a ``for``; the garbage collector calls ``__del__``), sets a stop event:
    the thread sees it within ``_POLL`` seconds of waiting on a full queue, or after the
    element it is making, and ends. It is a daemon thread, so it never keeps Python from
    exiting. The thread is handed the queue, the event and the input, never this object,
    so a dropped iterator really is garbage: nothing in the thread refers to it.
    """

    def __init__(self, elements: Iterator[Any], buffer_size: int) -> None:
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=buffer_size)
        self._stop = threading.Event()
        self._finished = False
        self._thread = threading.Thread(
            target=_produce, args=(elements, self._queue, self._stop),
            name="eagerflow-prefetch", daemon=True,
        )  # fmt: skip
        self._thread.start()

    def __iter__(self) -> PrefetchIterator:
        return self

    def __next__(self) -> Any:
        if self._finished:
            raise StopIteration
        kind, value = self._queue.get()
        if kind == "element":
            return value
        self._finished = True
        self._thread.join()  # it has just put its last message: this returns at once
        if kind == "error":
            raise value
        raise StopIteration

    def close(self) -> None:
        """Stop the thread and wait until it has ended (after the element it is making)."""
        self._finished = True
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()

    def __del__(self) -> None:
        # Only signal: the garbage collector may run this anywhere, and must not wait on a
        # thread that is in the middle of a slow map function.
        stop = getattr(self, "_stop", None)  # (absent if __init__ failed)
        if stop is not None:
            stop.set()


def _produce(
    elements: Iterator[Any], out: queue.Queue[tuple[str, Any]], stop: threading.Event
) -> None:
    """The prefetch thread: the input's elements into ``out``, then ("end", None), or
    ("error", the exception) if making one raised."""
    try:
        for element in elements:
            if not _put(out, stop, ("element", element)):
                return
        _put(out, stop, ("end", None))
    except BaseException as e:  # whatever it is: left uncaught, a thread's error is only printed
        _put(out, stop, ("error", e))
    finally:
        close = getattr(elements, "close", None)
        if close is not None:  # a generator: run its cleanup now (a nested prefetch stops)
            close()


def _put(out: queue.Queue[tuple[str, Any]], stop: threading.Event, item: tuple[str, Any]) -> bool:
    """Put ``item`` when there is room; False if told to stop first."""
    while not stop.is_set():
        try:
            out.put(item, timeout=_POLL)
            return True
        except queue.Full:
            continue
    return False


__all__ = ["PrefetchIterator"]
