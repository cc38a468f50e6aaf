"""Convolution ops, in TensorFlow's NHWC layout, and the ops of their gradients (pooling is
in ``pool_ops.py``; the layouts, ``padding`` arithmetic and the windows every kernel reads
are in ``windows.py``).

The gradients are ops of their own, with TensorFlow's names: ``Conv2DBackpropInput`` and
``Conv2DBackpropFilter`` (``pool_ops.py`` has the pools' own). The sizes TensorFlow passes
them as a tensor (the shape of the forward op's input or filters) are attributes here
(``input_sizes``, ``filter_sizes``, ``orig_input_shape``): the output shape is then known
when a graph is built. Only the spatial sizes must be known; the batch and channel entries
may be ``None``, since the other inputs tell them.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.tensor.dtypes import FLOATS
from eagerflow.tensor.errors import InvalidArgumentError
from eagerflow.tensor.execution import execute
from eagerflow.tensor.registry import op
from eagerflow.tensor.rules import same_dtype
from eagerflow.tensor.tensor import Tensor, convert_to_tensor
from eagerflow.tensor.windows import (
    CONV_ATTRS,
    SIZES,
    Dim,
    Pair,
    as_pair,
    check_data_format,
    check_padding,
    check_sizes,
    conv2d_backprop_filter_shape,
    conv2d_backprop_input_shape,
    conv2d_shape,
    im2col_matrix,
    pads_of,
    scatter_taps,
)


# --- conv2d ---------------------------------------------------------------------------------------
def conv2d_kernel(
    x: np.ndarray, filters: np.ndarray, strides: Pair, padding: str, dilations: Pair
) -> np.ndarray:
    conv2d_shape([x.shape, filters.shape], {"strides": strides, "padding": padding,
                                            "dilations": dilations})  # fmt: skip
    kh, kw, c, o = filters.shape
    cols, (n, oh, ow) = im2col_matrix(x, (kh, kw), strides, dilations, padding)
    # the im2col matrix [windows, kh·kw·c] against the filters as a [kh·kw·c, o] matrix:
    # one BLAS matmul makes every multiply-add, which is why a teaching framework can
    # afford convolutions at all (a loop over pixels would run in Python)
    return (cols @ filters.reshape(kh * kw * c, o)).reshape(n, oh, ow, o)


@op("Conv2D", conv2d_kernel, shape=conv2d_shape, dtype=same_dtype(FLOATS), attrs=CONV_ATTRS)
def conv2d(
    input: Any,
    filters: Any,
    strides: int | Sequence[int],
    padding: str,
    data_format: str = "NHWC",
    dilations: int | Sequence[int] = 1,
    name: str | None = None,
) -> Tensor:
    """The 2-D convolution (a cross-correlation, as in every framework) of an NHWC ``input``
    with ``filters`` [kh, kw, in_channels, out_channels]:

        out[n, i, j, o] = Σ_{a, b, c} in[n, i·sh + a·dh, j·sw + b·dw, c] · filters[a, b, c, o]

    over the input padded as ``padding`` ("SAME": zeros around, so out = ceil(in / stride);
    "VALID": none). ``strides`` and ``dilations`` are an int, or per axis as TensorFlow
    spells them ([sh, sw] or [1, sh, sw, 1]). Only ``data_format="NHWC"`` is supported.
    """
    check_data_format("conv2d", data_format)
    attrs = {"strides": as_pair("conv2d", "strides", strides),
             "padding": check_padding("conv2d", padding),
             "dilations": as_pair("conv2d", "dilations", dilations)}  # fmt: skip
    inputs = (convert_to_tensor(input), convert_to_tensor(filters))
    return execute("Conv2D", inputs, attrs, name)[0]


def _full_correlation(
    filters: np.ndarray, dy: np.ndarray, shape: tuple[int, ...], padding: str, dilations: Pair
) -> np.ndarray:
    """The input gradient of a stride-1 convolution, as a convolution of its own.

    Along one axis, input pixel i was read by output pixel i + top - a·d through tap a, so

        dx[i] = Σ_a dy[i + top - a·d] · filters[a]ᵀ

    which is a VALID correlation of ``dy``, zero-padded by span - 1 - top before (and
    span - 1 - bottom after), with the filters flipped in space and their two channel axes
    swapped. So one im2col and one matmul, like the forward pass, replace kh·kw matmuls and
    kh·kw scattered adds (a sixth faster on the digits CNN's second layer).
    """
    kh, kw, c, o = filters.shape
    n, h, w, _ = shape
    (dh, dw), (oh, ow) = dilations, dy.shape[1:3]
    (top, bottom), (left, right) = pads_of(h, kh, 1, dh, padding), pads_of(w, kw, 1, dw, padding)
    span_h, span_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    before_h, before_w = span_h - 1 - top, span_w - 1 - left
    padded = np.zeros(
        (n, before_h + oh + span_h - 1 - bottom, before_w + ow + span_w - 1 - right, o), dy.dtype
    )
    padded[:, before_h : before_h + oh, before_w : before_w + ow, :] = dy
    flipped = filters[::-1, ::-1].transpose(0, 1, 3, 2).reshape(kh * kw * o, c)  # (a copy)
    cols, _ = im2col_matrix(padded, (kh, kw), (1, 1), dilations, "VALID")
    return (cols @ flipped).reshape(n, h, w, c)


def conv2d_backprop_input_kernel(
    filters: np.ndarray, dy: np.ndarray, input_sizes: tuple[Dim, ...], strides: Pair,
    padding: str, dilations: Pair,
) -> np.ndarray:  # fmt: skip
    attrs = {"input_sizes": input_sizes, "strides": strides, "padding": padding,
             "dilations": dilations}  # fmt: skip
    (shape,) = conv2d_backprop_input_shape([filters.shape, dy.shape], attrs)
    full = tuple(int(d) for d in shape)  # type: ignore[arg-type]
    if strides == (1, 1):
        return _full_correlation(filters, dy, full, padding, dilations)
    kh, kw, c, o = filters.shape
    n, oh, ow = dy.shape[:3]
    # tap (a, b) of each window gave dy · filters[a, b] (its [c, o] matrix); it gets back
    # dy · filters[a, b]ᵀ. One batched matmul makes all taps: [kh, kw, n·oh·ow, c]
    back = np.matmul(dy.reshape(n * oh * ow, o), filters.transpose(0, 1, 3, 2))
    back = back.reshape(kh * kw, n, oh, ow, c)
    return scatter_taps(lambda t: back[t], full, (kh, kw), strides, dilations, padding,
                         dy.dtype)  # fmt: skip


@op("Conv2DBackpropInput", conv2d_backprop_input_kernel, shape=conv2d_backprop_input_shape,
    dtype=same_dtype(FLOATS), attrs={"input_sizes": SIZES, **CONV_ATTRS})  # fmt: skip
def conv2d_backprop_input(
    input_sizes: Sequence[int | None],
    filters: Any,
    out_backprop: Any,
    strides: int | Sequence[int],
    padding: str,
    data_format: str = "NHWC",
    dilations: int | Sequence[int] = 1,
    name: str | None = None,
) -> Tensor:
    """The gradient of ``conv2d`` with respect to its input: ``out_backprop`` (the gradient
    of conv2d's output) sent back through ``filters`` to every input pixel that each output
    pixel read. It is also the "transposed convolution" that upsamples in decoders.

    ``input_sizes`` is the input's shape [n, h, w, c], an attribute (TensorFlow takes a
    tensor); n and c may be None, then taken from ``out_backprop`` and ``filters``, but h
    and w must be known: with a stride, several input sizes give one output size.
    """
    check_data_format("conv2d_backprop_input", data_format)
    attrs = {
        "input_sizes": check_sizes("conv2d_backprop_input", "input_sizes", input_sizes),
        "strides": as_pair("conv2d_backprop_input", "strides", strides),
        "padding": check_padding("conv2d_backprop_input", padding),
        "dilations": as_pair("conv2d_backprop_input", "dilations", dilations),
    }
    inputs = (convert_to_tensor(filters), convert_to_tensor(out_backprop))
    return execute("Conv2DBackpropInput", inputs, attrs, name)[0]


def conv2d_backprop_filter_kernel(
    x: np.ndarray, dy: np.ndarray, filter_sizes: tuple[Dim, ...], strides: Pair,
    padding: str, dilations: Pair,
) -> np.ndarray:  # fmt: skip
    attrs = {"filter_sizes": filter_sizes, "strides": strides, "padding": padding,
             "dilations": dilations}  # fmt: skip
    (shape,) = conv2d_backprop_filter_shape([x.shape, dy.shape], attrs)
    kh, kw = int(shape[0]), int(shape[1])  # type: ignore[arg-type]
    c, o = x.shape[3], dy.shape[3]
    cols, (n, oh, ow) = im2col_matrix(x, (kh, kw), strides, dilations, padding)
    # the forward pass's im2col matrix, transposed, against the output's gradient: one
    # matmul sums over every window of every image, [kh·kw·c, o]
    return (cols.T @ dy.reshape(n * oh * ow, o)).reshape(kh, kw, c, o)


@op("Conv2DBackpropFilter", conv2d_backprop_filter_kernel, shape=conv2d_backprop_filter_shape,
    dtype=same_dtype(FLOATS), attrs={"filter_sizes": SIZES, **CONV_ATTRS})  # fmt: skip
def conv2d_backprop_filter(
    input: Any,
    filter_sizes: Sequence[int | None],
    out_backprop: Any,
    strides: int | Sequence[int],
    padding: str,
    data_format: str = "NHWC",
    dilations: int | Sequence[int] = 1,
    name: str | None = None,
) -> Tensor:
    """The gradient of ``conv2d`` with respect to its filters: for each tap, the sum over
    every image and output pixel of the input it read times ``out_backprop`` there.

    ``filter_sizes`` is the filters' shape [kh, kw, in, out], an attribute (TensorFlow
    takes a tensor); in and out may be None, then taken from ``input`` and ``out_backprop``.
    """
    check_data_format("conv2d_backprop_filter", data_format)
    sizes = [None if s is None else operator.index(s) for s in filter_sizes]
    if len(sizes) != 4 or sizes[0] is None or sizes[1] is None:
        raise InvalidArgumentError(
            "conv2d_backprop_filter: filter_sizes must be 4 sizes whose kernel height and "
            f"width are known, got {filter_sizes!r}"
        )
    attrs = {
        "filter_sizes": tuple(sizes),
        "strides": as_pair("conv2d_backprop_filter", "strides", strides),
        "padding": check_padding("conv2d_backprop_filter", padding),
        "dilations": as_pair("conv2d_backprop_filter", "dilations", dilations),
    }
    inputs = (convert_to_tensor(input), convert_to_tensor(out_backprop))
    return execute("Conv2DBackpropFilter", inputs, attrs, name)[0]


__all__ = [
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
]
