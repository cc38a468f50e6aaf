"""Export a traced function as an ONNX model: ``export(f, "model.onnx")``.

**What ONNX is.** ONNX (Open Neural Network Exchange) is a file format for dataflow graphs,
shared by many frameworks and runtimes: a model is a protocol buffer holding one ``graph``
of ``node``s, each an operator of a versioned standard set (the *opset*: ``Add``,
``MatMul``, ``ReduceSum``...), wired by tensor *names* rather than by objects. The graph's
``input``s are typed (element type and shape, where a size may be a named symbol such as
``"batch"``), its constants are ``initializer``s, and its ``output``s are names too. A
runtime such as ONNX Runtime, which knows nothing of eagerflow, loads the file and runs it.

That is exactly what a traced ``ConcreteFunction`` already is: placeholders in, a graph of
registered ops, tensors out. Exporting is one more *interpretation* of the graph, next to
running it (``Session``), differentiating it (``gradients``) and compiling it (``compiler``):

- each placeholder of the trace becomes a graph input, its ``None`` sizes named symbols;
- each variable the function reads becomes an initializer holding the variable's current
  value, and its ``ReadVariableOp`` simply *is* that initializer (the model is frozen: an
  ONNX graph has no state);
- every other node is translated by its op's **rule** in ``RULES``, one small function per
  op type: it gets an ``OnnxBuilder`` (which makes ONNX nodes and constants), the eagerflow
  ``Operation`` (for its attributes and static shapes) and the ONNX names of the node's
  inputs, adds the ONNX nodes computing the same thing, and returns the names of its
  outputs. The rules are the one table of this interpretation, as the op registry has one
  row per op and the autodiff package one gradient rule per op::

      RULES["AddV2"]   = lambda b, op, x: b.node("Add", x)
      RULES["Square"]  = lambda b, op, x: b.node("Mul", [x[0], x[0]])
      RULES["MatMul"]  = Transpose what transpose_a/transpose_b ask for, then MatMul
      RULES["Sum"]     = ReduceSum with keepdims, its axes an input (opset >= 13)

  Most rules are one ONNX node; some are a few, where ONNX's operator means something else
  (``FloorMod`` of floats is C's ``fmod`` adjusted to Python's sign rule, ``NotEqual`` is
  ``Not(Equal)``, an integer ``Mean`` truncates as eagerflow's does).
- an op whose inputs are all attributes (``Const``, ``Fill``, a ``Range`` of numbers) is
  computed now, by its own kernel: its value becomes an initializer;
- a nested traced function (``PartitionedCall``) is **inlined**: its graph's nodes are
  translated in place, its placeholders standing for the call's inputs;
- ``cond`` (``If``) becomes ONNX ``If``, whose two branches are subgraphs that use the outer
  graph's tensors by name; ``while_loop`` (``While``) becomes ONNX ``Loop``, whose body runs
  eagerflow's body and then its condition on the new values.

**An example.** The models chapter's classifier, ``Sequential([Dense(4, "relu",
input_shape=(2,)), Dense(3)])`` under ``softmax``, traced with ``TensorSpec((None, 2))`` for
its ``points``, exports as (each ONNX name is the eagerflow node's, then the ONNX op's)::

    graph classify (%points[FLOAT, points_batch x 2])
    initializers (%dense/kernel:0[FLOAT, 2x4], %dense/bias:0[FLOAT, 4], ...) {
      %sequential/dense/MatMul/MatMul:0 = MatMul(%points, %dense/kernel:0)
      %sequential/dense/add/Add:0 = Add(%sequential/dense/MatMul/MatMul:0, %dense/bias:0)
      %sequential/dense/Relu/Relu:0 = Relu(%sequential/dense/add/Add:0)
      ...
      %Softmax/Softmax:0 = Softmax[axis = -1](%sequential/dense_1/add/Add:0)
      %output_0 = Identity(%Softmax/Softmax:0)
      return %output_0
    }

What cannot be translated is refused before anything is written, in one
``UnsupportedOpError`` that lists *every* such node (type and name): ops with state or
effects (``AssignVariableOp``, ``PrintV2``, random ops: an ONNX graph is a pure function)
and ops no rule covers. ``RULES`` is the list of what can be exported, and
``NOT_EXPORTABLE`` says why each other op cannot be.

The ``onnx`` package is an optional extra (``pip install "eagerflow-graph[onnx]"``),
imported only when ``export`` runs: ``import eagerflow.graph`` never imports it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from eagerflow.graph.core.files import atomic_write
from eagerflow.graph.core.graph import SymbolicTensor

# each rule module fills RULES when imported
from eagerflow.graph.export.onnx import array_rules, control_flow_rules, math_rules  # noqa: F401
from eagerflow.graph.export.onnx.builder import (
    MIN_OPSET,
    NOT_EXPORTABLE,
    RULES,
    OnnxBuilder,
    Rule,
    UnsupportedOpError,
    rule,
    unsupported,
)
from eagerflow.graph.export.traced import concrete_of, input_names_of
from eagerflow.graph.tracing.function import ConcreteFunction, Function

if TYPE_CHECKING:
    import onnx


# --- export --------------------------------------------------------------------------------------
def _import_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ImportError(
            'exporting to ONNX needs the onnx package: pip install "eagerflow-graph[onnx]"'
        ) from None
    return onnx


def to_model(function: Function | ConcreteFunction, opset: int = 17) -> onnx.ModelProto:
    """The ONNX ``ModelProto`` of a traced function (see the module docs), checked by
    ``onnx.checker.check_model``; ``export`` writes it to a file."""
    if type(opset) is not int:  # "17" or 17.0: not compared, not truncated
        raise TypeError(f"opset must be an int (the ONNX operator set version), got "
                        f"{type(opset).__name__} {opset!r:.40}")  # fmt: skip
    onnx = _import_onnx()
    if not MIN_OPSET <= opset <= onnx.defs.onnx_opset_version():
        raise ValueError(
            f"opset must be between {MIN_OPSET} and {onnx.defs.onnx_opset_version()} (the "
            f"newest this onnx package knows), got {opset}"
        )
    concrete = concrete_of(function)
    input_names = input_names_of(function, concrete)
    found: list[tuple[str, str, str]] = []
    unsupported([concrete], found, set())
    if found:  # ops with no rule at all: refused before anything is built
        raise UnsupportedOpError(found)
    b = OnnxBuilder(onnx, opset)
    helper = onnx.helper
    env: dict[SymbolicTensor, str] = {}
    graph_inputs = []
    for t, hint in zip(concrete.arguments, input_names, strict=True):
        name = b.name(hint)
        env[t] = name
        shape = None if t.shape is None else [
            f"{name}_batch" if d is None and i == 0 else f"{name}_d{i}" if d is None else d
            for i, d in enumerate(t.shape)
        ]  # fmt: skip
        graph_inputs.append(helper.make_tensor_value_info(name, b.elem_type(t.dtype), shape))
    results = b.emit(concrete.graph, env, concrete.outputs)
    if b.refused:  # nodes whose rule refused them (an unknown rank, a Session's variable...)
        raise UnsupportedOpError(b.refused)
    graph_outputs = []
    for i, (t, result) in enumerate(zip(concrete.outputs, results, strict=True)):
        name = b.name(f"output_{i}")
        b.nodes.append(helper.make_node("Identity", [result], [name], name=b.name("output")))
        graph_outputs.append(helper.make_tensor_value_info(name, b.elem_type(t.dtype), t.shape))
    title = getattr(function, "__name__", None) if isinstance(function, Function) else None
    graph = helper.make_graph(
        b.nodes, title or "eagerflow_function", graph_inputs, graph_outputs, b.initializers
    )
    opsets = [helper.make_opsetid("", opset)]
    model = helper.make_model(
        graph, opset_imports=opsets, producer_name="eagerflow",
        ir_version=helper.find_min_ir_version_for(opsets),
    )  # fmt: skip
    onnx.checker.check_model(model)
    return model


def export(
    function: Function | ConcreteFunction, path: str | os.PathLike[str], opset: int = 17
) -> str:
    """Write ``function`` as an ONNX model to ``path``; returns the path.

    ``function`` is a ``Function`` with an ``input_signature`` (its one trace is exported)
    or a ``ConcreteFunction`` (``f.get_concrete_function(TensorSpec((None, 4)))``). Its
    inputs are the model's inputs, named after the function's parameters (or a TensorSpec's
    ``name``; a ConcreteFunction's are its placeholders' names), with each ``None`` size a
    symbol (``x_batch`` for the first axis of ``x``, ``x_d1`` for the second...); its
    outputs are ``output_0``, ``output_1``... in the order the function returns them (its
    nest flattened); the variables it reads are frozen at their current values. ``opset`` is
    the ONNX operator set version (13 or later).

    Errors: ``ImportError`` without the onnx package (``pip install
    "eagerflow-graph[onnx]"``); ``UnsupportedOpError`` listing every node that has no ONNX
    translation; ``ValueError`` for a Function without an input_signature or a bad opset.
    The file is written whole or not at all (a temporary file, then ``os.replace``)."""
    model = to_model(function, opset)
    target = os.fspath(path)
    with atomic_write(target, "wb") as f:
        f.write(model.SerializeToString())
    return target


__all__ = [
    "MIN_OPSET",
    "NOT_EXPORTABLE",
    "RULES",
    "OnnxBuilder",
    "Rule",
    "UnsupportedOpError",
    "export",
    "rule",
    "to_model",
]
