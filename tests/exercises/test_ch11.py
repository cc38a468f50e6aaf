"""Chapter 11 exercises: models and layers (`exercises/ch11.py`)."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientCheckError, GradientTape, check_gradients
from eagerflow.graph import (
    Graph,
    Session,
    TensorSpec,
    function,
    global_variables_initializer,
    placeholder,
)
from eagerflow.tensor.errors import EagerflowError
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


# --- LayerNormalization (stretch) -----------------------------------------------------------------
def layer_norm_reference(x, gamma, beta, epsilon=1e-3):
    """NumPy, in float64: each example normalized over its last axis, then scaled and shifted."""
    x = np.asarray(x, np.float64)
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = np.square(centred).mean(axis=-1, keepdims=True)
    return centred / np.sqrt(variance + epsilon) * gamma + beta


def hidden_examples(shape, seed):
    """Examples of very different sizes: some near 0.01, where epsilon matters, some near 10."""
    rng = np.random.default_rng(seed)
    scales = 10.0 ** rng.uniform(-2, 1, size=(*shape[:-1], 1))
    offsets = rng.normal(scale=3.0, size=(*shape[:-1], 1))
    return (rng.normal(size=shape) * scales + offsets).astype(np.float32)


def hidden_affine(features, seed):
    rng = np.random.default_rng(seed + 100)
    return (rng.normal(size=features).astype(np.float32),
            rng.normal(size=features).astype(np.float32))  # fmt: skip


@pytest.mark.parametrize("shape", [(6, 5), (3, 4, 7), (2, 3, 2, 4)])
def test_layer_norm_matches_numpy_on_hidden_inputs(chapter, shape):
    seed = len(shape)
    x = hidden_examples(shape, seed)
    layer = chapter.LayerNormalization(name=f"norm_test_{len(shape)}")
    assert layer.variables == [], "no variables before the first call: build makes them"
    layer.build((None, *shape[1:]))  # what a first call does, before calling
    features = shape[-1]
    names = [v.name for v in layer.variables]
    want_names = [f"{layer.name}/gamma:0", f"{layer.name}/beta:0"]
    assert names == want_names, (
        f"build should make gamma then beta with add_weight: expected {want_names}, got {names}"
    )
    shapes = [v.shape for v in layer.variables]
    assert shapes == [(features,)] * 2, (
        f"one entry per feature (the last axis, {features}) for gamma and beta, got {shapes}"
    )
    assert all(v.trainable for v in layer.variables), "gamma and beta must be trainable"
    ones, zeros = np.ones(features), np.zeros(features)
    rule = ("each example normalized over its last axis, with the biased variance and epsilon "
            "1e-3 under the root")  # fmt: skip
    np.testing.assert_allclose(
        np.asarray(layer(x)), layer_norm_reference(x, ones, zeros), rtol=1e-4, atol=1e-4,
        err_msg=f"a new layer (gamma 1, beta 0) on hidden inputs of shape {shape}: {rule}",
    )  # fmt: skip
    gamma, beta = hidden_affine(features, seed)
    layer.gamma.assign(gamma)
    layer.beta.assign(beta)
    got = np.asarray(layer(x))
    assert got.shape == shape, f"expected outputs of the inputs' shape {shape}, got {got.shape}"
    np.testing.assert_allclose(
        got, layer_norm_reference(x, gamma, beta), rtol=1e-4, atol=1e-4,
        err_msg=f"hidden gamma and beta, hidden inputs of shape {shape}: {rule}",
    )  # fmt: skip
    alone = np.asarray(layer(x[:1]))
    np.testing.assert_allclose(
        alone, got[:1], rtol=1e-4, atol=1e-4,
        err_msg="the first example alone should give the outputs it had in the batch: each "
        "example is normalized over its own features, not over the batch",
    )  # fmt: skip


def test_layer_norm_is_unmoved_by_a_large_offset(chapter):
    rng = np.random.default_rng(11)
    x = rng.normal(size=(8, 16)).astype(np.float32)
    far = x + np.float32(10_000.0)  # float32 keeps about three decimals of x here
    layer = chapter.LayerNormalization(name="norm_offset")
    want = layer_norm_reference(far, 1.0, 0.0)  # (exact, from the same float32 values)
    got = np.asarray(layer(far))
    assert np.all(np.isfinite(got)), (
        "x + 10000 gave non-finite outputs: a variance computed as mean(x²) − mean² can come out "
        "negative in float32; centre first, then square"
    )
    np.testing.assert_allclose(
        got, want, atol=5e-3,
        err_msg="x + 10000 should normalize to what x does; mean(x²) − mean² subtracts two "
        "numbers near 10⁸ and keeps no digit of the variance: centre first",
    )  # fmt: skip


def test_layer_norm_gradients_train_it_inside_a_model(chapter):
    x = hidden_examples((5, 6), seed=21)
    gamma, beta = hidden_affine(6, seed=21)
    upstream = np.random.default_rng(22).normal(size=(5, 6))

    class Net(nn.Model):
        def __init__(self, norm):
            super().__init__(name="norm_net")
            self.norm = norm

        def call(self, inputs):
            return self.norm(inputs)

    model = Net(chapter.LayerNormalization(name="norm_grad"))
    inputs = ef.constant(x)
    model(inputs)
    paths = [path for path, _ in model.variable_paths()]
    assert paths == ["norm/gamma", "norm/beta"], (
        f"the model should find its layer's variables, norm/gamma and norm/beta; got {paths}"
    )
    model.norm.gamma.assign(gamma)
    model.norm.beta.assign(beta)
    with GradientTape() as tape:
        tape.watch(inputs)
        loss = ef.reduce_sum(model(inputs) * upstream.astype(np.float32))
    grads = tape.gradient(loss, [inputs, *model.trainable_variables])
    missing = [n for n, g in zip(["x", "gamma", "beta"], grads, strict=True) if g is None]
    assert not missing, f"the tape found no gradient for {missing}: compute with ops on them"
    # by hand: x̂ = (x − mean) / σ; dx̂ = g·gamma; dx = (dx̂ − mean(dx̂) − x̂·mean(dx̂·x̂)) / σ
    x64 = x.astype(np.float64)
    centred = x64 - x64.mean(axis=-1, keepdims=True)
    sigma = np.sqrt(np.square(centred).mean(axis=-1, keepdims=True) + 1e-3)
    normalized = centred / sigma
    d_normalized = upstream * gamma
    d_x = (
        d_normalized
        - d_normalized.mean(axis=-1, keepdims=True)
        - normalized * (d_normalized * normalized).mean(axis=-1, keepdims=True)
    ) / sigma
    wants = {"x": d_x, "gamma": (upstream * normalized).sum(0), "beta": upstream.sum(0)}
    for (name, want), got in zip(wants.items(), grads, strict=True):
        np.testing.assert_allclose(
            got.numpy(), want, rtol=1e-3, atol=1e-3,
            err_msg=f"the gradient for {name} (the mean and variance depend on x too: a "
            "gradient flows through them)",
        )  # fmt: skip
    nn.GradientDescentOptimizer(0.1).apply_gradients(
        zip(grads[1:], model.trainable_variables, strict=True)
    )
    np.testing.assert_allclose(model.norm.gamma.numpy(), gamma - 0.1 * wants["gamma"], rtol=1e-3,
                               atol=1e-3, err_msg="gamma after one step of training")  # fmt: skip


def test_layer_norm_runs_on_a_placeholder_in_a_session(chapter):
    features = 5
    gamma, beta = hidden_affine(features, seed=31)
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (None, None, features), name="x")
        layer = chapter.LayerNormalization(name="norm_graph")
        try:
            y = layer(x)
        except (EagerflowError, TypeError, ValueError) as e:  # (NumPy on a placeholder: TypeError)
            pytest.fail(f"calling the layer on a placeholder (None, None, {features}) raised "
                        f"{type(e).__name__}: {e}\n(call must add ops to the graph: no NumPy, no "
                        ".numpy(), and no size but the last may be known)")  # fmt: skip
        init = global_variables_initializer()
        trained = [layer.gamma.assign(gamma), layer.beta.assign(beta)]  # as training would
    assert tuple(y.shape) == (None, None, features), (
        f"expected a symbolic (None, None, {features}) output, got {y!r}"
    )
    with Session(graph) as session:
        session.run(init)
        session.run(trained)
        for seed, shape in enumerate([(2, 3, features), (4, 1, features)]):
            values = hidden_examples(shape, 32 + seed)
            np.testing.assert_allclose(
                session.run(y, {x: values}), layer_norm_reference(values, gamma, beta),
                rtol=1e-4, atol=1e-4, err_msg=f"a Session running the graph on a {shape} feed",
            )  # fmt: skip


def test_layer_norm_is_traced_once_and_reads_its_variables(chapter):
    features = 5
    gamma, beta = hidden_affine(features, seed=31)
    traced = chapter.LayerNormalization(name="norm_function")
    traces = []

    def normalize(inputs):
        traces.append(inputs.shape)
        return traced(inputs)

    normalize_fn = function(normalize, input_signature=[TensorSpec((None, None, features))])
    for step, shape in enumerate([(2, 3, features), (1, 4, features), (3, 2, features)]):
        if step == 1:  # the trace must read the variables, not copy their values in
            traced.gamma.assign(gamma)
            traced.beta.assign(beta)
        values = hidden_examples(shape, 40 + step)
        want = layer_norm_reference(values, *((gamma, beta) if step else (1.0, 0.0)))
        np.testing.assert_allclose(
            normalize_fn(values).numpy(), want, rtol=1e-4, atol=1e-4,
            err_msg=f"the traced function, call {step + 1} ({shape}), after gamma and beta "
            f"{'were assigned' if step else 'were made'}",
        )  # fmt: skip
    assert len(traces) <= 2, (  # a first call that builds the layer runs twice, as in TF
        f"one trace serves every (None, None, {features}) input, got {len(traces)}"
    )


def test_layer_norm_lets_sequential_build_before_any_call(chapter):
    model = nn.Sequential([nn.Dense(6, input_shape=(3,)),
                           chapter.LayerNormalization(name="norm_seq"), nn.Dense(2)])  # fmt: skip
    paths = [f"{path} {variable.shape}" for path, variable in model.variable_paths()]
    want = ["layers/0/kernel (3, 6)", "layers/0/bias (6,)", "layers/1/gamma (6,)",
            "layers/1/beta (6,)", "layers/2/kernel (6, 2)", "layers/2/bias (2,)"]  # fmt: skip
    assert paths == want, (
        f"Sequential with an input shape should build every layer before any call, passing "
        f"each layer's output shape (compute_output_shape) to the next; got {paths}"
    )
    out = model(np.ones((4, 3), np.float32))
    assert out.shape == (4, 2), f"got {out.shape}"
