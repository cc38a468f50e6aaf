"""A TensorFlow ``GraphDef`` read as eagerflow's: ``to_eagerflow`` turns the protocol buffer
into eagerflow's GraphDef dict, which ``import_graph_def`` (``graph_def_import.py``) then
checks against the op rows and builds, as it builds any GraphDef.

Reading is strict: every op TensorFlow's graph uses must have a reading rule (else one
``UnknownTfOpError`` lists them all, before anything else is read), every attribute a rule
reads must have the right type (``TfGraphDefError`` naming the node and the attribute), and
the inputs TensorFlow passes where eagerflow keeps attributes (``Reshape``'s shape) must be
``Const`` nodes, as they are in a frozen graph.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eagerflow.graph.export.graph_def import FORMAT, VERSION, GraphDef, encode_attr
from eagerflow.graph.export.tf_graph_def import protos as pb
from eagerflow.graph.export.tf_graph_def.rules import TF_RULES, TfAttrs, TfRule, reading_rules
from eagerflow.tensor.errors import UnknownOpError


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
    found: dict[str, list[str]] = {}
    for node in proto.node:
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


def _node(node: Any, ours: str, rule: TfRule, consts: dict[str, Any]) -> dict[str, Any]:
    """eagerflow's node (a dict of the GraphDef format) for TensorFlow's ``node``."""
    assert rule.read is not None  # (reading_rules holds only rules that read)
    attrs = rule.read(_attrs(node), _constant_inputs(node, rule, consts))
    data = [i for i in node.input if not i.startswith("^")]
    control = [i for i in node.input if i.startswith("^")]
    inputs = [_tensor_name(i) for i in data[: len(data) - rule.consts]] + control
    placed = {"device": node.device} if node.device else {}
    return {"name": node.name, "op": ours, "input": inputs, **placed,
            "attr": {k: encode_attr(v) for k, v in attrs.items()}}  # fmt: skip


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


def to_eagerflow(proto: Any) -> GraphDef:
    """eagerflow's GraphDef (a dict) of TensorFlow's ``GraphDef`` proto (see module docs)."""
    known = reading_rules()
    _unknown_ops(proto, known)
    const_rule = TF_RULES["Const"]
    consts = {}
    for node in proto.node:
        if node.op in const_rule.ops:
            assert const_rule.read is not None
            consts[node.name] = const_rule.read(_attrs(node), [])["value"]
    nodes = [_node(node, *known[node.op], consts) for node in proto.node]
    return {"format": FORMAT, "version": VERSION, "node": _in_order(nodes),
            "variables": {}, "library": {}}  # fmt: skip


__all__ = ["UnknownTfOpError", "to_eagerflow"]
