"""Chapter 8 exercises — run `.venv/bin/pytest -m ch08`.

Control flow: Python ``if`` and ``while`` rewritten with ``cond`` and ``while_loop`` so the
same function runs eagerly and builds a graph, gradients through a branch (one that stays
finite where the other branch is not), a loop whose state is a pair, with a cap on its
number of steps, and (a stretch) a loop that runs a number of times decided at run time,
with its gradient through every iteration.

Reference solutions: the same functions as `exercises/ch08.py`, solved.
"""

from __future__ import annotations

from typing import Any

import eagerflow.tensor as ef
from eagerflow.graph import cond, while_loop
from eagerflow.tensor import Tensor


def safe_reciprocal(x: Tensor) -> Tensor:
    """★ ``1 / x``, and 0 at ``x = 0``, with ``cond``: a gradient that stays finite at 0.

    ``ef.where(x == 0, 0.0, 1 / x)`` has the right values, but it computes ``1 / x`` at 0
    too, and its gradient there is ``0 · (−1/x²) = 0 · −inf = nan``. ``cond`` runs (eagerly)
    or takes the gradient of (in a graph) only the branch it picks, so the gradient at 0
    is the zero branch's: 0. The tests differentiate your function with a GradientTape and
    with ``gradients()`` in a graph, at 0 too.

    Args:
        x: A float scalar tensor (eager or symbolic).

    Returns:
        A scalar tensor: ``1 / x``, or 0 where ``x`` is 0.

    Hint 1:
        In a graph, ``x == 0`` has no value while you build: the choice must become a node,
        and each branch a function of no arguments.

    Hint 2:
        ``cond(ef.equal(x, 0.0), lambda: ..., lambda: 1.0 / x)``; the zero branch can be
        ``ef.zeros_like(x)``.
    """
    return cond(ef.equal(x, 0.0), lambda: ef.zeros_like(x), lambda: 1.0 / x)


def huber(x: Tensor, delta: float = 1.0) -> Tensor:
    """★★ The Huber loss of a scalar: quadratic near zero, linear far from it.

    ``0.5·x²`` when ``|x| <= delta``, else ``delta·(|x| − 0.5·delta)``. The two pieces
    meet with the same value and slope at ``|x| = delta``, so its derivative is ``x``
    inside and ``±delta`` outside.

    Write it with one ``cond``. The test then differentiates your function both ways: with
    a GradientTape (eagerly, where ``cond`` is a Python ``if``) and with ``gradients()`` in
    a graph, where the gradient of the ``If`` node is another ``If``.

    Args:
        x: A float scalar tensor.
        delta: Where the quadratic piece ends.

    Returns:
        The loss, a scalar tensor.

    Hint 1:
        One ``cond``: its two branches are the two pieces of the formula.

    Hint 2:
        Compute the predicate outside the branches, ``ef.abs(x) <= delta``; each branch is a
        ``lambda`` of no arguments.

    Hint 3:
        ``cond(ef.abs(x) <= delta, lambda: 0.5 * x * x, lambda: delta * (ef.abs(x) - 0.5 *
        delta))``.
    """
    return cond(
        ef.abs(x) <= delta,
        lambda: 0.5 * x * x,
        lambda: delta * (ef.abs(x) - 0.5 * delta),
    )


def collatz_steps(n: Tensor) -> Tensor:
    """★★ How many Collatz steps take ``n`` to 1, with ``while_loop`` and ``cond``.

    One step maps k to ``k // 2`` when k is even and to ``3·k + 1`` when it is odd. In
    Python::

        steps = 0
        while n > 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            steps += 1

    Rewrite it so it works in both modes. The number of steps depends on the value of
    ``n``, which a graph does not know when it is built: so the loop cannot be unrolled by
    Python, it must be a ``While`` node that loops when the Session runs it.

    Args:
        n: An ``int64`` scalar tensor, at least 1.

    Returns:
        An ``int64`` scalar tensor: the number of steps (0 for n = 1).

    Hint 1:
        How often to loop depends on n's value, which a graph does not have when it is built:
        one ``while_loop``, whose body chooses with ``cond``.

    Hint 2:
        ``while_loop(cond_fn, body_fn, [k, steps])`` calls both functions with the loop
        variables; the body returns their new values, of the same dtypes (start ``steps`` as
        ``ef.constant(0, ef.int64)``). ``while_loop`` returns the final loop variables as a
        list.

    Hint 3:
        The body returns
        ``[cond(ef.equal(k % 2, 0), lambda: k // 2, lambda: 3 * k + 1), steps + 1]``; the
        condition is ``k > 1``.
    """

    def body(k: Any, steps: Any) -> tuple[Any, Any]:
        k = cond(ef.equal(k % 2, 0), lambda: k // 2, lambda: 3 * k + 1)
        return k, steps + 1

    _, steps = while_loop(lambda k, steps: k > 1, body, [n, ef.constant(0, ef.int64)])
    return steps


def newton_sqrt(a: Tensor, tol: float, max_steps: int) -> tuple[Tensor, Tensor]:
    """★★★ √a by Newton's method, in a ``while_loop`` whose state is a pair: stop on
    convergence, or after ``max_steps`` steps, whichever comes first.

    Start from ``g = a``; one step is ``g = (g + a / g) / 2``. Keep stepping while
    ``|g·g − a| > tol`` *and* fewer than ``max_steps`` steps have run. A loop that may
    not converge (a bad start, a ``tol`` below rounding) needs such a cap; ``while_loop``
    has none of its own, so the step count is a second loop variable, which the condition
    reads and the body increments. Return both.

    Args:
        a: A positive float64 scalar tensor (eager, or a placeholder in a graph).
        tol: The tolerance on ``|g·g − a|``.
        max_steps: The most steps to run (a Python int, at least 0).

    Returns:
        ``(g, steps)``: the last ``g``, and the number of steps run, an ``int32`` scalar
            tensor.

    Hint 1:
        Two loop variables, ``g`` and the step count (start it as ``ef.constant(0)``); the
        condition and the body take both, and the body returns both.

    Hint 2:
        Both halves of the condition are bool tensors: combine them with
        ``ef.logical_and`` (Python's ``and`` would ask for the value of a symbolic tensor).

    Hint 3:
        ``while_loop(lambda g, n: ef.logical_and(ef.abs(g * g - a) > tol, n < max_steps),
        lambda g, n: ((g + a / g) / 2.0, n + 1), [a, ef.constant(0)])``, then return the
        two results as a tuple.
    """
    g, steps = while_loop(
        lambda g, n: ef.logical_and(ef.abs(g * g - a) > tol, n < max_steps),
        lambda g, n: ((g + a / g) / 2.0, n + 1),
        [a, ef.constant(0)],
    )
    return g, steps


def power_by_squaring(x: Tensor, n: Tensor) -> Tensor:
    """★★★ Stretch: ``x ** n`` for an integer ``n`` known only when the graph runs, in about
    log₂|n| steps, and differentiable through the loop.

    The chapter's ``power(x, n)`` unrolled a Python loop: n multiplications, for an ``n``
    fixed when the graph is built. Here ``n`` is a tensor, a placeholder in a graph, so the
    loop must be a ``While`` node; and it should not take n steps either. *Exponentiation
    by squaring* takes one step per binary digit of n: x¹³ = x⁸·x⁴·x¹, since 13 is 1101 in
    binary, and x², x⁴, x⁸ are each the square of the one before. A negative ``n`` gives
    ``1 / x ** |n|``.

    The tests run your function eagerly and in a graph, on values of ``n`` they choose up
    to a thousand, and count the loop's iterations (at most one per binary digit of |n|,
    plus one). They differentiate it both ways, with a tape and with ``gradients()``, and
    expect n·xⁿ⁻¹ elementwise: the gradient goes back through every iteration that ran.
    ``ef.pow`` would not be a loop: the tests refuse it.

    Args:
        x: A float64 tensor, of any shape (eager, or a placeholder in a graph).
        n: An ``int32`` scalar tensor (eager, or a placeholder), any sign.

    Returns:
        ``x ** n`` elementwise, shaped like ``x``.

    Hint 1:
        Three loop variables: the result so far, the current power of x (x, then x², x⁴, …)
        and what is left of the exponent. Each iteration looks at the lowest binary digit of
        what is left, then drops it.

    Hint 2:
        Start from ``ef.ones_like(x)``, ``x`` and ``ef.abs(n)``, and loop while what is left
        is above 0. In the body, multiply the result by the power when the lowest digit is 1
        (``cond(ef.equal(k % 2, 1), ...)``), then square the power and halve what is left
        (``k // 2``).

    Hint 3:
        The body returns ``(cond(ef.equal(k % 2, 1), lambda: result * power, lambda:
        result), power * power, k // 2)``. After the loop, ``cond(n < 0, lambda: 1.0 /
        result, lambda: result)``.
    """

    def step(result: Any, power: Any, k: Any) -> tuple[Any, Any, Any]:
        result = cond(ef.equal(k % 2, 1), lambda: result * power, lambda: result)
        return result, power * power, k // 2

    result, _, _ = while_loop(lambda r, p, k: k > 0, step, [ef.ones_like(x), x, ef.abs(n)])
    return cond(n < 0, lambda: 1.0 / result, lambda: result)
