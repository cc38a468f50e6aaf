"""A dataset's elements: structures of tensors, how they are made, passed to a function and
stacked into batches (``tf.data``'s rules), and the checks of ``Dataset``'s arguments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.tensor import Tensor, nest
from eagerflow.tensor.errors import DTypeError, InvalidArgumentError, ShapeError, format_shape


def as_structure(value: Any, caller: str, path: str = "") -> Any:
    """``value`` with tuples (named ones too) and dicts kept as structure and everything else,
    lists included, converted to one tensor each (``tf.data``'s rule for its inputs)."""
    if isinstance(value, dict):
        return type(value)((k, as_structure(v, caller, f"{path}[{k!r}]"))
                           for k, v in value.items())  # fmt: skip
    if isinstance(value, tuple):
        items = [as_structure(v, caller, f"{path}[{i}]") for i, v in enumerate(value)]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    try:
        return ef.convert_to_tensor(value)
    except (DTypeError, ShapeError) as e:
        where = f"component {path}" if path else "the value"
        raise TypeError(f"{caller}: {where} is not a tensor: {e}") from None


def leaf_paths(structure: Any, prefix: str = "") -> list[str]:
    """A name for each leaf, in ``nest.flatten``'s order: ``component ['x']``, ``component
    [0][1]``, or ``the tensor`` when the structure is one tensor."""
    if isinstance(structure, dict):
        return [p for k, v in structure.items() for p in leaf_paths(v, f"{prefix}[{k!r}]")]
    if isinstance(structure, tuple):
        return [p for i, v in enumerate(structure) for p in leaf_paths(v, f"{prefix}[{i}]")]
    return [f"component {prefix}" if prefix else "the tensor"]


def call_with(fn: Callable[..., Any], element: Any) -> Any:
    """``tf.data``'s calling convention: a tuple (exactly a tuple, not a named one) is spread
    over positional arguments; any other element is one argument."""
    return fn(*element) if type(element) is tuple else fn(element)


def checked_function(caller: str, fn: Any) -> Callable[..., Any]:
    """``fn``, or a TypeError naming ``caller`` when it cannot be called."""
    if not callable(fn):
        raise TypeError(
            f"{caller}: expected a function (called with each element's components), got "
            f"{type(fn).__name__} {fn!r:.60}"
        )
    return fn


def count_argument(caller: str, what: str, value: Any, least: int | None) -> int:
    """``value`` as an int >= ``least`` (any int if None), or an error naming ``caller`` and
    ``what``. (A bool is an int to Python, but ``batch(True)`` is surely a mistake.)"""
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{caller}: {what} must be an int, got {value!r:.40}")
    if least is not None and value < least:
        raise InvalidArgumentError(f"{caller}: {what} must be >= {least}, got {value}")
    return int(value)


def function_name(fn: Callable[..., Any]) -> str:
    """A function's name for a message (a callable object's class name)."""
    return getattr(fn, "__name__", type(fn).__name__)


def to_numpy(t: Tensor) -> Any:
    """``t.numpy()``, as a function to map over an element's structure."""
    return t.numpy()


def stack_elements(elements: list[Any]) -> Any:
    """One batch: the elements' tensors stacked component by component."""
    first = elements[0]
    columns = [nest.flatten(first)]
    for k, element in enumerate(elements[1:], start=1):
        try:
            nest.assert_same_structure(first, element)
        except ValueError as e:
            raise ValueError(f"batch: element {k} of a batch differs from element 0: {e}") from None
        columns.append(nest.flatten(element))
    stacked = []
    for j, path in enumerate(leaf_paths(first)):
        column = [np.asarray(leaves[j]) for leaves in columns]
        for k, value in enumerate(column):
            if value.shape != column[0].shape or value.dtype != column[0].dtype:
                raise ValueError(
                    f"batch: cannot stack {path}: it is {format_shape(column[0].shape)} "
                    f"{column[0].dtype} in the batch's element 0 but "
                    f"{format_shape(value.shape)} {value.dtype} in element {k}"
                )
        stacked.append(ef.convert_to_tensor(np.stack(column)))
    return nest.pack_sequence_as(first, stacked)


__all__ = [
    "as_structure",
    "call_with",
    "checked_function",
    "count_argument",
    "function_name",
    "leaf_paths",
    "stack_elements",
    "to_numpy",
]
