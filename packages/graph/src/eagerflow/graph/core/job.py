"""A job: the processes that run one placed graph together, each its own task's part.

Every process of a job builds the same graph and calls the same ``session.run(fetches,
feed_dict)``; the Session of task ``i`` runs only part ``i`` of ``partition(graph)``, its
``_Send``/``_Recv`` nodes talking through the job's ``Rendezvous``. A Session learns its job
from ``Session(graph, job=Job(...))``, or else from the process-wide one that ``set_job``
sets (what a launcher does once in each process: one process is one task, as a TensorFlow
``Server`` is).

In a step, the task:

- runs the nodes of its part that the step needs, and the ``_Send`` nodes whose users on
  other tasks the step needs (every task works the same set out from the whole graph, so
  each send meets its receive);
- takes only the feeds of tensors made on this task (the other tasks take theirs, and send
  them where they are used): feeding a placeholder placed elsewhere is ignored;
- returns every fetched tensor, its own or received from the task that made it, and None for
  an operation run on another task;
- starts its sends without waiting and calls ``rendezvous.wait()`` at the end of the step.

Why no task waits forever on another: ``partition`` makes every node, send and receive in one
sequence (the whole graph's order, each ``_Recv`` right after its ``_Send``, just before its
first user), and each part keeps that order, which its plan runs in, interpreted or compiled
(a ``_Send`` or ``_Recv`` is stateful, so no fused loop moves across it). Were two tasks each
waiting at a ``_Recv``, each one's ``_Send`` would come before the other's ``_Recv`` in that
sequence: impossible for both.

A graph with no placed node is not cut: every task runs it whole, as a single process does
(what data parallelism, which places nothing, relies on).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor
from eagerflow.graph.core.partition import Part, partition
from eagerflow.graph.core.send_recv import Rendezvous
from eagerflow.graph.core.walks import operations_behind


@dataclass(frozen=True, eq=False)
class Job:
    """This process's place in a job: its task, the number of tasks, and the rendezvous its
    ``_Send``/``_Recv`` nodes use (``job_name`` is the ``/job:NAME`` of the devices)."""

    task_id: int
    num_tasks: int
    rendezvous: Rendezvous
    job_name: str = "worker"

    def __post_init__(self) -> None:
        if not 0 <= self.task_id < self.num_tasks:
            raise ValueError(
                f"Job: task_id {self.task_id} is not a task of a job of {self.num_tasks} "
                f"task(s) (0 to {self.num_tasks - 1})"
            )


_job: Job | None = None


def set_job(job: Job | None) -> None:
    """Make ``job`` this process's job (None: none), for every Session made without one."""
    global _job
    if job is not None and not isinstance(job, Job):
        raise TypeError(f"set_job takes a Job or None, got {type(job).__name__}")
    _job = job


def get_job() -> Job | None:
    """The job ``set_job`` set (None when the process runs alone)."""
    return _job


class TaskStep(NamedTuple):
    """What task ``part.task`` runs for one (fetches, fed tensors) combination."""

    job: Job
    part: Part
    targets: list[SymbolicTensor | Operation]  # in the part: the local fetches, then sends
    fetched: list[int | None]  # for each fetch, its index in targets (None: not here)
    fed: dict[SymbolicTensor, SymbolicTensor]  # a fed tensor of the graph -> its copy here


def task_step(
    graph: Graph,
    job: Job,
    fetches: Sequence[SymbolicTensor | Operation],
    fed: Sequence[SymbolicTensor],
) -> TaskStep | None:
    """The step of ``job``'s task (see the module docs); None if ``graph`` places nothing."""
    if not any(o.device for o in graph.get_operations()):
        return None
    part = partition(graph, job.num_tasks, fetches)[job.task_id]
    targets: list[SymbolicTensor | Operation] = []
    fetched: list[int | None] = []
    for f in fetches:
        local = _local(part, f)
        fetched.append(None if local is None else len(targets))
        if local is not None:
            targets.append(local)
    roots = [f if isinstance(f, Operation) else f.op for f in fetches]
    needed = operations_behind(roots, stop=set(fed))  # in the whole graph, as every task sees it
    targets += [s for s, (users, sent_fetch) in part.sends.items()
                if sent_fetch or not users.isdisjoint(needed)]  # fmt: skip
    here = {t: part.copies[t.op].outputs[t.op.outputs.index(t)] for t in fed if t.op in part.copies}
    return TaskStep(job, part, targets, fetched, here)


def _local(part: Part, fetch: SymbolicTensor | Operation) -> SymbolicTensor | Operation | None:
    """``fetch`` in ``part``: its copy, its ``_Recv``, or None (an operation of another task)."""
    if isinstance(fetch, Operation):
        return part.copies.get(fetch)
    if fetch.op in part.copies:
        return part.copies[fetch.op].outputs[fetch.op.outputs.index(fetch)]
    return part.received[fetch]


__all__ = ["Job", "TaskStep", "get_job", "set_job", "task_step"]
