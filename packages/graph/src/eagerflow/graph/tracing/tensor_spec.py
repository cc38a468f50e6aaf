"""``TensorSpec``: a description of tensors (a shape and a dtype) without any value.

It is what a graph knows about a tensor before anything runs, written down as an object
you can pass around. ``function(f, input_signature=[TensorSpec((None, 3))])`` traces ``f``
once, for every tensor that fits the description (any number of rows of 3 columns), and
``f.get_concrete_function(TensorSpec(...))`` traces it for a description instead of an
example tensor. TensorFlow's ``tf.TensorSpec``.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

import eagerflow.tensor as ef
from eagerflow.graph.core.graph import Shape, SymbolicTensor
from eagerflow.tensor import Tensor, TensorShape
from eagerflow.tensor.dtypes import DType, as_dtype
from eagerflow.tensor.errors import format_shape
from eagerflow.tensor.rules import compatible


class TensorSpec:
    """The shape and dtype of some tensors, and an optional name.

    ``shape`` is a list of sizes where ``None`` is a dimension of any size (``(None, 3)``:
    any number of rows of 3), or ``None`` for any shape at all. Specs are values: two specs
    with the same shape, dtype and name are equal and hash alike.
    """

    __slots__ = ("_dtype", "_name", "_shape")

    def __init__(
        self,
        shape: Iterable[int | None] | None,
        dtype: DType | str = ef.float32,
        name: str | None = None,
    ) -> None:
        self._shape = _as_shape(shape)
        self._dtype = as_dtype(dtype)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"TensorSpec name must be a string or None, got {name!r}")
        self._name = name

    @classmethod
    def from_tensor(cls, tensor: Any, name: str | None = None) -> TensorSpec:
        """The spec of ``tensor``: its shape and dtype, and its name in a graph (the
        operation's, as in TensorFlow) unless ``name`` is given. An eager tensor has no
        name."""
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"TensorSpec.from_tensor takes a tensor, got {type(tensor).__name__} "
                f"{tensor!r} (use ef.convert_to_tensor first)"
            )
        if name is None and isinstance(tensor, SymbolicTensor):
            name = tensor.op.name
        return cls(tensor.shape, tensor.dtype, name)

    @property
    def shape(self) -> TensorShape:
        """A ``TensorShape`` (``TensorShape(None)`` when any shape fits)."""
        return self._shape

    @property
    def dtype(self) -> DType:
        return self._dtype

    @property
    def name(self) -> str | None:
        return self._name

    @property
    def static_shape(self) -> Shape:
        """The shape as a graph writes it: a tuple, or None for an unknown rank (a
        ``TensorShape(None)`` is an empty tuple, which would read as a scalar's shape)."""
        return None if self._shape.rank is None else tuple(self._shape)

    def is_compatible_with(self, spec_or_tensor: Any) -> bool:
        """Could ``spec_or_tensor`` (a TensorSpec, a tensor, or a value that converts to
        one) be described by this spec? Its dtype must be this one and its shape must fit,
        ``None`` fitting any size. A name does not matter."""
        if not isinstance(spec_or_tensor, TensorSpec | Tensor):
            spec_or_tensor = ef.convert_to_tensor(spec_or_tensor)
        other = spec_or_tensor.static_shape if isinstance(spec_or_tensor, TensorSpec) else (
            spec_or_tensor.shape)  # fmt: skip
        return spec_or_tensor.dtype is self._dtype and compatible(self.static_shape, other)

    def _key(self) -> tuple[Shape, DType, str | None]:
        return (self.static_shape, self._dtype, self._name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorSpec):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        shape = format_shape(self.static_shape)
        return f"TensorSpec(shape={shape}, dtype={self._dtype}, name={self._name!r})"


def _as_shape(shape: Any) -> TensorShape:
    """``shape`` checked: None, or an iterable of sizes (non-negative ints) and Nones."""
    if shape is None:
        return TensorShape(None)
    if isinstance(shape, TensorShape):
        return shape
    if isinstance(shape, str) or not isinstance(shape, Iterable):
        raise TypeError(
            f"TensorSpec shape must be a list of sizes (ints, or None for any size) or None, "
            f"got {shape!r}"
        )
    dims = list(shape)
    for d in dims:
        if d is None:
            continue
        if isinstance(d, bool) or not isinstance(d, numbers.Integral):
            raise TypeError(f"TensorSpec shape {dims}: a size must be an int or None, got {d!r}")
        if d < 0:
            raise ValueError(f"TensorSpec shape {dims}: a size cannot be negative, got {d}")
    return TensorShape(None if d is None else int(d) for d in dims)


__all__ = ["TensorSpec"]
