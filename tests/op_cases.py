"""Per-op test cases shared by the gradient checks and the eager-vs-graph tests: for each
differentiable op, a hypothesis recipe drawing a function that uses it and float64 inputs
in its smooth domain (no kinks, ties or jumps), with shapes that broadcast."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, mutually_broadcastable_shapes

import eagerflow.tensor as ef
from eagerflow.tensor.indexing_ops import getitem

Case = tuple[Callable[..., ef.Tensor], list[np.ndarray]]
shapes = array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
pairs = mutually_broadcastable_shapes(num_shapes=2, max_dims=3, min_side=1, max_side=3)


def values(draw: st.DrawFn, shape: tuple[int, ...], low: float = -2.0, high: float = 2.0,
           gap: float = 0.0) -> np.ndarray:  # fmt: skip
    """Uniform values in [low, high]; with ``gap``, none within ``gap`` of zero (kinks)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    x = rng.uniform(low, high, shape)
    if gap:
        x = np.where(np.abs(x) < gap, np.copysign(gap, x) + x, x)
    return x


def binary(fn: Callable[..., ef.Tensor], **domain: Any) -> Callable[[st.DrawFn], Case]:
    def draw_case(draw: st.DrawFn) -> Case:
        (sx, sy), _ = draw(pairs)
        return fn, [values(draw, sx, **domain), values(draw, sy, **domain)]

    return draw_case


def unary(fn: Callable[..., ef.Tensor], **domain: Any) -> Callable[[st.DrawFn], Case]:
    def draw_case(draw: st.DrawFn) -> Case:
        return fn, [values(draw, draw(shapes), **domain)]

    return draw_case


def separated(fn: Callable[..., ef.Tensor]) -> Callable[[st.DrawFn], Case]:
    """max/min style ops: x and y never (nearly) tie, so the derivative is defined."""

    def draw_case(draw: st.DrawFn) -> Case:
        (sx, sy), _ = draw(pairs)
        x, y = values(draw, sx), values(draw, sy)
        apart = np.abs(np.broadcast_to(x, np.broadcast_shapes(sx, sy)) - y) > 0.05
        if not apart.all():
            y = y + 0.1 * (1 + np.abs(x).max())  # shift y clear of every x
            y = np.where(np.abs(np.broadcast_to(x, np.broadcast_shapes(sx, sy)) - y).min() > 0.05,
                         y, y + 0.37)  # fmt: skip
        return fn, [x, y]

    return draw_case


def reduction(fn: Callable[..., ef.Tensor]) -> Callable[[st.DrawFn], Case]:
    def draw_case(draw: st.DrawFn) -> Case:
        shape = draw(array_shapes(min_dims=1, max_dims=3, max_side=3))
        axes = draw(st.one_of(
            st.none(),
            st.integers(-len(shape), len(shape) - 1),
            st.lists(st.integers(0, len(shape) - 1), min_size=1, max_size=len(shape), unique=True),
        ))  # fmt: skip
        keepdims = draw(st.booleans())
        x = values(draw, shape, gap=0.2)
        return (lambda t: fn(t, axis=axes, keepdims=keepdims)), [x]

    return draw_case


def with_axis(fn: Callable[..., ef.Tensor]) -> Callable[[st.DrawFn], Case]:
    def draw_case(draw: st.DrawFn) -> Case:
        shape = draw(array_shapes(min_dims=1, max_dims=3, max_side=3))
        axis = draw(st.integers(-len(shape), len(shape) - 1))
        return (lambda t: fn(t, axis=axis)), [values(draw, shape)]

    return draw_case


def matmul_case(draw: st.DrawFn) -> Case:
    m, k, n = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    (ba, bb), _ = draw(mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=2))
    ta, tb = draw(st.booleans()), draw(st.booleans())
    a = values(draw, (*ba, *((k, m) if ta else (m, k))))
    b = values(draw, (*bb, *((n, k) if tb else (k, n))))
    return (lambda x, y: ef.matmul(x, y, transpose_a=ta, transpose_b=tb)), [a, b]


def reshape_like_case(draw: st.DrawFn) -> Case:
    shape = draw(array_shapes(min_dims=1, max_dims=3, max_side=3))
    kind = draw(st.sampled_from(["reshape", "expand", "squeeze", "transpose", "broadcast", "tile"]))
    x = values(draw, shape)
    if kind == "reshape":
        return (lambda t: ef.reshape(t, (-1,))), [x]
    if kind == "expand":
        axis = draw(st.integers(-len(shape) - 1, len(shape)))
        return (lambda t: ef.expand_dims(t, axis)), [x]
    if kind == "squeeze":
        return (lambda t: ef.squeeze(ef.expand_dims(t, 0), axis=0)), [x]
    if kind == "transpose":
        perm = draw(st.permutations(range(len(shape))))
        return (lambda t: ef.transpose(t, perm)), [x]
    if kind == "broadcast":
        return (lambda t: ef.broadcast_to(t, (2, *shape))), [x]
    multiples = draw(st.lists(st.integers(1, 3), min_size=len(shape), max_size=len(shape)))
    return (lambda t: ef.tile(t, multiples)), [x]


def join_case(draw: st.DrawFn) -> Case:
    shape = draw(array_shapes(min_dims=1, max_dims=3, max_side=3))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    kind = draw(st.sampled_from(["concat", "stack", "split"]))
    x, y = values(draw, shape), values(draw, shape)
    if kind == "concat":
        return (lambda a, b: ef.concat([a, b, a], axis=axis)), [x, y]
    if kind == "stack":
        return (lambda a, b: ef.stack([a, b], axis=axis)), [x, y]

    def split_and_weigh(a: ef.Tensor, b: ef.Tensor) -> ef.Tensor:
        joined = ef.concat([a, b], axis=axis)
        first, second = ef.split(joined, 2, axis=axis)
        return first * 2.0 - second * second  # each piece gets a different gradient

    return split_and_weigh, [x, y]


def gather_case(draw: st.DrawFn) -> Case:
    shape = draw(array_shapes(min_dims=1, max_dims=3, max_side=3))
    axis = draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = draw(array_shapes(min_dims=0, max_dims=2, max_side=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    indices = rng.integers(0, shape[axis], index_shape).astype(np.int32)  # repeats happen
    return (lambda p: ef.gather(p, indices, axis=axis)), [values(draw, shape)]


def segment_sum_case(draw: st.DrawFn) -> Case:
    shape = draw(array_shapes(min_dims=1, max_dims=3, max_side=3))
    segments = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    ids = rng.integers(0, segments, shape[:1]).astype(np.int64)
    return (lambda d: ef.unsorted_segment_sum(d, ids, segments)), [values(draw, shape)]


def slice_case(draw: st.DrawFn) -> Case:
    shape = draw(array_shapes(min_dims=1, max_dims=3, max_side=4))
    key: list[Any] = []
    for d in shape[: draw(st.integers(1, len(shape)))]:
        if draw(st.booleans()):
            key.append(draw(st.integers(-d, d - 1)))
        else:
            bound = st.none() | st.integers(-d, d)
            key.append(slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, -1]))))
    if draw(st.booleans()):
        key.insert(draw(st.integers(0, len(key))), None)
    return (lambda t: getitem(t, tuple(key)) * 1.0), [values(draw, shape)]


def slice_grad_case(draw: st.DrawFn) -> Case:
    shape = (3, 4)
    key = (slice(None, None, -2), 1)  # picks shape (2,)
    return (lambda dy: ef.strided_slice_grad(dy * dy, shape, key)), [values(draw, (2,))]


def where_case(draw: st.DrawFn) -> Case:
    (sc, sx, sy), _ = draw(mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    condition = rng.random(sc) > 0.5
    return (lambda x, y: ef.where(condition, x, y)), [values(draw, sx), values(draw, sy)]


def floormod_case(draw: st.DrawFn) -> Case:
    (sx, sy), _ = draw(pairs)
    y = values(draw, sy, low=0.5, high=2.0) * np.where(values(draw, sy) > 0, 1, -1)
    x = values(draw, sx, low=-3, high=3)
    ratio = np.broadcast_to(x, np.broadcast_shapes(sx, sy)) / y
    frac = ratio - np.floor(ratio)
    if np.min(np.minimum(frac, 1 - frac)) < 0.02:  # keep clear of the jumps
        x = x + 0.05 * np.min(np.abs(y))
    return ef.floormod, [x, y]


def relu_grad_case(draw: st.DrawFn) -> Case:
    shape = draw(shapes)  # no broadcasting: the gradient and relu's output have one shape
    return ef.relu_grad, [values(draw, shape), values(draw, shape, gap=0.1)]


def sparse_xent_case(draw: st.DrawFn) -> Case:
    batch = draw(array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    depth = draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    labels = rng.integers(0, depth, batch).astype(draw(st.sampled_from([np.int32, np.int64])))
    loss = ef.sparse_softmax_cross_entropy_with_logits
    return (lambda z: loss(labels=labels, logits=z)), [values(draw, (*batch, depth))]


def cast_case(draw: st.DrawFn) -> Case:
    # float64 -> float32 -> float64: the gradient passes through both casts
    return (lambda t: ef.cast(ef.cast(t, ef.float32), ef.float64) * 3.0), [
        values(draw, draw(shapes))
    ]


def _conv_geometry(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...], dict[str, Any]]:
    """An input shape, a filter shape and conv2d's attributes, small, odd sizes included."""
    n, h, w = draw(st.integers(1, 2)), draw(st.integers(1, 5)), draw(st.integers(1, 5))
    c, o = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    strides, dilations = draw(st.sampled_from([1, 2, [2, 1]])), draw(st.sampled_from([1, 2]))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    if (kh - 1) * dilations + 1 > h or (kw - 1) * dilations + 1 > w:
        padding = "SAME"  # a VALID window must fit
    attrs = {"strides": strides, "padding": padding, "dilations": dilations}
    return (n, h, w, c), (kh, kw, c, o), attrs


def conv2d_case(draw: st.DrawFn) -> Case:
    x, f, attrs = _conv_geometry(draw)
    return (lambda a, b: ef.nn.conv2d(a, b, **attrs)), [values(draw, x), values(draw, f)]


def conv2d_backprop_input_case(draw: st.DrawFn) -> Case:
    x, f, attrs = _conv_geometry(draw)
    y = ef.nn.conv2d(np.zeros(x), np.zeros(f), **attrs).numpy().shape
    fn = lambda b, dy: ef.nn.conv2d_backprop_input(x, b, dy, **attrs)  # noqa: E731
    return fn, [values(draw, f), values(draw, y)]


def conv2d_backprop_filter_case(draw: st.DrawFn) -> Case:
    x, f, attrs = _conv_geometry(draw)
    y = ef.nn.conv2d(np.zeros(x), np.zeros(f), **attrs).numpy().shape
    fn = lambda a, dy: ef.nn.conv2d_backprop_filter(a, f, dy, **attrs)  # noqa: E731
    return fn, [values(draw, x), values(draw, y)]


def _pool_geometry(draw: st.DrawFn) -> tuple[tuple[int, ...], dict[str, Any]]:
    n, h, w, c = (draw(st.integers(1, 2)), draw(st.integers(1, 5)), draw(st.integers(1, 5)),
                  draw(st.integers(1, 2)))  # fmt: skip
    k = draw(st.sampled_from([(1, 1), (2, 2), (3, 3), (2, 3)]))
    ksize = k[0] if k[0] == k[1] else list(k)  # an int, or per axis
    strides = draw(st.sampled_from([1, 2]))
    padding = draw(st.sampled_from(["SAME", "VALID"]))
    if k[0] > h or k[1] > w:
        padding = "SAME"
    return (n, h, w, c), {"ksize": ksize, "strides": strides, "padding": padding}


def pool_case(pool: Callable[..., ef.Tensor]) -> Callable[[st.DrawFn], Case]:
    def draw_case(draw: st.DrawFn) -> Case:
        x, attrs = _pool_geometry(draw)
        return (lambda a: pool(a, **attrs)), [values(draw, x)]  # continuous: ties have measure 0

    return draw_case


def max_pool_grad_case(draw: st.DrawFn) -> Case:
    x, attrs = _pool_geometry(draw)
    y = ef.nn.max_pool2d(np.zeros(x), **attrs).numpy().shape
    fn = lambda a, g: ef.nn.max_pool_grad(a, g, **attrs)  # noqa: E731
    return fn, [values(draw, x), values(draw, y)]


def max_pool_grad_grad_case(draw: st.DrawFn) -> Case:
    x, attrs = _pool_geometry(draw)
    fn = lambda a, g: ef.nn.max_pool_grad_grad(a, g, **attrs)  # noqa: E731
    return fn, [values(draw, x), values(draw, x)]


def avg_pool_grad_case(draw: st.DrawFn) -> Case:
    x, attrs = _pool_geometry(draw)
    y = ef.nn.avg_pool2d(np.zeros(x), **attrs).numpy().shape
    return (lambda g: ef.nn.avg_pool_grad(x, g * g, **attrs)), [values(draw, y)]


CASES: dict[str, Callable[[st.DrawFn], Case]] = {
    "AddV2": binary(ef.add),
    "Sub": binary(ef.subtract),
    "Mul": binary(ef.multiply),
    "RealDiv": binary(ef.divide, gap=0.3),
    "Pow": binary(ef.pow, low=0.5, high=2.0),
    "FloorMod": floormod_case,
    "Maximum": separated(ef.maximum),
    "Minimum": separated(ef.minimum),
    "Neg": unary(ef.negative),
    "Abs": unary(ef.abs, gap=0.1),
    "Sign": unary(ef.sign, gap=0.1),  # flat away from 0: a zero gradient, as in TensorFlow
    "Square": unary(ef.square),
    "Sqrt": unary(ef.sqrt, low=0.5, high=3.0),
    "Exp": unary(ef.exp),
    "Log": unary(ef.log, low=0.5, high=3.0),
    "Tanh": unary(ef.tanh),
    "Sigmoid": unary(ef.sigmoid),
    "Relu": unary(ef.relu, gap=0.1),
    "ReluGrad": relu_grad_case,
    "Softplus": unary(ef.softplus),
    "Elu": unary(ef.nn.elu, gap=0.1),
    "LeakyRelu": unary(lambda t: ef.nn.leaky_relu(t, alpha=0.3), gap=0.1),
    "Softmax": with_axis(ef.softmax),
    "LogSoftmax": with_axis(ef.log_softmax),
    "SparseSoftmaxCrossEntropyWithLogits": sparse_xent_case,
    "Cast": cast_case,
    "MatMul": matmul_case,
    "Sum": reduction(ef.reduce_sum),
    "Mean": reduction(ef.reduce_mean),
    "Max": reduction(ef.reduce_max),
    "Min": reduction(ef.reduce_min),
    "Prod": reduction(ef.reduce_prod),
    "Identity": unary(ef.identity),
    "Reshape": reshape_like_case,
    "ExpandDims": reshape_like_case,
    "Squeeze": reshape_like_case,
    "Transpose": reshape_like_case,
    "BroadcastTo": reshape_like_case,
    "Tile": reshape_like_case,
    "ConcatV2": join_case,
    "Pack": join_case,
    "SplitV": join_case,
    "GatherV2": gather_case,
    "UnsortedSegmentSum": segment_sum_case,
    "StridedSlice": slice_case,
    "StridedSliceGrad": slice_grad_case,
    "SelectV2": where_case,
    "Conv2D": conv2d_case,
    "Conv2DBackpropInput": conv2d_backprop_input_case,
    "Conv2DBackpropFilter": conv2d_backprop_filter_case,
    "MaxPool": pool_case(ef.nn.max_pool2d),
    "MaxPoolGrad": max_pool_grad_case,
    "MaxPoolGradGrad": max_pool_grad_grad_case,
    "AvgPool": pool_case(ef.nn.avg_pool2d),
    "AvgPoolGrad": avg_pool_grad_case,
}
# Ops whose gradient is tested elsewhere (their value is a user's function, or not an array op).
ELSEWHERE = {
    "CustomGradient": "tests/autodiff/test_tape.py",
    # a graph input: eagerly it is its default itself (no op), in a graph an identity
    "PlaceholderWithDefault": "tests/graph/test_placeholder_with_default.py",
    "If": "tests/graph/test_control_flow.py",  # gradients through cond, first and second order
    "PartitionedCall": "tests/graph/test_function.py",  # gradients through @function calls
    "While": "tests/graph/test_while_gradients.py",  # first and second order, graph and tape
    # needs tasks to reduce over: threads standing in for them, central differences by hand
    "CollectiveAllReduce": "tests/distribute/test_strategy.py",
}
