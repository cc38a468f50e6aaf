"""A picture of what a GradientTape recorded: one node per op, one per outside input.

The nodes and edges are rendered by ``eagerflow.tensor.pictures`` (Mermaid or Graphviz DOT),
as the graph package's pictures of graphs are.
"""

from __future__ import annotations

from typing import Any

from eagerflow.tensor.pictures import Edge, Node, describe, short_value


def tape_diagram(
    tape: Any, values: bool = False, gradients: dict[Any, Any] | None = None
) -> tuple[list[Node], list[Edge]]:
    """The nodes and edges of what ``tape`` recorded: one node per op, one per outside input.

    With ``values``, each node also shows the value of its tensor (an op's, its output's);
    with ``gradients`` (tensor -> gradient, as ``GradientTape._gradients_of_all`` makes),
    each tensor that has one shows it. Neither changes the nodes or the edges.
    """
    nodes: list[Node] = []
    edges: list[Edge] = []
    producer: dict[Any, str] = {}  # tensor (by identity, as the tape keys them) -> node id
    reads = {r: v for v, rs in tape._variables.items() for r in rs}
    outside = 0  # inputs from outside the tape: in0, in1, ...

    def notes(tensors: tuple[Any, ...]) -> tuple[str, ...]:
        lines = []
        for t in tensors:
            if values:
                lines.append(f"value {short_value(t)}")
            if gradients is not None and gradients.get(t) is not None:
                lines.append(f"grad {short_value(gradients[t])}")
        return tuple(lines)

    for i, record in enumerate(tape.records()):
        node_id = f"op{i}"
        detail = describe(record.outputs[0]) if record.outputs else ""
        nodes.append(Node(node_id, record.op.name, detail, notes=notes(record.outputs)))
        for t in record.inputs:
            if t not in producer:
                source, outside = f"in{outside}", outside + 1
                producer[t] = source
                title, kind = _outside_kind(t, reads, tape._roots)
                nodes.append(Node(source, title, describe(t), kind, notes=notes((t,))))
            edges.append(Edge(producer[t], node_id, str(tuple(t.shape))))
        for o in record.outputs:
            producer[o] = node_id
    return nodes, edges


def _outside_kind(t: Any, reads: dict[Any, Any], roots: Any) -> tuple[str, str]:
    """The title and kind of an input from outside the tape: a variable's read (titled by
    the variable), a watched tensor, or a constant."""
    if t in reads:
        return reads[t].name, "variable"
    if t in roots:
        return "watched", "input"
    return "constant", "const"


__all__ = ["tape_diagram"]
