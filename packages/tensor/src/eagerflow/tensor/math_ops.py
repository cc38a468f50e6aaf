"""Math ops: elementwise arithmetic, comparisons, logic, casts, matmul and reductions.

Each op is two functions, next to each other:

- its *kernel*: plain NumPy (for many ops NumPy's own function, such as ``np.add``);
- its *public function*: converts the arguments and calls ``execute``, the seam. The
  ``@op(name, kernel, shape=..., dtype=...)`` above it registers the op, and its docstring
  says what the op does (the registry row's ``doc``).

``matmul`` is the example to follow: ``matmul()`` -> ``execute("MatMul", ...)`` -> the current
context -> ``matmul_kernel`` (eager) or a graph node (graph mode), then the recorders.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import ANY, FLOATS, NUMBERS, DType
from eagerflow.tensor.errors import InvalidArgumentError, ShapeError, format_shape
from eagerflow.tensor.execution import NO_ATTRS, execute
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.rules import (
    attr_dtype_rule,
    broadcast,
    broadcast_rule,
    same_dtype,
    same_shape_rule,
)
from eagerflow.tensor.schema import Bool, DTypeAttr
from eagerflow.tensor.tensor import Tensor, convert_operands, convert_to_tensor

BOOL = frozenset({dtypes.bool_})
Axis = int | Sequence[int] | None  # what a reduction takes
Axes = int | tuple[int, ...] | None  # what its op's "axis" attribute holds


def _unary(op_name: str, x: Any, name: str | None, attrs: Attrs = NO_ATTRS) -> Tensor:
    if type(x) is not Tensor:
        x = convert_to_tensor(x)
    return execute(op_name, (x,), attrs, name)[0]


def _binary(op_name: str, x: Any, y: Any, name: str | None) -> Tensor:
    if type(x) is not Tensor or type(y) is not Tensor:
        x, y = convert_operands(x, y)
    return execute(op_name, (x, y), NO_ATTRS, name)[0]


# --- binary arithmetic ------------------------------------------------------------------------
# NumPy warns when a sum or product overflows or makes a NaN (inf - inf, 0 * inf); TensorFlow
# returns the IEEE 754 answer (inf, nan) silently, and so do we. The other kernels wrap NumPy
# in `np.errstate`, but for these three, the hottest, that would cost every `a + b` ~1.5 us;
# a warnings filter costs nothing until NumPy warns. It matches only warnings raised from
# eagerflow's own modules (where the seam and the Session call these kernels).
warnings.filterwarnings(
    "ignore",
    r"(overflow|invalid value) encountered in (add|subtract|multiply)",
    RuntimeWarning,
    r"eagerflow\.",
)


@op(
    "AddV2",
    np.add,
    shape=broadcast_rule,
    dtype=same_dtype(NUMBERS),
    retains_inputs=False,
    default_name="add",
)
def add(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x + y, elementwise with broadcasting."""
    return _binary("AddV2", x, y, name)


@op(
    "Sub",
    np.subtract,
    shape=broadcast_rule,
    dtype=same_dtype(NUMBERS),
    retains_inputs=False,
    default_name="sub",
)
def subtract(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x - y, elementwise with broadcasting."""
    return _binary("Sub", x, y, name)


@op(
    "Mul",
    np.multiply,
    shape=broadcast_rule,
    dtype=same_dtype(NUMBERS),
    retains_inputs=False,
    default_name="mul",
)
def multiply(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x * y, elementwise with broadcasting (on bool tensors the operator ``*`` is their
    ``logical_and``, as in TensorFlow; this op refuses them, as TensorFlow's does)."""
    return _binary("Mul", x, y, name)


@np.errstate(divide="ignore", invalid="ignore")  # (as a decorator it costs half a `with`)
def real_div_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.true_divide(x, y)


@op(
    "RealDiv",
    real_div_kernel,
    shape=broadcast_rule,
    dtype=same_dtype(FLOATS),
    retains_inputs=False,
    default_name="truediv",
)
def divide(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y, elementwise with broadcasting (x/0 is ±inf or nan, as in IEEE 754). Integers
    are first cast to float64, as TensorFlow's ``truediv`` does."""
    if type(x) is not Tensor or type(y) is not Tensor:
        x, y = convert_operands(x, y)
    if x.dtype.is_integer and y.dtype is x.dtype:
        x, y = cast(x, dtypes.float64), cast(y, dtypes.float64)
    return execute("RealDiv", (x, y), NO_ATTRS, name)[0]


def _check_int_divisor(x: np.ndarray, y: np.ndarray) -> None:
    if y.dtype.kind == "i" and not np.all(y):
        raise InvalidArgumentError("integer division by zero")


@np.errstate(divide="ignore", invalid="ignore")
def floordiv_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _check_int_divisor(x, y)
    if x.dtype.kind == "f":  # TensorFlow's floor(x / y): inf // 2 is inf, not floor_divide's nan
        return np.floor(np.divide(x, y))
    return np.floor_divide(x, y)


@op(
    "FloorDiv",
    floordiv_kernel,
    shape=broadcast_rule,
    dtype=same_dtype(NUMBERS),
    retains_inputs=False,
    default_name="floordiv",
)
def floordiv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """floor(x / y), elementwise (Python's ``//``); integer division by zero is an error.

    For floats this is TensorFlow's floor of the rounded quotient, so ``inf // 2`` is inf and
    ``1.0 // 0.1`` is 10.0, where Python's and NumPy's ``//`` give nan and 9.0."""
    return _binary("FloorDiv", x, y, name)


@np.errstate(divide="ignore", invalid="ignore")
def floormod_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    _check_int_divisor(x, y)
    return np.mod(x, y)


@op(
    "FloorMod",
    floormod_kernel,
    shape=broadcast_rule,
    dtype=same_dtype(NUMBERS),
    retains_inputs=False,
    default_name="mod",
)
def floormod(x: Any, y: Any, name: str | None = None) -> Tensor:
    """The remainder of floor division, x - floor(x / y) * y, elementwise (Python's ``%``):
    it takes the divisor's sign."""
    return _binary("FloorMod", x, y, name)


@np.errstate(divide="ignore", invalid="ignore", over="ignore")
def pow_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if y.dtype.kind == "i" and np.any(y < 0):
        raise InvalidArgumentError("integers to negative integer powers are not allowed")
    return np.power(x, y)


@op(
    "Pow",
    pow_kernel,
    shape=broadcast_rule,
    dtype=same_dtype(NUMBERS),
    retains_inputs=False,
    default_name="pow",
)
def pow(
    x: Any, y: Any, name: str | None = None
) -> Tensor:  # TensorFlow's name; shadows the builtin here
    """x ** y, elementwise with broadcasting; integers to negative powers are an error."""
    return _binary("Pow", x, y, name)


@op("Maximum", np.maximum, shape=broadcast_rule, dtype=same_dtype(NUMBERS), retains_inputs=False)
def maximum(x: Any, y: Any, name: str | None = None) -> Tensor:
    """max(x, y), elementwise with broadcasting (nan if either is nan)."""
    return _binary("Maximum", x, y, name)


@op("Minimum", np.minimum, shape=broadcast_rule, dtype=same_dtype(NUMBERS), retains_inputs=False)
def minimum(x: Any, y: Any, name: str | None = None) -> Tensor:
    """min(x, y), elementwise with broadcasting (nan if either is nan)."""
    return _binary("Minimum", x, y, name)


# --- comparisons and logic: bool results ---------------------------------------------------
ORDERED = same_dtype(NUMBERS, dtypes.bool_)  # two numbers of one dtype in, bool out


@op("Less", np.less, shape=broadcast_rule, dtype=ORDERED, retains_inputs=False)
def less(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x < y, elementwise; a bool tensor."""
    return _binary("Less", x, y, name)


@op("LessEqual", np.less_equal, shape=broadcast_rule, dtype=ORDERED, retains_inputs=False)
def less_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x <= y, elementwise; a bool tensor."""
    return _binary("LessEqual", x, y, name)


@op("Greater", np.greater, shape=broadcast_rule, dtype=ORDERED, retains_inputs=False)
def greater(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x > y, elementwise; a bool tensor."""
    return _binary("Greater", x, y, name)


@op("GreaterEqual", np.greater_equal, shape=broadcast_rule, dtype=ORDERED, retains_inputs=False)
def greater_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x >= y, elementwise; a bool tensor."""
    return _binary("GreaterEqual", x, y, name)


@op(
    "Equal",
    np.equal,
    shape=broadcast_rule,
    dtype=same_dtype(ANY, dtypes.bool_),
    retains_inputs=False,
)
def equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x == y, elementwise; a bool tensor (also what ``==`` on tensors does)."""
    return _binary("Equal", x, y, name)


@op(
    "NotEqual",
    np.not_equal,
    shape=broadcast_rule,
    dtype=same_dtype(ANY, dtypes.bool_),
    retains_inputs=False,
)
def not_equal(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x != y, elementwise; a bool tensor."""
    return _binary("NotEqual", x, y, name)


@op(
    "LogicalAnd", np.logical_and, shape=broadcast_rule, dtype=same_dtype(BOOL), retains_inputs=False
)
def logical_and(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x and y, elementwise on bool tensors (``&``)."""
    return _binary("LogicalAnd", x, y, name)


@op("LogicalOr", np.logical_or, shape=broadcast_rule, dtype=same_dtype(BOOL), retains_inputs=False)
def logical_or(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x or y, elementwise on bool tensors (``|``)."""
    return _binary("LogicalOr", x, y, name)


@op(
    "LogicalNot",
    np.logical_not,
    shape=same_shape_rule,
    dtype=same_dtype(BOOL),
    retains_inputs=False,
)
def logical_not(x: Any, name: str | None = None) -> Tensor:
    """not x, elementwise on a bool tensor (``~``)."""
    return _unary("LogicalNot", x, name)


# --- unary math ------------------------------------------------------------------------------
@op("Neg", np.negative, shape=same_shape_rule, dtype=same_dtype(NUMBERS), retains_inputs=False)
def negative(x: Any, name: str | None = None) -> Tensor:
    """-x, elementwise."""
    return _unary("Neg", x, name)


@op("Abs", np.abs, shape=same_shape_rule, dtype=same_dtype(NUMBERS), retains_inputs=False)
def abs(x: Any, name: str | None = None) -> Tensor:  # TensorFlow's name; shadows the builtin here
    """|x|, elementwise."""
    return _unary("Abs", x, name)


@op("Sign", np.sign, shape=same_shape_rule, dtype=same_dtype(NUMBERS), retains_inputs=False)
def sign(x: Any, name: str | None = None) -> Tensor:
    """-1, 0 or 1 by the sign of x, elementwise."""
    return _unary("Sign", x, name)


@op("Square", np.square, shape=same_shape_rule, dtype=same_dtype(NUMBERS), retains_inputs=False)
def square(x: Any, name: str | None = None) -> Tensor:
    """x², elementwise."""
    return _unary("Square", x, name)


@np.errstate(invalid="ignore")
def sqrt_kernel(x: np.ndarray) -> np.ndarray:
    return np.sqrt(x)


@op("Sqrt", sqrt_kernel, shape=same_shape_rule, dtype=same_dtype(FLOATS), retains_inputs=False)
def sqrt(x: Any, name: str | None = None) -> Tensor:
    """√x, elementwise (nan below 0)."""
    return _unary("Sqrt", x, name)


@np.errstate(over="ignore")
def exp_kernel(x: np.ndarray) -> np.ndarray:
    return np.exp(x)


@op(
    "Exp",
    exp_kernel,
    shape=same_shape_rule,
    dtype=same_dtype(FLOATS),
    retains_inputs=False,
    transcendental=True,
)
def exp(x: Any, name: str | None = None) -> Tensor:
    """eˣ, elementwise (inf on overflow)."""
    return _unary("Exp", x, name)


@np.errstate(divide="ignore", invalid="ignore")
def log_kernel(x: np.ndarray) -> np.ndarray:
    return np.log(x)


@op(
    "Log",
    log_kernel,
    shape=same_shape_rule,
    dtype=same_dtype(FLOATS),
    retains_inputs=False,
    transcendental=True,
)
def log(x: Any, name: str | None = None) -> Tensor:
    """ln x, elementwise (-inf at 0, nan below 0)."""
    return _unary("Log", x, name)


@op(
    "Tanh",
    np.tanh,
    shape=same_shape_rule,
    dtype=same_dtype(FLOATS),
    retains_inputs=False,
    transcendental=True,
)
def tanh(x: Any, name: str | None = None) -> Tensor:
    """tanh x, elementwise."""
    return _unary("Tanh", x, name)


def sigmoid_kernel(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0, -x))  # exp(-log(1 + e⁻ˣ)), which never overflows


@op(
    "Sigmoid", sigmoid_kernel, shape=same_shape_rule, dtype=same_dtype(FLOATS), retains_inputs=False
)
def sigmoid(x: Any, name: str | None = None) -> Tensor:
    """1 / (1 + e⁻ˣ), elementwise."""
    return _unary("Sigmoid", x, name)


# --- casts -----------------------------------------------------------------------------------
@np.errstate(invalid="ignore")
def cast_kernel(x: np.ndarray, dtype: DType) -> np.ndarray:
    return x.astype(dtype.np)


@op("Cast", cast_kernel, shape=same_shape_rule, dtype=attr_dtype_rule, attrs={"dtype": DTypeAttr()},
    retains_inputs=False)  # fmt: skip
def cast(x: Any, dtype: DType | str, name: str | None = None) -> Tensor:
    """x converted to ``dtype`` (the only way to change a tensor's dtype): floats to ints
    truncate toward zero; to bool, nonzero is True."""
    x = convert_to_tensor(x)
    return execute("Cast", (x,), {"dtype": dtypes.as_dtype(dtype)}, name)[0]


# --- matmul ----------------------------------------------------------------------------------
def matmul_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """(..., m, k) @ (..., k, n) -> (..., m, n), the leading (batch) dimensions broadcast."""
    a, b = shapes
    if len(a) < 2 or len(b) < 2:
        raise ShapeError(
            f"matmul needs tensors of rank >= 2, got shapes {format_shape(a)} and {format_shape(b)}"
        )
    m, ka = (a[-1], a[-2]) if attrs["transpose_a"] else (a[-2], a[-1])
    kb, n = (b[-1], b[-2]) if attrs["transpose_b"] else (b[-2], b[-1])
    if ka is not None and kb is not None and ka != kb:
        raise ShapeError(
            f"inner dimensions differ: {format_shape(a)} @ {format_shape(b)} needs {ka} == {kb}"
            + (" (after transposes)" if attrs["transpose_a"] or attrs["transpose_b"] else "")
        )
    batch = broadcast(a[:-2], b[:-2])
    return [(*batch, m, n)]


def matmul_kernel(a: np.ndarray, b: np.ndarray, transpose_a: bool, transpose_b: bool) -> np.ndarray:
    if a.ndim < 2 or b.ndim < 2:  # NumPy would take a vector; TensorFlow refuses (the rule says)
        matmul_shape([a.shape, b.shape], {"transpose_a": transpose_a, "transpose_b": transpose_b})
    if transpose_a:
        a = a.swapaxes(-1, -2)
    if transpose_b:
        b = b.swapaxes(-1, -2)
    return np.matmul(a, b)


@op("MatMul", matmul_kernel, shape=matmul_shape, dtype=same_dtype(NUMBERS),
    attrs={"transpose_a": Bool(), "transpose_b": Bool()}, retains_inputs=False)  # fmt: skip
def matmul(
    a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False, name: str | None = None
) -> Tensor:
    """The matrix product a @ b of two tensors of rank >= 2, over their last two axes (each
    transposed first if asked), batched over the leading axes, which broadcast."""
    if type(a) is not Tensor or type(b) is not Tensor:
        a, b = convert_operands(a, b)
    attrs = {"transpose_a": bool(transpose_a), "transpose_b": bool(transpose_b)}
    return execute("MatMul", (a, b), attrs, name)[0]


# --- composite ops: built from the ops above, so they need no kernel or gradient of their own
def clip_by_value(
    t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None
) -> Tensor:
    """t limited to [clip_value_min, clip_value_max]: minimum(maximum(t, min), max)."""
    t = convert_to_tensor(t)
    return minimum(maximum(t, clip_value_min), clip_value_max, name=name)


# --- Tensor's operators ------------------------------------------------------------------
# Attached here, where the ops are defined, as TensorFlow's math_ops attaches its own: the
# tensor module needs no op module. The plain operators are the public functions
# themselves; the reflected ones (`2 * t`) swap their operands.
def _reflected(function: Any) -> Any:
    def reflected(self: Tensor, other: Any) -> Tensor:
        return function(other, self)

    reflected.__name__ = reflected.__qualname__ = f"r{function.__name__}"
    return reflected


def _compared(function: Any) -> Any:
    """``t == x`` as ``equal(t, x)``, so a value the op refuses raises (``bool_t == 1``), as
    in TensorFlow; ``t == None`` is NotImplemented, so that Python falls back to identity."""

    def compare(self: Tensor, other: object) -> Any:
        if other is None:
            return NotImplemented
        return function(self, other)

    return compare


def _times(self: Tensor, other: Any) -> Tensor:
    """``t * x``: ``multiply``, or for a bool ``t`` ``logical_and``, as TensorFlow's ``*``."""
    if self._dtype is dtypes.bool_:
        return logical_and(self, other)
    return multiply(self, other)


def _rtimes(self: Tensor, other: Any) -> Tensor:
    if self._dtype is dtypes.bool_:
        return logical_and(other, self)
    return multiply(other, self)


def _power(self: Tensor, other: Any) -> Tensor:
    return pow(self, other)  # (two arguments: `pow(a, b, mod)` is an error, not a `name`)


_OPERATORS = {
    "__add__": add, "__sub__": subtract, "__mul__": _times, "__truediv__": divide,
    "__floordiv__": floordiv, "__mod__": floormod, "__matmul__": matmul, "__pow__": _power,
    "__lt__": less, "__le__": less_equal, "__gt__": greater, "__ge__": greater_equal,
    "__and__": logical_and, "__or__": logical_or, "__neg__": negative, "__abs__": abs,
    "__invert__": logical_not, "__eq__": _compared(equal), "__ne__": _compared(not_equal),
    "__radd__": _reflected(add), "__rsub__": _reflected(subtract),
    "__rmul__": _rtimes, "__rtruediv__": _reflected(divide),
    "__rfloordiv__": _reflected(floordiv), "__rmod__": _reflected(floormod),
    "__rmatmul__": _reflected(matmul), "__rpow__": _reflected(pow),
    "__rand__": _reflected(logical_and), "__ror__": _reflected(logical_or),
}  # fmt: skip
for _name, _function in _OPERATORS.items():
    setattr(Tensor, _name, _function)

__all__ = [
    "abs",
    "add",
    "cast",
    "clip_by_value",
    "divide",
    "equal",
    "exp",
    "floordiv",
    "floormod",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "log",
    "logical_and",
    "logical_not",
    "logical_or",
    "matmul",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "not_equal",
    "pow",
    "sigmoid",
    "sign",
    "sqrt",
    "square",
    "subtract",
    "tanh",
]
