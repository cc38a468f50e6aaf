"""Chapter 5 exercises: variables and training by hand (`exercises/ch05.py`)."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.tensor.execution import recording

pytestmark = pytest.mark.ch05

ASSIGN_OPS = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp")


class Spy:
    def __init__(self):
        self.names = []

    def record(self, op, inputs, attrs, outputs):
        self.names.append(op.name)


def test_sgd_step_updates_the_variables_in_place(chapter):
    w, b = Variable([1.0, 2.0], name="w"), Variable(3.0, name="b")
    before = w.read_value()
    spy = Spy()
    with recording(spy):
        result = chapter.sgd_step([w, b], [ef.constant([10.0, -10.0]), ef.constant(2.0)], 0.1)
    assert result is None, f"sgd_step changes the variables and returns nothing, got {result!r}"
    np.testing.assert_allclose(w.numpy(), [0.0, 3.0], err_msg="w ← w - 0.1 · [10, -10]")
    np.testing.assert_allclose(b.numpy(), 2.8, err_msg="b ← b - 0.1 · 2")
    assert any(name in ASSIGN_OPS for name in spy.names), (
        f"update the variables with assign_sub (the seam saw only {spy.names})"
    )
    np.testing.assert_array_equal(
        before.numpy(), [1.0, 2.0], err_msg="a tensor read before the step must keep its value"
    )


def test_sgd_step_twice(chapter):
    w = Variable([[1.0, -1.0]])
    g = ef.constant([[0.5, 0.5]])
    chapter.sgd_step([w], [g], 1.0)
    chapter.sgd_step([w], [g], 1.0)
    np.testing.assert_allclose(w.numpy(), [[0.0, -2.0]], err_msg="two steps of w ← w - g")


def test_swap(chapter):
    a, b = Variable([1.0, 2.0], name="a"), Variable([3.0, 4.0], name="b")
    chapter.swap(a, b)
    got = (a.numpy().tolist(), b.numpy().tolist())
    assert got == ([3.0, 4.0], [1.0, 2.0]), (
        f"after swap(a=[1, 2], b=[3, 4]): expected a=[3, 4], b=[1, 2]; got a={got[0]}, "
        f"b={got[1]}" + (" (read both values before assigning)" if got[0] == got[1] else "")
    )


def test_swap_integers(chapter):
    a, b = Variable(7), Variable(-7)
    chapter.swap(a, b)
    assert (int(a.numpy()), int(b.numpy())) == (-7, 7), (
        f"after swap(a=7, b=-7): expected a=-7, b=7; got a={a.numpy()}, b={b.numpy()}"
    )
    assert a.dtype is ef.int32 and b.dtype is ef.int32, "a variable never changes dtype"


def momentum_in_numpy(ws, grads_per_step, lr, momentum):
    ws = [np.array(w, dtype=np.float64) for w in ws]
    vs = [np.zeros_like(w) for w in ws]
    for grads in grads_per_step:
        for w, v, g in zip(ws, vs, grads, strict=True):
            v *= momentum
            v += g
            w -= lr * v
    return ws, vs


def test_momentum_step(chapter):
    start = [[1.0, -2.0], 0.5]
    grads_per_step = [[[0.3, 0.1], 1.0], [[0.3, -0.4], -2.0], [[0.0, 0.2], 0.5]]
    ws = [Variable(start[0]), Variable(start[1])]
    vs = [Variable(ef.zeros_like(ef.constant(s))) for s in start]
    for grads in grads_per_step:
        chapter.momentum_step(ws, vs, [ef.constant(g) for g in grads], 0.1, momentum=0.5)
    expected_ws, expected_vs = momentum_in_numpy(start, grads_per_step, 0.1, 0.5)
    for name, got, expected in [("w", ws, expected_ws), ("v", vs, expected_vs)]:
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            np.testing.assert_allclose(
                g.numpy(), e, rtol=1e-6, atol=1e-7,
                err_msg=f"{name}[{i}] after 3 steps (v ← 0.5 v + g; w ← w - 0.1 v)",
            )  # fmt: skip


def test_momentum_step_default_momentum(chapter):
    w, v = Variable(0.0), Variable(1.0)
    chapter.momentum_step([w], [v], [ef.constant(1.0)], 1.0)
    assert float(v.numpy()) == pytest.approx(1.9), f"v ← 0.9 · 1 + 1 = 1.9, got {v.numpy()}"
    assert float(w.numpy()) == pytest.approx(-1.9), f"w ← 0 - 1 · 1.9 = -1.9, got {w.numpy()}"


def quadratic_in_numpy(x, y, steps, lr):
    a = b = c = 0.0
    for _ in range(steps):
        r = a * x * x + b * x + c - y
        a, b, c = (
            a - lr * np.mean(2 * r * x * x),
            b - lr * np.mean(2 * r * x),
            c - lr * np.mean(2 * r),
        )
    return a, b, c


def test_fit_quadratic(chapter):
    rng = np.random.default_rng(4)
    x = rng.uniform(-2, 2, 200).astype(np.float32)
    y = (0.5 * x * x - x + 2 + rng.normal(0, 0.1, 200)).astype(np.float32)
    got = chapter.fit_quadratic(ef.constant(x), ef.constant(y), 300, 0.05)
    expected = quadratic_in_numpy(x.astype(np.float64), y.astype(np.float64), 300, 0.05)
    assert len(got) == 3, f"return (a, b, c), got {got!r}"
    np.testing.assert_allclose(
        [float(v) for v in got], expected, rtol=1e-3, atol=1e-4,
        err_msg="(a, b, c) after 300 steps of gradient descent from 0, learning rate 0.05",
    )  # fmt: skip
    assert expected == pytest.approx((0.5, -1.0, 2.0), abs=0.1)  # the data's curve


def test_fit_quadratic_zero_steps(chapter):
    got = chapter.fit_quadratic(ef.constant([1.0, 2.0]), ef.constant([3.0, 4.0]), 0, 0.1)
    assert tuple(float(v) for v in got) == (0.0, 0.0, 0.0), f"no step: expected zeros, got {got}"


def test_sgd_step_on_hidden_variables(chapter):
    rng = np.random.default_rng(404)
    shapes = [(), (3,), (2, 4)]
    starts = [rng.normal(size=s) for s in shapes]
    grads = [rng.normal(size=s) for s in shapes]
    variables = [Variable(ef.constant(v, ef.float64)) for v in starts]
    lr = float(rng.uniform(0.01, 1.0))
    chapter.sgd_step(variables, [ef.constant(g, ef.float64) for g in grads], lr)
    for v, start, g in zip(variables, starts, grads, strict=True):
        np.testing.assert_allclose(
            v.numpy(), start - lr * g, rtol=1e-12,
            err_msg=f"v - {lr:.3f} g, for hidden values of shape {start.shape}",
        )  # fmt: skip


def test_swap_on_hidden_values(chapter):
    rng = np.random.default_rng(405)
    x, y = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    a, b = Variable(ef.constant(x)), Variable(ef.constant(y))
    chapter.swap(a, b)
    np.testing.assert_array_equal(a.numpy(), y, err_msg="a after the swap")
    np.testing.assert_array_equal(b.numpy(), x, err_msg="b after the swap")


def test_momentum_step_on_hidden_gradients(chapter):
    rng = np.random.default_rng(406)
    start = [rng.normal(size=3).tolist(), float(rng.normal())]
    grads_per_step = [[rng.normal(size=3).tolist(), float(rng.normal())] for _ in range(5)]
    lr, momentum = (float(v) for v in rng.uniform(0.05, 0.9, 2))
    ws = [Variable(ef.constant(s, ef.float64)) for s in start]
    vs = [Variable(ef.zeros_like(ef.constant(s, ef.float64))) for s in start]
    for grads in grads_per_step:
        chapter.momentum_step(ws, vs, [ef.constant(g, ef.float64) for g in grads], lr, momentum)
    expected_ws, expected_vs = momentum_in_numpy(start, grads_per_step, lr, momentum)
    for got, expected in zip([*ws, *vs], [*expected_ws, *expected_vs], strict=True):
        np.testing.assert_allclose(
            got.numpy(), expected, rtol=1e-10,
            err_msg=f"5 hidden steps with learning rate {lr:.3f} and momentum {momentum:.3f}",
        )  # fmt: skip


def test_fit_quadratic_on_hidden_data(chapter):
    rng = np.random.default_rng(407)
    a, b, c = rng.uniform(-1, 1, 3)
    x = rng.uniform(-1.5, 1.5, 100).astype(np.float32)
    y = (a * x * x + b * x + c + rng.normal(0, 0.05, 100)).astype(np.float32)
    steps = int(rng.integers(50, 150))
    got = chapter.fit_quadratic(ef.constant(x), ef.constant(y), steps, 0.1)
    expected = quadratic_in_numpy(x.astype(np.float64), y.astype(np.float64), steps, 0.1)
    np.testing.assert_allclose(
        [float(v) for v in got], expected, rtol=1e-3, atol=1e-4,
        err_msg=f"(a, b, c) after {steps} steps on hidden data",
    )  # fmt: skip


# --- Adam (stretch) -------------------------------------------------------------------------------
class NumpyAdam:
    def __init__(self, lr, b1, b2, eps):
        self.lr, self.b1, self.b2, self.eps, self.t, self.m, self.v = lr, b1, b2, eps, 0, {}, {}

    def apply(self, ws, gs):
        self.t += 1
        for i, g in enumerate(gs):
            self.m[i] = self.b1 * self.m.get(i, 0) + (1 - self.b1) * g
            self.v[i] = self.b2 * self.v.get(i, 0) + (1 - self.b2) * g * g
            m_hat = self.m[i] / (1 - self.b1**self.t)
            v_hat = self.v[i] / (1 - self.b2**self.t)
            ws[i] = ws[i] - self.lr * m_hat / (np.sqrt(v_hat) + self.eps)


def test_adam_stretch_on_hidden_gradients(chapter):
    rng = np.random.default_rng(404)
    runs = []
    for _ in range(2):  # two optimizers, used in turn: each keeps its own state
        lr, b1, b2 = float(rng.uniform(0.01, 0.1)), float(rng.uniform(0.5, 0.9)), 0.99
        shapes = [(3,), (2, 2), ()]
        start = [rng.uniform(-1, 1, s) for s in shapes]
        variables = [Variable(w.copy()) for w in start]
        runs.append((chapter.Adam(lr, b1, b2, 1e-7), variables, NumpyAdam(lr, b1, b2, 1e-7),
                     [w.copy() for w in start], shapes))  # fmt: skip
    for step in range(8):
        for k, (adam, variables, reference, values, shapes) in enumerate(runs):
            grads = [rng.normal(size=s) * 10.0 ** rng.integers(-2, 2) for s in shapes]
            adam.apply(variables, [ef.constant(g) for g in grads])
            reference.apply(values, grads)
            for i, (w, expected) in enumerate(zip(variables, values, strict=True)):
                np.testing.assert_allclose(
                    w.numpy(), expected, rtol=1e-7, atol=1e-10,
                    err_msg=f"optimizer {k}, variable {i} after step {step + 1}",
                )  # fmt: skip
