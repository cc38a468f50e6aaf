"""Pass 1, specialization: the plan for one input signature, with every shape it can know.

A graph is built for any batch size (``None`` dimensions), so its shapes are partly
unknown. A compiled program serves one *input signature*, the exact shapes and dtypes of
the fed values, so the shape rules (the same ones graph building used) give the exact
shape of almost every tensor. Two things follow:

- an op that only looks at its input's shape (``OnesLike``, ``ZerosLike``, ``Size``) has a
  known result: it becomes a constant, and every pure op all of whose inputs are constants
  folds in turn (as the Session's constant folding does, with the same ``run_kernel``).
  In a gradient, ``OnesLike(loss)`` is the seed: folded, the backward pass no longer waits
  for the forward pass's reduction, and the two can fuse into one loop;
- later passes can size buffers, and know which ops loop over the same elements.

A shape that depends on values (``Range`` with a fed bound) stays unknown (``None``): ops
that touch it run as the interpreter runs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from eagerflow.graph.core.graph import Operation
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import EagerflowError
from eagerflow.tensor.execution import run_kernel

Shape = tuple[int, ...]


class Node(NamedTuple):
    """One operation of the program, reading and writing numbered values (a Plan's slots)."""

    operation: Operation
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    @property
    def type(self) -> str:
        return self.operation.type


@dataclass
class Specialized:
    """A plan for one input signature: its nodes, constants, and each value's shape and
    dtype (a shape is None when only running can tell it)."""

    nodes: list[Node]
    constants: dict[int, Any]
    shapes: dict[int, Shape | None]
    dtypes: dict[int, DType]
    fed: list[int]
    fetches: list[int | None]
    folded: int  # operations turned into constants by this pass
    names: dict[int, str]  # the fed values' placeholder names


def specialize(plan: Any, fed_shapes: Mapping[int, Shape]) -> Specialized:
    """The plan's steps for fed values of ``fed_shapes`` (slot -> shape)."""
    constants = dict(plan.constants)
    shapes: dict[int, Shape | None] = {s: np.shape(v) for s, v in constants.items()}
    shapes.update(fed_shapes)
    dtypes: dict[int, DType] = {}
    for t, s in plan.slot.items():
        dtypes[s] = t.dtype
    nodes: list[Node] = []
    folded = 0
    for step in plan.steps:
        operation = step.operation
        for s, t in zip(step.outputs, operation.outputs, strict=True):
            dtypes[s] = t.dtype
        in_shapes = [shapes.get(s) for s in step.inputs]
        out_shapes = _output_shapes(operation, in_shapes)
        value = _known_value(operation, step.inputs, in_shapes, constants)
        if value is not None:
            results = value if operation.op_def.multi_output else (value,)
            for s, result in zip(step.outputs, results, strict=True):
                constants[s] = result
                shapes[s] = np.shape(result)
            folded += 1
            continue
        for s, shape in zip(step.outputs, out_shapes, strict=True):
            shapes[s] = shape
        nodes.append(Node(operation, step.inputs, step.outputs))
    fed = list(fed_shapes)
    names = {plan.slot[t]: t.op.name for t in plan.fed}
    return Specialized(nodes, constants, shapes, dtypes, fed, list(plan.fetch_slots), folded, names)


def _output_shapes(operation: Operation, in_shapes: Sequence[Shape | None]) -> list[Shape | None]:
    """The shape rule's answer for exact input shapes; None where it cannot tell."""
    count = len(operation.outputs)
    if any(s is None for s in in_shapes):
        return [None] * count
    try:
        found = operation.op_def.shape_rule(in_shapes, operation.attrs)  # type: ignore[arg-type]
    except EagerflowError:  # the kernel will raise it, when the program runs
        return [None] * count
    return [s if s is not None and None not in s else None for s in found]  # type: ignore[misc]


def _known_value(
    operation: Operation,
    inputs: Sequence[int],
    in_shapes: Sequence[Shape | None],
    constants: Mapping[int, Any],
) -> Any:
    """The operation's result if it is known before running (else None): a shape-only op
    of a known shape, or a pure op of constants."""
    op = operation.op_def
    pure = not op.stateful and not op.fed and not operation.control_inputs
    if not pure:
        return None
    if op.needs_only_shapes and in_shapes and in_shapes[0] is not None:
        args: list[Any] = [np.zeros(in_shapes[0], operation.inputs[0].dtype.np)]
    elif op.expands:
        return None  # a fused loop broadcasts for free; folded, it would read a big constant
    elif all(s in constants for s in inputs):
        args = [constants[s] for s in inputs]
    else:
        return None
    try:
        return run_kernel(op, args, operation.attrs, operation.inputs)
    except EagerflowError:  # left for the run to raise, in its place
        return None


__all__ = ["Node", "Specialized", "specialize"]
