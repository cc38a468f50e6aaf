"""Chapter 2 exercises — run `.venv/bin/pytest -m ch02`.

Eager execution: recorders on the execution seam (an op counter, a tracer, a NaN finder)
and a Python loop that stops on a tensor's value (power iteration); then (a stretch) a
profiler, which needs the seam's other interface, a context.

Reference solutions: the same functions as `exercises/ch02.py`, solved.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import EagerflowError, describe
from eagerflow.tensor.execution import context, recording, run_kernel
from eagerflow.tensor.registry import Attrs, OpDef


# solution-only
class _Counter:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def record(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, outputs: tuple[Tensor, ...]
    ) -> None:
        self.counts[op.name] += 1


class _Tracer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def record(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, outputs: tuple[Tensor, ...]
    ) -> None:
        ins = ", ".join(describe(t) for t in inputs)
        outs = ", ".join(describe(t) for t in outputs)
        self.lines.append(f"{op.name}({ins}) -> {outs}")


class _NanFinder:
    def __init__(self) -> None:
        self.first: str | None = None

    def record(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, outputs: tuple[Tensor, ...]
    ) -> None:
        if self.first is None and any(not np.all(np.isfinite(o.numpy())) for o in outputs):
            self.first = op.name


# end solution-only
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
    counter = _Counter()
    with recording(counter):
        fn(*args)
    return counter.counts


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
    tracer = _Tracer()
    with recording(tracer):
        fn(*args)
    return tracer.lines


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
    finder = _NanFinder()
    with recording(finder):
        fn(*args)
    return finder.first


def power_iteration(a: Tensor, tol: float = 1e-6) -> tuple[float, int]:
    """★ The largest eigenvalue of a matrix, by a loop that stops once it has converged.

    Start from the unit vector ``v = ones(n) / √n`` (float64). One step is

        w = a @ v;  λ = ‖w‖ (the Euclidean norm);  v_new = w / λ

    and the loop stops after the first step where ``max |v_new − v| < tol``. How many steps
    that takes depends on the matrix: the loop cannot know in advance, it must look at a
    value it has just computed. Do each step with tensor ops and decide with a plain Python
    ``while`` on the tensor's value: in eager mode it is already there.

    Args:
        a: A symmetric (n, n) float64 tensor whose largest eigenvalue is positive and larger
            than every other in absolute value.
        tol: When to stop.

    Returns:
        ``(λ, steps)``: the last ``λ`` as a Python float, and the number of steps run.

    Hint 1:
        In eager mode a tensor's value is already there: ``float(t)`` reads a scalar one, and
        a Python ``while`` can decide on it.

    Hint 2:
        ``ef.matmul`` wants matrices: keep ``v`` of shape (n, 1). ``ef.sqrt``,
        ``ef.reduce_sum``, ``ef.reduce_max`` and ``ef.abs`` give the norm and the change.

    Hint 3:
        ``v = ef.ones((n, 1), ef.float64) / n ** 0.5``; loop: ``w = ef.matmul(a, v)``,
        ``lam = ef.sqrt(ef.reduce_sum(w * w))``, ``new = w / lam``, ``steps += 1``,
        ``change = float(ef.reduce_max(ef.abs(new - v)))``, ``v = new``, and stop when
        ``change < tol``.
    """
    n = a.shape[0]
    v = ef.ones((n, 1), ef.float64) / n**0.5
    steps = 0
    while True:
        w = ef.matmul(a, v)
        lam = ef.sqrt(ef.reduce_sum(w * w))
        new = w / lam
        steps += 1
        change = float(ef.reduce_max(ef.abs(new - v)))
        v = new
        if change < tol:
            return float(lam), steps


class _Profiler:
    """A context that runs every op eagerly, timing its kernel."""

    assign_returns_variable = True

    def __init__(self) -> None:
        self.profile: dict[str, tuple[int, float]] = {}

    def run_op(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, name: str | None
    ) -> tuple[Tensor, ...]:
        try:
            dtypes = op.dtype_rule(tuple(t.dtype for t in inputs), attrs)
        except EagerflowError as e:
            raise e.at_op(op.name, inputs) from None
        values = [np.asarray(t) for t in inputs]
        start = time.perf_counter()
        result = run_kernel(op, values, attrs, inputs)
        seconds = time.perf_counter() - start
        calls, total = self.profile.get(op.name, (0, 0.0))
        self.profile[op.name] = (calls + 1, total + seconds)
        if op.multi_output:
            return tuple(map(Tensor, result, dtypes))
        return (Tensor(result, dtypes[0]),)

    def create_variable(self, variable: Any) -> Any:
        return None


def profile_ops(fn: Callable[..., Any], *args: Any) -> tuple[Any, dict[str, tuple[int, float]]]:
    """★★★ Stretch: a profiler. Run ``fn(*args)`` and time each op's kernel, by op name.

    A recorder hears an op only *after* it ran, so it cannot time the kernel: the time since
    the previous op also holds whatever Python ran in between. The seam has a second
    interface that sees an op *before* it runs: the *context* (``execute`` hands every op to
    the current context's ``run_op``, if there is one; chapter 6's graphs are such a context).
    A context of your own can run the kernel itself, eagerly, with a clock around it.

    Open-ended: the tests run functions whose ops (some with slow kernels of their own) are
    separated by slow Python code, and compare your times with the kernels' own; ``fn``'s
    result must be what it gives without the profiler (eager tensors).

    Args:
        fn: Any function running ops eagerly.
        *args: The arguments to call it with.

    Returns:
        ``(result, profile)``: what ``fn`` returned, and per op name ``(calls, seconds)``, the
            number of times the op ran and the total time its kernel took.

    Hint 1:
        A context is an object with ``run_op(op, inputs, attrs, name)`` (which returns a tuple
        of output tensors), ``create_variable(variable)`` (None: make it an eager variable)
        and ``assign_returns_variable = True``; install it with
        ``with eagerflow.tensor.execution.context(profiler):``.

    Hint 2:
        ``run_op`` does what ``execute`` does eagerly: ask ``op.dtype_rule`` for the output
        dtypes, call ``run_kernel(op, values, attrs, inputs)`` between two
        ``time.perf_counter()`` readings, and wrap the result: ``(Tensor(result, dtype),)``
        (one ``Tensor`` per output for an ``op.multi_output`` op).
    """
    profiler = _Profiler()
    with context(profiler):
        result = fn(*args)
    return result, profiler.profile
