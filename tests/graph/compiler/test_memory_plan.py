"""The memory plan: buffers and fused loops' scratch arrays allocated once, at compile time,
shared by values whose lifetimes do not overlap, never shared by two calls that run at once
(two threads, or a call inside a call), never aliased by what a call returns."""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.graph import function
from eagerflow.graph.compiler import numba_available
from eagerflow.graph.compiler.program import CompiledPlan, Program

needs_numba = pytest.mark.skipif(not numba_available(), reason="scratch arrays are numba's")


def reductions(x: ef.Tensor) -> list[ef.Tensor]:
    """A sum along the innermost axis (a scratch row), a max keeping axis 1 and a mean over
    axis 0 (scratch accumulators), and an elementwise value used outside the loop."""
    y = ef.abs(x * 2.0 - 1.0)
    return [ef.reduce_sum(y * y, axis=1), ef.reduce_max(y, axis=0, keepdims=True),
            ef.reduce_mean(y - x, axis=0), y]  # fmt: skip


def compiled_plan(f: Callable[..., Any], *inputs: np.ndarray) -> CompiledPlan:
    """The CompiledPlan behind ``f`` traced with ``jit_compile=True`` for ``inputs``."""
    concrete = function(f, jit_compile=True).get_concrete_function(*map(ef.constant, inputs))
    return concrete.compiled()


def interpreted(f: Callable[..., Any], *inputs: np.ndarray) -> list[np.ndarray]:
    return [t.numpy() for t in function(f)(*map(ef.constant, inputs))]


def arrays_in(program: Program) -> list[np.ndarray]:
    """Every array the program's function holds: its buffers, scratch and constants."""
    names = program.function.__globals__
    return [v for v in names.values() if isinstance(v, np.ndarray)]


def peak_bytes(run: Callable[[], object]) -> int:
    run()  # warm-up: compiles
    tracemalloc.start()
    start, _ = tracemalloc.get_traced_memory()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak - start


@needs_numba
def test_scratch_comes_from_the_plan_and_a_second_call_allocates_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EAGERFLOW_JIT_BACKEND", "numba")
    x = np.random.default_rng(0).standard_normal((4, 3000)).astype(np.float32)
    compiled = compiled_plan(reductions, x)
    peak = peak_bytes(lambda: compiled.run_arrays([x]))
    (program,) = compiled.programs.values()
    assert all("np.empty" not in s and "np.full" not in s for s in program.kernels.values())
    (name,) = program.scratch_of
    # the sum's elements, its 4 accumulators, the max's and the mean's accumulators, in one
    # array (output 0 is y, which needs no scratch)
    for part in ("row1 = scratch[", "acc1 = scratch[", "acc2 = scratch[", "acc3 = scratch["):
        assert part in program.kernels[name]
    row = 3000 * 8  # one scratch row, float64
    assert program.stats["scratch_bytes"] == row + 4 * 8 + 2 * row
    # what a call allocates: the fetched copies (3 * 4 + 2 * 3000 + 12000 float32), the
    # eager tensors around them, and no scratch (it would add 3 rows' worth)
    fetched = (3 * 4 + 2 * 3000 + 4 * 3000) * 4
    assert fetched <= peak < fetched + row, peak


@needs_numba
def test_loops_that_run_at_different_times_share_their_scratch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EAGERFLOW_JIT_BACKEND", "numba")

    def two_loops(x: ef.Tensor) -> list[ef.Tensor]:
        first = ef.reduce_sum(x * x)  # what reads this sum cannot join its loop: two loops
        return [ef.reduce_sum(ef.square(x * first))]

    x = np.linspace(-1, 1, 500, dtype=np.float32)
    compiled = compiled_plan(two_loops, x)
    (got,) = compiled.run_arrays([x])
    (program,) = compiled.programs.values()
    first, second = program.scratch_of.values()
    assert first == second  # one buffer for both loops' rows
    assert program.stats["scratch_bytes"] == 2 * 500 * 8  # two rows of 500 float64 ...
    assert program.stats["buffer_bytes"] == 500 * 8 + 2 * 4  # ... in one, and the 2 sums
    np.testing.assert_allclose(got, interpreted(two_loops, x)[0], rtol=1e-6)


def test_compiled_values_equal_interpreted_ones_call_after_call(backend: str) -> None:
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((5, 40)).astype(np.float32) for _ in range(3)]
    compiled = compiled_plan(reductions, xs[0])
    for x in xs:  # the same buffers each time: nothing left from the call before
        for got, expected in zip(compiled.run_arrays([x]), interpreted(reductions, x),
                                 strict=True):  # fmt: skip
            np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_what_a_call_returns_is_never_a_buffer_a_later_call_overwrites(backend: str) -> None:
    ones, twos = np.ones((5, 40), np.float32), np.full((5, 40), 2.0, np.float32)
    compiled = compiled_plan(reductions, ones)
    first = compiled.run_arrays([ones])
    kept = [np.copy(a) for a in first]
    compiled.run_arrays([twos])
    for a, copy in zip(first, kept, strict=True):
        np.testing.assert_array_equal(a, copy)
    (program,) = compiled.programs.values()
    held = arrays_in(program)
    assert held and program.stats["buffers"] > 0
    assert not any(np.shares_memory(a, b) for a in first for b in held)


def fetching_with(program: Program, during: Callable[[], object]) -> None:
    """Make ``program`` call ``during()`` once, as it starts copying out its results (its
    buffers written, not yet read), as if another call came in just then."""
    names = program.function.__globals__
    fetched = names["fetched"]
    pending = [during]

    def fetched_after_another_call(value: Any) -> Any:
        while pending:
            pending.pop()()
        return fetched(value)

    names["fetched"] = fetched_after_another_call


def test_a_call_inside_a_call_gets_buffers_of_its_own(backend: str) -> None:
    ones, twos = np.ones((5, 40), np.float32), np.full((5, 40), 2.0, np.float32)
    compiled = compiled_plan(reductions, ones)
    compiled.run_arrays([ones])
    (program,) = compiled.programs.values()
    inner: list[list[np.ndarray]] = []
    fetching_with(program, lambda: inner.append(compiled.run_arrays([twos])))
    outer = compiled.run_arrays([ones])
    for got, expected in zip(outer, interpreted(reductions, ones), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    for got, expected in zip(inner[0], interpreted(reductions, twos), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    assert len(compiled._idle[(ones.shape,)]) == 2  # the inner call's program stays pooled


def test_a_call_from_another_thread_while_one_runs_gets_buffers_of_its_own(
    backend: str,
) -> None:
    ones, twos = np.ones((5, 40), np.float32), np.full((5, 40), 2.0, np.float32)
    compiled = compiled_plan(reductions, ones)
    compiled.run_arrays([ones])
    (program,) = compiled.programs.values()
    inside, done = threading.Event(), threading.Event()

    def wait_for_the_other_thread() -> None:
        inside.set()
        assert done.wait(timeout=30)

    fetching_with(program, wait_for_the_other_thread)
    results: list[list[np.ndarray]] = []
    first = threading.Thread(target=lambda: results.append(compiled.run_arrays([ones])))
    first.start()
    assert inside.wait(timeout=30)  # the first thread is inside, its buffers written
    second = compiled.run_arrays([twos])
    done.set()
    first.join(timeout=30)
    for got, expected in zip(results[0], interpreted(reductions, ones), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
    for got, expected in zip(second, interpreted(reductions, twos), strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-6)
