"""Chapter 7 exercises: control flow."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape
from eagerflow.graph import Graph, Session, SymbolicTensor, gradients, placeholder
from eagerflow.tensor import Tensor

pytestmark = pytest.mark.ch07


def op_types(graph: Graph) -> list[str]:
    return [o.type for o in graph.get_operations()]


def python_collatz(n: int) -> int:
    steps = 0
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


# --- safe_reciprocal ------------------------------------------------------------------------------
def reciprocal_and_slope(v):
    return (0.0, 0.0) if v == 0 else (1 / v, -1 / v**2)


def check_safe_reciprocal_eagerly(chapter, points):
    for v in points:
        x = ef.constant(v)
        with GradientTape() as tape:
            tape.watch(x)
            y = chapter.safe_reciprocal(x)
        d = tape.gradient(y, x)
        d = 0.0 if d is None else float(d)  # at 0 the zero branch does not depend on x
        e, s = reciprocal_and_slope(v)
        assert isinstance(y, Tensor) and float(y) == pytest.approx(e, rel=1e-6), (
            f"safe_reciprocal({v}) eagerly: expected {e}, got {y!r}"
        )
        assert d == pytest.approx(s, rel=1e-5), (
            f"tape: d safe_reciprocal({v})/dx: expected {s}, got {d} (at 0, a gradient of nan "
            "means both branches were computed: use cond, not ef.where)"
        )


def check_safe_reciprocal_in_a_graph(chapter, points):
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (), name="x")
        y = chapter.safe_reciprocal(x)
        (dy,) = gradients(y, [x], unconnected_gradients="zero")
    types = op_types(g)
    assert "If" in types, f"expected cond to add an If node; the graph has {types}"
    assert "Select" not in types and "SelectV2" not in types, "write it with cond, not ef.where"
    with Session(g) as session:
        for v in points:
            e, s = reciprocal_and_slope(v)
            got_y, got_d = session.run([y, dy], {x: v})
            assert got_y == pytest.approx(e, rel=1e-5), f"graph: safe_reciprocal({v}): got {got_y}"
            assert got_d == pytest.approx(s, rel=1e-4), (
                f"graph: d safe_reciprocal({v})/dx: expected {s}, got {got_d}"
            )


def test_safe_reciprocal_eagerly(chapter):
    check_safe_reciprocal_eagerly(chapter, [-2.0, 0.0, 0.5, 4.0])


def test_safe_reciprocal_builds_an_if_node_with_a_finite_gradient_at_0(chapter):
    check_safe_reciprocal_in_a_graph(chapter, [-2.0, 0.0, 0.5, 4.0])


# --- huber ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("delta", [1.0, 2.0])
def test_huber_values_and_gradients_both_ways(chapter, delta):
    points = [-3.0, -1.5, -0.5, 0.0, 0.25, 1.5, 4.0]
    expected = [0.5 * v * v if abs(v) <= delta else delta * (abs(v) - 0.5 * delta) for v in points]
    slopes = [v if abs(v) <= delta else float(np.sign(v)) * delta for v in points]

    for v, e, s in zip(points, expected, slopes, strict=True):
        x = ef.constant(v)
        with GradientTape() as tape:
            tape.watch(x)
            y = chapter.huber(x, delta)
        assert float(y) == pytest.approx(e), f"huber({v}, {delta}) eagerly: expected {e}, got {y}"
        d = float(tape.gradient(y, x))
        assert d == pytest.approx(s), f"tape: d huber({v}, {delta})/dx: expected {s}, got {d}"

    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (), name="x")
        y = chapter.huber(x, delta)
        (dy,) = gradients(y, [x])
    assert "If" in op_types(g), f"expected an If node; the graph has {op_types(g)}"
    with Session(g) as session:
        for v, e, s in zip(points, expected, slopes, strict=True):
            got_y, got_d = session.run([y, dy], {x: v})
            assert got_y == pytest.approx(e), (
                f"graph: huber({v}, {delta}): expected {e}, got {got_y}"
            )
            assert got_d == pytest.approx(s), f"graph: d huber({v})/dx: expected {s}, got {got_d}"


# --- collatz_steps --------------------------------------------------------------------------------
def test_collatz_steps_eagerly(chapter):
    for n in (1, 6, 7, 27):
        got = chapter.collatz_steps(ef.constant(n, ef.int64))
        assert int(got) == python_collatz(n), (
            f"collatz_steps({n}): expected {python_collatz(n)}, got {got!r}"
        )


def test_collatz_steps_in_a_graph_loops_at_run_time(chapter):
    g = Graph()
    with g.as_default():
        n = placeholder(ef.int64, (), name="n")
        steps = chapter.collatz_steps(n)
    types = op_types(g)
    assert "While" in types, f"expected a While node; the graph has {types}"
    assert isinstance(steps, SymbolicTensor) and steps.dtype is ef.int64, (
        f"expected an int64 symbolic tensor, got {steps!r}"
    )
    with Session(g) as session:
        for value in (1, 2, 6, 27, 97):
            got = session.run(steps, {n: value})
            assert got == python_collatz(value), (
                f"collatz_steps({value}) in a Session: expected {python_collatz(value)}, got {got}"
            )


# --- newton_sqrt --------------------------------------------------------------------------------
def python_newton(a, tol, max_steps):
    g, n = a, 0
    while abs(g * g - a) > tol and n < max_steps:
        g, n = (g + a / g) / 2.0, n + 1
    return g, n


def check_newton(got, a, tol, max_steps, where):
    g, n = python_newton(a, tol, max_steps)
    assert isinstance(got, tuple | list) and len(got) == 2, (
        f"{where}: expected (g, steps), got {got!r}"
    )
    got_g, got_n = (np.asarray(v) for v in got)
    assert int(got_n) == n, (
        f"{where}: newton_sqrt({a}, tol={tol}, max_steps={max_steps}) should run {n} steps "
        f"(it stops when |g·g − a| <= tol or after max_steps steps), ran {int(got_n)}"
    )
    assert float(got_g) == pytest.approx(g, rel=1e-12), (
        f"{where}: newton_sqrt({a}, tol={tol}, max_steps={max_steps}): expected g = {g}, "
        f"got {float(got_g)}"
    )


NEWTON = [(2.0, 1e-12, 50), (2.0, 1e-12, 2), (1.0, 1e-12, 50), (100.0, 1e-9, 0), (0.25, 1e-6, 3)]


def test_newton_sqrt_eagerly(chapter):
    for a, tol, max_steps in NEWTON:
        got = chapter.newton_sqrt(ef.constant(a, ef.float64), tol, max_steps)
        check_newton(got, a, tol, max_steps, "eagerly")
        assert got[1].dtype is ef.int32, f"the step count should be int32, got {got[1]!r}"


def build_newton(chapter, tol, max_steps):
    g = Graph()
    with g.as_default():
        a = placeholder(ef.float64, (), name="a")
        try:
            out = chapter.newton_sqrt(a, tol, max_steps)
        except TypeError as e:
            pytest.fail(
                f"building newton_sqrt on a placeholder failed ({e}): write the loop with "
                "while_loop, and its condition with ef.logical_and"
            )
    types = op_types(g)
    assert "While" in types, f"expected a While node; the graph has {types}"
    return g, a, out


def test_newton_sqrt_in_a_graph_loops_at_run_time(chapter):
    for max_steps in (50, 2):
        g, a, out = build_newton(chapter, 1e-12, max_steps)
        with Session(g) as session:
            for value in (2.0, 1.0, 9.0, 1e4):
                got = session.run(list(out), {a: value})
                check_newton(got, value, 1e-12, max_steps, "in a Session")


def test_safe_reciprocal_and_huber_on_hidden_points(chapter):
    rng = np.random.default_rng(707)
    points = [0.0, *np.round(rng.uniform(-5, 5, 7), 3).tolist()]
    check_safe_reciprocal_eagerly(chapter, points)
    check_safe_reciprocal_in_a_graph(chapter, points)
    delta = round(float(rng.uniform(0.3, 3.0)), 2)
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (), name="x")
        h = chapter.huber(x, delta)
        (dh,) = gradients(h, [x])
    with Session(g) as session:
        for v in points:
            e = 0.5 * v * v if abs(v) <= delta else delta * (abs(v) - 0.5 * delta)
            s = v if abs(v) <= delta else float(np.sign(v)) * delta
            got_h, got_dh = session.run([h, dh], {x: v})
            assert got_h == pytest.approx(e, rel=1e-5), (
                f"huber({v}, {delta}): expected {e}, got {got_h}"
            )
            assert got_dh == pytest.approx(s, rel=1e-5), (
                f"d huber({v}, {delta})/dx: expected {s}, got {got_dh}"
            )


def test_collatz_steps_and_newton_sqrt_on_hidden_numbers(chapter):
    rng = np.random.default_rng(708)
    g = Graph()
    with g.as_default():
        n = placeholder(ef.int64, (), name="n")
        steps = chapter.collatz_steps(n)
    with Session(g) as session:
        for value in rng.integers(3, 3000, 4).tolist():
            got = session.run(steps, {n: value})
            assert got == python_collatz(value), (
                f"collatz_steps({value}): expected {python_collatz(value)}, got {got}"
            )
    for _ in range(3):
        tol = float(10.0 ** -rng.integers(3, 10))
        max_steps = int(rng.integers(1, 8))
        graph, a, out = build_newton(chapter, tol, max_steps)
        with Session(graph) as session:
            for value in np.round(rng.uniform(0.1, 5000, 4), 3).tolist():
                got = session.run(list(out), {a: value})
                check_newton(got, value, tol, max_steps, "hidden, in a Session")
                eager = chapter.newton_sqrt(ef.constant(value, ef.float64), tol, max_steps)
                check_newton(eager, value, tol, max_steps, "hidden, eagerly")
