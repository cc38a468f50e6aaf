"""``Session``: runs the part of a graph needed for some fetches, given some feeds.

The first ``run`` of a (fetches, fed tensors) combination makes a ``Plan``: the needed
operations in graph order, as kernel calls on numbered value slots, each slot freed right
after its last use. Later runs of the same combination only execute the plan.

Making the plan also optimizes, without changing any result: *pruning* keeps only the operations
the fetches need; *constant folding* computes once, when the plan is made, every pure operation
whose inputs are all constants; *common-subexpression elimination* runs two identical pure
operations (same type, inputs and attributes) once. ``plan.stats`` counts each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.graph.core.graph import (
    DEFAULT_SESSIONS,
    Graph,
    Operation,
    SymbolicTensor,
    get_default_graph,
)
from eagerflow.graph.core.job import Job, TaskStep, get_job, task_step
from eagerflow.graph.core.seams import SEAMS, registered
from eagerflow.graph.core.send_recv import using_rendezvous
from eagerflow.graph.core.state import session_values
from eagerflow.graph.core.walks import last_uses, needed_in_order
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import DTypeError, EagerflowError, InvalidArgumentError, format_shape
from eagerflow.tensor.execution import run_kernel
from eagerflow.tensor.nest import flatten, pack_sequence_as
from eagerflow.tensor.random_ops import Streams, random_streams
from eagerflow.tensor.rules import compatible
from eagerflow.tensor.tensor import to_array

Fetch = SymbolicTensor | Operation


class Step(NamedTuple):
    """One kernel call of a plan."""

    operation: Operation
    inputs: tuple[int, ...]  # slots read
    outputs: tuple[int, ...]  # slots written
    free: tuple[int, ...]  # slots no later step (or fetch) needs


class Plan:
    """What a Session runs for one (fetches, feeds) combination: kernel calls on slots."""

    def __init__(
        self, fetches: Sequence[Fetch], fed: Sequence[SymbolicTensor], step: TaskStep | None = None
    ) -> None:
        self.task_step = step  # in a job: this task's part of the step (see job.py)
        self.slot: dict[SymbolicTensor, int] = {}
        self.fed = list(fed)
        self.size = 0  # slots in all, including scratch ones
        operations = _needed_operations(fetches, set(fed))  # pruning
        graph_size = len(operations[0].graph.get_operations()) if operations else 0
        kept, alias, constants, folded, merged = _fold_and_merge(operations)
        fetches = [alias.get(f, f) if isinstance(f, SymbolicTensor) else f for f in fetches]
        for t in fed:
            self._slot_of(t)
        self.constants = {self._slot_of(t): v for t, v in constants.items()}
        fed_set = set(fed)
        raw = [
            (
                o,
                self._slots([alias.get(t, t) for t in o.inputs]),
                # an output that is fed keeps the fed value: the kernel writes a scratch slot
                tuple(self._new_slot() if t in fed_set else self._slot_of(t) for t in o.outputs),
            )
            for o in kept
        ]
        keep = (
            {self.slot[t] for t in fed}
            | set(self.constants)
            | {self._slot_of(f) for f in fetches if isinstance(f, SymbolicTensor)}
        )
        frees = last_uses([(ins, outs) for _, ins, outs in raw], keep)
        self.steps = [
            Step(o, ins, outs, tuple(frees.get(i, ()))) for i, (o, ins, outs) in enumerate(raw)
        ]
        # what `run` loops over: each step with its operation's fields looked up once, here
        # (looking them up in every run cost W6g's ~23 steps ~1.5 us of ~40)
        self._calls = [
            (o.op_def, ins, o.attrs, o.inputs, outs, free, o) for o, ins, outs, free in self.steps
        ]
        self.fetch_slots = [
            self.slot[f] if isinstance(f, SymbolicTensor) else None for f in fetches
        ]
        self.stats = {
            "graph": graph_size,  # operations in the whole graph
            "needed": len(operations),  # after pruning
            "folded": folded,  # computed when the plan is made (constant folding)
            "merged": merged,  # duplicates removed (common-subexpression elimination)
            "kernel_calls": len(self.steps),  # what each run executes
        }

    def _new_slot(self) -> int:
        self.size += 1
        return self.size - 1

    def _slot_of(self, t: SymbolicTensor) -> int:
        if t not in self.slot:
            self.slot[t] = self._new_slot()
        return self.slot[t]

    def _slots(self, tensors: Sequence[SymbolicTensor]) -> tuple[int, ...]:
        return tuple(self._slot_of(t) for t in tensors)

    def run(self, feeds: dict[SymbolicTensor, np.ndarray]) -> list[Any]:
        values: list[Any] = [None] * self.size
        for s, value in self.constants.items():
            values[s] = value
        for t, value in feeds.items():
            values[self.slot[t]] = value
        for op, ins, attrs, inputs, outs, free, operation in self._calls:
            try:
                result = run_kernel(op, [values[s] for s in ins], attrs, inputs)
            except EagerflowError as e:
                name_the_node(e, operation)
                raise
            if op.multi_output:
                for s, r in zip(outs, result, strict=True):
                    values[s] = r
            else:
                values[outs[0]] = result
            for s in free:
                values[s] = None
        return [None if s is None else fetched_copy(values[s]) for s in self.fetch_slots]


def _needed_operations(fetches: Sequence[Fetch], fed: set[SymbolicTensor]) -> list[Operation]:
    """The operations the fetches depend on (through data and control inputs), stopping at
    fed tensors, in graph order; a placeholder among them has no value to run with."""
    graph = fetches[0].graph if fetches else None
    needed = needed_in_order(graph, fetches, stop=fed) if graph else []
    for operation in needed:
        if operation.op_def.fed:
            (t,) = operation.outputs
            raise InvalidArgumentError(
                f"you must feed a value for placeholder '{t.name}' with dtype {t.dtype} and "
                f"shape {format_shape(t.shape)} (feed_dict={{{operation.name}: ...}})"
            )
    return needed


def _fold_and_merge(
    operations: list[Operation],
) -> tuple[
    list[Operation], dict[SymbolicTensor, SymbolicTensor], dict[SymbolicTensor, Any], int, int
]:
    """Constant folding and common-subexpression elimination over needed operations.

    Returns the operations left to run, an alias for each tensor replaced by an identical
    one, the values of folded tensors, and how many operations were folded and merged.
    """
    alias: dict[SymbolicTensor, SymbolicTensor] = {}
    constants: dict[SymbolicTensor, Any] = {}
    seen: dict[Any, Any] = {}  # operation keys -> first operation; constant keys -> tensor
    kept: list[Operation] = []
    folded = merged = 0
    for o in operations:
        inputs = [alias.get(t, t) for t in o.inputs]
        pure = not o.op_def.stateful and not o.op_def.fed and not o.control_inputs
        if pure and all(t in constants for t in inputs):
            args = [constants[t] for t in inputs]
            try:
                result = run_kernel(o.op_def, args, o.attrs, o.inputs)
            except EagerflowError as e:  # the same error the run would have raised
                name_the_node(e, o)
                raise
            results = result if o.op_def.multi_output else (result,)
            for t, value in zip(o.outputs, results, strict=True):
                # equal constants are one constant, so ops using them can be merged
                first = seen.setdefault(("constant", t.dtype, _attrs_key(np.asarray(value))), t)
                if first is t:
                    constants[t] = value
                else:
                    alias[t] = first
            folded += not o.op_def.constant  # a Const is a constant already, not a folding
            continue
        key = (o.type, tuple(inputs), _attrs_key(o.attrs)) if pure else None
        if key is not None and key in seen:
            alias.update(zip(o.outputs, seen[key].outputs, strict=True))
            merged += 1
            continue
        if key is not None:
            seen[key] = o
        kept.append(o)
    return kept, alias, constants, folded, merged


def _attrs_key(value: Any) -> Any:
    """A hashable stand-in for attribute values (arrays by content, objects by identity)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _attrs_key(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_attrs_key(v) for v in value)
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if isinstance(value, int | float | str | bool | type(None) | type(Ellipsis)):
        return (type(value).__name__, value)
    return ("object", id(value))


def fetched_copy(value: Any) -> Any:
    """What ``run`` returns: a fresh NumPy array (a NumPy scalar for 0-d), never shared."""
    if isinstance(value, np.ndarray):
        return value[()] if value.ndim == 0 else value.copy()
    return value


def name_the_node(error: EagerflowError, operation: Operation) -> None:
    """Name the graph node whose kernel failed, in a note under the traceback: the error
    itself is the one ``run_kernel`` raises, the same as in eager mode."""
    error.add_note(f"(in graph node '{operation.name}')")


# What a feed_dict key may be. A tuple, not ``str | SymbolicTensor | ...``: that union would be
# built again at every feed of every run (~0.5 us each).
_FEED_KEYS = (str, SymbolicTensor, Operation, Variable, Tensor)


class Session:
    """Runs graphs. Holds the values of the graph's variables (each Session its own).

    ``with Session(graph) as session:`` also makes it this thread's default session inside
    the block (and closes it at the end); ``with session.as_default():`` only does the former.
    """

    def __init__(
        self, graph: Graph | None = None, jit_compile: bool = False, job: Job | None = None
    ) -> None:
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"Session(graph=...) takes a Graph (or None: the default graph), "
                            f"got {type(graph).__name__} {graph!r:.40}")  # fmt: skip
        self.graph = graph or get_default_graph()
        self.jit_compile = jit_compile  # run plans compiled (``eagerflow.graph.compiler``)
        if job is not None and not isinstance(job, Job):
            raise TypeError(f"Session(job=...) takes a Job, got {type(job).__name__}")
        self.job = job  # None: the process's job (``set_job``), if any; see job.py
        self._values: dict[Variable, np.ndarray] = {}
        self._streams: Streams = {}  # seeded random ops' streams: each Session starts afresh
        self._plans: dict[tuple[Any, ...], Plan] = {}
        self._compiled: dict[Plan, Any] = {}
        self._closed = False

    def __enter__(self) -> Session:
        DEFAULT_SESSIONS.stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        DEFAULT_SESSIONS.stack.pop()
        self.close()

    @contextmanager
    def as_default(self) -> Iterator[Session]:
        """Make this the default session of this thread inside the block (blocks nest)."""
        DEFAULT_SESSIONS.stack.append(self)
        try:
            yield self
        finally:
            DEFAULT_SESSIONS.stack.pop()

    def close(self) -> None:
        """Free the session's state; running it afterwards is an error."""
        self._closed = True
        self._values.clear()
        self._streams.clear()
        self._plans.clear()
        self._compiled.clear()

    def run(self, fetches: Any, feed_dict: dict[Any, Any] | None = None) -> Any:
        """Compute ``fetches`` (a tensor, operation, name, or nested list/tuple/dict of them)
        with ``feed_dict`` values for any tensors; the result mirrors ``fetches``."""
        feeds: dict[SymbolicTensor, np.ndarray] = {}
        for key, value in (feed_dict or {}).items():
            t = self._resolve_fed(key)
            feeds[t] = _checked_feed(t, value)
        plan = self.plan(fetches, feeds)
        if plan.task_step is not None:
            return pack_sequence_as(fetches, self._run_task(plan.task_step, plan, feeds))
        runner = self.compiled(plan) if self.jit_compile else plan
        with session_values(self._values), random_streams(self._streams):
            results = runner.run(feeds)
        return pack_sequence_as(fetches, results)

    def _run_task(
        self, step: TaskStep, plan: Plan, feeds: dict[SymbolicTensor, np.ndarray]
    ) -> list[Any]:
        """Run this task's part of a step in a job (see job.py): the feeds made here, the
        sends waited for at the end, the fetches made elsewhere received."""
        job = step.job
        runner = self.compiled(plan) if self.jit_compile else plan
        here = {step.fed[t]: v for t, v in feeds.items() if t in step.fed}
        with session_values(self._values), using_rendezvous(job.rendezvous):
            try:
                results = runner.run(here)
            finally:
                job.rendezvous.wait()
        return [None if i is None else results[i] for i in step.fetched]

    def compiled(self, plan: Plan) -> Any:
        """``plan`` compiled (a ``compiler.CompiledPlan``, made on first use), as
        ``jit_compile=True`` runs it; its ``programs`` show what the compiler made."""
        if plan not in self._compiled:
            compile_plan = registered(SEAMS.compile_plan, "eagerflow.graph.compiler")
            self._compiled[plan] = compile_plan(plan)
        return self._compiled[plan]

    def plan(self, fetches: Any, fed: Iterable[Any] = ()) -> Plan:
        """The ``Plan`` that ``run(fetches, feed_dict)`` executes when ``fed`` are
        the feed_dict's keys (a feed_dict itself will do); made now if it is new. Its
        ``steps`` and ``stats`` show what pruning, folding and merging left to run."""
        if self._closed:
            raise RuntimeError("attempted to use a closed Session")
        targets = tuple(self._resolve(f) for f in flatten(fetches))
        fed_tensors = [self._resolve_fed(t) for t in fed]
        job = self.job or get_job()
        key = (targets, frozenset(fed_tensors), job)
        plan = self._plans.get(key)
        if plan is None:
            step = None if job is None else task_step(self.graph, job, targets, fed_tensors)
            if step is None:
                plan = Plan(targets, fed_tensors)
            else:
                plan = Plan(step.targets, list(step.fed.values()), step)
            self._plans[key] = plan
        return plan

    def _resolve_fed(self, key: Any) -> SymbolicTensor:
        if not isinstance(key, _FEED_KEYS):
            raise TypeError(f"feed_dict keys must be tensors of the graph or their names "
                            f"('x:0'), got {type(key).__name__} {key!r:.40}")  # fmt: skip
        t = self._resolve(key)
        if not isinstance(t, SymbolicTensor):
            raise TypeError(f"feed_dict keys must be tensors, got the operation {t.name!r}")
        return t

    def _resolve(self, fetch: Any) -> Fetch:
        if isinstance(fetch, str):
            found: Fetch = (
                self.graph.get_tensor_by_name(fetch)
                if ":" in fetch
                else self.graph.get_operation_by_name(fetch)
            )
            return found
        if isinstance(fetch, Variable):
            return self._variable_value(fetch)
        if isinstance(fetch, SymbolicTensor | Operation):
            if fetch.graph is not self.graph:
                raise ValueError(f"{fetch.name} is not an element of this Session's graph")
            return fetch
        if isinstance(fetch, Tensor):
            raise TypeError(
                f"{fetch!r:.60} is an eager tensor: it already has a value (use .numpy()), and "
                "a Session runs graph tensors only; to run it in a graph, build it inside "
                "`with graph.as_default():`"
            )
        raise TypeError(
            f"cannot fetch {fetch!r:.60}: fetches are tensors, operations, names, or "
            "nested lists/tuples/dicts of them"
        )

    def _variable_value(self, variable: Variable) -> SymbolicTensor:
        for o in self.graph.get_operations():
            if o.op_def.defines_variable and o.attrs["variable"] is variable:
                return o.outputs[0]
        raise ValueError(f"variable '{variable.name}' does not belong to this Session's graph")


def _checked_feed(t: SymbolicTensor, value: Any) -> np.ndarray:
    try:
        array = to_array(value, t.dtype)
    except DTypeError as e:
        raise ValueError(
            f"Cannot feed value of dtype {np.asarray(value).dtype} for Tensor '{t.name}', "
            f"which has dtype {t.dtype}: {e}"
        ) from None
    if not compatible(t.shape, array.shape):
        raise ValueError(
            f"Cannot feed value of shape {format_shape(array.shape)} for Tensor '{t.name}', "
            f"which has shape {format_shape(t.shape)}"
        )
    return array


__all__ = ["Fetch", "Plan", "Session", "Step", "fetched_copy", "name_the_node"]
