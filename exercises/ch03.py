"""Chapter 3 exercises — run `.venv/bin/pytest -m ch03`.

Automatic differentiation with a tape: a gradient rule for a new op, a second derivative
from nested tapes, a Jacobian built row by row with a persistent tape, the numerical gradient
that `check_gradients` compares tapes against; then the machinery itself: a MiniTape's
backward walk in topological order, the gradients of broadcasting ``+`` and ``*``.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch03`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch03.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import ForwardAccumulator, GradientTape, OpRecord, register_gradient
from eagerflow.autodiff.registry import GRADIENTS
from eagerflow.tensor import Tensor
from eagerflow.tensor.dtypes import FLOATS
from eagerflow.tensor.execution import execute, recording
from eagerflow.tensor.registry import OPS, register_op
from eagerflow.tensor.rules import same_dtype, same_shape_rule


# --- given: the op Softsign, with a kernel and rules but no gradient yet ----------------------
def softsign_kernel(x: np.ndarray) -> np.ndarray:
    """x / (1 + |x|), elementwise: a smooth step from -1 to 1."""
    return x / (1 + np.abs(x))


if "Softsign" not in OPS:  # registered once, even if this file is loaded again
    register_op("Softsign", softsign_kernel, shape=same_shape_rule, dtype=same_dtype(FLOATS))


def softsign(x: Any) -> Tensor:
    """x / (1 + |x|), elementwise, through the seam (so tapes record it as one op)."""
    return execute("Softsign", (ef.convert_to_tensor(x),))[0]


# --- exercises ----------------------------------------------------------------------------------
def register_softsign_gradient() -> None:
    """★★ Register the gradient rule of the op ``Softsign``, once.

    The derivative is d/dx [x / (1 + |x|)] = 1 / (1 + |x|)². A rule receives the op's
    record and the gradient ``grad`` flowing back into its output, and returns one gradient
    per input: here ``(grad / (1 + |x|)²,)``. Calling this a second time must not fail.

    Write the rule with eagerflow ops (``ef.abs``, ``ef.square``, ``/``), not NumPy: then the
    tape can differentiate the rule itself, and second derivatives work too (the tests check
    both orders with ``check_gradients``).

    Hint 1:
        A gradient rule maps an op's record and the gradient flowing into its output to one
        gradient per input. ``GRADIENTS`` holds the rules by op name.

    Hint 2:
        Decorate a function ``rule(op, grad)`` with ``@register_gradient("Softsign")``, unless
        the name is already in ``GRADIENTS``; ``op.inputs[0]`` is x. ``Tanh``'s rule in
        ``packages/autodiff/src/eagerflow/autodiff/math_grad.py`` has the same shape.

    Hint 3:
        ``return (grad / ef.square(1.0 + ef.abs(x)),)``: a tuple, and eagerflow ops, so a tape
        can differentiate the rule too.
    """
    raise NotImplementedError


def second_derivative(f: Callable[[Tensor], Tensor], x: float) -> Tensor:
    """★★ f''(x), the second derivative of a scalar function, from two nested tapes.

    For ``f(x) = x³`` at 2.0 the answer is 6 · 2 = 12.

    Args:
        f: A function of one scalar float tensor, returning a scalar tensor.
        x: Where to differentiate.

    Returns:
        A scalar tensor.

    Hint 1:
        A tape records every op run while it is open, including the ops another tape runs to
        compute a gradient.

    Hint 2:
        Two tapes, one inside the other, both watching x: the inner one gives f'(x); the outer
        one, still open while the inner one computes f'(x), can differentiate that.

    Hint 3:
        ``x = ef.constant(x)``; ``with GradientTape() as outer:`` watch x, and inside it
        ``with GradientTape() as inner:`` watch x and ``y = f(x)``; still in the outer block,
        ``dy = inner.gradient(y, x)``; after it, ``outer.gradient(dy, x)``.
    """
    raise NotImplementedError


def jacobian_by_rows(f: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """★★ The Jacobian of ``f`` at ``x``, one row per output element, from one persistent tape.

    For ``y = f(x)`` with x of shape (n,) and y of shape (m,), ``J[i, j] = ∂y[i]/∂x[j]``,
    shape (m, n). Row i is the gradient of the single element ``y[i]``. Run ``f`` once, on
    one tape, and ask that tape for m gradients: only a persistent tape allows that.
    ``tape.jacobian`` does the same job; do not call it here (the test compares with it).

    Args:
        f: A function from a vector to a vector.
        x: A float tensor of shape (n,).

    Returns:
        A tensor of shape (m, n).

    Hint 1:
        Row i of the Jacobian is the gradient of one number, ``y[i]``.

    Hint 2:
        One tape, asked m times: that needs ``persistent=True``. Taking ``y[i]`` is an op too,
        so it must happen while the tape records.

    Hint 3:
        Inside ``with GradientTape(persistent=True) as tape:`` watch x, ``y = f(x)`` and
        ``rows = [y[i] for i in range(y.shape[0])]``; then
        ``ef.stack([tape.gradient(r, x) for r in rows])``.
    """
    raise NotImplementedError


def numerical_gradient(
    f: Callable[[Tensor], Tensor], x: np.ndarray, eps: float = 1e-4
) -> np.ndarray:
    """★ The gradient of a scalar function by central differences, without any tape.

    For each element j of ``x`` (shape (n,)):

        g[j] = (f(x + eps·eⱼ) - f(x - eps·eⱼ)) / (2·eps)

    where eⱼ is the j-th unit vector. This is what ``check_gradients`` compares a tape's
    answer with (it also picks random weights and directions so that big inputs stay
    cheap; see ``packages/autodiff/src/eagerflow/autodiff/checker.py``).

    Args:
        f: A function of a float64 tensor returning a scalar tensor.
        x: A float64 NumPy array of shape (n,).

    Returns:
        A float64 NumPy array of shape (n,).

    Hint 1:
        No tape: call ``f`` twice per element of x, once with that element nudged up by ``eps``
        and once nudged down.

    Hint 2:
        Make the nudge with NumPy, ``e = np.zeros_like(x); e[j] = eps``, and never change ``x``
        itself. ``float(...)`` reads f's scalar result.

    Hint 3:
        ``g[j] = (float(f(ef.constant(x + e))) - float(f(ef.constant(x - e)))) / (2 * eps)`` in
        a loop over j.
    """
    raise NotImplementedError


class MiniTape:
    """★★★ A tape of your own: record the ops, then walk back from the target in order.

    The chapter's ``MiniTape`` walks ``reversed(self.records)``. That works only because the
    records are in the order the ops ran. Write a ``gradient`` that does not rely on it:
    ``self.records`` may be in any order (the tests shuffle it), and the walk must still
    reach each record only after every record that used its output, so that a tensor used
    twice (``x * x + x``) gets the sum of all its gradients before its own rule runs. Call
    each rule at most once per record, with that sum.

    ``__init__`` and ``record`` are given (they are the chapter's); every recorded op has
    one output. Use the rules in ``GRADIENTS`` on the records: not a ``GradientTape``.

    Attributes:
        records: ``OpRecord``s of the ops that read a tracked tensor, in no promised order.
        tracked: The source and every tensor computed from it.
    """

    def __init__(self, source: Tensor) -> None:
        """Track ``source``; no records yet."""
        self.records: list[OpRecord] = []
        self.tracked: set[Tensor] = {source}  # tensors hash by identity

    def record(
        self, op: Any, inputs: tuple[Tensor, ...], attrs: Any, outputs: tuple[Tensor, ...]
    ) -> None:
        """Called by the seam after every op: keep the ops that read a tracked tensor."""
        if any(t in self.tracked for t in inputs):
            self.records.append(OpRecord(op, inputs, attrs, outputs))
            self.tracked.update(outputs)

    def gradient(self, target: Tensor, source: Tensor) -> Tensor | None:
        """d target / d source (of the sum of ``target``'s elements), or None with no path.

        Args:
            target: A tensor computed from the source while this tape recorded.
            source: The tensor the tape was made with.

        Returns:
            A tensor shaped like ``source``, or None when ``target`` does not depend on it.

        Hint 1:
            A record's rule may run only once the gradient of its output is complete: after
            the rules of all the records that read that output. That is a topological order,
            and the records' inputs and outputs say who depends on whom.

        Hint 2:
            Map each output to the record that made it. A depth-first walk from ``target``
            through the records' inputs, appending a record after its inputs' producers,
            lists producers before users; walk that list backwards.

        Hint 3:
            ``made = {r.outputs[0]: r for r in self.records}``; ``visit(t)`` returns at once
            if ``t`` has no producer or its record was seen, else visits the record's inputs
            and appends the record to ``order``. Then, as in the chapter, for each record of
            ``reversed(order)``: ``grads[t] = grads[t] + g if t in grads else g``.
        """
        raise NotImplementedError


def unbroadcast(grad: Tensor, shape: tuple[int, ...]) -> Tensor:
    """★★ Sum a gradient down to the shape of an input that broadcasting stretched.

    When ``x`` of shape (3, 1) is added to ``y`` of shape (2, 3, 4), the result has shape
    (2, 3, 4): each ``x[i, 0]`` was used 2·4 times, so its gradient is the sum of those 8
    entries of ``grad``. Sum over the leading axes ``x`` lacks, and over the axes where
    ``x`` has size 1 and ``grad`` does not; the result must have exactly ``shape``.
    (That is ``sum_to_shape`` of ``math_grad.py``; write your own, with eagerflow ops, so
    that a tape can differentiate a rule that uses it.)

    Args:
        grad: The gradient of the broadcast result.
        shape: The shape of the input, which broadcasts to ``grad.shape``.

    Returns:
        A tensor of shape ``shape`` (``grad`` itself if the shapes are equal).

    Hint 1:
        Broadcasting lines shapes up from the right. ``grad`` has ``len(grad.shape) -
        len(shape)`` extra axes in front, and some of the others were stretched from 1.

    Hint 2:
        ``ef.reduce_sum(grad, axis=..., keepdims=True)`` over the stretched axes keeps them as
        size 1; a sum without ``keepdims`` over the extra leading axes drops them.

    Hint 3:
        ``lead = grad.ndim - len(shape)``; the stretched axes are ``lead + i`` for each ``i``
        with ``shape[i] == 1 != grad.shape[lead + i]``; sum over those with ``keepdims=True``,
        then over ``range(lead)``.
    """
    raise NotImplementedError


def add_gradient(op: OpRecord, grad: Tensor) -> tuple[Tensor, Tensor]:
    """★ The gradient rule of an addition ``x + y`` whose inputs may broadcast.

    Each input gets the gradient of the result, summed down to its own shape. The tests
    register this rule for a copy of ``AddV2`` and compare a tape's gradients with the real
    op's, on shapes that broadcast. Chapter 7's ``mini_gradients`` calls this rule and
    ``mul_gradient`` again, unchanged, to build the gradient of a graph.

    Args:
        op: The record: ``op.inputs`` is ``(x, y)``.
        grad: The gradient of ``x + y``, of the broadcast shape.

    Returns:
        ``(dx, dy)``, shaped like ``x`` and ``y``.

    Hint 1:
        d(x + y)/dx is 1 everywhere: before broadcasting, ``dx`` would simply be ``grad``.

    Hint 2:
        ``unbroadcast`` each copy of ``grad`` to its input's shape.
    """
    raise NotImplementedError


def mul_gradient(op: OpRecord, grad: Tensor) -> tuple[Tensor, Tensor]:
    """★★ The gradient rule of a product ``x * y`` whose inputs may broadcast.

    d(x·y) = y·dx + x·dy, elementwise at the broadcast shape, then summed down to each
    input's shape. Write it with eagerflow ops (``*`` on tensors): the tests also check a
    second derivative through it.

    Args:
        op: The record: ``op.inputs`` is ``(x, y)``.
        grad: The gradient of ``x * y``, of the broadcast shape.

    Returns:
        ``(dx, dy)``, shaped like ``x`` and ``y``.

    Hint 1:
        Multiply first, at the broadcast shape; sum down afterwards.

    Hint 2:
        ``dx`` is ``unbroadcast(grad * y, x.shape)``; ``dy`` is the same with the roles
        swapped.
    """
    raise NotImplementedError
