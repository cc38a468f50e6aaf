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
    """Register the gradient rule of the op ``Softsign``, once.

    The derivative is d/dx [x / (1 + |x|)] = 1 / (1 + |x|)². A rule receives the op's
    record and the gradient ``grad`` flowing back into its output, and returns one gradient
    per input: here ``(grad / (1 + |x|)²,)``. Calling this a second time must not fail.

    Write the rule with eagerflow ops (``ef.abs``, ``ef.square``, ``/``), not NumPy: then the
    tape can differentiate the rule itself, and second derivatives work too (the tests check
    both orders with ``check_gradients``).

    Hint:
        ``@register_gradient("Softsign")`` (from ``eagerflow.autodiff``) on a function
        ``rule(op, grad)``; ``op.inputs[0]`` is x. ``GRADIENTS`` in
        ``eagerflow.autodiff.registry`` holds the rules: skip registering if the name is in
        it. ``packages/autodiff/src/eagerflow/autodiff/math_grad.py`` has many rules to copy
        the shape of (``Tanh``'s is close).
    """
    if "Softsign" in GRADIENTS:
        return

    @register_gradient("Softsign")
    def _softsign_grad(op: OpRecord, grad: Tensor) -> tuple[Tensor]:
        (x,) = op.inputs
        return (grad / ef.square(1.0 + ef.abs(x)),)


def second_derivative(f: Callable[[Tensor], Tensor], x: float) -> Tensor:
    """f''(x), the second derivative of a scalar function, from two nested tapes.

    For ``f(x) = x³`` at 2.0 the answer is 6 · 2 = 12.

    Args:
        f: A function of one scalar float tensor, returning a scalar tensor.
        x: Where to differentiate.

    Returns:
        A scalar tensor.

    Hint:
        Make ``x`` a tensor with ``ef.constant``. The outer tape must still be recording
        while the inner tape computes f'(x), so that it records the ops of that computation
        too: open the outer ``with GradientTape() as outer:``, watch x, open the inner one
        inside it, watch x again, compute ``y = f(x)``; then (still inside the outer block)
        ``dy = inner.gradient(y, x)``; finally ``outer.gradient(dy, x)``.
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
    """The Jacobian of ``f`` at ``x``, one row per output element, from one persistent tape.

    For ``y = f(x)`` with x of shape (n,) and y of shape (m,), ``J[i, j] = ∂y[i]/∂x[j]``,
    shape (m, n). Row i is the gradient of the single element ``y[i]``. Run ``f`` once, on
    one tape, and ask that tape for m gradients: only a persistent tape allows that.
    ``tape.jacobian`` does the same job; do not call it here (the test compares with it).

    Args:
        f: A function from a vector to a vector.
        x: A float tensor of shape (n,).

    Returns:
        A tensor of shape (m, n).

    Hint:
        ``with GradientTape(persistent=True) as tape:``, watch x, ``y = f(x)``, and take each
        element ``y[i]`` inside the block too (indexing is an op the tape must record).
        Then ``tape.gradient(y[i], x)`` for each i, and ``ef.stack`` the rows.
    """
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
        elements = [y[i] for i in range(y.shape[0])]
    return ef.stack([tape.gradient(e, x) for e in elements])


def numerical_gradient(
    f: Callable[[Tensor], Tensor], x: np.ndarray, eps: float = 1e-4
) -> np.ndarray:
    """The gradient of a scalar function by central differences, without any tape.

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

    Hint:
        Loop over j with NumPy: ``e = np.zeros_like(x); e[j] = eps``, then
        ``float(f(ef.constant(x + e)))`` and the same with ``x - e``.
    """
    grad = np.zeros_like(x, dtype=np.float64)
    for j in range(x.size):
        e = np.zeros_like(x, dtype=np.float64)
        e[j] = eps
        grad[j] = (float(f(ef.constant(x + e))) - float(f(ef.constant(x - e)))) / (2 * eps)
    return grad
