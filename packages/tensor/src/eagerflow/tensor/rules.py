"""Shape and dtype rules shared by many ops.

A shape is a tuple whose entries are ints or ``None`` (a dimension not known until a graph
runs). Rules never look at values, only at shapes, dtypes and attributes, so the graph
package can call them while building a graph. They raise with a short reason; the seam adds
the op's name and its inputs (``EagerflowError.at_op``).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import AxisError, DTypeError, ShapeError, format_shape
from eagerflow.tensor.registry import Attrs, DTypeRule, Shape


# --- shapes ---------------------------------------------------------------------------------
def compatible(a: Sequence[int | None] | None, b: Sequence[int | None] | None) -> bool:
    """Could one tensor have both shapes? Yes when the ranks are equal and each pair of
    dimensions is equal, where an unknown (None) dimension fits any size and an unknown rank
    (the shape None) fits any shape: ``(None, 3)`` fits ``(2, 3)`` but not ``(2, 4)`` or
    ``(3,)``. Every "does this shape fit that one" check in eagerflow asks this function."""
    if a is None or b is None or a == b:
        return True
    return len(a) == len(b) and all(
        x is None or y is None or x == y for x, y in zip(a, b, strict=True)
    )


def broadcast(*shapes: Shape) -> Shape:
    """NumPy broadcasting: align on the right; a dimension of 1 stretches to the other size.

    Unknown dimensions (None) stay unknown unless the other side settles them.
    """
    rank = max(len(s) for s in shapes)
    out: list[int | None] = []
    for i in range(-rank, 0):
        dims = {s[i] for s in shapes if len(s) >= -i} - {1}
        known = dims - {None}
        if len(known) > 1:
            raise ShapeError(
                "shapes "
                + " and ".join(format_shape(s) for s in shapes)
                + " cannot be broadcast together"
            )
        out.append(known.pop() if known else (None if None in dims else 1))
    return tuple(out)


def broadcast_rule(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """Elementwise ops with broadcasting: one output of the broadcast shape."""
    return [broadcast(*shapes)]


def same_shape_rule(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """Elementwise unary ops: the output has the input's shape."""
    return [shapes[0]]


def axis_argument(axis: Any, op: str) -> int:
    """An ``axis`` argument as an int: a Python or NumPy integer (or a 0-d integer tensor);
    ``axis=1.5`` or ``"1"`` is a TypeError naming the op and the argument, not truncated."""
    try:
        return operator.index(axis)
    except TypeError:
        raise TypeError(
            f"{op}: axis must be an integer, got {type(axis).__name__} {axis!r:.40}"
        ) from None


def axes_argument(axis: Any, op: str) -> tuple[int, ...]:
    """An ``axis`` argument that may also be a sequence of integers, as a tuple."""
    if isinstance(axis, (tuple, list)):  # (first: a failed operator.index costs ~1 us)
        return tuple(axis_argument(a, op) for a in axis)
    try:
        return (operator.index(axis),)
    except TypeError:
        pass
    if isinstance(axis, str) or not isinstance(axis, (Sequence, np.ndarray)):
        raise TypeError(f"{op}: axis must be an integer or a sequence of integers, got "
                        f"{type(axis).__name__} {axis!r:.40}")  # fmt: skip
    return tuple(axis_argument(a, op) for a in axis)


def normalize_axis(axis: int, rank: int, *, extra: int = 0) -> int:
    """``axis`` in ``[-rank-extra, rank+extra)`` made non-negative; ``AxisError`` otherwise.

    ``extra=1`` is for ops that insert a new axis (``expand_dims``, ``stack``).
    """
    size = rank + extra
    if not -size <= axis < size:
        raise AxisError(f"axis {axis} is out of range for rank {rank} (valid: {-size}..{size - 1})")
    return axis % size if size else 0


def reduce_rule(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """Reductions: drop (or keep as 1, with ``keepdims``) every axis in ``attrs['axis']``."""
    shape = shapes[0]
    axes = reduced_axes(attrs["axis"], len(shape))
    if attrs["keepdims"]:
        return [tuple(1 if i in axes else d for i, d in enumerate(shape))]
    return [tuple(d for i, d in enumerate(shape) if i not in axes)]


def reduced_axes(axis: int | Sequence[int] | None, rank: int) -> set[int]:
    """The non-negative axes a reduction over ``axis`` (None: all) removes."""
    if axis is None:
        return set(range(rank))
    axes = [axis] if isinstance(axis, int) else list(axis)
    normalized = [normalize_axis(a, rank) for a in axes]
    if len(set(normalized)) != len(normalized):
        raise AxisError(f"axis {tuple(axes)} names the same axis twice")
    return set(normalized)


# --- dtypes ---------------------------------------------------------------------------------
def names(allowed: frozenset[DType]) -> str:
    """The dtypes of ``allowed`` for a message: ``float16, float32, float64``."""
    return ", ".join(sorted(d.name for d in allowed))


def same_dtype(allowed: frozenset[DType], result: DType | None = None) -> DTypeRule:
    """Rule: every input has one dtype, from ``allowed``; the output has it too (or ``result``)."""

    def rule(dts: Sequence[DType], attrs: Attrs) -> Sequence[DType]:
        first = dts[0]
        if dts.count(first) != len(dts):
            raise DTypeError(
                "inputs must have the same dtype, got "
                + " and ".join(x.name for x in dts)
                + "; use cast() to convert one of them"
            )
        if first not in allowed:
            raise DTypeError(f"dtype {first} is not supported (supported: {names(allowed)})")
        return (first,) if result is None else (result,)

    rule.__qualname__ = f"same_dtype({names(allowed)})"
    return rule


def attr_dtype_rule(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    """Ops whose output dtype is their ``dtype`` attribute (fill, range, random, ...)."""
    return [attrs["dtype"]]


__all__ = [
    "attr_dtype_rule",
    "broadcast",
    "broadcast_rule",
    "compatible",
    "names",
    "normalize_axis",
    "reduce_rule",
    "reduced_axes",
    "same_dtype",
    "same_shape_rule",
]
