"""Gradients through while_loop: graph gradients() and tapes through @function, first and
second order, checked against a tape over the same loop run eagerly and finite differences."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable, check_gradients
from eagerflow.graph import Graph, Session, function, gradients, placeholder, while_loop
from eagerflow.graph import cond as graph_cond


def power(x: ef.Tensor, times: int = 3) -> ef.Tensor:
    """x multiplied into itself ``times`` times: x ** (times + 1)."""
    _, y = while_loop(lambda i, y: i < times, lambda i, y: (i + 1, y * x), [ef.constant(0), x])
    return y


def test_x_multiplied_into_itself_three_times_has_derivative_4x_cubed() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, ())
        y = power(x)
        (dy,) = gradients(y, [x])
        (d2y,) = gradients(dy, [x])
        (d3y,) = gradients(d2y, [x])
    with Session(g) as s:
        for value in (2.0, -0.5, 3.0):
            got = s.run([y, dy, d2y, d3y], {x: value})
            np.testing.assert_allclose(got, [value**4, 4 * value**3, 12 * value**2, 24 * value])


def test_a_tape_through_a_function_with_a_loop_first_and_second_order() -> None:
    traced = function(power)
    x = ef.constant(2.0, ef.float64)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = traced(x)
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    assert [float(y), float(dy), float(d2y)] == [16.0, 32.0, 48.0]
    assert traced.trace_count == 1  # one trace; the gradients are traced from its graph


def loss_of_a_loop(x: ef.Tensor, w: ef.Tensor, n: ef.Tensor | int) -> ef.Tensor:
    """Several loop variables (an int32 counter, a vector, a running sum), two captured
    tensors (the weight ``w`` and ``x``, also a starting value), ``n`` iterations."""

    def body(i: ef.Tensor, y: ef.Tensor, total: ef.Tensor) -> tuple[ef.Tensor, ...]:
        y = ef.tanh(y * w) + 0.5 * x
        return i + 1, y, total + ef.reduce_sum(y * y)

    start = [ef.constant(0), x, ef.constant(0.0, ef.float64)]
    _, y, total = while_loop(lambda i, y, total: i < n, body, start)
    return ef.reduce_sum(y) + total


def eager_gradients(xv: np.ndarray, wv: float, n: int) -> list[np.ndarray]:
    """d loss/dx, d loss/dw, and the second order d(sum(d loss/dx))/dx and d(d loss/dw)/dw,
    by nested tapes over the loop run eagerly (a Python while)."""
    x, w = ef.constant(xv), ef.constant(wv, ef.float64)
    with GradientTape(persistent=True) as outer:
        outer.watch([x, w])
        with GradientTape() as inner:
            inner.watch([x, w])
            loss = loss_of_a_loop(x, w, n)
        dx, dw = inner.gradient(loss, [x, w], unconnected_gradients="zero")
        sum_dx = ef.reduce_sum(dx)
    (d2x,) = outer.gradient(sum_dx, [x], unconnected_gradients="zero")
    (d2w,) = outer.gradient(dw, [w], unconnected_gradients="zero")
    return [g.numpy() for g in (dx, dw, d2x, d2w)]


def central_differences(f: Callable[[np.ndarray], float], at: np.ndarray) -> np.ndarray:
    eps = 1e-6
    grad = np.zeros_like(at)
    for index in np.ndindex(at.shape):
        step = np.zeros_like(at)
        step[index] = eps
        grad[index] = (f(at + step) - f(at - step)) / (2 * eps)
    return grad


@settings(max_examples=25, deadline=None)
@given(
    xv=st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3).map(np.array),
    wv=st.floats(-1.5, 1.5),
    n=st.integers(0, 6),
)
def test_graph_gradients_match_the_eager_tape_and_finite_differences(
    xv: np.ndarray, wv: float, n: int
) -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, (3,))
        w = placeholder(ef.float64, ())
        count = placeholder(ef.int32, ())
        loss = loss_of_a_loop(x, w, count)
        dx, dw, d_count = gradients(loss, [x, w, count])
        (d2x,) = gradients(ef.reduce_sum(dx), [x])
        (d2w,) = gradients(dw, [w])
    assert d_count is None  # an int32 tensor has no gradient
    with Session(g) as s:
        feeds = {x: xv, w: wv, count: n}
        got = s.run([dx, dw, d2x, d2w], feeds)
        for a, b in zip(got, eager_gradients(xv, wv, n), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        numeric_dx = central_differences(lambda v: float(s.run(loss, {**feeds, x: v})), xv)
        numeric_dw = central_differences(
            lambda v: float(s.run(loss, {**feeds, w: v})), np.array(wv)
        )
        numeric_d2w = central_differences(lambda v: float(s.run(dw, {**feeds, w: v})), np.array(wv))
    np.testing.assert_allclose(got[0], numeric_dx, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[1], numeric_dw, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got[3], numeric_d2w, rtol=1e-5, atol=1e-5)


@settings(max_examples=10, deadline=None)
@given(
    xv=st.lists(st.floats(-1.5, 1.5), min_size=3, max_size=3).map(np.array),
    wv=st.floats(-1.5, 1.5),
)
def test_a_tape_through_a_function_passes_the_gradient_check(xv: np.ndarray, wv: float) -> None:
    traced = function(lambda x, w: loss_of_a_loop(x, w, 4))
    check_gradients(traced, [xv, wv], order=1)
    check_gradients(traced, [xv, wv], order=2, rtol=1e-4, atol=1e-5)


def test_captured_tensors_get_gradients_and_a_condition_only_tensor_none() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, (2,))
        weight = placeholder(ef.float64, (2, 2))
        limit = placeholder(ef.float64, ())  # only the condition uses it

        def body(i: ef.Tensor, v: ef.Tensor) -> tuple[ef.Tensor, ef.Tensor]:
            return i + 1, ef.reshape(ef.matmul(weight, ef.reshape(v, (2, 1))), (2,))

        _, v = while_loop(
            lambda i, v: ef.logical_and(i < 2, ef.reduce_sum(v) < limit), body, [0, x]
        )
        dx, d_weight, d_limit = gradients(ef.reduce_sum(v), [x, weight, limit])
    assert d_limit is None
    xv, wv = np.array([1.0, 2.0]), np.array([[0.5, -1.0], [2.0, 0.25]])
    with Session(g) as s:
        got_dx, got_dw = s.run([dx, d_weight], {x: xv, weight: wv, limit: 100.0})
    ones = np.ones(2)  # v = W W x, so d sum(v) = (W W)ᵀ 1 for x, and 1 (W x)ᵀ + Wᵀ 1 xᵀ for W
    np.testing.assert_allclose(got_dx, (wv @ wv).T @ ones)
    np.testing.assert_allclose(got_dw, np.outer(ones, wv @ xv) + np.outer(wv.T @ ones, xv))


def test_a_captured_weight_through_a_function_with_a_tape() -> None:
    @function
    def scaled_power(x: ef.Tensor, w: ef.Tensor) -> ef.Tensor:
        _, y = while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * w), [ef.constant(0), x])
        return y

    x, w = ef.constant(1.5, ef.float64), ef.constant(2.0, ef.float64)
    with GradientTape(persistent=True) as outer:
        outer.watch(w)
        with GradientTape() as inner:
            inner.watch([x, w])
            y = scaled_power(x, w)  # x w³
        dx, dw = inner.gradient(y, [x, w])
    assert [float(dx), float(dw)] == [8.0, 3 * 1.5 * 4.0]  # w³ and 3 x w²
    assert float(outer.gradient(dw, w)) == 6 * 1.5 * 2.0  # 6 x w


def test_zero_iterations_pass_the_gradient_through_unchanged() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, ())
        w = placeholder(ef.float64, ())
        _, y = while_loop(lambda i, y: i < 0, lambda i, y: (i + 1, y * w), [0, x])
        dx, dw = gradients(3.0 * y, [x, w])
        (d2x,) = gradients(dx, [x])
    with Session(g) as s:
        assert s.run([y, dx, dw, d2x], {x: 5.0, w: 2.0}) == [5.0, 3.0, 0.0, 0.0]


def test_an_int32_counter_used_in_the_body_gets_no_gradient() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, ())
        start = placeholder(ef.int32, ())
        # y ← y · x · i for i = start, start + 1, ...: the counter is read by the gradient too
        i, y = while_loop(
            lambda i, y: i < 4, lambda i, y: (i + 1, y * x * ef.cast(i, ef.float64)), [start, x]
        )
        d_start, dx = gradients(y, [start, x])
        (di,) = gradients(i, [x])
    assert d_start is None
    assert di is None  # an int32 output has no gradient
    with Session(g) as s:
        assert s.run([y, dx], {x: 2.0, start: 1}) == [2.0**4 * 6, 4 * 2.0**3 * 6]


def test_a_loop_variable_that_does_not_depend_on_x() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, ())
        _, y, steps = while_loop(
            lambda i, y, s: i < 3, lambda i, y, s: (i + 1, y * x, s + 1.0), [0, x, 0.0]
        )
        (both,) = gradients([y, steps], [x])
        (only_steps,) = gradients(steps, [x], unconnected_gradients="zero")
    with Session(g) as s:
        assert s.run([both, only_steps], {x: 2.0}) == [32.0, 0.0]


def test_shape_invariants_an_unknown_length_and_a_growing_vector() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, (None,))  # its length is known only when it runs
        # alongside, a vector that grows by one each iteration: no gradient needs its values
        _, y, log = while_loop(
            lambda i, y, log: i < 3,
            lambda i, y, log: (i + 1, y * x, ef.concat([log, ef.ones((1,), ef.float64)], 0)),
            [0, x, ef.zeros((0,), ef.float64)],
            shape_invariants=[(), (None,), (None,)],
        )
        (dx,) = gradients(ef.reduce_sum(y), [x])
        (d2x,) = gradients(ef.reduce_sum(dx), [x])
    xv = np.array([1.0, -2.0, 0.5])
    with Session(g) as s:
        got_log, got_dx, got_d2x = s.run([log, dx, d2x], {x: xv})
    np.testing.assert_array_equal(got_log, [1.0, 1.0, 1.0])
    np.testing.assert_allclose(got_dx, 4 * xv**3)
    np.testing.assert_allclose(got_d2x, 12 * xv**2)


def test_a_loop_variable_that_changes_shape_and_is_read_by_the_gradient() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, ())
        # the int32 vector grows; y's gradient needs its sum at each iteration
        _, y, _ = while_loop(
            lambda i, y, seen: i < 3,
            lambda i, y, seen: (
                i + 1,
                y * x * ef.cast(ef.reduce_sum(seen), ef.float64),
                ef.concat([seen, ef.reshape(i + 1, (1,))], 0),
            ),
            [0, x, ef.constant([1])],
            shape_invariants=[(), (), (None,)],
        )
        (dx,) = gradients(y, [x])
    # its values are kept ragged, one per iteration: y = x**4 * (1 * 2 * 4), dy/dx = 32 x**3
    with Session(g) as s:
        assert s.run(dx, {x: 2.0}) == 256.0


def test_nested_loops_and_a_cond_in_the_body_match_the_tape() -> None:
    def f(x: ef.Tensor) -> ef.Tensor:
        def body(i: ef.Tensor, y: ef.Tensor) -> tuple[ef.Tensor, ef.Tensor]:
            one = ef.constant(1.0, ef.float64)
            _, z = while_loop(lambda j, z: j < i, lambda j, z: (j + 1, z * x), [0, one])
            return i + 1, y + graph_cond(z > 3.0, lambda: z, lambda: -z)

        _, y = while_loop(lambda i, y: i < 4, body, [0, ef.constant(0.0, ef.float64)])
        return y

    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, ())
        y = f(x)
        (dy,) = gradients(y, [x])
        (d2y,) = gradients(dy, [x])
    for value in (2.0, 1.5, -1.0):
        with Session(g) as s:
            got = s.run([y, dy, d2y], {x: value})
        xe = ef.constant(value, ef.float64)
        with GradientTape() as outer:
            outer.watch(xe)
            with GradientTape() as inner:
                inner.watch(xe)
                ye = f(xe)
            dye = inner.gradient(ye, xe)
        expected = [float(ye), float(dye), float(outer.gradient(dye, xe))]
        np.testing.assert_allclose(got, expected)


def test_a_long_loop() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, ())
        _, y = while_loop(
            lambda i, y: i < 1000,
            lambda i, y: (i + 1, ef.tanh(y) + x),
            [0, ef.zeros((), "float64")],
        )
        (dy,) = gradients(y, [x])
    with Session(g) as s:
        got, value = s.run(dy, {x: 0.1}), s.run(y, {x: 0.1})
        numeric = (s.run(y, {x: 0.1 + 1e-6}) - s.run(y, {x: 0.1 - 1e-6})) / 2e-6
    # at the fixed point y = tanh(y) + x, dy/dx = 1 / (1 - tanh'(y))
    assert got == pytest.approx(numeric, rel=1e-6)
    assert got == pytest.approx(1 / (1 - (1 - np.tanh(value) ** 2)), rel=1e-3)


def test_a_loop_with_an_effect_is_refused() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, ())
        v = Variable(0.0)
        _, y = while_loop(
            lambda i, y: i < 3, lambda i, y: (i + 1, y * ef.random_normal(())), [0, x]
        )
        with pytest.raises(
            ef.InvalidArgumentError, match=r"RandomNormal.*effect would happen twice"
        ):
            gradients(y, [x])

        def counting(i: ef.Tensor, y: ef.Tensor) -> tuple[ef.Tensor, ef.Tensor]:
            v.assign_add(1.0)
            return i + 1, y * x

        _, y = while_loop(lambda i, y: i < 3, counting, [0, x])
        with pytest.raises(ef.InvalidArgumentError, match="AssignAddVariableOp"):
            gradients(y, [x])
