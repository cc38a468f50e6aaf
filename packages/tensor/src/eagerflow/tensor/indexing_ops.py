"""Array ops that join, split and pick: ``concat``, ``stack``, ``split``, ``gather``,
``unsorted_segment_sum``, ``one_hot``, ``where`` and ``t[...]`` (``getitem``, which this module
attaches to Tensor as ``__getitem__``).

As in ``array_ops`` (which makes tensors and changes their shape), each op's NumPy kernel
(with its shape and dtype rules) sits right above the public function that calls
``execute``, whose ``@op`` registers the op.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from types import EllipsisType
from typing import Any, cast

import numpy as np

from eagerflow.tensor import dtypes
from eagerflow.tensor.array_ops import natural_dtype, reshape
from eagerflow.tensor.dtypes import ANY, INTEGERS, DType
from eagerflow.tensor.errors import (
    DTypeError,
    InvalidArgumentError,
    OutOfRangeError,
    ShapeError,
    format_shape,
)
from eagerflow.tensor.execution import NO_ATTRS, execute
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.rules import (
    axis_argument,
    broadcast_rule,
    compatible,
    normalize_axis,
    same_dtype,
)
from eagerflow.tensor.schema import DTypeAttr, IndexKey, Int, Ints, Scalar
from eagerflow.tensor.tensor import (
    Tensor,
    convert_operands,
    convert_to_tensor,
    holds_tensors,
    is_tensor_like,
)


# --- joining and splitting ---------------------------------------------------------------------
def concat_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """Shapes equal except along ``axis``, where the sizes add up."""
    first = shapes[0]
    axis = normalize_axis(attrs["axis"], len(first))
    out = list(first)
    for s in shapes[1:]:
        if len(s) != len(first):
            raise ShapeError(
                f"cannot concat shapes {format_shape(first)} and {format_shape(s)}: ranks differ"
            )
        for i, (a, b) in enumerate(zip(out, s, strict=True)):
            if i == axis:
                out[i] = None if a is None or b is None else a + b
            elif a is not None and b is not None and a != b:
                raise ShapeError(
                    f"cannot concat shapes {format_shape(first)} and {format_shape(s)} along "
                    f"axis {axis}: dimension {i} differs"
                )
            elif a is None:
                out[i] = b
    return [tuple(out)]


def concat_kernel(*xs: np.ndarray, axis: int) -> np.ndarray:
    return np.concatenate(xs, axis=axis)


@op("ConcatV2", concat_kernel, shape=concat_shape, dtype=same_dtype(ANY), attrs={"axis": Int()})
def concat(values: Sequence[Any], axis: int, name: str | None = None) -> Tensor:
    """Join tensors along an existing ``axis``."""
    if not values:
        raise ValueError("concat: needs at least one tensor")
    return execute(
        "ConcatV2", tuple(convert_operands(*values)), {"axis": axis_argument(axis, "concat")}, name
    )[0]


def stack_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """N equal shapes become one with a new axis of size N at ``axis``."""
    first = shapes[0]
    for s in shapes[1:]:
        if not compatible(first, s):
            raise ShapeError(
                f"cannot stack shapes {format_shape(first)} and {format_shape(s)}: they differ"
            )
    axis = normalize_axis(attrs["axis"], len(first), extra=1)
    return [(*first[:axis], len(shapes), *first[axis:])]


def stack_kernel(*xs: np.ndarray, axis: int) -> np.ndarray:
    return np.stack(xs, axis=axis)


@op("Pack", stack_kernel, shape=stack_shape, dtype=same_dtype(ANY), attrs={"axis": Int()})
def stack(values: Sequence[Any], axis: int = 0, name: str | None = None) -> Tensor:
    """Stack tensors of one shape along a new ``axis``."""
    if not values:
        raise ValueError("stack: needs at least one tensor")
    if not any(is_tensor_like(v) for v in values):  # [1, 2.5]: one dtype for all
        common = natural_dtype(list(values))
        values = [convert_to_tensor(v, common) for v in values]
    return execute(
        "Pack", tuple(convert_operands(*values)), {"axis": axis_argument(axis, "stack")}, name
    )[0]


def _first_dtype(value: Any) -> DType | None:
    """The dtype of the first tensor-like value in a nested list, depth first."""
    if is_tensor_like(value):
        return cast(DType, value.dtype)
    if isinstance(value, list | tuple):
        for v in value:
            if (found := _first_dtype(v)) is not None:
                return found
    return None


def autopack(value: Sequence[Any], dtype: DType | None) -> Tensor:
    """A nested list holding tensors as one tensor, as TensorFlow's auto-packing makes it:
    every element converted to ``dtype`` (by default the first tensor's), then ``stack``ed,
    so float64 tensors stay float64 and symbolic ones become a ``Pack`` node."""
    target = dtype if dtype is not None else _first_dtype(value)
    for v in value:
        if is_tensor_like(v) and v.dtype is not target:
            raise DTypeError(
                f"convert_to_tensor: cannot pack a tensor of dtype {v.dtype.name} into a list "
                f"of {target.name if target else 'no'} tensors; cast() them to one dtype first"
            )
    parts = [
        autopack(v, target) if holds_tensors(v) else convert_to_tensor(v, target) for v in value
    ]
    return stack(parts)


Tensor._autopack = staticmethod(autopack)


def _resolved(sizes: Sequence[int], dim: int | None) -> tuple[int | None, ...]:
    """``sizes`` with its -1 as what the others leave of ``dim`` (None while unknown)."""
    rest = None if dim is None else dim - sum(s for s in sizes if s != -1)
    return tuple(rest if s == -1 else s for s in sizes)


def split_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """One output per size in ``sizes``, which must add up to the dimension along ``axis``;
    one size may be -1, for the rest, as in TensorFlow."""
    shape, sizes = shapes[0], attrs["sizes"]
    axis = normalize_axis(attrs["axis"], len(shape))
    resolved = _resolved(sizes, shape[axis])
    if (
        list(sizes).count(-1) > 1
        or any(s is not None and s < 0 for s in resolved)
        or (shape[axis] is not None and sum(resolved) != shape[axis])  # type: ignore[arg-type]
    ):
        raise ShapeError(
            f"split sizes {sizes} must be >= 0 (one may be -1) and add up to {shape[axis]}, "
            f"the size of axis {axis} of shape {format_shape(shape)}"
        )
    return [(*shape[:axis], s, *shape[axis + 1 :]) for s in resolved]


def split_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    return [dts[0]] * len(attrs["sizes"])


def split_kernel(x: np.ndarray, sizes: tuple[int, ...], axis: int) -> tuple[np.ndarray, ...]:
    pieces = split_shape([x.shape], {"sizes": sizes, "axis": axis})  # NumPy adds a last one
    known = [cast(int, piece[axis]) for piece in pieces]  # (all known, for an array)
    return tuple(np.split(x, np.cumsum(known[:-1]), axis=axis))


@op("SplitV", split_kernel, shape=split_shape, dtype=split_dtype,
    attrs={"sizes": Ints(), "axis": Int()}, multi_output=True)  # fmt: skip
def split(
    value: Any, num_or_size_splits: int | Sequence[int], axis: int = 0, name: str | None = None
) -> list[Tensor]:
    """Cut ``value`` along ``axis`` into N equal pieces (an int) or pieces of given sizes
    (one of them may be -1: what the others leave)."""
    value, axis = convert_to_tensor(value), axis_argument(axis, "split")
    if isinstance(num_or_size_splits, int):
        n = num_or_size_splits
        dim = value.shape[normalize_axis(axis, value.ndim)] if value.ndim else None
        if n <= 0 or dim is None or dim % n:
            raise ShapeError(
                f"cannot split axis {axis} of shape {format_shape(value.shape)} into {n} "
                "equal parts"
            ).at_op("SplitV", (value,))
        sizes = (dim // n,) * n
    else:
        sizes = tuple(int(s) for s in num_or_size_splits)
    attrs = {"sizes": sizes, "axis": axis}
    return list(execute("SplitV", (value,), attrs, name))


# --- indexing and selecting -----------------------------------------------------------------------
def gather_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """params.shape[:axis] + indices.shape + params.shape[axis+1:]."""
    params, indices = shapes
    axis = normalize_axis(attrs["axis"], len(params))
    return [(*params[:axis], *indices, *params[axis + 1 :])]


def gather_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    if dts[1] not in INTEGERS:
        raise DTypeError(f"indices must be int32 or int64, got {dts[1]}")
    return [dts[0]]


def gather_kernel(params: np.ndarray, indices: np.ndarray, axis: int) -> np.ndarray:
    size = params.shape[axis]
    if indices.size and (indices.min() < 0 or indices.max() >= size):
        bad = indices[(indices < 0) | (indices >= size)].flat[0]
        raise OutOfRangeError(f"index {bad} is out of range [0, {size}) for axis {axis}")
    return np.take(params, indices, axis=axis)


@op("GatherV2", gather_kernel, shape=gather_shape, dtype=gather_dtype, attrs={"axis": Int()})
def gather(params: Any, indices: Any, axis: int = 0, name: str | None = None) -> Tensor:
    """Pick slices of ``params`` along ``axis`` at integer ``indices`` (any shape); an index
    out of range is an error."""
    params = convert_to_tensor(params)
    indices = convert_to_tensor(indices)
    return execute("GatherV2", (params, indices), {"axis": axis_argument(axis, "gather")}, name)[0]


def segment_sum_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """data.shape with its leading ``segment_ids.shape`` replaced by ``num_segments``."""
    data, ids = shapes
    lead = len(ids)
    if not compatible(data[:lead], ids):  # (a shorter data shape has a shorter prefix)
        raise ShapeError(
            f"segment_ids shape {format_shape(ids)} must be a prefix of data shape "
            f"{format_shape(data)}"
        )
    return [(attrs["num_segments"], *data[lead:])]


def segment_sum_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    if dts[1] not in INTEGERS:
        raise DTypeError(f"segment_ids must be int32 or int64, got {dts[1]}")
    if dts[0] not in dtypes.NUMBERS:
        raise DTypeError(f"data must be a number dtype, got {dts[0]}")
    return [dts[0]]


def segment_sum_kernel(data: np.ndarray, segment_ids: np.ndarray, num_segments: int) -> np.ndarray:
    segment_sum_shape([data.shape, segment_ids.shape], {"num_segments": num_segments})
    if segment_ids.size and segment_ids.max() >= num_segments:
        raise OutOfRangeError(f"segment ids must be below num_segments={num_segments}")
    out = np.zeros((num_segments, *data.shape[segment_ids.ndim :]), dtype=data.dtype)
    kept = segment_ids >= 0  # a negative id drops its slice, as in TensorFlow
    if kept.all():
        np.add.at(out, segment_ids, data)
    else:
        np.add.at(out, segment_ids[kept], data[kept])
    return out


@op("UnsortedSegmentSum", segment_sum_kernel, shape=segment_sum_shape, dtype=segment_sum_dtype,
    attrs={"num_segments": Int(min=0)})  # fmt: skip
def unsorted_segment_sum(
    data: Any, segment_ids: Any, num_segments: int, name: str | None = None
) -> Tensor:
    """Add up the slices of ``data`` that share a segment id: out[s] = Σ data[i] over every i
    with segment_ids[i] == s, for ids below num_segments (the adjoint of ``gather``); a slice
    whose id is negative is dropped, as in TensorFlow."""
    inputs = (convert_to_tensor(data), convert_to_tensor(segment_ids))
    return execute("UnsortedSegmentSum", inputs, {"num_segments": int(num_segments)}, name)[0]


def one_hot_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """A new axis of size ``depth`` at ``axis`` (default: last)."""
    shape, depth = shapes[0], attrs["depth"]
    axis = normalize_axis(attrs["axis"], len(shape), extra=1)
    return [(*shape[:axis], depth, *shape[axis:])]


def one_hot_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    # checked here, not in the shape rule: eager mode runs the dtype rule, and NumPy would
    # quietly make a negative depth an empty axis
    if attrs["depth"] < 0:
        raise InvalidArgumentError(f"depth must be >= 0, got {attrs['depth']}")
    if dts[0] not in INTEGERS:
        raise DTypeError(f"indices must be int32 or int64, got {dts[0]}")
    return [attrs["dtype"]]


def one_hot_kernel(
    indices: np.ndarray, depth: int, on_value: Any, off_value: Any, axis: int, dtype: DType
) -> np.ndarray:
    hot = np.expand_dims(indices, -1) == np.arange(depth)
    out = np.where(hot, on_value, off_value).astype(dtype.np)
    return np.moveaxis(out, -1, axis)


def _scalar_attr(value: Any, default: int) -> Any:
    """``on_value`` or ``off_value`` as an attribute: a Python or NumPy scalar (an eager
    tensor's value), or ``default``."""
    if value is None:
        return default
    return value.numpy().item() if isinstance(value, Tensor) else value


ONE_HOT_ATTRS = {
    "depth": Int(min=0),
    "on_value": Scalar("dtype"),
    "off_value": Scalar("dtype"),
    "axis": Int(),
    "dtype": DTypeAttr(),
}


@op("OneHot", one_hot_kernel, shape=one_hot_shape, dtype=one_hot_dtype, attrs=ONE_HOT_ATTRS)
def one_hot(
    indices: Any,
    depth: int,
    on_value: Any = None,
    off_value: Any = None,
    axis: int = -1,
    dtype: DType | str | None = None,
    name: str | None = None,
) -> Tensor:
    """Integer class indices as one-hot vectors of length ``depth`` (along ``axis``):
    ``on_value`` where the new axis equals the index, ``off_value`` elsewhere (everywhere,
    for an index out of range).

    As in TensorFlow, the dtype is ``dtype`` if given, else that of ``on_value`` or
    ``off_value`` (``on_value=5`` gives int32), else float32; the values default to 1 and 0.
    """
    indices = convert_to_tensor(indices)
    given = {k: v for k, v in (("on_value", on_value), ("off_value", off_value)) if v is not None}
    found = {k: natural_dtype(v) for k, v in given.items()}
    if len(set(found.values())) > 1:
        raise DTypeError(
            "on_value and off_value must have the same dtype, got "
            f"{found['on_value']} and {found['off_value']} (or give dtype=)"
        ).at_op("OneHot", (indices,))
    if dtype is None:
        dtype = next(iter(found.values()), dtypes.float32)
    attrs = {
        "depth": int(depth),
        "on_value": _scalar_attr(on_value, 1),
        "off_value": _scalar_attr(off_value, 0),
        "axis": axis_argument(axis, "one_hot"),
        "dtype": dtypes.as_dtype(dtype),
    }
    return execute("OneHot", (indices,), attrs, name)[0]


def where_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    if dts[0] is not dtypes.bool_:
        raise DTypeError(f"condition must be bool, got {dts[0]}")
    if dts[1] is not dts[2]:
        raise DTypeError(f"x and y must have the same dtype, got {dts[1]} and {dts[2]}")
    return [dts[1]]


def where_kernel(condition: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(condition, x, y)


@op("SelectV2", where_kernel, shape=broadcast_rule, dtype=where_dtype, retains_inputs=False)
def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """Elementwise choice: ``x`` where ``condition`` is True, else ``y`` (broadcasting).

    With ``condition`` alone: the coordinates of its True elements (``Where``, below); a
    numeric condition is True where it is not 0, as in TensorFlow.
    """
    condition = convert_to_tensor(condition)
    if x is None and y is None:
        return execute("Where", (condition,), NO_ATTRS, name)[0]
    if x is None or y is None:
        raise InvalidArgumentError(
            "x and y must both be given or both be omitted (then where() returns the "
            "coordinates of the True elements)"
        ).at_op("SelectV2", (condition,))
    x, y = convert_operands(x, y)
    return execute("SelectV2", (condition, x, y), NO_ATTRS, name)[0]


def where_coordinates_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """(number of True elements, rank): the first dimension depends on the data, so no rule
    can know it; graphs see None, and only running the op tells."""
    return [(None, len(shapes[0]))]


def where_coordinates_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    # any dtype: a number counts as True where it is not 0, as in TensorFlow
    return [dtypes.int64]


@op("Where", shape=where_coordinates_shape, dtype=where_coordinates_dtype)
def where_coordinates_kernel(condition: np.ndarray) -> np.ndarray:
    """The coordinates of the True (nonzero) elements of ``condition``, one row each, in row-major
    order: an int64 matrix of shape (number of True elements, rank)."""
    return np.argwhere(condition).astype(np.int64, copy=False)


# --- t[...]: basic indexing --------------------------------------------------------------------
Index = int | slice | None | EllipsisType


def slice_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """The shape NumPy's basic indexing ``x[key]`` gives: ints drop an axis, slices keep it,
    ``None`` inserts one; unknown dimensions stay unknown."""
    shape, key = shapes[0], attrs["key"]
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if key.count(Ellipsis) > 1:
        raise InvalidArgumentError("an index can only have a single ellipsis ('...')")
    if consumed > len(shape):
        raise OutOfRangeError(f"too many indices ({consumed}) for shape {format_shape(shape)}")
    if Ellipsis not in key:
        key = (*key, Ellipsis)
    out: list[int | None] = []
    dims = iter(enumerate(shape))
    for k in key:
        if k is None:
            out.append(1)
        elif k is Ellipsis:
            for _ in builtins.range(len(shape) - consumed):
                out.append(next(dims)[1])
        else:
            axis, dim = next(dims)
            if isinstance(k, slice):
                out.append(None if dim is None else len(builtins.range(*k.indices(dim))))
            elif dim is not None and not -dim <= k < dim:
                raise OutOfRangeError(f"index {k} is out of range for axis {axis} of size {dim}")
    return [tuple(out)]


def slice_kernel(x: np.ndarray, key: tuple[Index, ...]) -> np.ndarray:
    return x[key]


def _kept_axes(key: tuple[Index, ...], ndim: int) -> list[tuple[int | None, Index]]:
    """For each axis of x: the axis of ``x[key]`` it became (None if an int dropped it),
    and the index that took it (a ``...`` takes its axes whole, as ``slice(None)``)."""
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if Ellipsis not in key:
        key = (*key, Ellipsis)
    kept: list[tuple[int | None, Index]] = []
    out_axis = 0
    for k in key:
        if k is None:
            out_axis += 1
        elif k is Ellipsis:
            for _ in builtins.range(ndim - consumed):
                kept.append((out_axis, slice(None)))
                out_axis += 1
        elif isinstance(k, slice):
            kept.append((out_axis, k))
            out_axis += 1
        else:
            kept.append((None, k))
    return kept


def _grad_shape(shape: Shape, dy: Shape, key: tuple[Index, ...]) -> Shape:
    """x's shape: ``shape``, whose unknown sizes (None) are read from dy, which is possible
    where x[key] kept the axis whole (``:``, as the batch axis of ``x[:, :2]``)."""
    if None not in shape:
        return shape
    out = list(shape)
    for axis, (size, (dy_axis, k)) in enumerate(
        zip(shape, _kept_axes(key, len(shape)), strict=True)
    ):
        if size is None:
            if dy_axis is None or k != slice(None):
                raise InvalidArgumentError(
                    f"the size of axis {axis} of the sliced tensor is unknown and the index "
                    f"{k!r} does not keep that axis whole, so the gradient's shape cannot be "
                    "known; give that axis a size"
                )
            out[axis] = None if dy is None else dy[dy_axis]
    return tuple(out)


def slice_grad_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """The sliced tensor's original ``shape``; dy must have the shape of ``x[key]``. An
    unknown size (None) of an axis the key keeps whole is dy's size there."""
    expected = slice_shape([attrs["shape"]], attrs)[0]
    dy = shapes[0]
    if not compatible(dy, expected):
        raise ShapeError(
            f"dy has shape {format_shape(dy)}, but x[key] has shape {format_shape(expected)}"
        )
    return [_grad_shape(attrs["shape"], dy, attrs["key"])]


def slice_grad_kernel(
    dy: np.ndarray, shape: tuple[int | None, ...], key: tuple[Index, ...]
) -> np.ndarray:
    full = cast(tuple[int, ...], _grad_shape(shape, dy.shape, key))  # (dy's shape is known)
    out = np.zeros(full, dtype=dy.dtype)
    out[key] = dy
    return out


@op("StridedSliceGrad", slice_grad_kernel, shape=slice_grad_shape, dtype=same_dtype(ANY),
    attrs={"shape": Ints(min=0, unknown=True), "key": IndexKey()})  # fmt: skip
def strided_slice_grad(
    dy: Any, shape: Sequence[int | None], key: tuple[Index, ...], name: str | None = None
) -> Tensor:
    """Scatter ``dy`` into zeros of ``shape`` at the basic index ``key``: the adjoint (the
    gradient) of ``t[key]``. A size of ``shape`` may be None (unknown in a graph) where
    ``key`` keeps that axis whole: it is then dy's size."""
    attrs = {"shape": tuple(shape), "key": key}
    return execute("StridedSliceGrad", (convert_to_tensor(dy),), attrs, name)[0]


@op(
    "StridedSlice",
    slice_kernel,
    shape=slice_shape,
    dtype=same_dtype(ANY),
    attrs={"key": IndexKey()},
)
def getitem(x: Tensor, key: Any) -> Tensor:
    """``x[key]``: a basic index (ints, slices, ``None`` and ``...``) is one ``StridedSlice``
    op, usually a view; an integer list, array or tensor picks along the first axis with
    ``gather``; a bool one keeps the slices where it is True (TensorFlow's boolean_mask)."""
    if isinstance(key, list | np.ndarray) or (isinstance(key, Tensor) and key.ndim):
        key = convert_to_tensor(key)
        return _masked(x, key) if key.dtype is dtypes.bool_ else gather(x, key)
    if isinstance(key, Tensor) and key.ndim == 0 and not _known(key):
        return gather(x, key)  # a graph's scalar index (a loop counter): one row, gathered
    items = key if isinstance(key, tuple) else (key,)
    try:
        attrs = {"key": tuple(_index(k) for k in items)}
    except InvalidArgumentError as e:
        raise e.at_op("StridedSlice", (x,)) from None
    return execute("StridedSlice", (x,), attrs)[0]


def _known(key: Tensor) -> bool:
    """Whether a scalar index has its value now (an eager one), so it slices as an int."""
    try:
        operator.index(key)
    except TypeError:
        return False
    return True


def _masked(x: Tensor, mask: Tensor) -> Tensor:
    """The slices of ``x`` where ``mask`` (the shape of x's first axes) is True, in order."""
    if mask.ndim > 1:  # its axes flattened into one, and x's with them
        x = reshape(x, (-1, *cast(tuple[int, ...], x.shape[mask.ndim :])))
        mask = reshape(mask, (-1,))
    return gather(x, reshape(where(mask), (-1,)))


def _index(k: Any) -> Index:
    if k is None or k is Ellipsis:
        return k
    if isinstance(k, slice):
        if k.step is not None and operator.index(k.step) == 0:
            raise InvalidArgumentError("slice step cannot be zero")
        return slice(*(None if v is None else operator.index(v) for v in (k.start, k.stop, k.step)))
    if isinstance(k, bool | np.bool_):
        raise TypeError("indexing with a bool is not supported; use where() or gather()")
    try:
        return operator.index(k)
    except TypeError:
        raise TypeError(
            f"a tensor index must be an int, slice, None, ... or an int list, got {k!r:.40}"
        ) from None


Tensor.__getitem__ = getitem  # `t[1:, ::2]`: attached as math_ops attaches `+`


__all__ = [
    "concat",
    "gather",
    "getitem",
    "one_hot",
    "split",
    "stack",
    "strided_slice_grad",
    "unsorted_segment_sum",
    "where",
]
