"""Chapter 2 exercises — run `.venv/bin/pytest -m ch02`.

Eager execution: recorders on the execution seam (an op counter, a tracer, a NaN finder)
and Python control flow deciding on tensor values.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch02`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch02.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import describe
from eagerflow.tensor.execution import recording
from eagerflow.tensor.registry import Attrs, OpDef


def count_ops(fn: Callable[..., Any], *args: Any) -> Counter[str]:
    """★ Run ``fn(*args)`` and count the ops it ran, by name.

    For tensors ``x`` of shape (2, 3) and ``y`` of shape (3, 2),
    ``count_ops(lambda a, b: a @ b + 1.0, x, y)`` is ``Counter({"MatMul": 1, "AddV2": 1})``.

    Args:
        fn: Any function; it may call ops directly or through operators.
        *args: The arguments to call it with.

    Returns:
        A ``collections.Counter`` from op name to how many times that op ran.

    Hint 1:
        The seam tells every active recorder about each op it runs. A recorder is any object
        with a ``record`` method.

    Hint 2:
        Write a small class whose ``record(op, inputs, attrs, outputs)`` counts ``op.name``, and
        call ``fn`` inside ``with recording(your_recorder):``: the recorder is removed
        afterwards, even if ``fn`` raises.

    Hint 3:
        A ``Counter`` in the recorder, ``counts[op.name] += 1`` in ``record``; return the
        counter after the ``with`` block.
    """
    raise NotImplementedError


def trace_ops(fn: Callable[..., Any], *args: Any) -> list[str]:
    """★★ Run ``fn(*args)`` and describe each op it ran, one line per op, in order.

    Each line reads like the start of an eagerflow error message, plus the outputs after an
    arrow: ``MatMul(float32[2,3], float32[3,4]) -> float32[2,4]``. Inputs and outputs are
    separated by ``", "``; an op without inputs (like ``Const``) shows ``Const() -> ...``.

    Args:
        fn: Any function running ops.
        *args: The arguments to call it with.

    Returns:
        One string per op.

    Hint 1:
        A recorder again, keeping one line per op.

    Hint 2:
        ``record`` is given the inputs and the outputs; ``describe(t)`` from
        ``eagerflow.tensor.errors`` formats one tensor as ``float32[2,3]``.

    Hint 3:
        ``f"{op.name}({', '.join(map(describe, inputs))}) -> {', '.join(map(describe, outputs))}"``
    """
    raise NotImplementedError


def first_non_finite(fn: Callable[..., Any], *args: Any) -> str | None:
    """★★ The name of the first op whose output held a NaN or an infinity, or None.

    A debugging tool in a few lines, possible because every op reports its outputs to the
    recorders as soon as it has run: ``first_non_finite(lambda x: ef.log(x - 1.0) * 2.0,
    ef.constant([0.5, 2.0]))`` is ``"Log"`` (ln of a negative number is NaN), even though the
    ``Mul`` after it also outputs a NaN.

    Args:
        fn: A function running ops.
        *args: The arguments to call it with.

    Returns:
        The op name, or None if every output of every op was finite.

    Hint 1:
        Every op reports its outputs to the recorders as soon as it has run: look at them there.

    Hint 2:
        Remember only the first op whose outputs are not all finite: the ops after it merely
        pass the NaN along.

    Hint 3:
        In ``record``: ``if self.first is None and not all(np.isfinite(t.numpy()).all() for t in
        outputs): self.first = op.name``.
    """
    raise NotImplementedError


def collatz_steps(n: Tensor) -> int:
    """★ How many Collatz steps take the integer tensor ``n`` down to 1.

    One step maps n to n / 2 when n is even and to 3n + 1 when it is odd; from 6 the path is
    6, 3, 10, 5, 16, 8, 4, 2, 1: 8 steps. Do the arithmetic with tensor ops (``%``, ``//``,
    ``*``, ``+`` on tensors) and decide with plain Python ``while`` and ``if`` on their
    values: in eager mode a comparison's result is already there to branch on.

    Args:
        n: A scalar int32 tensor, at least 1.

    Returns:
        The number of steps, as a Python int (0 for n = 1).

    Hint 1:
        In eager mode a comparison's result is already a value: Python's ``while`` and ``if``
        can decide on it.

    Hint 2:
        ``bool(t)`` reads a one-element bool tensor and ``int(t)`` an integer one. Keep ``n`` a
        tensor, so the arithmetic runs as ops.

    Hint 3:
        ``while int(n) != 1:`` then ``n = n // 2 if bool(n % 2 == 0) else 3 * n + 1``, counting
        the steps.
    """
    raise NotImplementedError
