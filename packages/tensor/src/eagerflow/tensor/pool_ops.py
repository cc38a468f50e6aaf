"""Pooling ops, in TensorFlow's NHWC layout, and the ops of their gradients: ``MaxPool``,
``MaxPoolGrad``, ``MaxPoolGradGrad``, ``AvgPool`` and ``AvgPoolGrad`` (the layouts, ``padding``
arithmetic and the windows their kernels read are in ``windows.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.tensor.dtypes import FLOATS
from eagerflow.tensor.execution import execute
from eagerflow.tensor.registry import op
from eagerflow.tensor.rules import same_dtype
from eagerflow.tensor.tensor import Tensor, convert_to_tensor
from eagerflow.tensor.windows import (
    POOL_ATTRS,
    SIZES,
    Dim,
    Pair,
    as_pair,
    avg_pool_grad_shape,
    check_data_format,
    check_padding,
    check_sizes,
    kernel_taps,
    max_pool_grad_grad_shape,
    max_pool_grad_shape,
    pad_input,
    pool_shape,
    scatter_taps,
    window_view,
)


# --- pooling --------------------------------------------------------------------------------------
def _pool_attrs(op_name: str, ksize: Any, strides: Any, padding: Any) -> dict[str, Any]:
    return {"ksize": as_pair(op_name, "ksize", ksize),
            "strides": as_pair(op_name, "strides", strides),
            "padding": check_padding(op_name, padding)}  # fmt: skip


def _pool_taps(x: np.ndarray, ksize: Pair, strides: Pair, padding: str,
               fill: float) -> list[np.ndarray]:  # fmt: skip
    """What each tap of every window reads, row by row: kh·kw views [n, out_h, out_w, c]."""
    padded, oh, ow = pad_input(x, ksize, strides, (1, 1), padding, fill)
    return [padded[where] for where in kernel_taps(ksize, strides, (1, 1), oh, ow)]


def _first_max(x: np.ndarray, ksize: Pair, strides: Pair, padding: str) -> np.ndarray:
    """The masks of the windows' arg-maxes, one per tap, row by row, stacked: a bool array
    [kh·kw, n, out_h, out_w, c] in which mask t is True in the windows whose first maximum
    (row-major) tap t holds. Each window has one True across the masks (none if it is all
    NaN).

    TensorFlow's CPU kernel (maxpooling_op.cc) walks each window row by row and moves the
    arg-max only on ``output < input``, so of equal maxima the first stays. Here, for all
    windows at once: the maximum, then each tap in turn claims the windows where it equals
    the maximum and no earlier tap did. NaNs are skipped (TensorFlow's walk differs only
    when a window's first cell is NaN). PyTorch's CPU kernel agrees on ties
    (tests/tensor/test_conv_ops.py).

    The taps are strided slices whose inner loops run over the channels alone, a few
    values at a time; copied once into one contiguous stack, the dozen operations after
    run on plain arrays (a third faster on the digits CNN's pool).
    """
    taps = _pool_taps(x, ksize, strides, padding, fill=-np.inf)
    stack = np.empty((len(taps), *taps[0].shape), x.dtype)
    for t, value in enumerate(taps):
        stack[t] = value
    masks = stack == np.fmax.reduce(stack, axis=0)  # (fmax: NaNs skipped)
    unclaimed = np.ones(masks.shape[1:], bool)
    for mask in masks:
        mask &= unclaimed
        unclaimed ^= mask  # (mask is within unclaimed: xor takes exactly its windows out)
    return masks


def max_pool_kernel(x: np.ndarray, ksize: Pair, strides: Pair, padding: str) -> np.ndarray:
    pool_shape([x.shape], {"ksize": ksize, "strides": strides, "padding": padding})
    # SAME pads with -inf, so padding never wins a window (as in TensorFlow)
    taps = _pool_taps(x, ksize, strides, padding, fill=-np.inf)
    out = taps[0].copy()
    for value in taps[1:]:
        np.fmax(out, value, out=out)  # (fmax: a NaN never wins, as it does not in TensorFlow)
    # TensorFlow's running maximum starts at the dtype's lowest value: a window of NaNs and
    # -infs gives that
    lowest = np.finfo(out.dtype).min
    out[np.isnan(out)] = lowest
    return np.maximum(out, lowest, out=out)


@op("MaxPool", max_pool_kernel, shape=pool_shape, dtype=same_dtype(FLOATS), attrs=POOL_ATTRS)
def max_pool2d(
    input: Any,
    ksize: int | Sequence[int],
    strides: int | Sequence[int],
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """The maximum of each ``ksize`` window of an NHWC ``input``, per channel, windows
    ``strides`` apart. With "SAME" padding the padded cells never count (as if -inf). As in
    TensorFlow, a NaN never wins a window, and a window of nothing but NaNs and -infs gives the
    dtype's lowest value (where TensorFlow's running maximum starts).

    Its gradient goes all to the window's maximum; where several cells tie, to the first in
    row-major order (TensorFlow's CPU kernel and PyTorch's do the same).
    """
    check_data_format("max_pool2d", data_format)
    attrs = _pool_attrs("max_pool2d", ksize, strides, padding)
    return execute("MaxPool", (convert_to_tensor(input),), attrs, name)[0]


def max_pool_grad_kernel(
    x: np.ndarray, grad: np.ndarray, ksize: Pair, strides: Pair, padding: str
) -> np.ndarray:
    max_pool_grad_shape([x.shape, grad.shape], {"ksize": ksize, "strides": strides,
                                                "padding": padding})  # fmt: skip
    masks = _first_max(x, ksize, strides, padding)
    # tap t gives back each window's gradient where it holds the window's arg-max, else 0:
    # grad · mask, several times faster than np.where and the same, unless grad holds an
    # inf or a NaN (0 · inf = NaN)
    if np.isfinite(grad).all():
        routed = np.multiply(grad, masks, dtype=grad.dtype)
    else:
        routed = np.where(masks, grad, np.zeros((), grad.dtype))
    return scatter_taps(lambda t: routed[t], x.shape, ksize, strides, (1, 1), padding,
                         grad.dtype)  # fmt: skip


@op("MaxPoolGrad", max_pool_grad_kernel, shape=max_pool_grad_shape, dtype=same_dtype(FLOATS),
    attrs=POOL_ATTRS)  # fmt: skip
def max_pool_grad(
    orig_input: Any,
    grad: Any,
    ksize: int | Sequence[int],
    strides: int | Sequence[int],
    padding: str,
    name: str | None = None,
) -> Tensor:
    """The gradient of ``max_pool2d(orig_input)``: each window's ``grad`` routed to the
    window's first maximum (row-major), summed where windows overlap.

    TensorFlow's MaxPoolGrad also takes the pool's output; the arg-max is found again from
    ``orig_input`` here, so it has two inputs.
    """
    attrs = _pool_attrs("max_pool_grad", ksize, strides, padding)
    inputs = (convert_to_tensor(orig_input), convert_to_tensor(grad))
    return execute("MaxPoolGrad", inputs, attrs, name)[0]


def max_pool_grad_grad_kernel(
    x: np.ndarray, grad: np.ndarray, ksize: Pair, strides: Pair, padding: str
) -> np.ndarray:
    max_pool_grad_grad_shape([x.shape, grad.shape], {"ksize": ksize, "strides": strides,
                                                     "padding": padding})  # fmt: skip
    masks = _first_max(x, ksize, strides, padding)
    taps = _pool_taps(grad, ksize, strides, padding, fill=0.0)
    out = np.zeros(masks[0].shape, grad.dtype)
    for mask, value in zip(masks, taps, strict=True):
        out = np.where(mask, value, out)  # each window reads grad at its arg-max
    return out


@op("MaxPoolGradGrad", max_pool_grad_grad_kernel, shape=max_pool_grad_grad_shape,
    dtype=same_dtype(FLOATS), attrs=POOL_ATTRS)  # fmt: skip
def max_pool_grad_grad(
    orig_input: Any,
    grad: Any,
    ksize: int | Sequence[int],
    strides: int | Sequence[int],
    padding: str,
    name: str | None = None,
) -> Tensor:
    """The gradient of ``max_pool_grad`` with respect to its ``grad``: for each window of
    ``orig_input``, the value of ``grad`` (shaped like ``orig_input``) at the window's first
    maximum. It reads from the cells MaxPoolGrad writes to: the same routing, backwards.
    """
    attrs = _pool_attrs("max_pool_grad_grad", ksize, strides, padding)
    inputs = (convert_to_tensor(orig_input), convert_to_tensor(grad))
    return execute("MaxPoolGradGrad", inputs, attrs, name)[0]


def _counts(shape: tuple[int, ...], ksize: Pair, strides: Pair, padding: str) -> np.ndarray:
    """How many real (unpadded) cells each window holds: [1, out_h, out_w, 1]."""
    ones = np.ones((1, shape[1], shape[2], 1))
    windows = window_view(ones, ksize, strides, (1, 1), padding)
    return np.sum(windows, axis=(3, 4))


def avg_pool_kernel(x: np.ndarray, ksize: Pair, strides: Pair, padding: str) -> np.ndarray:
    pool_shape([x.shape], {"ksize": ksize, "strides": strides, "padding": padding})
    taps = _pool_taps(x, ksize, strides, padding, fill=0.0)
    total = taps[0].copy()
    for value in taps[1:]:
        total += value
    return (total / _counts(x.shape, ksize, strides, padding)).astype(x.dtype, copy=False)


@op("AvgPool", avg_pool_kernel, shape=pool_shape, dtype=same_dtype(FLOATS), attrs=POOL_ATTRS)
def avg_pool2d(
    input: Any,
    ksize: int | Sequence[int],
    strides: int | Sequence[int],
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """The mean of each ``ksize`` window of an NHWC ``input``, per channel, windows
    ``strides`` apart. With "SAME" padding a window at the border averages only its real
    cells (TensorFlow's rule; PyTorch's ``count_include_pad=False``).
    """
    check_data_format("avg_pool2d", data_format)
    attrs = _pool_attrs("avg_pool2d", ksize, strides, padding)
    return execute("AvgPool", (convert_to_tensor(input),), attrs, name)[0]


def avg_pool_grad_kernel(
    grad: np.ndarray, orig_input_shape: tuple[Dim, ...], ksize: Pair, strides: Pair,
    padding: str,
) -> np.ndarray:  # fmt: skip
    attrs = {"orig_input_shape": orig_input_shape, "ksize": ksize, "strides": strides,
             "padding": padding}  # fmt: skip
    (shape,) = avg_pool_grad_shape([grad.shape], attrs)
    full = tuple(int(d) for d in shape)  # type: ignore[arg-type]
    share = (grad / _counts(full, ksize, strides, padding)).astype(grad.dtype, copy=False)
    # every tap of a window gives back the same share
    return scatter_taps(lambda t: share, full, ksize, strides, (1, 1), padding, grad.dtype)


@op("AvgPoolGrad", avg_pool_grad_kernel, shape=avg_pool_grad_shape, dtype=same_dtype(FLOATS),
    attrs={"orig_input_shape": SIZES, **POOL_ATTRS})  # fmt: skip
def avg_pool_grad(
    orig_input_shape: Sequence[int | None],
    grad: Any,
    ksize: int | Sequence[int],
    strides: int | Sequence[int],
    padding: str,
    name: str | None = None,
) -> Tensor:
    """The gradient of ``avg_pool2d``: each window's ``grad`` divided by the window's count
    of real cells and spread evenly over them, summed where windows overlap.

    ``orig_input_shape`` is the pooled input's shape, an attribute (TensorFlow takes a
    tensor); its batch and channels may be None, then taken from ``grad``.
    """
    attrs = {
        "orig_input_shape": check_sizes("avg_pool_grad", "orig_input_shape", orig_input_shape),
        **_pool_attrs("avg_pool_grad", ksize, strides, padding),
    }
    return execute("AvgPoolGrad", (convert_to_tensor(grad),), attrs, name)[0]


__all__ = [
    "avg_pool2d",
    "avg_pool_grad",
    "max_pool2d",
    "max_pool_grad",
    "max_pool_grad_grad",
]
