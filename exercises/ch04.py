"""Chapter 4 exercises — run `.venv/bin/pytest -m ch04`.

Forward mode with ``ForwardAccumulator``: a tall Jacobian column by column, a
Hessian-vector product forward-over-reverse; and (a stretch) forward mode of your own.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch04`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch04.py`; try on your own first.

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


def jacobian_by_columns(f: Callable[[Tensor], Tensor], x: Tensor) -> Tensor:
    """★ The Jacobian of a tall ``f`` at ``x``, one *column* per input, by forward mode.

    Chapter 3's ``jacobian_by_rows`` asked a tape for one row per output: m backward passes.
    Forward mode gives one column per pass instead: run ``f`` under a ``ForwardAccumulator``
    whose tangent for ``x`` is the unit vector eⱼ, and ``acc.jvp(y)`` is J·eⱼ, column j. For a
    *tall* function (few inputs, many outputs, a curve of many points from a few
    parameters) that is n passes instead of m. The test counts them: ``f`` must run exactly
    n times, each time under an accumulator, and never under a tape.
    (``forward_jacobian`` does this job; do not call it here.)

    Args:
        f: A function from a float64 vector of shape (n,) to one of shape (m,).
        x: Where to differentiate, shape (n,).

    Returns:
        The Jacobian, a tensor of shape (m, n): ``J[i, j] = ∂y[i]/∂x[j]``.

    Hint 1:
        One pass per input j: ``with ForwardAccumulator(x, e_j) as acc:`` run ``y = f(x)``;
        then ``acc.jvp(y)`` is column j.

    Hint 2:
        ``ef.one_hot(j, n, dtype=x.dtype)`` is eⱼ. ``ef.stack(columns, axis=1)`` puts the
        columns side by side, giving shape (m, n).
    """
    raise NotImplementedError


def hessian_vector_product(f: Callable[[Tensor], Tensor], x: Tensor, v: Tensor) -> Tensor:
    """★★ H·v, the Hessian of a scalar ``f`` at ``x`` times ``v``, forward-over-reverse.

    The Hessian of a function of n inputs has n² entries; Newton-like optimizers and
    curvature estimates only need its product with one vector. The gradient ``g(x)`` is a
    function of x, and H is *its* Jacobian, so H·v is the JVP of the gradient: run a tape
    (reverse mode) to get ``g``, inside a ``ForwardAccumulator`` (forward mode) with the
    tangent ``v`` for ``x``, which hears the tape's own backward ops and carries their
    tangents. One run of ``f``, one backward pass, no Hessian built. The test checks the
    nesting: while ``f`` runs, the accumulator is recording, and a tape started inside it.

    Args:
        f: A function from a float64 vector of shape (n,) to a scalar.
        x: Where to differentiate, shape (n,).
        v: The vector, shape (n,).

    Returns:
        H·v, shape (n,).

    Hint 1:
        The tangent the accumulator gives for the gradient, ``acc.jvp(g)``, is H·v: the
        gradient's derivative along v.

    Hint 2:
        Ask the tape for the gradient while still inside the accumulator's block: its ops must
        run where the accumulator hears them.

    Hint 3:
        ``with ForwardAccumulator(x, v) as acc:``, and in it ``with GradientTape() as tape:``
        ``tape.watch(x)``, ``y = f(x)``; still in the accumulator's block,
        ``g = tape.gradient(y, x)``; return ``acc.jvp(g)``.
    """
    raise NotImplementedError


def jvp(f: Callable[[Tensor], Tensor], x: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
    """★★★ Stretch: forward mode. ``f(x)`` and its directional derivative ``J·v``, in one run.

    A tape goes backwards, from the output; forward mode carries, next to every value, its
    *tangent*: how it changes when ``x`` moves along ``v``. ``x``'s tangent is ``v``; an
    op's output tangent follows from its inputs' (for ``a * b``: ``ta·b + a·tb``); the
    tangent of ``f(x)`` is ``J·v``, the Jacobian times ``v``, with no Jacobian built.

    Open-ended: design it as you like. One way is a recorder on the seam (``recording``,
    chapter 2) that computes each output's tangent as the op runs, from JVP rules you write
    for ``AddV2``, ``Sub``, ``Mul``, ``RealDiv``, ``Neg``, ``Square``, ``Exp``, ``Log`` and
    ``Tanh`` (the tests use only these, on vectors and scalar constants). Run ``f`` once;
    no ``GradientTape``, and no ``ForwardAccumulator``: it is forward mode ready-made, the
    very thing to build (the tests check all three).

    Args:
        f: A function of a float64 vector, written with the ops above.
        x: Where to differentiate, shape (n,).
        v: The direction, shape (n,).

    Returns:
        ``(y, dy)``: ``f(x)`` and ``J·v``, of the same shape.

    Hint 1:
        The tangents can live in a dictionary keyed by tensor (tensors hash by identity):
        ``{x: v}`` to start; a tensor that is not in it has tangent 0.

    Hint 2:
        A rule's own ops (``ta * b``, ...) go through the seam too, and your recorder hears
        them while it is computing: ignore the ops it runs itself (a flag), or it recurses.

    Hint 3:
        A rule per op name, from the inputs, their tangents (zeros for the missing ones) and
        the output: ``Mul``: ``ta * b + a * tb``; ``RealDiv``: ``(ta - out * tb) / b``;
        ``Tanh``: ``ta * (1 - out * out)``; ``Exp``: ``ta * out``; ``Log``: ``ta / a``.
    """
    raise NotImplementedError
