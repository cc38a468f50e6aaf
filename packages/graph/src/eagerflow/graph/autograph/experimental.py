"""``set_loop_options``: what a graph loop may not find out alone, as
``tf.autograph.experimental.set_loop_options``.

A graph loop keeps each loop variable's shape from one iteration to the next. A variable
that grows (a vector a ``concat`` lengthens) is refused, unless its *shape invariant* says
which dimensions may change::

    v = ef.zeros([0])
    for i in ef.range(n):
        set_loop_options(shape_invariants=[(v, (None,))])
        v = ef.concat([v, [1.0]], 0)

The call is written as the first statement of the loop it is about. The converter takes
it out of the loop and evaluates it just before, so each ``(variable, shape)`` pair names
the variable's value *before* the loop, which is how the loop helper finds it (by identity,
as TensorFlow does). Outside converted code (or in a loop over Python values) it does
nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from eagerflow.tensor.errors import InvalidArgumentError


class LoopOptions(NamedTuple):
    """The options of one loop: shape invariants as (value before the loop, shape) pairs."""

    shape_invariants: tuple[tuple[Any, Any], ...] = ()

    def invariant_of(self, value: Any, default: Any) -> Any:
        """The shape given for ``value`` (the very object), else ``default``."""
        for given, shape in self.shape_invariants:
            if given is value:
                return None if shape is None else tuple(shape)
        return default


def set_loop_options(
    parallel_iterations: int | None = None,
    swap_memory: bool | None = None,
    maximum_iterations: Any = None,
    shape_invariants: Sequence[tuple[Any, Any]] | None = None,
) -> LoopOptions:
    """The options of the loop this is the first statement of (see the module docstring).
    ``parallel_iterations`` and ``swap_memory`` are accepted and change nothing: eagerflow
    runs one iteration at a time, in memory. ``maximum_iterations`` is refused (not yet)."""
    if maximum_iterations is not None:
        raise InvalidArgumentError(
            "set_loop_options: maximum_iterations is not supported yet (test a counter in "
            "the loop's condition instead)"
        )
    pairs = tuple(shape_invariants or ())
    if not all(isinstance(p, tuple | list) and len(p) == 2 for p in pairs):
        raise TypeError(
            "set_loop_options: shape_invariants must be a list of (variable, shape) pairs, "
            f"got {shape_invariants!r:.60}"
        )
    return LoopOptions(tuple((v, shape) for v, shape in pairs))


__all__ = ["LoopOptions", "set_loop_options"]
