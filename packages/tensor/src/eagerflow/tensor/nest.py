"""Nested structures of tensors: TensorFlow's ``tf.nest``, for every eagerflow package.

A *structure* is a leaf or a list, tuple (named tuples too) or dict of structures. Functions
take and return structures (``fetches=[loss, {"w": w}]``, a model's outputs), while the
machinery underneath wants flat lists: ``flatten`` gives the leaves in order, and
``pack_sequence_as`` puts new leaves back in the same shape::

    flatten([a, {"w": w, "b": b}])                        -> [a, w, b]
    pack_sequence_as([a, {"w": w, "b": b}], [1, 2, 3])    -> [1, {"w": 2, "b": 3}]

One difference from TensorFlow: dicts are walked in insertion order, not in sorted key order,
so keys need not be comparable (eagerflow's dicts may be keyed by tensors).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from eagerflow.tensor.tensor import Tensor

_NESTS = (list, tuple, dict)  # a tuple, not `list | tuple | dict`: isinstance is faster


def is_nested(structure: Any) -> bool:
    """True for a list, tuple or dict (something ``flatten`` looks inside)."""
    return type(structure) is not Tensor and isinstance(structure, _NESTS)


def _is_flat(structure: Any) -> bool:
    """A plain list or tuple of leaves: the common case, which gets a fast path."""
    if type(structure) is not list and type(structure) is not tuple:
        return False
    for item in structure:  # noqa: SIM110 (a loop: all() of a generator costs more here)
        if type(item) is not Tensor and isinstance(item, _NESTS):
            return False
    return True


def flatten(structure: Any) -> list[Any]:
    """The leaves of ``structure``, in order (a leaf alone gives a list of one)."""
    if _is_flat(structure):
        return list(structure)
    if isinstance(structure, list | tuple):
        return [leaf for item in structure for leaf in flatten(item)]
    if isinstance(structure, dict):
        return [leaf for item in structure.values() for leaf in flatten(item)]
    return [structure]


def pack_sequence_as(structure: Any, flat_sequence: Iterable[Any]) -> Any:
    """``structure`` rebuilt with its leaves replaced, in order, by ``flat_sequence``.

    The inverse of ``flatten``: ``pack_sequence_as(s, flatten(s))`` equals ``s``.
    """
    leaves = list(flat_sequence)
    if type(structure) is list and _is_flat(structure) and len(leaves) == len(structure):
        return leaves
    it = iter(leaves)

    def rebuild(node: Any) -> Any:
        if isinstance(node, list | tuple):
            items = [rebuild(item) for item in node]
            return type(node)(*items) if hasattr(node, "_fields") else type(node)(items)
        if isinstance(node, dict):
            return type(node)((key, rebuild(value)) for key, value in node.items())
        try:
            return next(it)
        except StopIteration:
            raise ValueError(_count_error(structure, leaves)) from None

    packed = rebuild(structure)
    if next(it, it) is not it:  # leaves left over
        raise ValueError(_count_error(structure, leaves))
    return packed


def pack_around_nones(structure: Any, flat_sequence: Iterable[Any]) -> Any:
    """``pack_sequence_as`` where the None leaves of ``structure`` stay None and take no
    value: how a ``function`` that returns ``(x, None)`` gives its outputs back, as in
    TensorFlow. Values left over in ``flat_sequence`` are ignored."""
    leaves, it = flatten(structure), iter(flat_sequence)
    return pack_sequence_as(structure, [None if leaf is None else next(it) for leaf in leaves])


def _count_error(structure: Any, leaves: list[Any]) -> str:
    return (
        f"pack_sequence_as: the structure has {len(flatten(structure))} leaves but "
        f"{len(leaves)} values were given"
    )


def assert_same_structure(first: Any, second: Any) -> None:
    """Raise ValueError unless both have the same nesting (their leaves may differ; a list
    and a tuple of as many items count as the same)."""
    if not _same_structure(first, second):
        raise ValueError(f"different structures: {_outline(first)} and {_outline(second)}")


def _same_structure(first: Any, second: Any) -> bool:
    if not is_nested(first) or not is_nested(second):
        return is_nested(first) == is_nested(second)
    if isinstance(first, dict) or isinstance(second, dict):
        same_keys = (
            isinstance(first, dict) and isinstance(second, dict) and list(first) == list(second)
        )
        return same_keys and all(map(_same_structure, first.values(), second.values()))
    return len(first) == len(second) and all(map(_same_structure, first, second))


def _outline(structure: Any) -> str:
    """The nesting with each leaf drawn as ``.``: ``[., {'w': .}]``."""
    if isinstance(structure, dict):
        return "{" + ", ".join(f"{k!r}: {_outline(v)}" for k, v in structure.items()) + "}"
    if is_nested(structure):
        inner = ", ".join(_outline(item) for item in structure)
        return f"[{inner}]" if isinstance(structure, list) else f"({inner})"
    return "."


def map_structure(func: Callable[..., Any], *structures: Any) -> Any:
    """``func`` applied to the leaves of ``structures`` (all of the same nesting), leaf by
    leaf, in a structure like the first: ``map_structure(ef.add, [a, b], [c, d])`` is
    ``[a + c, b + d]``."""
    if not structures:
        raise ValueError("map_structure needs at least one structure")
    for other in structures[1:]:
        assert_same_structure(structures[0], other)
    columns = zip(*(flatten(s) for s in structures), strict=True)
    return pack_sequence_as(structures[0], [func(*leaves) for leaves in columns])


__all__ = [
    "assert_same_structure",
    "flatten",
    "is_nested",
    "map_structure",
    "pack_around_nones",
    "pack_sequence_as",
]
