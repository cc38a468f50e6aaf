"""A GraphDef's nodes and variables checked against the op registry before anything is built:
a strict loader's first pass.

A GraphDef is data from a file, so nothing in it is trusted. Before the importer builds a
node or makes a variable, ``check_nodes`` reads the whole def: every node of the graph and of
the library's graphs must have exactly the attributes its op's row declares, each accepted by
its schema (``OpDef.attrs``: a ``transpose_a`` is a bool, a ``Fill``'s value fits its dtype,
a shape's sizes are integers >= 0), and every variable a shape of such sizes and a dtype of
ours, a key with no ``..`` part, and all of them together at most ``MAX_VARIABLE_BYTES``
(``limits``). A tampered file is then an ``InvalidAttrError`` naming the file (when known), the node
and the attribute, and nothing has been added to any graph or allocated.

A reference to a library function or a variable is only checked to exist here (what it
names is built later); the importer checks each node's attributes again once they are
decoded, references included (``checked_attrs``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from eagerflow.graph.export.graph_def import GraphDef, decode_attr
from eagerflow.graph.export.limits import check_bytes, check_name
from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import InvalidArgumentError, InvalidAttrError
from eagerflow.tensor.registry import OPS, OpDef
from eagerflow.tensor.schema import DTypeAttr, Instance, Ints, check_attrs

_SHAPE = Ints(min=0)
_DTYPE = DTypeAttr()


class _Reference:
    """What a function or variable a node refers to stands for in the first pass: its name."""

    def __init__(self, name: str) -> None:
        self.name = name


_REFERENCE = Instance(_Reference, "a reference")


def check_nodes(graph_def: GraphDef, source: str = "GraphDef") -> None:
    """Every variable entry and every node's attributes in ``graph_def`` (see the module
    docs); ``source`` names the file. Malformed nodes themselves (no name, an unknown op) are
    left to the importer, which says what is wrong with them."""
    check_layout(graph_def, source)
    variables = check_variables(graph_def, source)
    library = graph_def.get("library", {})
    functions = library.get("functions", {})
    graphs = [(source, graph_def["node"])] + [
        (f"{source}: graph {name!r}", entry.get("node", []))
        for name, entry in library.get("graphs", {}).items()
        if isinstance(entry, dict)
    ]
    for where, nodes in graphs:
        for node in nodes if isinstance(nodes, list) else []:
            op_def = _op_of(node)
            if op_def is not None and isinstance(node.get("attr", {}), dict):
                _check_node(node, op_def, where, functions, variables)


# The layout of every entry the importer reads: a key and what its value must be. A def that
# breaks it is refused here, naming the entry, rather than failing inside the importer with
# a TypeError or an IndexError. ("names": a list of strings; "pairs": of [string, string].)
_NODE = {"name": "name", "op": "name", "input": "names", "attr": "dict", "device": "name"}
_FUNCTION = {"type": "name", "graph": "name", "inputs": "names or nulls", "outputs": "names",
             "side_effects": "names", "variables": "names", "kept": "names"}  # fmt: skip
_GRAPH = {"type": "name", "outer": "name or null", "node": "list", "captures": "pairs",
          "arguments": "names", "results": "names", "effects": "names", "variables": "names",
          "handles": "pairs", "created": "names"}  # fmt: skip
_VARIABLE = {"name": "name", "node": "name or null", "initializer": "name or null"}


def _fits(value: Any, kind: str) -> bool:
    text = isinstance(value, str)
    if kind == "name":
        return text
    if kind == "name or null":
        return text or value is None
    if kind in ("dict", "list"):
        return isinstance(value, dict if kind == "dict" else list)
    if not isinstance(value, list):
        return False
    if kind == "pairs":
        return all(isinstance(p, list) and len(p) == 2 and all(isinstance(n, str) for n in p)
                   for p in value)  # fmt: skip
    return all(isinstance(n, str) or (n is None and kind == "names or nulls") for n in value)


def _check_layout(entry: Any, layout: dict[str, str], where: str) -> None:
    if not isinstance(entry, dict):
        raise InvalidAttrError(f"{where}: must be a dict, got {type(entry).__name__}")
    for key, kind in layout.items():
        if key in entry and not _fits(entry[key], kind):
            raise InvalidAttrError(f"{where}: {key!r} must be {kind}, got {entry[key]!r:.60}", key)


def check_layout(graph_def: GraphDef, source: str = "GraphDef") -> None:
    """Every node, library function and graph, and variable entry of the def has the layout
    the importer reads (``_NODE``, ``_FUNCTION``, ``_GRAPH``, ``_VARIABLE``)."""
    library = graph_def.get("library", {})
    for name, entry in library.get("functions", {}).items():
        _check_layout(entry, _FUNCTION, f"{source}: function {name!r}")
    graphs = [(source, graph_def["node"])]
    for name, entry in library.get("graphs", {}).items():
        _check_layout(entry, _GRAPH, f"{source}: graph {name!r}")
        graphs.append((f"{source}: graph {name!r}", entry.get("node", [])))
    for where, nodes in graphs:
        for node in nodes:
            named = node.get("name") if isinstance(node, dict) else None
            _check_layout(node, _NODE, f"{where}: node {named!r:.60}")
    for key, entry in graph_def.get("variables", {}).items():
        _check_layout(entry, _VARIABLE, f"{source}: variable {key!r}")


def check_variables(graph_def: GraphDef, source: str = "GraphDef") -> dict[str, Any]:
    """The def's ``variables``, each entry checked (``variable_entry``), all of them together
    within ``MAX_VARIABLE_BYTES``: before any value is read or allocated."""
    variables = graph_def.get("variables", {})
    total = 0
    for key, entry in variables.items():
        shape, dtype = variable_entry(key, entry, source)
        total = check_bytes(f"{source}: variable {key!r}", shape, dtype.np, total)
    return variables


def _op_of(node: Any) -> OpDef | None:
    """The registered op of a node that names one (the importer refuses the others)."""
    op_type = node.get("op") if isinstance(node, dict) else None
    return OPS.get(op_type) if isinstance(op_type, str) else None


def _check_node(
    node: dict[str, Any],
    op_def: OpDef,
    where: str,
    functions: Mapping[str, Any],
    variables: Mapping[str, Any],
) -> None:
    def function(name: Any) -> _Reference:
        if not isinstance(name, str) or name not in functions:
            raise InvalidArgumentError(f"the library has no function {name!r}")
        return _Reference(name)

    def variable(key: Any) -> _Reference:
        if not isinstance(key, str) or key not in variables:
            raise InvalidArgumentError(f"the GraphDef has no variable {key!r} in 'variables'")
        return _Reference(key)

    attrs = {}
    for key, data in node.get("attr", {}).items():
        try:
            attrs[key] = decode_attr(data, function, variable)
        except (InvalidArgumentError, TypeError, ValueError) as e:  # (a dtype not ours, bad base64)
            raise _at_node(InvalidAttrError(f"{op_def.name} attribute {key!r}: {e}", key),
                           where, node) from None  # fmt: skip
    schema = {
        key: _REFERENCE if isinstance(attrs.get(key), _Reference) else expected
        for key, expected in op_def.attrs.items()
    }
    checked_attrs(op_def, attrs, where, node, schema)


def checked_attrs(
    op_def: OpDef,
    attrs: Mapping[str, Any],
    where: str,
    node: Mapping[str, Any],
    schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A node's decoded ``attrs`` checked against its op's row (or ``schema``); the error
    names ``where`` (the file, the graph) and the node."""
    try:
        return check_attrs(op_def.name, op_def.attrs if schema is None else schema, attrs)
    except InvalidAttrError as e:
        raise _at_node(e, where, node) from None


def _at_node(error: InvalidAttrError, where: str, node: Mapping[str, Any]) -> InvalidAttrError:
    return InvalidAttrError(f"{where}: node {node.get('name')!r}: {error}", error.attr)


def variable_entry(key: Any, entry: Any, source: str = "GraphDef") -> tuple[tuple[int, ...], DType]:
    """The shape and dtype of a variable entry of ``variables``, checked: sizes that are
    integers >= 0 (not 2.7, not -1), a dtype of ours."""
    where = f"{source}: variable {key!r}"
    check_name(where, key)  # (a key becomes a member of the values archive)
    if not isinstance(entry, dict) or "shape" not in entry or "dtype" not in entry:
        raise InvalidAttrError(f"{where}: needs a shape and a dtype, got {entry!r:.80}")
    shape, name = entry["shape"], entry["dtype"]
    try:
        sizes = _SHAPE.check(tuple(shape) if isinstance(shape, list) else shape)
    except InvalidAttrError as e:
        raise InvalidAttrError(f"{where}: shape: {e}", "shape") from None
    try:
        dtype = _DTYPE.check(dtypes.as_dtype(name) if isinstance(name, str) else name)
    except (InvalidAttrError, TypeError) as e:
        raise InvalidAttrError(f"{where}: dtype: {e}", "dtype") from None
    return sizes, dtype


__all__ = ["check_nodes", "check_variables", "checked_attrs", "variable_entry"]
