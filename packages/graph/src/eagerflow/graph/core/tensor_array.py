"""``TensorArray``: a list of tensors of one dtype and shape, as ``tf.TensorArray``.

Here it is a Python list of tensors, and each method is a public op on them: ``stack`` is
``stack``, ``gather`` gathers, ``concat`` concatenates. So it works eagerly and while a graph
or a ``function`` is built, and gradients flow through it like through any op. As in
TensorFlow, ``write``, ``unstack`` and ``scatter`` return the new TensorArray: use the result
(the old one is left unchanged).

Its indices must be known while the graph is built (Python ints, or eager tensors): it cannot
yet be a ``while_loop`` variable indexed by the loop counter, where TensorFlow keeps it as one
tensor list in the graph.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import eagerflow.tensor as ef
from eagerflow.graph.core.graph import SymbolicTensor
from eagerflow.tensor import DType, Tensor
from eagerflow.tensor.errors import DTypeError, OutOfRangeError, ShapeError, format_shape
from eagerflow.tensor.rules import compatible


class TensorArray:
    """``size`` slots for tensors of ``dtype``; ``dynamic_size=True`` lets writes past the end
    grow it. ``element_shape`` (or, with ``infer_shape``, the first write's) is checked on
    every write, and fills unwritten slots with zeros when ``stack`` or ``read`` meets one."""

    def __init__(self, dtype: Any, size: Any = 0, dynamic_size: bool = False,
                 element_shape: Iterable[int | None] | None = None, infer_shape: bool = True,
                 name: str | None = None) -> None:  # fmt: skip
        self.dtype: DType = ef.as_dtype(dtype)
        self.dynamic_size = bool(dynamic_size)
        self.element_shape = None if element_shape is None else tuple(element_shape)
        self._infer_shape = infer_shape
        self.name = name or "TensorArray"
        count = _static_index(self, size, "size")
        if count < 0:
            raise OutOfRangeError(f"{self.name}: size must be >= 0, got {count}")
        self._elements: list[Tensor | None] = [None] * count

    def _with(self, elements: list[Tensor | None], shape: Any) -> TensorArray:
        new = object.__new__(TensorArray)
        new.__dict__.update(self.__dict__, _elements=elements, element_shape=shape)
        return new

    def size(self) -> Tensor:
        """The number of slots, an int32 scalar."""
        return ef.constant(len(self._elements), ef.int32)

    def write(self, index: Any, value: Any) -> TensorArray:
        """A TensorArray with ``value`` in slot ``index``."""
        i = _static_index(self, index, "index")
        value = self._converted(value)
        shape = self._checked_shape(value)
        elements = list(self._elements)
        if i >= len(elements):
            if not self.dynamic_size:
                raise OutOfRangeError(f"{self.name}: cannot write index {i}: its size is "
                                      f"{len(elements)} and dynamic_size is False")  # fmt: skip
            elements.extend([None] * (i + 1 - len(elements)))
        elements[i] = value
        return self._with(elements, shape)

    def _converted(self, value: Any) -> Tensor:
        # Python and NumPy values take the array's dtype; a tensor must already have it
        value = ef.convert_to_tensor(value, None if ef.is_tensor(value) else self.dtype)
        if value.dtype is not self.dtype:
            raise DTypeError(f"{self.name}: holds {self.dtype.name}, cannot write a "
                             f"{value.dtype.name} tensor")  # fmt: skip
        return value

    def _checked_shape(self, value: Tensor) -> Any:
        if self.element_shape is not None and not compatible(self.element_shape, value.shape):
            raise ShapeError(f"{self.name}: cannot write a value of shape "
                             f"{format_shape(value.shape)}, its elements have shape "
                             f"{format_shape(self.element_shape)}")  # fmt: skip
        if self.element_shape is None and self._infer_shape and value.shape is not None:
            return tuple(value.shape)
        return self.element_shape

    def read(self, index: Any) -> Tensor:
        """The tensor in slot ``index`` (zeros of the element shape if never written)."""
        i = _static_index(self, index, "index")
        if i >= len(self._elements):
            raise OutOfRangeError(f"{self.name}: cannot read index {i} of a TensorArray of "
                                  f"size {len(self._elements)}")  # fmt: skip
        element = self._elements[i]
        return self._zeros(f"read index {i}") if element is None else element

    def _zeros(self, what: str) -> Tensor:
        shape = self.element_shape
        if shape is None or any(d is None for d in shape):
            raise ShapeError(f"{self.name}: cannot {what}: it was never written and the "
                             f"element shape {format_shape(shape)} is not known")  # fmt: skip
        return ef.zeros([d for d in shape if d is not None], self.dtype)  # all known here

    def stack(self) -> Tensor:
        """All slots stacked along a new first axis."""
        if not self._elements:
            shape = self.element_shape if self.element_shape is not None else ()
            return ef.zeros((0, *[d or 0 for d in shape]), self.dtype)
        return ef.stack([self.read(i) for i in range(len(self._elements))])

    def gather(self, indices: Sequence[int] | Any) -> Tensor:
        """The slots ``indices``, stacked."""
        return ef.stack([self.read(i) for i in _static_indices(self, indices)])

    def concat(self) -> Tensor:
        """All slots concatenated along their first axis."""
        return ef.concat([self.read(i) for i in range(len(self._elements))], axis=0)

    def unstack(self, value: Any) -> TensorArray:
        """A TensorArray holding ``value``'s rows, one per slot."""
        value = self._converted(value)
        if value.shape is None or not value.shape or value.shape[0] is None:
            raise ShapeError(f"{self.name}: unstack needs a value whose first axis is known, "
                             f"got shape {format_shape(value.shape)}")  # fmt: skip
        return self.scatter(list(range(value.shape[0])), value)

    def scatter(self, indices: Sequence[int] | Any, value: Any) -> TensorArray:
        """A TensorArray with ``value``'s rows written to the slots ``indices``."""
        value = self._converted(value)
        array = self
        for row, i in enumerate(_static_indices(self, indices)):
            array = array.write(i, ef.gather(value, row))
        return array

    def __repr__(self) -> str:
        return (f"<TensorArray {self.name} dtype={self.dtype.name} size={len(self._elements)} "
                f"element_shape={format_shape(self.element_shape)}>")  # fmt: skip


def _static_index(array: TensorArray, index: Any, what: str) -> int:
    if isinstance(index, SymbolicTensor):
        raise TypeError(f"{array.name}: its {what} must be known while the graph is built "
                        f"(a Python int or an eager tensor), got {index!r}")  # fmt: skip
    number = int(index)
    if number < 0:
        raise OutOfRangeError(f"{array.name}: {what} must be >= 0, got {number}")
    return number


def _static_indices(array: TensorArray, indices: Any) -> list[int]:
    if isinstance(indices, SymbolicTensor):
        _static_index(array, indices, "indices")
    values = indices.numpy().tolist() if isinstance(indices, Tensor) else list(indices)
    return [_static_index(array, i, "index") for i in values]


__all__ = ["TensorArray"]
