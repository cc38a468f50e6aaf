"""The communicator: everything eagerflow asks of the processes it runs on, in one interface.

A job is ``size`` processes (*tasks*, TensorFlow's ``/job:worker/task:i``), each knowing its
``rank`` (= its task id). They exchange NumPy arrays: every task adds its array into everyone's
(``all_reduce``), one task's array is copied to all (``broadcast``), or one task sends an array
to another (``send``/``recv``). Everything above this module talks only to ``Communicator``, so
another engine (Ray, a test's threads) could stand in for MPI.

``MPICommunicator`` is the one engine shipped: MPI through ``mpi4py`` (the ``[mpi]`` extra),
over ``MPI.COMM_WORLD``. It uses mpi4py's buffer methods (``Allreduce``, ``Bcast``,
``Isend``/``Recv``), which move the arrays' bytes without pickling them. Sends are
non-blocking (``Isend``): two tasks that both send first, then receive, would deadlock with
blocking sends once the arrays outgrow MPI's eager buffers.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

OPS = ("sum", "max", "min")  # the reductions all_reduce offers


class Request(Protocol):
    """A send in flight: ``wait()`` returns once the array has been handed over."""

    def wait(self) -> None: ...


class Communicator(Protocol):
    """What a task can do with the others. Every task of a job must call the collective
    methods (``all_reduce``, ``broadcast``, ``barrier``) in the same order, with arrays of
    one shape and dtype: that is how the tasks know which calls belong together."""

    @property
    def rank(self) -> int:
        """This task's number, 0 to ``size - 1``."""
        ...

    @property
    def size(self) -> int:
        """The number of tasks in the job."""
        ...

    def all_reduce(self, array: np.ndarray, op: str = "sum") -> np.ndarray:
        """Every task's ``array`` combined by ``op`` (``"sum"``, ``"max"``, ``"min"``), the
        same result on every task, written into ``array`` (which is returned) when it is a
        writable C-contiguous array, else into a new one."""
        ...

    def broadcast(self, array: np.ndarray, root: int = 0) -> np.ndarray:
        """Task ``root``'s ``array`` on every task: written into ``array`` as above."""
        ...

    def send(self, array: np.ndarray, dest: int, tag: int = 0) -> Request:
        """Start sending ``array`` to task ``dest``; do not change ``array`` until the
        returned request's ``wait()`` returns."""
        ...

    def recv(
        self,
        source: int,
        tag: int = 0,
        *,
        into: np.ndarray | None = None,
        shape: tuple[int, ...] | None = None,
        dtype: Any = None,
    ) -> np.ndarray:
        """The array task ``source`` sent with ``tag``, received into ``into`` or into a new
        array of ``shape`` and ``dtype`` (one of the two must be given)."""
        ...

    def barrier(self) -> None:
        """Return once every task has called it."""
        ...


def check_op(op: str) -> str:
    """``op`` if it is a reduction all_reduce offers; else a ValueError naming them."""
    if op not in OPS:
        raise ValueError(f"all_reduce: op must be one of {', '.join(OPS)}, got {op!r}")
    return op


def writable(array: Any) -> np.ndarray:
    """``array`` itself when MPI can write into it (a writable C-contiguous ndarray), else a
    C-contiguous copy."""
    if isinstance(array, np.ndarray) and array.flags.c_contiguous and array.flags.writeable:
        return array
    return np.array(array, order="C", copy=True)


def receive_buffer(into: np.ndarray | None, shape: Any, dtype: Any) -> np.ndarray:
    """Where ``recv`` puts what arrives: ``into``, or a new array of ``shape`` and ``dtype``."""
    if into is not None:
        if not (into.flags.c_contiguous and into.flags.writeable):
            raise ValueError("recv: `into` must be a writable C-contiguous array")
        return into
    if shape is None or dtype is None:
        raise TypeError("recv: give `into`, or both `shape` and `dtype` of the array expected")
    return np.empty(shape, dtype)


class MPICommunicator:
    """The ``Communicator`` of an MPI job (``MPI.COMM_WORLD`` by default): start the job with
    ``python -m eagerflow.distribute.run -n 2 script.py``. Needs the ``[mpi]`` extra."""

    def __init__(self, comm: Any = None) -> None:
        mpi = import_mpi()
        self._mpi = mpi
        self._comm = mpi.COMM_WORLD if comm is None else comm
        self._ops = {"sum": mpi.SUM, "max": mpi.MAX, "min": mpi.MIN}

    @property
    def rank(self) -> int:
        return int(self._comm.Get_rank())

    @property
    def size(self) -> int:
        return int(self._comm.Get_size())

    def all_reduce(self, array: np.ndarray, op: str = "sum") -> np.ndarray:
        buffer = writable(array)
        self._comm.Allreduce(self._mpi.IN_PLACE, buffer, op=self._ops[check_op(op)])
        return buffer

    def broadcast(self, array: np.ndarray, root: int = 0) -> np.ndarray:
        buffer = writable(array)
        self._comm.Bcast(buffer, root=root)
        return buffer

    def send(self, array: np.ndarray, dest: int, tag: int = 0) -> Request:
        request: Request = self._comm.Isend(np.ascontiguousarray(array), dest=dest, tag=tag)
        return request

    def recv(
        self,
        source: int,
        tag: int = 0,
        *,
        into: np.ndarray | None = None,
        shape: tuple[int, ...] | None = None,
        dtype: Any = None,
    ) -> np.ndarray:
        buffer = receive_buffer(into, shape, dtype)
        self._comm.Recv(buffer, source=source, tag=tag)
        return buffer

    def barrier(self) -> None:
        self._comm.Barrier()

    @property
    def max_tag(self) -> int:
        """The largest tag this MPI accepts (``MPI_TAG_UB``, at least 32767)."""
        return int(self._comm.Get_attr(self._mpi.TAG_UB))


def import_mpi() -> Any:
    """mpi4py's ``MPI`` module, or an ImportError saying which extra brings it."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise ImportError(
            "eagerflow.distribute needs MPI for this: pip install 'eagerflow-distribute[mpi]' "
            f"(mpi4py and the mpich wheel); importing mpi4py failed: {error}"
        ) from error
    return MPI


__all__ = [
    "OPS",
    "Communicator",
    "MPICommunicator",
    "Request",
    "check_op",
    "import_mpi",
    "receive_buffer",
    "writable",
]
