"""A ``Communicator`` whose tasks are threads of this process: for unit tests only.

``ThreadGroup(n)`` makes the ``n`` communicators of a job; ``run_on_threads(n, fn)`` calls
``fn(communicator)`` on ``n`` threads and returns their results in rank order. A collective
call waits (at most ``TIMEOUT`` seconds: a test never hangs) until every task has made it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from eagerflow.distribute.communicator import check_op, receive_buffer, writable

TIMEOUT = 10.0
REDUCE = {"sum": np.add, "max": np.maximum, "min": np.minimum}


class _Done:
    def wait(self) -> None:
        return None


class ThreadGroup:
    """The shared state of one job of thread tasks."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.barrier = threading.Barrier(size, timeout=TIMEOUT)
        self.slots: list[Any] = [None] * size
        self.mailboxes: dict[tuple[int, int, int], queue.Queue] = {}
        self.lock = threading.Lock()

    def mailbox(self, source: int, dest: int, tag: int) -> queue.Queue:
        with self.lock:
            return self.mailboxes.setdefault((source, dest, tag), queue.Queue())

    def communicators(self) -> list[ThreadCommunicator]:
        return [ThreadCommunicator(self, rank) for rank in range(self.size)]


class ThreadCommunicator:
    """Task ``rank`` of a ``ThreadGroup``."""

    def __init__(self, group: ThreadGroup, rank: int) -> None:
        self.group, self._rank = group, rank

    @property
    def rank(self) -> int:
        return self._rank

    @property
    def size(self) -> int:
        return self.group.size

    def _gather(self, array: np.ndarray) -> list[np.ndarray]:
        self.group.slots[self._rank] = array.copy()
        self.group.barrier.wait()
        everyone = list(self.group.slots)
        self.group.barrier.wait()  # nobody overwrites a slot before all have read
        return everyone

    def all_reduce(self, array: np.ndarray, op: str = "sum") -> np.ndarray:
        buffer = writable(array)
        parts = self._gather(buffer)
        result = parts[0]
        for part in parts[1:]:
            result = REDUCE[check_op(op)](result, part)
        buffer[...] = result
        return buffer

    def broadcast(self, array: np.ndarray, root: int = 0) -> np.ndarray:
        buffer = writable(array)
        buffer[...] = self._gather(buffer)[root]
        return buffer

    def send(self, array: np.ndarray, dest: int, tag: int = 0) -> _Done:
        self.group.mailbox(self._rank, dest, tag).put(np.array(array, copy=True))
        return _Done()

    def recv(self, source: int, tag: int = 0, *, into=None, shape=None, dtype=None) -> np.ndarray:
        buffer = receive_buffer(into, shape, dtype)
        buffer[...] = self.group.mailbox(source, self._rank, tag).get(timeout=TIMEOUT)
        return buffer

    def barrier(self) -> None:
        self.group.barrier.wait()


def run_on_threads(size: int, fn: Callable[[ThreadCommunicator], Any]) -> list[Any]:
    """``fn(communicator)`` on ``size`` thread tasks; their results in rank order (a task's
    exception is raised here)."""
    results: list[Any] = [None] * size
    errors: list[BaseException] = []

    def task(communicator: ThreadCommunicator) -> None:
        try:
            results[communicator.rank] = fn(communicator)
        except BaseException as error:
            errors.append(error)
            communicator.group.barrier.abort()  # the others stop waiting for this one

    threads = [threading.Thread(target=task, args=(c,)) for c in ThreadGroup(size).communicators()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(TIMEOUT * 3)
    if errors:
        raise errors[0]
    return results
