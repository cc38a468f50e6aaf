"""Conformance cases for convolution and pooling (``tf.nn.conv2d``, ``max_pool2d``,
``avg_pool2d``): values over paddings, strides and dilations, their gradients by the tape (the
``Conv2DBackprop*``, ``MaxPoolGrad`` and ``AvgPoolGrad`` ops), the second derivative through
max pooling (``MaxPoolGradGrad``), NaN in a window, and the inputs both refuse; then
``custom_gradient`` and ``random.shuffle``'s dtype and shape. Imported by ``cases.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from cases import add

# the same input on both sides: an NHWC batch of 2 images, 5 x 6, 3 channels (float64, so that
# the values compare to 1e-12; one case in float32)
IMAGES = np.random.default_rng(27).normal(size=(2, 5, 6, 3))
FILTERS = np.random.default_rng(28).normal(size=(3, 2, 3, 4))


def _with_gradients(ns: Any, f: Any, dtype: str = "float64") -> Any:
    """``f(images, filters)`` and the gradients of its weighted sum with respect to both."""
    x = ns.constant(IMAGES, getattr(ns, dtype))
    w = ns.constant(FILTERS, getattr(ns, dtype))
    with ns.GradientTape(persistent=True) as tape:
        tape.watch(x)
        tape.watch(w)
        y = f(x, w)
        weights = ns.cast(ns.reshape(ns.range(ns.size(y)), y.shape), y.dtype) % 7.0 - 3.0
        total = ns.reduce_sum(y * weights)
    return [y, *[g for g in tape.gradient(total, [x, w]) if g is not None]]


for padding in ("SAME", "VALID"):
    for strides in (1, 2, (1, 2)):
        add(f"conv/conv2d/{padding}/strides={strides}", lambda ns, p=padding, s=strides:
            _with_gradients(ns, lambda x, w: ns.conv2d(x, w, s, p)))  # fmt: skip
    # (values only: TensorFlow's CPU kernels have no gradient for dilations over 1)
    add(f"conv/conv2d/{padding}/dilations=2", lambda ns, p=padding:
        ns.conv2d(ns.constant(IMAGES), ns.constant(FILTERS), 1, p, dilations=2))  # fmt: skip
    for ksize, strides in ((2, 2), (3, 1), ((2, 3), (1, 2))):
        for pool in ("max_pool2d", "avg_pool2d"):
            add(f"conv/{pool}/{padding}/ksize={ksize}/strides={strides}",
                lambda ns, p=padding, k=ksize, s=strides, op=pool:
                _with_gradients(ns, lambda x, w: getattr(ns, op)(x, k, s, p)))  # fmt: skip
add("conv/conv2d/float32", lambda ns: _with_gradients(ns, lambda x, w: ns.conv2d(x, w, 1, "SAME"),
                                                      "float32"))  # fmt: skip


def _max_pool_second_derivative(ns: Any) -> Any:
    """d/dx of (d/dx sum(max_pool(x) * v)) · u: the gradient of max pooling's gradient."""
    x = ns.constant(IMAGES, ns.float64)
    with ns.GradientTape() as outer:
        outer.watch(x)
        with ns.GradientTape() as inner:
            inner.watch(x)
            y = ns.max_pool2d(x * x, 2, 2, "VALID")
            total = ns.reduce_sum(y * ns.cast(ns.reshape(ns.range(ns.size(y)), y.shape),
                                                 ns.float64))  # fmt: skip
        gradient = inner.gradient(total, x)
        second = ns.reduce_sum(gradient * ns.constant(IMAGES[::-1].copy(), ns.float64))
    return [gradient, outer.gradient(second, x)]


add("conv/max_pool2d/second_derivative", _max_pool_second_derivative)


def _nan_in_a_window(ns: Any, op: str) -> Any:
    x = np.arange(16.0).reshape(1, 4, 4, 1)
    x[0, 1, 1, 0] = np.nan
    return getattr(ns, op)(ns.constant(x), 2, 2, "VALID")


add("conv/max_pool2d/nan", lambda ns: _nan_in_a_window(ns, "max_pool2d"))
add(
    "conv/max_pool2d/all_nan_or_-inf",
    lambda ns: ns.max_pool2d(
        ns.constant(np.array([np.nan, -np.inf, np.nan, 1.0]).reshape(1, 2, 2, 1)), 1, 1, "VALID"
    ),
)
add(
    "conv/max_pool2d/nan_window_float32",
    lambda ns: ns.max_pool2d(ns.constant(np.full((1, 2, 2, 1), np.nan, np.float32)), 2, 2, "VALID"),
)
add("conv/conv2d/dilations=2/gradient", lambda ns: _with_gradients(
    ns, lambda x, w: ns.conv2d(x, w, 1, "SAME", dilations=2)))  # fmt: skip
add("conv/avg_pool2d/nan", lambda ns: _nan_in_a_window(ns, "avg_pool2d"))
# refused by both: channels that do not match, and a window larger than a VALID input
add("conv/conv2d/channels_mismatch", lambda ns: ns.conv2d(
    ns.constant(IMAGES), ns.constant(np.ones((2, 2, 4, 1))), 1, "SAME"))  # fmt: skip
add("conv/max_pool2d/window_larger_than_input", lambda ns: ns.max_pool2d(
    ns.constant(IMAGES), 7, 1, "VALID"))  # fmt: skip


def _clipped_identity(ns: Any) -> Any:
    """``custom_gradient``: the identity, its gradient clipped to [-1, 1]."""

    @ns.custom_gradient
    def clip_gradient(x: Any) -> Any:
        def grad(upstream: Any) -> Any:
            return ns.clip_by_value(upstream, -1.0, 1.0)

        return ns.identity(x), grad

    x = ns.constant([1.0, 2.0, 3.0], ns.float64)
    with ns.GradientTape() as tape:
        tape.watch(x)
        y = ns.reduce_sum(clip_gradient(x) * ns.constant([0.5, -4.0, 2.0], ns.float64))
    return [y, tape.gradient(y, x)]


add("custom_gradient/clipped_identity", _clipped_identity)


def _shuffled(ns: Any) -> Any:
    """A shuffle's order is each library's own stream: compared are what it keeps, the dtype,
    the shape and the values' sum, least and greatest."""
    s = ns.random_shuffle(ns.constant([[3, 30], [1, 10], [2, 20], [5, 50], [4, 40]]))
    return [s.shape[0], ns.reduce_sum(s, 0), ns.reduce_min(s, 0), ns.reduce_max(s, 0)]


add("random/shuffle/rows_kept", _shuffled)
