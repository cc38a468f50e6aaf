"""``Variable``: mutable state that ops read through the seam, so tapes can watch it.

A Variable is not a tensor: it *holds* one value and can be given another. Every read is an
op of its own (``ReadVariableOp``), which is how a GradientTape notices that a trainable
variable was used. Every assignment is an op too (``AssignVariableOp`` and friends): a state
change, with no gradient, so it cuts the gradient path.

A tensor read before an assignment keeps the value it had. An update (``assign_add``,
``assign_sub``, ``apply_gradient_descent``) overwrites the variable's array in place only
when nothing else holds that array; otherwise it writes a new one. This is TensorFlow's
copy-on-write rule for variable buffers, and it saves a training step the cost of a fresh
array for every weight.

Variables are safe to share between threads, as TensorFlow's resource variables are: each
variable has a lock, and every kernel that reads or writes its value holds it. So an update
is atomic (8 threads doing 2,000 ``assign_add(1)`` each leave exactly 16,000), a read is a
consistent snapshot (never half of one assignment and half of the next), and a tensor never
changes after it was read: a reader takes its reference to the array under the lock, and an
in-place update decides that nobody holds the array under the same lock. A sequence of ops
(``v.assign(v * 2)``) is not one atomic step, as in TensorFlow.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Iterator, Sequence
from sys import getrefcount
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from eagerflow.tensor import DType, Tensor, as_dtype, convert_to_tensor
from eagerflow.tensor.errors import DTypeError, ShapeError, format_shape
from eagerflow.tensor.execution import context, current_context, execute
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.rules import compatible
from eagerflow.tensor.schema import AttrSchema


# --- the variable ops ------------------------------------------------------------------------
def _variable_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    return [attrs["variable"].shape]


def _variable_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    return [attrs["variable"].dtype]


# Where variable values live. An eager variable holds its own array (`_array`, read on every
# op, so it stays one attribute away). A variable made while a context was current may keep
# its value elsewhere, in a `Storage` the context gave it: the graph package's keeps one value
# per Session. This package knows only the protocol.
class Storage(Protocol):
    """Where a variable that does not hold its value keeps it (``Context.create_variable``)."""

    def read(self, variable: Variable) -> np.ndarray: ...

    def write(self, variable: Variable, value: np.ndarray) -> None: ...


def _value(variable: Variable) -> np.ndarray:
    """The variable's array; the caller holds ``variable._lock``."""
    array = variable._array
    if array is not None:  # an eager variable
        return array
    return variable._storage.read(variable)  # type: ignore[union-attr]


def _read(variable: Variable) -> np.ndarray:
    """The variable's array, taken under its lock: once a reader holds a reference, an update
    sees it counted (``_private_value``) and writes a new array instead of this one."""
    with variable._lock:
        return _value(variable)


def _set(variable: Variable, value: np.ndarray) -> np.ndarray:
    """Store ``value`` as the variable's array; the caller holds ``variable._lock``."""
    if value.shape != variable.shape:  # NumPy would broadcast: a variable never changes shape
        _assign_shape([value.shape], {"variable": variable})
    if variable._array is not None:
        variable._array = value
    else:
        variable._storage.write(variable, value)  # type: ignore[union-attr]
    return value


def _private_value(variable: Variable) -> np.ndarray | None:
    """The variable's array if nothing else can see it (then writing it in place is safe).

    Every tensor or view that shares an array holds a reference to it, so CPython's reference
    count tells: 3 means only the variable (or the Session's store), ``array`` here and
    ``getrefcount``'s argument. (The argument is a call's result, always counted: a newer
    CPython may pass a local like ``array`` without counting it.) A view (``base`` set) may
    share memory with anything, so it is never written. The caller holds ``variable._lock``,
    so no reader can take a reference between this check and the write.
    """
    array = _value(variable)
    if getrefcount(_value(variable)) == 3 and array.base is None and array.flags.writeable:
        return array
    return None


class _IsVariable(AttrSchema):
    """A ``Variable`` (the class is defined below; looked up when an attribute is checked)."""

    expected = "a Variable"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, Variable)


# the attributes of every variable op: the variable it stands for, reads or writes
VARIABLE_ATTRS = {"variable": _IsVariable()}


@op(
    "VariableV2",
    shape=_variable_shape,
    dtype=_variable_dtype,
    attrs=VARIABLE_ATTRS,
    stateful=True,
    reads_state=True,
    defines_variable=True,
)
def variable_kernel(variable: Variable) -> np.ndarray:
    """A variable's node in a graph; its output is the variable's current value."""
    return _read(variable)


@op("ReadVariableOp", shape=_variable_shape, dtype=_variable_dtype, attrs=VARIABLE_ATTRS,
    stateful=True, reads_state=True)  # fmt: skip
def read_variable_kernel(variable: Variable) -> np.ndarray:
    """The variable's current value (the op tapes watch to see a variable used)."""
    with variable._lock:  # (``_read``, inlined: this kernel runs for every use of a variable)
        return _value(variable)


def _assign_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    variable, shape = attrs["variable"], shapes[0]
    # A partly unknown shape (a graph) is fine if compatible; the kernel checks the real one.
    if not compatible(shape, variable.shape):
        raise ShapeError(
            f"cannot assign a value of shape {format_shape(shapes[0])} to variable "
            f"'{variable.name}' of shape {format_shape(variable.shape)}"
        )
    return [variable.shape]


def _assign_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    variable = attrs["variable"]
    if dts[0] is not variable.dtype:
        raise DTypeError(
            f"cannot assign a value of dtype {dts[0]} to variable '{variable.name}' of dtype "
            f"{variable.dtype}; use cast() first"
        )
    return [variable.dtype]


@op("AssignVariableOp", shape=_assign_shape, dtype=_assign_dtype, attrs=VARIABLE_ATTRS,
    stateful=True)  # fmt: skip
def assign_kernel(value: np.ndarray, variable: Variable) -> np.ndarray:
    """Store ``value`` as the variable's new value; returns it."""
    with variable._lock:
        return _set(variable, value)


def _update(variable: Variable, delta: np.ndarray, ufunc: np.ufunc) -> np.ndarray:
    """Store ``ufunc(value, delta)`` as the variable's new value, in place when nothing else
    can see its array; returns it. Atomic: the variable's lock is held throughout."""
    if delta.shape != variable.shape:
        _assign_shape([delta.shape], {"variable": variable})
    with variable._lock:
        if (private := _private_value(variable)) is not None:
            if private.ndim == 0 and private.dtype.kind == "f":
                # a 0-d ufunc with out= costs ~0.9 us, the same IEEE arithmetic on scalars
                # ~0.1 (floats only: integer scalars warn on overflow, where arrays wrap)
                private[()] = _SCALAR_UPDATES[ufunc](private[()], delta[()])
                return private
            return ufunc(private, delta, out=private)
        return _set(variable, ufunc(_value(variable), delta))


_SCALAR_UPDATES: dict[Any, Callable[[Any, Any], Any]] = {
    np.add: operator.add,
    np.subtract: operator.sub,
}


@op(
    "AssignAddVariableOp",
    shape=_assign_shape,
    dtype=_assign_dtype,
    attrs=VARIABLE_ATTRS,
    stateful=True,
    retains_inputs=False,
)
def assign_add_kernel(delta: np.ndarray, variable: Variable) -> np.ndarray:
    """Store value + delta as the variable's new value; returns it."""
    return _update(variable, delta, np.add)


@op(
    "AssignSubVariableOp",
    shape=_assign_shape,
    dtype=_assign_dtype,
    attrs=VARIABLE_ATTRS,
    stateful=True,
    retains_inputs=False,
)
def assign_sub_kernel(delta: np.ndarray, variable: Variable) -> np.ndarray:
    """Store value - delta as the variable's new value; returns it."""
    return _update(variable, delta, np.subtract)


def _gradient_descent_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    if len(shapes[0]) != 0:
        raise ShapeError(f"the learning rate must be a scalar, got shape {format_shape(shapes[0])}")
    return _assign_shape(shapes[1:], attrs)


def _gradient_descent_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    result = _assign_dtype(dts[1:], attrs)  # the gradient fits the variable
    if dts[0] is not dts[1]:
        raise DTypeError(f"the learning rate ({dts[0]}) and the gradient ({dts[1]}) must have "
                         "the same dtype")  # fmt: skip
    return result


def apply_gradient_descent_kernel(alpha: Any, delta: np.ndarray, variable: Variable) -> np.ndarray:
    # one op rather than a multiply and an assign_sub (as TensorFlow's optimizers): one
    # temporary array, not two
    if alpha.ndim or delta.shape != variable.shape:  # NumPy would broadcast them
        _gradient_descent_shape([np.shape(alpha), delta.shape], {"variable": variable})
    step = np.multiply(alpha, delta, out=np.empty(variable.shape, delta.dtype))
    with variable._lock:
        if (private := _private_value(variable)) is not None:
            return np.subtract(private, step, out=private)
        return _set(variable, np.subtract(_value(variable), step, out=step))


@op("ApplyGradientDescent", apply_gradient_descent_kernel, shape=_gradient_descent_shape,
    dtype=_gradient_descent_dtype, attrs=VARIABLE_ATTRS, stateful=True,
    retains_inputs=False)  # fmt: skip
def apply_gradient_descent(variable: Variable, alpha: Any, delta: Any) -> Any:
    """``variable -= alpha * delta`` as one op; returns the op's output (the new value)."""
    # Python and NumPy values take the variable's dtype; a tensor of another dtype is refused
    # by the dtype rule, with a message naming the variable
    if not isinstance(alpha, Tensor):
        alpha = convert_to_tensor(alpha, variable.dtype)
    if not isinstance(delta, Tensor):
        delta = convert_to_tensor(delta, variable.dtype)
    return execute("ApplyGradientDescent", (alpha, delta), {"variable": variable})[0]


# --- Variable ---------------------------------------------------------------------------------
_Binary = Callable[["Variable", Any], Tensor]  # the type of `variable + x` and its kin


class Variable:
    """A named, mutable tensor value: ``Variable(5.0, name="weight")``.

    Use it anywhere an op takes a tensor (each such use reads it through the seam).
    ``trainable`` variables read inside a GradientTape are watched automatically.
    """

    __array_priority__ = 100  # `ndarray + variable` calls Variable.__radd__
    __hash__ = object.__hash__  # by identity, like tensors (optimizers key dicts by variable)

    if TYPE_CHECKING:  # set by the loop at the end of this module; typed here for checkers
        __add__: _Binary
        __radd__: _Binary
        __sub__: _Binary
        __rsub__: _Binary
        __mul__: _Binary
        __rmul__: _Binary
        __truediv__: _Binary
        __rtruediv__: _Binary
        __floordiv__: _Binary
        __rfloordiv__: _Binary
        __mod__: _Binary
        __rmod__: _Binary
        __pow__: _Binary
        __rpow__: _Binary
        __matmul__: _Binary
        __rmatmul__: _Binary
        __lt__: _Binary
        __le__: _Binary
        __gt__: _Binary
        __ge__: _Binary
        __getitem__: _Binary
        __eq__: Callable[[Variable, object], Any]
        __ne__: Callable[[Variable, object], Any]
        __neg__: Callable[[Variable], Tensor]
        __abs__: Callable[[Variable], Tensor]
        __iter__: Callable[[Variable], Iterator[Tensor]]

    def __init__(
        self,
        initial_value: Any,
        trainable: bool = True,
        name: str | None = None,
        dtype: DType | str | None = None,
    ) -> None:
        self.trainable = bool(trainable)
        # held by every kernel that reads or writes the value (see the module's docstring)
        self._lock = threading.Lock()
        self.initializer: Any = None  # the op that initializes it in a graph
        self._storage: Storage | None = None  # None: the value is `_array`, here
        # the attributes of this variable's ops, made once rather than per read (~35 ns each)
        self._op_attrs: Attrs = {"variable": self}
        ctx = current_context()
        if ctx is not None:  # a graph or a trace says where a variable made in it lives
            self._storage = ctx.create_variable(self)
            if self._storage is None:  # made eagerly (e.g. by a function: it outlives the trace)
                with context(None):
                    self._init_value(initial_value, name, dtype)
                return
        self._init_value(initial_value, name, dtype)

    def _init_value(self, initial_value: Any, name: str | None, dtype: DType | str | None) -> None:
        if callable(initial_value):
            initial_value = initial_value()
        value = convert_to_tensor(initial_value, None if dtype is None else as_dtype(dtype))
        self._dtype: DType = value.dtype
        if self._storage is None:
            self._array: np.ndarray | None = np.array(value, copy=True)
            self._shape: tuple[int, ...] = self._array.shape
            self._name = f"{name or 'Variable'}:0"
            return
        # A node stands for the variable; its value lives in the storage, set by the initializer
        if value.shape is None or None in value.shape:
            raise ShapeError(
                f"a graph variable needs a fully known shape, got {format_shape(value.shape)}"
            )
        self._array = None
        self._shape = cast(tuple[int, ...], value.shape)  # (every dimension known)
        (node,) = execute("VariableV2", (), self._op_attrs, name or "Variable")
        self._name = node.name  # type: ignore[attr-defined]  # a graph's tensors have names
        self.initializer = self.assign(value, read_value=False).op

    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def ndim(self) -> int:
        return len(self._shape)

    def read_value(self) -> Tensor:
        """The current value, as a tensor (an op: tapes see it)."""
        return execute("ReadVariableOp", (), self._op_attrs)[0]

    value = read_value

    def numpy(self) -> Any:
        """A copy of the current value (a NumPy scalar for a 0-d variable)."""
        array = _read(self)  # a variable of a graph: its Session's value (see Storage)
        return array.copy() if array.ndim else array[()]

    @property
    def holds_value(self) -> bool:
        """True when the variable holds its own value (eager); False when the context it was
        made in keeps the value (a graph's variable has one value per Session)."""
        return self._storage is None

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
        (result,) = execute(op_name, (tensor,), self._op_attrs)
        if not read_value:
            return result
        # Eagerly and in a traced function: the variable itself, read again where it is used
        # (TF 2); in a graph built for a Session: the assign node's output (TF 1)
        ctx = current_context()
        return self if ctx is None or ctx.assign_returns_variable else result

    # --- so that a variable works where a tensor does -------------------------------------
    def __eagerflow_tensor__(self, dtype: DType | None = None) -> Tensor:
        if dtype is not None and dtype is not self._dtype:
            raise DTypeError(
                f"variable '{self.name}' has dtype {self._dtype}, not the requested {dtype}"
            )
        return self.read_value()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return np.array(self.numpy(), dtype=dtype, copy=True)

    def __repr__(self) -> str:
        head = f"<Variable '{self.name}' shape={format_shape(self.shape)} dtype={self._dtype.name}"
        if self._array is None:
            return head + ">"
        value = np.array2string(_read(self), separator=", ") if self.ndim else str(self.numpy())
        return f"{head}, numpy={value}>"

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


def _format(self: Variable, spec: str) -> str:
    """``f"{v:.3f}"`` formats the current value as a tensor does; ``f"{v}"`` stays ``str(v)``
    (the variable's own repr, not its value's, so not ``_reads_first``)."""
    return format(self.read_value(), spec) if spec else str(self)


Variable.__format__ = _format  # type: ignore[method-assign, assignment]

__all__ = ["Storage", "Variable", "apply_gradient_descent"]
