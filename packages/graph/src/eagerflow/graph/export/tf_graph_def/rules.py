"""The TensorFlow lowering: one ``TfRule`` per eagerflow op, in ``TF_RULES``, and the reason
for every op that has none, in ``NO_TF_COUNTERPART``.

A rule says both ways how an op is written in a TensorFlow ``GraphDef``:

- ``ops``: TensorFlow's op names; the first is written, each is read as this op
  (``BiasAdd`` and ``Add`` read as ``AddV2``, ``BatchMatMulV2`` as ``MatMul``);
- ``write(op)``: the ``TfNode`` of an eagerflow ``Operation``: TensorFlow's op name, its
  attributes as plain values (``protos.py`` makes them ``AttrValue``s: ``{"T": float32,
  "transpose_a": False}``) and ``consts``, the arrays TensorFlow takes as *inputs* where
  eagerflow keeps an attribute (``Reshape``'s shape, ``Sum``'s axes), written as ``Const``
  nodes after the data inputs;
- ``read(attrs, consts)``: the eagerflow attributes of a TensorFlow node, from its attributes
  (a ``TfAttrs``) and the values of its last ``consts`` inputs, which must be ``Const``
  nodes. The importer then checks them against the op's row like any GraphDef's.

``tests/tensor/test_op_rows.py`` checks that every registered op is in exactly one of the two
tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from eagerflow.graph.core.graph import Operation
from eagerflow.graph.export.tf_graph_def.protos import TfGraphDefError, TfShape
from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import EagerflowError

INT32 = dtypes.int32
NHWC = "NHWC"


class TfNode(NamedTuple):
    """A TensorFlow node as a rule writes it: ``op`` name, plain ``attrs``, and the constant
    inputs (``consts``) that follow the data inputs."""

    op: str
    attrs: dict[str, Any]
    consts: tuple[np.ndarray, ...] = ()


class NotTranslated(Exception):
    """Raised by a rule's ``write`` for a node it cannot write (the message says why)."""


class TfAttrs:
    """A TensorFlow node's attributes as plain values, read by a rule: a missing or mistyped
    attribute is a ``TfGraphDefError`` naming the node and the attribute."""

    def __init__(self, node: str, op: str, values: dict[str, Any]) -> None:
        self.node, self.op, self.values = node, op, values

    def get(self, key: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
        """Attribute ``key``, which must be a ``kind``; ``default`` when it is absent."""
        if key not in self.values:
            if default is not ...:
                return default
            raise self.error(key, "is missing")
        value = self.values[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(key, f"is {value!r:.40}, not a {getattr(kind, '__name__', kind)}")
        return value

    def error(self, key: str, what: str) -> TfGraphDefError:
        return TfGraphDefError(f"node {self.node!r} ({self.op}): attribute {key!r} {what}", key)


Write = Callable[[Operation], TfNode]
Read = Callable[[TfAttrs, list[np.ndarray]], dict[str, Any]]


@dataclass(frozen=True)
class TfRule:
    """How one eagerflow op is written in, and read from, a TensorFlow GraphDef (see the
    module docs). ``read`` is ``None`` for an op that is only written (``ReadVariableOp``,
    frozen into a ``Const``)."""

    ops: tuple[str, ...]
    write: Write
    read: Read | None
    consts: int = 0


TF_RULES: dict[str, TfRule] = {}


def tf_rule(ours: str, *ops: str, read: Read | None, consts: int = 0) -> Callable[[Write], Write]:
    """Decorator: the function writes op ``ours`` as TensorFlow's ``ops[0]``; ``read`` reads
    any of ``ops`` back (as ``register_gradient`` adds a gradient rule)."""

    def register(write: Write) -> Write:
        TF_RULES[ours] = TfRule(ops, write, read, consts)
        return write

    return register


def dtype_of_input(op: Operation, i: int = 0) -> DType:
    return op.inputs[i].dtype


def rank_of(op: Operation, i: int = 0) -> int:
    shape = op.inputs[i].shape
    if shape is None:
        raise NotTranslated(f"input {i} has an unknown rank, which TensorFlow's op needs here")
    return len(shape)


def _no_attrs(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {}


def _typed(tf_op: str, t: bool = True) -> Write:
    """The write of an op that is TensorFlow's ``tf_op`` with the inputs' dtype as ``T``."""

    def write(op: Operation) -> TfNode:
        return TfNode(tf_op, {"T": dtype_of_input(op)} if t else {})

    return write


# ops that are TensorFlow's op of the same name with T, or none, and no other attribute
for _name in (
    "Sub", "Mul", "RealDiv", "Pow", "Maximum", "Minimum", "Less", "LessEqual", "Greater",
    "GreaterEqual", "Equal", "NotEqual", "FloorDiv", "FloorMod", "Sigmoid", "Tanh", "Exp", "Log",
    "Sqrt", "Neg", "Abs", "Sign", "Softplus", "Elu", "Relu", "Square", "Identity",
    "StopGradient", "ZerosLike", "OnesLike", "ReluGrad",
):  # fmt: skip
    TF_RULES[_name] = TfRule((_name,), _typed(_name), _no_attrs)
for _name in ("LogicalAnd", "LogicalOr", "LogicalNot", "NoOp"):
    TF_RULES[_name] = TfRule((_name,), _typed(_name, t=False), _no_attrs)


def _read_nhwc(attrs: TfAttrs) -> None:
    if attrs.get("data_format", str, NHWC) != NHWC:
        raise attrs.error("data_format", f"is {attrs.values['data_format']!r}; eagerflow is NHWC")


def _read_bias_add(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    _read_nhwc(attrs)
    return {}


# a bias added over the last axis (BiasAdd, NHWC) is a broadcasting AddV2
TF_RULES["AddV2"] = TfRule(("AddV2", "Add", "BiasAdd"), _typed("AddV2"), _read_bias_add)


@tf_rule("SelectV2", "SelectV2", read=_no_attrs)
def _select(op: Operation) -> TfNode:
    return TfNode("SelectV2", {"T": dtype_of_input(op, 1)})


def _read_alpha(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"alpha": attrs.get("alpha", float, 0.2)}


@tf_rule("LeakyRelu", "LeakyRelu", read=_read_alpha)
def _leaky_relu(op: Operation) -> TfNode:
    return TfNode("LeakyRelu", {"T": dtype_of_input(op), "alpha": float(op.attrs["alpha"])})


# --- constants, placeholders, variables ----------------------------------------------------------
def _read_const(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    value = attrs.get("value", np.ndarray)
    if np.dtype(attrs.get("dtype", DType).np) != value.dtype:
        raise attrs.error("dtype", f"does not match its value's dtype {value.dtype}")
    return {"value": value}


@tf_rule("Const", "Const", read=_read_const)
def _const(op: Operation) -> TfNode:
    return const_node(op.attrs["value"])


@tf_rule("ReadVariableOp", "Const", read=None)
def _frozen_variable(op: Operation) -> TfNode:
    """A variable read is frozen: a ``Const`` of the variable's value now."""
    variable = op.attrs["variable"]
    if not variable.holds_value:
        raise NotTranslated(
            f"variable {variable.name} belongs to a Session's graph, where each Session holds "
            "its own value: export a function of eager variables"
        )
    return const_node(np.asarray(variable.numpy()))


def const_node(value: np.ndarray) -> TfNode:
    """A ``Const`` node holding ``value`` (a frozen variable, a constant input)."""
    value = np.asarray(value)
    return TfNode("Const", {"dtype": dtypes.as_dtype(value.dtype.name), "value": value})


def output_node(t: Any) -> TfNode:
    """The ``Identity`` node that names an output of the graph (``output_0``)."""
    return TfNode("Identity", {"T": t.dtype})


def _read_placeholder(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    shape = attrs.get("shape", TfShape, TfShape(None)).dims
    return {"dtype": attrs.get("dtype", DType), "shape": shape}


@tf_rule("Placeholder", "Placeholder", read=_read_placeholder)
def _placeholder(op: Operation) -> TfNode:
    shape = op.attrs["shape"]
    return TfNode("Placeholder", {"dtype": op.attrs["dtype"], "shape": TfShape(shape)})


# --- math ----------------------------------------------------------------------------------------
def _read_matmul(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    if attrs.op == "MatMul":
        a, b = attrs.get("transpose_a", bool, False), attrs.get("transpose_b", bool, False)
    else:  # BatchMatMulV2/V3: for real numbers the adjoint is the transpose
        a, b = attrs.get("adj_x", bool, False), attrs.get("adj_y", bool, False)
    return {"transpose_a": a, "transpose_b": b}


@tf_rule("MatMul", "MatMul", "BatchMatMulV2", "BatchMatMulV3", read=_read_matmul)
def _matmul(op: Operation) -> TfNode:
    """TensorFlow's ``MatMul`` multiplies matrices only: a batch is ``BatchMatMulV2``."""
    t, (a, b) = dtype_of_input(op), (op.attrs["transpose_a"], op.attrs["transpose_b"])
    if rank_of(op, 0) == rank_of(op, 1) == 2:
        return TfNode("MatMul", {"T": t, "transpose_a": a, "transpose_b": b})
    return TfNode("BatchMatMulV2", {"T": t, "adj_x": a, "adj_y": b})


def _read_cast(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"dtype": attrs.get("DstT", DType)}


@tf_rule("Cast", "Cast", read=_read_cast)
def _cast(op: Operation) -> TfNode:
    attrs = {"SrcT": dtype_of_input(op), "DstT": op.attrs["dtype"], "Truncate": False}
    return TfNode("Cast", attrs)


def _read_softmax(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"axis": -1}  # TensorFlow's Softmax is over the last axis


def _softmax(tf_op: str) -> Write:
    def write(op: Operation) -> TfNode:
        if op.attrs["axis"] not in (-1, rank_of(op) - 1):
            raise NotTranslated(f"TensorFlow's {tf_op} is over the last axis only")
        return TfNode(tf_op, {"T": dtype_of_input(op)})

    return write


TF_RULES["Softmax"] = TfRule(("Softmax",), _softmax("Softmax"), _read_softmax)
TF_RULES["LogSoftmax"] = TfRule(("LogSoftmax",), _softmax("LogSoftmax"), _read_softmax)


def _read_reduction(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    axes = consts[0]
    axis = int(axes) if axes.ndim == 0 else tuple(int(a) for a in axes.reshape(-1))
    return {"axis": axis, "keepdims": attrs.get("keep_dims", bool, False)}


def _reduction(tf_op: str) -> Write:
    def write(op: Operation) -> TfNode:
        axis = op.attrs["axis"]
        axes = range(rank_of(op)) if axis is None else np.atleast_1d(axis)
        attrs = {"T": dtype_of_input(op), "Tidx": INT32, "keep_dims": op.attrs["keepdims"]}
        return TfNode(tf_op, attrs, (np.asarray(list(axes), np.int32),))

    return write


for _name in ("Sum", "Mean", "Max", "Min", "Prod"):
    TF_RULES[_name] = TfRule((_name,), _reduction(_name), _read_reduction, consts=1)


def _read_arg(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"axis": int_of(attrs, consts[0]), "output_type": attrs.get("output_type", DType)}


def _arg(tf_op: str) -> Write:
    def write(op: Operation) -> TfNode:
        attrs = {"T": dtype_of_input(op), "Tidx": INT32, "output_type": op.attrs["output_type"]}
        return TfNode(tf_op, attrs, (np.int32(op.attrs["axis"]),))  # type: ignore[arg-type]

    return write


TF_RULES["ArgMax"] = TfRule(("ArgMax",), _arg("ArgMax"), _read_arg, consts=1)
TF_RULES["ArgMin"] = TfRule(("ArgMin",), _arg("ArgMin"), _read_arg, consts=1)


def int_of(attrs: TfAttrs, value: np.ndarray) -> int:
    """A constant input that must be an integer scalar (an axis, a count)."""
    if value.ndim != 0 or value.dtype.kind not in "iu":
        raise attrs.error("<constant input>", f"must be an integer scalar, got {value!r:.40}")
    return int(value)


def ints_of(attrs: TfAttrs, value: np.ndarray) -> tuple[int, ...]:
    """A constant input that must be a vector of integers (a shape, sizes)."""
    if value.ndim != 1 or value.dtype.kind not in "iu":
        raise attrs.error("<constant input>", f"must be a vector of integers, got {value!r:.40}")
    return tuple(int(v) for v in value)


# --- convolutions and pools ----------------------------------------------------------------------
def _four(pair: Sequence[int]) -> list[int]:
    """TensorFlow's NHWC strides/ksize/dilations: the batch and channel entries are 1."""
    return [1, int(pair[0]), int(pair[1]), 1]


def _pair(attrs: TfAttrs, key: str) -> tuple[int, int]:
    value = attrs.get(key, list, [1, 1, 1, 1])
    if len(value) != 4 or value[0] != 1 or value[3] != 1 or not all(type(v) is int for v in value):
        raise attrs.error(key, f"is {value!r:.40}; eagerflow reads [1, h, w, 1] (NHWC)")
    return value[1], value[2]


def _padding(attrs: TfAttrs) -> str:
    padding = attrs.get("padding", str)
    if padding not in ("SAME", "VALID"):
        raise attrs.error("padding", f"is {padding!r}; eagerflow reads SAME or VALID")
    return str(padding)


def _read_conv(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    _read_nhwc(attrs)
    return {
        "strides": _pair(attrs, "strides"),
        "padding": _padding(attrs),
        "dilations": _pair(attrs, "dilations"),
    }


@tf_rule("Conv2D", "Conv2D", read=_read_conv)
def _conv2d(op: Operation) -> TfNode:
    a = op.attrs
    return TfNode("Conv2D", {
        "T": dtype_of_input(op), "strides": _four(a["strides"]), "padding": a["padding"],
        "dilations": _four(a["dilations"]), "data_format": NHWC, "use_cudnn_on_gpu": True,
    })  # fmt: skip


def _read_pool(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    _read_nhwc(attrs)
    return {"ksize": _pair(attrs, "ksize"), "strides": _pair(attrs, "strides"),
            "padding": _padding(attrs)}  # fmt: skip


def _pool(tf_op: str) -> Write:
    def write(op: Operation) -> TfNode:
        a = op.attrs
        return TfNode(tf_op, {
            "T": dtype_of_input(op), "ksize": _four(a["ksize"]), "strides": _four(a["strides"]),
            "padding": a["padding"], "data_format": NHWC,
        })  # fmt: skip

    return write


TF_RULES["MaxPool"] = TfRule(("MaxPool",), _pool("MaxPool"), _read_pool)
TF_RULES["AvgPool"] = TfRule(("AvgPool",), _pool("AvgPool"), _read_pool)


# --- shapes and arrays ---------------------------------------------------------------------------
def _ints_input(tf_op: str, key: str, index: str, ours: str) -> TfRule:
    """An op whose eagerflow attribute ``ours`` (a tuple of ints) is TensorFlow's last input,
    of integer type attribute ``index`` (``Reshape``'s ``shape``, ``Tshape``)."""

    def write(op: Operation) -> TfNode:
        values = np.asarray(op.attrs[ours], np.int32).reshape(-1)
        return TfNode(tf_op, {"T": dtype_of_input(op), index: INT32}, (values,))

    def read(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
        return {ours: ints_of(attrs, consts[0])}

    return TfRule((tf_op,), write, read, consts=1)


TF_RULES["Reshape"] = _ints_input("Reshape", "shape", "Tshape", "shape")
TF_RULES["Transpose"] = _ints_input("Transpose", "perm", "Tperm", "perm")
TF_RULES["Tile"] = _ints_input("Tile", "multiples", "Tmultiples", "multiples")
TF_RULES["BroadcastTo"] = _ints_input("BroadcastTo", "shape", "Tidx", "shape")


def _read_expand(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"axis": int_of(attrs, consts[0])}


@tf_rule("ExpandDims", "ExpandDims", read=_read_expand, consts=1)
def _expand_dims(op: Operation) -> TfNode:
    axis = np.int32(op.attrs["axis"])
    return TfNode("ExpandDims", {"T": dtype_of_input(op), "Tdim": INT32}, (axis,))  # type: ignore[arg-type]


def _read_concat(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"axis": int_of(attrs, consts[0])}


@tf_rule("ConcatV2", "ConcatV2", read=_read_concat, consts=1)
def _concat(op: Operation) -> TfNode:
    attrs = {"N": len(op.inputs), "T": dtype_of_input(op), "Tidx": INT32}
    return TfNode("ConcatV2", attrs, (np.int32(op.attrs["axis"]),))  # type: ignore[arg-type]


def _read_pack(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"axis": attrs.get("axis", int, 0)}


@tf_rule("Pack", "Pack", read=_read_pack)
def _pack(op: Operation) -> TfNode:
    attrs = {"N": len(op.inputs), "T": dtype_of_input(op), "axis": int(op.attrs["axis"])}
    return TfNode("Pack", attrs)


def _read_squeeze(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    axes = attrs.get("squeeze_dims", list, [])
    return {"axis": tuple(axes) if axes else None}


@tf_rule("Squeeze", "Squeeze", read=_read_squeeze)
def _squeeze(op: Operation) -> TfNode:
    axis = op.attrs["axis"]
    dims = [] if axis is None else [int(a) for a in np.atleast_1d(axis)]
    return TfNode("Squeeze", {"T": dtype_of_input(op), "squeeze_dims": dims})


def _read_gather(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    if attrs.get("batch_dims", int, 0) != 0:
        raise attrs.error("batch_dims", "is not 0, which eagerflow's GatherV2 does not have")
    return {"axis": int_of(attrs, consts[0])}


@tf_rule("GatherV2", "GatherV2", read=_read_gather, consts=1)
def _gather(op: Operation) -> TfNode:
    attrs = {"Tparams": dtype_of_input(op), "Tindices": dtype_of_input(op, 1), "Taxis": INT32,
             "batch_dims": 0}  # fmt: skip
    return TfNode("GatherV2", attrs, (np.int32(op.attrs["axis"]),))  # type: ignore[arg-type]


def _read_fill(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    dims, value = ints_of(attrs, consts[0]), consts[1]
    if value.ndim != 0:
        raise attrs.error("<value input>", "must be a scalar")
    return {"shape": dims, "value": value.item(), "dtype": dtypes.as_dtype(value.dtype.name)}


@tf_rule("Fill", "Fill", read=_read_fill, consts=2)
def _fill(op: Operation) -> TfNode:
    dtype = op.attrs["dtype"]
    dims, value = np.asarray(op.attrs["shape"], np.int32), np.asarray(op.attrs["value"], dtype.np)
    return TfNode("Fill", {"T": dtype, "index_type": INT32}, (dims, value))


def _read_one_hot(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    depth, on, off = consts
    return {"depth": int_of(attrs, depth), "on_value": on.item(), "off_value": off.item(),
            "axis": attrs.get("axis", int, -1), "dtype": attrs.get("T", DType)}  # fmt: skip


@tf_rule("OneHot", "OneHot", read=_read_one_hot, consts=3)
def _one_hot(op: Operation) -> TfNode:
    a, dtype = op.attrs, op.attrs["dtype"]
    consts = (np.asarray(a["depth"], np.int32), np.asarray(a["on_value"], dtype.np),
              np.asarray(a["off_value"], dtype.np))  # fmt: skip
    attrs = {"T": dtype, "TI": dtype_of_input(op), "axis": int(a["axis"])}
    return TfNode("OneHot", attrs, consts)


# --- indexing ------------------------------------------------------------------------------------
_MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")


def _key_entry(k: Any) -> tuple[tuple[int, int, int], dict[str, bool]]:
    """One entry of a Python index as TensorFlow's (begin, end, stride) and its mask bits."""
    if k is Ellipsis or k is None:
        return (0, 0, 1), {"ellipsis_mask" if k is Ellipsis else "new_axis_mask": True}
    if isinstance(k, slice):
        begin, end = k.start, k.stop
        bits = {"begin_mask": begin is None, "end_mask": end is None}
        return (begin or 0, end or 0, 1 if k.step is None else k.step), bits
    return (k, k + 1, 1), {"shrink_axis_mask": True}  # (TensorFlow ignores end and stride here)


def _read_strided_slice(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    begin, end, strides = (ints_of(attrs, c) for c in consts)
    if not len(begin) == len(end) == len(strides):
        raise attrs.error("<begin, end, strides>", "must have the same length")
    masks = {m: attrs.get(m, int, 0) for m in _MASKS}
    key: list[Any] = []
    for j, (b, e, s) in enumerate(zip(begin, end, strides, strict=True)):
        bit = {m: bool(v >> j & 1) for m, v in masks.items()}
        if bit["ellipsis_mask"] or bit["new_axis_mask"]:
            key.append(Ellipsis if bit["ellipsis_mask"] else None)
        elif bit["shrink_axis_mask"]:
            key.append(b)
        else:
            key.append(slice(None if bit["begin_mask"] else b, None if bit["end_mask"] else e, s))
    return {"key": tuple(key)}


@tf_rule("StridedSlice", "StridedSlice", read=_read_strided_slice, consts=3)
def _strided_slice(op: Operation) -> TfNode:
    """``x[key]``: TensorFlow's begin, end and strides inputs, and one bit per entry of the
    key in each mask (``x[1:, None, 0]``: begin_mask 0b000, new_axis_mask 0b010,
    shrink_axis_mask 0b100)."""
    rows, masks = [], dict.fromkeys(_MASKS, 0)
    for j, k in enumerate(op.attrs["key"]):
        row, bits = _key_entry(k)
        rows.append(row)
        for mask, bit in bits.items():
            masks[mask] |= int(bit) << j
    values = np.asarray(rows, np.int64).reshape(-1, 3).T
    index = INT32 if np.abs(values).max(initial=0) < 2**31 - 1 else dtypes.int64
    consts = tuple(np.asarray(v, index.np) for v in values)
    return TfNode("StridedSlice", {"T": dtype_of_input(op), "Index": index, **masks}, consts)


# --- what has no TensorFlow counterpart here -----------------------------------------------------
_STATE = "changes a variable: a frozen inference GraphDef has no state"
_GRADIENT = "a gradient op: export the forward function"
_PARTITION = "a partition's op: write the whole graph, with its devices (TensorFlow cuts it)"
# Every registered op has a rule or its reason here (tests/tensor/test_op_rows.py).
NO_TF_COUNTERPART = {
    "AssignVariableOp": _STATE, "AssignAddVariableOp": _STATE, "AssignSubVariableOp": _STATE,
    "ApplyGradientDescent": _STATE,
    "VariableV2": "a graph variable's node: export a function of eager variables (frozen)",
    "CustomGradient": "holds a Python function, which no GraphDef can carry",
    "PrintV2": "prints when it runs: an inference GraphDef has no effects",
    "_Send": _PARTITION, "_Recv": _PARTITION,
    "WriteSummary": "writes to a summary file when it runs: an inference GraphDef has no "
                    "effects (TensorFlow's WriteSummary takes a writer resource)",
    "StridedSliceGrad": _GRADIENT, "Conv2DBackpropInput": _GRADIENT,
    "Conv2DBackpropFilter": _GRADIENT, "MaxPoolGrad": _GRADIENT, "MaxPoolGradGrad": _GRADIENT,
    "AvgPoolGrad": _GRADIENT,
}  # fmt: skip


class NoTfCounterpartError(EagerflowError, NotImplementedError):
    """The graph has nodes with no TensorFlow translation. ``ops`` lists every one of them
    as ``(op type, node name, reason)``."""

    def __init__(self, ops: Sequence[tuple[str, str, str]]) -> None:
        self.ops = list(ops)
        lines = "\n".join(f"  {t} '{name}': {why}" for t, name, why in self.ops)
        super().__init__(
            f"cannot write a TensorFlow GraphDef: {len(self.ops)} node(s) have no TensorFlow "
            f"translation\n{lines}"
        )


def reading_rules() -> dict[str, tuple[str, TfRule]]:
    """TensorFlow's op name -> (eagerflow's op, its rule), for the importer."""
    return {tf: (ours, r) for ours, r in TF_RULES.items() if r.read for tf in r.ops}


__all__ = [
    "NO_TF_COUNTERPART",
    "TF_RULES",
    "NoTfCounterpartError",
    "NotTranslated",
    "TfAttrs",
    "TfNode",
    "TfRule",
    "const_node",
    "int_of",
    "ints_of",
    "output_node",
    "reading_rules",
    "tf_rule",
]
