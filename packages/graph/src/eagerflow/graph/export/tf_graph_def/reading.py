"""A TensorFlow ``GraphDef`` read as eagerflow's: ``to_eagerflow`` turns the protocol buffer
into eagerflow's GraphDef dict, which ``import_graph_def`` (``graph_def_import.py``) then
checks against the op rows and builds, as it builds any GraphDef.

Reading is strict: every op TensorFlow's graph uses must have a reading rule (else one
``UnknownTfOpError`` lists them all, before anything else is read), every attribute a rule
reads must have the right type (``TfGraphDefError`` naming the node and the attribute), and
the inputs TensorFlow passes where eagerflow keeps attributes (``Reshape``'s shape) must be
``Const`` nodes, as they are in a frozen graph. The tensors all attributes declare (in the
graph and in its functions) may hold ``limits.MAX_VARIABLE_BYTES`` together, counted from
their shapes before any is made: a constant whose one value fills its whole shape is a few
bytes in the file, however big.

The FunctionDefs of the library that ``If``, ``While`` and the calls name (``functions.py``)
become graphs of eagerflow's library: each argument a ``Placeholder`` of that name (its shape
from TensorFlow's ``_output_shapes``, when the file has it), each node read by the same rules,
the tensors named ``node:index`` (TensorFlow's ``node:arg:index`` has one output argument
for every op read here, so its index is the output's).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eagerflow.graph.export.graph_def import FORMAT, VERSION, GraphDef, encode_attr
from eagerflow.graph.export.limits import check_bytes
from eagerflow.graph.export.tf_graph_def import protos as pb
from eagerflow.graph.export.tf_graph_def.functions import LibraryRef, output_index
from eagerflow.graph.export.tf_graph_def.protos import TfGraphDefError
from eagerflow.graph.export.tf_graph_def.rules import TF_RULES, TfAttrs, TfRule, reading_rules
from eagerflow.tensor.errors import InvalidAttrError, UnknownOpError


class UnknownTfOpError(UnknownOpError):
    """A TensorFlow GraphDef uses ops eagerflow does not read. ``ops`` maps each such op
    type to the names of its nodes."""

    def __init__(self, ops: dict[str, list[str]]) -> None:
        self.ops = ops
        lines = "\n".join(
            f"  {op}: {len(nodes)} node(s), e.g. {nodes[0]!r}" for op, nodes in sorted(ops.items())
        )
        super().__init__(
            f"the TensorFlow GraphDef uses {len(ops)} op(s) eagerflow cannot read:\n{lines}"
        )


def _unknown_ops(proto: Any, known: dict[str, Any]) -> None:
    """One ``UnknownTfOpError`` for every op no rule reads, in the graph and its library."""
    found: dict[str, list[str]] = {}
    functions = proto.library.function
    for node in [*proto.node, *(n for f in functions for n in f.node_def)]:
        if node.op not in known:
            found.setdefault(node.op, []).append(node.name)
    if found:
        raise UnknownTfOpError(found)


def _attrs(node: Any) -> TfAttrs:
    """The node's attributes as plain values (TensorFlow's private ``_`` ones left out)."""
    values = {}
    for key, attr in node.attr.items():
        if key.startswith("_"):
            continue
        try:
            values[key] = pb.attr_value(attr)
        except (TypeError, ValueError) as e:
            raise TfAttrs(node.name, node.op, {}).error(key, f"cannot be read: {e}") from None
    return TfAttrs(node.name, node.op, values)


def _check_sizes(proto: Any) -> None:
    """Refuse the file if its tensors declare more than ``MAX_VARIABLE_BYTES`` together
    (a shape or dtype that cannot be read is left for ``_attrs`` to refuse)."""
    total = 0
    for node in [*proto.node, *(n for f in proto.library.function for n in f.node_def)]:
        for key, attr in node.attr.items():
            if attr.WhichOneof("value") != "tensor":
                continue
            sizes = tuple(d.size for d in attr.tensor.tensor_shape.dim)
            try:
                dtype = pb.dtype_of(attr.tensor.dtype).np
            except TypeError:
                continue
            try:
                total = check_bytes("the tensors", tuple(max(s, 0) for s in sizes), dtype, total)
            except InvalidAttrError as e:
                raise TfAttrs(node.name, node.op, {}).error(key, f"declares {e}") from None


def _tensor_name(ref: str) -> str:
    """eagerflow's ``node:index`` of TensorFlow's ``node`` or ``node:index``."""
    node, _, index = ref.partition(":")
    return f"{node}:{index or 0}"


def _constant_inputs(node: Any, rule: TfRule, consts: dict[str, Any]) -> list[np.ndarray]:
    """The values of the node's last ``rule.consts`` data inputs, which must be ``Const``s."""
    data = [i for i in node.input if not i.startswith("^")]
    if len(data) < rule.consts:
        raise TfAttrs(node.name, node.op, {}).error("<inputs>", f"needs {rule.consts} or more")
    values = []
    for ref in data[len(data) - rule.consts :]:
        name, _, index = ref.partition(":")
        if name not in consts or index not in ("", "0"):
            raise TfAttrs(node.name, node.op, {}).error(
                f"<input {ref}>", "must be a Const node (eagerflow reads frozen graphs)"
            )
        values.append(consts[name])
    return values


def _node(node: Any, ours: str, rule: TfRule, library: _Library) -> dict[str, Any]:
    """eagerflow's node (a dict of the GraphDef format) for TensorFlow's ``node``."""
    assert rule.read is not None  # (reading_rules holds only rules that read)
    attrs = rule.read(_attrs(node), _constant_inputs(node, rule, library.consts))
    data = [i for i in node.input if not i.startswith("^")]
    control = [i for i in node.input if i.startswith("^")]
    inputs = [_tensor_name(i) for i in data[: len(data) - rule.consts]] + control
    encoded = {k: {"function": library.function(v)} if isinstance(v, LibraryRef)
               else encode_attr(v) for k, v in attrs.items()}  # fmt: skip
    placed = {"device": node.device} if node.device else {}
    return {"name": node.name, "op": ours, "input": inputs, **placed, "attr": encoded}


def _in_order(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nodes with each one's inputs before it (TensorFlow's may come in any order); a
    node is visited once, so a cycle or an input naming no node ends up with an input built
    after it, which the importer reports."""
    by_name = {n["name"]: n for n in nodes}
    seen: set[str] = set()
    order: list[dict[str, Any]] = []
    for root in nodes:
        stack = [(root["name"], False)]
        while stack:
            name, inputs_done = stack.pop()
            if inputs_done:
                order.append(by_name[name])
            elif name in by_name and name not in seen:
                seen.add(name)
                stack.append((name, True))
                stack += [
                    (ref.lstrip("^").partition(":")[0], False) for ref in by_name[name]["input"]
                ]
    return order


class _Library:
    """The FunctionDefs of a GraphDef read as eagerflow's library (``functions`` and
    ``graphs``), each when a node first names it."""

    def __init__(self, proto: Any) -> None:
        self.known = reading_rules()
        self.defs = {f.signature.name: f for f in proto.library.function}
        self.functions: dict[str, dict[str, Any]] = {}
        self.graphs: dict[str, dict[str, Any]] = {}
        self.consts: dict[str, np.ndarray] = {}  # of the node list being read

    def nodes(self, node_defs: Any) -> list[dict[str, Any]]:
        """eagerflow's nodes of TensorFlow's, inputs first."""
        const_rule, consts = TF_RULES["Const"], {}
        for node in node_defs:
            if node.op in const_rule.ops:
                assert const_rule.read is not None
                consts[node.name] = const_rule.read(_attrs(node), [])["value"]
        outer, self.consts = self.consts, consts
        nodes = [_node(node, *self.known[node.op], self) for node in node_defs]
        self.consts = outer
        return _in_order(nodes)

    def function(self, ref: LibraryRef) -> str:
        """The name in eagerflow's library of FunctionDef ``ref.name`` read as ``ref.kind``."""
        key = ref.name if ref.kind == "Subgraph" else f"{ref.name}/call"
        if key not in self.functions:
            self.functions[key] = {}  # (reserved: a function that calls itself is refused later)
            arguments, results = self.graph(ref.name)
            entry = {"type": ref.kind, "graph": ref.name, "inputs": arguments,
                     "outputs": results, "side_effects": [], "jit_compile": False}  # fmt: skip
            if ref.kind == "ConcreteFunction":
                entry |= {"variables": [], "kept": []}
            self.functions[key] = entry
        return key

    def graph(self, name: str) -> tuple[list[str], list[str]]:
        """FunctionDef ``name`` as a graph of eagerflow's library: its arguments and results."""
        if name not in self.defs:
            raise TfGraphDefError(f"the GraphDef's library has no function {name!r}", "library")
        fdef = self.defs[name]
        arguments = [a.name for a in fdef.signature.input_arg]
        if name not in self.graphs:
            self.graphs[name] = {}
            ops = {node.name: node.op for node in fdef.node_def}
            node_defs = [_in_function(node, name, ops) for node in fdef.node_def]
            clash = set(arguments) & {n.name for n in node_defs}
            if clash:
                raise TfGraphDefError(
                    f"function {name!r}: {sorted(clash)} name arguments and nodes", "library"
                )
            placeholders = [_argument(fdef, i) for i in range(len(arguments))]
            self.graphs[name] = {
                "type": "FunctionGraph", "outer": None,
                "node": placeholders + self.nodes(node_defs), "captures": [],
                "arguments": [f"{a}:0" for a in arguments], "results": _results(fdef),
                "effects": [], "variables": [], "handles": [],
            }  # fmt: skip
        return [f"{a}:0" for a in arguments], self.graphs[name]["results"]


def _function_ref(ref: str, name: str, ops: dict[str, str]) -> str:
    """GraphDef's ``node:index`` of a FunctionDef's ``node:arg:index`` or argument ``arg``;
    ``arg`` must be the output argument of the node's op (``OUTPUT_ARG``)."""
    if ref.startswith("^"):
        return ref
    parts = ref.split(":")
    if len(parts) != 3:
        return f"{parts[0]}:0"
    index = int(parts[2]) if parts[2].isdigit() else None
    op = ops.get(parts[0])
    if op is None:  # (naming no node: the importer says so)
        return f"{parts[0]}:{parts[2]}"
    output = None if index is None else output_index(op, parts[1], index)
    if output is None:
        raise TfGraphDefError(
            f"function {name!r}: input {ref!r} names no output of {op} that eagerflow reads",
            "input",
        )
    return f"{parts[0]}:{output}"


def _in_function(node: Any, name: str, ops: dict[str, str]) -> Any:
    """A FunctionDef's node with its inputs named as a GraphDef names them."""
    copy = type(node)()
    copy.CopyFrom(node)
    del copy.input[:]
    copy.input.extend(_function_ref(i, name, ops) for i in node.input)
    return copy


def _results(fdef: Any) -> list[str]:
    """The tensors a FunctionDef returns, by its ``ret`` map (which must name each)."""
    missing = [a.name for a in fdef.signature.output_arg if a.name not in fdef.ret]
    if missing:
        name = fdef.signature.name
        raise TfGraphDefError(f"function {name!r}: ret names no tensor for {missing}", "ret")
    ops = {node.name: node.op for node in fdef.node_def}
    name = fdef.signature.name
    return [_function_ref(fdef.ret[a.name], name, ops) for a in fdef.signature.output_arg]


def _argument(fdef: Any, i: int) -> dict[str, Any]:
    """The Placeholder node of argument ``i`` of a FunctionDef."""
    arg = fdef.signature.input_arg[i]
    shapes = fdef.arg_attr[i].attr["_output_shapes"].list.shape if i in fdef.arg_attr else []
    try:
        shape = pb.shape_of(shapes[0]) if len(shapes) == 1 else None
        attrs = {"dtype": pb.dtype_of(arg.type), "shape": shape}
    except (TypeError, ValueError) as e:
        where = f"function {fdef.signature.name!r}: argument {arg.name!r}"
        raise TfGraphDefError(f"{where} cannot be read: {e}", "input_arg") from None
    return {"name": arg.name, "op": "Placeholder", "input": [],
            "attr": {k: encode_attr(v) for k, v in attrs.items()}}  # fmt: skip


def to_eagerflow(proto: Any) -> GraphDef:
    """eagerflow's GraphDef (a dict) of TensorFlow's ``GraphDef`` proto (see module docs)."""
    _unknown_ops(proto, reading_rules())
    _check_sizes(proto)
    library = _Library(proto)
    nodes = library.nodes(proto.node)
    return {"format": FORMAT, "version": VERSION, "node": nodes, "variables": {},
            "library": {"functions": library.functions, "graphs": library.graphs}}  # fmt: skip


__all__ = ["UnknownTfOpError", "to_eagerflow"]
