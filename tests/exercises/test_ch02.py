"""Chapter 2 exercises: eager execution (`exercises/ch02.py`)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.tensor.execution import active_recorders, recording

pytestmark = pytest.mark.ch02


class Spy:
    """A recorder for the tests themselves: the op names, in order."""

    def __init__(self):
        self.names = []

    def record(self, op, inputs, attrs, outputs):
        self.names.append(op.name)


def model(x, w, b):
    return ef.relu(x @ w + b)


def test_count_ops_counts_by_name(chapter):
    x, y = ef.ones((2, 3)), ef.ones((3, 2))
    got = chapter.count_ops(lambda a, b: a @ b + 1.0, x, y)
    expected = Counter({"MatMul": 1, "AddV2": 1})
    assert dict(got) == dict(expected), f"expected {dict(expected)}, got {dict(got)}"


def test_count_ops_sees_every_op(chapter):
    x, w, b = ef.ones((4, 3)), ef.ones((3, 2)), ef.zeros((2,))
    got = chapter.count_ops(lambda: [model(x, w, b) for _ in range(3)])
    expected = {"MatMul": 3, "AddV2": 3, "Relu": 3}
    assert dict(got) == expected, f"expected {expected}, got {dict(got)}"
    before = active_recorders()
    assert chapter.count_ops(ef.constant, 1.0) == Counter({"Const": 1})
    assert active_recorders() == before, (
        "count_ops left a recorder on the seam: use `with recording(...)` so it is removed"
    )


def test_count_ops_removes_its_recorder_when_fn_raises(chapter):
    def broken():
        ef.matmul(ef.ones((2, 3)), ef.ones((4, 5)))

    before = active_recorders()
    with pytest.raises(ef.ShapeError):
        chapter.count_ops(broken)
    assert active_recorders() == before, (
        "count_ops left its recorder on the seam after fn raised: `with recording(...)` "
        "removes it even then"
    )


STEPS = {  # name of the op each one runs: a function of one (3, 3) float32 tensor
    "MatMul": lambda t: t @ t,
    "AddV2": lambda t: t + 1.0,
    "Tanh": ef.tanh,
    "Relu": ef.relu,
    "Mul": lambda t: t * 0.5,
    "Square": ef.square,
}


def random_program(seed):
    rng = np.random.default_rng(seed)
    names = [list(STEPS)[int(i)] for i in rng.integers(0, len(STEPS), int(rng.integers(3, 12)))]

    def program(t):
        for name in names:
            t = STEPS[name](t)
        return t

    return program, names


def test_count_ops_on_hidden_programs(chapter):
    for seed in range(4):
        program, names = random_program(200 + seed)
        got = chapter.count_ops(program, ef.ones((3, 3)) * 0.1)
        assert dict(got) == dict(Counter(names)), (
            f"a hidden program running {names}: expected {dict(Counter(names))}, got {dict(got)}"
        )


def test_trace_ops(chapter):
    x, w, b = ef.ones((4, 3)), ef.ones((3, 2)), ef.zeros((2,))
    got = chapter.trace_ops(model, x, w, b)
    expected = [
        "MatMul(float32[4,3], float32[3,2]) -> float32[4,2]",
        "AddV2(float32[4,2], float32[2]) -> float32[4,2]",
        "Relu(float32[4,2]) -> float32[4,2]",
    ]
    assert got == expected, "trace_ops(model, ...):\nexpected\n  {}\ngot\n  {}".format(
        "\n  ".join(expected), "\n  ".join(map(str, got))
    )


def test_trace_ops_without_inputs_and_with_several_outputs(chapter):
    got = chapter.trace_ops(lambda: ef.split(ef.constant([1, 2, 3, 4], dtype=ef.int64), 2))
    expected = ["Const() -> int64[4]", "SplitV(int64[4]) -> int64[2], int64[2]"]
    assert got == expected, f"expected {expected}, got {got}"


def test_trace_ops_on_hidden_shapes(chapter):
    rng = np.random.default_rng(210)
    for _ in range(3):
        n, k, m = (int(v) for v in rng.integers(1, 9, 3))
        dtype = [ef.float32, ef.float64][int(rng.integers(2))]
        x, w, b = ef.ones((n, k), dtype), ef.ones((k, m), dtype), ef.zeros((m,), dtype)
        d = dtype.name
        expected = [
            f"MatMul({d}[{n},{k}], {d}[{k},{m}]) -> {d}[{n},{m}]",
            f"AddV2({d}[{n},{m}], {d}[{m}]) -> {d}[{n},{m}]",
            f"Relu({d}[{n},{m}]) -> {d}[{n},{m}]",
        ]
        got = chapter.trace_ops(model, x, w, b)
        assert got == expected, f"a hidden model: expected {expected}, got {got}"


def test_first_non_finite(chapter):
    x = ef.constant([0.5, 2.0])
    got = chapter.first_non_finite(lambda t: ef.log(t - 1.0) * 2.0, x)
    assert got == "Log", f"ln(0.5 - 1) is NaN, so the first op to output one is 'Log'; got {got!r}"
    got = chapter.first_non_finite(lambda t: ef.exp(t * 100.0) + 1.0, x)
    assert got == "Exp", f"exp(200) overflows to inf in float32: expected 'Exp', got {got!r}"
    got = chapter.first_non_finite(lambda t: ef.sqrt(t) + 1.0, x)
    assert got is None, f"every output of sqrt(x) + 1 is finite: expected None, got {got!r}"


def test_first_non_finite_ignores_values_computed_before(chapter):
    bad = ef.log(ef.constant([-1.0]))  # NaN, but made outside fn
    got = chapter.first_non_finite(lambda t: t + 1.0, ef.constant([1.0]))
    assert got is None, f"only ops run by fn count: expected None, got {got!r}"
    got = chapter.first_non_finite(lambda t: t + bad, ef.constant([1.0]))
    assert got == "AddV2", f"expected 'AddV2' (it outputs NaN), got {got!r}"


def test_first_non_finite_on_hidden_programs(chapter):
    for seed in range(4):
        program, names = random_program(220 + seed)
        at = int(np.random.default_rng(seed).integers(len(names)))

        def broken(t, program=program, at=at, names=names):
            for i, name in enumerate(names):
                t = STEPS[name](t)
                if i == at:
                    t = ef.sqrt(t - 1000.0)  # NaN: the first op to make one
            return t

        got = chapter.first_non_finite(broken, ef.ones((3, 3)) * 0.1)
        assert got == "Sqrt", (
            f"a hidden program with sqrt of a negative after {names[: at + 1]}: expected "
            f"'Sqrt', got {got!r}"
        )
        got = chapter.first_non_finite(program, ef.ones((3, 3)) * 0.1)
        assert got is None, f"the same program without the sqrt: expected None, got {got!r}"


@pytest.mark.parametrize(("n", "expected"), [(1, 0), (2, 1), (6, 8), (7, 16), (27, 111)])
def test_collatz_steps(chapter, n, expected):
    spy = Spy()
    with recording(spy):
        got = chapter.collatz_steps(ef.constant(n))
    assert got == expected, f"collatz_steps({n}): expected {expected}, got {got!r}"
    assert isinstance(got, int), f"return a Python int, got {type(got).__name__}"
    arithmetic = sum(name in ("FloorMod", "FloorDiv", "Mul", "AddV2") for name in spy.names)
    assert arithmetic >= expected, (
        f"collatz_steps({n}) took {expected} steps but ran only {arithmetic} arithmetic ops "
        "through the seam: do the arithmetic on the tensor (n % 2, n // 2, 3 * n + 1)"
    )


def python_collatz(n):
    steps = 0
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


def test_collatz_steps_on_hidden_numbers(chapter):
    for n in np.random.default_rng(230).integers(3, 5000, 5).tolist():
        got = chapter.collatz_steps(ef.constant(n))
        assert got == python_collatz(n), (
            f"collatz_steps({n}): expected {python_collatz(n)}, got {got!r}"
        )
