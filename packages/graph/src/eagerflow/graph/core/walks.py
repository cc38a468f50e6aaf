"""The walks over a graph that the stages share, each written once: which operations some
tensors depend on, in a topological order (``needed_in_order``), and when each value of a
list of steps is used for the last time (``last_uses``).

A ``Graph`` keeps its operations in the order they were added, and an operation is added
after its inputs and control inputs exist: the graph's order is a topological order. So the
walk needs no sort of its own: find the operations behind the roots, then keep the graph's
order (the Session's plans, the ONNX export and the gradients of loops all do).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence

from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor

_NOTHING: frozenset[SymbolicTensor] = frozenset()


def operations_behind(
    roots: Iterable[Operation],
    stop: Container[SymbolicTensor] = _NOTHING,
    control: bool = True,
) -> set[Operation]:
    """The roots and every operation they depend on, through data inputs and (with
    ``control``) control inputs, not going past a tensor in ``stop`` (a fed tensor, one
    already translated): its operation is not included, unless reached another way.
    Iterative, so deep graphs need no recursion."""
    found: set[Operation] = set()
    stack = list(roots)
    while stack:
        operation = stack.pop()
        if operation in found:
            continue
        found.add(operation)
        stack.extend(t.op for t in operation.inputs if t not in stop)
        if control:
            stack.extend(operation.control_inputs)
    return found


def in_graph_order(graph: Graph, operations: Container[Operation]) -> list[Operation]:
    """``operations`` (of ``graph``) in the graph's order: a topological order (see above)."""
    return [o for o in graph.get_operations() if o in operations]


def needed_in_order(
    graph: Graph,
    targets: Iterable[SymbolicTensor | Operation],
    stop: Container[SymbolicTensor] = _NOTHING,
    control: bool = True,
) -> list[Operation]:
    """The operations of ``graph`` that ``targets`` need, in a topological order; a target
    in ``stop`` needs nothing (see ``operations_behind``)."""
    roots = [t if isinstance(t, Operation) else t.op for t in targets if t not in stop]
    return in_graph_order(graph, operations_behind(roots, stop, control))


def last_uses(
    steps: Iterable[tuple[Sequence[int], Sequence[int]]], keep: Container[int] = ()
) -> dict[int, list[int]]:
    """Liveness of straight-line code: for each step (the values it reads, the values it
    writes), by index, the values no later step uses, less those in ``keep`` (which live to
    the end: fed values, constants, fetched ones). A value written and never read is listed
    at the step that writes it. A value is listed once, at the step that uses it last, so
    that whoever runs the steps can let go of it there (the Session's plans set its slot to
    None; the compiler writes ``del`` and hands its buffer to a later value)."""
    last: dict[int, int] = {}
    for index, (reads, writes) in enumerate(steps):
        for value in (*reads, *writes):
            last[value] = index
    found: dict[int, list[int]] = {}
    for value, index in last.items():
        if value not in keep:
            found.setdefault(index, []).append(value)
    return found


__all__ = ["in_graph_order", "last_uses", "needed_in_order", "operations_behind"]
