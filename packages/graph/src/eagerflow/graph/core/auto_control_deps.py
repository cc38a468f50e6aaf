"""Automatic control dependencies: a traced function's stateful ops run in program order.

Eager code runs one op after the other, so ``v.assign(2.0); y = v * x`` multiplies by the
new value. A graph has no "after" except its edges: data edges (an op needs another's
output) and control edges (an op must wait for another). A function traced from eager code
must keep eager meaning, so after tracing, this pass adds the control edges the Python code
implied, as TensorFlow's ``tf.function`` does (its ``auto_control_deps.py``):

- ops on the same variable keep their order: a read waits for the write before it, and a
  write waits for the write and the reads before it (two reads need no order);
- every other stateful op (``print``, random ops, calls, ``If``, ``While``) may touch any
  state, so it is a *barrier*: it waits for everything stateful before it, and everything
  stateful after it waits for it.

The pass also says which ops must run although no output needs them (an ``assign`` whose
result nobody uses): every stateful op but a read. A graph built by hand for a ``Session``
gets none of this: as in TensorFlow 1.x, only data edges and ``control_dependencies``
order its ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eagerflow.graph.core.graph import Graph, Operation


def add_automatic_control_dependencies(graph: Graph) -> list[Operation]:
    """Order ``graph``'s stateful ops as they were created; returns the ops that must run."""
    last_write: dict[Any, Operation] = {}  # variable -> the last op that wrote it
    reads: dict[Any, list[Operation]] = {}  # variable -> reads since that write
    barrier: Operation | None = None  # the last stateful op that is not a variable's
    effects: list[Operation] = []
    for operation in graph.get_operations():
        if not operation.op_def.stateful:
            continue
        variable = operation.attrs.get("variable")
        if variable is None:  # a barrier: after the last writes and the reads since them
            frontier = [*last_write.values(), *(r for rs in reads.values() for r in rs)]
            _wait_for(operation, frontier or [barrier])
            barrier = operation
            last_write.clear()
            reads.clear()
        elif operation.op_def.reads_state:
            _wait_for(operation, [last_write.get(variable, barrier)])
            reads.setdefault(variable, []).append(operation)
        else:  # a write
            _wait_for(operation, [last_write.get(variable, barrier), *reads.pop(variable, [])])
            last_write[variable] = operation
        if not operation.op_def.reads_state:
            effects.append(operation)
    return effects


def _wait_for(operation: Operation, before: Sequence[Operation | None]) -> None:
    """Add control inputs to ``operation`` (None and ops it already waits for are skipped)."""
    known = set(operation.control_inputs)
    known.update(t.op for t in operation.inputs)
    new = [o for o in dict.fromkeys(before) if o is not None and o not in known]
    if new:
        operation.control_inputs = (*operation.control_inputs, *new)


__all__ = ["add_automatic_control_dependencies"]
