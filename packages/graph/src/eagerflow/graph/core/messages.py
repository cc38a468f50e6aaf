"""``MessageRendezvous``: a ``Rendezvous`` over point-to-point messages between tasks.

A transport such as MPI moves arrays between numbered tasks, matched by a *tag* (an int), and
must know the size of an array before it receives it. This class turns the keys of ``_Send``
and ``_Recv`` into that: the key names the two tasks (``RendezvousKey``), its tag is a stable
hash of the key below ``max_tag``, and each value travels as two messages, a header (a hash
of the key, the rank and the sizes) and then the array, so a ``_Recv`` whose shape is only
known when it runs can still allocate its buffer. Messages between two tasks with one tag
arrive in the order they were sent (MPI's non-overtaking rule). Two keys whose tags collide
would be told apart by the header's hash: the receive is refused, naming both keys' hash.

The communicator is any object with ``send(array, dest, tag) -> request`` (a request has
``wait()``) that returns at once, and ``recv(source, tag, *, shape, dtype) -> array`` that
waits: ``eagerflow.distribute``'s ``Communicator`` has both.
"""

from __future__ import annotations

import zlib
from typing import Any, Protocol

import numpy as np

from eagerflow.graph.core.send_recv import RendezvousKey
from eagerflow.tensor.errors import FailedPreconditionError

MAX_RANK = 32  # the most dimensions a header describes


class Request(Protocol):
    def wait(self) -> Any: ...


class PointToPoint(Protocol):
    """What ``MessageRendezvous`` needs of a communicator."""

    def send(self, array: np.ndarray, dest: int, tag: int = 0) -> Request: ...

    def recv(self, source: int, tag: int = 0, *, shape: Any = None, dtype: Any = None) -> Any: ...


def _key_hash(key: str) -> int:
    return zlib.crc32(key.encode("utf8"))


class MessageRendezvous:
    """The ``Rendezvous`` of a task that talks to the others through ``communicator``
    (``max_tag``: the largest tag it accepts; MPI promises at least 32767)."""

    def __init__(self, communicator: PointToPoint, max_tag: int = 32767) -> None:
        self.communicator = communicator
        self.max_tag = max_tag
        self._in_flight: list[tuple[Request, np.ndarray]] = []  # kept alive until wait()

    def tag(self, key: str) -> int:
        """The tag of ``key``'s messages: the same in every process."""
        return _key_hash(key) % (self.max_tag + 1)

    def send(self, key: str, value: np.ndarray) -> None:
        """Start sending the header and ``value`` to the task that receives ``key``."""
        array = np.asarray(value)  # (not ascontiguousarray, which makes a scalar 1-d)
        array = array if array.flags.c_contiguous else array.copy(order="C")
        if array.ndim > MAX_RANK:
            raise FailedPreconditionError(f"_Send {key!r}: more than {MAX_RANK} dimensions")
        header = np.zeros(MAX_RANK + 2, np.int64)
        header[0], header[1] = _key_hash(key), array.ndim
        header[2 : 2 + array.ndim] = array.shape
        dest, tag = RendezvousKey.parse(key).recv_task, self.tag(key)
        for message in (header, array):
            self._in_flight.append((self.communicator.send(message, dest, tag), message))

    def recv(
        self, key: str, *, dtype: np.dtype[Any], shape: tuple[int | None, ...] | None
    ) -> np.ndarray:
        """The value sent under ``key``: its header, then the array of the size it gives."""
        source, tag = RendezvousKey.parse(key).send_task, self.tag(key)
        header = self.communicator.recv(source, tag, shape=(MAX_RANK + 2,), dtype=np.int64)
        if int(header[0]) != _key_hash(key):
            raise FailedPreconditionError(
                f"_Recv {key!r}: a message of another key (hash {int(header[0])}) came with its "
                f"tag {tag}; give MessageRendezvous a larger max_tag"
            )
        sizes = tuple(int(n) for n in header[2 : 2 + int(header[1])])
        return np.asarray(self.communicator.recv(source, tag, shape=sizes, dtype=dtype))

    def wait(self) -> None:
        """Wait for every send of the step to be handed over."""
        in_flight, self._in_flight = self._in_flight, []
        for request, _ in in_flight:
            request.wait()


__all__ = ["MAX_RANK", "MessageRendezvous", "PointToPoint"]
