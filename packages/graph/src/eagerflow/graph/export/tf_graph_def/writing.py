"""An eagerflow trace written as TensorFlow's ``GraphDef`` protocol buffer (``to_proto``).

One ``NodeWriter`` writes a list of operations as TensorFlow nodes, either into the
GraphDef's ``node`` list or into the ``node_def`` list of a FunctionDef of its library (the
body of a ``cond`` branch, a loop or a called function, see ``functions.py``). The two differ
only in how a tensor is named: ``node`` or ``node:1`` in a GraphDef, ``node:z:0`` in a
FunctionDef (the node, the op's *output argument*, the index in it), or the argument's own
name for an input of the function.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor
from eagerflow.graph.core.names import UniqueNames
from eagerflow.graph.core.walks import needed_in_order
from eagerflow.graph.export.tf_graph_def import protos as pb
from eagerflow.graph.export.tf_graph_def.functions import FunctionLibrary, output_arg_ref
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


class NodeWriter:
    """Writes operations as TensorFlow nodes through ``add`` (a repeated ``NodeDef`` field's
    ``add``); ``in_function``: tensors are named as a FunctionDef names them. ``arguments``
    maps a function's input tensors to its argument names."""

    def __init__(
        self, add: Callable[..., Any], library: FunctionLibrary, in_function: bool = False
    ) -> None:
        self.add_proto, self.library, self.in_function = add, library, in_function
        self.names = UniqueNames()  # node names used once in the GraphDef or FunctionDef
        self.renamed: dict[Operation, str] = {}
        self.tf_ops: dict[Operation, str] = {}
        self.arguments: dict[SymbolicTensor, str] = {}

    def ref(self, t: SymbolicTensor) -> str:
        """TensorFlow's name of tensor ``t`` here (see the module docs)."""
        if t in self.arguments:
            return self.arguments[t]
        return self.output_ref(self.renamed[t.op], self.tf_ops[t.op], _index(t))

    def output_ref(self, node: str, tf_op: str, index: int) -> str:
        if self.in_function:
            return output_arg_ref(node, tf_op, index)
        return node if index == 0 else f"{node}:{index}"

    def write(self, operations: list[Operation]) -> None:
        """Write the operations (inputs first), each as its rule's node and the ``Const``
        nodes of the rule's constant inputs."""
        for operation, node in translated(operations):
            name = self.renamed.get(operation) or self.names(operation.name)
            self.renamed[operation], self.tf_ops[operation] = name, node.op
            inputs = [self.ref(t) for t in operation.inputs]
            for i, value in enumerate(node.consts):
                const = self.add(self.names(f"{name}/const_{i}"), const_node(value), [])
                inputs.append(self.output_ref(const, "Const", 0))
            self.add(name, node, inputs, operation.device)

    def add(self, name: str, node: TfNode, inputs: list[str], device: str = "") -> str:
        proto = self.add_proto(name=name, op=node.op, input=inputs, device=device)
        for key, value in node.attrs.items():
            proto.attr[key].CopyFrom(pb.attr_proto(self.library.resolve(value)))
        return name


def _index(t: SymbolicTensor) -> int:
    """Which output of its op ``t`` is (by identity: a tensor's ``==`` is elementwise)."""
    return next(i for i, o in enumerate(t.op.outputs) if o is t)


def to_proto(
    graph: Graph,
    arguments: Sequence[SymbolicTensor],
    outputs: Sequence[SymbolicTensor],
    input_names: Sequence[str],
) -> Any:
    """The ``GraphDef`` of what ``outputs`` need in ``graph``: the ``arguments`` (a traced
    function's placeholders) are ``Placeholder`` nodes named ``input_names``, other
    placeholders keep their names, the variables read are ``Const`` nodes of their values
    now, and the outputs are ``Identity`` nodes ``output_0``, ``output_1``... The subgraphs
    of ``If``, ``While`` and ``PartitionedCall`` become FunctionDefs of its ``library``."""
    graph_def = pb.protos().GraphDef()
    graph_def.versions.producer = PRODUCER
    library = FunctionLibrary(graph_def.library, NodeWriter)
    writer = NodeWriter(graph_def.node.add, library)
    for name in input_names:
        writer.names(name)
    writer.renamed = {t.op: name for t, name in zip(arguments, input_names, strict=True)}
    # (every argument is a Placeholder, used or not: TensorFlow feeds them by name)
    targets: list[SymbolicTensor | Operation] = [*outputs, *(t.op for t in arguments)]
    writer.write(needed_in_order(graph, targets, control=False))
    for i, t in enumerate(outputs):
        writer.add(writer.names(f"output_{i}"), output_node(t), [writer.ref(t)])
    return graph_def


__all__ = ["PRODUCER", "NodeWriter", "to_proto", "translated"]
