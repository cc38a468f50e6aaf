"""BatchNormalization: batch statistics while training and moving ones otherwise, against
NumPy (and PyTorch where installed); the moving averages move eagerly, in a ``function`` (by
its automatic control dependencies), compiled, and in a Session graph when its ``updates`` run;
gradients to second order; checkpoints keep the moving statistics."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, check_gradients
from eagerflow.graph import (
    Graph,
    Session,
    control_dependencies,
    function,
    global_variables_initializer,
    placeholder,
)
from eagerflow.tensor.errors import AxisError, InvalidArgumentError, ShapeError

RNG = np.random.default_rng(0)
X = (RNG.standard_normal((4, 3, 5, 2)) * [1.0, 3.0] + [0.5, -2.0]).astype(np.float32)  # NHWC
AXES = (0, 1, 2)


def normalized(x, mean, variance, gamma=1.0, beta=0.0, epsilon=1e-3) -> np.ndarray:
    return gamma * (x - mean) / np.sqrt(variance + epsilon) + beta


def moved(moving: np.ndarray, batch: np.ndarray, momentum: float) -> np.ndarray:
    return moving * momentum + batch * (1 - momentum)


# --- variables --------------------------------------------------------------------------------
def test_gamma_and_beta_train_and_the_moving_statistics_do_not() -> None:
    bn = nn.BatchNormalization(input_shape=(3, 5, 2))
    assert bn.name == "batch_normalization"
    assert bn.variables == [bn.gamma, bn.beta, bn.moving_mean, bn.moving_variance]  # Keras order
    assert bn.trainable_variables == [bn.gamma, bn.beta]
    assert bn.non_trainable_variables == [bn.moving_mean, bn.moving_variance]
    assert all(v.shape == (2,) for v in bn.variables)
    for variable, value in zip(bn.variables, [1.0, 0.0, 0.0, 1.0], strict=True):
        np.testing.assert_array_equal(variable.numpy(), np.full(2, value))
    bare = nn.BatchNormalization(center=False, scale=False, input_shape=(3,))
    assert bare.variables == [bare.moving_mean, bare.moving_variance]
    lines: list[str] = []
    nn.Sequential([nn.Dense(4, input_shape=(3,)), nn.BatchNormalization()]).summary(lines.append)
    # Keras's counts: the Dense 3·4 + 4, the BatchNormalization 4 of each of its 4 variables
    assert {"Total params: 32", "Trainable params: 24", "Non-trainable params: 8"} <= set(lines)


# --- values -----------------------------------------------------------------------------------
def test_training_uses_the_batch_statistics_and_moves_the_moving_ones() -> None:
    bn = nn.BatchNormalization(momentum=0.9, beta_initializer="ones")
    bn.build(X.shape)
    bn.gamma.assign(np.array([2.0, 0.5], np.float32))
    mean, variance = X.mean(axis=AXES), X.var(axis=AXES)  # the biased variance
    out = bn(X, training=True).numpy()
    np.testing.assert_allclose(out, normalized(X, mean, variance, [2.0, 0.5], 1.0), atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), moved(0.0, mean, 0.9), rtol=1e-5)
    np.testing.assert_allclose(bn.moving_variance.numpy(), moved(1.0, variance, 0.9), rtol=1e-5)
    assert bn.updates == []  # eagerly they ran at once: nothing to keep


def test_inference_uses_the_moving_statistics_and_changes_nothing() -> None:
    bn = nn.BatchNormalization(momentum=0.5)
    for _ in range(3):
        bn(X, training=True)
    moving = [bn.moving_mean.numpy(), bn.moving_variance.numpy()]
    for out in (bn(X), bn(X, training=False)):  # training=False is the default
        np.testing.assert_allclose(out.numpy(), normalized(X, *moving), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(bn.moving_mean.numpy(), moving[0])
    np.testing.assert_array_equal(bn.moving_variance.numpy(), moving[1])


def test_another_axis_and_two_dimensional_inputs() -> None:
    nchw = X.transpose(0, 3, 1, 2)
    bn = nn.BatchNormalization(axis=1)  # channels first
    out = bn(nchw, training=True).numpy()
    mean, variance = nchw.mean(axis=(0, 2, 3)), nchw.var(axis=(0, 2, 3))
    shape = (1, 2, 1, 1)
    expected = normalized(nchw, mean.reshape(shape), variance.reshape(shape))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.01 * mean, rtol=1e-5)
    features = X.reshape(-1, 2)  # (batch, features), as after a Dense layer
    dense_bn = nn.BatchNormalization()
    np.testing.assert_allclose(dense_bn(features, training=True).numpy(),
                               normalized(features, features.mean(0), features.var(0)),
                               rtol=1e-5, atol=1e-5)  # fmt: skip


def test_matches_torch_batch_norm_2d() -> None:
    """PyTorch's momentum is Keras's 1 - momentum; its running variance moves towards the
    unbiased n/(n-1) · variance, ours (as Keras's) towards the biased one."""
    torch = pytest.importorskip("torch")
    bn = nn.BatchNormalization(momentum=0.8, epsilon=1e-5)
    reference = torch.nn.BatchNorm2d(2, eps=1e-5, momentum=0.2)
    nchw = torch.tensor(X).permute(0, 3, 1, 2)
    expected = reference(nchw).detach().permute(0, 2, 3, 1).numpy()
    np.testing.assert_allclose(bn(X, training=True).numpy(), expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(bn.moving_mean.numpy(), reference.running_mean.numpy(), rtol=1e-5)
    n = X.size // 2  # values per channel
    unbiased = 0.8 + (bn.moving_variance.numpy() - 0.8) * n / (n - 1)
    np.testing.assert_allclose(unbiased, reference.running_var.numpy(), rtol=1e-5)
    reference.eval()
    inference = reference(nchw).detach().permute(0, 2, 3, 1).numpy()
    bn.moving_variance.assign(reference.running_var.numpy())
    np.testing.assert_allclose(bn(X).numpy(), inference, rtol=1e-4, atol=1e-5)


# --- where the update runs --------------------------------------------------------------------
def test_in_a_function_automatic_control_dependencies_run_the_update() -> None:
    for jit in (False, True):
        bn = nn.BatchNormalization(momentum=0.5)
        step = function(lambda x, bn=bn: bn(x, training=True), jit_compile=jit)
        out = step(X).numpy()  # nothing fetches the assignments: the function runs them
        step(X)
        mean, variance = X.mean(axis=AXES), X.var(axis=AXES)
        np.testing.assert_allclose(out, normalized(X, mean, variance), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(bn.moving_mean.numpy(), 0.75 * mean, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(bn.moving_variance.numpy(), moved(moved(1.0, variance, 0.5),
                                   variance, 0.5), rtol=1e-5)  # fmt: skip
        assert bn.updates == []
        infer = function(lambda x, bn=bn: bn(x), jit_compile=jit)
        moving = [bn.moving_mean.numpy(), bn.moving_variance.numpy()]
        np.testing.assert_allclose(infer(X).numpy(), normalized(X, *moving), rtol=1e-5, atol=1e-5)


def session_model() -> tuple[Any, ...]:
    """A graph with a Dense + BatchNormalization model on a placeholder of unknown batch size,
    its training loss, and a train op made after the model's update ops, TF 1.x's idiom."""
    model = nn.Sequential([nn.Dense(3), nn.BatchNormalization(momentum=0.5)])
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (None, 4))
        loss = ef.reduce_mean(ef.square(model(x, training=True)))
        with control_dependencies(model.updates):
            train = nn.GradientDescentOptimizer(0.1).minimize(loss)
        init = global_variables_initializer()
    return graph, model, x, loss, train, init


def test_in_a_session_the_updates_run_only_when_asked_for() -> None:
    graph, model, x, loss, train, init = session_model()
    bn = model.layers[1]
    assert len(bn.updates) == 2 and model.updates == bn.updates  # the model collects them
    assert {op.type for op in bn.updates} == {"AssignSubVariableOp"}
    data = RNG.standard_normal((6, 4)).astype(np.float32)
    with Session(graph) as session:
        session.run(init)
        session.run(loss, {x: data})  # as in TensorFlow 1.x: no update without asking
        np.testing.assert_array_equal(session.run(bn.moving_mean), np.zeros(3))
        kernel, bias = session.run([model.layers[0].kernel, model.layers[0].bias])
        session.run(train, {x: data})  # the train op waits for the updates
        dense = data @ kernel + bias
        np.testing.assert_allclose(session.run(bn.moving_mean), 0.5 * dense.mean(0), atol=1e-6)
        np.testing.assert_allclose(session.run(bn.moving_variance),
                                   moved(1.0, dense.var(0), 0.5), rtol=1e-5)  # fmt: skip
        session.run(bn.updates, {x: data[:2]})  # or run them by themselves, any batch size
        assert not np.allclose(session.run(bn.moving_mean), 0.5 * dense.mean(0))


def test_in_a_session_training_false_uses_the_moving_statistics() -> None:
    bn = nn.BatchNormalization()
    bn(X, training=True)  # eager variables, moved once
    moving = [bn.moving_mean.numpy(), bn.moving_variance.numpy()]
    graph = Graph()
    with graph.as_default():
        p = placeholder(ef.float32, (None, 3, 5, 2))
        out = bn(p)
    assert out.shape == (None, 3, 5, 2) and bn.updates == []
    with Session(graph) as session, Session(graph, jit_compile=True) as compiled:
        for s in (session, compiled):
            np.testing.assert_allclose(s.run(out, {p: X}), normalized(X, *moving), atol=1e-5)


def test_updates_are_those_of_the_last_graph_the_layer_was_called_in() -> None:
    bn = nn.BatchNormalization()
    for _ in range(2):
        graph = Graph()
        with graph.as_default():
            bn(placeholder(ef.float32, (None, 2)), training=True)
            bn(placeholder(ef.float32, (None, 2)), training=True)  # a second call adds two
        assert len(bn.updates) == 4 and all(op.graph is graph for op in bn.updates)


# --- gradients --------------------------------------------------------------------------------
@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("training", [True, False])
def test_gradients_to_the_input_gamma_and_beta(order: int, training: bool) -> None:
    """``check_gradients`` against central differences; gamma and beta are the checker's
    tensors standing in for the layer's variables during the call."""
    bn = nn.BatchNormalization(momentum=0.0, epsilon=0.1)
    bn.dtype = ef.float64  # its variables in float64 (what dtype="float64" does in Keras)
    x = np.random.default_rng(1).standard_normal((3, 2, 2, 2)) * [1.0, 2.0]
    bn(x, training=True)  # build; the moving statistics become those of x (momentum 0)
    variables = bn.gamma, bn.beta

    def layer_of(inputs: Any, gamma: Any, beta: Any) -> Any:
        bn.gamma, bn.beta = gamma, beta
        try:
            return bn(inputs, training=training)
        finally:
            bn.gamma, bn.beta = variables

    check_gradients(layer_of, [x, [1.5, -0.5], [0.2, 0.3]], order=order)


def test_training_gradients_through_a_function_equal_the_tapes() -> None:
    model = nn.Sequential([nn.Conv2D(3, 2, input_shape=(3, 5, 2)), nn.BatchNormalization(),
                           nn.Flatten(), nn.Dense(1)])  # fmt: skip

    def loss(x: Any) -> Any:
        return ef.reduce_sum(ef.square(model(x, training=True)))

    results = []
    for run in (loss, function(loss)):
        with GradientTape() as tape:
            value = run(X)
        results.append(tape.gradient(value, model.trainable_variables))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
    # each of the two calls moved the statistics once
    mean = model.layers[0](X).numpy().mean(axis=AXES)
    np.testing.assert_allclose(model.layers[1].moving_mean.numpy(), moved(moved(0, mean, 0.99),
                               mean, 0.99), rtol=1e-4)  # fmt: skip


# --- training and checkpoints -----------------------------------------------------------------
def cnn() -> nn.Sequential:
    return nn.Sequential([
        nn.Conv2D(4, 2, input_shape=(3, 5, 2)),
        nn.BatchNormalization(),
        nn.MaxPool2D(),
        nn.Flatten(),
        nn.Dense(2),
    ])  # fmt: skip


def test_fit_moves_the_moving_statistics() -> None:
    model = cnn()
    y = np.array([0, 1, 0, 1])
    nn.fit(model, X, y, loss="sparse_softmax_cross_entropy", optimizer=nn.AdamOptimizer(0.01),
           epochs=2, batch_size=2, verbose=False)  # fmt: skip
    bn = model.layers[1]
    assert not np.allclose(bn.moving_mean.numpy(), 0.0)
    assert not np.allclose(bn.moving_variance.numpy(), 1.0)


def test_a_checkpoint_keeps_the_moving_statistics(tmp_path: Path) -> None:
    model = cnn()
    for _ in range(3):
        nn.AdamOptimizer(0.01).minimize(lambda: ef.reduce_sum(model(X, training=True)),
                                        var_list=model.trainable_variables)  # fmt: skip
    path = nn.Checkpoint(model=model).save(tmp_path / "ckpt")
    fresh = cnn()  # built from its input shape: restored at once
    nn.Checkpoint(model=fresh).restore(path)
    for a, b in zip(fresh.variables, model.variables, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.allclose(fresh.layers[1].moving_mean.numpy(), 0.0)
    np.testing.assert_array_equal(fresh(X).numpy(), model(X).numpy())


# --- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"momentum": 1.5}, "momentum must be in [0, 1], got 1.5"),
    ({"momentum": -0.1}, "momentum must be in [0, 1]"),
    ({"epsilon": 0.0}, "epsilon must be > 0, got 0.0"),
    ({"epsilon": float("nan")}, "epsilon must be > 0"),
])  # fmt: skip
def test_bad_hyperparameters(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=re.escape(f"BatchNormalization: {message}")):
        nn.BatchNormalization(**kwargs)


def test_bad_axes_and_shapes_name_the_layer() -> None:
    with pytest.raises(AxisError, match=r"'bn': axis 4 is out of range .* \(None, 3, 5, 2\)"):
        nn.BatchNormalization(axis=4, name="bn", input_shape=(3, 5, 2))
    unknown = r"'bn_1': the size along axis -1 must be known"
    with Graph().as_default(), pytest.raises(ShapeError, match=unknown):
        nn.BatchNormalization(name="bn_1")(placeholder(ef.float32, (None, 3, None)))
    with pytest.raises(ShapeError, match="not the batch's"):
        nn.BatchNormalization(axis=0)(X)
    with pytest.raises(TypeError, match="axis must be an int"):
        nn.BatchNormalization(axis=(1, 2))  # type: ignore[arg-type]
    bn = nn.BatchNormalization(name="bn_2")
    bn(X)
    message = ("BatchNormalization 'bn_2' was built for inputs of rank 4 with 2 channels along "
               "axis -1, but is called on inputs of shape (4, 3, 5, 3)")  # fmt: skip
    with pytest.raises(ShapeError, match=re.escape(message)):
        bn(np.zeros((4, 3, 5, 3), np.float32))
    with pytest.raises(ShapeError, match=r"rank 4 .* \(4, 2\)"):
        bn(np.zeros((4, 2), np.float32))
