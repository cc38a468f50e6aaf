"""An eagerflow trace written as TensorFlow's ``GraphDef`` protocol buffer (``to_proto``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor
from eagerflow.graph.core.walks import needed_in_order
from eagerflow.graph.export.tf_graph_def import protos as pb
from eagerflow.graph.export.tf_graph_def.rules import (
    NO_TF_COUNTERPART,
    TF_RULES,
    NoTfCounterpartError,
    NotTranslated,
    TfNode,
    const_node,
    output_node,
)

# the GraphDef version TensorFlow 2.x writes for graphs like these (TensorFlow reads older ones)
PRODUCER = 1287


def translated(operations: list[Operation]) -> list[tuple[Operation, TfNode]]:
    """Each operation with its TensorFlow node, or a ``NoTfCounterpartError`` listing every
    operation that has none (nothing is written then)."""
    done, refused = [], []
    for operation in operations:
        rule = TF_RULES.get(operation.type)
        try:
            if rule is None:
                raise NotTranslated(NO_TF_COUNTERPART.get(operation.type, "no TensorFlow rule"))
            done.append((operation, rule.write(operation)))
        except NotTranslated as e:  # noted, and the rest tried: every refusal is listed
            refused.append((operation.type, operation.name, str(e)))
    if refused:
        raise NoTfCounterpartError(refused)
    return done


class _Names:
    """Node names used once in the GraphDef: ``hint``, else ``hint_1``, ``hint_2``..."""

    def __init__(self) -> None:
        self.used: set[str] = set()

    def __call__(self, hint: str) -> str:
        candidate, n = hint, 0
        while candidate in self.used:
            n += 1
            candidate = f"{hint}_{n}"
        self.used.add(candidate)
        return candidate


def to_proto(
    graph: Graph,
    arguments: Sequence[SymbolicTensor],
    outputs: Sequence[SymbolicTensor],
    input_names: Sequence[str],
) -> Any:
    """The ``GraphDef`` of what ``outputs`` need in ``graph``: the ``arguments`` (a traced
    function's placeholders) are ``Placeholder`` nodes named ``input_names``, other
    placeholders keep their names, the variables read are ``Const`` nodes of their values
    now, and the outputs are ``Identity`` nodes ``output_0``, ``output_1``..."""
    graph_def = pb.protos().GraphDef()
    graph_def.versions.producer = PRODUCER
    names = _Names()
    for name in input_names:
        names(name)
    renamed = {t.op: name for t, name in zip(arguments, input_names, strict=True)}
    # (every argument is a Placeholder, used or not: TensorFlow feeds them by name)
    targets: list[SymbolicTensor | Operation] = [*outputs, *(t.op for t in arguments)]
    operations = needed_in_order(graph, targets, control=False)
    for operation, node in translated(operations):
        name = renamed.get(operation) or names(operation.name)
        renamed[operation] = name
        inputs = [_ref(t, renamed) for t in operation.inputs]
        for i, value in enumerate(node.consts):
            const = const_node(value)
            inputs.append(_add(graph_def, names(f"{name}/const_{i}"), const, []))
        _add(graph_def, name, node, inputs, operation.device)
    for i, t in enumerate(outputs):
        _add(graph_def, names(f"output_{i}"), output_node(t), [_ref(t, renamed)])
    return graph_def


def _ref(t: SymbolicTensor, renamed: dict[Operation, str]) -> str:
    """TensorFlow's name of a tensor: ``node`` for output 0, ``node:i`` for the others."""
    index = t.op.outputs.index(t)
    return renamed[t.op] if index == 0 else f"{renamed[t.op]}:{index}"


def _add(graph_def: Any, name: str, node: TfNode, inputs: list[str], device: str = "") -> str:
    proto = graph_def.node.add(name=name, op=node.op, input=inputs, device=device)
    for key, value in node.attrs.items():
        proto.attr[key].CopyFrom(pb.attr_proto(value))
    return name


__all__ = ["PRODUCER", "to_proto", "translated"]
