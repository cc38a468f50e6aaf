"""Chapter 8 exercises: control flow."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape
from eagerflow.graph import Graph, Session, SymbolicTensor, gradients, placeholder
from eagerflow.graph.core.subgraphs import Subgraph
from eagerflow.tensor import Tensor
from eagerflow.tensor.execution import recording

pytestmark = pytest.mark.ch08


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


# --- power_by_squaring (stretch) ------------------------------------------------------------------
class OpCounter:
    """A recorder on the seam: counts the ops that run, by name."""

    def __init__(self) -> None:
        self.ops: Counter[str] = Counter()

    def record(self, op, inputs, attrs, outputs) -> None:
        self.ops[op.name] += 1


def digits(n: int) -> int:
    """How many binary digits |n| has: the iterations exponentiation by squaring needs."""
    return abs(n).bit_length()


def expected_power(x: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """xⁿ and its derivative n·xⁿ⁻¹, elementwise."""
    return x**n, (n * x ** (n - 1) if n else np.zeros_like(x))


def check_power(got, d_got, x, n, where) -> None:
    value, slope = expected_power(x, n)
    np.testing.assert_allclose(np.asarray(got), value, rtol=1e-9,
                               err_msg=f"{where}: power_by_squaring(x, {n}), x = {x}")  # fmt: skip
    np.testing.assert_allclose(
        np.asarray(d_got), slope, rtol=1e-9, atol=1e-300,
        err_msg=f"{where}: the gradient of power_by_squaring(x, {n}), {n}·x^{n - 1}, x = {x}",
    )  # fmt: skip


def power_eagerly(chapter, x: np.ndarray, n: int) -> None:
    xt = ef.constant(x)
    with recording(OpCounter()) as counter, GradientTape() as tape:
        tape.watch(xt)
        y = chapter.power_by_squaring(xt, ef.constant(n, ef.int32))
    assert isinstance(y, Tensor) and tuple(y.shape) == x.shape and y.dtype is ef.float64, (
        f"power_by_squaring(x, {n}) eagerly: expected a float64 tensor of shape {x.shape}, "
        f"got {y!r}"
    )
    assert "Pow" not in counter.ops, "power_by_squaring ran ef.pow: write the loop"
    most = 2 * (digits(n) + 1) + 1
    assert counter.ops["Mul"] <= most, (
        f"power_by_squaring(x, {n}) eagerly ran {counter.ops['Mul']} multiplications; "
        f"squaring needs at most two per binary digit of |n| ({digits(n)} digits): about "
        f"{most}, not one per unit of n"
    )
    d = tape.gradient(y, xt)
    check_power(y, np.zeros_like(x) if d is None else d, x, n, "eagerly")


def power_graph(chapter, shape: tuple[int, ...]):
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, shape, name="x")
        n = placeholder(ef.int32, (), name="n")
        y = chapter.power_by_squaring(x, n)
    types = op_types(g)
    assert "While" in types, (
        f"expected a While node (n is known only when the graph runs); the graph has {types}"
    )
    assert "Pow" not in types, "power_by_squaring used ef.pow: write the loop"
    bodies = [o.attrs["body"] for o in g.get_operations() if o.type == "While"]
    with g.as_default():
        (dy,) = gradients(y, [x], unconnected_gradients="zero")
    return g, x, n, y, dy, bodies


def power_in_a_graph(chapter, monkeypatch, values: np.ndarray, exponents: list[int]) -> None:
    g, x, n, y, dy, bodies = power_graph(chapter, values.shape)
    runs = []
    call = Subgraph.call

    def counted(subgraph, arrays):
        if any(subgraph is b for b in bodies):
            runs.append(subgraph)
        return call(subgraph, arrays)

    with Session(g) as session:
        for exponent in exponents:
            runs.clear()
            with monkeypatch.context() as patch:
                patch.setattr(Subgraph, "call", counted)
                got = session.run(y, {x: values, n: exponent})
            assert len(runs) <= digits(exponent) + 1, (
                f"in a Session, the loop body ran {len(runs)} times for n = {exponent}: "
                f"squaring needs one iteration per binary digit of |n| ({digits(exponent)})"
            )
            check_power(got, session.run(dy, {x: values, n: exponent}), values, exponent,
                        "in a Session")  # fmt: skip


def test_power_by_squaring_eagerly(chapter):
    x = np.array([1.5, -0.5, 2.0, -1.1])
    for n in (0, 1, 2, 5, 13, -1, -4):
        power_eagerly(chapter, x, n)
    power_eagerly(chapter, np.array([[1.001, 0.999], [-1.0005, 1.0]]), 1000)


def test_power_by_squaring_in_a_graph_loops_at_run_time(chapter, monkeypatch):
    power_in_a_graph(chapter, monkeypatch, np.array([1.5, -0.5, 2.0, -1.1]), [0, 1, 2, 13, -3])
    power_in_a_graph(chapter, monkeypatch, np.array([1.001, -0.9995]), [1000, -999])


def test_power_by_squaring_on_hidden_exponents(chapter, monkeypatch):
    rng = np.random.default_rng(717)
    exponents = [int(e) for e in rng.integers(-60, 61, 6)] + [int(rng.integers(300, 1200))]
    for n in exponents:
        size = 1e-3 if abs(n) > 60 else 0.5  # |x| near 1 for the large ones: no overflow
        x = rng.uniform(1 - size, 1 + size, 3) * rng.choice([-1.0, 1.0], 3)
        power_eagerly(chapter, x, n)
    for n in exponents:
        size = 1e-3 if abs(n) > 60 else 0.5
        x = rng.uniform(1 - size, 1 + size, (2, 2)) * rng.choice([-1.0, 1.0], (2, 2))
        power_in_a_graph(chapter, monkeypatch, x, [n, -n])
