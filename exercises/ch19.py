"""Chapter 19 exercises — run `.venv/bin/pytest -m ch19`.

Graphs across machines: the two ideas of distribution, each written by hand. The cut of a
placed graph (which tensors must travel from one task to another), and the all-reduce
data-parallel training averages gradients with: first packed into one buffer, as Horovod
does, then (a stretch) the ring algorithm itself, built on the communicator's send and recv.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch19`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch19.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from eagerflow.distribute import Communicator
from eagerflow.graph import Graph


def cut_edges(graph: Graph) -> list[tuple[str, int, int]]:
    """★★ The edges of a placed graph that cross from one task to another: for each tensor
    used on a task other than the one that makes it, ``(tensor name, task that makes it,
    task that uses it)``, once per task that uses it, sorted.

    An operation's task is the number after ``/task:`` in its ``op.device``
    (``"/job:worker/replica:0/task:1/device:CPU:0"`` is task 1); an operation with no device
    runs on task 0. Only data edges count (an operation's ``inputs``), not control edges.
    These are the edges ``partition`` puts a ``_Send``/``_Recv`` pair on, and the test
    compares your answer with the pairs it made, on hidden graphs; it does not let you call
    ``partition``.

    Args:
        graph: A graph whose operations may carry devices.

    Returns:
        The sorted list of ``(tensor.name, from_task, to_task)``.

    Hint 1:
        ``graph.get_operations()`` gives every operation; each ``op.inputs`` is a tensor whose
        ``.op`` made it. Compare the two operations' tasks.

    Hint 2:
        ``re.search(r"/task:(\\d+)", op.device)`` finds the number; collect the triples in a
        set (two users on one task need one transfer) and return ``sorted(...)``.
    """
    raise NotImplementedError


def average_gradients(comm: Communicator, gradients: Sequence[np.ndarray]) -> list[np.ndarray]:
    """★★ The mean over the tasks of each gradient in ``gradients``, by ONE all-reduce.

    Every task of a data-parallel job computed the gradients of its share of the batch; the
    step needs their mean. One ``comm.all_reduce`` per gradient would pay the cost of a
    message once per variable, so pack them: copy every gradient, flattened, into one
    float buffer, all-reduce it (a sum), divide by ``comm.size``, and cut it back into
    arrays of the gradients' shapes. ``MultiWorkerMirroredStrategy`` and Horovod do this.

    The test runs your function on 2 and 3 tasks (threads) with hidden gradients, and counts
    your ``all_reduce`` calls: one.

    Args:
        comm: This task's communicator.
        gradients: This task's gradients, float32 arrays of any shapes (the same shapes on
            every task).

    Returns:
        A list of arrays, each of its gradient's shape and dtype: the means.

    Hint 1:
        ``np.concatenate([g.reshape(-1) for g in gradients])`` is the buffer; ``all_reduce``
        returns the sum (in place when it can).

    Hint 2:
        Cut it back with offsets: ``np.cumsum([g.size for g in gradients])[:-1]`` are the
        places to ``np.split`` at; ``part.reshape(g.shape)`` each.
    """
    raise NotImplementedError


def ring_all_reduce(comm: Communicator, array: np.ndarray) -> np.ndarray:
    """★★★ The sum of every task's ``array``, on every task, by the ring algorithm: each task
    sends only to its right neighbour, task ``(rank + 1) % size``, and receives only from its
    left one.

    Cut the array (flattened) into ``size`` chunks, as ``np.array_split`` does. Then two
    rounds of ``size - 1`` steps each:

    1. *Reduce-scatter*: at step ``s``, task ``r`` sends its chunk ``(r - s) % size`` to the
       right and adds the chunk it receives from the left into its chunk
       ``(r - s - 1) % size``. After the round, task ``r`` holds the whole sum of chunk
       ``(r + 1) % size``.
    2. *All-gather*: at step ``s``, task ``r`` sends its chunk ``(r + 1 - s) % size`` (a
       finished sum) to the right and copies the chunk it receives into its chunk
       ``(r - s) % size``.

    Every task sends ``2 * (size - 1)`` messages of about ``array.size / size`` numbers: what
    each task sends does not grow with the number of tasks, which is why Horovod and NCCL
    reduce gradients this way.

    Use only ``comm.rank``, ``comm.size``, ``comm.send(array, dest, tag)`` (it returns a
    request: call its ``wait()`` before you change what you sent) and ``comm.recv(source,
    tag, shape=..., dtype=...)``. The test runs your function on 1 to 5 tasks (threads) with
    hidden arrays, refuses ``comm.all_reduce`` and ``comm.broadcast``, and counts your
    messages and their sizes. Leave the caller's ``array`` as it was.

    Args:
        comm: This task's communicator.
        array: This task's array (every task passes one of the same shape and dtype).

    Returns:
        A new array of ``array``'s shape and dtype: the sum over the tasks.

    Hint 1:
        ``flat = array.reshape(-1).copy()`` and ``chunks = np.array_split(flat, comm.size)``:
        the chunks are views into ``flat``, so ``chunks[i] += got`` adds into it, and
        ``flat.reshape(array.shape)`` is the answer at the end.

    Hint 2:
        One step: ``request = comm.send(chunks[mine], right, tag=step)``, then ``got =
        comm.recv(left, tag=step, shape=chunks[theirs].shape, dtype=flat.dtype)``, then
        ``request.wait()``, then ``chunks[theirs] += got`` (``chunks[theirs][...] = got`` in
        the all-gather). With one task there is nothing to send.
    """
    raise NotImplementedError


def race(sizes: Sequence[int] = (1_000, 100_000, 1_000_000)) -> None:
    """Your ``ring_all_reduce`` against MPI's own all-reduce, on the tasks of a real job: run
    ``python -m eagerflow.distribute.run -n 2 exercises/ch19.py`` (or ``-n 3``, ``-n 4``).
    Task 0 prints the best of 5 calls of each, for arrays of ``sizes`` float32 numbers."""
    import time

    from eagerflow.distribute import MPICommunicator

    comm = MPICommunicator()
    try:
        ring_all_reduce(comm, np.ones(1, np.float32))
    except NotImplementedError:
        if comm.rank == 0:
            print("ring_all_reduce is not written yet: write it, then race it")
        return
    for n in sizes:
        array = np.ones(n, np.float32)
        assert np.array_equal(ring_all_reduce(comm, array), comm.all_reduce(array.copy()))
        best = {"yours": float("inf"), "mpi": float("inf")}
        for _ in range(5):
            for name, call in (("yours", ring_all_reduce), ("mpi", _mpi_all_reduce)):
                comm.barrier()
                start = time.perf_counter()
                call(comm, array)
                comm.barrier()
                best[name] = min(best[name], time.perf_counter() - start)
        if comm.rank == 0:
            print(f"{n:>9,} float32 on {comm.size} tasks: your ring {best['yours'] * 1e3:8.3f} ms, "
                  f"MPI's all-reduce {best['mpi'] * 1e3:8.3f} ms")  # fmt: skip


def _mpi_all_reduce(comm: Communicator, array: np.ndarray) -> np.ndarray:
    return comm.all_reduce(array.copy())


if __name__ == "__main__":
    race()
