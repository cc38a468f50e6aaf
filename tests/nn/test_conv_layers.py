"""Conv2D, MaxPooling2D, AveragePooling2D, and Flatten on images: values against NumPy loops
(and PyTorch, NCHW, where installed) in every mode (eager, a Session graph with an unknown
batch size, ``function``, ``function(jit_compile=True)``); a small CNN's gradients agree
between a tape and ``gradients()``; Sequential builds a CNN from its input shape; errors name
the layer and the shapes."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape
from eagerflow.graph import Graph, Session, function, gradients, placeholder
from eagerflow.tensor.errors import InvalidArgumentError, ShapeError

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)  # NHWC, odd sizes on purpose


# --- NumPy references: loops over output pixels, TensorFlow's padding arithmetic --------------
def _pads(size: int, k: int, stride: int, dilation: int, padding: str) -> tuple[int, int, int]:
    """(output size, padding before, padding after) along one axis."""
    span = (k - 1) * dilation + 1
    if padding == "valid":
        return (size - span) // stride + 1, 0, 0
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + span - size, 0)
    return out, total // 2, total - total // 2


def _windows(x: np.ndarray, k: tuple[int, int], s: tuple[int, int], d: tuple[int, int],
             padding: str, fill: float) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Every window [n, oh, ow, kh, kw, c], and which of its cells are real (not padding)."""
    (oh, top, bottom), (ow, left, right) = (
        _pads(x.shape[1], k[0], s[0], d[0], padding), _pads(x.shape[2], k[1], s[1], d[1], padding)
    )  # fmt: skip
    spec = ((0, 0), (top, bottom), (left, right), (0, 0))
    padded = np.pad(x, spec, constant_values=fill)
    real = np.pad(np.ones_like(x[:1, :, :, :1]), spec)
    windows = np.empty((x.shape[0], oh, ow, k[0], k[1], x.shape[3]), x.dtype)
    masks = np.empty((1, oh, ow, k[0], k[1], 1), x.dtype)
    for i in range(oh):
        for j in range(ow):
            rows = slice(i * s[0], i * s[0] + (k[0] - 1) * d[0] + 1, d[0])
            cols = slice(j * s[1], j * s[1] + (k[1] - 1) * d[1] + 1, d[1])
            windows[:, i, j] = padded[:, rows, cols]
            masks[:, i, j] = real[:, rows, cols]
    return windows, masks


def conv_reference(x, kernel, bias, strides, padding, dilation) -> np.ndarray:
    windows, _ = _windows(x, kernel.shape[:2], strides, dilation, padding, 0.0)
    return np.einsum("nijabc,abco->nijo", windows, kernel) + bias


def max_pool_reference(x, size, strides, padding) -> np.ndarray:
    windows, _ = _windows(x, size, strides, (1, 1), padding, -np.inf)
    return windows.max(axis=(3, 4))


def avg_pool_reference(x, size, strides, padding) -> np.ndarray:
    windows, real = _windows(x, size, strides, (1, 1), padding, 0.0)
    return windows.sum(axis=(3, 4)) / real.sum(axis=(3, 4))


def _pair(v: Any) -> tuple[int, int]:
    return v if isinstance(v, tuple) else (v, v)


ACTIVATIONS = {None: lambda z: z, "relu": lambda z: np.maximum(z, 0), "tanh": np.tanh}


# --- every mode -------------------------------------------------------------------------------
def in_every_mode(layer: Callable[..., Any], x: np.ndarray) -> dict[str, np.ndarray]:
    """The layer's output on ``x`` eagerly (which builds it), in a Session graph fed through a
    placeholder of unknown batch size, in a ``function`` and in a compiled ``function``."""
    results = {"eager": layer(x).numpy()}
    graph = Graph()
    with graph.as_default():
        p = placeholder(ef.float32, (None, *x.shape[1:]))
        out = layer(p)
    assert out.shape == (None, *results["eager"].shape[1:])  # the static shape, batch unknown
    with Session(graph) as session:  # (the variables are the eager ones: no initializer)
        results["session"] = session.run(out, {p: x})
    results["function"] = function(layer)(x).numpy()
    results["jit"] = function(layer, jit_compile=True)(x).numpy()
    return results


def assert_every_mode_is(expected: np.ndarray, results: dict[str, np.ndarray]) -> None:
    for mode, value in results.items():
        assert value.shape == expected.shape, mode
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-5, err_msg=mode)


# --- Conv2D -----------------------------------------------------------------------------------
CONV_CASES = [
    # kernel_size, strides, padding, dilation_rate, use_bias, activation
    (3, 1, "valid", 1, True, None),
    ((3, 2), (2, 1), "same", 1, True, "relu"),
    (2, 2, "SAME", 1, False, None),  # padding in any case, as the ops spell it too
    (3, 1, "same", 2, True, "tanh"),
    (1, 1, "valid", 1, True, None),  # a 1x1 convolution: Dense on every pixel
]


@pytest.mark.parametrize(("k", "s", "padding", "d", "use_bias", "activation"), CONV_CASES)
def test_conv2d_matches_numpy_in_every_mode(k, s, padding, d, use_bias, activation) -> None:
    conv = nn.Conv2D(4, k, s, padding, activation, use_bias, dilation_rate=d,
                     bias_initializer="random_normal")  # fmt: skip
    results = in_every_mode(conv, X)
    kernel = conv.kernel.numpy()
    bias = conv.bias.numpy() if use_bias else 0.0
    linear = conv_reference(X, kernel, bias, _pair(s), padding.lower(), _pair(d))
    expected = ACTIVATIONS[activation](linear)
    assert kernel.shape == (*_pair(k), 3, 4)
    assert conv.compute_output_shape((None, *X.shape[1:])) == (None, *expected.shape[1:])
    assert_every_mode_is(expected.astype(np.float32), results)


def test_conv2d_keeps_keras_names_and_defaults() -> None:
    conv = nn.Conv2D(8, 3)
    assert conv.name == "conv2d"  # as Keras names it (not conv2_d)
    assert (conv.kernel_size, conv.strides, conv.dilation_rate) == ((3, 3), (1, 1), (1, 1))
    assert conv.padding == "valid" and conv.use_bias and conv.activation is None
    conv(X)
    assert [v.name for v in conv.variables] == ["conv2d/kernel:0", "conv2d/bias:0"]
    np.testing.assert_array_equal(conv.bias.numpy(), np.zeros(8))
    assert nn.Conv2D(2, 3, padding="Same").padding == "same"


def test_conv2d_kernel_is_glorot_with_the_receptive_field_in_its_fans() -> None:
    """Keras: fan_in = kh·kw·in, fan_out = kh·kw·out for a [kh, kw, in, out] kernel."""
    conv = nn.Conv2D(16, (5, 3))
    conv(np.zeros((1, 8, 8, 4), np.float32))
    kernel = conv.kernel.numpy()
    limit = math.sqrt(6.0 / (5 * 3 * 4 + 5 * 3 * 16))
    assert np.abs(kernel).max() <= limit
    assert np.abs(kernel).max() > 0.9 * limit  # 960 draws fill the range
    # the initializer alone, on a 4-D shape
    values = nn.initializers.glorot_uniform((3, 3, 2, 5)).numpy()
    assert np.abs(values).max() <= math.sqrt(6.0 / (9 * 2 + 9 * 5))


def test_conv2d_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    conv = nn.Conv2D(5, 3, strides=2, activation="relu", bias_initializer="random_normal")
    out = conv(X).numpy()
    nchw = torch.tensor(X).permute(0, 3, 1, 2)
    oihw = torch.tensor(conv.kernel.numpy()).permute(3, 2, 0, 1)  # [out, in, kh, kw]
    linear = torch.nn.functional.conv2d(nchw, oihw, torch.tensor(conv.bias.numpy()), stride=2)
    expected = torch.relu(linear).permute(0, 2, 3, 1).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)


# --- pooling ----------------------------------------------------------------------------------
POOL_CASES = [(2, None, "valid"), (3, 2, "same"), ((2, 3), (1, 2), "valid"), (2, 1, "Same")]


@pytest.mark.parametrize(("size", "strides", "padding"), POOL_CASES)
@pytest.mark.parametrize("kind", ["max", "average"])
def test_pools_match_numpy_in_every_mode(kind: str, size, strides, padding) -> None:
    layer = (nn.MaxPooling2D if kind == "max" else nn.AveragePooling2D)(size, strides, padding)
    reference = max_pool_reference if kind == "max" else avg_pool_reference
    expected = reference(X, _pair(size), _pair(strides or size), padding.lower())
    assert layer.compute_output_shape((None, *X.shape[1:])) == (None, *expected.shape[1:])
    assert_every_mode_is(expected, in_every_mode(layer, X))
    assert layer.variables == []


def test_pools_default_strides_to_the_pool_size_and_have_keras_names() -> None:
    assert nn.MaxPool2D is nn.MaxPooling2D and nn.AveragePool2D is nn.AveragePooling2D
    pool, average = nn.MaxPool2D(), nn.AveragePool2D((3, 2))
    assert (pool.name, average.name) == ("max_pooling2d", "average_pooling2d")  # as in Keras
    assert (pool.pool_size, pool.strides, pool.padding) == ((2, 2), (2, 2), "valid")
    assert average.strides == (3, 2)


def test_pools_match_torch() -> None:
    torch = pytest.importorskip("torch")
    nchw = torch.tensor(X).permute(0, 3, 1, 2)
    pools = [(nn.MaxPool2D(2), torch.nn.functional.max_pool2d),
             (nn.AveragePool2D(3, 2), torch.nn.functional.avg_pool2d)]  # fmt: skip
    for layer, torch_pool in pools:
        size, stride = layer.pool_size[0], layer.strides[0]
        expected = torch_pool(nchw, size, stride).permute(0, 2, 3, 1).numpy()
        np.testing.assert_allclose(layer(X).numpy(), expected, rtol=1e-6, atol=1e-6)


# --- Flatten on images ------------------------------------------------------------------------
def test_flatten_of_nhwc_images_is_row_major_as_in_keras() -> None:
    """(batch, h, w, c) -> (batch, h·w·c) with c varying fastest: pixel (i, j)'s channels
    are the h·w·c entries from (i·w + j)·c, Keras's order for channels_last."""
    flat = nn.Flatten()(X).numpy()
    assert flat.shape == (2, 7 * 6 * 3)
    np.testing.assert_array_equal(flat, X.reshape(2, -1))
    assert flat[1, (4 * 6 + 5) * 3 + 2] == X[1, 4, 5, 2]
    graph = Graph()
    with graph.as_default():
        p = placeholder(ef.float32, (None, 7, 6, 3))
        out = nn.Flatten()(p)
    assert out.shape == (None, 126)
    with Session(graph) as session:
        np.testing.assert_array_equal(session.run(out, {p: X}), X.reshape(2, -1))


# --- a small CNN --------------------------------------------------------------------------------
def small_cnn() -> nn.Sequential:
    return nn.Sequential([
        nn.Conv2D(4, 3, activation="relu", input_shape=(8, 8, 1)),
        nn.MaxPool2D(),
        nn.Conv2D(6, 3, padding="same", activation="tanh"),
        nn.Flatten(),
        nn.Dense(3),
    ])  # fmt: skip


def test_sequential_builds_a_cnn_from_its_input_shape_and_summary_counts_params() -> None:
    model = small_cnn()
    assert all(layer.built for layer in model.layers)  # before any call, as in Keras
    shapes = [layer.output_shape for layer in model.layers]
    assert shapes == [(None, 6, 6, 4), (None, 3, 3, 4), (None, 3, 3, 6), (None, 54), (None, 3)]
    # Keras's counts, by hand: 3·3·1·4 + 4, none, 3·3·4·6 + 6, none, 54·3 + 3
    counts = [40, 0, 222, 0, 165]
    assert [layer.count_params() for layer in model.layers] == counts
    lines: list[str] = []
    model.summary(print_fn=lines.append)
    for layer, shape, count in zip(model.layers, shapes, counts, strict=True):
        row = next(line for line in lines if line.startswith(f"{layer.name} "))
        assert f"({type(layer).__name__})" in row and str(shape) in row
        assert row.split()[-1] == str(count)
    assert "Total params: 427" in lines and "Trainable params: 427" in lines


def test_a_small_cnn_has_the_same_gradients_from_a_tape_a_function_and_a_session() -> None:
    model = small_cnn()
    x = RNG.standard_normal((5, 8, 8, 1)).astype(np.float32)
    variables = model.trainable_variables

    def loss(inputs: Any) -> Any:
        return ef.reduce_mean(ef.square(model(inputs)))

    with GradientTape() as tape:
        value = loss(x)
    eager = [g.numpy() for g in tape.gradient(value, variables)]

    with GradientTape() as tape:  # the tape through a traced function (one op on the tape)
        traced = function(loss)(x)
    through_function = [g.numpy() for g in tape.gradient(traced, variables)]

    inside = function(lambda inputs: gradients(loss(inputs), variables))(x)  # gradients() in it
    graph = Graph()
    with graph.as_default():
        p = placeholder(ef.float32, (None, 8, 8, 1))
        grads = gradients(loss(p), variables)
    with Session(graph) as session:
        in_session = session.run(grads, {p: x})

    assert [g.shape for g in eager] == [v.shape for v in variables]
    for other in (through_function, [g.numpy() for g in inside], in_session):
        for a, b in zip(other, eager, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert float(traced) == pytest.approx(float(value), rel=1e-6)


def test_a_small_cnn_trains_with_fit() -> None:
    ef.set_seed(1)
    x = RNG.standard_normal((64, 8, 8, 1)).astype(np.float32)
    y = (x[:, :4].mean(axis=(1, 2, 3)) > x[:, 4:].mean(axis=(1, 2, 3))).astype(np.int64)
    model = small_cnn()
    history = nn.fit(model, x, y, loss="sparse_softmax_cross_entropy",
                     optimizer=nn.AdamOptimizer(0.01), epochs=8, verbose=False, seed=0)  # fmt: skip
    assert history["loss"][-1] < 0.5 * history["loss"][0]


# --- errors -------------------------------------------------------------------------------------
def test_conv2d_on_a_rank_3_input_names_the_layer_and_the_shape() -> None:
    conv = nn.Conv2D(2, 3, name="edges")
    message = "Conv2D 'edges': inputs must be images of shape (batch, height, width, channels)"
    with pytest.raises(ShapeError, match=re.escape(message)) as e:
        conv(np.zeros((2, 8, 8), np.float32))
    assert "(2, 8, 8)" in str(e.value)
    assert not conv.built


def test_conv2d_called_with_other_channels_than_it_was_built_for() -> None:
    conv = nn.Conv2D(2, 3, name="edges")
    conv(X)  # 3 channels
    message = "Conv2D 'edges' was built for inputs with 3 channels, but is called on inputs of shape (2, 7, 6, 4)"  # noqa: E501
    with pytest.raises(ShapeError, match=re.escape(message)):
        conv(np.zeros((2, 7, 6, 4), np.float32))
    with Graph().as_default(), pytest.raises(ShapeError, match=r"\(None, 7, 6, 5\)"):
        conv(placeholder(ef.float32, (None, 7, 6, 5)))


def test_conv2d_needs_known_channels_to_build() -> None:
    with Graph().as_default(), pytest.raises(ShapeError, match=r"conv2d.*channels must be known"):
        nn.Conv2D(2, 3)(placeholder(ef.float32, (None, 8, 8, None)))


@pytest.mark.parametrize("padding", ["full", "VALIDD", "", None, 0])
def test_a_bad_padding_is_refused_when_the_layer_is_made(padding) -> None:
    for make in (lambda: nn.Conv2D(2, 3, padding=padding),
                 lambda: nn.MaxPool2D(padding=padding)):  # fmt: skip
        with pytest.raises(InvalidArgumentError, match=r'padding must be "valid" or "same"'):
            make()


@pytest.mark.parametrize(("filters", "error"),
                         [(0, InvalidArgumentError), (-3, InvalidArgumentError),
                          (2.5, TypeError), (True, TypeError), ("8", TypeError)])  # fmt: skip
def test_filters_must_be_a_positive_int(filters, error) -> None:
    with pytest.raises(error, match=r"Conv2D: filters must be"):
        nn.Conv2D(filters, 3)


@pytest.mark.parametrize(("argument", "value", "error"), [
    ("kernel_size", 0, InvalidArgumentError), ("kernel_size", (3, 3, 3), InvalidArgumentError),
    ("kernel_size", "3", TypeError), ("strides", (1, 0), InvalidArgumentError),
    ("dilation_rate", 1.5, TypeError),
])  # fmt: skip
def test_sizes_must_be_an_int_or_a_pair_of_positive_ints(argument, value, error) -> None:
    kwargs = {"kernel_size": 3, argument: value}
    with pytest.raises(error, match=rf"Conv2D: {argument} must be"):
        nn.Conv2D(2, **kwargs)


def test_a_window_larger_than_the_image_names_the_layer_when_the_model_builds() -> None:
    with pytest.raises(ShapeError, match=r"Conv2D 'conv2d_1': a window spanning 5 .* in 3"):
        nn.Sequential([nn.Conv2D(2, 3, input_shape=(5, 5, 1)), nn.Conv2D(2, 5)])
    with pytest.raises(ShapeError, match=r"MaxPooling2D 'max_pooling2d'"):
        nn.MaxPool2D(4).compute_output_shape((None, 3, 3, 1))


def test_pools_refuse_inputs_that_are_not_images() -> None:
    pool = nn.AveragePool2D()
    with pytest.raises(ShapeError, match=r"AveragePooling2D 'average_pooling2d'.*\(4, 4\)"):
        pool(np.zeros((4, 4), np.float32))
