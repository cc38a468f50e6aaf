"""Convolution and pooling ops, in TensorFlow's NHWC layout, and the ops of their gradients.

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

- ``_windows``: the input seen as an array of windows [n, out_h, out_w, kh, kw, c], without
  copying: a view with strides of its own (``numpy.lib.stride_tricks.as_strided``).
  Reshaped to a matrix, one row per window (that reshape copies: it *is* the "im2col"
  matrix), it lines up with the filters reshaped to [kh·kw·c, out_channels], so a
  convolution is one matmul;
- ``_taps``: tap (a, b) of the kernel reads, across all windows at once, one strided slice
  of the input. A pool is kh·kw whole-batch maximums or sums of those slices, and every
  gradient that goes back to the input is kh·kw whole-batch adds into them. (With a
  single channel, ``_im2col`` also copies the im2col matrix this way: faster there.)

(Reducing the window array over its two small tap axes would give the same numbers several
times slower: NumPy's inner loops would then run over 2 or 3 values at a time.)

The gradients are ops of their own, with TensorFlow's names: ``Conv2DBackpropInput``,
``Conv2DBackpropFilter``, ``MaxPoolGrad``, ``MaxPoolGradGrad`` and ``AvgPoolGrad``. The
sizes TensorFlow passes them as a tensor (the shape of the forward op's input or filters)
are attributes here (``input_sizes``, ``filter_sizes``, ``orig_input_shape``): the output
shape is then known when a graph is built. Only the spatial sizes must be known; the
batch and channel entries may be ``None``, since the other inputs tell them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from eagerflow.tensor.dtypes import FLOATS
from eagerflow.tensor.errors import InvalidArgumentError, ShapeError, format_shape
from eagerflow.tensor.execution import execute
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.rules import same_dtype
from eagerflow.tensor.tensor import Tensor, convert_to_tensor

Pair = tuple[int, int]
Dim = int | None


# --- attributes -----------------------------------------------------------------------------------
def _pair(op_name: str, what: str, value: Any) -> Pair:
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


def _padding(op_name: str, padding: Any) -> str:
    if padding not in ("SAME", "VALID"):
        raise InvalidArgumentError(f'{op_name}: padding must be "SAME" or "VALID", got {padding!r}')
    return str(padding)


def _data_format(op_name: str, data_format: Any) -> None:
    if data_format != "NHWC":
        raise InvalidArgumentError(
            f"{op_name}: only data_format='NHWC' is supported, got {data_format!r} "
            "(transpose NCHW input with transpose(x, (0, 2, 3, 1)))"
        )


def _sizes(op_name: str, what: str, sizes: Any) -> tuple[Dim, Dim, Dim, Dim]:
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
def _out_size(size: Dim, k: Dim, stride: int, dilation: int, padding: str) -> Dim:
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


def _pads(size: int, k: int, stride: int, dilation: int, padding: str) -> tuple[int, int]:
    """(before, after) padding along one spatial axis, TensorFlow's SAME arithmetic."""
    if padding == "VALID":
        return 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _rank4(what: str, shape: Shape) -> None:
    if len(shape) != 4:
        raise ShapeError(f"{what} must have rank 4 (NHWC), got shape {format_shape(shape)}")


def _agree(a: Dim, b: Dim, message: Callable[[], str]) -> Dim:
    """``a`` or ``b``, whichever is known; ShapeError(message()) if both are and differ.
    (The message is a function: kernels check shapes on every call, and formatting them
    every time was a third of a small convolution's Python.)"""
    if a is not None and b is not None and a != b:
        raise ShapeError(message())
    return a if a is not None else b


def _conv_out(x: Shape, kh: Dim, kw: Dim, attrs: Attrs) -> tuple[Dim, Dim]:
    (sh, sw), (dh, dw) = attrs["strides"], attrs["dilations"]
    return (
        _out_size(x[1], kh, sh, dh, attrs["padding"]),
        _out_size(x[2], kw, sw, dw, attrs["padding"]),
    )


def conv2d_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """[n, h, w, c] conv [kh, kw, c, o] -> [n, out_h, out_w, o]."""
    x, f = shapes
    _rank4("input", x)
    _rank4("filters", f)
    _agree(x[3], f[2], lambda: f"input {format_shape(x)} has {x[3]} channels but filters "
                               f"{format_shape(f)} expect {f[2]}")  # fmt: skip
    return [(x[0], *_conv_out(x, f[0], f[1], attrs), f[3])]


def _check_backprop(x: Shape, f: Shape, dy: Shape, attrs: Attrs) -> None:
    """Shared by both backprops: x, f, dy must be a conv2d's input, filters and output."""
    expected = (x[0], *_conv_out(x, f[0], f[1], attrs), f[3])
    for e, d in zip(expected, dy, strict=True):
        _agree(e, d, lambda: f"out_backprop {format_shape(dy)} is not the shape of conv2d's "
                             f"output {format_shape(expected)} for input {format_shape(x)} "
                             f"and filters {format_shape(f)}")  # fmt: skip


def conv2d_backprop_input_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """(filters, out_backprop) -> input_sizes (batch from out_backprop, channels from filters)."""
    f, dy = shapes
    _rank4("filters", f)
    _rank4("out_backprop", dy)
    n, h, w, c = attrs["input_sizes"]
    n = _agree(n, dy[0], lambda: f"input_sizes {attrs['input_sizes']} and out_backprop "
                                 f"{format_shape(dy)} differ in batch")  # fmt: skip
    c = _agree(c, f[2], lambda: f"input_sizes {attrs['input_sizes']} has {c} channels but "
                                f"filters {format_shape(f)} expect {f[2]}")  # fmt: skip
    x = (n, h, w, c)
    _check_backprop(x, f, dy, attrs)
    return [x]


def conv2d_backprop_filter_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """(input, out_backprop) -> filter_sizes (channels in from input, out from out_backprop)."""
    x, dy = shapes
    _rank4("input", x)
    _rank4("out_backprop", dy)
    kh, kw, c, o = attrs["filter_sizes"]
    c = _agree(c, x[3], lambda: f"filter_sizes {attrs['filter_sizes']} expect {c} channels "
                                f"but input {format_shape(x)} has {x[3]}")  # fmt: skip
    o = _agree(o, dy[3], lambda: f"filter_sizes {attrs['filter_sizes']} and out_backprop "
                                 f"{format_shape(dy)} differ in output channels")  # fmt: skip
    f = (kh, kw, c, o)
    _check_backprop(x, f, dy, attrs)
    return [f]


def pool_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """[n, h, w, c] -> [n, out_h, out_w, c]."""
    x = shapes[0]
    _rank4("input", x)
    (kh, kw), (sh, sw), padding = attrs["ksize"], attrs["strides"], attrs["padding"]
    return [(x[0], _out_size(x[1], kh, sh, 1, padding), _out_size(x[2], kw, sw, 1, padding), x[3])]


def max_pool_grad_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """(orig_input, grad) -> orig_input's shape; grad has the pool's output shape."""
    x, g = shapes
    _rank4("grad", g)
    (y,) = pool_shape([x], attrs)
    for a, b in zip(y, g, strict=True):
        _agree(a, b, lambda: f"grad {format_shape(g)} is not the shape {format_shape(y)} of "
                             f"max_pool2d of {format_shape(x)}")  # fmt: skip
    return [x]


def max_pool_grad_grad_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """(orig_input, grad) -> the pool's output shape; grad has orig_input's shape."""
    x, g = shapes
    _rank4("grad", g)
    for a, b in zip(x, g, strict=True):
        _agree(
            a, b, lambda: f"grad {format_shape(g)} must have orig_input's shape {format_shape(x)}"
        )
    return pool_shape([tuple(b if a is None else a for a, b in zip(x, g, strict=True))], attrs)


def avg_pool_grad_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """grad -> orig_input_shape (its batch and channels from grad)."""
    g = shapes[0]
    _rank4("grad", g)
    n, h, w, c = attrs["orig_input_shape"]
    x = (_agree(n, g[0], lambda: "orig_input_shape and grad differ in batch"), h, w,
         _agree(c, g[3], lambda: "orig_input_shape and grad differ in channels"))  # fmt: skip
    (y,) = pool_shape([x], attrs)
    for a, b in zip(y, g, strict=True):
        _agree(a, b, lambda: f"grad {format_shape(g)} is not the shape {format_shape(y)} of "
                             f"avg_pool2d of {format_shape(x)}")  # fmt: skip
    return [x]


# --- windows and taps ----------------------------------------------------------------------------
def _padded(
    x: np.ndarray, k: Pair, strides: Pair, dilations: Pair, padding: str, fill: float = 0.0
) -> tuple[np.ndarray, int, int]:
    """``x`` padded as ``padding`` says, with ``fill`` (not copied when there is nothing to
    add), and the output's height and width."""
    (kh, kw), (sh, sw), (dh, dw) = k, strides, dilations
    n, h, w, c = x.shape
    oh, ow = _out_size(h, kh, sh, dh, padding), _out_size(w, kw, sw, dw, padding)
    assert oh is not None and ow is not None  # (h and w are known: this is an array)
    (top, bottom), (left, right) = _pads(h, kh, sh, dh, padding), _pads(w, kw, sw, dw, padding)
    if top or bottom or left or right:
        padded = np.full((n, top + h + bottom, left + w + right, c), fill, x.dtype)
        padded[:, top : top + h, left : left + w, :] = x
        x = padded
    return x, oh, ow


def _windows(
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
    padded, oh, ow = _padded(x, k, strides, dilations, padding)
    n, c = x.shape[0], x.shape[3]
    sn, srow, scol, sc = padded.strides
    return as_strided(
        padded,
        shape=(n, oh, ow, kh, kw, c),
        strides=(sn, srow * sh, scol * sw, srow * dh, scol * dw, sc),
        writeable=False,
    )


Where = tuple[slice, slice, slice]  # an index into a padded [n, h, w, c] input


def _taps(k: Pair, strides: Pair, dilations: Pair, oh: int, ow: int) -> Iterator[Where]:
    """For each tap (a, b) of the kernel, row by row, where it reads the padded input:
    window (i, j) reads ``padded[:, i·sh + a·dh, j·sw + b·dw, :]``, so all the windows
    together read ``padded[where]``, a strided slice [n, out_h, out_w, c]."""
    (kh, kw), (sh, sw), (dh, dw) = k, strides, dilations
    for a in range(kh):
        for b in range(kw):
            rows = slice(a * dh, a * dh + (oh - 1) * sh + 1, sh)
            columns = slice(b * dw, b * dw + (ow - 1) * sw + 1, sw)
            yield slice(None), rows, columns


def _im2col(
    x: np.ndarray, k: Pair, strides: Pair, dilations: Pair, padding: str
) -> tuple[np.ndarray, tuple[int, int, int]]:  # fmt: skip
    """The "im2col" matrix of a convolution, [windows, kh·kw·c]: one row per window, its
    values in the filters' order; and (n, out_h, out_w), the windows' grid.

    Copying ``_windows`` makes it in one line. With a single channel (the first layer of
    any grayscale network) that copy is slow: NumPy's inner loop would run over the kw
    values of a window row, a few at a time. Then each tap's column is copied instead (a
    strided slice of the input, copied whole), into a [kh·kw, windows] array whose
    transpose is the matrix: matmul reads a transposed matrix as it is. At 8x8 that is
    twice as fast, and the matmuls of the filters' gradient, which reads the columns, are
    faster too.
    """
    if x.shape[3] != 1:
        windows = _windows(x, k, strides, dilations, padding)
        n, oh, ow, kh, kw, c = windows.shape
        return windows.reshape(n * oh * ow, kh * kw * c), (n, oh, ow)
    padded, oh, ow = _padded(x, k, strides, dilations, padding)
    n = x.shape[0]
    columns = np.empty((k[0] * k[1], n, oh, ow, 1), x.dtype)
    for t, where in enumerate(_taps(k, strides, dilations, oh, ow)):
        columns[t] = padded[where]
    return columns.reshape(k[0] * k[1], n * oh * ow).T, (n, oh, ow)


def _scatter_taps(
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
    oh, ow = _out_size(h, kh, sh, dh, padding), _out_size(w, kw, sw, dw, padding)
    assert oh is not None and ow is not None
    (top, bottom), (left, right) = _pads(h, kh, sh, dh, padding), _pads(w, kw, sw, dw, padding)
    padded = np.zeros((n, top + h + bottom, left + w + right, c), dtype)
    apart = sh >= (kh - 1) * dh + 1 and sw >= (kw - 1) * dw + 1
    for t, where in enumerate(_taps(k, strides, dilations, oh, ow)):
        if apart:
            padded[where] = value(t)
        else:
            padded[where] += value(t)
    return np.ascontiguousarray(padded[:, top : top + h, left : left + w, :])


# --- conv2d ---------------------------------------------------------------------------------------
def conv2d_kernel(
    x: np.ndarray, filters: np.ndarray, strides: Pair, padding: str, dilations: Pair
) -> np.ndarray:
    conv2d_shape([x.shape, filters.shape], {"strides": strides, "padding": padding,
                                            "dilations": dilations})  # fmt: skip
    kh, kw, c, o = filters.shape
    cols, (n, oh, ow) = _im2col(x, (kh, kw), strides, dilations, padding)
    # the im2col matrix [windows, kh·kw·c] against the filters as a [kh·kw·c, o] matrix:
    # one BLAS matmul makes every multiply-add, which is why a teaching framework can
    # afford convolutions at all (a loop over pixels would run in Python)
    return (cols @ filters.reshape(kh * kw * c, o)).reshape(n, oh, ow, o)


@op("Conv2D", conv2d_kernel, shape=conv2d_shape, dtype=same_dtype(FLOATS))
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
    _data_format("conv2d", data_format)
    attrs = {"strides": _pair("conv2d", "strides", strides), "padding": _padding("conv2d", padding),
             "dilations": _pair("conv2d", "dilations", dilations)}  # fmt: skip
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
    (top, bottom), (left, right) = _pads(h, kh, 1, dh, padding), _pads(w, kw, 1, dw, padding)
    span_h, span_w = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    before_h, before_w = span_h - 1 - top, span_w - 1 - left
    padded = np.zeros(
        (n, before_h + oh + span_h - 1 - bottom, before_w + ow + span_w - 1 - right, o), dy.dtype
    )
    padded[:, before_h : before_h + oh, before_w : before_w + ow, :] = dy
    flipped = filters[::-1, ::-1].transpose(0, 1, 3, 2).reshape(kh * kw * o, c)  # (a copy)
    cols, _ = _im2col(padded, (kh, kw), (1, 1), dilations, "VALID")
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
    return _scatter_taps(lambda t: back[t], full, (kh, kw), strides, dilations, padding,
                         dy.dtype)  # fmt: skip


@op("Conv2DBackpropInput", conv2d_backprop_input_kernel, shape=conv2d_backprop_input_shape,
    dtype=same_dtype(FLOATS))  # fmt: skip
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
    _data_format("conv2d_backprop_input", data_format)
    attrs = {
        "input_sizes": _sizes("conv2d_backprop_input", "input_sizes", input_sizes),
        "strides": _pair("conv2d_backprop_input", "strides", strides),
        "padding": _padding("conv2d_backprop_input", padding),
        "dilations": _pair("conv2d_backprop_input", "dilations", dilations),
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
    cols, (n, oh, ow) = _im2col(x, (kh, kw), strides, dilations, padding)
    # the forward pass's im2col matrix, transposed, against the output's gradient: one
    # matmul sums over every window of every image, [kh·kw·c, o]
    return (cols.T @ dy.reshape(n * oh * ow, o)).reshape(kh, kw, c, o)


@op("Conv2DBackpropFilter", conv2d_backprop_filter_kernel, shape=conv2d_backprop_filter_shape,
    dtype=same_dtype(FLOATS))  # fmt: skip
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
    _data_format("conv2d_backprop_filter", data_format)
    sizes = [None if s is None else operator.index(s) for s in filter_sizes]
    if len(sizes) != 4 or sizes[0] is None or sizes[1] is None:
        raise InvalidArgumentError(
            "conv2d_backprop_filter: filter_sizes must be 4 sizes whose kernel height and "
            f"width are known, got {filter_sizes!r}"
        )
    attrs = {
        "filter_sizes": tuple(sizes),
        "strides": _pair("conv2d_backprop_filter", "strides", strides),
        "padding": _padding("conv2d_backprop_filter", padding),
        "dilations": _pair("conv2d_backprop_filter", "dilations", dilations),
    }
    inputs = (convert_to_tensor(input), convert_to_tensor(out_backprop))
    return execute("Conv2DBackpropFilter", inputs, attrs, name)[0]


# --- pooling --------------------------------------------------------------------------------------
def _pool_attrs(op_name: str, ksize: Any, strides: Any, padding: Any) -> dict[str, Any]:
    return {"ksize": _pair(op_name, "ksize", ksize), "strides": _pair(op_name, "strides", strides),
            "padding": _padding(op_name, padding)}  # fmt: skip


def _pool_taps(x: np.ndarray, ksize: Pair, strides: Pair, padding: str,
               fill: float) -> list[np.ndarray]:  # fmt: skip
    """What each tap of every window reads, row by row: kh·kw views [n, out_h, out_w, c]."""
    padded, oh, ow = _padded(x, ksize, strides, (1, 1), padding, fill)
    return [padded[where] for where in _taps(ksize, strides, (1, 1), oh, ow)]


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
        np.maximum(out, value, out=out)
    return out


@op("MaxPool", max_pool_kernel, shape=pool_shape, dtype=same_dtype(FLOATS))
def max_pool2d(
    input: Any,
    ksize: int | Sequence[int],
    strides: int | Sequence[int],
    padding: str,
    data_format: str = "NHWC",
    name: str | None = None,
) -> Tensor:
    """The maximum of each ``ksize`` window of an NHWC ``input``, per channel, windows
    ``strides`` apart. With "SAME" padding the padded cells never count (as if -inf).

    Its gradient goes all to the window's maximum; where several cells tie, to the first in
    row-major order (TensorFlow's CPU kernel and PyTorch's do the same).
    """
    _data_format("max_pool2d", data_format)
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
    return _scatter_taps(lambda t: routed[t], x.shape, ksize, strides, (1, 1), padding,
                         grad.dtype)  # fmt: skip


@op("MaxPoolGrad", max_pool_grad_kernel, shape=max_pool_grad_shape, dtype=same_dtype(FLOATS))
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
    dtype=same_dtype(FLOATS))  # fmt: skip
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
    windows = _windows(ones, ksize, strides, (1, 1), padding)
    return np.sum(windows, axis=(3, 4))


def avg_pool_kernel(x: np.ndarray, ksize: Pair, strides: Pair, padding: str) -> np.ndarray:
    pool_shape([x.shape], {"ksize": ksize, "strides": strides, "padding": padding})
    taps = _pool_taps(x, ksize, strides, padding, fill=0.0)
    total = taps[0].copy()
    for value in taps[1:]:
        total += value
    return (total / _counts(x.shape, ksize, strides, padding)).astype(x.dtype, copy=False)


@op("AvgPool", avg_pool_kernel, shape=pool_shape, dtype=same_dtype(FLOATS))
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
    _data_format("avg_pool2d", data_format)
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
    return _scatter_taps(lambda t: share, full, ksize, strides, (1, 1), padding, grad.dtype)


@op("AvgPoolGrad", avg_pool_grad_kernel, shape=avg_pool_grad_shape, dtype=same_dtype(FLOATS))
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
        "orig_input_shape": _sizes("avg_pool_grad", "orig_input_shape", orig_input_shape),
        **_pool_attrs("avg_pool_grad", ksize, strides, padding),
    }
    return execute("AvgPoolGrad", (convert_to_tensor(grad),), attrs, name)[0]


__all__ = [
    "avg_pool2d",
    "avg_pool_grad",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "max_pool2d",
    "max_pool_grad",
    "max_pool_grad_grad",
]
