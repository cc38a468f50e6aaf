"""``MessageRendezvous``: _Send/_Recv over a communicator's tagged point-to-point messages
(here a stand-in whose tasks are threads; ``eagerflow.distribute``'s is MPI)."""

from __future__ import annotations

import queue
import threading
from typing import Any

import numpy as np
import pytest
from partition_graphs import Mlp

from eagerflow.graph import Job, MessageRendezvous, Session
from eagerflow.tensor.errors import FailedPreconditionError
from eagerflow.tensor.nest import flatten


class _Done:
    def wait(self) -> None:
        pass


class Mailboxes:
    """One queue per (source, dest, tag): MPI's matching, in order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.boxes: dict[tuple[int, int, int], queue.SimpleQueue[np.ndarray]] = {}

    def box(self, source: int, dest: int, tag: int) -> queue.SimpleQueue[np.ndarray]:
        with self.lock:
            return self.boxes.setdefault((source, dest, tag), queue.SimpleQueue())


class FakeCommunicator:
    """Task ``rank``'s end: ``send`` returns at once, ``recv`` checks what MPI would."""

    def __init__(self, rank: int, mailboxes: Mailboxes) -> None:
        self.rank, self.mailboxes = rank, mailboxes

    def send(self, array: np.ndarray, dest: int, tag: int = 0) -> _Done:
        self.mailboxes.box(self.rank, dest, tag).put(array.copy())
        return _Done()

    def recv(self, source: int, tag: int = 0, *, shape: Any = None, dtype: Any = None) -> Any:
        array = self.mailboxes.box(source, self.rank, tag).get(timeout=5)
        assert array.shape == tuple(shape) and array.dtype == dtype  # MPI would truncate
        return array


def test_an_mlp_split_over_messages_gives_the_unsplit_results(mlp: Mlp) -> None:
    with Session(mlp.graph) as session:
        session.run(mlp.init)
        expected = flatten(session.run(mlp.fetches, mlp.feeds))
    mailboxes = Mailboxes()
    results: list[Any] = [None, None]

    def task(i: int) -> None:
        rendezvous = MessageRendezvous(FakeCommunicator(i, mailboxes), max_tag=2**20)
        with Session(mlp.graph, job=Job(i, 2, rendezvous)) as session:
            session.run(mlp.init)
            results[i] = flatten(session.run(mlp.fetches, mlp.feeds))

    threads = [threading.Thread(target=task, args=(i,), daemon=True) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    for got in results:
        assert got is not None
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-6)
    assert all(box.empty() for box in mailboxes.boxes.values())


def test_a_tag_collision_is_a_clear_error_not_a_wrong_value() -> None:
    mailboxes = Mailboxes()
    sender = MessageRendezvous(FakeCommunicator(0, mailboxes), max_tag=0)  # every tag is 0
    receiver = MessageRendezvous(FakeCommunicator(1, mailboxes), max_tag=0)
    first = "/job:worker/task:0;0;/job:worker/task:1;a:0;0:0"
    second = "/job:worker/task:0;0;/job:worker/task:1;b:0;0:0"
    sender.send(first, np.zeros((2, 3), np.float32))
    sender.send(second, np.ones(4, np.float64))
    sender.wait()
    with pytest.raises(FailedPreconditionError, match=r"a message of another key .* tag 0"):
        receiver.recv(second, dtype=np.dtype(np.float64), shape=(4,))
