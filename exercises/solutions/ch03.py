"""Chapter 3 exercises — run `.venv/bin/pytest -m ch03`.

Automatic differentiation with a tape: a gradient rule for a new op, a second derivative
from nested tapes, a Jacobian built row by row with a persistent tape, and the numerical
gradient that `check_gradients` compares tapes against.

Reference solutions: the same functions as `exercises/ch03.py`, solved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, OpRecord, register_gradient
from eagerflow.autodiff.registry import GRADIENTS
from eagerflow.tensor import Tensor
from eagerflow.tensor.dtypes import FLOATS
from eagerflow.tensor.execution import execute
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
    if "Softsign" in GRADIENTS:
        return

    @register_gradient("Softsign")
    def _softsign_grad(op: OpRecord, grad: Tensor) -> tuple[Tensor]:
        (x,) = op.inputs
        return (grad / ef.square(1.0 + ef.abs(x)),)


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
    x = ef.constant(x)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        dy = inner.gradient(y, x)
    return outer.gradient(dy, x)


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
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
        elements = [y[i] for i in range(y.shape[0])]
    return ef.stack([tape.gradient(e, x) for e in elements])


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
    grad = np.zeros_like(x, dtype=np.float64)
    for j in range(x.size):
        e = np.zeros_like(x, dtype=np.float64)
        e[j] = eps
        grad[j] = (float(f(ef.constant(x + e))) - float(f(ef.constant(x - e)))) / (2 * eps)
    return grad
