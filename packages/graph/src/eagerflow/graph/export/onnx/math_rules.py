"""ONNX rules for math ops: elementwise, matrix products, convolutions and pooling,
reductions, softmax and the cross-entropy loss."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eagerflow.graph.core.graph import Operation
from eagerflow.graph.export.onnx.builder import (
    RULES,
    OnnxBuilder,
    Refused,
    Rule,
    rank_of,
    rule,
    zero_like,
)
from eagerflow.tensor.dtypes import int32


@rule("NotEqual")
def _not_equal(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """ONNX has no NotEqual: ``Not(Equal)``."""
    return b.node("Not", [b.one("Equal", x)])


@rule("Square")
def _square(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """x²: ``Mul(x, x)``."""
    return b.node("Mul", [x[0], x[0]])


@rule("Relu")
def _relu(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Relu``; for integers, ``Max(x, 0)`` (runtimes implement Relu for floats)."""
    dtype = node.inputs[0].dtype
    if dtype.is_floating:
        return b.node("Relu", x)
    return b.node("Max", [x[0], zero_like(b, dtype)])


@rule("ReluGrad")
def _relu_grad(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """gradients · (outputs > 0)."""
    dtype = node.inputs[0].dtype
    positive = b.one("Greater", [x[1], zero_like(b, dtype)])
    return b.node("Mul", [x[0], b.one("Cast", [positive], to=b.elem_type(dtype))])


@rule("LeakyRelu")
def _leaky_relu(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``LeakyRelu`` with its ``alpha``."""
    return b.node("LeakyRelu", x, alpha=float(node.attrs["alpha"]))


@rule("FloorMod")
def _floor_mod(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """Python's ``%``: see ``_floor_div_mod``."""
    return _floor_div_mod(b, node, x, remainder=True)


@rule("FloorDiv")
def _floor_div(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """Python's ``//``: see ``_floor_div_mod``."""
    return _floor_div_mod(b, node, x, remainder=False)


def _floor_div_mod(b: OnnxBuilder, node: Operation, x: list[str], remainder: bool) -> list[str]:
    """Python's ``%`` (``remainder``) or ``//``. Integers: ``Mod(fmod=0)`` takes the
    divisor's sign, as Python does, and (x - x % y) / y divides exactly. Float ``//`` is
    TensorFlow's floor(x / y); float ``%`` is NumPy's recipe, from C's ``fmod`` (exact): the
    remainder moves by y when its sign differs from y's."""
    dtype = node.inputs[0].dtype
    a, y = x
    if not dtype.is_floating:
        mod = b.one("Mod", x, fmod=0)
        return [mod] if remainder else b.node("Div", [b.one("Sub", [a, mod]), y])
    if not remainder:
        return b.node("Floor", [b.one("Div", x)])
    zero = zero_like(b, dtype)
    fmod = b.one("Mod", x, fmod=1)
    signs_differ = b.one("Xor", [b.one("Less", [y, zero]), b.one("Less", [fmod, zero])])
    adjust = b.one("And", [b.one("Not", [b.one("Equal", [fmod, zero])]), signs_differ])
    return b.node("Where", [adjust, b.one("Add", [fmod, y]), fmod])


@rule("Cast")
def _cast(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Cast`` to the ``TensorProto`` type of the dtype."""
    return b.node("Cast", x, to=b.elem_type(node.attrs["dtype"]))


@rule("MatMul")
def _matmul(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``MatMul``, after a ``Transpose`` of the last two axes of each input whose
    ``transpose_a``/``transpose_b`` is set (ONNX's MatMul has no such flags)."""
    a, c = x
    if node.attrs["transpose_a"]:
        a = b.one("Transpose", [a], perm=_swap_last(rank_of(node, 0)))
    if node.attrs["transpose_b"]:
        c = b.one("Transpose", [c], perm=_swap_last(rank_of(node, 1)))
    return b.node("MatMul", [a, c])


def _swap_last(rank: int) -> list[int]:
    return [*range(rank - 2), rank - 1, rank - 2]


# ONNX's convolution and pools take NCHW, eagerflow's (TensorFlow's) NHWC: a Transpose each way
_TO_NCHW, _TO_NHWC = [0, 3, 1, 2], [0, 2, 3, 1]


def _spatial_pads(node: Operation, kernel: Sequence[int], dilations: Sequence[int]) -> list[int]:
    """ONNX's explicit ``pads`` [top, left, bottom, right] for TensorFlow's padding: SAME's
    arithmetic needs the input's height and width, so they must be known."""
    if node.attrs["padding"] == "VALID":
        return [0, 0, 0, 0]
    shape = node.inputs[0].shape
    if shape is None or len(shape) != 4 or shape[1] is None or shape[2] is None:
        raise Refused("SAME padding needs the input's height and width known; ONNX pads are fixed")
    before, after = [], []
    for size, k, s, d in zip(shape[1:3], kernel, node.attrs["strides"], dilations, strict=True):
        out = -(-size // s)
        total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
        before.append(total // 2)
        after.append(total - total // 2)
    return [*before, *after]


@rule("Conv2D")
def _conv2d(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Conv`` between Transposes: NHWC to NCHW, filters [kh, kw, in, out] to
    [out, in, kh, kw], and back; SAME padding as explicit (possibly uneven) ``pads``."""
    filters = node.inputs[1].shape
    if filters is None or filters[0] is None or filters[1] is None:
        raise Refused("the filters' kernel size must be known")
    kernel = [filters[0], filters[1]]
    dilations = list(node.attrs["dilations"])
    image = b.one("Transpose", [x[0]], perm=_TO_NCHW)
    weights = b.one("Transpose", [x[1]], perm=[3, 2, 0, 1])
    conv = b.one("Conv", [image, weights], kernel_shape=kernel, strides=list(node.attrs["strides"]),
                 dilations=dilations, pads=_spatial_pads(node, kernel, dilations))  # fmt: skip
    return b.node("Transpose", [conv], perm=_TO_NHWC)


@rule("MaxPool")
def _max_pool(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``MaxPool`` between Transposes: see ``_pool``."""
    return _pool(b, node, x, "MaxPool")


@rule("AvgPool")
def _avg_pool(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``AveragePool`` between Transposes: see ``_pool``."""
    return _pool(b, node, x, "AveragePool")


def _pool(b: OnnxBuilder, node: Operation, x: list[str], onnx_type: str) -> list[str]:
    """``MaxPool`` or ``AveragePool`` between Transposes (NHWC to NCHW and back). Both skip
    padded cells, as TensorFlow does (``AveragePool``'s ``count_include_pad`` is 0)."""
    kernel = list(node.attrs["ksize"])
    image = b.one("Transpose", [x[0]], perm=_TO_NCHW)
    pooled = b.one(onnx_type, [image], kernel_shape=kernel, strides=list(node.attrs["strides"]),
                   pads=_spatial_pads(node, kernel, [1, 1]))  # fmt: skip
    return b.node("Transpose", [pooled], perm=_TO_NHWC)


def _reduce(onnx_type: str) -> Rule:
    """The rule of a reduction that is ``onnx_type`` (``ReduceSum``, ...) with ``keepdims``;
    the axes (none: all of them) are an input of ReduceSum from opset 13 and of the others
    from opset 18."""

    def translate(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
        return [_reduce_node(b, onnx_type, x[0], *_reduced(node))]

    translate.__doc__ = f"One ``{onnx_type}`` node."
    return translate


for _ours, _theirs in {"Sum": "ReduceSum", "Max": "ReduceMax", "Min": "ReduceMin",
                       "Prod": "ReduceProd"}.items():  # fmt: skip
    RULES[_ours] = _reduce(_theirs)


@rule("Mean")
def _mean(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``ReduceMean``; an integer ``Mean`` is ReduceSum divided by the count, truncated toward
    zero, as eagerflow's kernel does."""
    dtype = node.inputs[0].dtype
    if dtype.is_floating:
        return [_reduce_node(b, "ReduceMean", x[0], *_reduced(node))]
    total = _reduce_node(b, "ReduceSum", x[0], *_reduced(node))
    count = b.one("Div", [b.one("Size", x), b.one("Size", [total])])
    return b.node("Div", [total, b.one("Cast", [count], to=b.elem_type(dtype))])


def _reduced(node: Operation) -> tuple[list[int] | None, int]:
    """A reduction's axes (None: all of them) and its ONNX ``keepdims``."""
    axis = node.attrs["axis"]
    axes = None if axis is None else [axis] if isinstance(axis, int) else list(axis)
    return axes, int(bool(node.attrs["keepdims"]))


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


@rule("ArgMax")
def _argmax(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    return _arg(b, node, x, -np.inf)


@rule("ArgMin")
def _argmin(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    return _arg(b, node, x, np.inf)


def _arg(b: OnnxBuilder, node: Operation, x: list[str], nan_becomes: float) -> list[str]:
    """``ArgMax``/``ArgMin`` (the first index on ties), int64, then cast to
    ``output_type``. ONNX has no bool ArgMax: bools are cast to int32 first. TensorFlow's
    (and eagerflow's) skip NaN, ONNX's picks it: a NaN becomes -inf for ArgMax (+inf for
    ArgMin: ``nan_becomes``) first, so the exported model agrees."""
    dtype = node.inputs[0].dtype
    if dtype.is_bool:
        x = [b.one("Cast", x, to=b.elem_type(int32))]
    elif dtype.is_floating:
        skipped = zero_like(b, dtype, nan_becomes)
        x = [b.one("Where", [b.one("IsNaN", x), skipped, x[0]])]
    found = b.one(node.type, x, axis=int(node.attrs["axis"]), keepdims=0, select_last_index=0)
    return b.node("Cast", [found], to=b.elem_type(node.attrs["output_type"]))


@rule("Softmax", "LogSoftmax")
def _softmax(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Softmax``/``LogSoftmax`` along ``axis`` (one axis, from opset 13)."""
    return b.node(node.type, x, axis=int(node.attrs["axis"]))


@rule("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """loss = -LogSoftmax(z)[label], by ``GatherElements`` along the last axis; the second
    output (the loss's gradient) is Softmax(z) - onehot(label), the one-hot an ``Equal`` of
    the labels with ``Range(0, classes)``."""
    logits, labels = x
    dtype = node.inputs[0].dtype
    index = b.one("Unsqueeze", [labels, b.ints([-1], "axes")])
    log_p = b.one("LogSoftmax", [logits], axis=-1)
    picked = b.one("GatherElements", [log_p, index], axis=-1)
    loss = b.one("Neg", [b.one("Squeeze", [picked, b.ints([-1], "axes")])])
    label_type = node.inputs[1].dtype
    classes = b.one("Gather", [b.one("Shape", [logits]), b.const(-1, "last", np.int64)])
    classes = b.one("Cast", [classes], to=b.elem_type(label_type))
    zero, one = zero_like(b, label_type), zero_like(b, label_type, 1)
    hot = b.one("Equal", [index, b.one("Range", [zero, classes, one])])
    hot = b.one("Cast", [hot], to=b.elem_type(dtype))
    return [loss, b.one("Sub", [b.one("Softmax", [logits], axis=-1), hot])]


__all__: list[str] = []  # registers its rules in RULES
