"""Every op with a fused form, compiled vs interpreted, on random shapes with broadcasting.

Each op runs inside a small cluster (its input negated twice, which changes no bit, and a
reduction of its result), so the numba backend really fuses it. Elementwise arithmetic must
give the interpreter's bits; exp, log, tanh, sqrt and sigmoid may differ in the last bit
or two (another library computes them), and reductions add in another order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eagerflow.tensor as ef
from eagerflow.graph import Graph, Session, placeholder
from eagerflow.graph.compiler.kernels import ELEMENTWISE, REDUCTIONS

UNARY: dict[str, Callable[[Any], Any]] = {
    "Neg": ef.negative, "Abs": ef.abs, "Sign": ef.sign, "Square": ef.square, "Sqrt": ef.sqrt,
    "Exp": ef.exp, "Log": ef.log, "Tanh": ef.tanh, "Relu": ef.relu,
    "Identity": ef.identity, "StopGradient": ef.stop_gradient,
}  # fmt: skip
BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "AddV2": ef.add, "Sub": ef.subtract, "Mul": ef.multiply, "RealDiv": ef.divide,
    "Maximum": ef.maximum, "Minimum": ef.minimum, "ReluGrad": ef.relu_grad,
}  # fmt: skip
COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "Less": ef.less, "LessEqual": ef.less_equal, "Greater": ef.greater,
    "GreaterEqual": ef.greater_equal, "Equal": ef.equal, "NotEqual": ef.not_equal,
}  # fmt: skip
INEXACT = {"Sqrt", "Exp", "Log", "Tanh", "sum"}  # and sums: added in another order

# (shape of x, shape of y): broadcasting along each axis, and scalars
SHAPES = [((7,), (7,)), ((3, 5), (5,)), ((3, 5), (3, 1)), ((4, 1), (1, 6)), ((2, 3, 4), ()),
          ((), (6,)), ((5,), ())]  # fmt: skip


def twice_negated(x: Any) -> Any:
    """x, unchanged to the bit, as the output of two ops: the op under test then sits in
    a loop of several ops (one op alone is no cluster)."""
    return ef.negative(ef.negative(x))


def interpreted_and_compiled(build: Callable[..., list[Any]], *arrays: np.ndarray) -> tuple:
    """Run the graph ``build(*placeholders)`` makes, interpreted and compiled."""
    graph = Graph()
    with graph.as_default():
        inputs = [placeholder(ef.as_dtype(a.dtype), a.shape) for a in arrays]
        outputs = build(*inputs)
    feed = dict(zip(inputs, arrays, strict=True))
    with Session(graph) as plain, Session(graph, jit_compile=True) as jit:
        return plain.run(outputs, feed), jit.run(outputs, feed)


def check(expected: list[Any], got: list[Any], exact: bool, dtype: np.dtype) -> None:
    for e, g in zip(expected, got, strict=True):
        assert np.shape(e) == np.shape(g) and np.asarray(e).dtype == np.asarray(g).dtype
        if exact:
            np.testing.assert_array_equal(g, e)
        else:
            eps = np.finfo(dtype).eps
            np.testing.assert_allclose(
                g, e, rtol=8 * eps, atol=8 * eps * max(1.0, np.abs(e).max(initial=0))
            )


def values(shape: tuple[int, ...], dtype: Any) -> st.SearchStrategy[np.ndarray]:
    floats = st.floats(-3, 3, width=32).map(lambda v: v if abs(v) > 1e-3 else 0.5)
    return st.lists(floats, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))).map(
        lambda v: np.array(v, dtype).reshape(shape)
    )


@st.composite
def two_inputs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    sx, sy = draw(st.sampled_from(SHAPES))
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    return draw(values(sx, dtype)), draw(values(sy, dtype))


SETTINGS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def check_each(names: list[str], expected: list[Any], got: list[Any], dtype: np.dtype) -> None:
    """Each op's values as the interpreter's. A last value named "sum" adds up the others: it
    is checked to within the rounding of adding them in another order, a few eps of the
    terms' magnitude (far above the sum's when they cancel)."""
    summed = names[-1] == "sum"
    for name, e, g in zip(names[:-1] if summed else names, expected, got, strict=False):
        try:
            check([e], [g], name not in INEXACT, dtype)
        except AssertionError as error:
            raise AssertionError(f"{name}: {error}") from None
    if not summed:
        return
    terms = sum(np.abs(np.asarray(e, np.float64)).sum() for e in expected[:-1])
    bound = 8 * np.finfo(dtype).eps * len(names) * max(1.0, float(terms))
    np.testing.assert_allclose(got[-1], expected[-1], rtol=0, atol=bound, err_msg=names[-1])


# All ops of a kind in one graph: one loop (one numba compile) per example, not one per op.
@given(inputs=two_inputs())
@SETTINGS
def test_unary_ops(backend: str, inputs: tuple[np.ndarray, np.ndarray]) -> None:
    x, _ = inputs
    names = sorted(UNARY)

    def build(x: Any) -> list[Any]:
        same = twice_negated(x)
        values = [UNARY[n](ef.abs(same) if n in ("Sqrt", "Log") else same) for n in names]
        total = values[0]
        for v in values[1:]:
            total = total + v
        return [*values, ef.reduce_sum(total)]

    expected, got = interpreted_and_compiled(build, x)
    check_each([*names, "sum"], expected, got, x.dtype)


@given(inputs=two_inputs())
@SETTINGS
def test_binary_ops(backend: str, inputs: tuple[np.ndarray, np.ndarray]) -> None:
    x, y = inputs
    names = sorted(BINARY)
    same_shape = np.resize(y, x.shape).astype(x.dtype)  # ReluGrad takes equal shapes only

    def build(x: Any, y: Any, y_full: Any) -> list[Any]:
        same = twice_negated(x)
        values = [BINARY[n](same, y_full if n == "ReluGrad" else y) for n in names]
        total = values[0]
        for v in values[1:]:
            total = total + v
        return [*values, ef.reduce_sum(total, axis=0) if np.ndim(total) else total]

    expected, got = interpreted_and_compiled(build, x, y, same_shape)
    check_each([*names, "sum"], expected, got, x.dtype)


@given(inputs=two_inputs())
@SETTINGS
def test_comparisons_logic_and_select(backend: str, inputs: tuple) -> None:
    x, y = inputs
    x = np.round(x)  # so that some elements are equal
    y = np.round(y).astype(x.dtype)
    names = sorted(COMPARISONS)

    def build(x: Any, y: Any) -> list[Any]:
        same = twice_negated(x)
        tests = [COMPARISONS[n](same, y) for n in names]
        both = ef.logical_and(tests[0], ef.logical_not(ef.logical_or(tests[1], ef.less(same, 0.0))))
        chosen = ef.where(both, same, ef.cast(tests[2], x.dtype))
        return [*tests, both, chosen, ef.reduce_max(chosen) if chosen.shape else chosen]

    expected, got = interpreted_and_compiled(build, x, y)
    check_each([*names, "LogicalAnd", "SelectV2", "Max"], expected, got, x.dtype)


@pytest.mark.parametrize("reduction", ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min"])
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_over_every_axis_choice(
    backend: str, reduction: str, axis: Any, keepdims: bool
) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 5)).astype(np.float32)
    x[1, 2, 3] = np.nan if reduction in ("reduce_max", "reduce_min") else x[1, 2, 3]

    def build(x: Any) -> list[Any]:
        return [getattr(ef, reduction)(ef.abs(x) * 2.0 - 1.0, axis=axis, keepdims=keepdims)]

    expected, got = interpreted_and_compiled(build, x)
    check(expected, got, reduction in ("reduce_max", "reduce_min"), np.dtype(np.float32))


def test_casts_between_every_fusible_dtype(backend: str) -> None:
    x = np.array([[-2.7, -0.5, 0.0, 0.5, 3.9]], np.float32)

    def build(x: Any) -> list[Any]:
        scaled = twice_negated(x) * 3.0
        return [ef.cast(scaled, d) * ef.cast(2, d) if d is not ef.bool_ else ef.cast(scaled, d)
                for d in (ef.float64, ef.int32, ef.int64, ef.bool_)]  # fmt: skip

    expected, got = interpreted_and_compiled(build, x)
    check(expected, got, True, x.dtype)


def test_broadcast_to_inside_a_loop(backend: str) -> None:
    x = np.arange(4, dtype=np.float32).reshape(4, 1)

    def build(x: Any) -> list[Any]:
        wide = ef.broadcast_to(twice_negated(x), (4, 6))
        return [wide * 2.0, ef.reduce_sum(wide, axis=0)]

    expected, got = interpreted_and_compiled(build, x)
    check(expected, got, True, x.dtype)


def test_every_fusible_op_is_tested_here() -> None:
    tested = {*UNARY, *BINARY, *COMPARISONS, "LogicalAnd", "LogicalOr", "LogicalNot",
              "SelectV2", "Cast", "BroadcastTo"}  # fmt: skip
    assert set(ELEMENTWISE) <= tested, set(ELEMENTWISE) - tested
    assert set(REDUCTIONS) == {"Sum", "Mean", "Max", "Min"}
