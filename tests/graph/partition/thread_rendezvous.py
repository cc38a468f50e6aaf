"""A ``Rendezvous`` for tests: the tasks of a job are threads of this process.

Each key has a queue: ``send`` puts the value and returns, ``recv`` takes the oldest value
(waiting at most ``timeout`` seconds, so a test whose send never comes fails, never hangs).
Never offered to users: a real job's tasks are processes (``eagerflow.distribute``).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from eagerflow.graph import Graph, Job, Session


class ThreadRendezvous:
    """One per job, shared by its threads."""

    def __init__(self, timeout: float = 5.0) -> None:
        self.timeout = timeout
        self.lock = threading.Lock()
        self.queues: dict[str, queue.SimpleQueue[np.ndarray]] = {}
        self.sent: list[str] = []  # every key sent, in order (tests look at the traffic)

    def _queue(self, key: str) -> queue.SimpleQueue[np.ndarray]:
        with self.lock:
            return self.queues.setdefault(key, queue.SimpleQueue())

    def send(self, key: str, value: np.ndarray) -> None:
        self.sent.append(key)
        self._queue(key).put(np.array(value))  # a copy: the sender may reuse its buffer

    def recv(self, key: str, *, dtype: np.dtype[Any], shape: Any) -> np.ndarray:
        # (a queue needs no buffer made ahead: dtype and shape are the _Recv's to check)
        try:
            return self._queue(key).get(timeout=self.timeout)
        except queue.Empty:
            raise TimeoutError(f"nothing was sent under {key!r}") from None

    def wait(self) -> None:
        """Sends complete at once here."""

    def pending(self) -> dict[str, int]:
        """The keys with values sent and never received (none after a well-matched step)."""
        return {k: q.qsize() for k, q in self.queues.items() if q.qsize()}


def run_job(
    graph: Graph,
    step: Callable[[Session], Any],
    num_tasks: int = 2,
    timeout: float = 10.0,
    jit_compile: bool = False,
) -> tuple[list[Any], ThreadRendezvous]:
    """``step(session)`` in ``num_tasks`` threads, each with a Session of ``graph`` as task
    ``i`` of one job; every thread's result (an error raised in one is raised here)."""
    rendezvous = ThreadRendezvous()
    results: list[Any] = [None] * num_tasks
    errors: list[BaseException] = []

    def task(i: int) -> None:
        try:
            with Session(graph, jit_compile, Job(i, num_tasks, rendezvous)) as session:
                results[i] = step(session)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=task, args=(i,), daemon=True) for i in range(num_tasks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    if any(t.is_alive() for t in threads):
        raise TimeoutError("a task of the job did not finish")
    if errors:
        raise errors[0]
    return results, rendezvous
