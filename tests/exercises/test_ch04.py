"""Chapter 4 exercises: forward mode (`exercises/ch04.py`)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from ready_made import refusing
from test_ch03 import refuse_tapes

import eagerflow.tensor as ef
from eagerflow.autodiff import (
    ForwardAccumulator,
    GradientTape,
    forward_jacobian,
)
from eagerflow.autodiff import forward as forward_module
from eagerflow.tensor.execution import active_recorders

pytestmark = pytest.mark.ch04


# --- forward mode: jacobian_by_columns, hessian_vector_product ------------------------------------
def recorders_now():
    """Which recorders hear ops right now, oldest first: "forward" or "tape" for each."""
    kinds = {ForwardAccumulator: "forward", GradientTape: "tape"}
    return [name for r in active_recorders() for cls, name in kinds.items() if isinstance(r, cls)]


def inside_forward_jacobian():
    """Whether the library's ``forward_jacobian`` is running, somewhere up the stack."""
    frame = sys._getframe()
    while frame is not None:
        if frame.f_code is forward_jacobian.__code__:
            return True
        frame = frame.f_back
    return False


def watched(f, calls):
    """``f``, noting for each call which recorders heard it (and whether the library's
    ``forward_jacobian`` called it)."""

    def spy(t):
        calls.append((recorders_now(), inside_forward_jacobian()))
        return f(t)

    return spy


def tall_function(rng, m, n):
    """A hidden f from n inputs to m outputs, tall (m > n), and its Jacobian in NumPy."""
    a, b = ef.constant(rng.uniform(-1, 1, (m, n))), ef.constant(rng.uniform(-1, 1, (m, n)))
    c = float(rng.uniform(0.5, 2.0))

    def f(t):
        column = ef.reshape(t, (-1, 1))
        first = ef.tanh(ef.reshape(a @ column, (-1,)))
        return first * (c + ef.reduce_sum(t * t)) + 0.1 * ef.exp(ef.reshape(b @ column, (-1,)))

    def jacobian(x):
        z, s = a.numpy() @ x, c + np.sum(x * x)
        first = (1 - np.tanh(z) ** 2)[:, None] * a.numpy() * s + np.outer(np.tanh(z), 2 * x)
        return first + 0.1 * np.exp(b.numpy() @ x)[:, None] * b.numpy()

    return f, jacobian


def check_columns(chapter, f, x, expected, what):
    calls = []
    got = chapter.jacobian_by_columns(watched(f, calls), ef.constant(x))
    m, n = expected.shape
    assert not any(library for _, library in calls), (
        "jacobian_by_columns called forward_jacobian: build the columns yourself"
    )
    assert len(calls) == n, (
        f"{what}: f from {n} inputs to {m} outputs ran {len(calls)} times: forward mode takes "
        f"one pass per input, {n} here (reverse mode would take one per output, {m})"
    )
    for recorders, _ in calls:
        assert "forward" in recorders and "tape" not in recorders, (
            f"{what}: f ran with the recorders {recorders or 'none'}: run each pass under a "
            "ForwardAccumulator, and no GradientTape (forward mode, not reverse)"
        )
    assert got is not None and tuple(got.shape) == (m, n), (
        f"{what}: expected a ({m}, {n}) Jacobian, one column per input; got {got!r}"
    )
    np.testing.assert_allclose(
        got.numpy(), expected, rtol=1e-10, atol=1e-12, err_msg=f"{what}: the Jacobian"
    )


def test_jacobian_by_columns_of_a_curve(chapter):
    ts = np.linspace(-1.0, 1.0, 20)

    def curve(p):  # 2 parameters -> 20 points
        return ef.tanh(p[0] * ef.constant(ts) + p[1])

    p = np.array([2.0, 0.5])
    slope = 1 - np.tanh(p[0] * ts + p[1]) ** 2
    check_columns(chapter, curve, p, np.stack([slope * ts, slope], axis=1), "tanh(a·t + b)")


def test_jacobian_by_columns_on_hidden_tall_functions(chapter):
    rng = np.random.default_rng(343)
    for m, n in [(30, 2), (50, 3), (9, 1), (12, 4)]:
        f, jacobian = tall_function(rng, m, n)
        x = rng.uniform(-1, 1, n)
        check_columns(chapter, f, x, jacobian(x), f"a hidden ({m}, {n}) function")


def scalar_function(rng, n):
    """A hidden scalar f of n inputs, and its Hessian in NumPy."""
    w, a, b = (rng.uniform(-1, 1, n) for _ in range(3))
    c = float(rng.uniform(0.5, 2.0))

    def f(t):
        cubes = ef.reduce_sum(ef.constant(w) * t * t * t)
        along_a = ef.reduce_sum(ef.constant(a) * t)
        return cubes + c * along_a * along_a + ef.exp(ef.reduce_sum(ef.constant(b) * t))

    def hessian(x):
        return np.diag(6 * w * x) + 2 * c * np.outer(a, a) + np.exp(b @ x) * np.outer(b, b)

    return f, hessian


def check_hvp(chapter, monkeypatch, f, x, v, expected, what):
    calls = []
    builds = "H·v without the Hessian (no Hessian is built)"
    with refusing("hessian_vector_product", builds, (GradientTape, "jacobian")):
        got = chapter.hessian_vector_product(watched(f, calls), ef.constant(x), ef.constant(v))
    assert len(calls) == 1, (
        f"{what}: hessian_vector_product ran f {len(calls)} times: one run, under both "
        "recorders (finite differences of gradients are not the exercise)"
    )
    recorders, _ = calls[0]
    assert "forward" in recorders and "tape" in recorders, (
        f"{what}: f ran with the recorders {recorders or 'none'}: a GradientTape inside a "
        "ForwardAccumulator"
    )
    assert recorders.index("forward") < recorders.index("tape"), (
        f"{what}: f ran with the recorders {recorders}, oldest first: the tape is outside the "
        "accumulator (reverse-over-forward); the exercise is forward-over-reverse, the "
        "accumulator outside"
    )
    assert got is not None and tuple(got.shape) == x.shape, (
        f"{what}: expected H·v of shape {x.shape}, got {got!r}"
    )
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10, atol=1e-12, err_msg=what)


def test_hessian_vector_product_of_a_sum_of_cubes(chapter, monkeypatch):
    x, v = np.array([1.0, -2.0, 0.5]), np.array([1.0, 1.0, -2.0])
    check_hvp(
        chapter, monkeypatch, lambda t: ef.reduce_sum(t * t * t), x, v, 6 * x * v,
        "sum(x³), whose Hessian is diag(6x)",
    )  # fmt: skip


def test_hessian_vector_product_on_hidden_functions(chapter, monkeypatch):
    rng = np.random.default_rng(353)
    for n in (1, 3, 6):
        f, hessian = scalar_function(rng, n)
        x, v = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        check_hvp(chapter, monkeypatch, f, x, v, hessian(x) @ v, f"a hidden f of {n} inputs")


# --- jvp (stretch) --------------------------------------------------------------------------------
JVP_UNARY = [ef.tanh, ef.exp, ef.square, lambda t: -t, lambda t: ef.log(1.0 + t * t)]
JVP_BINARY = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - b,
              lambda a, b: a / (2.0 + b * b)]  # fmt: skip


def jvp_program(rng):
    """A random program of the ops the exercise names, with fan-out and constants."""
    steps = []
    for i in range(int(rng.integers(4, 10))):
        if rng.random() < 0.4:
            steps.append((JVP_UNARY[rng.integers(len(JVP_UNARY))], (int(rng.integers(0, i + 1)),)))
        else:
            picks = (int(rng.integers(0, i + 1)), int(rng.integers(0, i + 1)))
            steps.append((JVP_BINARY[rng.integers(len(JVP_BINARY))], picks))
    scale = float(rng.uniform(0.5, 2.0))

    def program(t):
        values = [t]
        for fn, picks in steps:
            values.append(ef.tanh(fn(*(values[p] for p in picks))))  # tanh keeps values small
        return values[-1] * scale + values[len(values) // 2]

    return program


def test_jvp_stretch_matches_the_jacobian_on_hidden_programs(chapter, monkeypatch):
    rng = np.random.default_rng(393)
    for i in range(6):
        program = jvp_program(rng)
        x = ef.constant(rng.uniform(-1, 1, 3))
        v = ef.constant(rng.uniform(-1, 1, 3))
        with GradientTape() as tape:
            tape.watch(x)
            y = program(x)
        expected = tape.jacobian(y, x).numpy() @ v.numpy()
        calls = []

        def f(t, program=program, calls=calls):
            calls.append(t)
            return program(t)

        ready_made = [(ForwardAccumulator, "__init__"), (forward_module, "forward_jacobian")]
        with monkeypatch.context() as patch, refusing("jvp", "forward mode", *ready_made):
            refuse_tapes(patch, "jvp", "carry tangents forward instead")
            patch.setattr(GradientTape, "jacobian", GradientTape.gradient)  # refused too
            got = chapter.jvp(f, x, v)
        assert isinstance(got, tuple) and len(got) == 2, f"expected (y, dy), got {got!r}"
        assert len(calls) == 1, (
            f"jvp called f {len(calls)} times: run it once and carry the tangents along "
            "(finite differences are not forward mode)"
        )
        np.testing.assert_allclose(got[0].numpy(), y.numpy(), rtol=1e-12, err_msg="y = f(x)")
        np.testing.assert_allclose(
            got[1].numpy(), expected, rtol=1e-9, atol=1e-12,
            err_msg=f"hidden program {i}: J·v, the Jacobian times v",
        )  # fmt: skip
