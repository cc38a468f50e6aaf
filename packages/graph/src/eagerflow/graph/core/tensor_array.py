"""``TensorArray``: a list of tensors of one dtype and shape, as ``tf.TensorArray``.

Here it is a Python list of tensors, and each method is a public op on them: ``stack`` is
``stack``, ``gather`` gathers, ``concat`` concatenates. So it works eagerly and while a graph
or a ``function`` is built, and gradients flow through it like through any op. As in
TensorFlow, ``write``, ``unstack`` and ``scatter`` return the new TensorArray: use the result
(the old one is left unchanged).

While its indices are known (Python ints, or eager tensors) it stays a list. An index that
is a graph tensor (the counter of a ``while_loop``), or being a loop variable, turns it into
one tensor, its *buffer*: the slots stacked along axis 0, as TensorFlow keeps a tensor list
in the graph. ``write`` then picks its slot with ``where`` (and, with ``dynamic_size``, first
grows the buffer with ``concat``), ``read`` is ``gather``, ``stack`` the buffer itself: public
ops, so gradients flow through the loop's ``While`` as through any loop variable.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import eagerflow.tensor as ef
from eagerflow.graph.core.graph import SymbolicTensor, get_default_graph
from eagerflow.graph.core.subgraphs import ScratchGraph, scratch
from eagerflow.tensor import DType, Tensor
from eagerflow.tensor.errors import DTypeError, OutOfRangeError, ShapeError, format_shape
from eagerflow.tensor.nest import flatten, pack_sequence_as
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
        self._buffer: Tensor | None = None  # the slots stacked, once it is one tensor

    def _with(self, elements: list[Tensor | None], shape: Any) -> TensorArray:
        new = object.__new__(TensorArray)
        new.__dict__.update(self.__dict__, _elements=elements, element_shape=shape)
        return new

    def _with_buffer(self, buffer: Tensor, shape: Any) -> TensorArray:
        new = self._with([], shape)
        new._buffer = buffer
        return new

    def size(self) -> Tensor:
        """The number of slots, an int32 scalar."""
        if self._buffer is not None:
            return ef.cast(_rows(self._buffer, self.element_shape), ef.int32)
        return ef.constant(len(self._elements), ef.int32)

    def write(self, index: Any, value: Any) -> TensorArray:
        """A TensorArray with ``value`` in slot ``index``."""
        value = self._converted(value)
        shape = self._checked_shape(value)
        if self._buffer is not None or isinstance(index, SymbolicTensor):
            return self._with(self._elements, shape)._write_buffer(index, value)
        i = _static_index(self, index, "index")
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
        if self._buffer is not None or isinstance(index, SymbolicTensor):
            return self._read_buffer(index)
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
        if self._buffer is not None:
            return self._buffer
        if not self._elements:
            shape = self.element_shape if self.element_shape is not None else ()
            return ef.zeros((0, *[d or 0 for d in shape]), self.dtype)
        return ef.stack([self.read(i) for i in range(len(self._elements))])

    def gather(self, indices: Sequence[int] | Any) -> Tensor:
        """The slots ``indices``, stacked."""
        if self._buffer is not None or isinstance(indices, SymbolicTensor):
            return ef.gather(self.loop_tensor(), _index_tensor(self, indices))
        return ef.stack([self.read(i) for i in _static_indices(self, indices)])

    def concat(self) -> Tensor:
        """All slots concatenated along their first axis."""
        if self._buffer is not None:
            shape = self.element_shape
            if shape is None or not shape or None in shape[1:]:
                raise ShapeError(f"{self.name}: concat needs elements of a known shape with an "
                                 f"axis, got {format_shape(shape)}")  # fmt: skip
            return ef.reshape(self._buffer, (-1, *cast(tuple[int, ...], shape[1:])))
        return ef.concat([self.read(i) for i in range(len(self._elements))], axis=0)

    def unstack(self, value: Any) -> TensorArray:
        """A TensorArray holding ``value``'s rows, one per slot."""
        value = self._converted(value)
        if isinstance(value, SymbolicTensor) and value.shape and not self._elements:
            # a graph tensor fills a new array whole, as its buffer (its rows may be unknown)
            return self._with_buffer(value, self._checked_rows(value))
        if value.shape is None or not value.shape or value.shape[0] is None:
            raise ShapeError(f"{self.name}: unstack needs a value whose first axis is known, "
                             f"got shape {format_shape(value.shape)}")  # fmt: skip
        return self.scatter(list(range(value.shape[0])), value)

    def scatter(self, indices: Sequence[int] | Any, value: Any) -> TensorArray:
        """A TensorArray with ``value``'s rows written to the slots ``indices``."""
        value = self._converted(value)
        array = self
        writes = _slots_and_rows(self, indices)
        for i, row in writes:
            array = array.write(i, ef.gather(value, row))
        return array

    def _checked_rows(self, value: Tensor) -> Any:
        """The element shape of an array holding ``value``'s rows (checked as a write)."""
        assert value.shape is not None
        return self._checked_shape(ef.gather(value, 0)) if value.shape[0] != 0 else value.shape[1:]

    # --- as one tensor: in a graph loop -------------------------------------------------------
    def _write_buffer(self, index: Any, value: Tensor) -> TensorArray:
        """Slot ``index`` of the buffer set to ``value`` (the buffer grown to hold it first,
        if the array has a dynamic size)."""
        shape = self.element_shape
        if shape is None or None in shape:
            raise ShapeError(f"{self.name}: writing at a graph index needs a known element "
                             f"shape, got {format_shape(shape)}")  # fmt: skip
        buffer, i = self.loop_tensor(), _index_tensor(self, index)
        if buffer.shape is None:  # a loop's buffer whose element shape this write tells
            buffer = ef.reshape(buffer, (-1, *shape))
        rows = _rows(buffer, shape)
        if self.dynamic_size:  # append the missing rows: zeros, gathered from one row of them
            missing = ef.maximum(i + 1 - rows, 0)
            row = ef.zeros((1, *cast(tuple[int, ...], shape)), self.dtype)
            filler = ef.gather(row, ef.range(missing) * 0)
            buffer = ef.concat([buffer, filler], axis=0)
            rows = _rows(buffer, shape)
        else:  # the index itself, gathered from the slots' indices: raises when out of range
            i = ef.gather(ef.range(rows), i)
        mask = _slot_mask(rows, i, len(shape))
        return self._with_buffer(ef.where(mask, ef.expand_dims(value, 0), buffer), shape)

    def _read_buffer(self, index: Any) -> Tensor:
        """Slot ``index`` of the buffer: gathered, or, when its number of rows is known only
        at run time (a growing array), picked by a mask and a sum, whose gradient needs no
        static size where gather's does."""
        buffer, i = self.loop_tensor(), _index_tensor(self, index)
        shape = self.element_shape
        if buffer.shape is None or buffer.shape[0] is not None or shape is None or None in shape:
            return ef.gather(buffer, i)
        rows = _rows(buffer, shape)
        mask = _slot_mask(rows, ef.gather(ef.range(rows), i), len(shape))  # gather: in range
        return ef.reduce_sum(ef.where(mask, buffer, ef.zeros_like(buffer)), axis=0)

    def loop_tensor(self) -> Tensor:
        """The array as one tensor, its slots stacked along axis 0: how a graph loop
        carries it (unwritten slots are zeros, so their shape must be known)."""
        if self._buffer is not None:
            return self._buffer
        if not self._elements and self.element_shape is not None:
            return ef.zeros((0, *[d or 0 for d in self.element_shape]), self.dtype)
        if any(e is None for e in self._elements) or not self._elements:
            self._zeros("be a loop variable")  # raises unless the element shape is known
        return self.stack()

    def loop_shape(self) -> Any:
        """The shape the loop tensor keeps from one iteration to the next: its number of
        rows may change if the size is dynamic."""
        shape = self.element_shape
        if shape is None:
            return None
        rows = None if self.dynamic_size else _static_rows(self)
        return (rows, *shape)

    def from_loop(self, buffer: Tensor) -> TensorArray:
        """This array holding ``buffer`` (a loop's value of ``loop_tensor()``)."""
        shape = self.element_shape
        if shape is None and buffer.shape is not None:
            shape = tuple(buffer.shape[1:])
        return self._with_buffer(buffer, shape)

    def __repr__(self) -> str:
        if self._buffer is not None:
            return (f"<TensorArray {self.name} dtype={self.dtype.name} as one tensor "
                    f"{self._buffer!r}>")  # fmt: skip
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


class LoopArrays:
    """The TensorArrays among a graph loop's variables (``while_loop``'s): each is carried
    through the loop as its ``loop_tensor()``, and is a TensorArray again in the condition,
    in the body and after the loop.

    An array whose element shape is not known yet (``size=0, dynamic_size=True``, nothing
    written) cannot start as a tensor: the body is first traced into a scratch graph with
    the array as it is, where its first write tells the shape, as TensorFlow infers it."""

    def __init__(self, loop_vars: Sequence[Any], body: Callable[..., Any]) -> None:
        self.templates = list(loop_vars)
        if any(_unshaped(v) for v in self.templates):
            self._probe(body)
        self.start = [
            v.loop_tensor() if isinstance(v, TensorArray) else ef.convert_to_tensor(v)
            for v in self.templates
        ]

    def _probe(self, body: Callable[..., Any]) -> None:
        """Set the element shapes the body's writes give the unshaped arrays."""
        with scratch():
            graph = get_default_graph()
            assert isinstance(graph, ScratchGraph)
            values = [
                v if isinstance(v, TensorArray) else graph.input_like(ef.convert_to_tensor(v), "a")
                for v in self.templates
            ]
            results = body(*self.wrap(values))
        for i, (template, result) in enumerate(zip(self.templates, results, strict=False)):
            if _unshaped(template) and isinstance(result, TensorArray):
                self.templates[i] = template._with(template._elements, result.element_shape)

    def invariant(self, i: int, shape_invariants: Sequence[Any] | None) -> Any:
        """The shape loop variable ``i`` keeps: an array's own, else the one given."""
        template = self.templates[i]
        if isinstance(template, TensorArray):
            return template.loop_shape()
        if shape_invariants is not None:
            given = shape_invariants[i]
            return None if given is None else tuple(given)
        return self.start[i].shape

    def wrap(self, values: Sequence[Any]) -> list[Any]:
        """The loop's tensors as the loop variables: arrays where arrays were given."""
        return [
            t.from_loop(v) if isinstance(t, TensorArray) and not isinstance(v, TensorArray) else v
            for t, v in zip(self.templates, values, strict=True)
        ]

    def wrapped(self, fn: Callable[..., Any], results: bool = False) -> Callable[..., Any]:
        """``fn`` taking the loop's tensors (and, for the body, returning them)."""

        def call(*values: Any) -> Any:
            out = fn(*self.wrap(values))
            if results and isinstance(out, TensorArray):  # the one loop variable
                return out.loop_tensor()
            if results and isinstance(out, list | tuple):
                out = [o.loop_tensor() if isinstance(o, TensorArray) else o for o in out]
            return out

        return call

    def unwrap(self, outputs: Sequence[Any]) -> list[Any]:
        """The loop's final tensors as the loop variables."""
        return self.wrap(list(outputs))


def as_tensors(result: Any) -> Any:
    """``result`` with each TensorArray in it replaced by its one tensor (a branch's result:
    what ``cond`` outputs)."""
    leaves = [v.loop_tensor() if isinstance(v, TensorArray) else v for v in flatten(result)]
    return pack_sequence_as(result, leaves)


def with_arrays(template: Any, outputs: Sequence[Any]) -> Any:
    """``outputs`` in the structure of ``template``, as TensorArrays where it has them."""
    leaves = [
        t.from_loop(o) if isinstance(t, TensorArray) else o
        for t, o in zip(flatten(template), outputs, strict=True)
    ]
    return pack_sequence_as(template, leaves)


def _unshaped(value: Any) -> bool:
    return isinstance(value, TensorArray) and value.element_shape is None


def _index_tensor(array: TensorArray, index: Any) -> Tensor:
    """``index`` as an int32 tensor (a graph index may be int32 or int64, as TensorFlow's)."""
    index = ef.convert_to_tensor(index)
    if index.dtype not in (ef.int32, ef.int64):
        raise DTypeError(f"{array.name}: an index must be int32 or int64, got {index.dtype}")
    return ef.cast(index, ef.int32)


def _slot_mask(rows: Any, index: Tensor, rank: int) -> Tensor:
    """True at row ``index`` of a buffer of ``rows`` slots of rank ``rank``, for ``where``."""
    return ef.reshape(ef.equal(ef.range(rows), index), (-1, *[1] * rank))


def _rows(buffer: Tensor, element_shape: Any) -> Any:
    """The number of rows of ``buffer``: a Python int if its shape says so, else counted."""
    if buffer.shape is not None and buffer.shape[0] is not None:
        return buffer.shape[0]
    count = 1 if element_shape is None else math.prod(element_shape)
    if element_shape is None or None in element_shape or count == 0:
        raise ShapeError(f"cannot count the slots of a TensorArray of element shape "
                         f"{format_shape(element_shape)}")  # fmt: skip
    return ef.size(buffer) // count


def _static_rows(array: TensorArray) -> int | None:
    if array._buffer is None:
        return len(array._elements)
    shape = array._buffer.shape
    return None if shape is None else shape[0]


def _slots_and_rows(array: TensorArray, indices: Any) -> list[tuple[Any, int]]:
    """(slot, row of the value) for each write of a scatter: graph indices are gathered one
    by one (a write each, at a graph index), so their number must be known."""
    if not isinstance(indices, SymbolicTensor):
        return [(i, row) for row, i in enumerate(_static_indices(array, indices))]
    shape = indices.shape
    if shape is None or len(shape) != 1 or shape[0] is None:
        raise ShapeError(f"{array.name}: scatter at graph indices needs a vector of known "
                         f"length, got shape {format_shape(shape)}")  # fmt: skip
    return [(ef.gather(indices, row), row) for row in range(shape[0])]


def _static_indices(array: TensorArray, indices: Any) -> list[int]:
    if isinstance(indices, SymbolicTensor):
        _static_index(array, indices, "indices")
    values = indices.numpy().tolist() if isinstance(indices, Tensor) else list(indices)
    return [_static_index(array, i, "index") for i in values]


__all__ = ["LoopArrays", "TensorArray", "as_tensors", "with_arrays"]
