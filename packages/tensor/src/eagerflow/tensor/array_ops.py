"""Array ops that make tensors and change their shape (``indexing_ops`` joins, splits and picks).

As in ``math_ops``, each op's NumPy kernel (with its shape and dtype rules) sits right above
the public function that calls ``execute``, whose ``@op`` registers the op.
"""

from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import ANY, FLOATS, INTEGERS, NUMBERS, DType
from eagerflow.tensor.errors import (
    DTypeError,
    InvalidArgumentError,
    ShapeError,
    a_tensor,
    format_shape,
)
from eagerflow.tensor.execution import NO_ATTRS, execute
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.rules import (
    attr_dtype_rule,
    broadcast,
    normalize_axis,
    same_dtype,
    same_shape_rule,
)
from eagerflow.tensor.schema import (
    Array,
    DTypeAttr,
    Float,
    Int,
    Ints,
    Maybe,
    Omissible,
    Scalar,
)
from eagerflow.tensor.tensor import Tensor, convert_to_tensor, holds_tensors, to_array

ShapeLike = Sequence[int] | int


def static_shape(shape: Any, what: str) -> tuple[int, ...]:
    """A shape argument as a tuple of Python ints (a tensor's value is read, eagerly)."""
    if isinstance(shape, int | np.integer):
        return (int(shape),)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"{what}: shape must be a sequence of ints, got {shape!r}") from None


def axes_tuple(axis: Any) -> tuple[int, ...]:
    """An axis argument (an int, NumPy int, or a sequence of them) as a tuple of ints."""
    try:
        return (operator.index(axis),)
    except TypeError:
        return tuple(operator.index(a) for a in axis)


def _no_inputs_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """Ops that make a tensor from attributes alone: the shape is an attribute."""
    return [attrs["shape"]]


# --- making tensors --------------------------------------------------------------------------
def const_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """A constant has its value's shape."""
    return [attrs["value"].shape]


def const_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    return [dtypes.from_numpy(attrs["value"].dtype)]  # type: ignore[list-item]


def const_kernel(value: np.ndarray) -> np.ndarray:
    return value


@op("Const", const_kernel, shape=const_shape, dtype=const_dtype, attrs={"value": Array()},
    constant=True)  # fmt: skip
def constant(
    value: Any,
    dtype: DType | str | None = None,
    shape: ShapeLike | None = None,
    name: str | None = None,
) -> Tensor:
    """A constant tensor from a Python or NumPy value (see ``convert_to_tensor`` for dtypes).

    With ``shape``, a single value fills the shape and any other value is reshaped to it.
    In graph mode this adds a ``Const`` node holding the value.
    """
    if isinstance(value, Tensor):
        value = value.numpy()
    elif holds_tensors(value):  # packed as convert_to_tensor packs it: the tensors' dtype
        value = convert_to_tensor(value, dtype).numpy()
    array = to_array(value, None if dtype is None else dtypes.as_dtype(dtype))
    if shape is not None:
        target = static_shape(shape, "constant")
        if array.size == 1:
            array = np.full(target, array.reshape(()), dtype=array.dtype)
        elif array.size == math.prod(target):
            array = array.reshape(target)
        else:
            raise ShapeError(
                f"constant: {array.size} values cannot fill shape {format_shape(target)} "
                f"({math.prod(target)} elements)"
            )
    return execute("Const", (), {"value": array}, name)[0]


def fill_kernel(shape: tuple[int, ...], value: Any, dtype: DType) -> np.ndarray:
    return np.full(shape, value, dtype=dtype.np)


@op("Fill", fill_kernel, shape=_no_inputs_shape, dtype=attr_dtype_rule,
    attrs={"shape": Ints(min=0), "value": Scalar("dtype"), "dtype": DTypeAttr()})  # fmt: skip
def fill(dims: ShapeLike, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape ``dims`` filled with ``value`` (its dtype is the value's)."""
    scalar = to_array(value)
    if scalar.ndim:
        raise ShapeError(f"Fill: value must be a scalar, got shape {format_shape(scalar.shape)}")
    attrs = {
        "shape": check_dims(static_shape(dims, "fill")),
        "value": scalar.item(),
        "dtype": dtypes.from_numpy(scalar.dtype),
    }
    return execute("Fill", (), attrs, name)[0]


def check_dims(shape: tuple[int, ...]) -> tuple[int, ...]:
    if any(d < 0 for d in shape):
        raise ShapeError(f"dimensions must be >= 0, got shape {format_shape(shape)}")
    return shape


def zeros(shape: ShapeLike, dtype: DType | str = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of ``shape`` filled with zeros."""
    dt = dtypes.as_dtype(dtype)
    attrs = {"shape": check_dims(static_shape(shape, "zeros")), "value": 0, "dtype": dt}
    return execute("Fill", (), attrs, name)[0]


def ones(shape: ShapeLike, dtype: DType | str = dtypes.float32, name: str | None = None) -> Tensor:
    """A tensor of ``shape`` filled with ones."""
    dt = dtypes.as_dtype(dtype)
    attrs = {"shape": check_dims(static_shape(shape, "ones")), "value": 1, "dtype": dt}
    return execute("Fill", (), attrs, name)[0]


def zeros_like_kernel(x: np.ndarray) -> np.ndarray:
    return np.zeros(x.shape, x.dtype)


@op(
    "ZerosLike",
    zeros_like_kernel,
    shape=same_shape_rule,
    dtype=same_dtype(ANY),
    needs_only_shapes=True,
)
def zeros_like(x: Any, name: str | None = None) -> Tensor:
    """Zeros of x's shape and dtype."""
    x = x if type(x) is Tensor else convert_to_tensor(x)
    return execute("ZerosLike", (x,), NO_ATTRS, name)[0]


def ones_like_kernel(x: np.ndarray) -> np.ndarray:
    ones = np.empty(x.shape, x.dtype)  # and fill: twice as fast as np.ones on small arrays
    ones.fill(1)
    return ones


@op(
    "OnesLike",
    ones_like_kernel,
    shape=same_shape_rule,
    dtype=same_dtype(ANY),
    needs_only_shapes=True,
)
def ones_like(x: Any, name: str | None = None) -> Tensor:
    """Ones of x's shape and dtype."""
    x = x if type(x) is Tensor else convert_to_tensor(x)
    return execute("OnesLike", (x,), NO_ATTRS, name)[0]


_BOUNDS = ("start", "limit", "delta")


def range_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """The number of steps from start toward limit: max(0, ceil((limit - start) / delta)).

    With tensor bounds (the op's three inputs) the number is known only when the op runs."""
    if "start" not in attrs:
        for what, shape in zip(_BOUNDS, shapes, strict=True):
            if shape not in ((), None):
                raise ShapeError(f"range: {what} must be a scalar, got shape {format_shape(shape)}")
        return [(None,)]
    start, limit, delta = attrs["start"], attrs["limit"], attrs["delta"]
    if delta == 0:
        raise InvalidArgumentError("range: delta must not be 0")
    if (limit - start) * delta < 0:  # range(-3): TensorFlow refuses it, where Python's is empty
        raise InvalidArgumentError(
            f"range: from {start} by {delta} never reaches {limit}; a negative delta counts down"
        )
    return [(math.ceil((limit - start) / delta),)]


def range_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    """The ``dtype`` attribute, which tensor bounds must already have."""
    if any(d is not attrs["dtype"] for d in dts):
        names = ", ".join(str(d) for d in dts)
        raise DTypeError(f"range: bounds of dtypes {names} for a range of {attrs['dtype']}")
    return [attrs["dtype"]]


def range_kernel(*bounds: np.ndarray, dtype: DType, **static: Any) -> np.ndarray:
    # the bounds are the op's attributes `start`, `limit`, `delta`, or else its three inputs
    if bounds:
        static = dict(zip(_BOUNDS, (b.item() for b in bounds), strict=True))
    (count,) = range_shape((), static)[0]
    assert count is not None  # known once the bounds are
    return (static["start"] + static["delta"] * np.arange(count)).astype(dtype.np)


# Range's bounds are attributes when they are known (a graph then knows its length), else
# inputs
RANGE_ATTRS = {
    "start": Omissible(Float()),
    "limit": Omissible(Float()),
    "delta": Omissible(Float()),
    "dtype": DTypeAttr(NUMBERS),
}


@op("Range", range_kernel, shape=range_shape, dtype=range_dtype, attrs=RANGE_ATTRS)
def range(  # TensorFlow's name; shadows the builtin in this module (see `builtins`)
    start: Any,
    limit: Any = None,
    delta: Any = 1,
    dtype: DType | str | None = None,
    name: str | None = None,
) -> Tensor:
    """Like Python's ``range`` (``range(5)``, ``range(1, 10, 2)``) but a tensor: [start,
    start + delta, ...] up to but excluding ``limit``; floats allowed.

    The dtype defaults to int32 for int arguments and float32 otherwise (with tensor
    arguments: the widest of their dtypes, as in TensorFlow; the others are cast to it).

    Numbers (and eager tensors, whose values are known) become attributes of the op, so a
    graph knows the range's length. A symbolic tensor bound, as in ``range(1, n + 1)``
    inside a traced function, makes the bounds the op's inputs: the length is then known
    only when the graph runs.
    """
    if limit is None:
        start, limit = 0, start
    bounds = (start, limit, delta)
    dtype = _widest([natural_dtype(b) for b in bounds]) if dtype is None else dtypes.as_dtype(dtype)
    inputs = tuple(_bound_as(b, dtype) for b in bounds)  # 0.5 as int32 raises, as in TF
    if builtins.all(_value_known(b) for b in inputs):
        return _static_range(inputs, dtype, name)
    return execute("Range", inputs, {"dtype": dtype}, name)[0]


def _value_known(bound: Any) -> bool:
    """A Python number, or an eager tensor (a symbolic one has no ``_value`` until run)."""
    return not isinstance(bound, Tensor) or bound._value is not None


def _bound_as(bound: Any, dtype: DType) -> Tensor:
    """A bound as a tensor of the range's dtype (a tensor of another dtype is cast, as
    TensorFlow's ``range`` does)."""
    if not isinstance(bound, Tensor):
        return convert_to_tensor(bound, dtype)
    if bound.dtype is dtype:
        return bound
    return execute("Cast", (bound,), {"dtype": dtype})[0]


def _static_range(bounds: tuple[Tensor, ...], dtype: DType, name: str | None) -> Tensor:
    attrs: dict[str, Any] = {k: b._value.item() for k, b in zip(_BOUNDS, bounds, strict=True)}
    attrs["dtype"] = dtype
    return execute("Range", (), attrs, name)[0]


_RANGE_DTYPES = (dtypes.int32, dtypes.int64, dtypes.float16, dtypes.float32, dtypes.float64)


def _widest(found: list[DType]) -> DType:
    """TensorFlow's order for ``range``'s inferred dtype: int32 < int64 < float16 < ..."""
    for d in found:
        if d not in _RANGE_DTYPES:
            raise DTypeError(f"range: bounds must be numbers, got {a_tensor(d)}")
    return builtins.max(found, key=_RANGE_DTYPES.index)


def linspace_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """``num`` values."""
    return [(attrs["num"],)]


def linspace_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    # checked here, not in the shape rule: eager mode runs only the dtype rule
    if attrs["num"] < 0:
        raise InvalidArgumentError(f"num must be >= 0, got {attrs['num']}")
    return [attrs["dtype"]]


def linspace_kernel(start: float, stop: float, num: int, dtype: DType) -> np.ndarray:
    return np.linspace(start, stop, num, dtype=dtype.np)


LINSPACE_ATTRS = {"start": Float(), "stop": Float(), "num": Int(min=0), "dtype": DTypeAttr(FLOATS)}


@op("LinSpace", linspace_kernel, shape=linspace_shape, dtype=linspace_dtype, attrs=LINSPACE_ATTRS)
def linspace(start: Any, stop: Any, num: int, name: str | None = None) -> Tensor:
    """``num`` evenly spaced floats from ``start`` to ``stop``, both included:
    start + i (stop - start) / (num - 1) for i = 0 ... num - 1 (none for ``num=0``).

    The dtype is that of a float ``start`` or ``stop`` (NumPy's float64 stays float64),
    float32 for Python floats, float64 when both are integers, as TensorFlow's
    ``tf.linspace`` gives (``tests/conformance`` checks it).
    """
    try:
        count = operator.index(num)
    except TypeError:
        raise TypeError(f"linspace: num must be an int, got {num!r:.40}") from None
    ends: list[Any] = []
    floats: dict[DType, None] = {}  # the float dtypes of start and stop, in order
    for v in (start, stop):
        dtype = natural_dtype(v)
        if dtype is dtypes.bool_ or np.ndim(v):
            raise DTypeError(
                f"start and stop must be numbers, got {start!r:.40} and {stop!r:.40}"
            ).at_op("LinSpace", ())
        ends.append(np.asarray(v).item())
        if dtype.is_floating and type(v) is not float:  # a Python float takes the other's
            floats[dtype] = None
    integers = all(natural_dtype(v).is_integer for v in (start, stop))  # TF: float64
    if len(floats) > 1:
        found = " and ".join(map(str, floats))
        raise DTypeError(f"start and stop must have one dtype, got {found}").at_op("LinSpace", ())
    attrs = {
        "start": ends[0],
        "stop": ends[1],
        "num": count,
        "dtype": next(iter(floats), dtypes.float64 if integers else dtypes.float32),
    }
    return execute("LinSpace", (), attrs, name)[0]


def identity_kernel(x: np.ndarray) -> np.ndarray:
    return x


@op("Identity", identity_kernel, shape=same_shape_rule, dtype=same_dtype(ANY))
def identity(x: Any, name: str | None = None) -> Tensor:
    """x itself, as a new op's output (to name a value in a graph, or to give an op a node of
    its own)."""
    return execute("Identity", (convert_to_tensor(x),), NO_ATTRS, name)[0]


def stop_gradient_kernel(x: np.ndarray) -> np.ndarray:
    return x


@op("StopGradient", stop_gradient_kernel, shape=same_shape_rule, dtype=same_dtype(ANY))
def stop_gradient(x: Any, name: str | None = None) -> Tensor:
    """x, treated as a constant by every gradient computation."""
    return execute("StopGradient", (convert_to_tensor(x),), NO_ATTRS, name)[0]


def size_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """A scalar."""
    return [()]


def size_kernel(x: np.ndarray, dtype: DType) -> np.ndarray:
    return np.asarray(np.size(x), dtype=dtype.np)


@op("Size", size_kernel, shape=size_shape, dtype=attr_dtype_rule,
    attrs={"dtype": DTypeAttr(INTEGERS)}, needs_only_shapes=True)  # fmt: skip
def size(x: Any, out_type: DType | str = dtypes.int32, name: str | None = None) -> Tensor:
    """The number of elements of x, as a scalar tensor (in a graph, known only when it runs if
    x's shape is not)."""
    attrs = {"dtype": dtypes.as_dtype(out_type)}
    return execute("Size", (convert_to_tensor(x),), attrs, name)[0]


# --- reshaping --------------------------------------------------------------------------------
def reshape_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """The new shape, with its one ``-1`` (if any) inferred from the number of elements."""
    old, new = shapes[0], attrs["shape"]
    if list(new).count(-1) > 1 or any(d < -1 for d in new):
        raise ShapeError(
            f"new shape {format_shape(new)} may have at most one -1 and no other negatives"
        )
    known_new = math.prod(d for d in new if d != -1)
    if any(d is None for d in old):
        return [tuple(None if d == -1 else d for d in new)]
    size = math.prod(old)  # type: ignore[arg-type]
    if -1 in new:  # TensorFlow leaves 0s out on both sides: (0, 4) to [0, -1] is (0, 4)
        zero = 0 in new
        elements = math.prod(d for d in old if d or not zero)  # type: ignore[misc]
        known = math.prod(d for d in new if d > 0)
        if elements % known or (zero and size):
            raise ShapeError(
                f"cannot reshape {format_shape(old)} ({size} elements) to {format_shape(new)}"
            )
        return [tuple(elements // known if d == -1 else d for d in new)]
    if size != known_new:
        raise ShapeError(
            f"cannot reshape {format_shape(old)} ({size} elements) to {format_shape(new)} "
            f"({known_new} elements)"
        )
    return [tuple(new)]


def reshape_kernel(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if any(d < 0 for d in shape):  # the rule's -1 (and its refusals), not NumPy's
        shape = reshape_shape([x.shape], {"shape": shape})[0]  # type: ignore[assignment]
    return np.reshape(x, shape)


@op("Reshape", reshape_kernel, shape=reshape_shape, dtype=same_dtype(ANY),
    attrs={"shape": Ints(min=-1)})  # fmt: skip
def reshape(x: Any, shape: ShapeLike, name: str | None = None) -> Tensor:
    """The same elements, in row-major order, in a new ``shape``; one dimension may be -1
    (inferred)."""
    attrs = {"shape": static_shape(shape, "reshape")}
    return execute("Reshape", (convert_to_tensor(x),), attrs, name)[0]


def transpose_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """Dimension i of the output is dimension perm[i] of the input."""
    shape, perm = shapes[0], attrs["perm"]
    if sorted(perm) != list(builtins.range(len(shape))):
        raise ShapeError(
            f"perm {perm} is not a permutation of the axes of shape {format_shape(shape)}"
        )
    return [tuple(shape[p] for p in perm)]


def transpose_kernel(x: np.ndarray, perm: tuple[int, ...]) -> np.ndarray:
    return np.transpose(x, perm)


@op("Transpose", transpose_kernel, shape=transpose_shape, dtype=same_dtype(ANY),
    attrs={"perm": Ints()})  # fmt: skip
def transpose(x: Any, perm: Sequence[int] | None = None, name: str | None = None) -> Tensor:
    """Permute the axes of x (by default reverse them: a matrix transpose)."""
    x = convert_to_tensor(x)
    perm = tuple(reversed(builtins.range(x.ndim))) if perm is None else tuple(perm)
    return execute("Transpose", (x,), {"perm": perm}, name)[0]


def expand_dims_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """A new axis of size 1 at ``axis``."""
    shape = shapes[0]
    axis = normalize_axis(attrs["axis"], len(shape), extra=1)
    return [(*shape[:axis], 1, *shape[axis:])]


def expand_dims_kernel(x: np.ndarray, axis: int) -> np.ndarray:
    # a reshape to the shape rule's answer: np.expand_dims does the same, more slowly
    return x.reshape(expand_dims_shape([x.shape], {"axis": axis})[0])  # type: ignore[arg-type]


@op("ExpandDims", expand_dims_kernel, shape=expand_dims_shape, dtype=same_dtype(ANY),
    attrs={"axis": Int()})  # fmt: skip
def expand_dims(x: Any, axis: int, name: str | None = None) -> Tensor:
    """x with a new axis of size 1 inserted at ``axis``."""
    return execute("ExpandDims", (convert_to_tensor(x),), {"axis": int(axis)}, name)[0]


def squeeze_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """Drop the size-1 axes listed in ``axis`` (None: every size-1 axis)."""
    shape, axis = shapes[0], attrs["axis"]
    if axis is None:
        if None in shape:
            raise ShapeError(
                f"squeeze of shape {format_shape(shape)} with unknown dimensions needs axis="
            )
        return [tuple(d for d in shape if d != 1)]
    axes = {normalize_axis(a, len(shape)) for a in axis}
    for a in axes:
        if shape[a] not in (1, None):
            raise ShapeError(
                f"cannot squeeze axis {a} of shape {format_shape(shape)}: its size is not 1"
            )
    return [tuple(d for i, d in enumerate(shape) if i not in axes)]


def squeeze_kernel(x: np.ndarray, axis: tuple[int, ...] | None) -> np.ndarray:
    return np.squeeze(x, axis=axis)


@op("Squeeze", squeeze_kernel, shape=squeeze_shape, dtype=same_dtype(ANY),
    attrs={"axis": Maybe(Ints())})  # fmt: skip
def squeeze(x: Any, axis: int | Sequence[int] | None = None, name: str | None = None) -> Tensor:
    """x without its size-1 axes (only those in ``axis``, when given)."""
    if axis is not None:
        axis = axes_tuple(axis)
    return execute("Squeeze", (convert_to_tensor(x),), {"axis": axis}, name)[0]


def broadcast_to_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """x stretched to ``shape`` by broadcasting; the result must have exactly that shape."""
    target = attrs["shape"]
    if broadcast(shapes[0], target) != target:
        raise ShapeError(
            f"shape {format_shape(shapes[0])} cannot be broadcast to {format_shape(target)}"
        )
    return [target]


def broadcast_to_kernel(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    if x.ndim > len(shape):  # (an assignment would drop leading 1s; broadcasting never does)
        broadcast_to_shape([x.shape], {"shape": shape})
    if math.prod(shape) > 1 << 14:  # a view costs ~5 us to make, a copy ~1 us per 4096 values
        return np.broadcast_to(x, shape)
    out = np.empty(shape, x.dtype)
    out[...] = x
    return out


@op(
    "BroadcastTo",
    broadcast_to_kernel,
    shape=broadcast_to_shape,
    dtype=same_dtype(ANY),
    attrs={"shape": Ints(min=0)},
    expands=True,
)
def broadcast_to(x: Any, shape: ShapeLike, name: str | None = None) -> Tensor:
    """x stretched to ``shape`` by NumPy's broadcasting rules."""
    attrs = {"shape": check_dims(static_shape(shape, "broadcast_to"))}
    return execute("BroadcastTo", (convert_to_tensor(x),), attrs, name)[0]


def tile_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """Each dimension multiplied by its entry in ``multiples``."""
    shape, multiples = shapes[0], attrs["multiples"]
    if len(multiples) != len(shape) or any(m < 0 for m in multiples):
        raise ShapeError(
            f"multiples {multiples} must be {len(shape)} non-negative ints for shape "
            f"{format_shape(shape)}"
        )
    return [tuple(None if d is None else d * m for d, m in zip(shape, multiples, strict=True))]


def tile_kernel(x: np.ndarray, multiples: tuple[int, ...]) -> np.ndarray:
    tile_shape([x.shape], {"multiples": multiples})  # NumPy would pad short multiples
    return np.tile(x, multiples)


@op("Tile", tile_kernel, shape=tile_shape, dtype=same_dtype(ANY), attrs={"multiples": Ints(min=0)})
def tile(x: Any, multiples: Sequence[int], name: str | None = None) -> Tensor:
    """x repeated ``multiples[i]`` times along axis i."""
    attrs = {"multiples": static_shape(multiples, "tile")}
    return execute("Tile", (convert_to_tensor(x),), attrs, name)[0]


def natural_dtype(value: Any) -> DType:
    """The dtype ``convert_to_tensor(value)`` would give (a Python int: int32, ...)."""
    own = getattr(value, "dtype", None)  # a tensor's or a variable's
    if isinstance(own, DType):
        return own
    return dtypes.from_numpy(to_array(value).dtype)  # type: ignore[return-value]


__all__ = [
    "broadcast_to",
    "constant",
    "expand_dims",
    "fill",
    "identity",
    "linspace",
    "natural_dtype",
    "ones",
    "ones_like",
    "range",
    "reshape",
    "size",
    "squeeze",
    "stop_gradient",
    "tile",
    "transpose",
    "zeros",
    "zeros_like",
]
