"""Chapter 16 exercises — run `.venv/bin/pytest -m ch16`.

Convolutions and pooling by hand, in NumPy, the way `eagerflow.tensor.conv_ops` does them:
first a convolution as four nested loops over the output, then the same convolution with no
Python loop at all (im2col: every window becomes a row, and one matrix product does the
rest), then the gradient of average pooling.

Layouts are the chapter's (TensorFlow's): images are NHWC, ``(batch, height, width,
channels)``; filters are ``(kernel_height, kernel_width, in_channels, out_channels)``.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch16`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch16.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def conv2d_loops(images: np.ndarray, filters: np.ndarray) -> np.ndarray:
    """★★ ``conv2d(images, filters, strides=1, padding="VALID")``, written as loops.

    Each output pixel is the sum, over one ``kh x kw`` window of the input and over all
    input channels, of the window times the filter:

        out[n, i, j, o] = Σ_{di, dj, c} images[n, i + di, j + dj, c] · filters[di, dj, c, o]

    (Deep-learning "convolutions" do not flip the filter: this is a cross-correlation.)

    Args:
        images: ``(batch, height, width, in_channels)`` floats.
        filters: ``(kh, kw, in_channels, out_channels)`` floats.

    Returns:
        ``(batch, height - kh + 1, width - kw + 1, out_channels)``, the dtype of ``images``.

    Hint 1:
        Loop over the output: image, row, column and output channel. The three inner sums can be
        one NumPy call.

    Hint 2:
        The output is
        ``np.zeros((batch, height - kh + 1, width - kw + 1, out_channels), images.dtype)``; the
        window of output pixel (i, j) is ``images[n, i : i + kh, j : j + kw, :]``.

    Hint 3:
        The loop body: ``out[n, i, j, o] = np.sum(window * filters[..., o])``.
    """
    raise NotImplementedError


def conv2d_im2col(images: np.ndarray, filters: np.ndarray) -> np.ndarray:
    """★★★ The same convolution as ``conv2d_loops``, without a Python loop: im2col.

    ``sliding_window_view(images, (kh, kw), axis=(1, 2))`` is a *view* (no copy) of every
    ``kh x kw`` window: shape ``(batch, out_h, out_w, in_channels, kh, kw)``. Reshaped to
    one row per output pixel, ``(batch·out_h·out_w, kh·kw·in_channels)``, the convolution is
    one matrix product with the filters reshaped to ``(kh·kw·in_channels, out_channels)``,
    and a matrix product is the fastest thing NumPy does.

    Args and Returns: as ``conv2d_loops``.

    Hint 1:
        Every window becomes a row; the convolution is then one matrix product with the filters
        reshaped into a matrix.

    Hint 2:
        The view's last three axes are ``(in_channels, kh, kw)``, the filters' first three
        ``(kh, kw, in_channels)``: put them in the same order before reshaping, or the rows and
        the filter disagree on which number is which.

    Hint 3:
        ``rows = windows.transpose(0, 1, 2, 4, 5, 3).reshape(batch * out_h * out_w, -1)``, then
        ``rows @ filters.reshape(-1, out_channels)`` reshaped to
        ``(batch, out_h, out_w, out_channels)``. No ``for``: the test counts the lines of Python
        your function runs.
    """
    raise NotImplementedError


def avg_pool2d_grad(
    upstream: np.ndarray, input_shape: tuple[int, int, int, int], pool: int, stride: int
) -> np.ndarray:
    """★★ The gradient of ``avg_pool2d(x, ksize=pool, strides=stride, padding="VALID")``.

    Each output pixel is the mean of ``pool x pool`` input pixels, so each of those inputs
    receives ``1 / pool²`` of that output's gradient. When windows overlap (``stride <
    pool``) an input pixel sits in several windows and its gradient is the sum of what each
    window sends it:

        dx[n, i·s + di, j·s + dj, c] += upstream[n, i, j, c] / pool²

    Args:
        upstream: the gradient of the loss with respect to the pool's output,
            ``(batch, out_h, out_w, channels)``.
        input_shape: the shape of the pool's input ``x``.
        pool: the window's height and width.
        stride: the step between windows, both ways.

    Returns:
        The gradient with respect to ``x``: ``input_shape``, the dtype of ``upstream``.

    Hint 1:
        Each window sends ``1 / pool²`` of its output's gradient to each of its input pixels;
        where windows overlap, the shares add up.

    Hint 2:
        Start from ``np.zeros(input_shape, upstream.dtype)`` and loop over the output's rows
        ``i`` and columns ``j`` only: slices do the batch and the channels.

    Hint 3:
        ``dx[:, i*stride : i*stride + pool, j*stride : j*stride + pool, :] += upstream[:, i:i+1,
        j:j+1, :] / pool**2``: add, do not assign.
    """
    raise NotImplementedError


def batch_norm_grad(
    x: np.ndarray, gamma: np.ndarray, upstream: np.ndarray, epsilon: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """★★★ Stretch: the gradient of batch normalization while it trains, in NumPy.

    With ``training=True``, ``BatchNormalization`` normalizes each channel (the last axis)
    with the statistics of the batch: over every other axis (for images, the batch and every
    pixel), m numbers per channel,

        mean = Σ x / m,   var = Σ (x − mean)² / m,   x̂ = (x − mean) / √(var + ε),
        out = γ · x̂ + β.

    The mean and the variance are computed *from* ``x``: move one input and every output of
    its channel moves with them. So ``dx`` is not ``upstream · γ / √(var + ε)``: that is the
    gradient at inference, when the statistics are the moving ones, fixed.

    Open-ended: derive a formula on paper, or go back through the forward pass one step at a
    time (mean, centred, variance, x̂), in NumPy. The tests compare your three gradients with
    those a tape takes through the chapter's layer, on inputs you do not see (ranks 2 to 4).
    Then they give it a batch the size the chapter's first ``BatchNormalization`` sees, 64
    images of 8x8 with 16 channels, and count the lines of Python it runs: no loop.

    Args:
        x: The layer's input, any rank from 2 up, channels last.
        gamma: The scale γ, shape ``(channels,)``.
        upstream: The gradient of the loss with respect to ``out``, shaped as ``x``.
        epsilon: ε, added to the variance.

    Returns:
        ``(dx, dgamma, dbeta)``: the gradients of the loss with respect to ``x`` (shaped as
            ``x``), to γ and to β (shape ``(channels,)``), each the dtype of ``x``.

    Hint 1:
        ``dbeta`` and ``dgamma`` are sums over every axis but the last, of ``upstream`` and of
        ``upstream · x̂``. For ``dx``, start from ``g = upstream · γ``, the gradient with
        respect to x̂, and take it back through x̂ = (x − mean) · r, where r = 1 / √(var + ε)
        depends on every x of the channel too, as does the mean.

    Hint 2:
        Within a channel, ∂x̂ⱼ/∂xᵢ = r · (δᵢⱼ − 1/m − x̂ᵢ · x̂ⱼ / m): the 1/m comes through the
        mean, the x̂ᵢ · x̂ⱼ / m through the variance. ``dx`` is ``g`` summed against it over j.

    Hint 3:
        ``dx = r · (g − mean(g) − x̂ · mean(g · x̂))``, with the means per channel,
        ``axis=tuple(range(x.ndim - 1))`` and ``keepdims=True``.
    """
    raise NotImplementedError
