"""TensorFlow's own ``GraphDef`` files, both ways: ``write(f, "model.pb")`` writes a traced
function as a GraphDef that TensorFlow's ``tf.compat.v1.import_graph_def`` loads and runs,
and ``import_graph_def("frozen.pb")`` reads a frozen GraphDef that TensorFlow made into an
eagerflow graph that a ``Session`` runs.

**What a TensorFlow GraphDef is.** eagerflow's ``Graph.as_graph_def()`` is a dict shaped like
TensorFlow's ``GraphDef`` protocol buffer: nodes with a ``name``, an ``op``, ``input``
tensors by name and ``attr`` values. TensorFlow's file is that same shape in protocol
buffer form (binary ``.pb``, or text ``.pbtxt``), and its ops are spelled as TensorFlow
spells them. Most eagerflow ops already have TensorFlow's names (``MatMul``, ``AddV2``,
``Conv2D``), so what changes is mostly the attributes:

- a ``type`` attribute names each dtype the op is generic over: ``T`` (the inputs'),
  ``DstT`` (what ``Cast`` makes), ``Tidx`` (the axes' integer type);
- what eagerflow keeps as an attribute, TensorFlow often takes as an *input*: ``Reshape``'s
  shape, ``Sum``'s axes and ``ConcatV2``'s axis are ``Const`` nodes wired in after the data;
- strides and pool sizes are NHWC quadruples (``[1, 2, 2, 1]``), constants are
  ``TensorProto``s, shapes ``TensorShapeProto``s (-1 for an unknown size).

How each op is written and read is its **rule** in ``TF_RULES`` (``rules.py``): one entry
per op, as the ONNX exporter has one rule per op. An op with no TensorFlow counterpart here
(state, random numbers, gradients) is named in ``NO_TF_COUNTERPART`` with the reason, and
writing a graph that uses one is one ``NoTfCounterpartError`` listing every such node.

**Control flow** is written as TensorFlow 2 writes it: a ``cond`` is a ``StatelessIf``, a
``while_loop`` a ``StatelessWhile`` and a call of a traced function a ``PartitionedCall``,
whose branches, loop condition and body, and called function are ``FunctionDef``s of the
GraphDef's ``library`` (``control_flow.py`` holds the rules, ``functions.py`` writes the
FunctionDefs). Reading, ``If``, ``While`` and ``StatefulPartitionedCall`` are read too, and
each FunctionDef becomes a graph of eagerflow's own library.

**Writing** takes a traced function, or a ``Graph`` and the tensors to write
(``write(graph, "g.pb", outputs=[y])``: the nodes of ``graph.as_graph_def()`` that ``y``
needs). It freezes the function: each variable it reads becomes a ``Const`` of its value
now (as TensorFlow's ``convert_variables_to_constants`` does), its arguments ``Placeholder``
nodes named after its parameters, its outputs ``Identity`` nodes ``output_0``,
``output_1``... So in TensorFlow::

    graph_def = tf.compat.v1.GraphDef.FromString(open("model.pb", "rb").read())
    y, = tf.compat.v1.import_graph_def(graph_def, return_elements=["output_0:0"])

**Reading** checks the whole file before it builds anything: an op that no rule reads is one
``UnknownTfOpError`` listing every such op; an attribute of the wrong type is a
``TfGraphDefError`` naming the node and the attribute; then the nodes, turned into
eagerflow's GraphDef, go through ``import_graph_def``'s own checks against the op rows. A
``BiasAdd`` reads as a broadcasting ``AddV2`` and a ``BatchMatMulV2`` as ``MatMul``.

The protocol buffer classes come from the ``tensorboard`` package (which ships TensorFlow's
``.proto`` files compiled, without TensorFlow): the optional extra ``pip install
"eagerflow-graph[tf-proto]"``, imported only when a function here runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eagerflow.graph.core.files import atomic_write
from eagerflow.graph.core.graph import Graph, SymbolicTensor
from eagerflow.graph.export import graph_def_import
from eagerflow.graph.export.graph_def import GraphDef
from eagerflow.graph.export.tf_graph_def import array_rules as _array_rules  # noqa: F401
from eagerflow.graph.export.tf_graph_def import control_flow as _control_flow  # noqa: F401
from eagerflow.graph.export.tf_graph_def import protos as pb
from eagerflow.graph.export.tf_graph_def import random_rules  # noqa: F401  (registers its rules)
from eagerflow.graph.export.tf_graph_def.protos import TfGraphDefError
from eagerflow.graph.export.tf_graph_def.reading import UnknownTfOpError, to_eagerflow
from eagerflow.graph.export.tf_graph_def.rules import (
    NO_TF_COUNTERPART,
    TF_RULES,
    NoTfCounterpartError,
    TfRule,
)
from eagerflow.graph.export.tf_graph_def.writing import to_proto as _to_proto
from eagerflow.graph.export.traced import concrete_of, input_names_of
from eagerflow.graph.tracing.function import ConcreteFunction, Function

TEXT_SUFFIX = ".pbtxt"


Source = Function | ConcreteFunction | Graph


def to_proto(source: Source, outputs: Sequence[SymbolicTensor] = ()) -> Any:
    """TensorFlow's ``GraphDef`` protocol buffer (see the module docs) of a traced function
    (a ``Function`` with an ``input_signature``, or a ``ConcreteFunction``), or of the nodes
    of a ``Graph`` that ``outputs`` need (its placeholders keep their names)."""
    pb.protos()
    if isinstance(source, Graph):
        if not outputs:
            raise ValueError("writing a Graph needs the outputs to write: to_proto(g, [y])")
        return _to_proto(source, [], list(outputs), [])
    concrete = concrete_of(source)
    names = input_names_of(source, concrete)
    return _to_proto(concrete.graph, concrete.arguments, concrete.outputs, names)


def write(
    source: Source, path: str | os.PathLike[str], outputs: Sequence[SymbolicTensor] = ()
) -> str:
    """Write a traced function, or the nodes of a Graph that ``outputs`` need, as a
    TensorFlow GraphDef to ``path`` (see ``to_proto``): text if it ends in ``.pbtxt``, else
    binary (``.pb``); returns the path. The file is written whole or not at all. Errors:
    ``ImportError`` without the ``tf-proto`` extra, ``NoTfCounterpartError`` listing every
    node TensorFlow has no op for."""
    proto = to_proto(source, outputs)
    target = os.fspath(path)
    if target.endswith(TEXT_SUFFIX):
        from google.protobuf import text_format

        with atomic_write(target, "w") as f:
            f.write(text_format.MessageToString(proto))
    else:
        with atomic_write(target, "wb") as f:
            f.write(proto.SerializeToString(deterministic=True))  # the same bytes every time
    return target


def read(source: str | os.PathLike[str] | bytes | Any) -> GraphDef:
    """eagerflow's GraphDef (a dict) of a TensorFlow GraphDef: a path (``.pbtxt`` is read as
    text), the bytes of a ``.pb``, or a ``GraphDef`` proto. See ``import_graph_def``."""
    graph_pb2 = pb.protos()
    if isinstance(source, bytes):
        proto = _parse_binary(graph_pb2, source)
    elif isinstance(source, str | os.PathLike):
        path = Path(source)
        if path.suffix == TEXT_SUFFIX:
            from google.protobuf import text_format

            try:
                proto = text_format.Parse(path.read_text("utf8"), graph_pb2.GraphDef())
            except text_format.ParseError as e:
                raise TfGraphDefError(f"{path}: not a text GraphDef: {e}") from None
        else:
            proto = _parse_binary(graph_pb2, path.read_bytes())
    else:
        proto = source
    return to_eagerflow(proto)


def _parse_binary(graph_pb2: Any, data: bytes) -> Any:
    from google.protobuf.message import DecodeError

    try:
        return graph_pb2.GraphDef.FromString(data)
    except DecodeError as e:
        raise TfGraphDefError(f"not a binary GraphDef: {e}") from None


def import_graph_def(
    source: str | os.PathLike[str] | bytes | Any,
    input_map: Mapping[str, Any] | None = None,
    return_elements: Sequence[str] | None = None,
    name: str | None = None,
) -> list[Any] | None:
    """Add a TensorFlow GraphDef's nodes to the default graph, as
    ``tf.compat.v1.import_graph_def`` does: ``source`` as ``read`` takes it, and
    ``input_map``, ``return_elements`` (``"dense/Softmax:0"``) and ``name`` as eagerflow's
    own ``import_graph_def`` takes them. Errors: ``ImportError`` without the ``tf-proto``
    extra; ``UnknownTfOpError`` listing every op eagerflow does not read; ``TfGraphDefError``
    (an ``InvalidAttrError``) naming a node and the attribute it cannot read; then those of
    ``import_graph_def``."""
    return graph_def_import.import_graph_def(read(source), input_map, return_elements, name)


__all__ = [
    "NO_TF_COUNTERPART",
    "TF_RULES",
    "NoTfCounterpartError",
    "TfGraphDefError",
    "TfRule",
    "UnknownTfOpError",
    "import_graph_def",
    "read",
    "to_proto",
    "write",
]
