"""``_Send`` and ``_Recv``: the two ops on either side of an edge that ``partition`` cuts.

A value made on one task and used on another leaves through a ``_Send`` in the producer's
part and arrives through a ``_Recv`` in the consumer's. The pair agrees on a *rendezvous key*,
TensorFlow's ``send_device;send_device_incarnation;recv_device;tensor_name;frame_iter``:

    /job:worker/replica:0/task:0/device:CPU:0;0000000000000000;/job:worker/replica:0/task:1/device:CPU:0;dense/MatMul:0;0:0

(eagerflow has no incarnations, a restarted process starts a new job, so the middle field
is always 0; ``tensor_name`` is the cut tensor's own name, TensorFlow's ``edge_N_name``).

The kernels talk through a ``Rendezvous``, which the running Session installs (see
``job.py``): ``send`` only starts the transfer and returns, ``recv`` waits for the value, and
the Session calls ``wait`` once at the end of the step. A send never blocks, so two tasks that
both send first cannot deadlock. Both ops are stateful (never folded, merged or dropped by a
plan) and have no gradient: ``gradients()`` of a placed graph runs before it is cut.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple, Protocol

import numpy as np

from eagerflow.autodiff.registry import not_differentiable
from eagerflow.graph.core.device import DeviceSpec
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import FailedPreconditionError, InvalidArgumentError, format_shape
from eagerflow.tensor.registry import Attrs, op
from eagerflow.tensor.rules import attr_dtype_rule, compatible
from eagerflow.tensor.schema import Bool, DTypeAttr, Instance, Int, Ints, Maybe


class Rendezvous(Protocol):
    """Where ``_Send`` leaves values and ``_Recv`` picks them up, by key (a string)."""

    def send(self, key: str, value: np.ndarray) -> None:
        """Start sending ``value`` under ``key``; return at once (never block)."""

    def recv(
        self, key: str, *, dtype: np.dtype[Any], shape: tuple[int | None, ...] | None
    ) -> np.ndarray:
        """The value sent under ``key``, waiting until it arrives. ``dtype`` and ``shape``
        (None sizes, or None: not known until it runs) are what the ``_Recv`` expects, for a
        transport that must allocate the buffer first (MPI's ``Recv``). A failure (a task
        that died, a timeout) is best an ``EagerflowError``, which comes out of
        ``Session.run`` as raised; any other comes out as the ``_Recv`` kernel's
        ``InvalidArgumentError`` naming it. Either way the error's note names the node."""

    def wait(self) -> None:
        """Block until every send started in this step has completed."""


class RendezvousKey(NamedTuple):
    """A parsed rendezvous key: which task sends, which receives, and what."""

    send_device: str
    recv_device: str
    tensor_name: str

    @property
    def send_task(self) -> int:
        return _task(self.send_device)

    @property
    def recv_task(self) -> int:
        return _task(self.recv_device)

    def __str__(self) -> str:
        return f"{self.send_device};{0:016x};{self.recv_device};{self.tensor_name};0:0"

    @classmethod
    def parse(cls, key: str) -> RendezvousKey:
        """The key ``str(key)`` wrote; a ``ValueError`` for anything else."""
        parts = key.split(";")
        if len(parts) != 5 or not parts[3]:
            raise ValueError(
                f"malformed rendezvous key {key!r}: expected "
                "'send_device;incarnation;recv_device;tensor_name;frame:iter'"
            )
        return cls(parts[0], parts[2], parts[3])


def _task(device: str) -> int:
    task = DeviceSpec.from_string(device).task
    if task is None:
        raise ValueError(f"the device {device!r} names no task")
    return task


def task_device(job: str, task: int) -> str:
    """The full device of a task's CPU, as keys name it: ``/job:worker/replica:0/task:1/
    device:CPU:0``."""
    return DeviceSpec(job, 0, task, "CPU", 0).to_string()


_current: ContextVar[Rendezvous | None] = ContextVar("eagerflow_rendezvous", default=None)


@contextmanager
def using_rendezvous(rendezvous: Rendezvous) -> Iterator[None]:
    """Inside the block (in this thread), ``_Send`` and ``_Recv`` use ``rendezvous``."""
    token = _current.set(rendezvous)
    try:
        yield
    finally:
        _current.reset(token)


def _rendezvous(what: str) -> Rendezvous:
    found = _current.get()
    if found is None:
        raise FailedPreconditionError(
            f"{what} runs in a partitioned graph only: run it with a Session in a job "
            "(Session(graph, job=Job(...)) or set_job)"
        )
    return found


KEY_ATTRS = {
    "tensor_name": Instance(str, "a tensor's name"),
    "send_device": Instance(str, "a device string"),
    "send_device_incarnation": Int(min=0),
    "recv_device": Instance(str, "a device string"),
    "client_terminated": Bool(),
}
RECV_ATTRS = {**KEY_ATTRS, "dtype": DTypeAttr(), "shape": Maybe(Ints(min=0, unknown=True))}


def key_of(attrs: Attrs) -> str:
    """The rendezvous key of a ``_Send`` or ``_Recv`` node's attributes."""
    return str(RendezvousKey(attrs["send_device"], attrs["recv_device"], attrs["tensor_name"]))


def _no_outputs(inputs: Sequence[Any], attrs: Attrs) -> list[Any]:
    return []


def _recv_shape(shapes: Sequence[Any], attrs: Attrs) -> list[Any]:
    return [attrs["shape"]]


@op("_Send", shape=_no_outputs, dtype=_no_outputs, attrs=KEY_ATTRS, multi_output=True,
    stateful=True)  # fmt: skip
def send_kernel(value: np.ndarray, **attrs: Any) -> tuple[()]:
    """Send ``value`` to the task ``recv_device`` under this edge's rendezvous key, without
    waiting for it to arrive (made by ``partition``, never by user code)."""
    _rendezvous("_Send").send(key_of(attrs), value)
    return ()


@op("_Recv", shape=_recv_shape, dtype=attr_dtype_rule, attrs=RECV_ATTRS, stateful=True)
def recv_kernel(**attrs: Any) -> np.ndarray:
    """The value the task ``send_device`` sent under this edge's key, waiting for it; it
    must have the ``dtype`` and ``shape`` of the tensor that was cut."""
    key = key_of(attrs)
    dtype: DType = attrs["dtype"]
    value = np.asarray(_rendezvous("_Recv").recv(key, dtype=dtype.np, shape=attrs["shape"]))
    if value.dtype != dtype.np or not compatible(attrs["shape"], value.shape):
        raise InvalidArgumentError(
            f"_Recv {attrs['tensor_name']!r}: expected {dtype.name} of shape "
            f"{format_shape(attrs['shape'])}, received {value.dtype} of shape "
            f"{format_shape(value.shape)} (key {key!r})"
        )
    return value


not_differentiable("_Send", "_Recv")

__all__ = [
    "KEY_ATTRS",
    "RECV_ATTRS",
    "Rendezvous",
    "RendezvousKey",
    "key_of",
    "recv_kernel",
    "send_kernel",
    "task_device",
    "using_rendezvous",
]
