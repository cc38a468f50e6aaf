"""Pictures of a Graph: its operations as nodes, name scopes as nested boxes, tensors as
edges labelled with their static shapes, control dependencies dashed.

With ``branches=True`` the graphs inside ``If`` and ``While`` nodes (kept in their
attributes) are drawn too, each in a box of its own: the outer tensors an inner graph
captures are wired to its inputs, and its results to the node that runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eagerflow.graph.core.graph import Graph, Operation
from eagerflow.graph.core.partition import Part
from eagerflow.graph.core.seams import SEAMS
from eagerflow.graph.core.send_recv import key_of
from eagerflow.graph.core.subgraphs import Subgraph
from eagerflow.tensor.errors import format_shape
from eagerflow.tensor.pictures import Edge, Node, describe, safe_id, to_mermaid
from eagerflow.tensor.registry import OpDef


def kind(op: OpDef) -> str:
    """How a diagram draws a node of ``op``: as an input, a variable, a constant or an op."""
    if op.fed:
        return "input"
    if op.defines_variable:
        return "variable"
    return "const" if op.constant else "op"


def graph_diagram(graph: Graph, branches: bool = False) -> tuple[list[Node], list[Edge]]:
    """The nodes and edges of a picture of ``graph`` (``branches``: with the graphs inside
    ``If`` and ``While``)."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    _draw(graph, "", "", {}, branches, nodes, edges)
    return nodes, edges


def _draw(
    graph: Graph,
    prefix: str,
    box: str,
    variables: dict[Any, str],
    branches: bool,
    nodes: list[Node],
    edges: list[Edge],
) -> None:
    """Add ``graph``'s nodes and edges. An inner graph's node ids start with ``prefix`` (its
    names repeat the outer graph's), and its nodes sit in the scope ``box``."""

    def node_id(o: Operation) -> str:
        return safe_id(prefix + o.name)

    operations = graph.get_operations()
    # a variable's node feeds its reads and assignments, in inner graphs too
    variables = variables | {o.attrs["variable"]: node_id(o) for o in operations
                             if o.op_def.defines_variable}  # fmt: skip
    for o in operations:
        if not o.op_def.defines_variable and o.attrs.get("variable") in variables:
            edges.append(Edge(variables[o.attrs["variable"]], node_id(o)))
        scope, _, short = o.name.rpartition("/")
        scope = box + (scope and scope + "/")
        detail = o.type + (f": {describe(o.outputs[0])}" if o.outputs else "")
        nodes.append(Node(node_id(o), short, detail, kind(o.op_def), scope))
        for t in o.inputs:
            edges.append(Edge(node_id(t.op), node_id(o), format_shape(t.shape)))
        edges.extend(Edge(node_id(c), node_id(o), control=True) for c in o.control_inputs)
        if branches:
            for key, inner in o.attrs.items():
                if isinstance(inner, Subgraph):
                    box_of_inner = f"{scope}{short}: {key.removesuffix('_branch')}/"
                    _draw_inner(o, key, inner, prefix, box_of_inner, variables, nodes, edges)


def _draw_inner(
    node: Operation,
    key: str,
    inner: Subgraph,
    prefix: str,
    box: str,
    variables: dict[Any, str],
    nodes: list[Node],
    edges: list[Edge],
) -> None:
    """Add the graph of ``node``'s subgraph attribute ``key`` (a branch, a loop's condition
    or body) in the scope ``box``, with the edges between it and ``node``."""
    label = key.removesuffix("_branch")  # then, else; cond, body
    inner_prefix = f"{prefix}{node.name}/{key}/"
    _draw(inner.graph, inner_prefix, box, variables, True, nodes, edges)
    node_id = safe_id(prefix + node.name)
    # the node's last inputs feed the inner graph's inputs (an If's first is its pred)
    fed = node.inputs[len(node.inputs) - len(inner.inputs) :]
    for t, placeholder in zip(fed, inner.inputs, strict=True):
        if placeholder is not None:
            target = safe_id(inner_prefix + placeholder.op.name)
            edges.append(Edge(safe_id(prefix + t.op.name), target, format_shape(t.shape)))
    for t in inner.outputs:
        edges.append(Edge(safe_id(inner_prefix + t.op.name), node_id, label))


def partition_diagram(parts: Mapping[int, Part]) -> tuple[list[Node], list[Edge]]:
    """A picture of a partition (``partition``'s result): each task's part in a box of its
    own, and an arrow from every ``_Send`` to its ``_Recv``, labelled with the tensor sent."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    sends: dict[str, str] = {}
    recvs: list[tuple[str, str, str]] = []
    for task, part in sorted(parts.items()):
        prefix = f"task{task}/"
        _draw(part, prefix, f"task {task}/", {}, False, nodes, edges)
        sends.update((key_of(o.attrs), safe_id(prefix + o.name)) for o in part.sends)
        recvs += [(key_of(t.op.attrs), safe_id(prefix + t.op.name), t.op.attrs["tensor_name"])
                  for t in part.received.values()]  # fmt: skip
    edges += [Edge(sends[key], node, name, control=True) for key, node, name in recvs]
    return nodes, edges


def partition_to_mermaid(parts: Mapping[int, Part], direction: str = "LR") -> str:
    """A partition as a Mermaid flowchart: tasks side by side, Send/Recv pairs dashed."""
    return to_mermaid(*partition_diagram(parts), direction=direction)


SEAMS.graph_diagram = graph_diagram  # Graph.to_mermaid and Graph.to_dot call it

__all__ = ["graph_diagram", "kind", "partition_diagram", "partition_to_mermaid"]
