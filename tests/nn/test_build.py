"""Building before the first call, as Keras does: ``input_shape`` (and ``batch_input_shape``,
``input_dim``) builds a layer at construction, ``build(input_shape)`` is public and runs once,
``Sequential`` propagates shapes layer by layer, and a wrong shape at call time is named."""

from __future__ import annotations

import re

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, Session, function, global_variables_initializer, placeholder
from eagerflow.tensor.errors import ShapeError

X = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)


# --- one layer ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape_argument",
    [{"input_shape": (4,)}, {"batch_input_shape": (None, 4)}, {"input_dim": 4}],
    ids=["input_shape", "batch_input_shape", "input_dim"],
)
def test_dense_given_an_input_shape_builds_at_construction(shape_argument) -> None:
    dense = nn.Dense(3, **shape_argument)
    assert dense.built
    assert dense.batch_input_shape == (None, 4)
    assert [v.shape for v in dense.variables] == [(4, 3), (3,)]
    assert dense.trainable_variables == [dense.kernel, dense.bias]
    assert dense.count_params() == 4 * 3 + 3
    np.testing.assert_allclose(dense(X).numpy(), X @ dense.kernel.numpy(), rtol=1e-6)


def test_only_one_way_of_giving_the_input_shape() -> None:
    with pytest.raises(TypeError, match=r"Dense: give one of input_shape, batch_input_shape"):
        nn.Dense(3, input_shape=(4,), input_dim=4)


@pytest.mark.parametrize("bad", [(0,), (-1,), ("4",), (2.5,), 4])
def test_a_malformed_input_shape_is_refused(bad) -> None:
    with pytest.raises((TypeError, ValueError), match=r"Dense: input_shape must be"):
        nn.Dense(3, input_shape=bad)


def test_an_input_shape_dense_cannot_use_names_the_layer_and_the_shape() -> None:
    with pytest.raises(ShapeError, match=r"Dense 'bad_rank'.*\(None, 2, 3\)"):
        nn.Dense(3, input_shape=(2, 3), name="bad_rank")


def test_build_is_public_and_idempotent() -> None:
    dense = nn.Dense(3)
    assert not dense.built and dense.variables == []
    dense.build((None, 4))
    kernel = dense.kernel
    assert dense.built and kernel.shape == (4, 3)
    dense.build((None, 4))  # a second build changes nothing
    dense(X)  # nor does the first call
    assert dense.kernel is kernel
    assert dense.variables == [kernel, dense.bias]


def test_build_of_a_subclass_runs_once_and_marks_it_built() -> None:
    class Scale(nn.Layer):
        builds = 0

        def build(self, input_shape) -> None:
            Scale.builds += 1
            self.scale = self.add_weight("scale", input_shape[-1:], "ones")

        def call(self, inputs):
            return inputs * self.scale

    layer = Scale(input_shape=(4,))
    assert layer.built and Scale.builds == 1
    layer.build((None, 4))
    layer(X)
    assert Scale.builds == 1
    np.testing.assert_array_equal(layer(X).numpy(), X)


def test_a_wrong_shape_at_call_time_names_the_layer_and_both_shapes() -> None:
    dense = nn.Dense(3, input_shape=(4,), name="declared")
    with pytest.raises(ShapeError) as info:
        dense(np.ones((2, 5), np.float32))
    message = str(info.value)
    assert "'declared' (Dense)" in message
    assert "(None, 4)" in message and "(2, 5)" in message


def test_a_wrong_rank_at_call_time_is_named_too() -> None:
    flatten = nn.Flatten(input_shape=(2, 3))
    with pytest.raises(ShapeError, match=re.escape("(None, 2, 3)")):
        flatten(np.ones((4, 6), np.float32))
    assert flatten(np.ones((4, 2, 3), np.float32)).shape == (4, 6)


# --- Sequential -----------------------------------------------------------------------------
def test_sequential_builds_the_whole_stack_from_its_first_layers_input_shape() -> None:
    model = nn.Sequential([nn.Dense(8, input_shape=(4,)), nn.Dropout(0.5), nn.Dense(2)])
    assert model.built and all(layer.built for layer in model.layers)
    assert [v.shape for v in model.variables] == [(4, 8), (8,), (8, 2), (2,)]
    assert [layer.output_shape for layer in model.layers] == [(None, 8), (None, 8), (None, 2)]
    lines: list[str] = []
    model.summary(print_fn=lines.append)
    assert "not called yet" not in "\n".join(lines)
    assert f"Total params: {4 * 8 + 8 + 8 * 2 + 2}" in lines


def test_sequential_propagates_shapes_through_flatten() -> None:
    model = nn.Sequential([nn.Flatten(input_shape=(2, 3)), nn.Dense(5)])
    assert model.layers[1].kernel.shape == (6, 5)
    assert model(np.ones((7, 2, 3), np.float32)).shape == (7, 5)


def test_sequential_add_builds_each_new_layer_once_the_first_knows_its_input() -> None:
    model = nn.Sequential()
    model.add(nn.Dense(8, input_shape=(4,)))
    assert model.built
    model.add(nn.Dense(2))
    assert model.layers[1].kernel.shape == (8, 2)


def test_sequential_build_called_by_hand() -> None:
    model = nn.Sequential([nn.Dense(8), nn.Dense(2)])
    model.build((None, 4))
    assert [v.shape for v in model.variables] == [(4, 8), (8,), (8, 2), (2,)]


def test_sequential_without_an_input_shape_still_builds_on_the_first_call() -> None:
    model = nn.Sequential([nn.Dense(8), nn.Dense(2)])
    assert not model.built and model.variables == []
    assert model(X).shape == (5, 2)
    assert [v.shape for v in model.variables] == [(4, 8), (8,), (8, 2), (2,)]


def test_sequential_with_a_wrong_input_names_the_first_layer() -> None:
    model = nn.Sequential([nn.Dense(8, input_shape=(4,), name="first"), nn.Dense(2)])
    with pytest.raises(ShapeError, match=r"'first' \(Dense\).*\(None, 4\).*\(5, 3\)"):
        model(np.ones((5, 3), np.float32))


def test_a_custom_layer_without_compute_output_shape_builds_on_its_first_call() -> None:
    class Double(nn.Layer):
        def call(self, inputs):
            return inputs * 2.0

    model = nn.Sequential([nn.Dense(3, input_shape=(4,)), Double(), nn.Dense(2)])
    assert model.layers[0].built and not model.layers[2].built
    np.testing.assert_allclose(
        model(X).numpy(),
        (X @ model.layers[0].kernel.numpy() + 0) * 2 @ model.layers[2].kernel.numpy(),
        rtol=1e-5,
    )


# --- modes ----------------------------------------------------------------------------------
def test_input_shape_in_graph_mode_makes_graph_variables() -> None:
    g = Graph()
    with g.as_default():
        model = nn.Sequential([nn.Dense(3, input_shape=(4,), activation="tanh"), nn.Dense(2)])
        assert [v.shape for v in model.variables] == [(4, 3), (3,), (3, 2), (2,)]
        x = placeholder(ef.float32, (None, 4))
        out = model(x)
        init = global_variables_initializer()
    with Session(g) as session:
        session.run(init)
        k0, b0, k1, b1 = session.run(model.variables)
        result = session.run(out, {x: X})
    np.testing.assert_allclose(result, np.tanh(X @ k0 + b0) @ k1 + b1, rtol=1e-5, atol=1e-6)


def test_input_shape_checked_against_a_placeholder_in_graph_mode() -> None:
    dense = nn.Dense(3, input_shape=(4,), name="graph_declared")
    with Graph().as_default(), pytest.raises(ShapeError, match="'graph_declared'"):
        dense(placeholder(ef.float32, (None, 5)))


def test_built_layers_work_inside_function() -> None:
    model = nn.Sequential([nn.Dense(3, input_shape=(4,)), nn.Dense(2)])
    traced = function(lambda x: model(x))
    np.testing.assert_allclose(traced(X).numpy(), model(X).numpy(), rtol=1e-6)


def test_a_layer_built_inside_function_keeps_eager_variables() -> None:
    made: list[nn.Dense] = []

    @function
    def make_and_call(x):
        if not made:
            made.append(nn.Dense(2, input_shape=(4,)))
        return made[0](x)

    out = make_and_call(ef.constant(X))
    kernel = made[0].kernel
    assert isinstance(kernel, Variable) and kernel.numpy().shape == (4, 2)
    np.testing.assert_allclose(out.numpy(), X @ kernel.numpy(), rtol=1e-6)


def test_a_layer_without_call_says_so_and_names_pytorchs_forward() -> None:
    class Scale(nn.Layer):
        def forward(self, inputs):  # type: ignore[no-untyped-def]
            return inputs * 2.0

    with pytest.raises(NotImplementedError, match=r"Scale has no `call`.*rename it to `call`"):
        Scale()(ef.ones((2,)))

    class Nothing(nn.Layer):
        pass

    with pytest.raises(NotImplementedError, match="PyTorch's is `forward`") as caught:
        Nothing()(ef.ones((2,)))
    assert "rename" not in str(caught.value)
