"""Chapter 16 exercises — run `.venv/bin/pytest -m ch16`.

Reference solutions: the same functions as `exercises/ch16.py`, solved.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def conv2d_loops(images: np.ndarray, filters: np.ndarray) -> np.ndarray:
    """★★ ``conv2d(images, filters, strides=1, padding="VALID")``, written as loops."""
    batch, height, width, _ = images.shape
    kh, kw, _, out_channels = filters.shape
    out = np.zeros((batch, height - kh + 1, width - kw + 1, out_channels), images.dtype)
    for n in range(batch):
        for i in range(height - kh + 1):
            for j in range(width - kw + 1):
                window = images[n, i : i + kh, j : j + kw, :]
                for o in range(out_channels):
                    out[n, i, j, o] = np.sum(window * filters[..., o])
    return out


def conv2d_im2col(images: np.ndarray, filters: np.ndarray) -> np.ndarray:
    """★★★ The same convolution as ``conv2d_loops``, without a Python loop: im2col."""
    kh, kw, _, out_channels = filters.shape
    windows = sliding_window_view(images, (kh, kw), axis=(1, 2))  # (n, oh, ow, c, kh, kw)
    batch, out_h, out_w = windows.shape[:3]
    rows = windows.transpose(0, 1, 2, 4, 5, 3).reshape(batch * out_h * out_w, -1)
    out = rows @ filters.reshape(-1, out_channels)
    return out.reshape(batch, out_h, out_w, out_channels).astype(images.dtype, copy=False)


def avg_pool2d_grad(
    upstream: np.ndarray, input_shape: tuple[int, int, int, int], pool: int, stride: int
) -> np.ndarray:
    """★★ The gradient of ``avg_pool2d(x, ksize=pool, strides=stride, padding="VALID")``."""
    dx = np.zeros(input_shape, upstream.dtype)
    _, out_h, out_w, _ = upstream.shape
    for i in range(out_h):
        for j in range(out_w):
            window = dx[:, i * stride : i * stride + pool, j * stride : j * stride + pool, :]
            window += upstream[:, i : i + 1, j : j + 1, :] / pool**2
    return dx


def batch_norm_grad(
    x: np.ndarray, gamma: np.ndarray, upstream: np.ndarray, epsilon: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """★★★ Stretch: the gradient of batch normalization while it trains, in NumPy."""
    axes = tuple(range(x.ndim - 1))  # every axis but the channels'

    def mean(values: np.ndarray) -> np.ndarray:  # per channel, broadcastable against x
        return values.mean(axis=axes, keepdims=True)

    centred = x - mean(x)
    r = 1.0 / np.sqrt(mean(centred**2) + epsilon)
    x_hat = centred * r
    g = upstream * gamma  # the gradient with respect to x̂
    # through x̂ itself, through the mean (−mean(g)) and through the variance (−x̂·mean(g·x̂))
    dx = r * (g - mean(g) - x_hat * mean(g * x_hat))
    dgamma = (upstream * x_hat).sum(axis=axes)
    dbeta = upstream.sum(axis=axes)
    return dx.astype(x.dtype), dgamma.astype(x.dtype), dbeta.astype(x.dtype)
