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


# --- absolute -------------------------------------------------------------------------------------
def test_absolute_eagerly(chapter):
    for v in (-2.5, 0.0, 3.0):
        got = chapter.absolute(ef.constant(v))
        assert isinstance(got, Tensor), f"expected a tensor, got {got!r}"
        assert float(got) == abs(v), f"absolute({v}): expected {abs(v)}, got {got!r}"


def test_absolute_builds_an_if_node(chapter):
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (), name="x")
        y = chapter.absolute(x)
    assert isinstance(y, SymbolicTensor), f"in a graph expected a symbolic tensor, got {y!r}"
    types = op_types(g)
    assert "If" in types, f"expected cond to add an If node; the graph has {types}"
    assert "Abs" not in types, "write it with cond, not ef.abs"
    with Session(g) as session:
        for v in (-2.5, 0.0, 3.0):
            got = session.run(y, {x: v})
            assert got == abs(v), f"absolute({v}) in a Session: expected {abs(v)}, got {got}"


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


# --- fibonacci ------------------------------------------------------------------------------------
FIB = [0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89]


def test_fibonacci_eagerly(chapter):
    for n in (0, 1, 2, 12):
        got = chapter.fibonacci(ef.constant(n))
        assert got.dtype is ef.int64, f"expected int64 numbers, got {got!r}"
        assert got.numpy().tolist() == FIB[:n], f"fibonacci({n}): expected {FIB[:n]}, got {got!r}"


def test_fibonacci_in_a_graph(chapter):
    g = Graph()
    with g.as_default():
        n = placeholder(ef.int32, (), name="n")
        seq = chapter.fibonacci(n)
    assert "While" in op_types(g), f"expected a While node; the graph has {op_types(g)}"
    assert isinstance(seq, SymbolicTensor) and seq.shape == (None,), (
        f"expected a vector of unknown length, shape (None,), got {seq!r}"
    )
    with Session(g) as session:
        for value in (0, 1, 5, 12):
            got = session.run(seq, {n: value}).tolist()
            assert got == FIB[:value], f"fibonacci({value}): expected {FIB[:value]}, got {got}"


def test_absolute_and_huber_on_hidden_points(chapter):
    rng = np.random.default_rng(707)
    points = np.round(rng.uniform(-5, 5, 8), 3).tolist()
    delta = round(float(rng.uniform(0.3, 3.0)), 2)
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (), name="x")
        a = chapter.absolute(x)
        h = chapter.huber(x, delta)
        (dh,) = gradients(h, [x])
    with Session(g) as session:
        for v in points:
            e = 0.5 * v * v if abs(v) <= delta else delta * (abs(v) - 0.5 * delta)
            s = v if abs(v) <= delta else float(np.sign(v)) * delta
            got_a, got_h, got_dh = session.run([a, h, dh], {x: v})
            assert got_a == pytest.approx(abs(v)), f"absolute({v}): got {got_a}"
            assert got_h == pytest.approx(e, rel=1e-5), (
                f"huber({v}, {delta}): expected {e}, got {got_h}"
            )
            assert got_dh == pytest.approx(s, rel=1e-5), (
                f"d huber({v}, {delta})/dx: expected {s}, got {got_dh}"
            )


def test_collatz_steps_and_fibonacci_on_hidden_numbers(chapter):
    rng = np.random.default_rng(708)
    g = Graph()
    with g.as_default():
        n = placeholder(ef.int64, (), name="n")
        steps = chapter.collatz_steps(n)
        k = placeholder(ef.int32, (), name="k")
        seq = chapter.fibonacci(k)
    fib = [0, 1]
    while len(fib) < 60:
        fib.append(fib[-1] + fib[-2])
    with Session(g) as session:
        for value in rng.integers(3, 3000, 4).tolist():
            got = session.run(steps, {n: value})
            assert got == python_collatz(value), (
                f"collatz_steps({value}): expected {python_collatz(value)}, got {got}"
            )
        for value in rng.integers(13, 60, 3).tolist():
            got = session.run(seq, {k: value}).tolist()
            assert got == fib[:value], f"fibonacci({value}): expected {fib[:value]}, got {got}"
