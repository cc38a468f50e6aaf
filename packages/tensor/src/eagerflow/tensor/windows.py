"""The geometry every convolution and pooling op shares: its attributes, shape rules, and
the windows its kernels read (``conv_ops.py`` and ``pool_ops.py`` hold the ops).

Layouts, as in TensorFlow:

- an image batch ``input`` is ``[batch, height, width, channels]`` ("NHWC");
- conv2d's ``filters`` are ``[kernel_height, kernel_width, in_channels, out_channels]``.

Every op takes ``strides`` (and conv2d ``dilations``) as a pair ``(along height, along
width)``; the public functions also accept TensorFlow's spellings, one int or a list of 4
with 1 for batch and channels. ``padding`` is ``"VALID"`` (windows stay inside the input)
or ``"SAME"``, with TensorFlow's arithmetic, along each spatial axis::

    out = ceil(in / stride)
    pad_total = max((out - 1) * stride + (k - 1) * dilation + 1 - in, 0)
    pad_before = pad_total // 2            # the odd pixel, if any, goes after

Every kernel reads the (padded) input window by window, one window per output pixel, in
one of two ways:

- ``window_view``: the input seen as an array of windows [n, out_h, out_w, kh, kw, c], without
  copying: a view with strides of its own (``numpy.lib.stride_tricks.as_strided``).
  Reshaped to a matrix, one row per window (that reshape copies: it *is* the "im2col"
  matrix), it lines up with the filters reshaped to [kh·kw·c, out_channels], so a
  convolution is one matmul;
- ``kernel_taps``: tap (a, b) of the kernel reads, across all windows at once, one strided slice
  of the input. A pool is kh·kw whole-batch maximums or sums of those slices, and every
  gradient that goes back to the input is kh·kw whole-batch adds into them. (With a
  single channel, ``im2col_matrix`` also copies the im2col matrix this way: faster there.)

(Reducing the window array over its two small tap axes would give the same numbers several
times slower: NumPy's inner loops would then run over 2 or 3 values at a time.)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from eagerflow.tensor.errors import InvalidArgumentError, ShapeError, format_shape
from eagerflow.tensor.registry import Attrs, Shape
from eagerflow.tensor.schema import Ints, OneOf
from eagerflow.tensor.tensor import Tensor

Pair = tuple[int, int]
Dim = int | None

# The attribute schemas of the window ops: per-axis sizes (height, width), a padding, and a
# 4-entry shape whose batch and channels may be unknown
PAIR = Ints(min=1, length=2)
PADDING = OneOf("SAME", "VALID")
SIZES = Ints(min=0, length=4, unknown=True)
POOL_ATTRS = {"ksize": PAIR, "strides": PAIR, "padding": PADDING}
CONV_ATTRS = {"strides": PAIR, "padding": PADDING, "dilations": PAIR}


# --- attributes -----------------------------------------------------------------------------------
def as_pair(op_name: str, what: str, value: Any) -> Pair:
    """TensorFlow's spellings of a per-axis int (an int, 2 ints, or 4 with batch and channels
    1) as ``(height, width)``."""
    spelled = f"{op_name}: {what} must be an int or a list of 2 or 4 ints, got {value!r}"
    if isinstance(value, bool):
        raise TypeError(spelled)
    if isinstance(value, int | np.integer):
        values = [int(value)] * 2
    else:
        try:
            values = [operator.index(v) for v in value]
        except TypeError:
            raise TypeError(spelled) from None
    if len(values) == 4:
        if values[0] != 1 or values[3] != 1:
            raise InvalidArgumentError(
                f"{op_name}: {what} {values} must be 1 along batch and channels (NHWC)"
            )
        values = values[1:3]
    elif len(values) != 2:
        raise InvalidArgumentError(spelled)
    if min(values) < 1:
        raise InvalidArgumentError(f"{op_name}: {what} must be >= 1, got {values}")
    return values[0], values[1]


def check_padding(op_name: str, padding: Any) -> str:
    """``padding``, which must be ``\"SAME\"`` or ``\"VALID\"``."""
    if padding not in ("SAME", "VALID"):
        raise InvalidArgumentError(f'{op_name}: padding must be "SAME" or "VALID", got {padding!r}')
    return str(padding)


def check_data_format(op_name: str, data_format: Any) -> None:
    """Refuse any layout but NHWC, saying how to transpose NCHW input."""
    if data_format != "NHWC":
        raise InvalidArgumentError(
            f"{op_name}: only data_format='NHWC' is supported, got {data_format!r} "
            "(transpose NCHW input with transpose(x, (0, 2, 3, 1)))"
        )


def check_sizes(op_name: str, what: str, sizes: Any) -> tuple[Dim, Dim, Dim, Dim]:
    """A 4-entry shape attribute (``input_sizes``...): ints, or None for batch and channels."""
    if isinstance(sizes, Tensor):
        sizes = np.asarray(sizes).tolist()
    entries = [None if s is None else operator.index(s) for s in sizes]
    if len(entries) != 4 or entries[1] is None or entries[2] is None:
        raise InvalidArgumentError(
            f"{op_name}: {what} must be 4 sizes whose 2 spatial ones are known, got {sizes!r}"
        )
    return entries[0], entries[1], entries[2], entries[3]


# --- shapes ---------------------------------------------------------------------------------------
def out_size(size: Dim, k: Dim, stride: int, dilation: int, padding: str) -> Dim:
    """One spatial output size (None if ``size``, or for VALID the kernel size, is unknown)."""
    if size is None:
        return None
    if padding == "SAME":
        return -(-size // stride)  # ceil(size / stride), exact for ints
    if k is None:
        return None
    span = (k - 1) * dilation + 1  # the window's extent, holes included
    if size < span:
        raise ShapeError(
            f"a window spanning {span} (kernel {k}, dilation {dilation}) does not fit in "
            f"{size} with padding VALID"
        )
    return (size - span) // stride + 1


def pads_of(size: int, k: int, stride: int, dilation: int, padding: str) -> tuple[int, int]:
    """(before, after) padding along one spatial axis, TensorFlow's SAME arithmetic."""
    if padding == "VALID":
        return 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def check_rank4(what: str, shape: Shape) -> None:
    """Refuse a shape that is not [batch, height, width, channels]."""
    if len(shape) != 4:
        raise ShapeError(f"{what} must have rank 4 (NHWC), got shape {format_shape(shape)}")


def agree(a: Dim, b: Dim, message: Callable[[], str]) -> Dim:
    """``a`` or ``b``, whichever is known; ShapeError(message()) if both are and differ.
    (The message is a function: kernels check shapes on every call, and formatting them
    every time was a third of a small convolution's Python.)"""
    if a is not None and b is not None and a != b:
        raise ShapeError(message())
    return a if a is not None else b


def conv_out_size(x: Shape, kh: Dim, kw: Dim, attrs: Attrs) -> tuple[Dim, Dim]:
    """The output's height and width for input shape ``x`` and a ``kh`` x ``kw`` kernel."""
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    return (
        out_size(x[1], kh, sh, dh, attrs["padding"]),
        out_size(x[2], kw, sw, dw, attrs["padding"]),
    )


def conv2d_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """[n, h, w, c] conv [kh, kw, c, o] -> [n, out_h, out_w, o]."""
    x, f = shapes
    check_rank4("input", x)
    check_rank4("filters", f)
    agree(x[3], f[2], lambda: f"input {format_shape(x)} has {x[3]} channels but filters "
                               f"{format_shape(f)} expect {f[2]}")  # fmt: skip
    return [(x[0], *conv_out_size(x, f[0], f[1], attrs), f[3])]


def check_backprop(x: Shape, f: Shape, dy: Shape, attrs: Attrs) -> None:
    """Shared by both backprops: x, f, dy must be a conv2d's input, filters and output."""
    expected = (x[0], *conv_out_size(x, f[0], f[1], attrs), f[3])
    for e, d in zip(expected, dy, strict=True):
        agree(e, d, lambda: f"out_backprop {format_shape(dy)} is not the shape of conv2d's "
                             f"output {format_shape(expected)} for input {format_shape(x)} "
                             f"and filters {format_shape(f)}")  # fmt: skip


def conv2d_backprop_input_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """(filters, out_backprop) -> input_sizes (batch from out_backprop, channels from filters)."""
    f, dy = shapes
    check_rank4("filters", f)
    check_rank4("out_backprop", dy)
    n, h, w, c = attrs["input_sizes"]
    n = agree(n, dy[0], lambda: f"input_sizes {attrs['input_sizes']} and out_backprop "
                                 f"{format_shape(dy)} differ in batch")  # fmt: skip
    c = agree(c, f[2], lambda: f"input_sizes {attrs['input_sizes']} has {c} channels but "
                                f"filters {format_shape(f)} expect {f[2]}")  # fmt: skip
    x = (n, h, w, c)
    check_backprop(x, f, dy, attrs)
    return [x]


def conv2d_backprop_filter_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """(input, out_backprop) -> filter_sizes (channels in from input, out from out_backprop)."""
    x, dy = shapes
    check_rank4("input", x)
    check_rank4("out_backprop", dy)
    kh, kw, c, o = attrs["filter_sizes"]
    c = agree(c, x[3], lambda: f"filter_sizes {attrs['filter_sizes']} expect {c} channels "
                                f"but input {format_shape(x)} has {x[3]}")  # fmt: skip
    o = agree(o, dy[3], lambda: f"filter_sizes {attrs['filter_sizes']} and out_backprop "
                                 f"{format_shape(dy)} differ in output channels")  # fmt: skip
    f = (kh, kw, c, o)
    check_backprop(x, f, dy, attrs)
    return [f]


def pool_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """[n, h, w, c] -> [n, out_h, out_w, c]."""
    x = shapes[0]
    check_rank4("input", x)
    (kh, kw), (sh, sw), padding = attrs["ksize"], attrs["strides"], attrs["padding"]
    return [(x[0], out_size(x[1], kh, sh, 1, padding), out_size(x[2], kw, sw, 1, padding), x[3])]


def max_pool_grad_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """(orig_input, grad) -> orig_input's shape; grad has the pool's output shape."""
    x, g = shapes
    check_rank4("grad", g)
    (y,) = pool_shape([x], attrs)
    for a, b in zip(y, g, strict=True):
        agree(a, b, lambda: f"grad {format_shape(g)} is not the shape {format_shape(y)} of "
                             f"max_pool2d of {format_shape(x)}")  # fmt: skip
    return [x]


def max_pool_grad_grad_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """(orig_input, grad) -> the pool's output shape; grad has orig_input's shape."""
    x, g = shapes
    check_rank4("grad", g)
    for a, b in zip(x, g, strict=True):
        agree(
            a, b, lambda: f"grad {format_shape(g)} must have orig_input's shape {format_shape(x)}"
        )
    return pool_shape([tuple(b if a is None else a for a, b in zip(x, g, strict=True))], attrs)


def avg_pool_grad_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """grad -> orig_input_shape (its batch and channels from grad)."""
    g = shapes[0]
    check_rank4("grad", g)
    n, h, w, c = attrs["orig_input_shape"]
    x = (agree(n, g[0], lambda: "orig_input_shape and grad differ in batch"), h, w,
         agree(c, g[3], lambda: "orig_input_shape and grad differ in channels"))  # fmt: skip
    (y,) = pool_shape([x], attrs)
    for a, b in zip(y, g, strict=True):
        agree(a, b, lambda: f"grad {format_shape(g)} is not the shape {format_shape(y)} of "
                             f"avg_pool2d of {format_shape(x)}")  # fmt: skip
    return [x]


# --- windows and taps ----------------------------------------------------------------------------
def pad_input(
    x: np.ndarray, k: Pair, strides: Pair, dilations: Pair, padding: str, fill: float = 0.0
) -> tuple[np.ndarray, int, int]:
    """``x`` padded as ``padding`` says, with ``fill`` (not copied when there is nothing to
    add), and the output's height and width."""
    (kh, kw), (sh, sw), (dh, dw) = k, strides, dilations
    n, h, w, c = x.shape
    oh, ow = out_size(h, kh, sh, dh, padding), out_size(w, kw, sw, dw, padding)
    assert oh is not None and ow is not None  # (h and w are known: this is an array)
    (top, bottom), (left, right) = pads_of(h, kh, sh, dh, padding), pads_of(w, kw, sw, dw, padding)
    if top or bottom or left or right:
        padded = np.full((n, top + h + bottom, left + w + right, c), fill, x.dtype)
        padded[:, top : top + h, left : left + w, :] = x
        x = padded
    return x, oh, ow


def window_view(
    x: np.ndarray, k: Pair, strides: Pair, dilations: Pair, padding: str
) -> np.ndarray:  # fmt: skip
    """One window per output pixel: a read-only view [n, out_h, out_w, kh, kw, c] of the
    zero-padded ``x`` (no copy, but for the padding, if any).

    A view is a start and a step (a stride, in bytes) per axis. Tap (a, b) of window (i, j)
    reads padded[:, i·sh + a·dh, j·sw + b·dw, :], so the window axes step like the rows and
    columns times the strides, and the tap axes like them times the dilations. (That is
    what ``sliding_window_view``, then slicing with ``[::stride]`` and ``[::dilation]``,
    would give, at a fifth of its Python cost: convolutions on small images call this
    several times a step.) The taps go before the channels, as in the filters [kh, kw, c, o].
    """
    (kh, kw), (sh, sw), (dh, dw) = k, strides, dilations
    padded, oh, ow = pad_input(x, k, strides, dilations, padding)
    n, c = x.shape[0], x.shape[3]
    sn, srow, scol, sc = padded.strides
    return as_strided(
        padded,
        shape=(n, oh, ow, kh, kw, c),
        strides=(sn, srow * sh, scol * sw, srow * dh, scol * dw, sc),
        writeable=False,
    )


Where = tuple[slice, slice, slice]  # an index into a padded [n, h, w, c] input


def kernel_taps(k: Pair, strides: Pair, dilations: Pair, oh: int, ow: int) -> Iterator[Where]:
    """For each tap (a, b) of the kernel, row by row, where it reads the padded input:
    window (i, j) reads ``padded[:, i·sh + a·dh, j·sw + b·dw, :]``, so all the windows
    together read ``padded[where]``, a strided slice [n, out_h, out_w, c]."""
    (kh, kw), (sh, sw), (dh, dw) = k, strides, dilations
    for a in range(kh):
        for b in range(kw):
            rows = slice(a * dh, a * dh + (oh - 1) * sh + 1, sh)
            columns = slice(b * dw, b * dw + (ow - 1) * sw + 1, sw)
            yield slice(None), rows, columns


def im2col_matrix(
    x: np.ndarray, k: Pair, strides: Pair, dilations: Pair, padding: str
) -> tuple[np.ndarray, tuple[int, int, int]]:  # fmt: skip
    """The "im2col" matrix of a convolution, [windows, kh·kw·c]: one row per window, its
    values in the filters' order; and (n, out_h, out_w), the windows' grid.

    Copying ``window_view`` makes it in one line. With a single channel (the first layer of
    any grayscale network) that copy is slow: NumPy's inner loop would run over the kw
    values of a window row, a few at a time. Then each tap's column is copied instead (a
    strided slice of the input, copied whole), into a [kh·kw, windows] array whose
    transpose is the matrix: matmul reads a transposed matrix as it is. At 8x8 that is
    twice as fast, and the matmuls of the filters' gradient, which reads the columns, are
    faster too.
    """
    if x.shape[3] != 1:
        windows = window_view(x, k, strides, dilations, padding)
        n, oh, ow, kh, kw, c = windows.shape
        return windows.reshape(n * oh * ow, kh * kw * c), (n, oh, ow)
    padded, oh, ow = pad_input(x, k, strides, dilations, padding)
    n = x.shape[0]
    columns = np.empty((k[0] * k[1], n, oh, ow, 1), x.dtype)
    for t, where in enumerate(kernel_taps(k, strides, dilations, oh, ow)):
        columns[t] = padded[where]
    return columns.reshape(k[0] * k[1], n * oh * ow).T, (n, oh, ow)


def scatter_taps(
    value: Callable[[int], Any], shape: tuple[int, ...], k: Pair, strides: Pair,
    dilations: Pair, padding: str, dtype: Any,
) -> np.ndarray:  # fmt: skip
    """The adjoint of reading through the taps: an array of ``shape`` [n, h, w, c] in which
    ``value(t)`` [n, out_h, out_w, c], what tap t = a·kw + b of every window gives back, is
    added where that tap read. Windows may overlap, so a write through a view of windows
    would lose sums: one whole-batch add per tap instead (a plain write, which is faster,
    when windows are a stride or more apart, so that no cell is read twice)."""
    n, h, w, c = shape
    (kh, kw), (sh, sw), (dh, dw) = k, strides, dilations
    oh, ow = out_size(h, kh, sh, dh, padding), out_size(w, kw, sw, dw, padding)
    assert oh is not None and ow is not None
    (top, bottom), (left, right) = pads_of(h, kh, sh, dh, padding), pads_of(w, kw, sw, dw, padding)
    padded = np.zeros((n, top + h + bottom, left + w + right, c), dtype)
    apart = sh >= (kh - 1) * dh + 1 and sw >= (kw - 1) * dw + 1
    for t, where in enumerate(kernel_taps(k, strides, dilations, oh, ow)):
        if apart:
            padded[where] = value(t)
        else:
            padded[where] += value(t)
    return np.ascontiguousarray(padded[:, top : top + h, left : left + w, :])


__all__ = [
    "Dim",
    "Pair",
    "Where",
    "agree",
    "as_pair",
    "avg_pool_grad_shape",
    "check_backprop",
    "check_data_format",
    "check_padding",
    "check_rank4",
    "check_sizes",
    "conv2d_backprop_filter_shape",
    "conv2d_backprop_input_shape",
    "conv2d_shape",
    "conv_out_size",
    "im2col_matrix",
    "kernel_taps",
    "max_pool_grad_grad_shape",
    "max_pool_grad_shape",
    "out_size",
    "pad_input",
    "pads_of",
    "pool_shape",
    "scatter_taps",
    "window_view",
]
