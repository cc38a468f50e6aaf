"""Chapter 7 exercises — run `.venv/bin/pytest -m ch07`.

Control flow: Python ``if`` and ``while`` rewritten with ``cond`` and ``while_loop`` so the
same function runs eagerly and builds a graph, gradients through a branch, and a loop
whose variable changes shape.

Reference solutions: the same functions as `exercises/ch07.py`, solved.
"""

from __future__ import annotations

from typing import Any

import eagerflow.tensor as ef
from eagerflow.graph import cond, while_loop
from eagerflow.tensor import Tensor


def absolute(x: Tensor) -> Tensor:
    """★ |x| of a scalar, with ``cond`` instead of an ``if``, for both modes.

    In Python you would write ``return -x if x < 0 else x``. That works eagerly, but in a
    graph ``x < 0`` has no value yet, so the ``if`` cannot choose. Write it with ``cond``:
    eagerly it is a plain ``if``; in a graph it builds an ``If`` node, and the Session
    picks the branch at run time. (``ef.abs`` would do the job, but that is not the point.)

    Args:
        x: A scalar tensor (eager or symbolic).

    Returns:
        A scalar tensor: ``-x`` if ``x < 0``, else ``x``.

    Hint 1:
        In a graph, ``x < 0`` has no value while you build: the choice must become a node.

    Hint 2:
        ``cond(pred, true_fn, false_fn)`` takes each branch as a function of no arguments, such
        as ``lambda: -x``.
    """
    return cond(x < 0, lambda: -x, lambda: x)


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


def fibonacci(n: Tensor) -> Tensor:
    """★★★ The first ``n`` Fibonacci numbers 0, 1, 1, 2, 3, 5, … as an ``int64`` vector.

    Grow the vector in a ``while_loop``: start from an empty vector and append one number
    per iteration. Its shape changes from one iteration to the next, ``(0,)``, ``(1,)``,
    ``(2,)``…, which a graph must be told: ``while_loop`` checks that the body returns each
    loop variable with the shape it came in with, unless ``shape_invariants`` says which
    dimensions may change (``None``).

    Args:
        n: An ``int32`` scalar tensor, at least 0.

    Returns:
        An ``int64`` tensor of shape ``(n,)`` (``(None,)`` in a graph).

    Hint 1:
        Three loop variables: the next two numbers, and the vector so far, which grows by one
        number per iteration.

    Hint 2:
        A loop variable that changes shape must be declared: ``shape_invariants``, with ``None``
        for the dimension that grows. Loop while the vector is shorter than n.

    Hint 3:
        Start from ``0``, ``1`` (int64) and ``ef.zeros((0,), ef.int64)``; the body returns
        ``b``, ``a + b`` and ``ef.concat([seq, ef.reshape(a, (1,))], axis=0)``; the condition is
        ``ef.size(seq) < n``; ``shape_invariants=[(), (), (None,)]``.
    """

    def body(a: Any, b: Any, seq: Any) -> tuple[Any, Any, Any]:
        return b, a + b, ef.concat([seq, ef.reshape(a, (1,))], axis=0)

    start = [ef.constant(0, ef.int64), ef.constant(1, ef.int64), ef.zeros((0,), ef.int64)]
    _, _, seq = while_loop(
        lambda a, b, seq: ef.size(seq) < n, body, start, shape_invariants=[(), (), (None,)]
    )
    return seq
