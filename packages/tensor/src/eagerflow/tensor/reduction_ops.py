"""Reductions: ``reduce_sum``, ``reduce_mean``, ``reduce_max``, ``reduce_min``,
``reduce_prod``, ``argmax`` and ``argmin``, each kernel right above its public function, as
in ``math_ops``.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import ANY, INTEGERS, NUMBERS, DType
from eagerflow.tensor.errors import DTypeError
from eagerflow.tensor.execution import execute
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.rules import (
    normalize_axis,
    reduce_rule,
    same_dtype,
)
from eagerflow.tensor.schema import Bool, DTypeAttr, Either, Int, Ints, Maybe
from eagerflow.tensor.tensor import Tensor, convert_to_tensor

Axis = int | Sequence[int] | None  # what a reduction takes
Axes = int | tuple[int, ...] | None  # what its op's "axis" attribute holds


# --- reductions ------------------------------------------------------------------------------
# a reduction's attributes: the axis or axes (None: all of them), and whether they are kept
REDUCE_ATTRS = {"axis": Maybe(Either(Int(), Ints())), "keepdims": Bool()}


def _reduction(op_name: str, x: Any, axis: Axis, keepdims: bool, name: str | None) -> Tensor:
    if type(x) is not Tensor:
        x = convert_to_tensor(x)
    axes: Axes = None
    if type(axis) is tuple:  # (tested first: raising and catching TypeError costs more)
        axes = tuple(map(operator.index, axis))
    elif axis is not None:
        try:
            axes = operator.index(axis)  # type: ignore[arg-type]
        except TypeError:
            axes = tuple(map(operator.index, axis))  # type: ignore[arg-type]
    return execute(op_name, (x,), {"axis": axes, "keepdims": bool(keepdims)}, name)[0]


_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def sum_kernel(x: np.ndarray, axis: Axes, keepdims: bool) -> np.ndarray:
    if x.dtype in _BLAS_FLOATS and x.ndim >= 2 and x.size and x.flags.c_contiguous:
        leading = tuple(range(x.ndim - 1))
        if axis == leading or (axis == 0 and x.ndim == 2):
            # Every axis but the last: a bias's gradient. np.add.reduce walks the rows one by
            # one (86 us for 64x8x8x16 float32); a vector of ones times the rows is one BLAS
            # call (5 us). The same sum, its terms added in another order.
            rows = x.reshape(-1, x.shape[-1])
            total = np.ones(rows.shape[0], x.dtype) @ rows
            return total.reshape((1,) * len(leading) + total.shape) if keepdims else total
    # np.add.reduce is what np.sum calls, without np.sum's Python wrapper (it shows on small x)
    return np.add.reduce(x, axis=axis, dtype=x.dtype, keepdims=keepdims)  # type: ignore[call-overload]


@op("Sum", sum_kernel, shape=reduce_rule, dtype=same_dtype(NUMBERS),
    attrs=REDUCE_ATTRS, retains_inputs=False)  # fmt: skip
def reduce_sum(
    x: Any, axis: Axis = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """Σ x over ``axis`` (an int, a list of ints, or None for all axes)."""
    return _reduction("Sum", x, axis, keepdims, name)


def mean_kernel(x: np.ndarray, axis: Axes, keepdims: bool) -> np.ndarray:
    if x.dtype.kind == "f":
        if not x.size:  # NaN, with NumPy's "mean of empty slice" warning
            return np.mean(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
        total = np.add.reduce(x, axis=axis, dtype=x.dtype, keepdims=keepdims)  # type: ignore[call-overload]  # as np.mean does
        return total / (x.size // builtins.max(total.size, 1))
    total = np.sum(x, axis=axis, keepdims=keepdims)
    count = x.size // builtins.max(np.size(total), 1) if x.size else 1
    return (np.sign(total) * (np.abs(total) // count)).astype(x.dtype)


@op("Mean", mean_kernel, shape=reduce_rule, dtype=same_dtype(NUMBERS),
    attrs=REDUCE_ATTRS, retains_inputs=False)  # fmt: skip
def reduce_mean(
    x: Any, axis: Axis = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """The mean over ``axis`` (an int, a list of ints, or None for all axes); for integers
    the quotient truncates toward zero, as in TensorFlow."""
    return _reduction("Mean", x, axis, keepdims, name)


def _extreme(dtype: np.dtype, highest: bool) -> Any:
    """The dtype's highest or lowest value (infinities for floats): what a maximum or minimum
    over no elements is, as in TensorFlow, where NumPy raises."""
    if dtype.kind == "f":
        return np.inf if highest else -np.inf
    info = np.iinfo(dtype)
    return info.max if highest else info.min


def max_kernel(x: np.ndarray, axis: Axes, keepdims: bool) -> np.ndarray:
    if not x.size:
        return np.max(x, axis=axis, keepdims=keepdims, initial=_extreme(x.dtype, highest=False))
    return np.max(x, axis=axis, keepdims=keepdims)


@op("Max", max_kernel, shape=reduce_rule, dtype=same_dtype(NUMBERS),
    attrs=REDUCE_ATTRS, retains_inputs=False)  # fmt: skip
def reduce_max(
    x: Any, axis: Axis = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """The largest element over ``axis`` (an int, a list of ints, or None for all axes); over
    no elements, the dtype's lowest value (-inf for floats), as in TensorFlow."""
    return _reduction("Max", x, axis, keepdims, name)


def min_kernel(x: np.ndarray, axis: Axes, keepdims: bool) -> np.ndarray:
    if not x.size:
        return np.min(x, axis=axis, keepdims=keepdims, initial=_extreme(x.dtype, highest=True))
    return np.min(x, axis=axis, keepdims=keepdims)


@op("Min", min_kernel, shape=reduce_rule, dtype=same_dtype(NUMBERS),
    attrs=REDUCE_ATTRS, retains_inputs=False)  # fmt: skip
def reduce_min(
    x: Any, axis: Axis = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """The smallest element over ``axis`` (an int, a list of ints, or None for all axes); over
    no elements, the dtype's highest value (inf for floats), as in TensorFlow."""
    return _reduction("Min", x, axis, keepdims, name)


def prod_kernel(x: np.ndarray, axis: Axes, keepdims: bool) -> np.ndarray:
    return np.prod(x, axis=axis, keepdims=keepdims, dtype=x.dtype)


@op("Prod", prod_kernel, shape=reduce_rule, dtype=same_dtype(NUMBERS),
    attrs=REDUCE_ATTRS, retains_inputs=False)  # fmt: skip
def reduce_prod(
    x: Any, axis: Axis = None, keepdims: bool = False, name: str | None = None
) -> Tensor:
    """Π x over ``axis`` (an int, a list of ints, or None for all axes)."""
    return _reduction("Prod", x, axis, keepdims, name)


def arg_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """argmax/argmin drop the one axis they search along."""
    shape = shapes[0]
    axis = normalize_axis(attrs["axis"], len(shape))
    return [shape[:axis] + shape[axis + 1 :]]


def arg_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    if dts[0] not in ANY:
        raise DTypeError(f"dtype {dts[0]} is not supported (supported: numbers and bool)")
    if attrs["output_type"] not in INTEGERS:
        raise DTypeError(f"output_type must be int32 or int64, got {attrs['output_type']}")
    return [attrs["output_type"]]


def _without_nan(x: np.ndarray, fill: float) -> np.ndarray:
    """``x`` with NaN as ``fill``: TensorFlow's argmax and argmin pass over NaN (they compare
    with > and <), where NumPy's pick it."""
    if x.dtype.kind != "f":
        return x
    nan = np.isnan(x)
    return np.where(nan, fill, x) if nan.any() else x


def argmax_kernel(x: np.ndarray, axis: int, output_type: DType) -> np.ndarray:
    return np.argmax(_without_nan(x, -np.inf), axis=axis).astype(output_type.np)


ARG_ATTRS = {"axis": Int(), "output_type": DTypeAttr(INTEGERS)}


@op("ArgMax", argmax_kernel, shape=arg_shape, dtype=arg_dtype, attrs=ARG_ATTRS,
    retains_inputs=False)  # fmt: skip
def argmax(
    x: Any, axis: int = 0, output_type: DType = dtypes.int64, name: str | None = None
) -> Tensor:
    """The index of the largest element along ``axis``, the first one on ties, NaN passed over
    (TensorFlow's default axis is 0)."""
    x = convert_to_tensor(x)
    attrs = {"axis": int(axis), "output_type": dtypes.as_dtype(output_type)}
    return execute("ArgMax", (x,), attrs, name)[0]


def argmin_kernel(x: np.ndarray, axis: int, output_type: DType) -> np.ndarray:
    return np.argmin(_without_nan(x, np.inf), axis=axis).astype(output_type.np)


@op("ArgMin", argmin_kernel, shape=arg_shape, dtype=arg_dtype, attrs=ARG_ATTRS,
    retains_inputs=False)  # fmt: skip
def argmin(
    x: Any, axis: int = 0, output_type: DType = dtypes.int64, name: str | None = None
) -> Tensor:
    """The index of the smallest element along ``axis``, the first one on ties, NaN passed over
    (TensorFlow's default axis is 0)."""
    x = convert_to_tensor(x)
    attrs = {"axis": int(axis), "output_type": dtypes.as_dtype(output_type)}
    return execute("ArgMin", (x,), attrs, name)[0]


__all__ = [
    "argmax",
    "argmin",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
]
