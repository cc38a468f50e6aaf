"""``partition``: a placed graph cut into one graph per task, joined by ``_Send``/``_Recv``.

Every task of a job computes the same partition of the same graph (the cut depends only on
the graph, the number of tasks and the fetches, walked in the graph's order), so the tasks
agree on every rendezvous key without talking. Where a node goes:

- a node placed with ``device("/job:worker/task:i")`` goes to task ``i``;
- a node that reads or writes a variable (``ReadVariableOp``, an assignment) goes with the
  variable's node, wherever it was created: TensorFlow colocates a resource's ops with it,
  and here the value lives in the Session of the variable's task;
- any other node goes to task 0 (TensorFlow's client puts unplaced ops on its default
  device, ``/job:worker/task:0`` in a job).

An edge whose two ends are on different tasks gets one ``_Send`` in the producer's part and
one ``_Recv`` in the consumer's (one pair per tensor and receiving task, however many nodes
there use it). A control edge across tasks sends a dummy scalar made after the control input,
as TensorFlow does, and the consumer waits on its ``_Recv``. A tensor in ``fetches`` is also
sent from its task to every other task, so every process of the job can fetch it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.graph.core.device import DeviceSpec
from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor
from eagerflow.graph.core.send_recv import task_device
from eagerflow.tensor import dtypes
from eagerflow.tensor.execution import execute
from eagerflow.tensor.registry import OPS


class Part(Graph):
    """One task's graph of a partition: copies of the task's nodes, keeping their names,
    and the ``_Send``/``_Recv`` nodes of the cut edges."""

    def __init__(self, task: int, job: str) -> None:
        super().__init__()
        self.task = task
        self.job = job
        self.copies: dict[Operation, Operation] = {}  # a node of the whole graph -> its copy
        self.received: dict[SymbolicTensor, SymbolicTensor] = {}  # cut tensor -> its _Recv
        # each _Send, with the nodes of the whole graph that use what it sends on the
        # receiving task and whether it also sends a fetch: a Session runs the sends whose
        # users its step needs (see job.py)
        self.sends: dict[Operation, tuple[set[Operation], bool]] = {}

    def __repr__(self) -> str:
        return f"<Part task {self.task} of a partition: {len(self.get_operations())} operations>"


def placement(graph: Graph, num_tasks: int | None = None) -> tuple[dict[Operation, int], str]:
    """The task of every node of ``graph`` (see the module docs) and the job's name."""
    specs = {o: DeviceSpec.from_string(o.device) for o in graph.get_operations() if o.device}
    jobs = sorted({s.job for s in specs.values() if s.job is not None})
    if len(jobs) > 1:
        raise ValueError(f"partition: the graph is placed on several jobs {jobs}; a partition "
                         "cuts one job's graph by task")  # fmt: skip
    own = {o: (s.task or 0) for o, s in specs.items()}
    home = {o.attrs["variable"]: own.get(o, 0) for o in own if o.op_def.defines_variable}
    tasks: dict[Operation, int] = {}
    for o in graph.get_operations():
        variable = o.attrs.get("variable")
        tasks[o] = home[variable] if variable in home else own.get(o, 0)
    last = max(tasks.values(), default=0)
    if num_tasks is not None and last >= num_tasks:
        o = next(o for o, t in tasks.items() if t == last)
        raise ValueError(
            f"partition: operation {o.name!r} is placed on {o.device or 'its variable'}'s task "
            f"{last}, but the job has {num_tasks} task(s) (0 to {num_tasks - 1})"
        )
    return tasks, (jobs[0] if jobs else "worker")


def partition(
    graph: Graph, num_tasks: int | None = None, fetches: Sequence[Any] = ()
) -> dict[int, Part]:
    """``graph`` cut into one ``Part`` per task, ``0`` to ``num_tasks - 1`` (default: the
    highest placed task + 1), with a ``_Send``/``_Recv`` pair on every edge between tasks;
    each tensor of ``fetches`` is sent to every task that does not make it. Pure: ``graph``
    is not changed."""
    tasks, job = placement(graph, num_tasks)
    count = num_tasks if num_tasks is not None else max(tasks.values(), default=0) + 1
    cut = _Cut(tasks, job, count)
    for o in graph.get_operations():
        cut.copy(o)
    for t in fetches:
        if isinstance(t, SymbolicTensor):
            for receiver in range(count):
                if receiver != tasks[t.op]:
                    cut.received(t, receiver, None)
    return cut.parts


class _Cut:
    """The parts being built, and the pairs already made (one per tensor and receiver)."""

    def __init__(self, tasks: dict[Operation, int], job: str, count: int) -> None:
        self.tasks = tasks
        self.parts = {t: Part(t, job) for t in range(count)}
        self.send_of: dict[Operation, tuple[Part, Operation]] = {}  # a _Recv -> its _Send
        self.signals: dict[tuple[Operation, int], SymbolicTensor] = {}  # control pairs
        self.dummies: dict[Operation, Operation] = {}  # a control input -> its dummy scalar

    def copy(self, o: Operation) -> None:
        task = self.tasks[o]
        part = self.parts[task]
        # inputs first, received ones included: the part's order stays a topological order
        inputs = tuple(self.received(t, task, o) for t in o.inputs)
        control = tuple(self.control(c, task, o) for c in o.control_inputs)
        shapes, dts = [t.shape for t in o.outputs], [t.dtype for t in o.outputs]
        new = part.create_op(o.op_def, inputs, o.attrs, shapes, dts, o.name)
        new.device = o.device
        new.control_inputs = control
        part.copies[o] = new

    def received(self, t: SymbolicTensor, task: int, user: Operation | None) -> SymbolicTensor:
        """``t`` in ``task``'s part: its copy, or the output of the ``_Recv`` that brings it
        there (made now if it is the first use). ``user`` is the node that uses it (None for
        a fetch)."""
        sender = self.tasks[t.op]
        if sender == task:
            return self.parts[task].copies[t.op].outputs[t.op.outputs.index(t)]
        part = self.parts[task]
        if t not in part.received:
            source = self.parts[sender].copies[t.op].outputs[t.op.outputs.index(t)]
            part.received[t] = self._pair(source, t.name, sender, task)
        self._used(part.received[t], user)
        return part.received[t]

    def control(self, c: Operation, task: int, user: Operation) -> Operation:
        """The control input ``c`` in ``task``'s part: its copy, or a ``_Recv`` of a dummy
        scalar sent after ``c`` ran."""
        sender = self.tasks[c]
        if sender == task:
            return self.parts[task].copies[c]
        found = self.signals.get((c, task))
        if found is None:
            sending = self.parts[sender]
            dummy = self.dummies.get(c)
            if dummy is None:  # one dummy per control input, sent to each task that needs it
                zero = np.zeros((), np.int32)
                dummy = sending.create_op(OPS["Const"], (), {"value": zero}, [()],
                                          [dtypes.int32], f"_control_{_flat(c.name)}")  # fmt: skip
                dummy.control_inputs = (sending.copies[c],)
                self.dummies[c] = dummy
            found = self.signals[c, task] = self._pair(dummy.outputs[0], f"^{c.name}", sender, task)
        self._used(found, user)
        return found.op

    def _pair(self, source: SymbolicTensor, name: str, sender: int, task: int) -> SymbolicTensor:
        """A ``_Send`` of ``source`` in ``sender``'s part and its ``_Recv`` in ``task``'s."""
        job = self.parts[task].job
        attrs: dict[str, Any] = {
            "tensor_name": name,
            "send_device": task_device(job, sender),
            "send_device_incarnation": 0,
            "recv_device": task_device(job, task),
            "client_terminated": False,
        }
        flat = _flat(name)
        sending, receiving = self.parts[sender], self.parts[task]
        # through the seam, as every op is made: each part is the context that builds them
        with sending.as_default(), sending.device(attrs["send_device"]):
            execute("_Send", (source,), attrs, f"_send_{flat}_to_{task}")
        send = sending.get_operations()[-1]
        sending.sends[send] = (set(), False)
        recv_attrs = {**attrs, "dtype": source.dtype, "shape": source.shape}
        with receiving.as_default(), receiving.device(attrs["recv_device"]):
            (received,) = execute("_Recv", (), recv_attrs, f"_recv_{flat}_from_{sender}")
        recv = received.op  # type: ignore[attr-defined]
        self.send_of[recv] = (sending, send)
        return recv.outputs[0]

    def _used(self, received: SymbolicTensor, user: Operation | None) -> None:
        """Note that ``user`` (None: a fetch) needs what ``received`` brings."""
        sending, send = self.send_of[received.op]
        users, _ = sending.sends[send]
        if user is None:
            sending.sends[send] = (users, True)
        else:
            users.add(user)


def _flat(name: str) -> str:
    return name.replace("/", "_").replace(":", "_").lstrip("^")


__all__ = ["Part", "partition", "placement"]
