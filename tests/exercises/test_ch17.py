"""Chapter 17 exercises: linear regression (`exercises/ch17.py`)."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import Session
from eagerflow.tensor.execution import recording

pytestmark = pytest.mark.ch17


def noisy_line(n, seed, slope=3.0, intercept=2.0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n).astype(np.float32)
    y = (slope * x + intercept + rng.normal(size=n)).astype(np.float32)
    return x, y


def gradient_descent(x, y, steps, learning_rate, w=5.0, b=10.0):
    """The reference: NumPy, float64. Returns w, b and the loss before each step."""
    x, y = x.astype(np.float64), y.astype(np.float64)
    losses = []
    for _ in range(steps):
        error = w * x + b - y
        losses.append(float(np.mean(error**2)))
        w, b = w - learning_rate * 2 * np.mean(error * x), b - learning_rate * 2 * np.mean(error)
    return w, b, losses


class Linear(nn.Model):
    def __init__(self):
        super().__init__()
        self.W = Variable(5.0, name="weight")
        self.B = Variable(10.0, name="bias")

    def call(self, inputs):
        return inputs * self.W + self.B


class OpCounter:
    def __init__(self):
        self.count = 0

    def record(self, op, inputs, attrs, outputs):
        self.count += 1


# --- mse_gradients --------------------------------------------------------------------------------
@pytest.mark.parametrize(("w", "b"), [(5.0, 10.0), (3.0, 2.0), (-1.5, 0.25)])
def test_mse_gradients_agree_with_the_tape(chapter, w, b):
    x, y = noisy_line(200, seed=4)
    got = chapter.mse_gradients(w, b, x, y)
    wv, bv = Variable(w), Variable(b)
    with GradientTape() as tape:
        loss = ef.reduce_mean(ef.square(wv * x + bv - y))
    want = [float(g) for g in tape.gradient(loss, [wv, bv])]
    assert isinstance(got, tuple) and len(got) == 2, f"return (dL/dw, dL/db), got {got!r}"
    np.testing.assert_allclose(
        got,
        want,
        rtol=1e-4,
        atol=1e-5,
        err_msg=f"at w={w}, b={b} the tape says {want}, you said {got}",
    )


# --- least_squares --------------------------------------------------------------------------------
def test_least_squares_is_exact_on_a_line(chapter):
    x = np.array([0.0, 1.0, 2.0, 4.0], np.float32)
    got = chapter.least_squares(x, -0.5 * x + 7.0)
    assert got == pytest.approx((-0.5, 7.0)), (
        f"points on y = -0.5x + 7: expected (-0.5, 7), got {got}"
    )


def test_least_squares_matches_polyfit_on_noisy_data(chapter):
    x, y = noisy_line(2000, seed=5)
    want = tuple(float(v) for v in np.polyfit(x.astype(np.float64), y.astype(np.float64), 1))
    got = chapter.least_squares(x, y)
    assert got == pytest.approx(want, rel=1e-6), f"expected (w*, b*) = {want}, got {got}"


# --- train_with_optimizer -------------------------------------------------------------------------
def test_train_with_optimizer_follows_gradient_descent_and_counts_steps(chapter):
    x, y = noisy_line(500, seed=6)
    model = Linear()
    step = nn.get_or_create_global_step()
    before = int(step)
    losses = chapter.train_with_optimizer(model, x, y, steps=60, learning_rate=0.05)
    w, b, want = gradient_descent(x, y, 60, 0.05)
    assert isinstance(losses, list) and len(losses) == 60, (
        f"return one loss per step (60), got {type(losses).__name__} of {len(losses)}"
    )
    np.testing.assert_allclose(
        losses, want, rtol=1e-4, err_msg="the loss before each update, as computed by NumPy"
    )
    np.testing.assert_allclose(
        [float(model.W), float(model.B)],
        [w, b],
        rtol=1e-4,
        err_msg="W and B after 60 steps of gradient descent",
    )
    advanced = int(step) - before
    assert advanced == 60, (
        f"pass global_step=nn.get_or_create_global_step() to apply_gradients: it should have "
        f"advanced by 60, it advanced by {advanced}"
    )


# --- train_in_graph -------------------------------------------------------------------------------
def test_train_in_graph_follows_gradient_descent(chapter):
    x, y = noisy_line(1000, seed=7)
    w, b, losses = chapter.train_in_graph(x, y, steps=100, learning_rate=0.05)
    want_w, want_b, want_losses = gradient_descent(x, y, 100, 0.05)
    assert len(losses) == 100, f"return one loss per step (100), got {len(losses)}"
    np.testing.assert_allclose(
        losses, want_losses, rtol=1e-4, err_msg="the loss before each update, as computed by NumPy"
    )
    assert (w, b) == pytest.approx((want_w, want_b), rel=1e-4), (
        f"after 100 steps from w=5, b=10: expected ({want_w:.5f}, {want_b:.5f}), got ({w}, {b})"
    )


def test_train_in_graph_builds_once_and_runs_many_times(chapter):
    x, y = noisy_line(100, seed=8)
    counts = []
    for steps in (10, 200):
        counter = OpCounter()
        with recording(counter):
            chapter.train_in_graph(x, y, steps=steps, learning_rate=0.05)
        counts.append(counter.count)
    assert counts[0] > 0, (
        "the seam saw no op at all: build the model as a graph (placeholders, variables, the "
        "loss, minimize) with eagerflow ops, and run it in a Session; NumPy alone is not the "
        "exercise"
    )
    assert counts[1] == counts[0], (
        f"the seam saw {counts[0]} ops for 10 steps and {counts[1]} for 200: in graph mode the "
        "ops are called once, to build the graph, and the Session runs it without calling them "
        "again"
    )
    assert ef.executing_eagerly(), "leave graph mode when you are done (use `with`)"


def test_train_in_graph_runs_a_session_on_hidden_data(chapter, monkeypatch):
    runs = []
    run = Session.run

    def counted(self, fetches, *args, **kwargs):
        runs.append(fetches)
        return run(self, fetches, *args, **kwargs)

    monkeypatch.setattr(Session, "run", counted)
    rng = np.random.default_rng(1414)
    slope, intercept = np.round(rng.uniform(-4, 4, 2), 2)
    x, y = noisy_line(300, seed=1415, slope=slope, intercept=intercept)
    steps = int(rng.integers(20, 40))
    w, b, losses = chapter.train_in_graph(x, y, steps=steps, learning_rate=0.1)
    want_w, want_b, want_losses = gradient_descent(x, y, steps, 0.1)
    assert len(runs) >= steps, (
        f"Session.run ran {len(runs)} times for {steps} steps: run the train op in a Session, "
        "once per step"
    )
    np.testing.assert_allclose(
        losses, want_losses, rtol=1e-4,
        err_msg=f"hidden data around y = {slope}x + {intercept}: the loss before each update",
    )  # fmt: skip
    assert (w, b) == pytest.approx((want_w, want_b), rel=1e-4, abs=1e-5), (
        f"hidden data, {steps} steps: expected ({want_w:.5f}, {want_b:.5f}), got ({w}, {b})"
    )


def test_mse_gradients_on_hidden_data(chapter):
    rng = np.random.default_rng(1416)
    for n in (1, 7, 50):
        x = rng.normal(size=n).astype(np.float32)
        y = rng.normal(size=n).astype(np.float32)
        w, b = (float(v) for v in np.round(rng.uniform(-3, 3, 2), 2))
        error = w * x.astype(np.float64) + b - y
        want = (2 * np.mean(error * x), 2 * np.mean(error))
        got = chapter.mse_gradients(w, b, x, y)
        assert isinstance(got, tuple) and len(got) == 2, f"return (dL/dw, dL/db), got {got!r}"
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                   err_msg=f"{n} hidden points, w={w}, b={b}")  # fmt: skip


def test_least_squares_on_hidden_data(chapter):
    rng = np.random.default_rng(1417)
    for n in (2, 10, 300):
        slope, intercept = rng.uniform(-5, 5, 2)
        x, y = noisy_line(n, seed=int(rng.integers(1000)), slope=slope, intercept=intercept)
        want = tuple(float(v) for v in np.polyfit(x.astype(np.float64), y.astype(np.float64), 1))
        got = chapter.least_squares(x, y)
        assert got == pytest.approx(want, rel=1e-6, abs=1e-9), (
            f"{n} hidden points: expected (w*, b*) = {want}, got {got}"
        )


def test_least_squares_works_in_float64(chapter):
    # inputs that float32 cannot hold (x near 1000, spread 0.01), and float32 data whose
    # sums in float32 lose digits: only float64 arithmetic gets (w*, b*) to 1e-9
    rng = np.random.default_rng(1418)
    x = 1000.0 + rng.uniform(0, 0.01, 400)
    y = 3.0 * (x - 1000.0) + 0.25 + rng.normal(0, 1e-4, 400)
    x32 = rng.uniform(0, 1, 5000).astype(np.float32) + np.float32(300)
    y32 = (2.0 * x32 - 1.0 + rng.normal(0, 0.01, 5000)).astype(np.float32)
    for xs, ys, what in [(x, y, "float64 data near x = 1000"), (x32, y32, "5000 float32 points")]:
        want = tuple(float(v) for v in np.polyfit(xs.astype(np.float64), ys.astype(np.float64), 1))
        got = chapter.least_squares(xs, ys)
        assert got == pytest.approx(want, rel=1e-9), (
            f"{what}: expected (w*, b*) = {want}, got {got}: compute in float64 "
            "(np.asarray(x, np.float64)), whatever the inputs' dtype"
        )


# --- stretch: early stopping ----------------------------------------------------------------------
def early_stopping_reference(xt, yt, xv, yv, degree, lr, max_steps, patience):  # type: ignore[no-untyped-def]
    """The rules of the docstring, in NumPy: (best weights, best step, steps)."""
    train, val = xt[:, None] ** np.arange(degree + 1), xv[:, None] ** np.arange(degree + 1)
    w = np.zeros(degree + 1)
    best, best_w, best_step, t = np.mean((val @ w - yv) ** 2), w.copy(), 0, 0
    for t in range(1, max_steps + 1):
        w = w - lr * 2 * train.T @ (train @ w - yt) / len(yt)
        loss = np.mean((val @ w - yv) ** 2)
        if loss < best:
            best, best_w, best_step = loss, w.copy(), t
        elif t - best_step >= patience:
            break
    return best_w, best_step, t


def test_early_stopping_stretch_on_hidden_data(chapter, monkeypatch):
    gradient = GradientTape.gradient
    calls = []

    def counted(tape, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return gradient(tape, *args, **kwargs)

    monkeypatch.setattr(GradientTape, "gradient", counted)
    for seed, patience in [(0, 15), (3, 15), (4, 8), (2, 25)]:  # stop early, late and never
        rng = np.random.default_rng(1400 + seed)
        xt, xv = rng.uniform(-1, 1, 10), rng.uniform(-1, 1, 30)
        yt = np.sin(3 * xt) + rng.normal(0, 0.5, 10)
        yv = np.sin(3 * xv) + rng.normal(0, 0.5, 30)
        case = (xt, yt, xv, yv, 9, 0.3, 300, patience)
        expected_w, expected_best, expected_steps = early_stopping_reference(*case)
        calls.clear()
        got = chapter.early_stopping(*case)
        assert isinstance(got, tuple) and len(got) == 3, (
            f"expected (weights, best_step, steps), got {got!r}"
        )
        weights, best_step, steps = got
        where = f"hidden data {seed} (patience {patience})"
        assert (best_step, steps) == (expected_best, expected_steps), (
            f"{where}: expected best step {expected_best} and {expected_steps} steps taken, got "
            f"best step {best_step} and {steps} steps"
        )
        assert len(calls) == expected_steps, (
            f"{where}: {len(calls)} tape gradients for {expected_steps} steps: one GradientTape "
            "per step, and stop once patience runs out"
        )
        np.testing.assert_allclose(
            np.asarray(weights, dtype=np.float64), expected_w, rtol=1e-8, atol=1e-10,
            err_msg=f"{where}: the weights of the best step",
        )  # fmt: skip
