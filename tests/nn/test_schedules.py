"""Learning-rate schedules (Keras' formulas, against NumPy here and against TensorFlow in
tests/conformance) and an optimizer's rate: a variable, or a schedule read at its count,
eagerly, in a traced step, in a Session graph, and through a checkpoint."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import Graph, Session, function, global_variables_initializer
from eagerflow.nn.checkpoint_file import CheckpointError

STEPS = np.array([0, 1, 4, 7, 10, 25])


def rates(schedule: nn.schedules.LearningRateSchedule) -> np.ndarray:
    return np.array([float(schedule(ef.constant(int(s), ef.int64))) for s in STEPS])


@pytest.mark.parametrize(
    ("schedule", "formula"),
    [
        (nn.schedules.ExponentialDecay(0.1, 5, 0.5), lambda t: 0.1 * 0.5 ** (t / 5)),
        (nn.schedules.ExponentialDecay(0.1, 5, 0.5, staircase=True),
         lambda t: 0.1 * 0.5 ** (t // 5)),
        (nn.schedules.InverseTimeDecay(0.2, 4, 0.5), lambda t: 0.2 / (1 + 0.5 * t / 4)),
        (nn.schedules.PolynomialDecay(0.1, 10, end_learning_rate=0.01, power=2.0),
         lambda t: 0.09 * (1 - np.minimum(t, 10) / 10) ** 2 + 0.01),
        (nn.schedules.PolynomialDecay(0.1, 4, end_learning_rate=0.0, cycle=True),
         lambda t: 0.1 * (1 - t / (4 * np.maximum(np.ceil(t / 4), 1)))),
        (nn.schedules.PiecewiseConstantDecay([4, 10], [1.0, 0.5, 0.1]),
         lambda t: np.where(t <= 4, 1.0, np.where(t <= 10, 0.5, 0.1))),
    ],
    ids=["exponential", "exponential_staircase", "inverse_time", "polynomial",
         "polynomial_cycle", "piecewise"],
)  # fmt: skip
def test_schedules_follow_keras_formulas(schedule, formula) -> None:
    np.testing.assert_allclose(rates(schedule), formula(STEPS.astype(float)), rtol=1e-6)


def test_bad_schedule_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="ExponentialDecay: decay_steps must be > 0, got 0"):
        nn.schedules.ExponentialDecay(0.1, 0, 0.5)
    with pytest.raises(ValueError, match=r"one more value than boundaries, got 2 .* 2 values"):
        nn.schedules.PiecewiseConstantDecay([1, 2], [0.1, 0.2])
    with pytest.raises(TypeError, match="learning_rate must be a number"):
        nn.GradientDescentOptimizer("fast")  # type: ignore[arg-type]


def quadratic_step(optimizer: nn.Optimizer, w: Variable):  # type: ignore[no-untyped-def]
    def step() -> None:
        with GradientTape() as tape:
            loss = 0.5 * ef.reduce_sum(w * w)  # gradient w: w ← w (1 - rate)
        optimizer.apply_gradients([(tape.gradient(loss, w), w)])

    return step


@pytest.mark.parametrize("traced", [False, True], ids=["eager", "traced"])
def test_a_schedule_is_read_at_the_optimizers_count(traced: bool) -> None:
    schedule = nn.schedules.PiecewiseConstantDecay([1, 2], [0.5, 0.25, 0.125])
    w = Variable(np.array([8.0], np.float32))
    optimizer = nn.GradientDescentOptimizer(schedule)
    step = quadratic_step(optimizer, w)
    step = function(step) if traced else step
    expected = 8.0
    for t in range(4):
        assert float(optimizer.learning_rate) == [0.5, 0.5, 0.25, 0.125][t]
        step()
        expected *= 1 - [0.5, 0.5, 0.25, 0.125][t]  # the rate at count t (0, 1, 2, 3)
        np.testing.assert_allclose(w.numpy(), [expected], rtol=1e-6)
    assert optimizer.iterations.numpy() == 4
    assert "learning_rate" not in optimizer.non_slots()  # a schedule needs no variable
    if traced:  # reading the rate before the first step made the count, eagerly
        assert step.trace_count == 1


def test_a_schedule_in_a_session_graph() -> None:
    g = Graph()
    with g.as_default():
        w = Variable(np.array([8.0], np.float32))
        optimizer = nn.GradientDescentOptimizer(nn.schedules.ExponentialDecay(0.5, 1, 0.5))
        train = optimizer.minimize(lambda: 0.5 * ef.reduce_sum(w * w))
        init = global_variables_initializer()
    with Session(g) as session:
        session.run(init)
        expected = 8.0
        for t in range(3):
            session.run(train)
            expected *= 1 - 0.5 * 0.5**t
        np.testing.assert_allclose(session.run(w), [expected], rtol=1e-6)
        assert session.run(optimizer.iterations) == 3


def test_the_rate_variable_is_assigned_and_checked() -> None:
    optimizer = nn.AdamOptimizer(0.01)
    assert optimizer.learning_rate.dtype is ef.float32 and not optimizer.learning_rate.trainable
    optimizer.learning_rate = 0.5
    assert optimizer.learning_rate.numpy() == np.float32(0.5)
    with pytest.raises(ValueError, match="Adam: learning_rate must be > 0, got -1"):
        optimizer.learning_rate = -1.0
    assert optimizer.learning_rate.numpy() == np.float32(0.5)  # unchanged


def test_the_rate_and_count_go_through_a_checkpoint(tmp_path: Path) -> None:
    w = Variable(np.array([1.0, 2.0], np.float32), name="w")
    optimizer = nn.MomentumOptimizer(0.1, 0.9)
    for _ in range(3):
        quadratic_step(optimizer, w)()
    optimizer.learning_rate = 0.02
    path = nn.Checkpoint(w=w, optimizer=optimizer).write(tmp_path / "ckpt")
    fresh = nn.MomentumOptimizer(0.5, 0.9)
    nn.Checkpoint(w=w, optimizer=fresh).restore(path).assert_consumed()
    assert fresh.learning_rate.numpy() == np.float32(0.02)
    assert fresh.iterations.numpy() == 3


def test_a_checkpoint_from_before_the_rate_was_a_variable_still_loads(tmp_path: Path) -> None:
    """Files written before optimizers had ``learning_rate`` and ``iterations`` variables:
    a Checkpoint restores the rest and keeps the new optimizer's rate; a Saver, which wants a
    value for every variable, names the two missing ones."""
    w = Variable(np.array([1.0, 2.0], np.float32), name="w")
    optimizer = nn.MomentumOptimizer(0.1, 0.9)
    quadratic_step(optimizer, w)()
    path = nn.Checkpoint(w=w, optimizer=optimizer).write(tmp_path / "new")
    with np.load(path) as data:
        old = {k: data[k] for k in data.files if k.rpartition("/")[2] not in
               ("learning_rate", "iterations")}  # fmt: skip
    np.savez(tmp_path / "old.npz", **old)
    fresh = nn.MomentumOptimizer(0.3, 0.9)
    nn.Checkpoint(w=w, optimizer=fresh).restore(tmp_path / "old.npz").assert_consumed()
    assert fresh.learning_rate.numpy() == np.float32(0.3)
    graphs = []
    for with_optimizer in (False, True):
        with (g := Graph()).as_default():
            v = Variable(np.array([1.0, 2.0], np.float32), name="w")
            if with_optimizer:
                nn.GradientDescentOptimizer(0.1).minimize(ef.reduce_sum(v * v))
            graphs.append((g, nn.Saver(), global_variables_initializer()))
    (old_graph, old_saver, init), (new_graph, new_saver, _) = graphs
    with Session(old_graph) as session:
        session.run(init)
        saved = old_saver.save(session, tmp_path / "tf1")
    missing = r"has no value for \['GradientDescent/\S*iterations', '\S*/learning_rate'\]"
    with Session(new_graph) as session, pytest.raises(CheckpointError, match=missing):
        new_saver.restore(session, saved)
