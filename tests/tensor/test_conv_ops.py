"""conv2d, max_pool2d and avg_pool2d (and the ops of their gradients) against plain-loop
references written here, and against PyTorch where it is installed and can say the same
thing (its layout is NCHW with [out, in, kh, kw] filters; its padding is symmetric)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef

rng = np.random.default_rng(7)


def _pads(size: int, k: int, stride: int, dilation: int, padding: str) -> tuple[int, int, int]:
    """(out, pad_before, pad_after), TensorFlow's arithmetic written out again."""
    span = (k - 1) * dilation + 1
    if padding == "VALID":
        return (size - span) // stride + 1, 0, 0
    out = math.ceil(size / stride)
    total = max((out - 1) * stride + span - size, 0)
    return out, total // 2, total - total // 2


def reference_conv(x: np.ndarray, w: np.ndarray, s: tuple[int, int], padding: str,
                   d: tuple[int, int]) -> np.ndarray:  # fmt: skip
    """out[n, i, j, o] = Σ x[n, i·s + a·d - pad, j·s + b·d - pad, c] w[a, b, c, o], loops."""
    n, h, wd, _ = x.shape
    kh, kw, _, o = w.shape
    oh, top, _ = _pads(h, kh, s[0], d[0], padding)
    ow, left, _ = _pads(wd, kw, s[1], d[1], padding)
    out = np.zeros((n, oh, ow, o))
    for b, i, j, a, bb in itertools.product(range(n), range(oh), range(ow), range(kh), range(kw)):
        r, q = i * s[0] + a * d[0] - top, j * s[1] + bb * d[1] - left
        if 0 <= r < h and 0 <= q < wd:
            out[b, i, j] += x[b, r, q] @ w[a, bb]
    return out


def reference_pool(x: np.ndarray, k: tuple[int, int], s: tuple[int, int], padding: str,
                   kind: str) -> np.ndarray:  # fmt: skip
    """Each window's max or mean over its real (unpadded) cells, loops."""
    n, h, w, c = x.shape
    oh, top, _ = _pads(h, k[0], s[0], 1, padding)
    ow, left, _ = _pads(w, k[1], s[1], 1, padding)
    out = np.zeros((n, oh, ow, c))
    for i, j in itertools.product(range(oh), range(ow)):
        r0, q0 = i * s[0] - top, j * s[1] - left
        window = x[:, max(r0, 0) : r0 + k[0], max(q0, 0) : q0 + k[1], :]
        out[:, i, j] = window.max(axis=(1, 2)) if kind == "max" else window.mean(axis=(1, 2))
    return out


SHAPES = [(1, 5, 5, 1), (2, 7, 6, 3), (3, 4, 9, 2)]  # odd sizes, batch > 1
CONVS = [
    pytest.param(shape, k, s, padding, d, id=f"{shape}-k{k}-s{s}-{padding}-d{d}")
    for shape in SHAPES
    for k, s, padding, d in itertools.product([(3, 3), (2, 3)], [1, 2], ["SAME", "VALID"], [1, 2])
    if padding == "SAME" or min(shape[1] - (k[0] - 1) * d, shape[2] - (k[1] - 1) * d) > 0
]  # (a VALID window must fit: that refusal is tested below)


@pytest.mark.parametrize(("shape", "k", "s", "padding", "d"), CONVS)
def test_conv2d_matches_the_loops(shape: Any, k: Any, s: int, padding: str, d: int) -> None:
    x = rng.standard_normal(shape)
    w = rng.standard_normal((*k, shape[3], 4))
    got = ef.nn.conv2d(x, w, strides=s, padding=padding, dilations=d)
    np.testing.assert_allclose(got.numpy(), reference_conv(x, w, (s, s), padding, (d, d)),
                               rtol=1e-12, atol=1e-12)  # fmt: skip


def test_conv2d_takes_tensorflows_spellings_of_strides() -> None:
    x, w = rng.standard_normal((2, 7, 8, 2)), rng.standard_normal((3, 2, 2, 3))
    expected = reference_conv(x, w, (2, 1), "SAME", (1, 2))
    for strides, dilations in [([2, 1], [1, 2]), ([1, 2, 1, 1], (1, 1, 2, 1))]:
        got = ef.nn.conv2d(x, w, strides, "SAME", "NHWC", dilations)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, atol=1e-12)
    y = ef.nn.conv2d(x.astype(np.float32), w.astype(np.float32), 1, "VALID")
    assert y.dtype == ef.float32 and y.shape == (2, 5, 7, 3)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize(("k", "s"), [((2, 2), 2), ((3, 3), 1), ((3, 2), 2), ((1, 1), 2)])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_pools_match_the_loops(shape: Any, kind: str, k: Any, s: int, padding: str) -> None:
    x = rng.standard_normal(shape)
    pool = ef.nn.max_pool2d if kind == "max" else ef.nn.avg_pool2d
    got = pool(x, ksize=list(k), strides=s, padding=padding)
    np.testing.assert_allclose(got.numpy(), reference_pool(x, k, (s, s), padding, kind),
                               rtol=1e-12, atol=1e-12)  # fmt: skip


def test_same_padding_never_wins_a_max_pool() -> None:
    x = -np.ones((1, 3, 3, 1)) * 5.0
    assert np.all(ef.nn.max_pool2d(x, 2, 2, "SAME").numpy() == -5.0)  # not the 0 of padding


# --- against PyTorch -------------------------------------------------------------------------
def _torch() -> Any:
    return pytest.importorskip("torch")


def _nchw(x: np.ndarray) -> Any:
    return _torch().tensor(x).permute(0, 3, 1, 2)


def _nhwc(t: Any) -> np.ndarray:
    return t.permute(0, 2, 3, 1).detach().numpy()


@pytest.mark.parametrize(("shape", "k", "s", "padding", "d"), CONVS)
def test_conv2d_matches_torch(shape: Any, k: Any, s: int, padding: str, d: int) -> None:
    torch = _torch()
    x = rng.standard_normal(shape)
    w = rng.standard_normal((*k, shape[3], 4))
    pads = [_pads(size, kk, s, d, padding) for size, kk in zip(shape[1:3], k, strict=True)]
    if any(before != after for _, before, after in pads):
        pytest.skip("SAME padding that is not symmetric: torch's padding cannot say it")
    expected = torch.nn.functional.conv2d(
        _nchw(x), torch.tensor(w).permute(3, 2, 0, 1), stride=s, dilation=d,
        padding=tuple(before for _, before, _ in pads),
    )  # fmt: skip
    got = ef.nn.conv2d(x, w, s, padding, dilations=d).numpy()
    np.testing.assert_allclose(got, _nhwc(expected), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize(("k", "s", "padding"), [
    ((2, 2), 2, "VALID"), ((3, 3), 1, "SAME"), ((3, 2), 2, "VALID"), ((3, 3), 2, "VALID"),
])  # fmt: skip
def test_pools_and_their_gradients_match_torch(kind: str, k: Any, s: int, padding: str) -> None:
    torch = _torch()
    x = rng.standard_normal((2, 7, 5, 3))
    x[0, 0, :2, 0] = x[0, 1, 0, 0] = 9.0  # ties at a maximum: the first (row-major) wins
    pads = [_pads(size, kk, s, 1, padding) for size, kk in zip(x.shape[1:3], k, strict=True)]
    assert all(before == after for _, before, after in pads)
    padding_ = tuple(before for _, before, _ in pads)
    xt = _nchw(x).requires_grad_()
    if kind == "max":
        yt = torch.nn.functional.max_pool2d(xt, k, s, padding=padding_)
        y = ef.nn.max_pool2d(x, k, s, padding)
    else:
        yt = torch.nn.functional.avg_pool2d(xt, k, s, padding=padding_, count_include_pad=False)
        y = ef.nn.avg_pool2d(x, k, s, padding)
    np.testing.assert_allclose(y.numpy(), _nhwc(yt), rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(y.numpy().shape)
    yt.backward(_nchw(g))
    if kind == "max":
        dx = ef.nn.max_pool_grad(x, g, k, s, padding)
    else:
        dx = ef.nn.avg_pool_grad(x.shape, g, k, s, padding)
    np.testing.assert_allclose(dx.numpy(), _nhwc(xt.grad), rtol=1e-12, atol=1e-12)


def test_conv2d_backprops_match_torch() -> None:
    torch = _torch()
    x, w = rng.standard_normal((2, 7, 6, 3)), rng.standard_normal((3, 3, 3, 2))
    xt = _nchw(x).requires_grad_()
    wt = torch.tensor(w).permute(3, 2, 0, 1).requires_grad_()
    yt = torch.nn.functional.conv2d(xt, wt, stride=2, dilation=2)
    g = rng.standard_normal(_nhwc(yt).shape)
    yt.backward(_nchw(g))
    dx = ef.nn.conv2d_backprop_input(x.shape, w, g, 2, "VALID", dilations=2)
    dw = ef.nn.conv2d_backprop_filter(x, w.shape, g, 2, "VALID", dilations=2)
    np.testing.assert_allclose(dx.numpy(), _nhwc(xt.grad), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(dw.numpy(), wt.grad.permute(2, 3, 1, 0).numpy(), rtol=1e-10,
                               atol=1e-10)  # fmt: skip


# --- the ties of max pooling -----------------------------------------------------------------
def test_max_pool_grad_gives_a_tie_to_the_first_maximum() -> None:
    x = np.array([[1.0, 3.0], [3.0, 3.0]]).reshape(1, 2, 2, 1)
    dx = ef.nn.max_pool_grad(x, np.full((1, 1, 1, 1), 5.0), 2, 2, "VALID")
    np.testing.assert_array_equal(dx.numpy().reshape(2, 2), [[0.0, 5.0], [0.0, 0.0]])
    back = ef.nn.max_pool_grad_grad(x, np.arange(4.0).reshape(1, 2, 2, 1), 2, 2, "VALID")
    np.testing.assert_array_equal(back.numpy().reshape(-1), [1.0])  # read at that same cell


def test_an_infinite_gradient_reaches_only_the_maximum() -> None:
    # (the kernel multiplies by a mask when the gradient is finite; 0 · inf would be NaN)
    x = np.array([[1.0, 3.0], [2.0, 0.0]]).reshape(1, 2, 2, 1)
    dx = ef.nn.max_pool_grad(x, np.full((1, 1, 1, 1), np.inf), 2, 2, "VALID")
    np.testing.assert_array_equal(dx.numpy().reshape(2, 2), [[0.0, np.inf], [0.0, 0.0]])


def test_overlapping_windows_add_their_gradients() -> None:
    x = np.array([0.0, 5.0, 1.0, 2.0]).reshape(1, 1, 4, 1)
    dx = ef.nn.max_pool_grad(x, np.ones((1, 1, 3, 1)), [1, 2], 1, "VALID")
    np.testing.assert_array_equal(dx.numpy().reshape(-1), [0.0, 2.0, 0.0, 1.0])


# --- refusals --------------------------------------------------------------------------------
def test_bad_input_is_a_clear_error() -> None:
    x, w = np.zeros((1, 4, 4, 3), np.float32), np.zeros((2, 2, 2, 5), np.float32)
    with pytest.raises(ef.ShapeError, match=r"Conv2D.*3 channels but filters"):
        ef.nn.conv2d(x, w, 1, "SAME")
    with pytest.raises(ef.ShapeError, match=r"rank 4"):
        ef.nn.conv2d(np.zeros((4, 4, 3), np.float32), w, 1, "SAME")
    with pytest.raises(ef.ShapeError, match=r"does not fit in 4 with padding VALID"):
        ef.nn.conv2d(x, np.zeros((5, 1, 3, 1), np.float32), 1, "VALID")
    with pytest.raises(ef.DTypeError, match=r"Conv2D"):
        ef.nn.conv2d(x, np.zeros((2, 2, 3, 1)), 1, "SAME")  # float32 with float64
    with pytest.raises(ef.DTypeError, match=r"MaxPool"):
        ef.nn.max_pool2d(np.zeros((1, 2, 2, 1), np.int32), 2, 2, "VALID")
    with pytest.raises(ef.InvalidArgumentError, match=r"padding must be \"SAME\" or \"VALID\""):
        ef.nn.conv2d(x, w, 1, "same")
    with pytest.raises(ef.InvalidArgumentError, match=r"NHWC"):
        ef.nn.avg_pool2d(x, 2, 2, "SAME", data_format="NCHW")
    with pytest.raises(ef.InvalidArgumentError, match=r"1 along batch and channels"):
        ef.nn.max_pool2d(x, [2, 2, 2, 2], 1, "SAME")
    with pytest.raises(ef.InvalidArgumentError, match=r">= 1"):
        ef.nn.conv2d(x, w, 0, "SAME")
    with pytest.raises(ef.ShapeError, match=r"out_backprop .* is not the shape"):
        ef.nn.conv2d_backprop_input((1, 4, 4, 2), w, np.zeros((1, 3, 3, 5), np.float32), 1,
                                    "SAME")  # fmt: skip
    with pytest.raises(ef.InvalidArgumentError, match=r"spatial ones are known"):
        ef.nn.avg_pool_grad((1, None, 4, 1), np.zeros((1, 2, 2, 1)), 2, 2, "SAME")
