"""Chapter 11 exercises: models and layers (`exercises/ch11.py`)."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientCheckError, GradientTape, check_gradients
from eagerflow.graph import Graph, Session, global_variables_initializer, placeholder
from eagerflow.tensor.execution import execute, recording

pytestmark = pytest.mark.ch11


# --- FeatureScale ---------------------------------------------------------------------------------
def test_feature_scale_builds_gamma_and_beta_on_first_call(chapter):
    layer = chapter.FeatureScale(name="scale_test")
    assert layer.variables == [], "no variables before the first call: build makes them"
    x = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
    y = layer(x)
    names = [v.name for v in layer.variables]
    assert names == ["scale_test/gamma:0", "scale_test/beta:0"], (
        f"expected variables [gamma, beta] made with add_weight, got {names}"
    )
    shapes = [v.shape for v in layer.variables]
    assert shapes == [(3,), (3,)], f"one entry per feature: expected (3,) twice, got {shapes}"
    assert all(v.trainable for v in layer.variables), "gamma and beta must be trainable"
    np.testing.assert_allclose(np.asarray(y), x, err_msg="a new FeatureScale is the identity")
    layer.gamma.assign([1.0, 2.0, -1.0])
    layer.beta.assign([0.0, 0.5, 1.0])
    want = x * [1.0, 2.0, -1.0] + [0.0, 0.5, 1.0]
    got = np.asarray(layer(x))
    np.testing.assert_allclose(got, want, err_msg=f"expected x·gamma + beta = {want}, got {got}")
    with GradientTape() as tape:
        total = ef.reduce_sum(layer(x))
    d_gamma, d_beta = tape.gradient(total, [layer.gamma, layer.beta])
    np.testing.assert_allclose(
        np.asarray(d_gamma),
        x.sum(axis=0),
        err_msg="d Σ(x·gamma + beta) / d gamma = Σ over the batch of x",
    )
    np.testing.assert_allclose(np.asarray(d_beta), [2.0, 2.0, 2.0])


def test_feature_scale_works_on_a_placeholder(chapter):
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (None, 4), name="x")
        layer = chapter.FeatureScale(name="scale_graph")
        y = layer(x)
        init = global_variables_initializer()
    assert y.shape == (None, 4), f"expected a symbolic (None, 4) output, got {y!r}"
    values = np.arange(8, dtype=np.float32).reshape(2, 4)
    with Session(graph) as session:
        session.run(init)
        got = session.run(y, {x: values})
    np.testing.assert_allclose(got, values, err_msg="a new FeatureScale is the identity")


# --- Residual -------------------------------------------------------------------------------------
def test_residual_tracks_its_blocks_and_adds_each_output(chapter):
    ef.set_seed(9)
    model = chapter.Residual(4, depth=3)
    x = np.random.default_rng(0).normal(size=(5, 4)).astype(np.float32)
    got = np.asarray(model(x))
    paths = [path for path, _ in model.variable_paths()]
    want_paths = [f"blocks/{i}/{w}" for i in range(3) for w in ("kernel", "bias")]
    assert paths == want_paths, (
        f"expected the blocks in a list self.blocks, variables {want_paths}; got {paths}"
    )
    assert model.count_params() == 3 * (4 * 4 + 4), f"got {model.count_params()} parameters"
    expected = x.astype(np.float64)
    for i in range(3):
        kernel, bias = (v.numpy() for v in model.variables[2 * i : 2 * i + 2])
        expected = expected + np.maximum(expected @ kernel + bias, 0.0)
    np.testing.assert_allclose(
        got, expected, rtol=1e-5, err_msg="each block: x ← x + relu(x @ kernel + bias)"
    )


# --- FusedDense ---------------------------------------------------------------------------------
class OpNames:
    """A recorder on the seam: the name of every op that runs."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def record(self, op, inputs, attrs, outputs) -> None:
        self.names.append(op.name)


def ops_run(fn):
    """The names of the ops ``fn()`` runs (ReadVariableOp left out), and its result."""
    recorder = OpNames()
    with recording(recorder):
        result = fn()
    return [n for n in recorder.names if n != "ReadVariableOp"], result


def dense_data(seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(5, 3)).astype(dtype)
    kernel = rng.normal(size=(3, 4)).astype(dtype)
    bias = rng.normal(size=4).astype(dtype)
    return x, kernel, bias


def test_fused_dense_kernel_does_three_ops_work_on_a_new_array(chapter):
    x, kernel, bias = dense_data()
    copies = [a.copy() for a in (x, kernel, bias)]
    for relu in (False, True):
        want = x @ kernel + bias
        if relu:
            want = np.maximum(want, 0)
        got = chapter.fused_dense_kernel(x, kernel, bias, relu)
        assert isinstance(got, np.ndarray) and got.dtype == np.float32, (
            f"expected a float32 array, got {type(got).__name__} {getattr(got, 'dtype', '')}"
        )
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"relu={relu}")
        for name, before, after in zip(("x", "kernel", "bias"), copies, (x, kernel, bias),
                                       strict=True):  # fmt: skip
            np.testing.assert_array_equal(after, before, err_msg=f"the kernel changed {name}")
        assert not any(np.shares_memory(got, a) for a in (x, kernel, bias)), (
            "the result must be a new array, not one of the inputs"
        )


def test_fused_dense_is_registered_once(chapter):
    from eagerflow.autodiff.registry import GRADIENTS
    from eagerflow.tensor.registry import OPS

    chapter.register_fused_dense()
    assert "FusedDense" in OPS, "no op named 'FusedDense' in the registry"
    assert GRADIENTS.get("FusedDense") is not None, "no gradient rule for 'FusedDense'"
    op, rule = OPS["FusedDense"], GRADIENTS["FusedDense"]
    chapter.register_fused_dense()
    assert OPS["FusedDense"] is op and GRADIENTS["FusedDense"] is rule, (
        "a second call should leave the op and its rule as they are"
    )


def fused(x, kernel, bias, relu):
    return execute("FusedDense", (x, kernel, bias), {"relu": relu})[0]


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("order", [1, 2])
def test_fused_dense_gradients_pass_the_checker(chapter, relu, order):
    chapter.register_fused_dense()
    x, kernel, bias = dense_data(seed=order, dtype=np.float64)
    try:
        check_gradients(lambda *ins: fused(*ins, relu), [x, kernel, bias], order=order)
    except GradientCheckError as e:
        pytest.fail(f"check_gradients(FusedDense, relu={relu}, order={order}):\n{e}")


def test_fused_dense_gradient_skips_the_product_nobody_needs(chapter):
    chapter.register_fused_dense()
    x, kernel, bias = dense_data()
    w, b = ef.constant(kernel), ef.constant(bias)
    with GradientTape() as tape:
        tape.watch([w, b])
        y = ef.reduce_sum(fused(ef.constant(x), w, b, True))
    names, (dw, db) = ops_run(lambda: tape.gradient(y, [w, b]))
    assert names.count("MatMul") == 1, (
        f"x is data (no gradient asked for), so only dW = xᵀ g needs a matrix product; the "
        f"backward pass ran {names}"
    )
    g = (x @ kernel + bias > 0).astype(np.float32)
    np.testing.assert_allclose(dw.numpy(), x.T @ g, rtol=1e-5, err_msg="dW")
    np.testing.assert_allclose(db.numpy(), g.sum(0), rtol=1e-5, err_msg="db")


@pytest.mark.parametrize("activation", ["relu", None, "tanh"])
def test_fused_dense_layer_matches_dense_in_fewer_ops(chapter, activation):
    x = dense_data()[0]
    dense = nn.Dense(4, activation)
    dense(x)
    layer = chapter.FusedDense(4, activation)
    layer(x)
    for mine, theirs in zip(layer.variables, dense.variables, strict=True):
        mine.assign(theirs)
    with GradientTape(persistent=True) as tape:
        want = dense(x)
        names, got = ops_run(lambda: layer(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6,
                               err_msg=f"FusedDense(4, {activation!r}) vs Dense")  # fmt: skip
    expected = ["FusedDense"] + (["Tanh"] if activation == "tanh" else [])
    assert names == expected, f"FusedDense(4, {activation!r}) should run {expected}, ran {names}"
    grads = tape.gradient(got, layer.variables)
    wanted = tape.gradient(want, dense.variables)
    for variable, g, w in zip(layer.variables, grads, wanted, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"gradient of {variable.name}")  # fmt: skip


def test_fused_dense_without_a_bias_is_dense(chapter):
    x = dense_data()[0]
    layer = chapter.FusedDense(4, "relu", use_bias=False)
    layer(x)  # (the first call builds the kernel: a RandomUniform op)
    names, y = ops_run(lambda: layer(x))
    assert names == ["MatMul", "Relu"], f"without a bias there is nothing to fuse, ran {names}"
    assert len(layer.variables) == 1 and y.shape == (5, 4)


def test_fused_dense_works_in_a_graph(chapter):
    x = dense_data()[0]
    graph = Graph()
    with graph.as_default():
        ef.set_seed(3)
        layer = chapter.FusedDense(4, "relu")
        inputs = placeholder(ef.float32, (None, 3), name="x")
        outputs = layer(inputs)
        init = global_variables_initializer()
    types = [o.type for o in graph.get_operations()]
    assert "FusedDense" in types and "MatMul" not in types, f"the graph holds {types}"
    assert outputs.shape == (None, 4), f"the static shape should be (None, 4), got {outputs.shape}"
    with Session(graph) as session:
        session.run(init)
        got = session.run(outputs, {inputs: x})
        kernel, bias = session.run(layer.variables)
    np.testing.assert_allclose(got, np.maximum(x @ kernel + bias, 0), rtol=1e-5, atol=1e-6)
