"""Optimizers against TensorFlow 1.x's update formulas written in NumPy, in eager mode and in
graph mode; apply_gradients/minimize contracts; the global step; slots."""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import (
    Graph,
    Session,
    function,
    global_variables,
    global_variables_initializer,
)
from eagerflow.tensor.errors import InvalidArgumentError

# Two variables; loss = Σ c·v + ½ Σ v², so the gradient is g = c + v (it changes as v does).
INITIAL = [np.array([[0.5, -1.0, 2.0], [0.25, 0.0, -3.0]]), np.array([1.5, -0.5, 0.1])]
C = [np.array([[1.0, -2.0, 0.5], [3.0, 0.2, -1.0]]), np.array([-0.3, 0.7, 2.0])]
STEPS = 2


def loss_of(variables) -> ef.Tensor:
    total = ef.constant(0.0, ef.float64)
    for c, v in zip(C, variables, strict=True):
        total = total + ef.reduce_sum(c * v) + 0.5 * ef.reduce_sum(ef.square(v))
    return total


# --- the NumPy references: TensorFlow 1.x's kernels (training_ops.cc) -----------------------
# Each takes (variable, gradient, state dict) and updates both in place; state starts empty.
# The rate is float32, cast to the variable's dtype: TensorFlow 1 converts it to a float32
# tensor, Keras and eagerflow keep it in a float32 variable.
def f32(lr: float) -> float:
    return float(np.float32(lr))


def gd(lr: float) -> Callable:
    lr = f32(lr)

    def step(var, g, state) -> None:
        var -= lr * g

    return step


def momentum(lr: float, m: float, nesterov: bool = False) -> Callable:
    lr = f32(lr)

    def step(var, g, state) -> None:
        accum = state["momentum"] = m * state.get("momentum", 0.0) + g
        var -= lr * (g + m * accum) if nesterov else lr * accum

    return step


def adam(lr: float = 0.001, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8) -> Callable:
    lr = f32(lr)

    def step(var, g, state) -> None:
        t = state["t"] = state.get("t", 0) + 1
        lr_t = lr * math.sqrt(1 - b2**t) / (1 - b1**t)
        m = state["m"] = b1 * state.get("m", 0.0) + (1 - b1) * g
        v = state["v"] = b2 * state.get("v", 0.0) + (1 - b2) * g * g
        var -= lr_t * m / (np.sqrt(v) + eps)

    return step


def rmsprop(lr: float, decay: float = 0.9, mu: float = 0.0, eps: float = 1e-10,
            centered: bool = False) -> Callable:  # fmt: skip
    lr = f32(lr)

    def step(var, g, state) -> None:
        ms = state["rms"] = decay * state.get("rms", 1.0) + (1 - decay) * g * g  # ms starts at 1
        denominator = ms + eps
        if centered:
            mg = state["mg"] = decay * state.get("mg", 0.0) + (1 - decay) * g
            denominator = ms - mg * mg + eps
        mom = state["momentum"] = mu * state.get("momentum", 0.0) + lr * g / np.sqrt(denominator)
        var -= mom

    return step


CASES = {
    "gradient_descent": (lambda: nn.GradientDescentOptimizer(0.1), gd(0.1)),
    "momentum": (lambda: nn.MomentumOptimizer(0.1, 0.9), momentum(0.1, 0.9)),
    "nesterov": (lambda: nn.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
                 momentum(0.1, 0.9, nesterov=True)),
    "adam_defaults": (lambda: nn.AdamOptimizer(), adam()),
    "adam": (lambda: nn.AdamOptimizer(0.1, beta1=0.8, beta2=0.99, epsilon=1e-3),
             adam(0.1, 0.8, 0.99, 1e-3)),
    "rmsprop_defaults": (lambda: nn.RMSPropOptimizer(0.01), rmsprop(0.01)),
    "rmsprop_momentum": (lambda: nn.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5),
                         rmsprop(0.01, 0.8, 0.5)),
    "rmsprop_centered": (lambda: nn.RMSPropOptimizer(0.01, momentum=0.5, epsilon=1e-6,
                                                     centered=True),
                         rmsprop(0.01, 0.9, 0.5, 1e-6, centered=True)),
}  # fmt: skip


def reference(step: Callable, steps: int = STEPS):
    """Values of the variables and of their slots after each step."""
    variables = [v.copy() for v in INITIAL]
    states: list[dict] = [{} for _ in variables]
    history = []
    for _ in range(steps):
        grads = [c + v for c, v in zip(C, variables, strict=True)]
        for var, g, state in zip(variables, grads, states, strict=True):
            step(var, g, state)
        slots = [{k: np.copy(s) for k, s in state.items() if k != "t"} for state in states]
        history.append(([v.copy() for v in variables], slots))
    return history


def index_of(variable: Variable, variables: list[Variable]) -> int:
    """By identity (``==`` on variables compares values, elementwise)."""
    return next(i for i, v in enumerate(variables) if v is variable)


def slot_values(optimizer: nn.Optimizer, variables, read) -> list[dict[str, np.ndarray]]:
    found: list[dict[str, np.ndarray]] = [{} for _ in variables]
    for name, primary, slot in optimizer.slots():
        found[index_of(primary, variables)][name] = read(slot)
    return found


def assert_matches(actual_vars, actual_slots, expected) -> None:
    expected_vars, expected_slots = expected
    for a, e in zip(actual_vars, expected_vars, strict=True):
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-15)
    for a, e in zip(actual_slots, expected_slots, strict=True):
        assert sorted(a) == sorted(e)
        for name in e:
            np.testing.assert_allclose(a[name], np.broadcast_to(e[name], a[name].shape),
                                       rtol=1e-12, atol=1e-15)  # fmt: skip


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_steps_match_tensorflow_1_formulas(name: str) -> None:
    make, step = CASES[name]
    optimizer = make()
    variables = [Variable(v, name=f"w{i}") for i, v in enumerate(INITIAL)]
    for expected in reference(step):
        assert optimizer.minimize(lambda: loss_of(variables)) is None
        values = [v.numpy() for v in variables]
        assert_matches(values, slot_values(optimizer, variables, lambda s: s.numpy()), expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_steps_match_tensorflow_1_formulas(name: str) -> None:
    make, step = CASES[name]
    optimizer = make()
    g = Graph()
    with g.as_default():
        variables = [Variable(v, name=f"w{i}") for i, v in enumerate(INITIAL)]
        train = optimizer.minimize(loss_of(variables))
        init = global_variables_initializer()
    assert train is not None and train.graph is g
    with Session(g) as session:
        session.run(init)
        for expected in reference(step):
            session.run(train)
            values = session.run(variables)
            assert_matches(values, slot_values(optimizer, variables, session.run), expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_function_steps_match_tensorflow_1_formulas(name: str) -> None:
    # The optimizer's first step happens inside the trace: its slots and Adam's β powers are
    # made there, eagerly (they outlive the trace), and its updates are waited for by value.
    make, step = CASES[name]
    optimizer = make()
    variables = [Variable(v, name=f"w{i}") for i, v in enumerate(INITIAL)]

    @function
    def train():  # type: ignore[no-untyped-def]
        with GradientTape() as tape:
            loss = loss_of(variables)
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))

    for expected in reference(step):
        train()
        values = [v.numpy() for v in variables]
        assert_matches(values, slot_values(optimizer, variables, lambda s: s.numpy()), expected)
    # a trace that made variables (slots) is traced again, as TensorFlow does, to check that
    # the next one makes none (every optimizer makes its rate and step count)
    assert train.trace_count == 2


@pytest.mark.parametrize("graph_mode", [False, True], ids=["eager", "graph"])
def test_adam_beta_powers_advance_once_per_step(graph_mode: bool) -> None:
    optimizer = nn.AdamOptimizer(0.01, beta1=0.8, beta2=0.9)
    if graph_mode:
        g = Graph()
        with g.as_default():
            variables = [Variable(v) for v in INITIAL]
            train = optimizer.minimize(loss_of(variables))
            init = global_variables_initializer()
        session = Session(g)
        session.run(init)
        run, read = (lambda: session.run(train)), session.run
    else:
        variables = [Variable(v) for v in INITIAL]
        run = lambda: optimizer.minimize(lambda: loss_of(variables))  # noqa: E731
        read = lambda v: v.numpy()  # noqa: E731
    for t in (1, 2, 3):
        run()
        powers = optimizer.non_slots()
        assert set(powers) == {"beta1_power", "beta2_power", "iterations", "learning_rate"}
        assert read(powers["iterations"]) == t
        # two variables, but the powers move once per step: β^(t+1) after step t
        assert read(powers["beta1_power"]) == pytest.approx(0.8 ** (t + 1), rel=1e-12)
        assert read(powers["beta2_power"]) == pytest.approx(0.9 ** (t + 1), rel=1e-12)


def test_float32_variables_stay_float32() -> None:
    optimizer = nn.AdamOptimizer(0.1)
    w = Variable(np.array([1.0, 2.0], np.float32))
    optimizer.minimize(lambda: ef.reduce_sum(ef.square(w)))
    assert w.dtype is ef.float32
    assert optimizer.iterations.dtype is ef.int64  # Keras' counter
    others = [v for v in optimizer.variables() if v is not optimizer.iterations]
    assert all(v.dtype is ef.float32 for v in others)
    # step 1 of Adam moves every coordinate by about lr (m/√v = sign(g))
    np.testing.assert_allclose(w.numpy(), [0.9, 1.9], rtol=1e-5)


# --- defaults -------------------------------------------------------------------------------
def test_defaults_match_tensorflow_1() -> None:
    adam_ = nn.AdamOptimizer()
    assert (adam_.learning_rate, adam_.beta1, adam_.beta2, adam_.epsilon) == (
        0.001, 0.9, 0.999, 1e-8)  # fmt: skip
    rms = nn.RMSPropOptimizer(0.01)
    assert (rms.decay, rms.momentum, rms.epsilon, rms.centered) == (0.9, 0.0, 1e-10, False)
    assert nn.MomentumOptimizer(0.1, 0.9).use_nesterov is False
    assert nn.GradientDescentOptimizer(0.1).name == "GradientDescent"
    assert [o.name for o in (adam_, rms, nn.MomentumOptimizer(0.1, 0.9))] == [
        "Adam", "RMSProp", "Momentum"]  # fmt: skip


@pytest.mark.parametrize("lr", [0.0, -0.1, math.nan])
def test_learning_rate_must_be_positive(lr: float) -> None:
    with pytest.raises(ValueError, match=r"GradientDescent: learning_rate must be > 0, got"):
        nn.GradientDescentOptimizer(lr)


BAD_HYPERPARAMETERS = [
    (lambda: nn.MomentumOptimizer(0.1, momentum=-0.5), "Momentum: momentum must be >= 0"),
    (lambda: nn.AdamOptimizer(beta1=1.0), "Adam: beta1 must be in [0, 1), got 1.0"),
    (lambda: nn.AdamOptimizer(beta2=-0.1), "Adam: beta2 must be in [0, 1), got -0.1"),
    (lambda: nn.AdamOptimizer(epsilon=-1e-8), "Adam: epsilon must be >= 0"),
    (lambda: nn.RMSPropOptimizer(0.1, decay=1.5), "RMSProp: decay must be in [0, 1)"),
    (lambda: nn.RMSPropOptimizer(0.1, momentum=-1), "RMSProp: momentum must be >= 0"),
    (lambda: nn.RMSPropOptimizer(0.1, epsilon=-1), "RMSProp: epsilon must be >= 0"),
]


@pytest.mark.parametrize(("make", "message"), BAD_HYPERPARAMETERS)
def test_hyperparameters_out_of_range(make: Callable[[], nn.Optimizer], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(message)):
        make()


def test_a_hyperparameter_that_is_not_a_number() -> None:
    with pytest.raises(TypeError, match=r"Adam: beta1 must be a number, got 'high'"):
        nn.AdamOptimizer(beta1="high")  # type: ignore[arg-type]


# --- apply_gradients ------------------------------------------------------------------------
def test_apply_gradients_skips_none_gradients() -> None:
    a, b = Variable([1.0, 2.0], name="a"), Variable([3.0], name="b")
    nn.GradientDescentOptimizer(0.5).apply_gradients([(ef.constant([2.0, 4.0]), a), (None, b)])
    np.testing.assert_array_equal(a.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(b.numpy(), [3.0])


def test_apply_gradients_skips_none_gradients_in_a_graph() -> None:
    g = Graph()
    with g.as_default():
        a, b = Variable([1.0, 2.0], name="a"), Variable([3.0], name="b")
        train = nn.GradientDescentOptimizer(0.5).apply_gradients(
            [(ef.constant([2.0, 4.0]), a), (None, b)])  # fmt: skip
        init = global_variables_initializer()
    with Session(g) as session:
        session.run(init)
        session.run(train)
        np.testing.assert_array_equal(session.run(a), [0.0, 0.0])
        np.testing.assert_array_equal(session.run(b), [3.0])


def test_apply_gradients_with_no_gradient_at_all() -> None:
    a, b = Variable(1.0, name="alpha"), Variable(2.0, name="beta")
    with pytest.raises(ValueError, match=r"^No gradients provided for any variable") as info:
        nn.GradientDescentOptimizer(0.1).apply_gradients([(None, a), (None, b)])
    assert "alpha:0" in str(info.value) and "beta:0" in str(info.value)
    assert float(a) == 1.0 and float(b) == 2.0


def test_apply_gradients_needs_variables() -> None:
    with pytest.raises(TypeError, match="Variable"):
        nn.GradientDescentOptimizer(0.1).apply_gradients(
            [(ef.constant(1.0), ef.constant(2.0))])  # fmt: skip


@pytest.mark.parametrize("pairs", [[(1.0,)], [1.0], [(1.0, Variable(1.0), 2.0)]])
def test_apply_gradients_needs_pairs(pairs: list[object]) -> None:
    with pytest.raises(TypeError, match=r"expected \(gradient, Variable\) pairs, got"):
        nn.GradientDescentOptimizer(0.1).apply_gradients(pairs)  # type: ignore[arg-type]


def test_global_step_is_incremented_in_eager_mode() -> None:
    step = Variable(np.int64(0), trainable=False, name="my_step")
    w = Variable(1.0)
    optimizer = nn.GradientDescentOptimizer(0.1)
    optimizer.apply_gradients([(ef.constant(1.0), w)], global_step=step)
    assert step.numpy() == 1
    optimizer.minimize(lambda: w * 2.0, global_step=step)
    assert step.numpy() == 2
    assert float(w) == pytest.approx(1.0 - 0.1 - 0.2)


def test_global_step_is_incremented_in_graph_mode() -> None:
    g = Graph()
    with g.as_default():
        w = Variable(1.0)
        step = nn.get_or_create_global_step()
        train = nn.GradientDescentOptimizer(0.1).minimize(w * 2.0, global_step=step)
        init = global_variables_initializer()
    with Session(g) as session:
        session.run(init)
        assert session.run(step) == 0
        session.run(train)
        session.run(train)
        assert session.run(step) == 2
        assert session.run(w) == pytest.approx(1.0 - 2 * 0.2)


# --- minimize -------------------------------------------------------------------------------
def test_eager_minimize_needs_a_callable() -> None:
    w = Variable(1.0)
    with pytest.raises(RuntimeError, match="callable") as info:
        nn.GradientDescentOptimizer(0.1).minimize(w * 2.0)
    assert "GradientTape" in str(info.value) or "zero-argument" in str(info.value)
    assert float(w) == 1.0


def test_eager_minimize_defaults_to_the_watched_variables() -> None:
    used, unused = Variable(1.0, name="used"), Variable(5.0, name="unused")
    frozen = Variable(3.0, trainable=False, name="frozen")  # read, but not watched
    nn.GradientDescentOptimizer(0.1).minimize(lambda: used * frozen)
    assert float(used) == pytest.approx(1.0 - 0.1 * 3.0)
    assert float(unused) == 5.0
    assert float(frozen) == 3.0


def test_eager_minimize_with_a_var_list() -> None:
    a, b = Variable(1.0), Variable(1.0)
    nn.GradientDescentOptimizer(0.1).minimize(lambda: a * 2.0 + b * 3.0, var_list=[b])
    assert float(a) == 1.0
    assert float(b) == pytest.approx(0.7)


def test_graph_minimize_defaults_to_the_graphs_trainable_variables() -> None:
    g = Graph()
    with g.as_default():
        used = Variable(1.0, name="used")
        frozen = Variable(3.0, trainable=False, name="frozen")
        train = nn.GradientDescentOptimizer(0.1).minimize(used * frozen)
        init = global_variables_initializer()
    with Session(g) as session:
        session.run(init)
        session.run(train)
        assert session.run(used) == pytest.approx(0.7)
        assert session.run(frozen) == 3.0


# --- the global step ------------------------------------------------------------------------
def test_eager_global_step_is_one_variable() -> None:
    first = nn.get_or_create_global_step()
    assert nn.get_or_create_global_step() is first
    assert first.dtype is ef.int64
    assert first.shape == ()
    assert not first.trainable
    assert first.name == "global_step:0"


def test_graph_global_step_is_one_variable_per_graph() -> None:
    g1, g2 = Graph(), Graph()
    with g1.as_default():
        a = nn.get_or_create_global_step()
        assert nn.get_or_create_global_step() is a
    with g2.as_default():
        b = nn.get_or_create_global_step()
    assert a is not b
    assert a is not nn.get_or_create_global_step()  # eager is another one
    assert nn.get_or_create_global_step(g1) is a  # from outside the graph's block
    assert global_variables(g1) == [a]
    assert a.dtype is ef.int64 and not a.trainable


# --- slots ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "slot_names"),
    [
        (lambda: nn.GradientDescentOptimizer(0.1), []),
        (lambda: nn.MomentumOptimizer(0.1, 0.9), ["momentum"]),
        (lambda: nn.AdamOptimizer(), ["m", "v"]),
        (lambda: nn.RMSPropOptimizer(0.1), ["rms", "momentum"]),
        (lambda: nn.RMSPropOptimizer(0.1, centered=True), ["rms", "momentum", "mg"]),
    ],
    ids=["gd", "momentum", "adam", "rmsprop", "centered"],
)
def test_slots_are_listed_after_a_step_with_the_variables_shapes(make, slot_names) -> None:
    optimizer = make()
    variables = [Variable(v) for v in INITIAL]
    assert optimizer.variables() == []  # made on first use
    optimizer.minimize(lambda: loss_of(variables))
    own = {f"{optimizer.name}/learning_rate:0", f"{optimizer.name}/iterations:0"}  # Keras' two
    assert own <= {v.name for v in optimizer.non_slots().values()}
    slots = optimizer.slots()
    assert sorted((name, index_of(p, variables)) for name, p, _ in slots) == sorted(
        (name, i) for name in slot_names for i in range(2))  # fmt: skip
    for _, primary, slot in slots:
        assert slot.shape == primary.shape
        assert slot.dtype is primary.dtype
        assert not slot.trainable
        assert any(v is slot for v in optimizer.variables())
    assert len(optimizer.variables()) == len(slots) + len(optimizer.non_slots())
    # a second step reuses the slots
    optimizer.minimize(lambda: loss_of(variables))
    assert [s for _, _, s in optimizer.slots()] == [s for _, _, s in slots]


def test_optimizer_variables_do_not_join_the_models_trainable_variables() -> None:
    model = nn.Sequential([nn.Dense(2)])
    x = np.ones((3, 4), np.float32)
    model(x)  # build
    optimizer = nn.AdamOptimizer()
    optimizer.minimize(lambda: ef.reduce_sum(model(x)), var_list=model.trainable_variables)
    assert len(model.trainable_variables) == 2
    assert len(optimizer.variables()) == 2 + 2 + 2 * 2  # iterations, rate, 2 powers, m and v


def test_minimize_with_no_variables_says_so():
    with pytest.raises(ValueError, match="no variables to optimize"):
        nn.GradientDescentOptimizer(0.1).minimize(lambda: ef.constant(1.0) * 2.0)


def test_adagrad_follows_keras_formula_eagerly_and_in_a_graph() -> None:
    """accumulator += g²; variable -= lr · g / √(accumulator + ε), against NumPy."""

    start, scale = np.array([1.0, -2.0]), np.array([3.0, 0.5])
    expected, accumulator = start.copy(), np.full(2, 0.1)
    for _ in range(3):
        g = 2 * scale * expected
        accumulator += g * g
        expected = expected - 0.5 * g / np.sqrt(accumulator + 1e-7)
    v = Variable(start)
    optimizer = nn.Adagrad(0.5)
    for _ in range(3):
        with GradientTape() as tape:
            loss = ef.reduce_sum(scale * v * v)
        optimizer.apply_gradients([(tape.gradient(loss, v), v)])
    np.testing.assert_allclose(v.numpy(), expected, rtol=1e-12)
    assert [name for name, _, _ in optimizer.slots()] == ["accumulator"]
    with Graph().as_default():
        w = Variable(start)
        train = nn.Adagrad(0.5).minimize(ef.reduce_sum(scale * w * w))
        with Session() as session:
            session.run(global_variables_initializer())
            for _ in range(3):
                session.run(train)
            np.testing.assert_allclose(session.run(w), expected, rtol=1e-12)


def test_adagrad_checks_its_hyperparameters() -> None:
    with pytest.raises(InvalidArgumentError, match=r"Adagrad: epsilon must be >= 0, got -1"):
        nn.Adagrad(epsilon=-1.0)
