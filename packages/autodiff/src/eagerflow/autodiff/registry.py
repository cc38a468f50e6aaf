"""The gradient registry: one rule per op name, shared by every way of differentiating.

A rule receives the ``OpRecord`` of one op application (its inputs, attributes and outputs)
and the gradients flowing back into its outputs, and returns one gradient per input
(``None`` where an input gets none). Rules are written only with public eagerflow ops, so:

- in eager mode, the GradientTape calls them on eager tensors;
- in graph mode, ``gradients()`` calls them on symbolic tensors, adding gradient nodes;
- when an outer tape is recording, the ops a rule runs are recorded in turn, which is all
  it takes to get gradients of gradients.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from eagerflow.tensor import Tensor
from eagerflow.tensor.registry import Attrs, OpDef

GradientRule = Callable[..., Sequence[Tensor | None]]


class OpRecord(NamedTuple):
    """One op application, as a gradient rule sees it (a NamedTuple: cheap to make).

    A *use* of an op: its ``op`` is the ``OpDef`` applied, with the inputs, attributes and
    outputs of this one application (a use kept in a graph is an ``Operation``, a node)."""

    op: OpDef
    inputs: tuple[Tensor, ...]
    attrs: Attrs
    outputs: tuple[Tensor, ...]
    skip: frozenset[int] = frozenset()  # inputs whose gradient nobody asked for

    def needs(self, i: int) -> bool:
        """Whether input ``i`` needs a gradient; a rule may return None for it otherwise
        (TensorFlow's ``skip_input_indices``: it saves work, never changes an answer)."""
        return i not in self.skip


# op name -> rule; None marks an op as deliberately not differentiable.
GRADIENTS: dict[str, GradientRule | None] = {}
# Ops of several outputs whose rule takes None (rather than zeros) for an output nobody
# used, and skips the work that output would need (TensorFlow's
# ``_grad_fn_accepts_none_for_indices``).
ACCEPTS_NONE: set[str] = set()


def register_gradient(
    op_name: str, *, accepts_none: bool = False
) -> Callable[[GradientRule], GradientRule]:
    """Decorator: ``@register_gradient("MatMul") def _(op, grad): return (da, db)``."""

    def register(rule: GradientRule) -> GradientRule:
        if op_name in GRADIENTS:
            raise ValueError(f"a gradient for {op_name!r} is already registered")
        GRADIENTS[op_name] = rule
        if accepts_none:
            ACCEPTS_NONE.add(op_name)
        return rule

    return register


def not_differentiable(*op_names: str) -> None:
    """Declare ops whose outputs carry no gradient (comparisons, argmax, random, ...)."""
    for name in op_names:
        if name in GRADIENTS:
            raise ValueError(f"a gradient for {name!r} is already registered")
        GRADIENTS[name] = None


def get_gradient(op_name: str) -> GradientRule | None:
    """The rule for ``op_name`` (None if not differentiable); LookupError if none is known."""
    try:
        return GRADIENTS[op_name]
    except KeyError:
        raise LookupError(
            f"no gradient is registered for op {op_name!r}; register one with "
            f"@register_gradient({op_name!r}) or declare it with not_differentiable()"
        ) from None


__all__ = [
    "ACCEPTS_NONE",
    "GRADIENTS",
    "GradientRule",
    "OpRecord",
    "get_gradient",
    "not_differentiable",
    "register_gradient",
]
