"""ONNX rules for array ops: shapes, joining and splitting, gathering, slicing, filling."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.graph.core.graph import Operation
from eagerflow.graph.export.onnx.builder import (
    INT64_MAX,
    INT64_MIN,
    OnnxBuilder,
    Refused,
    rank_of,
    rule,
)
from eagerflow.tensor.rules import normalize_axis


@rule("Reshape")
def _reshape(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Reshape`` to the shape (an input); ``allowzero=1`` when it has a 0, which ONNX
    would otherwise read as "copy that dimension"."""
    shape = list(node.attrs["shape"])
    if 0 in shape:
        return b.node("Reshape", [x[0], b.ints(shape, "shape")], allowzero=1)
    return b.node("Reshape", [x[0], b.ints(shape, "shape")])


@rule("Transpose")
def _transpose(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Transpose`` with ``perm``."""
    return b.node("Transpose", x, perm=list(node.attrs["perm"]))


@rule("ExpandDims")
def _expand_dims(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Unsqueeze`` (a negative axis counts from the end of the output, in both)."""
    return b.node("Unsqueeze", [x[0], b.ints([node.attrs["axis"]], "axes")])


@rule("Squeeze")
def _squeeze(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Squeeze`` of the given axes, or of every size-1 axis."""
    if node.attrs["axis"] is None:
        return b.node("Squeeze", x)
    if not node.attrs["axis"]:  # no axis listed: nothing to drop (ONNX would drop them all)
        return b.node("Identity", x)
    return b.node("Squeeze", [x[0], b.ints(node.attrs["axis"], "axes")])


@rule("BroadcastTo")
def _broadcast_to(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Expand`` to the shape."""
    return b.node("Expand", [x[0], b.ints(node.attrs["shape"], "shape")])


@rule("Tile")
def _tile(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Tile`` by ``multiples``."""
    return b.node("Tile", [x[0], b.ints(node.attrs["multiples"], "repeats")])


@rule("ConcatV2")
def _concat(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Concat`` along ``axis``."""
    return b.node("Concat", x, axis=int(node.attrs["axis"]))


@rule("Pack")
def _pack(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``stack``: each input ``Unsqueeze``d at ``axis``, then ``Concat``."""
    axes = b.ints([node.attrs["axis"]], "axes")
    return b.node("Concat", [b.one("Unsqueeze", [t, axes]) for t in x], axis=node.attrs["axis"])


@rule("SplitV")
def _split(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Split`` into pieces of the given sizes (an input); a -1 is the size its output has."""
    axis = node.attrs["axis"]
    sizes = [o.shape[axis] for o in node.outputs]
    if None in sizes:
        raise Refused("a split size of -1 along an axis whose size is not known")
    return b.node("Split", [x[0], b.ints(sizes, "split")], len(sizes), axis=axis)


@rule("GatherV2")
def _gather(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Gather`` along ``axis``."""
    return b.node("Gather", x, axis=int(node.attrs["axis"]))


@rule("OneHot")
def _one_hot(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """indices == arange(depth) along the new axis, then ``Where(on, off)``: an index out of
    range is all ``off_value``, as in eagerflow (ONNX's own OneHot counts negative indices
    from the end, and runtimes implement few of its type combinations)."""
    rank = rank_of(node) + 1
    axis = normalize_axis(node.attrs["axis"], rank)
    depth = node.attrs["depth"]
    arange = np.arange(depth, dtype=node.inputs[0].dtype.np)
    arange = arange.reshape([depth if i == axis else 1 for i in range(rank)])
    index = b.one("Unsqueeze", [x[0], b.ints([axis], "axes")])
    hot = b.one("Equal", [index, b.const(arange, "arange")])
    np_type = node.attrs["dtype"].np
    on = b.const(np.asarray(node.attrs["on_value"], np_type), "on_value")
    off = b.const(np.asarray(node.attrs["off_value"], np_type), "off_value")
    return b.node("Where", [hot, on, off])


@rule("ZerosLike")
def _zeros_like(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``ConstantOfShape`` of the input's ``Shape``, filled with 0."""
    return _fill_like(b, node, x, 0)


@rule("OnesLike")
def _ones_like(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``ConstantOfShape`` of the input's ``Shape``, filled with 1."""
    return _fill_like(b, node, x, 1)


def _fill_like(b: OnnxBuilder, node: Operation, x: list[str], fill: int) -> list[str]:
    value = np.full([1], fill, node.inputs[0].dtype.np)
    tensor = b.onnx.numpy_helper.from_array(value, "value")
    return b.node("ConstantOfShape", [b.one("Shape", x)], value=tensor)


@rule("Size")
def _size(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``Size`` (int64), cast to the op's dtype."""
    return b.node("Cast", [b.one("Size", x)], to=b.elem_type(node.attrs["dtype"]))


@rule("Where")
def _where_coordinates(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """The coordinates of the True (nonzero) elements: ``NonZero`` gives them one row per axis,
    ``Transpose`` one row per element."""
    return b.node("Transpose", [b.one("NonZero", x)], perm=[1, 0])


@rule("Range")
def _range(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """A range of numbers is computed now (see ``_computed``); of tensors: ``Range``, which
    counts max(0, ceil((limit - start) / delta)) steps (where eagerflow, as TensorFlow,
    refuses a range that never reaches its limit, ONNX's is empty)."""
    if not x:
        return _computed(b, node, x)
    return b.node("Range", x)


@rule("Const", "Fill", "LinSpace")
def _computed(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """An op of attributes alone, computed now by its own kernel: an initializer."""
    value = node.op_def.kernel(**node.attrs)
    return [b.const(np.asarray(value, node.outputs[0].dtype.np), b.current, scoped=False)]


@rule("ReadVariableOp")
def _read_variable(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """The variable's initializer: its value now (the model is frozen)."""
    return [b.variable(node.attrs["variable"])]


@rule("CustomGradient")
def _custom_gradient(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """Its outputs are its last inputs (the inputs before them are only for the gradient)."""
    return x[node.attrs["num_inputs"] :]


@rule("StridedSlice")
def _strided_slice(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``x[key]`` for a basic index: ``Slice`` over the axes that slices and ints index (an
    int ``k`` is the slice ``k:k+1``), ``Squeeze`` of the int ones, ``Unsqueeze`` where the
    key has ``None``. A known dimension gets Python's exact bounds (``slice.indices``)."""
    shape = node.inputs[0].shape
    if shape is None:
        raise Refused("the input's rank is unknown, so '...' cannot be placed")
    bounds, squeeze, unsqueeze = _slicing(_full_key(node.attrs["key"], len(shape)), shape)
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


def _full_key(key: Sequence[Any], rank: int) -> list[Any]:
    """``key`` with its ``...`` (one is added at the end when it has none) written out as
    the ``:``s it stands for, so that every axis of the input has an entry."""
    key = list(key)
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if Ellipsis not in key:
        key.append(Ellipsis)
    where = key.index(Ellipsis)
    key[where : where + 1] = [slice(None)] * (rank - consumed)
    return key


def _slicing(
    key: list[Any], shape: Sequence[int | None]
) -> tuple[list[tuple[int, int, int, int]], list[int], list[int]]:
    """For a full key: the (start, end, axis, step) of each sliced axis (an int ``k`` is
    the slice ``k:k+1``), the input axes to squeeze (the ints') and the output positions to
    unsqueeze (the ``None``s')."""
    bounds: list[tuple[int, int, int, int]] = []
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
    return bounds, squeeze, unsqueeze


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
def _segment_sum(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """``ScatterND`` with ``reduction="add"`` (opset 16) into zeros of shape
    (num_segments + 1, *data.shape[len(segment_ids.shape):]): a negative id (whose slice is
    dropped) adds into the spare last row, which a ``Slice`` then cuts off."""
    if b.opset < 16:
        raise Refused("needs ScatterND's reduction='add', opset 16 or later")
    data, ids = x
    n = node.attrs["num_segments"]
    lead = rank_of(node, 1)
    rest = b.one("Slice", [b.one("Shape", [data]), b.ints([lead], "starts"),
                           b.ints([INT64_MAX], "ends")])  # fmt: skip
    shape = b.one("Concat", [b.ints([n + 1], "segments"), rest], axis=0)
    zero = b.onnx.numpy_helper.from_array(np.zeros([1], node.inputs[0].dtype.np), "value")
    zeros = b.one("ConstantOfShape", [shape], value=zero)
    ids = b.one("Cast", [ids], to=b.onnx.TensorProto.INT64)
    ids = b.one("Where", [b.one("Less", [ids, b.ints([0], "zero")]), b.ints([n], "spare"), ids])
    index = b.one("Unsqueeze", [ids, b.ints([-1], "axes")])
    summed = b.one("ScatterND", [zeros, index, data], reduction="add")
    cut = [b.ints([0], "starts"), b.ints([n], "ends"), b.ints([0], "axes")]
    return b.node("Slice", [summed, *cut])


__all__: list[str] = []  # registers its rules in RULES
