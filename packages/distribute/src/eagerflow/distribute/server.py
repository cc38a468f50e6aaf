"""``Server``: this process as one task of a job that runs a *placed* graph, each task its
part (model parallelism, the other half of distribution).

TensorFlow 1 starts a ``tf.distribute.Server`` in every process of a cluster and gives its
``target`` to a Session, whose master cuts the graph and hands each task its part. eagerflow
needs no master: every process of a launched job runs the same script, so every process builds
the same graph, cuts it the same way (``partition``, deterministic) and runs its own part.
``Server()`` makes this process task ``rank`` of the job, for every ``Session`` made after it:
the ``_Send``/``_Recv`` pairs on the cut edges talk through the job's communicator, each value
a header then its bytes, under a tag made from the pair's rendezvous key.

    server = Server()                       # in every process of `run -n 2 script.py`
    with device("/job:worker/task:1"):      # the graph, placed
        ...
    Session(graph).run(loss, feeds)         # task 0 runs its part, task 1 its own
"""

from __future__ import annotations

from types import TracebackType

from eagerflow.distribute.communicator import Communicator, MPICommunicator
from eagerflow.graph import Job, MessageRendezvous, get_job, partition, set_job

MPI_MIN_TAG_UB = 32767  # the largest tag every MPI accepts (MPI_TAG_UB is at least this)


class Server:
    """This process's task in the job (``communicator``: MPI's world when not given), made
    the job of every Session that is not given one, until ``close()`` (or the ``with``
    block's end)."""

    def __init__(self, communicator: Communicator | None = None, job_name: str = "worker") -> None:
        comm = communicator if communicator is not None else MPICommunicator()
        self.communicator = comm
        max_tag = int(getattr(comm, "max_tag", MPI_MIN_TAG_UB))
        self.job = Job(comm.rank, comm.size, MessageRendezvous(comm, max_tag), job_name)
        set_job(self.job)

    @property
    def task_index(self) -> int:
        """This process's task, TensorFlow's ``task_index`` (MPI's rank)."""
        return self.job.task_id

    @property
    def num_tasks(self) -> int:
        """The number of tasks in the job."""
        return self.job.num_tasks

    def close(self) -> None:
        """Sessions made from now on run whole graphs again, as in a process alone."""
        if get_job() is self.job:
            set_job(None)

    def __enter__(self) -> Server:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


__all__ = ["Server", "partition"]
