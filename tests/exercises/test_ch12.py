"""Chapter 12 exercises: optimizers and training (`exercises/ch12.py`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ready_made import refusing

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, Session, function, global_variables_initializer, placeholder
from eagerflow.nn import training
from eagerflow.tensor.errors import EagerflowError

pytestmark = pytest.mark.ch12

GRADIENTS = [[0.5, -2.0, 0.0], [0.5, 1.0, 3.0], [-1.0, 0.25, 3.0], [0.1, -0.1, 0.0]]


def adagrad_reference(start, gradients, learning_rate, initial):
    """NumPy Adagrad: the values of the variable after each step."""
    value = np.array(start, np.float64)
    accumulator = np.full_like(value, initial)
    values = []
    for g in gradients:
        g = np.array(g, np.float64)
        accumulator += g * g
        value -= learning_rate * g / np.sqrt(accumulator)
        values.append(value.copy())
    return values


# --- AdagradOptimizer -----------------------------------------------------------------------------
def test_adagrad_matches_numpy_step_by_step_eagerly(chapter):
    w = Variable([1.0, -2.0, 3.0], name="w")
    optimizer = chapter.AdagradOptimizer(0.5, initial_accumulator_value=0.1)
    expected = adagrad_reference([1.0, -2.0, 3.0], GRADIENTS, 0.5, 0.1)
    for step, (g, want) in enumerate(zip(GRADIENTS, expected, strict=True), start=1):
        optimizer.apply_gradients([(ef.constant(g), w)])
        np.testing.assert_allclose(
            w.numpy(),
            want,
            rtol=1e-5,
            err_msg=f"after step {step} (gradients so far {GRADIENTS[:step]}) expected {want}, "
            f"got {w.numpy()}",
        )
    slots = optimizer.slots()
    assert [name for name, _, _ in slots] == ["accumulator"], (
        f"expected one slot named 'accumulator' for w, got {[name for name, _, _ in slots]}"
    )
    accumulated = 0.1 + np.sum(np.square(GRADIENTS), axis=0)
    np.testing.assert_allclose(
        slots[0][2].numpy(), accumulated, rtol=1e-5, err_msg="the accumulator should be 0.1 + Σ g²"
    )


def test_adagrad_works_in_a_graph_through_minimize(chapter):
    targets = np.array([3.0, -1.0], np.float32)
    graph = Graph()
    optimizer = chapter.AdagradOptimizer(0.3, initial_accumulator_value=0.1)
    with graph.as_default():
        w = Variable([0.0, 0.0], name="w")
        loss = ef.reduce_sum(ef.square(w - targets))  # gradient 2 (w - targets)
        update = optimizer._apply(ef.constant([1.0, 1.0]), Variable([0.0, 0.0], name="probe"))
        if update is None:
            pytest.fail(
                "in a graph, _apply must *return* the assignment (return "
                "variable.assign_sub(...)): apply_gradients groups what _apply returns into the "
                "train op, and an assignment nobody returns is never run"
            )
        train = optimizer.minimize(loss, var_list=[w])
        init = global_variables_initializer()
    value, accumulator = np.zeros(2), np.full(2, 0.1)
    with Session(graph) as session:
        session.run(init)
        for step in range(1, 6):
            session.run(train)
            g = 2 * (value - targets)
            accumulator += g * g
            value = value - 0.3 * g / np.sqrt(accumulator)
            got = session.run(w)
            np.testing.assert_allclose(
                got, value, rtol=1e-5, err_msg=f"graph mode, after step {step}"
            )


def test_adagrad_in_a_function_traced_once(chapter):
    w = Variable([1.0, -2.0, 3.0], name="w")
    optimizer = chapter.AdagradOptimizer(0.5, initial_accumulator_value=0.1)
    traces = []

    def train_step(gradient):  # type: ignore[no-untyped-def]
        traces.append(gradient.shape)
        optimizer.apply_gradients([(gradient, w)])
        return w.read_value()

    step_fn = function(train_step)
    expected = adagrad_reference([1.0, -2.0, 3.0], GRADIENTS, 0.5, 0.1)
    for step, (g, want) in enumerate(zip(GRADIENTS, expected, strict=True), start=1):
        try:
            got = step_fn(ef.constant(g)).numpy()
        except TypeError as error:
            if "control_dependencies" not in str(error):
                raise
            raise AssertionError(
                f"in a traced function apply_gradients failed ({error}): return the update "
                "with read_value=False (variable.assign_sub(..., read_value=False)); a read "
                "value there is the Variable itself, and the train op can only wait for ops"
            ) from error
        np.testing.assert_allclose(
            got, want, rtol=1e-5, err_msg=f"in a traced function, after step {step}"
        )
    # one trace, which a first call that makes variables (the optimizer's) runs twice, as
    # TensorFlow does: the second run must make none
    assert len(traces) <= 2, f"the same signature at every call: one trace, got {len(traces)}"


# --- train_step -----------------------------------------------------------------------------------
def refusing_fit():  # type: ignore[no-untyped-def]
    """``fit`` is the training step, ready-made (and repeated)."""
    return refusing("train_step", "the training step", (training, "fit"),
                    (training, "_train_epoch"))  # fmt: skip


class TrainingSpy(nn.Layer):
    def __init__(self):
        super().__init__(name="training_spy")
        self.seen = []

    def call(self, inputs, training=False):
        self.seen.append(training)
        return inputs


def softmax_loss_and_grads(x, y, kernel, bias):
    logits = x @ kernel + bias
    shifted = logits - logits.max(axis=1, keepdims=True)
    probabilities = np.exp(shifted) / np.exp(shifted).sum(axis=1, keepdims=True)
    n = len(x)
    loss = -np.mean(np.log(probabilities[np.arange(n), y]))
    delta = probabilities.copy()
    delta[np.arange(n), y] -= 1.0
    delta /= n
    return loss, x.T @ delta, delta.sum(axis=0)


def test_train_step_takes_one_gradient_step_on_the_mean_loss(chapter):
    ef.set_seed(1)
    spy = TrainingSpy()
    model = nn.Sequential([nn.Dense(3), spy])
    rng = np.random.default_rng(1)
    x = rng.normal(size=(6, 2)).astype(np.float32)
    y = np.array([0, 1, 2, 0, 1, 2], np.int64)
    model(x)  # build
    spy.seen.clear()
    kernel, bias = (v.numpy().astype(np.float64) for v in model.variables)
    loss, d_kernel, d_bias = softmax_loss_and_grads(x, y, kernel, bias)
    with refusing_fit():
        got = chapter.train_step(model, nn.GradientDescentOptimizer(0.5), x, y)
    assert isinstance(got, float), f"return the loss as a Python float, got {got!r}"
    assert got == pytest.approx(loss, rel=1e-5), (
        f"expected the mean cross-entropy before the update, {loss:.6f}, got {got}"
    )
    assert spy.seen == [True], (
        f"call the model once with training=True (the layers saw training={spy.seen})"
    )
    np.testing.assert_allclose(
        model.variables[0].numpy(),
        kernel - 0.5 * d_kernel,
        rtol=1e-4,
        err_msg="kernel after one step of gradient descent",
    )
    np.testing.assert_allclose(
        model.variables[1].numpy(),
        bias - 0.5 * d_bias,
        rtol=1e-4,
        atol=1e-6,
        err_msg="bias after one step",
    )


def test_train_step_builds_a_new_model_and_learns(chapter):
    ef.set_seed(2)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(64, 2)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
    model = nn.Sequential([nn.Dense(8, "relu"), nn.Dense(2)])  # not built yet
    optimizer = nn.AdamOptimizer(0.05)
    with refusing_fit():
        losses = [chapter.train_step(model, optimizer, x, y) for _ in range(40)]
    assert len(model.variables) == 4, "the model should have been built by its first call"
    assert losses[-1] < losses[0] / 3, (
        f"40 Adam steps on a separable problem should cut the loss by 3x: {losses[0]:.3f} -> "
        f"{losses[-1]:.3f}"
    )


# --- ScheduledGradientDescent (stretch) -----------------------------------------------------------
def scheduled_rate(peak, warmup, t):
    """The schedule, t = 1, 2, ...: linear warmup to ``peak`` at t = warmup, then 1/√t."""
    return peak * min(t / warmup, math.sqrt(warmup / t))


def hidden_schedule(seed):
    """A hidden peak rate and warmup, and gradients for warmup + 6 steps of a (3,) variable."""
    rng = np.random.default_rng(seed)
    peak, warmup = float(rng.uniform(0.05, 0.5)), int(rng.integers(2, 6))
    return peak, warmup, rng.normal(size=(warmup + 6, 3)).astype(np.float32)


def descent_reference(start, gradients, peak, warmup, first_step=1):
    """NumPy: the variable after each step of gradient descent on the schedule."""
    value, values = np.array(start, np.float64), []
    for t, g in enumerate(gradients, start=first_step):
        value = value - scheduled_rate(peak, warmup, t) * g
        values.append(value.copy())
    return values


def check_step(got, want, step, peak, warmup, where):
    rate = scheduled_rate(peak, warmup, step)
    np.testing.assert_allclose(
        got, want, rtol=1e-5, atol=1e-6,
        err_msg=f"{where}, after step {step} (peak {peak:.3f}, warmup {warmup}: rate({step}) = "
        f"{rate:.4f})",
    )  # fmt: skip


def test_scheduled_descent_takes_one_step_per_call_eagerly(chapter):
    peak_a, warmup_a, grads_a = hidden_schedule(1)
    peak_b, warmup_b, grads_b = hidden_schedule(2)
    other = np.random.default_rng(3).normal(size=(len(grads_a), 2, 2)).astype(np.float32)
    starts = [np.array([1.0, -2.0, 0.5]), np.array([[0.5, 1.0], [-1.0, 2.0]]), np.zeros(3)]
    w1, w2, w3 = (Variable(s.astype(np.float32), name=f"w{i}") for i, s in enumerate(starts))
    first = chapter.ScheduledGradientDescent(peak_a, warmup_a, name="first")
    second = chapter.ScheduledGradientDescent(peak_b, warmup_b, name="second")
    want1 = descent_reference(starts[0], grads_a, peak_a, warmup_a)
    want2 = descent_reference(starts[1], other, peak_a, warmup_a)
    want3 = descent_reference(starts[2], grads_b, peak_b, warmup_b)
    for step in range(1, min(len(grads_a), len(grads_b)) + 1):
        i = step - 1
        first.apply_gradients([(ef.constant(grads_a[i]), w1), (ef.constant(other[i]), w2)])
        second.apply_gradients([(ef.constant(grads_b[i]), w3)])
        check_step(w1.numpy(), want1[i], step, peak_a, warmup_a, "eagerly, w1")
        check_step(w2.numpy(), want2[i], step, peak_a, warmup_a,
                   "eagerly, w2, updated by the same apply_gradients call as w1: the same "
                   "step, the same rate")  # fmt: skip
        check_step(w3.numpy(), want3[i], step, peak_b, warmup_b,
                   "eagerly, w3, by a second optimizer that counts its own steps")  # fmt: skip


def test_scheduled_descent_builds_a_train_op_a_session_runs_many_times(chapter):
    peak, warmup, grads = hidden_schedule(4)
    start = np.array([0.5, -1.5, 2.0], np.float32)
    graph = Graph()
    with graph.as_default():
        w = Variable(start, name="w")
        g = placeholder(ef.float32, (3,), name="g")
        optimizer = chapter.ScheduledGradientDescent(peak, warmup)
        try:
            train = optimizer.apply_gradients([(g, w)])
        except (EagerflowError, TypeError, ValueError) as e:
            pytest.fail(f"apply_gradients in a graph raised {type(e).__name__}: {e}\n(the "
                        "step count must be read with ops: there is no value to read while a "
                        "graph is built)")  # fmt: skip
        init = global_variables_initializer()
    want = descent_reference(start, grads, peak, warmup)
    with Session(graph) as session:
        session.run(init)
        for step, gradient in enumerate(grads, start=1):
            session.run(train, {g: gradient})
            check_step(session.run(w), want[step - 1], step, peak, warmup,
                       "a Session running the same train op once per step (the step count "
                       "must be a variable the train op reads and increments: return the "
                       "increment from _finish)")  # fmt: skip


def test_scheduled_descent_in_a_function_traced_once(chapter):
    peak, warmup, grads = hidden_schedule(5)
    start = np.array([2.0, 0.0, -1.0], np.float32)
    w = Variable(start, name="w")
    optimizer = chapter.ScheduledGradientDescent(peak, warmup)
    traces = []

    def train_step(gradient):
        traces.append(gradient.shape)
        optimizer.apply_gradients([(gradient, w)])
        return w.read_value()

    step_fn = function(train_step)
    want = descent_reference(start, grads, peak, warmup)
    for step, gradient in enumerate(grads, start=1):
        got = step_fn(ef.constant(gradient)).numpy()
        check_step(got, want[step - 1], step, peak, warmup,
                   "a training step traced once and called once per step (a Python number "
                   "would be frozen in the trace at its value when traced)")  # fmt: skip
    # one trace, which a first call that makes variables (the optimizer's) runs twice, as
    # TensorFlow does: the second run must make none
    assert len(traces) <= 2, f"the same signature at every call: one trace, got {len(traces)}"


def test_scheduled_descent_resumes_from_a_checkpoint(chapter, tmp_path):
    peak, warmup, grads = hidden_schedule(6)
    start = np.array([1.0, 1.0, -1.0], np.float32)
    want = descent_reference(start, grads, peak, warmup)
    half = warmup + 1  # past the peak: a restart would warm up again
    w = Variable(start, name="w")
    optimizer = chapter.ScheduledGradientDescent(peak, warmup)
    for gradient in grads[:half]:
        optimizer.apply_gradients([(ef.constant(gradient), w)])
    path = nn.Checkpoint(optimizer=optimizer, w=w).save(tmp_path / "schedule.npz")

    resumed_w = Variable(np.zeros(3, np.float32), name="w")
    resumed = chapter.ScheduledGradientDescent(peak, warmup)  # no variables yet
    status = nn.Checkpoint(optimizer=resumed, w=resumed_w).restore(path)
    try:
        status.assert_consumed()
    except nn.CheckpointError as e:
        pytest.fail(f"a new optimizer could not take the step count from the checkpoint: {e}\n"
                    "(name it in the class's non_slot_names)")  # fmt: skip
    for step, gradient in enumerate(grads[half:], start=half + 1):
        resumed.apply_gradients([(ef.constant(gradient), resumed_w)])
        check_step(resumed_w.numpy(), want[step - 1], step, peak, warmup,
                   f"a new optimizer restored from a checkpoint saved after {half} steps (the "
                   "step count must be one of the optimizer's variables, which checkpoints "
                   "save)")  # fmt: skip
