"""Variables read inside ``cond`` branches and loop bodies get gradients, in Session graphs
(``gradients()``) and through ``@function`` (a tape), first and second order, the same as a
tape over the eager code. (They used to get None: the read was inside the branch's graph,
out of sight of the outer graph's gradients. And a second order through a function counted
a cond's or a variable's contribution twice: once through the values the gradient function
is fed, once again through the ops that made them.)"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import (
    Graph,
    Session,
    cond,
    function,
    global_variables_initializer,
    gradients,
    placeholder,
    while_loop,
)


def branchy(w: Variable) -> Callable[[ef.Tensor], ef.Tensor]:
    def f(x: ef.Tensor) -> ef.Tensor:
        if x > 0:  # noqa: SIM108 (an if statement is the point)
            y = x * w * w
        else:
            y = x + ef.exp(w)
        return y

    return f


def powered(w: Variable) -> Callable[[ef.Tensor], ef.Tensor]:
    """x * w**3, the multiplications done by a loop on a tensor counter."""

    def f(x: ef.Tensor) -> ef.Tensor:
        i = ef.constant(0)
        while i < 3:
            x = x * w
            i += 1
        return x

    return f


def nested(w: Variable) -> Callable[[ef.Tensor], ef.Tensor]:
    """A cond on a tensor inside a loop, both reading w, and a read outside too."""

    def f(x: ef.Tensor) -> ef.Tensor:
        for i in ef.range(4):
            if i % 2 == 0:  # noqa: SIM108
                x = ef.tanh(x * w)
            else:
                x = x + w
        return x * w

    return f


def first_and_second(f: Callable[[ef.Tensor], ef.Tensor], w: Variable, x: float) -> list[float]:
    """y, dy/dw and d²y/dw² by nested tapes."""
    with GradientTape() as outer:
        with GradientTape() as inner:
            y = f(ef.constant(x, ef.float64))
        dw = inner.gradient(y, w)
    d2w = outer.gradient(dw, w, unconnected_gradients="zero")
    return [float(y), float(dw), float(d2w)]


@pytest.mark.parametrize("make", [branchy, powered, nested], ids=["cond", "while", "nested"])
@pytest.mark.parametrize("x", [1.5, -0.7])
def test_a_tape_through_a_function_matches_the_tape_over_eager_code(
    make: Callable[[Variable], Callable[[ef.Tensor], ef.Tensor]], x: float
) -> None:
    w = Variable(np.float64(0.8))
    eager = first_and_second(make(w), w, x)
    traced = function(make(w))
    np.testing.assert_allclose(first_and_second(traced, w, x), eager, rtol=1e-12)
    assert traced.trace_count == 1


@pytest.mark.parametrize("make", [branchy, powered, nested], ids=["cond", "while", "nested"])
def test_finite_differences_agree(
    make: Callable[[Variable], Callable[[ef.Tensor], ef.Tensor]],
) -> None:
    w = Variable(np.float64(0.8))
    traced = function(make(w))
    x, h = 1.3, 1e-6

    def at(value: float) -> float:
        w.assign(value)
        return float(traced(ef.constant(x, ef.float64)))

    numeric = (at(0.8 + h) - at(0.8 - h)) / (2 * h)
    w.assign(0.8)
    _, dw, _ = first_and_second(traced, w, x)
    assert dw == pytest.approx(numeric, rel=1e-7)


def test_gradients_in_a_session_graph_through_cond_and_while_loop() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, (), name="x")
        w = Variable(np.float64(0.5), name="w")
        y = cond(x > 0, lambda: x * w * w, lambda: x - w)
        _, z = while_loop(lambda i, z: i < 3, lambda i, z: (i + 1, z * w), [ef.constant(0), x])
        dy, dz = gradients(y, [w])[0], gradients(z, [w])[0]
        (d2z,) = gradients(dz, [w])
        init = global_variables_initializer()
    with Session(g) as s:
        s.run(init)
        expected = [2 * 2 * 0.5, 2 * 3 * 0.25, 2 * 6 * 0.5]  # 2xw, 3xw², 6xw at x=2, w=0.5
        assert s.run([dy, dz, d2z], {x: 2.0}) == pytest.approx(expected)
        assert s.run(dy, {x: -2.0}) == pytest.approx(-1.0)


def test_a_read_after_an_assign_in_the_same_branch_sees_the_new_value() -> None:
    """The branch still reads the variable itself (the handle is for gradients only)."""
    w = Variable(np.float64(1.0))

    def f(x: ef.Tensor) -> ef.Tensor:
        if x > 0:
            w.assign_add(2.0)
            y = x * w
        else:
            y = x
        return y

    traced = function(f)
    with GradientTape() as tape:
        y = traced(ef.constant(4.0, ef.float64))
    assert float(y) == 12.0 and float(w.numpy()) == 3.0
    assert float(tape.gradient(y, w)) == 4.0


def test_a_branch_not_taken_gives_zero() -> None:
    """Eagerly, a tape never sees the untaken branch's read: None. A function's graph holds
    both branches, so, as in TensorFlow, the gradient is connected, and zero."""
    w = Variable(np.float64(2.0))
    f = branchy(w)
    with GradientTape() as tape:
        y = function(f)(ef.constant(-1.0, ef.float64))
    assert float(tape.gradient(y, w)) == pytest.approx(np.exp(2.0))
    with GradientTape() as tape:
        y = function(lambda x: cond(x > 0, lambda: x * w, lambda: x))(ef.constant(-1.0, ef.float64))
    assert float(tape.gradient(y, w)) == 0.0


def test_a_training_loop_through_a_traced_step_with_a_cond_converges_like_eager() -> None:
    """Huber-like loss written with a Python if on a tensor, both variables in the branches."""
    rng = np.random.default_rng(1)
    xs = rng.standard_normal(32)
    ys = 3 * xs + 2

    def make_step(w: Variable, b: Variable) -> Callable[[ef.Tensor, ef.Tensor], ef.Tensor]:
        def step(x: ef.Tensor, y: ef.Tensor) -> ef.Tensor:
            with GradientTape() as tape:
                error = ef.reduce_mean(ef.abs(w * x + b - y))
                if error < 1.0:
                    loss = 0.5 * ef.reduce_mean((w * x + b - y) ** 2)
                else:
                    loss = ef.reduce_mean(ef.abs(w * x + b - y))
            dw, db = tape.gradient(loss, [w, b])
            w.assign_sub(0.1 * dw)
            b.assign_sub(0.1 * db)
            return loss

        return step

    results = []
    for wrap in (lambda f: f, function):
        w, b = Variable(np.float64(0.0)), Variable(np.float64(0.0))
        step = wrap(make_step(w, b))
        for _ in range(200):
            step(ef.constant(xs), ef.constant(ys))
        results.append([float(w.numpy()), float(b.numpy())])
    np.testing.assert_allclose(results[1], results[0], rtol=1e-12)
    np.testing.assert_allclose(results[0], [3.0, 2.0], atol=1e-3)


def test_second_order_through_a_function_whose_cond_output_is_used_again() -> None:
    """y = cond(x > 0, x², x) · x = x³: d²y/dx² = 6x. The gradient function is fed the
    cond's output; its own gradient must not go on through the cond a second time."""

    def f(x: ef.Tensor) -> ef.Tensor:
        return cond(x > 0, lambda: x * x, lambda: x) * x

    x = ef.constant(1.5, ef.float64)
    results = []
    for g in (f, function(f)):
        with GradientTape() as outer:
            outer.watch(x)
            with GradientTape() as inner:
                inner.watch(x)
                y = g(x)
            dy = inner.gradient(y, x)
        results.append([float(y), float(dy), float(outer.gradient(dy, x))])
    assert results == [[3.375, 6.75, 9.0]] * 2
