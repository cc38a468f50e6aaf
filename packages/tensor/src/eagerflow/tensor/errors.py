"""The errors eagerflow raises for bad input.

Each is also a subclass of the built-in exception a Python user would expect
(``ShapeError`` is a ``ValueError``, ``DTypeError`` a ``TypeError``), so ``except
ValueError`` keeps working; and a bad shape or axis is an ``InvalidArgumentError``, as in
TensorFlow (``site/docs/tensorflow-names.md`` maps TensorFlow's error classes to these).
Shape and dtype rules raise them with a short reason; the execution seam then adds the op's
name and its inputs' dtypes and shapes (see ``at_op``), so every message reads like
``MatMul(float32[2,3], float32[4,5]): inner dimensions ...``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Self


class EagerflowError(Exception):
    """Base class of eagerflow's errors. ``op`` is the op's name once the seam knows it."""

    op: str | None = None

    def at_op(self, op: str, inputs: Sequence[Any]) -> Self:
        """Prefix the message with ``op`` and its inputs (only once, at the innermost op)."""
        if self.op is None:
            self.op = op
            described = ", ".join(describe(t) for t in inputs)
            self.args = (f"{op}({described}): {self.args[0] if self.args else ''}",)
        return self


class DTypeError(EagerflowError, TypeError):
    """A dtype an op does not accept, two dtypes that differ, or a value with no dtype."""


class OutOfRangeError(EagerflowError, IndexError):
    """An index past the end of an axis."""


class InvalidArgumentError(EagerflowError, ValueError):
    """A bad argument: shapes that do not fit, an axis out of range, a negative depth, a zero
    integer divisor, ... (``ShapeError``, ``AxisError`` and ``InvalidAttrError`` are the ones
    with a class of their own). TensorFlow's eager kernels raise its ``InvalidArgumentError``
    for all of these, so ``except InvalidArgumentError`` catches what it catches there."""


class ShapeError(InvalidArgumentError):
    """Shapes that do not fit: broadcasting, matmul, reshape, concat, ragged lists, ..."""


class AxisError(InvalidArgumentError):
    """An axis out of range for a tensor's rank."""


class InvalidAttrError(InvalidArgumentError):
    """An op's attribute that its row's schema refuses (``OpDef.attrs``): of the wrong type,
    out of range, missing or unknown. ``attr`` is the attribute's name, when known."""

    def __init__(self, message: str, attr: str | None = None) -> None:
        super().__init__(message)
        self.attr = attr


class FailedPreconditionError(EagerflowError, RuntimeError):
    """The state is not ready for the op (e.g. reading a variable never initialized)."""


class UnknownOpError(EagerflowError, LookupError):
    """An op name with no registered definition."""


def format_shape(shape: Iterable[int | None] | None) -> str:
    """A shape as TensorFlow's Python side prints one: ``(None, 3)``, ``(3,)``, ``()``, and
    ``<unknown>`` when not even the rank is known. Every message and picture that shows a
    shape on its own uses this one function."""
    if shape is None:
        return "<unknown>"
    dims = [str(d) for d in shape]  # str, not repr: a NumPy int prints as 3, not np.int64(3)
    return f"({dims[0]},)" if len(dims) == 1 else f"({', '.join(dims)})"


def a_tensor(dtype: object) -> str:
    """``a float32 tensor``, ``an int32 tensor``: a dtype with its article, for messages."""
    name = str(dtype)
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name} tensor"


def describe(t: Any) -> str:
    """``float32[2,3]`` for a tensor, ``repr`` for anything else: the compact signature that
    prefixes op errors, as TensorFlow's kernels print their inputs (``?``: an unknown
    dimension). A shape on its own is written by ``format_shape``."""
    shape = getattr(t, "shape", None)
    dtype = getattr(t, "dtype", None)
    if dtype is None or shape is None:
        return repr(t)
    dims = ",".join("?" if d is None else str(d) for d in shape)
    return f"{dtype}[{dims}]"


__all__ = [
    "AxisError",
    "DTypeError",
    "EagerflowError",
    "FailedPreconditionError",
    "InvalidArgumentError",
    "InvalidAttrError",
    "OutOfRangeError",
    "ShapeError",
    "UnknownOpError",
    "a_tensor",
    "describe",
    "format_shape",
]
