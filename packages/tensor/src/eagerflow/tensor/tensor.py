"""``Tensor``: an immutable value wrapping a NumPy array, and conversion to tensors.

A tensor never changes after it is made: ops return new tensors, and the array inside is
never handed out writable (``numpy()`` copies, ``__array__`` gives a read-only view).

Every operator (``+``, ``@``, ``<``, ``[]``, ...) is one line calling the public op of the
same meaning, so ``a @ b`` and ``matmul(a, b)`` take exactly the same path through the
execution seam, in eager and in graph mode alike.

About ``==``: as in NumPy, PyTorch and TensorFlow 2, ``a == b`` is elementwise and returns a
bool tensor (``equal(a, b)``). Unlike TensorFlow 2, tensors stay hashable, by identity, as in
PyTorch: graph code keys dictionaries by tensors (``feed_dict={x: ...}``). So ``t in a_set``
asks "is this the same tensor object", never "an equal value".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import DTypeError, EagerflowError, ShapeError, describe, format_shape

_INT32 = np.iinfo(np.int32)
_Binary = Callable[["Tensor", Any], "Tensor"]  # the type of `tensor + x` and its kin
_Unary = Callable[["Tensor"], "Tensor"]


class TensorShape(tuple[int | None, ...]):
    """A shape as TensorFlow's ``get_shape()`` returns it: still a tuple (``== (2, 3)`` holds,
    it indexes and unpacks), with TensorFlow's ``as_list()``, ``rank`` and
    ``is_fully_defined()``. A dimension may be None (unknown, in a graph).

    ``TensorShape(None)`` is a shape whose rank is not even known: ``rank`` is None.
    ``Tensor.shape`` stays a plain tuple (or None): cheaper, and ``shape is None`` reads well.
    """

    __slots__ = ()

    def __new__(cls, dims: Iterable[int | None] | None) -> TensorShape:
        if dims is None:
            return super().__new__(_UnknownRank)
        return super().__new__(cls, dims)

    @property
    def rank(self) -> int | None:
        return len(self)

    def as_list(self) -> list[int | None]:
        return list(self)

    def is_fully_defined(self) -> bool:
        """Every dimension is known."""
        return None not in self

    def __repr__(self) -> str:
        return f"TensorShape({list(self)})"

    def __str__(self) -> str:
        return format_shape(None if self.rank is None else self)


class _UnknownRank(TensorShape):
    """``TensorShape(None)``: not even the number of dimensions is known. It equals only
    itself (an empty tuple would equal the shape of a scalar)."""

    __slots__ = ()

    @property
    def rank(self) -> int | None:
        return None

    def as_list(self) -> list[int | None]:
        raise ValueError("as_list() is not defined on a shape of unknown rank")

    def is_fully_defined(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _UnknownRank)

    def __ne__(self, other: object) -> bool:
        return not isinstance(other, _UnknownRank)

    def __hash__(self) -> int:
        return hash(_UnknownRank)

    def __repr__(self) -> str:
        return "TensorShape(None)"


class Tensor:
    """An n-dimensional array of one dtype. Eager tensors hold their value.

    The graph package subclasses it for symbolic tensors, which have a static shape and
    dtype but no value until a Session runs them.
    """

    __slots__ = ("_dtype", "_value")
    __array_priority__ = 100  # `ndarray + tensor` calls Tensor.__radd__, not NumPy's add
    __hash__ = object.__hash__  # by identity (see the module docstring)

    _value: Any  # np.ndarray, or a NumPy scalar for 0-d results of NumPy ufuncs
    _dtype: DType

    def __init__(self, value: np.ndarray | np.generic, dtype: DType) -> None:
        """Wrap ``value`` (already of ``dtype``, never shared with user code) as a tensor.

        Users make tensors with ``constant``/``convert_to_tensor``; this is for kernels' output.
        """
        self._value = value
        self._dtype = dtype

    # --- what a tensor is -------------------------------------------------------------
    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def shape(self) -> tuple[int | None, ...]:
        return self._value.shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def get_shape(self) -> TensorShape:
        """The shape as a ``TensorShape``: ``t.get_shape().as_list()``, as in TensorFlow."""
        return TensorShape(self.shape)

    def numpy(self) -> Any:
        """A copy of the value as a NumPy array (a NumPy scalar for a 0-d tensor)."""
        v = self._value
        return v.copy() if v.ndim else v[()]

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        view = np.asarray(self._value, dtype=dtype)
        if copy:
            return view.copy()
        if view is self._value or view.base is not None:
            view = view.view()
            view.flags.writeable = False  # the tensor's own memory stays immutable
        return view

    def __repr__(self) -> str:
        body = str(self._value)
        if "\n" in body:
            body = "\n" + body
        return f"Tensor({body}, shape={format_shape(self.shape)}, dtype={self._dtype.name})"

    # --- Python protocols on one-element and first-axis views ---------------------------
    def __len__(self) -> int:
        if not self.shape:
            raise TypeError(f"len() of a 0-d tensor ({describe(self)}) is undefined")
        return self.shape[0]  # type: ignore[return-value]

    def __iter__(self) -> Iterator[Tensor]:
        for i in range(len(self)):
            yield self[i]

    def _item(self, what: str) -> Any:
        value = self._value
        if value.size != 1:
            raise ShapeError(
                f"{what}() needs a tensor with exactly one element, got {describe(self)} "
                f"({value.size} elements); reduce it first (reduce_sum, reduce_max, ...)"
            )
        return value.reshape(()).item()

    def __bool__(self) -> bool:
        return bool(self._item("bool"))

    def __int__(self) -> int:
        return int(self._item("int"))

    def __float__(self) -> float:
        return float(self._item("float"))

    def __format__(self, spec: str) -> str:
        """``f"{loss:.3f}"``: a one-element tensor formats like its Python number.

        An empty spec (``f"{t}"``) is ``str(t)``, for any tensor; a spec on several elements
        is a ``ShapeError``, as for ``float(t)``: which element should ``.3f`` format?
        """
        return format(self._item("format"), spec) if spec else str(self)

    def __index__(self) -> int:
        if not self._dtype.is_integer:
            raise TypeError(f"only integer tensors can be used as an index, got {describe(self)}")
        return int(self._item("index"))

    # --- operators: each is the public op of the same meaning ---------------------------
    # `a + b` calls `add(a, b)` itself: the operators *are* the public functions, attached
    # by the modules that define them (math_ops, indexing_ops), as TensorFlow's math_ops
    # attaches its operators to Tensor. This module needs none of them, so it imports no
    # op module, and a method that called the function would cost one Python call more
    # (~70 ns of a ~1 us `a + b`). The reflected ones (`2 * t`) swap their operands; `**`
    # is a two-argument function, so a third argument (`pow(a, b, mod)`) is an error
    # rather than taken for pow()'s `name`.
    if TYPE_CHECKING:
        __add__: _Binary
        __sub__: _Binary
        __mul__: _Binary
        __truediv__: _Binary
        __floordiv__: _Binary
        __mod__: _Binary
        __matmul__: _Binary
        __pow__: _Binary
        __lt__: _Binary
        __le__: _Binary
        __gt__: _Binary
        __ge__: _Binary
        __and__: _Binary
        __or__: _Binary
        __radd__: _Binary
        __rsub__: _Binary
        __rmul__: _Binary
        __rtruediv__: _Binary
        __rfloordiv__: _Binary
        __rmod__: _Binary
        __rmatmul__: _Binary
        __rpow__: _Binary
        __rand__: _Binary
        __ror__: _Binary
        __neg__: _Unary
        __abs__: _Unary
        __invert__: _Unary
        __getitem__: _Binary
        # `convert_to_tensor([t1, t2])`: TensorFlow's auto-packing, attached by indexing_ops
        _autopack: Callable[[Sequence[Any], DType | None], Tensor]

    def __pos__(self) -> Tensor:
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        # tensors are values, as in TensorFlow, whose message this is
        raise TypeError(
            "'Tensor' object does not support item assignment: a tensor never changes (build "
            "a new one, e.g. with where or concat; a Variable has assign, a TensorArray write)"
        )

    # `==` and `!=` are the ops `equal` and `not_equal` (attached by math_ops); declared
    # here because object defines them, so their types must agree with object's.
    if TYPE_CHECKING:

        def __eq__(self, other: object) -> Any: ...

        def __ne__(self, other: object) -> Any: ...


# --- conversion ---------------------------------------------------------------------------
def convert_to_tensor(value: Any, dtype: DType | str | None = None) -> Tensor:
    """``value`` as a tensor: tensors pass through, anything else becomes an eager tensor.

    Python floats become float32, ints int32 (int64 if too large), bools bool; NumPy arrays
    keep their dtype; nested lists must be rectangular. With ``dtype``, Python and NumPy
    values convert to it when no information is lost by kind: an int may become a float, but
    a float never becomes an int and nothing becomes or stops being bool. A tensor of another
    dtype raises ``DTypeError`` (use ``cast``). Objects that define ``__eagerflow_tensor__``
    (like ``Variable``) convert themselves. A list holding tensors is packed, as TensorFlow
    packs it: the tensors keep their dtype (the first one's, which Python numbers in the list
    take), and tensors of two dtypes raise ``DTypeError``.
    """
    target = dtype if dtype is None or type(dtype) is DType else dtypes.as_dtype(dtype)
    if isinstance(value, Tensor):
        if target is not None and value._dtype is not target:
            raise DTypeError(
                f"convert_to_tensor: requested dtype {target} for a tensor of dtype "
                f"{value._dtype}; use cast() to change a tensor's dtype"
            )
        return value
    # Two shortcuts past `to_array` for `lr * grad` (~1 us of its ~1.6): a Python float, and a
    # NumPy value of one of our dtypes, asked for as it is (nothing to check, just a copy)
    if type(value) is float and (target is None or target.is_floating):
        target = target or dtypes.float32
        return Tensor(np.array(value, target.np), target)
    if isinstance(value, np.ndarray | np.generic):
        own = dtypes.from_numpy(value.dtype)
        if own is not None and (target is None or target is own):
            return Tensor(np.array(value), own)
    convert = getattr(type(value), "__eagerflow_tensor__", None)
    if convert is not None:
        return convert(value, target)
    if holds_tensors(value):  # packed by the op `stack`, so it works in a graph too
        return Tensor._autopack(value, target)
    array = to_array(value, target)
    return Tensor(array, dtypes.from_numpy(array.dtype))  # type: ignore[arg-type]


def is_tensor_like(value: Any) -> bool:
    """A tensor, or an object that converts itself (``__eagerflow_tensor__``, a Variable)."""
    return isinstance(value, Tensor) or hasattr(type(value), "__eagerflow_tensor__")


def holds_tensors(value: Any) -> bool:
    """Whether a (nested) list or tuple holds a tensor-like value somewhere."""
    return isinstance(value, (list, tuple)) and any(
        is_tensor_like(v) or holds_tensors(v) for v in value
    )


def convert_operands(*values: Any) -> list[Tensor]:
    """Convert an op's tensor arguments; non-tensors take the first tensor's dtype.

    This is TensorFlow's rule for ``x * 2``: a Python scalar takes the tensor's dtype.
    Two tensors of different dtypes are left alone: the op's dtype rule rejects them.
    """
    # Loops, not generators: this runs for every `x * 2`, `lr * grad` and `x @ variable`.
    hint = None  # the first tensor's (or variable's) dtype
    for v in values:
        d = v._dtype if type(v) is Tensor else getattr(v, "dtype", None)  # (NumPy's: no DType)
        if type(d) is DType:
            hint = d
            break
    converted = []
    for v in values:
        if type(v) is not Tensor:
            own = getattr(v, "dtype", None)  # a variable converts to its own dtype
            v = convert_to_tensor(v, None if type(own) is DType else hint)
        converted.append(v)
    return converted


def to_array(value: Any, dtype: DType | None = None) -> np.ndarray:
    """A fresh NumPy array for a Python or NumPy value, following ``convert_to_tensor``'s rules."""
    if isinstance(value, str | bytes):
        raise DTypeError(f"convert_to_tensor: strings are not tensors, got {value!r:.60}")
    from_numpy = isinstance(value, np.ndarray | np.generic)
    try:
        array = np.asarray(value)
    except ValueError as e:
        raise ShapeError(
            f"convert_to_tensor: nested lists must be rectangular, got a ragged one "
            f"({value!r:.60}): {e}"
        ) from None
    natural = _natural_dtype(array, value, from_numpy)
    target = natural if dtype is None else dtype
    if target is not natural:
        _check_lossless(array, natural, target, value)
    return np.array(array, dtype=target.np, copy=True)


def _natural_dtype(array: np.ndarray, value: Any, from_numpy: bool) -> DType:
    kind = array.dtype.kind
    if from_numpy and kind not in "OUS":
        found = dtypes.from_numpy(array.dtype)
        if found is None:
            raise DTypeError(
                f"convert_to_tensor: NumPy dtype {array.dtype} has no eagerflow dtype; "
                f"cast the array to one of {', '.join(d.name for d in dtypes.ALL)} first"
            )
        return found
    if kind not in "fib":
        what = "strings" if kind in "US" else f"{type(value).__name__} values ({array.dtype})"
        raise DTypeError(f"convert_to_tensor: {what} cannot be a tensor: {value!r:.60}")
    if kind == "f":
        return dtypes.float32
    if kind == "b":
        return dtypes.bool_
    if array.size and (array.min() < _INT32.min or array.max() > _INT32.max):
        return dtypes.int64
    return dtypes.int32


def _check_lossless(array: np.ndarray, natural: DType, target: DType, value: Any) -> None:
    # an empty list ([] reads as float32) holds nothing to lose: it takes any dtype, as in TF
    ok = not array.size or natural.kind == target.kind or (natural.kind, target.kind) == ("i", "f")
    if ok and target.is_integer and array.size:
        info = np.iinfo(target.np)
        ok = info.min <= array.min() and array.max() <= info.max
    if not ok:
        raise DTypeError(
            f"convert_to_tensor: cannot convert {value!r:.60} ({natural}) to dtype {target} "
            "without losing information; use cast() to convert explicitly"
        )


def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a tensor, eager or symbolic (``tf.is_tensor``)."""
    return isinstance(value, Tensor)


__all__ = [
    "EagerflowError",
    "Tensor",
    "TensorShape",
    "convert_operands",
    "convert_to_tensor",
    "is_tensor",
    "to_array",
]
