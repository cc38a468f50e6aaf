"""Pictures of a Graph: its operations as nodes, name scopes as nested boxes, tensors as
edges labelled with their static shapes, control dependencies dashed."""

from __future__ import annotations

from eagerflow.autodiff.draw import Edge, Node, describe, safe_id
from eagerflow.graph.graph import Graph

KINDS = {"Placeholder": "input", "VariableV2": "variable", "Const": "const"}


def graph_diagram(graph: Graph) -> tuple[list[Node], list[Edge]]:
    nodes, edges = [], []
    variables = {o.attrs["variable"]: o for o in graph.get_operations() if o.type == "VariableV2"}
    for o in graph.get_operations():
        if o.type != "VariableV2" and o.attrs.get("variable") in variables:  # reads and assigns
            edges.append(Edge(safe_id(variables[o.attrs["variable"]].name), safe_id(o.name)))
        scope, _, short = o.name.rpartition("/")
        detail = o.type + (f": {describe(o.outputs[0])}" if o.outputs else "")
        nodes.append(
            Node(safe_id(o.name), short, detail, KINDS.get(o.type, "op"), scope and scope + "/")
        )
        for t in o.inputs:
            shape = "?" if t.shape is None else str(tuple(t.shape))
            edges.append(Edge(safe_id(t.op.name), safe_id(o.name), shape))
        edges.extend(Edge(safe_id(c.name), safe_id(o.name), control=True) for c in o.control_inputs)
    return nodes, edges
