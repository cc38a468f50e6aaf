"""Layers and models: attribute tracking, Dense/Flatten/Dropout/Sequential, summary(),
initializers, and one model object working in eager mode and in graph mode."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, Session, global_variables_initializer, placeholder
from eagerflow.nn import initializers
from eagerflow.tensor.errors import InvalidArgumentError, ShapeError


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


# --- tracking -------------------------------------------------------------------------------
class Block(nn.Layer):
    def __init__(self) -> None:
        super().__init__()
        self.w = Variable(np.ones((2, 2), np.float32), name="block_w")
        self.b = Variable(np.zeros(2, np.float32), name="block_b")


class Tree(nn.Model):
    """Variables, a layer, a list and a dict, a non-trainable variable and a repeat."""

    def __init__(self) -> None:
        super().__init__()
        self.first = Variable(1.0, name="first")
        self.block = Block()
        self.parts = [Variable(2.0, name="list0"), Block()]
        self.table = {"z": Variable(3.0, name="dict_z"), "a": Variable(4.0, name="dict_a")}
        self.counter = Variable(0, trainable=False, name="counter")
        self.again = self.first  # the same variable assigned twice
        self.not_tracked = [1, "two", np.zeros(3)]  # plain data is ignored


def test_variables_are_depth_first_in_attribute_assignment_order() -> None:
    tree = Tree()
    expected = [
        tree.first,
        tree.block.w, tree.block.b,
        tree.parts[0], tree.parts[1].w, tree.parts[1].b,
        tree.table["z"], tree.table["a"],  # dict insertion order, not sorted keys
        tree.counter,
    ]  # fmt: skip
    assert tree.variables == expected
    assert len(tree.variables) == len(set(tree.variables))  # `again` did not add `first` twice


def test_trainable_and_non_trainable_variables() -> None:
    tree = Tree()
    assert tree.non_trainable_variables == [tree.counter]
    assert tree.trainable_variables == [v for v in tree.variables if v is not tree.counter]


def test_variable_paths_are_attribute_paths() -> None:
    tree = Tree()
    paths = [path for path, _ in tree.variable_paths()]
    assert paths == [
        "first",
        "block/w", "block/b",
        "parts/0", "parts/1/w", "parts/1/b",
        "table/z", "table/a",
        "counter",
        "again",
    ]  # fmt: skip
    assert dict(tree.variable_paths())["again"] is tree.first


def test_tracked_lists_layers_and_variables_but_not_plain_data() -> None:
    tree = Tree()
    tracked = dict(tree.tracked())
    assert tracked["block"] is tree.block
    assert tracked["parts/1"] is tree.parts[1]
    assert not any(path.startswith("not_tracked") for path in tracked)


def test_reassigning_an_attribute_keeps_its_first_position() -> None:
    """Python dicts keep the position of a key on update: order is *first* assignment."""

    class Two(nn.Layer):
        def __init__(self) -> None:
            super().__init__()
            self.a = Variable(1.0)
            self.b = Variable(2.0)
            self.a = Variable(3.0)

    two = Two()
    assert [float(v) for v in two.variables] == [3.0, 2.0]


def test_sequential_variable_order() -> None:
    model = nn.Sequential([nn.Dense(4), nn.Dense(2)])
    model(np.zeros((1, 3), np.float32))
    first, second = model.layers
    assert model.variables == [first.kernel, first.bias, second.kernel, second.bias]
    assert [p for p, _ in model.variable_paths()] == [
        "layers/0/kernel", "layers/0/bias", "layers/1/kernel", "layers/1/bias",
    ]  # fmt: skip


def test_a_shared_layer_counts_its_variables_once() -> None:
    dense = nn.Dense(3)
    model = nn.Sequential([dense, dense])
    model(np.ones((2, 3), np.float32))
    assert model.variables == [dense.kernel, dense.bias]
    assert model.count_params() == 3 * 3 + 3


# --- Dense ----------------------------------------------------------------------------------
def test_dense_builds_on_first_call_from_the_input_shape() -> None:
    dense = nn.Dense(5)
    assert not dense.built
    assert dense.variables == []
    out = dense(np.ones((2, 3), np.float32))
    assert dense.built
    assert dense.kernel.shape == (3, 5)
    assert dense.bias.shape == (5,)
    assert out.shape == (2, 5)
    assert dense.kernel.dtype is ef.float32
    np.testing.assert_array_equal(dense.bias.numpy(), np.zeros(5, np.float32))  # "zeros"
    # a second call reuses the variables
    kernel = dense.kernel
    dense(np.ones((4, 3), np.float32))
    assert dense.kernel is kernel


def test_dense_computes_x_at_kernel_plus_bias() -> None:
    dense = nn.Dense(3, bias_initializer="ones")
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    out = dense(x).numpy()
    np.testing.assert_allclose(out, x @ dense.kernel.numpy() + 1.0, rtol=1e-6)


def test_dense_converts_float64_numpy_inputs_to_float32() -> None:
    out = nn.Dense(2)(np.ones((1, 3)))  # float64
    assert out.dtype is ef.float32


def test_dense_variable_names_derive_from_the_unique_layer_name() -> None:
    a, b = nn.Dense(2), nn.Dense(2)
    assert a.name != b.name
    for layer in (a, b):
        assert re.fullmatch(r"dense(_\d+)?", layer.name)
        layer(np.ones((1, 3), np.float32))
        assert layer.kernel.name == f"{layer.name}/kernel:0"
        assert layer.bias.name == f"{layer.name}/bias:0"


def test_later_dense_layers_get_the_next_counter() -> None:
    a, b = nn.Dense(1), nn.Dense(1)
    count_a = int(a.name.rpartition("_")[2]) if "_" in a.name else 0
    assert b.name == f"dense_{count_a + 1}"


def test_explicit_layer_name() -> None:
    layer = nn.Dense(2, name="my_layer")
    layer(np.ones((1, 2), np.float32))
    assert layer.name == "my_layer"
    assert layer.kernel.name == "my_layer/kernel:0"


def test_dense_without_bias() -> None:
    dense = nn.Dense(3, use_bias=False)
    x = np.ones((2, 4), np.float32)
    out = dense(x)
    assert dense.variables == [dense.kernel]
    assert not hasattr(dense, "bias")
    np.testing.assert_allclose(out.numpy(), x @ dense.kernel.numpy(), rtol=1e-6)


@pytest.mark.parametrize(
    ("activation", "reference"),
    [
        ("relu", _relu),
        ("tanh", np.tanh),
        ("sigmoid", lambda z: 1.0 / (1.0 + np.exp(-z))),
        ("softmax", lambda z: np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)),
        (ef.tanh, np.tanh),
        (lambda t: t * 2.0, lambda z: z * 2.0),
    ],
    ids=["relu", "tanh", "sigmoid", "softmax", "callable_ef_tanh", "lambda"],
)
def test_dense_activation_by_name_and_callable(activation, reference) -> None:
    ef.set_seed(3)
    dense = nn.Dense(4, activation=activation, bias_initializer="ones")
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3)
    out = dense(x).numpy()
    linear = x @ dense.kernel.numpy() + dense.bias.numpy()
    np.testing.assert_allclose(out, reference(linear), rtol=1e-5, atol=1e-6)


def test_dense_unknown_activation_name() -> None:
    with pytest.raises(ValueError, match="relux"):
        nn.Dense(2, activation="relux")


def test_dense_rejects_zero_units() -> None:
    with pytest.raises(InvalidArgumentError, match="units"):
        nn.Dense(0)


def test_dense_on_rank_3_input_raises_shape_error_naming_the_layer() -> None:
    dense = nn.Dense(3)
    with pytest.raises(ShapeError, match=re.escape(f"'{dense.name}'")) as info:
        dense(np.zeros((2, 3, 4), np.float32))
    assert "(2, 3, 4)" in str(info.value)
    assert not dense.built


def test_an_ops_error_is_traced_back_through_the_layers() -> None:
    model = nn.Sequential([nn.Dense(4), nn.Dense(2)])
    model(np.ones((2, 3), np.float32))
    with pytest.raises(ShapeError, match=r"^MatMul\(float32\[2,5\], float32\[3,4\]\)") as info:
        model(np.ones((2, 5), np.float32))
    inner, outer = model.layers[0].name, model.name
    assert info.value.__notes__ == [
        f"in layer '{inner}' (Dense), called on float32[2,5]",
        f"in layer '{outer}' (Sequential), called on float32[2,5]",
    ]


def test_dense_on_unknown_rank_placeholder_raises_shape_error() -> None:
    dense = nn.Dense(3)
    with Graph().as_default(), pytest.raises(ShapeError, match=re.escape(dense.name)):
        dense(placeholder(ef.float32))  # shape entirely unknown


# --- Flatten --------------------------------------------------------------------------------
def test_flatten_keeps_the_batch_axis() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    out = nn.Flatten()(x)
    assert out.shape == (2, 12)
    np.testing.assert_array_equal(out.numpy(), x.reshape(2, 12))


def test_flatten_in_a_graph_with_unknown_batch() -> None:
    with Graph().as_default() as g:
        p = placeholder(ef.float32, (None, 2, 3))
        out = nn.Flatten()(p)
    assert out.shape == (None, 6)
    x = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    with Session(g) as session:
        np.testing.assert_array_equal(session.run(out, {p: x}), x.reshape(2, 6))


# --- Dropout --------------------------------------------------------------------------------
def test_dropout_is_the_identity_when_not_training() -> None:
    x = np.arange(1.0, 13.0, dtype=np.float32).reshape(3, 4)
    dropout = nn.Dropout(0.5)
    np.testing.assert_array_equal(dropout(x).numpy(), x)
    np.testing.assert_array_equal(dropout(x, training=False).numpy(), x)


@pytest.mark.parametrize("rate", [0.25, 0.5, 0.8])
def test_dropout_training_zeros_about_rate_and_scales_the_rest(rate: float) -> None:
    x = np.ones((100, 100), np.float32)
    out = nn.Dropout(rate)(x, training=True).numpy()
    zeros = out == 0.0
    assert abs(zeros.mean() - rate) < 0.03  # 10,000 draws: the std of the mean is < 0.005
    np.testing.assert_allclose(out[~zeros], 1.0 / (1.0 - rate), rtol=1e-6)


def test_dropout_is_reproducible_under_set_seed() -> None:
    x = np.ones((20, 20), np.float32)
    ef.set_seed(7)
    first = nn.Dropout(0.5)(x, training=True).numpy()
    ef.set_seed(7)
    second = nn.Dropout(0.5)(x, training=True).numpy()
    ef.set_seed(8)
    third = nn.Dropout(0.5)(x, training=True).numpy()
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first, third)


def test_dropout_rate_zero_is_the_identity_even_when_training() -> None:
    x = np.ones((3, 3), np.float32)
    np.testing.assert_array_equal(nn.Dropout(0.0)(x, training=True).numpy(), x)


@pytest.mark.parametrize("rate", [-0.1, 1.0, 1.5])
def test_dropout_rate_out_of_range(rate: float) -> None:
    with pytest.raises(ValueError, match="rate"):
        nn.Dropout(rate)


# --- Sequential -----------------------------------------------------------------------------
def test_sequential_passes_training_through() -> None:
    ef.set_seed(1)
    model = nn.Sequential([nn.Flatten(), nn.Dropout(0.5)])
    x = np.ones((10, 5, 4), np.float32)
    np.testing.assert_array_equal(model(x).numpy(), x.reshape(10, 20))
    trained = model(x, training=True).numpy()
    assert (trained == 0.0).any()
    assert set(np.unique(trained)) <= {0.0, 2.0}


def test_sequential_add_and_call_matches_numpy() -> None:
    ef.set_seed(5)
    model = nn.Sequential()
    model.add(nn.Dense(4, activation="relu"))
    model.add(nn.Dense(2))
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    out = model(x).numpy()
    k0, b0, k1, b1 = (v.numpy() for v in model.variables)
    np.testing.assert_allclose(out, _relu(x @ k0 + b0) @ k1 + b1, rtol=1e-5, atol=1e-6)


def test_sequential_takes_only_layers_and_says_which_is_not() -> None:
    with pytest.raises(TypeError, match=r"layer 1 must be a Layer, got 3 of type int"):
        nn.Sequential([nn.Dense(2), 3])
    model = nn.Sequential([nn.Dense(2)])
    with pytest.raises(TypeError, match=r"layer 1 must be a Layer, got .* of type function"):
        model.add(lambda x: x)  # type: ignore[arg-type]
    assert len(model.layers) == 1  # the refused layer was not added


# --- summary --------------------------------------------------------------------------------
def test_summary_lists_layers_output_shapes_and_parameter_counts() -> None:
    model = nn.Sequential([nn.Dense(7, activation="relu"), nn.Dense(3, use_bias=False)])
    model(np.zeros((5, 4), np.float32))
    lines: list[str] = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    first = model.layers[0]
    assert model.name in text
    for layer in model.layers:
        assert re.search(rf"\b{layer.name} \(Dense\)", text)
    assert "(5, 7)" in text and "(5, 3)" in text
    total = 4 * 7 + 7 + 7 * 3
    assert f"Total params: {total}" in text
    assert f"Trainable params: {total}" in text
    assert "Non-trainable params: 0" in text
    row = next(line for line in lines if line.startswith(f"{first.name} "))
    assert row.split()[-1] == str(4 * 7 + 7)


def test_summary_before_the_model_is_called() -> None:
    model = nn.Sequential([nn.Dense(2)])
    lines: list[str] = []
    model.summary(print_fn=lines.append)
    assert any("not called yet" in line for line in lines)
    assert any(line == "Total params: 0" for line in lines)


def test_summary_counts_non_trainable_variables_of_a_subclassed_model() -> None:
    lines: list[str] = []
    Tree().summary(print_fn=lines.append)
    # first, block (4+2), list0, block (4+2), z, a, counter  (again: counted once)
    assert "Total params: 17" in lines
    assert "Trainable params: 16" in lines
    assert "Non-trainable params: 1" in lines


# --- initializers ---------------------------------------------------------------------------
def test_zeros_and_ones_are_exact() -> None:
    np.testing.assert_array_equal(initializers.zeros((2, 3)).numpy(), np.zeros((2, 3)))
    ones = initializers.ones((4,), ef.float64)
    assert ones.dtype is ef.float64
    np.testing.assert_array_equal(ones.numpy(), np.ones(4))


@pytest.mark.parametrize("shape", [(30, 20), (5, 200), (7,)])
def test_glorot_uniform_stays_within_its_limit(shape: tuple[int, ...]) -> None:
    values = initializers.glorot_uniform(shape).numpy()
    fan_in, fan_out = (shape[0], shape[0]) if len(shape) == 1 else shape
    limit = math.sqrt(6.0 / (fan_in + fan_out))
    assert values.shape == shape
    assert np.abs(values).max() <= limit
    assert np.abs(values).max() > 0.8 * limit  # it uses the range, not a fraction of it
    assert values.min() < 0 < values.max()


def test_glorot_uniform_is_reproducible_under_set_seed() -> None:
    ef.set_seed(11)
    first = initializers.glorot_uniform((4, 5)).numpy()
    ef.set_seed(11)
    second = initializers.glorot_uniform((4, 5)).numpy()
    third = initializers.glorot_uniform((4, 5)).numpy()
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(second, third)


def test_dense_kernel_is_glorot_and_reproducible() -> None:
    ef.set_seed(4)
    a = nn.Dense(6)
    a(np.ones((1, 10), np.float32))
    ef.set_seed(4)
    b = nn.Dense(6)
    b(np.ones((1, 10), np.float32))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())
    assert np.abs(a.kernel.numpy()).max() <= math.sqrt(6.0 / 16)


def test_random_normal_mean_and_std() -> None:
    values = initializers.random_normal(mean=1.5, stddev=0.2)((200, 200)).numpy()
    assert abs(values.mean() - 1.5) < 0.01
    assert abs(values.std() - 0.2) < 0.01
    default = initializers.get("random_normal")((200, 200)).numpy()
    assert abs(default.mean()) < 0.01
    assert abs(default.std() - 0.05) < 0.005


def test_initializers_get() -> None:
    assert initializers.get("zeros") is initializers.zeros
    assert initializers.get(initializers.ones) is initializers.ones
    with pytest.raises(ValueError, match="glorot_normal"):
        initializers.get("glorot_normal")
    with pytest.raises(ValueError, match="glorot_normal"):
        nn.Dense(2, kernel_initializer="glorot_normal")


# --- one model, two modes -------------------------------------------------------------------
def _numpy_forward(x: np.ndarray, values: list[np.ndarray]) -> np.ndarray:
    k0, b0, k1, b1 = values
    return np.tanh(x @ k0 + b0) @ k1 + b1


def test_model_in_graph_mode_matches_numpy_with_the_sessions_variables() -> None:
    model = nn.Sequential([nn.Dense(4, activation="tanh"), nn.Dense(2)])
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None, 3))
        out = model(x)
        init = global_variables_initializer()
    assert out.shape == (None, 2)
    assert len(model.variables) == 4
    data = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    with Session(g) as session:
        session.run(init)
        values = [session.run(v) for v in model.variables]
        result = session.run(out, {x: data})
    assert [v.shape for v in values] == [(3, 4), (4,), (4, 2), (2,)]
    np.testing.assert_allclose(result, _numpy_forward(data, values), rtol=1e-5, atol=1e-6)


def test_graph_variables_have_no_eager_value() -> None:
    model = nn.Sequential([nn.Dense(2)])
    with Graph().as_default():
        model(placeholder(ef.float32, (None, 3)))
    with pytest.raises(Exception, match="session"):
        model.variables[0].numpy()


def test_model_called_eagerly_then_in_a_graph_gives_the_same_outputs() -> None:
    model = nn.Sequential([nn.Dense(4, activation="tanh"), nn.Dense(2)])
    data = np.random.default_rng(2).standard_normal((6, 3)).astype(np.float32)
    eager = model(data).numpy()
    variables = model.variables
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None, 3))
        out = model(x)
    assert model.variables == variables  # no new variables: the eager ones are read
    with Session(g) as session:  # no initializer needed: the variables are eager
        result = session.run(out, {x: data})
    np.testing.assert_allclose(result, eager, rtol=1e-6, atol=1e-7)
    values = [v.numpy() for v in variables]
    np.testing.assert_allclose(eager, _numpy_forward(data, values), rtol=1e-5, atol=1e-6)


def test_reset_names_starts_layer_names_afresh():
    first = nn.Dense(2)
    nn.Layer.reset_names()
    again = nn.Dense(2)
    assert first.name == again.name == "dense"
