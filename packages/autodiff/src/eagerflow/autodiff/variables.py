"""``Variable``: mutable state that ops read through the seam, so tapes can watch it.

A Variable is not a tensor: it *holds* one value and can be given another. Every read is an
op of its own (``ReadVariableOp``), which is how a GradientTape notices that a trainable
variable was used. Every assignment is an op too (``AssignVariableOp`` and friends): a state
change, with no gradient, so it cuts the gradient path.

A variable never changes an array in place: an assignment stores a new array, so a tensor
read before the assignment keeps the value it had.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from eagerflow.tensor import DType, Tensor, as_dtype, convert_to_tensor
from eagerflow.tensor.errors import DTypeError, ShapeError
from eagerflow.tensor.execution import execute
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.rules import fmt


# --- the variable ops ------------------------------------------------------------------------
def _variable_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    return [attrs["variable"].shape]


def _variable_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    return [attrs["variable"].dtype]


@op("ReadVariableOp", shape=_variable_shape, dtype=_variable_dtype, stateful=True)
def read_variable_kernel(variable: Variable) -> np.ndarray:
    """The variable's current value (the op tapes watch to see a variable used)."""
    return variable._array


def _assign_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    variable = attrs["variable"]
    if tuple(shapes[0]) != variable.shape:
        raise ShapeError(
            f"cannot assign a value of shape {fmt(shapes[0])} to variable "
            f"'{variable.name}' of shape {fmt(variable.shape)}"
        )
    return [variable.shape]


def _assign_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    variable = attrs["variable"]
    if dts[0] is not variable.dtype:
        raise DTypeError(
            f"cannot assign a {dts[0]} value to variable '{variable.name}' of dtype "
            f"{variable.dtype}; use cast() first"
        )
    return [variable.dtype]


def _check_shape(variable: Variable, value: np.ndarray) -> None:
    if value.shape != variable.shape:  # NumPy would broadcast: a variable never changes shape
        _assign_shape([value.shape], {"variable": variable})


@op("AssignVariableOp", shape=_assign_shape, dtype=_assign_dtype, stateful=True)
def assign_kernel(value: np.ndarray, variable: Variable) -> np.ndarray:
    """Store ``value`` as the variable's new value; returns it."""
    _check_shape(variable, value)
    variable._array = value
    return value


@op("AssignAddVariableOp", shape=_assign_shape, dtype=_assign_dtype, stateful=True)
def assign_add_kernel(delta: np.ndarray, variable: Variable) -> np.ndarray:
    """Store value + delta as the variable's new value; returns it."""
    _check_shape(variable, delta)
    variable._array = variable._array + delta
    return variable._array


@op("AssignSubVariableOp", shape=_assign_shape, dtype=_assign_dtype, stateful=True)
def assign_sub_kernel(delta: np.ndarray, variable: Variable) -> np.ndarray:
    """Store value - delta as the variable's new value; returns it."""
    _check_shape(variable, delta)
    variable._array = variable._array - delta
    return variable._array


# --- Variable ---------------------------------------------------------------------------------
class Variable:
    """A named, mutable tensor value: ``Variable(5.0, name="weight")``.

    Use it anywhere an op takes a tensor (each such use reads it through the seam).
    ``trainable`` variables read inside a GradientTape are watched automatically.
    """

    __array_priority__ = 100  # `ndarray + variable` calls Variable.__radd__
    __hash__ = object.__hash__  # by identity, like tensors (optimizers key dicts by variable)

    def __init__(
        self,
        initial_value: Any,
        trainable: bool = True,
        name: str | None = None,
        dtype: DType | str | None = None,
    ) -> None:
        if callable(initial_value):
            initial_value = initial_value()
        value = convert_to_tensor(initial_value, None if dtype is None else as_dtype(dtype))
        self._array: np.ndarray = np.array(value, copy=True)
        self._dtype: DType = value.dtype
        self.trainable = bool(trainable)
        self._name = f"{name or 'Variable'}:0"

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self._array.shape

    @property
    def ndim(self) -> int:
        return self._array.ndim

    def read_value(self) -> Tensor:
        """The current value, as a tensor (an op: tapes see it)."""
        return execute("ReadVariableOp", (), {"variable": self})[0]

    value = read_value

    def numpy(self) -> Any:
        """A copy of the current value (a NumPy scalar for a 0-d variable)."""
        return self._array.copy() if self._array.ndim else self._array[()]

    def assign(self, value: Any, read_value: bool = True) -> Any:
        """Give the variable a new value of the same shape and dtype."""
        return self._update("AssignVariableOp", value, read_value)

    def assign_add(self, delta: Any, read_value: bool = True) -> Any:
        """variable += delta."""
        return self._update("AssignAddVariableOp", delta, read_value)

    def assign_sub(self, delta: Any, read_value: bool = True) -> Any:
        """variable -= delta."""
        return self._update("AssignSubVariableOp", delta, read_value)

    def _update(self, op_name: str, value: Any, read_value: bool) -> Any:
        tensor = value if isinstance(value, Tensor) else convert_to_tensor(value, self._dtype)
        (result,) = execute(op_name, (tensor,), {"variable": self})
        return self if read_value else result

    # --- so that a variable works where a tensor does -------------------------------------
    def __eagerflow_tensor__(self, dtype: DType | None = None) -> Tensor:
        if dtype is not None and dtype is not self._dtype:
            raise DTypeError(
                f"variable '{self.name}' has dtype {self._dtype}, not the requested {dtype}"
            )
        return self.read_value()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.array(self._array, dtype=dtype, copy=True)

    def __repr__(self) -> str:
        value = np.array2string(self._array, separator=", ") if self.ndim else str(self.numpy())
        return (
            f"<Variable '{self.name}' shape={self.shape} dtype={self._dtype.name}, numpy={value}>"
        )

    def __len__(self) -> int:
        return len(self.read_value())

    def __bool__(self) -> bool:
        return bool(self.read_value())

    def __int__(self) -> int:
        return int(self.read_value())

    def __float__(self) -> float:
        return float(self.read_value())

    def __index__(self) -> int:
        return self.read_value().__index__()


def _reads_first(name: str) -> Callable[..., Any]:
    """A Variable method that reads the value, then does what the Tensor method does."""
    tensor_method = getattr(Tensor, name)

    def method(self: Variable, *args: Any) -> Any:
        return tensor_method(self.read_value(), *args)

    method.__name__ = name
    method.__doc__ = f"Like ``Tensor.{name}`` on the variable's current value."
    return method


# Operators, comparisons and indexing behave exactly as on the value (TF does the same).
for _name in (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
    "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__abs__", "__lt__", "__le__",
    "__gt__", "__ge__", "__eq__", "__ne__", "__getitem__", "__iter__",
):  # fmt: skip
    setattr(Variable, _name, _reads_first(_name))

__all__ = ["Variable"]
