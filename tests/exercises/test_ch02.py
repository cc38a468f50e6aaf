"""Chapter 2 exercises: eager execution (`exercises/ch02.py`)."""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.tensor.dtypes import FLOATS
from eagerflow.tensor.execution import active_recorders, execute, recording
from eagerflow.tensor.registry import OPS, register_op
from eagerflow.tensor.rules import same_dtype, same_shape_rule

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


def numpy_power_iteration(a, tol):
    """The exercise's loop in NumPy: (λ, steps)."""
    v = np.ones((a.shape[0], 1)) / a.shape[0] ** 0.5
    steps = 0
    while True:
        w = a @ v
        lam = np.sqrt(np.sum(w * w))
        new = w / lam
        steps += 1
        change = np.max(np.abs(new - v))
        v = new
        if change < tol:
            return float(lam), steps


def symmetric(rng, n, ratio):
    """A symmetric (n, n) matrix with eigenvalues 3 > 3·ratio ≥ the others' sizes."""
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    rest = rng.uniform(-1, 1, n - 1) * 3 * ratio
    return (q * np.concatenate([[3.0], rest])) @ q.T


def check_power_iteration(chapter, a, tol, what):
    spy = Spy()
    with recording(spy):
        got = chapter.power_iteration(ef.constant(a), tol)
    assert isinstance(got, tuple) and len(got) == 2, f"{what}: expected (λ, steps), got {got!r}"
    lam, steps = got
    expected_lam, expected_steps = numpy_power_iteration(a, tol)
    assert isinstance(steps, int) and isinstance(lam, float), (
        f"{what}: expected a Python float and int, got {got!r}"
    )
    assert abs(steps - expected_steps) <= 1, (
        f"{what}: expected about {expected_steps} steps (stop after the first step whose change "
        f"is below tol={tol}), got {steps}"
    )
    assert lam == pytest.approx(expected_lam, rel=1e-6), f"{what}: expected λ ≈ {expected_lam}"
    matmuls = spy.names.count("MatMul")
    assert matmuls == steps, (
        f"{what}: {steps} steps, but {matmuls} MatMul ops ran through the seam: one a @ v per "
        "step, with eagerflow ops"
    )


def test_power_iteration(chapter):
    a = np.array([[2.0, 1.0], [1.0, 2.0]])  # eigenvalues 3 and 1
    check_power_iteration(chapter, a, 1e-6, "[[2, 1], [1, 2]]")
    lam, _ = chapter.power_iteration(ef.constant(a), 1e-10)
    assert lam == pytest.approx(3.0, rel=1e-9), f"the largest eigenvalue is 3, got {lam}"


def test_power_iteration_stops_when_converged_on_hidden_matrices(chapter):
    rng = np.random.default_rng(231)
    seen = set()
    for i, ratio in enumerate([0.2, 0.5, 0.8, 0.9, 0.6]):
        a = symmetric(rng, int(rng.integers(2, 6)), ratio)
        tol = float(10.0 ** -rng.integers(4, 9))
        check_power_iteration(chapter, a, tol, f"hidden matrix {i} (tol {tol:g})")
        seen.add(numpy_power_iteration(a, tol)[1])
    assert len(seen) >= 3  # the number of steps really depends on the matrix


# --- stretch: a profiler --------------------------------------------------------------------------
KERNEL_CALLS = Counter()  # how many times the slow kernel really ran


def _sleepy_identity(x, seconds):  # type: ignore[no-untyped-def]
    """x, after sleeping ``seconds``: a kernel whose time the tests know."""
    KERNEL_CALLS["SleepyIdentity"] += 1
    time.sleep(seconds)
    return x.copy()


if "SleepyIdentity" not in OPS:
    register_op("SleepyIdentity", _sleepy_identity, shape=same_shape_rule, dtype=same_dtype(FLOATS))


def sleepy(x, seconds):  # type: ignore[no-untyped-def]
    return execute("SleepyIdentity", (x,), {"seconds": seconds})[0]


# The Python between ops pauses at least PAUSE; a kernel's time may exceed its sleep by up
# to SLACK on a busy machine, per op. SLACK < PAUSE, so a profile that counts pauses is caught, and
# a slow moment of the machine is not taken for one (no test here bets on a quiet machine).
PAUSE, SLACK = 0.04, 0.015


def hidden_profiled_program(rng):  # type: ignore[no-untyped-def]
    """A program of slow and fast ops with slow Python in between, and its kernels' times."""
    steps = [
        ("sleepy" if rng.random() < 0.5 else str(rng.choice(["tanh", "square"])),
         float(rng.uniform(0.004, 0.012)), float(rng.uniform(PAUSE, 1.5 * PAUSE)))
        for _ in range(4)
    ] + [("sleepy", float(rng.uniform(0.004, 0.012)), PAUSE)]  # fmt: skip

    def program(x):  # type: ignore[no-untyped-def]
        for kind, seconds, pause in steps:
            x = sleepy(x, seconds) if kind == "sleepy" else getattr(ef, kind)(x)
            time.sleep(pause)  # Python between ops: no kernel's time
        return x * 0.5

    slept = [s for kind, s, _ in steps if kind == "sleepy"]
    return program, slept


def test_profile_ops_stretch_times_kernels_on_hidden_programs(chapter):
    rng = np.random.default_rng(2202)
    for i in range(3):
        program, slept = hidden_profiled_program(rng)
        x = ef.constant(rng.uniform(-1, 1, (3, 2)))
        spy = Spy()
        KERNEL_CALLS.clear()
        with recording(spy):
            got = chapter.profile_ops(program, x)
        ran = KERNEL_CALLS["SleepyIdentity"]
        assert isinstance(got, tuple) and len(got) == 2, f"expected (result, profile), got {got!r}"
        result, profile = got
        assert isinstance(result, ef.Tensor), f"the result should be fn's tensor, got {result!r}"
        np.testing.assert_allclose(result.numpy(), program_without_sleeps(program, x),
                                   err_msg=f"hidden program {i}: fn's result")  # fmt: skip
        assert ran == len(slept), (
            f"hidden program {i}: the slow kernel ran {ran} times for "
            f"{len(slept)} ops: run each kernel once"
        )
        counts = {name: calls for name, (calls, _) in profile.items()}
        seam = dict(Counter(spy.names))
        assert counts == seam, f"hidden program {i}: calls per op {counts}, the seam ran {seam}"
        seconds = profile["SleepyIdentity"][1]
        assert sum(slept) <= seconds <= sum(slept) + SLACK * len(slept), (
            f"hidden program {i}: SleepyIdentity's kernels took {sum(slept):.4f} s in all, the "
            f"profile says {seconds:.4f} s (time the kernel, not the time between ops)"
        )
        fast_ops = [(calls, s) for name, (calls, s) in profile.items() if name != "SleepyIdentity"]
        fast = sum(s for _, s in fast_ops)
        assert fast < SLACK * max(1, sum(calls for calls, _ in fast_ops)), (
            f"hidden program {i}: the fast ops' kernels took {fast:.4f} s by the profile; the "
            "Python between ops is no op's time"
        )


def program_without_sleeps(program, x):  # type: ignore[no-untyped-def]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "sleep", lambda seconds: None)
        return program(x).numpy()
