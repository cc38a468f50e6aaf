"""Pictures of computations as text: Mermaid (rendered by the tutorial site) and Graphviz DOT.

A picture is a list of ``Node``s (grouped into nested scopes by their ``scope`` path, like
``"layer1/"``) and ``Edge``s. ``tape_diagram`` describes what a GradientTape recorded; the
graph package describes a Graph the same way and renders it with the same two functions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from eagerflow.autodiff.tape import unpack
from eagerflow.tensor.errors import format_shape

# How each kind of node looks: (Mermaid opening, closing), Graphviz shape.
_MERMAID = {"op": ('["', '"]'), "input": ('(["', '"])'), "variable": ('[("', '")]'),
            "const": ('>"', '"]')}  # fmt: skip
_DOT = {"op": "box", "input": "ellipse", "variable": "cylinder", "const": "note"}


@dataclass(frozen=True)
class Node:
    id: str
    title: str  # first line of the label (e.g. the op's name)
    detail: str = ""  # second line (e.g. the op type, or a dtype and shape)
    kind: str = "op"  # op, input, variable or const
    scope: str = ""  # "outer/inner/" groups nodes into nested boxes


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    label: str = ""
    control: bool = False  # a control dependency (drawn dashed), not data


def safe_id(text: str) -> str:
    return "n_" + re.sub(r"\W", "_", text)


def _scopes(nodes: list[Node]) -> dict[str, Any]:
    """A tree {scope name: subtree}, with the scope's nodes under the key None."""
    tree: dict[Any, Any] = {None: []}
    for node in nodes:
        branch = tree
        for part in filter(None, node.scope.split("/")):
            branch = branch.setdefault(part, {None: []})
        branch[None].append(node)
    return tree


def _quote(text: str) -> str:
    # Mermaid labels are HTML: "<unknown>" (a shape of unknown rank) would vanish as a tag
    return text.replace('"', "#quot;").replace("<", "#lt;").replace(">", "#gt;")


def to_mermaid(nodes: list[Node], edges: list[Edge], direction: str = "TD") -> str:
    """A Mermaid flowchart: ``flowchart TD``, nodes in nested subgraphs, then the edges."""
    lines = [f"flowchart {direction}"]

    def emit(tree: dict[Any, Any], indent: str, path: str) -> None:
        for node in tree[None]:
            opening, closing = _MERMAID[node.kind]
            label = _quote(node.title) + (
                f"<br/><small>{_quote(node.detail)}</small>" if node.detail else ""
            )
            lines.append(f"{indent}{node.id}{opening}{label}{closing}")
        for name, subtree in tree.items():
            if name is not None:
                scope = f"{path}{name}/"
                lines.append(f'{indent}subgraph {safe_id("scope/" + scope)}["{_quote(name)}"]')
                emit(subtree, indent + "  ", scope)
                lines.append(f"{indent}end")

    emit(_scopes(nodes), "  ", "")
    for e in edges:
        arrow = "-.->" if e.control else "-->"
        label = f'|"{_quote(e.label)}"|' if e.label else ""
        lines.append(f"  {e.source} {arrow}{label} {e.target}")
    return "\n".join(lines) + "\n"


def to_dot(nodes: list[Node], edges: list[Edge], name: str = "G") -> str:
    """A Graphviz digraph; scopes become clusters. Text only: no Graphviz needed to make it."""
    lines = [f"digraph {safe_id(name)} {{", "  rankdir=TB;", "  node [fontname=Helvetica];"]

    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"')

    def emit(tree: dict[Any, Any], indent: str, path: str) -> None:
        for node in tree[None]:
            label = esc(node.title) + (f"\\n{esc(node.detail)}" if node.detail else "")
            lines.append(f'{indent}{node.id} [label="{label}", shape={_DOT[node.kind]}];')
        for scope_name, subtree in tree.items():
            if scope_name is not None:
                scope = f"{path}{scope_name}/"
                lines.append(f"{indent}subgraph cluster_{safe_id(scope)} {{")
                lines.append(f'{indent}  label="{esc(scope_name)}";')
                emit(subtree, indent + "  ", scope)
                lines.append(f"{indent}}}")

    emit(_scopes(nodes), "  ", "")
    for e in edges:
        attrs = [f'label="{esc(e.label)}"'] if e.label else []
        if e.control:
            attrs.append("style=dashed")
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"  {e.source} -> {e.target}{suffix};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def describe(t: Any) -> str:
    """``float32 (2, 3)``: a tensor's dtype and shape for a label."""
    return f"{t.dtype} {format_shape(t.shape)}"


def tape_diagram(tape: Any) -> tuple[list[Node], list[Edge]]:
    """The nodes and edges of what ``tape`` recorded: one node per op, one per outside input."""
    nodes: list[Node] = []
    edges: list[Edge] = []
    producer: dict[Any, str] = {}  # tensor (by identity, as the tape keys them) -> node id
    reads = {r: v for v, rs in tape._variables.items() for r in rs}
    outside = 0  # inputs from outside the tape: in0, in1, ...
    for i, record in enumerate(map(unpack, tape._entries)):
        node_id = f"op{i}"
        nodes.append(
            Node(node_id, record.op.name, describe(record.outputs[0]) if record.outputs else "")
        )
        for t in record.inputs:
            if t not in producer:
                source, outside = f"in{outside}", outside + 1
                producer[t] = source
                if t in reads:
                    nodes.append(Node(source, reads[t].name, describe(t), "variable"))
                elif t in tape._roots:
                    nodes.append(Node(source, "watched", describe(t), "input"))
                else:
                    nodes.append(Node(source, "constant", describe(t), "const"))
            edges.append(Edge(producer[t], node_id, str(tuple(t.shape))))
        for o in record.outputs:
            producer[o] = node_id
    return nodes, edges


def mermaid_bundle(drawable: Any) -> dict[str, str]:
    """What Jupyter shows for an object with a ``to_mermaid()`` (its ``_repr_mimebundle_``): a
    mermaid fence as ``text/markdown``, which JupyterLab 4.1 and later draw, and the object's
    ``repr`` as ``text/plain`` for the front ends that show only text."""
    return {
        "text/markdown": f"```mermaid\n{drawable.to_mermaid()}```\n",
        "text/plain": repr(drawable),
    }


__all__ = [
    "Edge",
    "Node",
    "describe",
    "mermaid_bundle",
    "safe_id",
    "tape_diagram",
    "to_dot",
    "to_mermaid",
]
