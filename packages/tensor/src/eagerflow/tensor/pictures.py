"""Pictures of computations as text: Mermaid (rendered by the tutorial site) and Graphviz DOT.

A picture is a list of ``Node``s (grouped into nested scopes by their ``scope`` path, like
``"layer1/"``) and ``Edge``s. It knows nothing of what it shows: the autodiff package
describes what a GradientTape recorded (``tape_diagram``), the graph package a Graph and a
compiled plan, and all of them are rendered by the same two functions here, at the bottom
of the stack so every layer can draw.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from eagerflow.tensor.errors import format_shape

# How each kind of node looks: (Mermaid opening, closing), Graphviz shape.
_MERMAID = {"op": ('["', '"]'), "input": ('(["', '"])'), "variable": ('[("', '")]'),
            "const": ('>"', '"]')}  # fmt: skip
_DOT = {"op": "box", "input": "ellipse", "variable": "cylinder", "const": "note"}


@dataclass(frozen=True)
class Node:
    """A box of a picture: an op, an input, a variable or a constant."""

    id: str
    title: str  # first line of the label (e.g. the op's name)
    detail: str = ""  # second line (e.g. the op type, or a dtype and shape)
    kind: str = "op"  # op, input, variable or const
    scope: str = ""  # "outer/inner/" groups nodes into nested boxes
    notes: tuple[str, ...] = ()  # more lines (e.g. a value and a gradient)


@dataclass(frozen=True)
class Edge:
    """An arrow of a picture, from one node's ``id`` to another's."""

    source: str
    target: str
    label: str = ""
    control: bool = False  # a control dependency (drawn dashed), not data


def safe_id(text: str) -> str:
    """``text`` as an identifier Mermaid and Graphviz accept (``layer/w:0`` -> ``n_layer_w_0``)."""
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
            label += "".join(f"<br/>{_quote(note)}" for note in node.notes)
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
            label += "".join(f"\\n{esc(note)}" for note in node.notes)
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


def short_number(x: Any) -> str:
    """A number for a label: ``3.0`` not ``3``, four decimals at most (four significant
    digits under 1), scientific notation when very large or small; ints and bools as is."""
    if isinstance(x, (bool, np.bool_, int, np.integer)):
        return str(x)
    if isinstance(x, (complex, np.complexfloating)):
        return f"{x:.4g}"
    if isinstance(x, (float, np.floating)):
        size = abs(float(x))
        if not np.isfinite(size) or size == 0 or 1e-4 <= size < 1e6:
            fractional = bool(size >= 1)  # 1.2346, 123456.0; but 0.0001235
            return np.format_float_positional(x, precision=4, fractional=fractional, trim="0")
        return np.format_float_scientific(x, precision=3, trim="-")
    return str(x.decode() if isinstance(x, bytes) else x)


def short_value(t: Any, shown: int = 3) -> str:
    """A tensor's value for a label: ``3.0`` for a scalar, ``[1.0, 2.0, 3.0, …]`` (flattened)
    for more numbers; the first ``shown`` of them (all of them if one more would be all)."""
    array = np.asarray(t.numpy())
    if array.ndim == 0:
        return short_number(array.item())
    flat = array.reshape(-1)
    cut = flat if flat.size <= shown + 1 else flat[:shown]
    numbers = [short_number(x) for x in cut.tolist()]
    return "[" + ", ".join(numbers + (["…"] if len(cut) < flat.size else [])) + "]"


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
    "short_number",
    "short_value",
    "to_dot",
    "to_mermaid",
]
