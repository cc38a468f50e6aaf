"""Chapter 5 exercises — run `.venv/bin/pytest -m ch05`.

Variables and training by hand: one gradient-descent step with ``assign_sub``, what a
read-before-assign means, momentum kept in variables of its own, a whole training loop,
and (a stretch) Adam.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch05`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch05.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

from collections.abc import Sequence

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.tensor import Tensor


def sgd_step(variables: Sequence[Variable], grads: Sequence[Tensor], learning_rate: float) -> None:
    """★ One step of gradient descent: ``v ← v - learning_rate · g`` for each variable.

    Change the variables in place (they are the model: whoever holds them sees the new
    values); do not create new ones.

    Args:
        variables: The variables to update.
        grads: One gradient per variable, of its shape.
        learning_rate: The step size.

    Hint 1:
        Change the variables, do not make new ones: a ``Variable`` has methods that update it in
        place.

    Hint 2:
        ``v.assign_sub(delta)`` subtracts ``delta`` from ``v``'s value, as one op on the seam.

    Hint 3:
        ``for v, g in zip(variables, grads): v.assign_sub(learning_rate * g)``.
    """
    raise NotImplementedError


def swap(a: Variable, b: Variable) -> None:
    """★ Exchange the values of two variables of the same shape and dtype.

    ``a.assign(b)`` followed by ``b.assign(a)`` does not work: by the second line ``a``
    already holds b's value. But a tensor read from a variable is a snapshot that never
    changes, whatever happens to the variable afterwards.

    Args:
        a: A variable.
        b: Another variable, of the same shape and dtype.

    Hint 1:
        A tensor read from a variable is a snapshot: it keeps its value when the variable
        changes.

    Hint 2:
        Read both values first (``read_value()``), then assign.
    """
    raise NotImplementedError


def momentum_step(
    variables: Sequence[Variable],
    velocities: Sequence[Variable],
    grads: Sequence[Tensor],
    learning_rate: float,
    momentum: float = 0.9,
) -> None:
    """★★ One step of gradient descent with momentum; the velocities are variables too.

    For each variable ``w`` with velocity ``v`` and gradient ``g``:

        v ← momentum · v + g;   w ← w - learning_rate · v   (using the new v)

    An optimizer's state (here the velocities) lives in variables, like the model itself:
    that is what lets it persist from one step to the next.

    Args:
        variables: The variables to update.
        velocities: One velocity variable per variable, of the same shape (start at zeros).
        grads: One gradient per variable.
        learning_rate: The step size.
        momentum: How much of the previous velocity to keep.

    Hint 1:
        The velocity outlives a step, so it lives in a variable and is updated in place, as the
        weight is.

    Hint 2:
        Update ``v`` first, then ``w`` with the new ``v``: a variable used in arithmetic is read
        at that moment.

    Hint 3:
        ``v.assign(momentum * v + g)``, then ``w.assign_sub(learning_rate * v)``.
    """
    raise NotImplementedError


def fit_quadratic(
    xs: Tensor, ys: Tensor, steps: int, learning_rate: float
) -> tuple[float, float, float]:
    """★★ Fit ``y ≈ a·x² + b·x + c`` by gradient descent on the mean squared error.

    Start from a = b = c = 0, and do ``steps`` steps: each computes the loss

        L = mean((a·x² + b·x + c - y)²)

    under a GradientTape, asks it for dL/da, dL/db and dL/dc, and moves each variable
    against its gradient by ``learning_rate`` times it.

    Args:
        xs: A float32 tensor of inputs, shape (n,).
        ys: A float32 tensor of targets, shape (n,).
        steps: How many steps to take.
        learning_rate: The step size.

    Returns:
        The fitted ``(a, b, c)`` as Python floats.

    Hint 1:
        Three variables, one new tape per step, and your ``sgd_step``.

    Hint 2:
        Under the tape compute the loss with ``ef.reduce_mean`` and ``ef.square``, then ask the
        tape for the gradients of the loss by ``[a, b, c]``. A tape gives one gradient (unless
        persistent): open a new one each step.

    Hint 3:
        ``with GradientTape() as tape: loss = ef.reduce_mean(ef.square(a * xs * xs + b * xs + c
        - ys))``, then ``sgd_step([a, b, c], tape.gradient(loss, [a, b, c]), learning_rate)``;
        return ``float`` of each.
    """
    raise NotImplementedError


class Adam:
    """★★★ Stretch: the Adam optimizer, its state kept in variables of its own.

    Adam keeps, per variable ``w``, a running mean ``m`` of the gradients and one ``v`` of
    their squares, and counts its steps ``t`` (from 1). For a gradient ``g``:

        m ← β₁·m + (1 − β₁)·g;   v ← β₂·v + (1 − β₂)·g²
        m̂ = m / (1 − β₁ᵗ);       v̂ = v / (1 − β₂ᵗ)
        w ← w − learning_rate · m̂ / (√v̂ + ε)

    Open-ended: keep the state as you like (``m`` and ``v`` in variables made on the first
    step, as momentum's velocities were, is the chapter's way). The tests call ``apply`` on
    hidden gradients, with two optimizers at once, and compare every variable after every
    step with the formulas above.
    """

    def __init__(
        self,
        learning_rate: float = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-7,
    ) -> None:
        """Keep the hyperparameters; no state until the first step."""
        self.learning_rate, self.beta1, self.beta2 = learning_rate, beta1, beta2
        self.epsilon = epsilon
        self.slots: dict[Variable, tuple[Variable, Variable]] = {}  # yours to use, or not
        self.steps = 0

    def apply(self, variables: Sequence[Variable], grads: Sequence[Tensor]) -> None:
        """One Adam step for each variable and its gradient, in place.

        Args:
            variables: The variables to update (the same ones at every step).
            grads: One gradient per variable.

        Hint 1:
            ``m`` and ``v`` are made once per variable (zeros of its shape and dtype) and
            updated in place at every step, as ``momentum_step``'s velocities were. ``t``
            counts the calls of ``apply``.

        Hint 2:
            ``v.assign(beta2 * v + (1 - beta2) * g * g)``; the bias corrections are plain
            Python numbers, ``1 - beta1 ** t``; ``ef.sqrt`` for the root.
        """
        raise NotImplementedError
