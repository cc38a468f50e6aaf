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
and ops no rule covers. ``RULES`` is the list of what can be exported.

The ``onnx`` package is an optional extra (``pip install "eagerflow-graph[onnx]"``),
imported only when ``export`` runs: ``import eagerflow.graph`` never imports it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.graph.core.files import atomic_write
from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor
from eagerflow.graph.core.subgraphs import Subgraph
from eagerflow.graph.tracing.function import ConcreteFunction, Function
from eagerflow.graph.tracing.tensor_spec import TensorSpec
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import EagerflowError
from eagerflow.tensor.rules import normalize_axis

if TYPE_CHECKING:
    import onnx

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
MIN_OPSET = 13  # axes as inputs (ReduceSum, Squeeze, Unsqueeze), Softmax over one axis

Rule = Callable[["OnnxBuilder", Operation, list[str]], list[str]]


class UnsupportedOpError(EagerflowError, NotImplementedError):
    """The graph has nodes with no ONNX translation. ``ops`` lists every one of them as
    ``(op type, node name, reason)``."""

    def __init__(self, ops: Sequence[tuple[str, str, str]]) -> None:
        self.ops = list(ops)
        lines = "\n".join(f"  {t} '{name}': {why}" for t, name, why in self.ops)
        super().__init__(
            f"cannot export to ONNX: {len(self.ops)} node(s) have no ONNX translation\n{lines}"
        )


class _Refused(Exception):
    """Raised by a rule for a node it cannot translate (the reason is the message)."""


# --- the builder ---------------------------------------------------------------------------------
class OnnxBuilder:
    """What a rule builds with: ONNX nodes appended to the graph being written (a subgraph's
    own list while a branch or loop body is written), constants as initializers of the main
    graph (visible in every subgraph), and names that are unique in the whole model."""

    def __init__(self, onnx_module: Any, opset: int) -> None:
        self.onnx = onnx_module
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.used: set[str] = set()
        self.values: dict[int, str] = {}  # id(variable) -> its initializer's name
        self.refused: list[tuple[str, str, str]] = []  # nodes a rule could not translate
        self.current = ""  # the name of the eagerflow node being translated

    def name(self, hint: str) -> str:
        """``hint``, or ``hint_1``, ``hint_2``... if it is taken: a name used once."""
        candidate, n = hint, 0
        while candidate in self.used:
            n += 1
            candidate = f"{hint}_{n}"
        self.used.add(candidate)
        return candidate

    def node(
        self, op_type: str, inputs: Sequence[str], outputs: int = 1, **attrs: Any
    ) -> list[str]:
        """Add one ONNX node; the names of its ``outputs`` new tensors. The node is named
        after the eagerflow node it translates (``dense/MatMul/Transpose``), its outputs
        after the node (``dense/MatMul/Transpose:0``), so a runtime's error or a picture of
        the model (Netron) points back to the trace."""
        node_name = self.name(f"{self.current}/{op_type}" if self.current else op_type)
        names = [self.name(f"{node_name}:{i}") for i in range(outputs)]
        helper = self.onnx.helper
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=node_name, **attrs))
        return names

    def one(self, op_type: str, inputs: Sequence[str], **attrs: Any) -> str:
        """``node`` of one output: its name."""
        return self.node(op_type, inputs, 1, **attrs)[0]

    def const(self, value: Any, hint: str = "const", dtype: Any = None, scoped: bool = True) -> str:
        """An initializer holding ``value`` (made a NumPy array of ``dtype``), named after
        the node being translated unless not ``scoped``."""
        array = np.asarray(value, dtype=dtype)
        name = self.name(f"{self.current}/{hint}" if scoped and self.current else hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name))
        return name

    def ints(self, values: Sequence[int], hint: str = "ints") -> str:
        """A 1-d int64 initializer: the shapes, axes and sizes that ONNX takes as inputs."""
        return self.const(np.array(list(values), np.int64).reshape(-1), hint)

    def elem_type(self, dtype: DType) -> int:
        """ONNX's ``TensorProto`` element type for an eagerflow dtype."""
        return int(self.onnx.helper.np_dtype_to_tensor_dtype(dtype.np))

    def variable(self, variable: Variable) -> str:
        """The initializer holding the variable's current value (one per variable)."""
        found = self.values.get(id(variable))
        if found is None:
            if not variable.holds_value:
                raise _Refused(
                    f"variable {variable.name} belongs to a Session's graph, where each "
                    "Session holds its own value: export a function of eager variables"
                )
            found = self.const(np.asarray(variable.numpy()), variable.name, scoped=False)
            self.values[id(variable)] = found
        return found

    # --- translating graphs ---
    def emit(
        self, graph: Graph, env: dict[SymbolicTensor, str], targets: Sequence[SymbolicTensor]
    ) -> list[str]:
        """Translate the nodes of ``graph`` that ``targets`` need, in graph order, into the
        current node list; ``env`` maps the tensors already known (inputs, the outer scope)
        to ONNX names and is extended. Returns the targets' names."""
        needed: set[Operation] = set()
        stack = [t.op for t in targets if t not in env]
        while stack:
            operation = stack.pop()
            if operation in needed:
                continue
            needed.add(operation)
            stack.extend(t.op for t in operation.inputs if t not in env)
        for operation in graph.get_operations():
            if operation not in needed or all(t in env for t in operation.outputs):
                continue
            inputs = [env[t] for t in operation.inputs]
            rule = RULES.get(operation.type)
            try:
                if rule is None:  # (listed by the check before export already)
                    raise _Refused(_REFUSED.get(operation.type, "no ONNX rule for this op"))
                # (inside a branch, loop or inlined call: prefixed by that node's name)
                outer = self.current
                self.current = f"{outer}/{operation.name}" if outer else operation.name
                try:
                    names = rule(self, operation, inputs)
                finally:
                    self.current = outer
            except _Refused as e:  # noted, and the rest translated: every refusal is listed
                self.refused.append((operation.type, operation.name, str(e)))
                names = [self.name("refused") for _ in operation.outputs]
            for tensor, name in zip(operation.outputs, names, strict=True):
                env[tensor] = name
        return [env[t] for t in targets]

    def subgraph(
        self,
        graph: Graph,
        env: dict[SymbolicTensor, str],
        targets: Sequence[SymbolicTensor],
        name: str,
        inputs: Sequence[onnx.ValueInfoProto] = (),
        extra: Callable[[], list[str]] | None = None,
    ) -> onnx.GraphProto:
        """An ONNX graph (a branch of ``If``, the body of ``Loop``) computing ``targets``;
        ``extra`` adds more outputs in front (the loop's condition)."""
        outer, self.nodes = self.nodes, []
        try:
            results = self.emit(graph, env, targets)
            first = extra() if extra is not None else []
            outputs = [self.one("Identity", [r]) for r in [*first, *results]]
            nodes = self.nodes
        finally:
            self.nodes = outer
        helper = self.onnx.helper
        dtypes = [self.onnx.TensorProto.BOOL] * len(first) + [
            self.elem_type(t.dtype) for t in targets
        ]
        infos = [
            helper.make_tensor_value_info(o, d, None) for o, d in zip(outputs, dtypes, strict=True)
        ]
        return helper.make_graph(nodes, self.name(name), list(inputs), infos)


# --- the rules -----------------------------------------------------------------------------------
RULES: dict[str, Rule] = {}


def _simple(onnx_type: str, **attrs: Any) -> Rule:
    """The rule of an op that is one ONNX node of the same inputs."""

    def translate(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
        return b.node(onnx_type, x, **attrs)

    translate.__doc__ = f"One ``{onnx_type}`` node."
    return translate


for _ours, _theirs in {
    "AddV2": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div", "Pow": "Pow",
    "Maximum": "Max", "Minimum": "Min", "Less": "Less", "LessEqual": "LessOrEqual",
    "Greater": "Greater", "GreaterEqual": "GreaterOrEqual", "Equal": "Equal",
    "LogicalAnd": "And", "LogicalOr": "Or", "LogicalNot": "Not", "SelectV2": "Where",
    "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt",
    "Neg": "Neg", "Abs": "Abs", "Sign": "Sign", "Softplus": "Softplus", "Elu": "Elu",
    "Identity": "Identity", "StopGradient": "Identity",
}.items():  # fmt: skip
    RULES[_ours] = _simple(_theirs)


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Decorator: the function is the rule of the op types ``names`` (as
    ``register_gradient`` adds a gradient rule; an op of your own can get one the same way).
    A rule takes the builder, the ``Operation`` and its inputs' ONNX names, and returns the
    ONNX names of the op's outputs; it raises nothing but what the builder raises."""

    def register(function: Rule) -> Rule:
        for name in names:
            RULES[name] = function
        return function

    return register


def _rank(op: Operation, i: int = 0) -> int:
    shape = op.inputs[i].shape
    if shape is None:
        raise _Refused(f"input {i} has an unknown rank; ONNX needs it here")
    return len(shape)


def _zero_like(b: OnnxBuilder, dtype: DType, value: Any = 0) -> str:
    return b.const(np.asarray(value, dtype.np), "scalar")


@rule("NotEqual")
def _not_equal(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """ONNX has no NotEqual: ``Not(Equal)``."""
    return b.node("Not", [b.one("Equal", x)])


@rule("Square")
def _square(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """x²: ``Mul(x, x)``."""
    return b.node("Mul", [x[0], x[0]])


@rule("Relu")
def _relu(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Relu``; for integers, ``Max(x, 0)`` (runtimes implement Relu for floats)."""
    dtype = op.inputs[0].dtype
    if dtype.is_floating:
        return b.node("Relu", x)
    return b.node("Max", [x[0], _zero_like(b, dtype)])


@rule("ReluGrad")
def _relu_grad(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """gradients · (outputs > 0)."""
    dtype = op.inputs[0].dtype
    positive = b.one("Greater", [x[1], _zero_like(b, dtype)])
    return b.node("Mul", [x[0], b.one("Cast", [positive], to=b.elem_type(dtype))])


@rule("LeakyRelu")
def _leaky_relu(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``LeakyRelu`` with its ``alpha``."""
    return b.node("LeakyRelu", x, alpha=float(op.attrs["alpha"]))


@rule("FloorMod", "FloorDiv")
def _floor_div_mod(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """Python's ``%`` and ``//``. Integers: ``Mod(fmod=0)`` takes the divisor's sign, as
    Python does, and (x - x % y) / y divides exactly. Floats: NumPy's own recipe, from C's
    ``fmod`` (exact): the remainder moves by y when its sign differs from y's, and the
    quotient (x - fmod) / y then rounds to the nearest integer below."""
    dtype = op.inputs[0].dtype
    a, y = x
    if not dtype.is_floating:
        mod = b.one("Mod", x, fmod=0)
        return [mod] if op.type == "FloorMod" else b.node("Div", [b.one("Sub", [a, mod]), y])
    zero = _zero_like(b, dtype)
    fmod = b.one("Mod", x, fmod=1)
    signs_differ = b.one("Xor", [b.one("Less", [y, zero]), b.one("Less", [fmod, zero])])
    adjust = b.one("And", [b.one("Not", [b.one("Equal", [fmod, zero])]), signs_differ])
    if op.type == "FloorMod":
        return b.node("Where", [adjust, b.one("Add", [fmod, y]), fmod])
    one, half = _zero_like(b, dtype, 1), _zero_like(b, dtype, 0.5)
    div = b.one("Div", [b.one("Sub", [a, fmod]), y])
    div = b.one("Where", [adjust, b.one("Sub", [div, one]), div])
    floor = b.one("Floor", [div])
    up = b.one("Greater", [b.one("Sub", [div, floor]), half])
    return b.node("Where", [up, b.one("Add", [floor, one]), floor])


@rule("Cast")
def _cast(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Cast`` to the ``TensorProto`` type of the dtype."""
    return b.node("Cast", x, to=b.elem_type(op.attrs["dtype"]))


@rule("MatMul")
def _matmul(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``MatMul``, after a ``Transpose`` of the last two axes of each input whose
    ``transpose_a``/``transpose_b`` is set (ONNX's MatMul has no such flags)."""
    a, c = x
    if op.attrs["transpose_a"]:
        a = b.one("Transpose", [a], perm=_swap_last(_rank(op, 0)))
    if op.attrs["transpose_b"]:
        c = b.one("Transpose", [c], perm=_swap_last(_rank(op, 1)))
    return b.node("MatMul", [a, c])


def _swap_last(rank: int) -> list[int]:
    return [*range(rank - 2), rank - 1, rank - 2]


# ONNX's convolution and pools take NCHW, eagerflow's (TensorFlow's) NHWC: a Transpose each way
_TO_NCHW, _TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def _spatial_pads(op: Operation, kernel: Sequence[int], dilations: Sequence[int]) -> list[int]:
    """ONNX's explicit ``pads`` [top, left, bottom, right] for TensorFlow's padding: SAME's
    arithmetic needs the input's height and width, so they must be known."""
    if op.attrs["padding"] == "VALID":
        return [0, 0, 0, 0]
    shape = op.inputs[0].shape
    if shape is None or len(shape) != 4 or shape[1] is None or shape[2] is None:
        raise _Refused("SAME padding needs the input's height and width known; ONNX pads are fixed")
    before, after = [], []
    for size, k, s, d in zip(shape[1:3], kernel, op.attrs["strides"], dilations, strict=True):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        before.append(total // 2)
        after.append(total - total // 2)
    return [*before, *after]


@rule("Conv2D")
def _conv2d(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Conv`` between Transposes: NHWC to NCHW, filters [kh, kw, in, out] to
    [out, in, kh, kw], and back; SAME padding as explicit (possibly uneven) ``pads``."""
    filters = op.inputs[1].shape
    if filters is None or filters[0] is None or filters[1] is None:
        raise _Refused("the filters' kernel size must be known")
    kernel = [filters[0], filters[1]]
    dilations = list(op.attrs["dilations"])
    image = b.one("Transpose", [x[0]], perm=_TO_NCHW)
    weights = b.one("Transpose", [x[1]], perm=[3, 2, 0, 1])
    conv = b.one("Conv", [image, weights], kernel_shape=kernel, strides=list(op.attrs["strides"]),
                 dilations=dilations, pads=_spatial_pads(op, kernel, dilations))  # fmt: skip
    return b.node("Transpose", [conv], perm=_TO_NHWC)


@rule("MaxPool", "AvgPool")
def _pool(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``MaxPool`` or ``AveragePool`` between Transposes (NHWC to NCHW and back). Both skip
    padded cells, as TensorFlow does (``AveragePool``'s ``count_include_pad`` is 0)."""
    kernel = list(op.attrs["ksize"])
    onnx_type = "MaxPool" if op.type == "MaxPool" else "AveragePool"
    image = b.one("Transpose", [x[0]], perm=_TO_NCHW)
    pooled = b.one(onnx_type, [image], kernel_shape=kernel, strides=list(op.attrs["strides"]),
                   pads=_spatial_pads(op, kernel, [1, 1]))  # fmt: skip
    return b.node("Transpose", [pooled], perm=_TO_NHWC)


@rule("Sum", "Mean", "Max", "Min", "Prod")
def _reduce(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Reduce<Op>`` with ``keepdims``; the axes (none: all of them) are an input of
    ReduceSum from opset 13 and of the others from opset 18. An integer ``Mean`` is
    ReduceSum divided by the count, truncated toward zero, as eagerflow's kernel does."""
    onnx_type = {"Sum": "ReduceSum", "Mean": "ReduceMean", "Max": "ReduceMax",
                 "Min": "ReduceMin", "Prod": "ReduceProd"}[op.type]  # fmt: skip
    keepdims = int(bool(op.attrs["keepdims"]))
    axis = op.attrs["axis"]
    axes = None if axis is None else [axis] if isinstance(axis, int) else list(axis)
    dtype = op.inputs[0].dtype
    if op.type == "Mean" and not dtype.is_floating:
        total = _reduce_node(b, "ReduceSum", x[0], axes, keepdims)
        count = b.one("Div", [b.one("Size", x), b.one("Size", [total])])
        return b.node("Div", [total, b.one("Cast", [count], to=b.elem_type(dtype))])
    return [_reduce_node(b, onnx_type, x[0], axes, keepdims)]


def _reduce_node(
    b: OnnxBuilder, onnx_type: str, x: str, axes: list[int] | None, keepdims: int
) -> str:
    if axes is not None and not axes:  # reduce over no axis: the tensor itself
        return b.one("Identity", [x])
    if axes is None:
        return b.one(onnx_type, [x], keepdims=keepdims)
    if onnx_type == "ReduceSum" or b.opset >= 18:
        return b.one(onnx_type, [x, b.ints(axes, "axes")], keepdims=keepdims)
    return b.one(onnx_type, [x], axes=axes, keepdims=keepdims)


@rule("ArgMax", "ArgMin")
def _arg(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``ArgMax``/``ArgMin`` (the first index on ties), int64, then cast to
    ``output_type``."""
    found = b.one(op.type, x, axis=int(op.attrs["axis"]), keepdims=0, select_last_index=0)
    return b.node("Cast", [found], to=b.elem_type(op.attrs["output_type"]))


@rule("Softmax", "LogSoftmax")
def _softmax(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Softmax``/``LogSoftmax`` along ``axis`` (one axis, from opset 13)."""
    return b.node(op.type, x, axis=int(op.attrs["axis"]))


@rule("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """loss = -LogSoftmax(z)[label], by ``GatherElements`` along the last axis; the second
    output (the loss's gradient) is Softmax(z) - onehot(label), the one-hot an ``Equal`` of
    the labels with ``Range(0, classes)``."""
    logits, labels = x
    dtype = op.inputs[0].dtype
    index = b.one("Unsqueeze", [labels, b.ints([-1], "axes")])
    log_p = b.one("LogSoftmax", [logits], axis=-1)
    picked = b.one("GatherElements", [log_p, index], axis=-1)
    loss = b.one("Neg", [b.one("Squeeze", [picked, b.ints([-1], "axes")])])
    label_type = op.inputs[1].dtype
    classes = b.one("Gather", [b.one("Shape", [logits]), b.const(-1, "last", np.int64)])
    classes = b.one("Cast", [classes], to=b.elem_type(label_type))
    zero, one = _zero_like(b, label_type), _zero_like(b, label_type, 1)
    hot = b.one("Equal", [index, b.one("Range", [zero, classes, one])])
    hot = b.one("Cast", [hot], to=b.elem_type(dtype))
    return [loss, b.one("Sub", [b.one("Softmax", [logits], axis=-1), hot])]


@rule("Reshape")
def _reshape(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Reshape`` to the shape (an input); ``allowzero=1`` when it has a 0, which ONNX
    would otherwise read as "copy that dimension"."""
    shape = list(op.attrs["shape"])
    if 0 in shape:
        return b.node("Reshape", [x[0], b.ints(shape, "shape")], allowzero=1)
    return b.node("Reshape", [x[0], b.ints(shape, "shape")])


@rule("Transpose")
def _transpose(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Transpose`` with ``perm``."""
    return b.node("Transpose", x, perm=list(op.attrs["perm"]))


@rule("ExpandDims")
def _expand_dims(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Unsqueeze`` (a negative axis counts from the end of the output, in both)."""
    return b.node("Unsqueeze", [x[0], b.ints([op.attrs["axis"]], "axes")])


@rule("Squeeze")
def _squeeze(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Squeeze`` of the given axes, or of every size-1 axis."""
    if op.attrs["axis"] is None:
        return b.node("Squeeze", x)
    if not op.attrs["axis"]:  # no axis listed: nothing to drop (ONNX would drop them all)
        return b.node("Identity", x)
    return b.node("Squeeze", [x[0], b.ints(op.attrs["axis"], "axes")])


@rule("BroadcastTo")
def _broadcast_to(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Expand`` to the shape."""
    return b.node("Expand", [x[0], b.ints(op.attrs["shape"], "shape")])


@rule("Tile")
def _tile(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Tile`` by ``multiples``."""
    return b.node("Tile", [x[0], b.ints(op.attrs["multiples"], "repeats")])


@rule("ConcatV2")
def _concat(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Concat`` along ``axis``."""
    return b.node("Concat", x, axis=int(op.attrs["axis"]))


@rule("Pack")
def _pack(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``stack``: each input ``Unsqueeze``d at ``axis``, then ``Concat``."""
    axes = b.ints([op.attrs["axis"]], "axes")
    return b.node("Concat", [b.one("Unsqueeze", [t, axes]) for t in x], axis=op.attrs["axis"])


@rule("SplitV")
def _split(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Split`` into pieces of the given sizes (an input)."""
    sizes = op.attrs["sizes"]
    return b.node("Split", [x[0], b.ints(sizes, "split")], len(sizes), axis=op.attrs["axis"])


@rule("GatherV2")
def _gather(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Gather`` along ``axis``."""
    return b.node("Gather", x, axis=int(op.attrs["axis"]))


@rule("OneHot")
def _one_hot(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """indices == arange(depth) along the new axis, then ``Where(on, off)``: an index out of
    range is all ``off_value``, as in eagerflow (ONNX's own OneHot counts negative indices
    from the end, and runtimes implement few of its type combinations)."""
    rank = _rank(op) + 1
    axis = normalize_axis(op.attrs["axis"], rank)
    depth = op.attrs["depth"]
    arange = np.arange(depth, dtype=op.inputs[0].dtype.np)
    arange = arange.reshape([depth if i == axis else 1 for i in range(rank)])
    index = b.one("Unsqueeze", [x[0], b.ints([axis], "axes")])
    hot = b.one("Equal", [index, b.const(arange, "arange")])
    np_type = op.attrs["dtype"].np
    on = b.const(np.asarray(op.attrs["on_value"], np_type), "on_value")
    off = b.const(np.asarray(op.attrs["off_value"], np_type), "off_value")
    return b.node("Where", [hot, on, off])


@rule("ZerosLike", "OnesLike")
def _fill_like(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``ConstantOfShape`` of the input's ``Shape``."""
    value = np.full([1], 1 if op.type == "OnesLike" else 0, op.inputs[0].dtype.np)
    tensor = b.onnx.numpy_helper.from_array(value, "value")
    return b.node("ConstantOfShape", [b.one("Shape", x)], value=tensor)


@rule("Size")
def _size(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``Size`` (int64), cast to the op's dtype."""
    return b.node("Cast", [b.one("Size", x)], to=b.elem_type(op.attrs["dtype"]))


@rule("Where")
def _where_coordinates(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """The coordinates of the True elements: ``NonZero`` gives them one row per axis,
    ``Transpose`` one row per element."""
    return b.node("Transpose", [b.one("NonZero", x)], perm=[1, 0])


@rule("Range")
def _range(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """A range of numbers is computed now (see ``_computed``); of tensors: ``Range``, which
    counts max(0, ceil((limit - start) / delta)) steps, as eagerflow does."""
    if not x:
        return _computed(b, op, x)
    return b.node("Range", x)


@rule("Const", "Fill", "LinSpace")
def _computed(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """An op of attributes alone, computed now by its own kernel: an initializer."""
    value = op.op_def.kernel(**op.attrs)
    return [b.const(np.asarray(value, op.outputs[0].dtype.np), b.current, scoped=False)]


@rule("ReadVariableOp")
def _read_variable(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """The variable's initializer: its value now (the model is frozen)."""
    return [b.variable(op.attrs["variable"])]


@rule("CustomGradient")
def _custom_gradient(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """Its outputs are its last inputs (the inputs before them are only for the gradient)."""
    return x[op.attrs["num_inputs"] :]


@rule("StridedSlice")
def _strided_slice(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``x[key]`` for a basic index: ``Slice`` over the axes that slices and ints index (an
    int ``k`` is the slice ``k:k+1``), ``Squeeze`` of the int ones, ``Unsqueeze`` where the
    key has ``None``. A known dimension gets Python's exact bounds (``slice.indices``)."""
    shape = op.inputs[0].shape
    if shape is None:
        raise _Refused("the input's rank is unknown, so '...' cannot be placed")
    key = list(op.attrs["key"])
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if Ellipsis not in key:
        key.append(Ellipsis)
    where = key.index(Ellipsis)
    key[where : where + 1] = [slice(None)] * (len(shape) - consumed)
    bounds: list[tuple[int, int, int, int]] = []  # (start, end, axis, step) per sliced axis
    squeeze: list[int] = []
    unsqueeze: list[int] = []
    axis = position = 0  # of the input, of the output
    for k in key:
        if k is None:
            unsqueeze.append(position)
            position += 1
            continue
        dim = shape[axis]
        if isinstance(k, slice):
            position += 1
            if k != slice(None):
                start, stop, step = _slice_bounds(k, dim)
                bounds.append((start, stop, axis, step))
        else:
            bounds.append((k, INT64_MAX if k == -1 else k + 1, axis, 1))
            squeeze.append(axis)
        axis += 1
    out = x[0]
    if bounds:
        hints = ("starts", "ends", "axes", "steps")
        columns = zip(*bounds, strict=True)  # the starts, the ends, the axes, the steps
        names = [b.ints(c, hint) for c, hint in zip(columns, hints, strict=True)]
        out = b.one("Slice", [out, *names])
    if squeeze:
        out = b.one("Squeeze", [out, b.ints(squeeze, "axes")])
    if unsqueeze:
        out = b.one("Unsqueeze", [out, b.ints(unsqueeze, "axes")])
    if out == x[0]:
        out = b.one("Identity", [out])
    return [out]


def _slice_bounds(k: slice, dim: int | None) -> tuple[int, int, int]:
    """ONNX Slice's start, end, step for the Python slice ``k`` over a dimension of size
    ``dim`` (None: unknown; ONNX then clamps, as Python does within range)."""
    step = 1 if k.step is None else k.step
    if dim is not None:
        start, stop, step = k.indices(dim)
        if step < 0 and stop < 0:  # "before index 0": ONNX would read -1 as the last one
            stop = INT64_MIN
        return start, stop, step
    if step > 0:
        start = 0 if k.start is None else k.start
        stop = INT64_MAX if k.stop is None else k.stop
    else:
        start = INT64_MAX if k.start is None else k.start
        stop = INT64_MIN if k.stop is None else k.stop
    return start, stop, step


@rule("UnsortedSegmentSum")
def _segment_sum(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """``ScatterND`` with ``reduction="add"`` (opset 16) into zeros of shape
    (num_segments, *data.shape[len(segment_ids.shape):])."""
    if b.opset < 16:
        raise _Refused("needs ScatterND's reduction='add', opset 16 or later")
    data, ids = x
    lead = _rank(op, 1)
    rest = b.one("Slice", [b.one("Shape", [data]), b.ints([lead], "starts"),
                           b.ints([INT64_MAX], "ends")])  # fmt: skip
    shape = b.one("Concat", [b.ints([op.attrs["num_segments"]], "segments"), rest], axis=0)
    zero = b.onnx.numpy_helper.from_array(np.zeros([1], op.inputs[0].dtype.np), "value")
    zeros = b.one("ConstantOfShape", [shape], value=zero)
    index = b.one("Unsqueeze", [b.one("Cast", [ids], to=b.onnx.TensorProto.INT64),
                                b.ints([-1], "axes")])  # fmt: skip
    return b.node("ScatterND", [zeros, index, data], reduction="add")


@rule("PartitionedCall")
def _call(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """A nested traced function, inlined: its graph's nodes translated here, its inputs
    standing for the call's."""
    function = op.attrs["function"]
    env = {t: name for t, name in zip(function.inputs, x, strict=True) if t is not None}
    return b.emit(function.graph, env, function.outputs)


@rule("If")
def _if(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """ONNX ``If``: each branch a subgraph without inputs, which uses the captured tensors
    of the outer graph by their names."""
    branches = {}
    for key in ("then_branch", "else_branch"):  # (ONNX's attributes have eagerflow's names)
        branch: Subgraph = op.attrs[key]
        env = {t: n for t, n in zip(branch.inputs, x[1:], strict=True) if t is not None}
        branches[key] = b.subgraph(branch.graph, env, branch.outputs, f"{op.name}/{key}")
    return b.node("If", x[:1], len(op.outputs), **branches)


@rule("While")
def _while(b: OnnxBuilder, op: Operation, x: list[str]) -> list[str]:
    """ONNX ``Loop`` with no trip count: the condition is computed once before the loop,
    and the body computes eagerflow's body and then its condition on the new values (the
    loop's ``cond`` output). Captured tensors are used from the outer graph by name."""
    cond: Subgraph | None = op.attrs["cond"]
    body: Subgraph = op.attrs["body"]
    n = op.attrs["num_vars"]
    if cond is None or op.attrs["num_sequences"] or op.attrs["num_emitted"]:
        raise _Refused("a While over sequences (a gradient loop) has no ONNX translation here")
    captured = x[n:]

    def condition(values: list[str]) -> str:
        env = {
            t: v for t, v in zip(cond.inputs, [*values, *captured], strict=True) if t is not None
        }
        return b.emit(cond.graph, env, cond.outputs)[0]

    helper = b.onnx.helper
    iteration, cond_in = b.name("iteration"), b.name("cond_in")
    carried = [b.name(f"{op.name}/var{i}") for i in range(n)]
    inputs = [
        helper.make_tensor_value_info(iteration, b.onnx.TensorProto.INT64, []),
        helper.make_tensor_value_info(cond_in, b.onnx.TensorProto.BOOL, []),
        *(helper.make_tensor_value_info(name, b.elem_type(t.dtype), None)
          for name, t in zip(carried, op.inputs[:n], strict=True)),
    ]  # fmt: skip
    env = {t: v for t, v in zip(body.inputs, [*carried, *captured], strict=True) if t is not None}
    new_values = body.outputs[:n]
    # the condition on the new values, in the body graph: computed after the body's nodes
    graph = b.subgraph(
        body.graph, env, new_values, f"{op.name}/body", inputs,
        extra=lambda: [condition([env[t] for t in new_values])],
    )  # fmt: skip
    start = condition(x[:n])
    return b.node("Loop", ["", start, *x[:n]], n, body=graph)


# --- what cannot be exported ---------------------------------------------------------------------
_REFUSED = {
    "PrintV2": "prints when it runs: an ONNX graph has no effects",
    "AssignVariableOp": "changes a variable: an ONNX graph has no state",
    "AssignAddVariableOp": "changes a variable: an ONNX graph has no state",
    "AssignSubVariableOp": "changes a variable: an ONNX graph has no state",
    "ApplyGradientDescent": "changes a variable: an ONNX graph has no state",
    "RandomNormal": "draws random numbers from eagerflow's generator, which ONNX has not",
    "RandomUniform": "draws random numbers from eagerflow's generator, which ONNX has not",
    "RandomShuffle": "draws random numbers from eagerflow's generator, which ONNX has not",
    "Placeholder": "a placeholder the function does not take as an input",
    "VariableV2": "a graph variable's node (export a function of eager variables)",
    "StridedSliceGrad": "the gradient of indexing: no rule yet (export the forward function)",
}


def _unsupported(
    subgraphs: Sequence[Subgraph], found: list[tuple[str, str, str]], seen: set[Any]
) -> None:
    """Every node the subgraphs run (their outputs, what those need, their side effects and
    control inputs, and the same inside If, While and called functions) that has no rule."""
    for subgraph in subgraphs:
        fed = {t.op for t in subgraph.inputs if t is not None}
        stack = [*(t.op for t in subgraph.outputs), *subgraph.side_effects]
        while stack:
            operation = stack.pop()
            if operation in seen or operation in fed:
                continue
            seen.add(operation)
            stack.extend(t.op for t in operation.inputs)
            stack.extend(operation.control_inputs)
            if operation.type == "NoOp":
                continue
            if operation.type not in RULES:
                why = _REFUSED.get(operation.type, "no ONNX rule for this op")
                found.append((operation.type, operation.name, why))
            nested = [v for v in operation.attrs.values() if isinstance(v, Subgraph)]
            _unsupported(nested, found, seen)


# --- export --------------------------------------------------------------------------------------
def _import_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ImportError(
            'exporting to ONNX needs the onnx package: pip install "eagerflow-graph[onnx]"'
        ) from None
    return onnx


def _concrete(function: Function | ConcreteFunction) -> ConcreteFunction:
    if isinstance(function, ConcreteFunction):
        return function
    if isinstance(function, Function):
        if function.input_signature is None:
            raise ValueError(
                "export needs the function's input shapes: decorate it with "
                "function(input_signature=[TensorSpec(...)]), or pass a ConcreteFunction "
                "(f.get_concrete_function(TensorSpec((None, 3))))"
            )
        return function.get_concrete_function()
    raise TypeError(
        f"export takes an eagerflow.graph Function or ConcreteFunction, got {function!r:.60}"
    )


def to_model(function: Function | ConcreteFunction, opset: int = 17) -> onnx.ModelProto:
    """The ONNX ``ModelProto`` of a traced function (see the module docs), checked by
    ``onnx.checker.check_model``; ``export`` writes it to a file."""
    onnx = _import_onnx()
    if not MIN_OPSET <= opset <= onnx.defs.onnx_opset_version():
        raise ValueError(
            f"opset must be between {MIN_OPSET} and {onnx.defs.onnx_opset_version()} (the "
            f"newest this onnx package knows), got {opset}"
        )
    concrete = _concrete(function)
    input_names = _input_names(function, concrete)
    found: list[tuple[str, str, str]] = []
    _unsupported([concrete], found, set())
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


def _input_names(function: Function | ConcreteFunction, concrete: ConcreteFunction) -> list[str]:
    """The model's input names: a Function's parameter names when its input_signature is one
    TensorSpec per parameter (a spec's own name first), else the trace's placeholder names."""
    names = [t.op.name for t in concrete.arguments]
    if not isinstance(function, Function):
        return names
    signature = function.input_signature
    if signature is None or not all(isinstance(s, TensorSpec) for s in signature):
        return names
    try:
        parameters = list(inspect.signature(function.python_function).parameters)
    except (TypeError, ValueError):
        return names
    if len(parameters) < len(names):
        return names
    return [s.name or p for s, p in zip(signature, parameters, strict=False)]


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
    "RULES",
    "OnnxBuilder",
    "Rule",
    "UnsupportedOpError",
    "export",
    "rule",
    "to_model",
]
