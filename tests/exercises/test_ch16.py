"""Chapter 16 exercises: convolutions and pooling by hand (`exercises/ch16.py`).

The inputs are drawn here, from seeds the reader does not see, and every answer is checked
against eagerflow's own ops (the convolution) or a tape (the gradient). The answers must be
NumPy: the tests watch the execution seam, and an eagerflow op run by the answer fails.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape
from eagerflow.tensor.execution import recording

pytestmark = pytest.mark.ch16


def conv_cases(seed: int, count: int = 6) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Random images and filters: odd sizes, non-square kernels, float32 and float64."""
    rng = np.random.default_rng(seed)
    for k in range(count):
        dtype = np.float64 if k % 2 else np.float32
        kh, kw = int(rng.integers(1, 4)), int(rng.integers(1, 5))
        shape = (int(rng.integers(1, 4)), kh + int(rng.integers(0, 6)),
                 kw + int(rng.integers(0, 6)), int(rng.integers(1, 4)))  # fmt: skip
        images = rng.normal(size=shape).astype(dtype)
        filters = rng.normal(size=(kh, kw, shape[3], int(rng.integers(1, 5)))).astype(dtype)
        yield images, filters


@contextmanager
def no_ops(exercise: str) -> Iterator[None]:
    """Fail if the body runs an eagerflow op: the exercise is to write it in NumPy."""
    seen: list[str] = []

    class Spy:
        def record(self, op: Any, inputs: Any, attrs: Any, outputs: Any) -> None:
            seen.append(op.name)

    with recording(Spy()):
        yield
    assert not seen, f"{exercise} ran eagerflow ops {seen}: write it with NumPy alone"


def lines_run(fn: Callable[..., Any], *args: Any) -> tuple[Any, int]:
    """``fn(*args)`` and how many lines of ``fn``'s source file Python ran during the call."""
    count = 0
    source = fn.__code__.co_filename

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename != source:
            return None  # don't trace NumPy or eagerflow
        if event == "line":
            count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        result = fn(*args)
    finally:
        sys.settrace(previous)
    return result, count


def reference_conv(images: np.ndarray, filters: np.ndarray) -> np.ndarray:
    return ef.nn.conv2d(images, filters, strides=1, padding="VALID").numpy()


def check_conv(name: str, got: Any, images: np.ndarray, filters: np.ndarray) -> None:
    want = reference_conv(images, filters)
    where = f"{name} on images {images.shape} {images.dtype}, filters {filters.shape}"
    assert isinstance(got, np.ndarray), f"{where}: expected a NumPy array, got {type(got)}"
    assert got.shape == want.shape, f"{where}: expected shape {want.shape}, got {got.shape}"
    assert got.dtype == images.dtype, f"{where}: expected dtype {images.dtype}, got {got.dtype}"
    rtol = 1e-4 if images.dtype == np.float32 else 1e-10
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=where)


# --- conv2d_loops ---------------------------------------------------------------------------------
def test_conv2d_loops_matches_conv2d_on_hidden_inputs(chapter):
    for images, filters in conv_cases(seed=1301):
        with no_ops("conv2d_loops"):
            got = chapter.conv2d_loops(images, filters)
        check_conv("conv2d_loops", got, images, filters)


def test_conv2d_loops_does_not_flip_the_filter(chapter):
    # One input pixel set, a filter whose every weight is different: the output shows the
    # filter as is (cross-correlation), or rotated by 180 degrees (a textbook convolution).
    images = np.zeros((1, 5, 5, 1))
    images[0, 2, 2, 0] = 1.0
    filters = np.arange(1.0, 10.0).reshape(3, 3, 1, 1)
    got = chapter.conv2d_loops(images, filters)
    want = reference_conv(images, filters)
    assert np.array_equal(got, want), (
        f"one pixel through the filter 1..9 should give the filter rotated, {want[0, :, :, 0]}, "
        f"got {np.asarray(got)[0, :, :, 0]}"
    )


# --- conv2d_im2col --------------------------------------------------------------------------------
def test_conv2d_im2col_matches_conv2d_on_hidden_inputs(chapter):
    for images, filters in conv_cases(seed=1302):
        with no_ops("conv2d_im2col"):
            got = chapter.conv2d_im2col(images, filters)
        check_conv("conv2d_im2col", got, images, filters)


def test_conv2d_im2col_runs_no_python_loop(chapter):
    rng = np.random.default_rng(1303)
    images = rng.normal(size=(4, 12, 10, 3))
    filters = rng.normal(size=(3, 2, 3, 5))  # 4·10·9 = 360 output pixels, 5 channels each
    got, lines = lines_run(chapter.conv2d_im2col, images, filters)
    check_conv("conv2d_im2col", got, images, filters)
    assert lines <= 40, (
        f"conv2d_im2col ran {lines} lines of Python for 360 output pixels: a loop is still "
        "there (a vectorised version runs about ten lines, whatever the input's size)"
    )


# --- avg_pool2d_grad ------------------------------------------------------------------------------
POOLS = [(2, 2), (3, 1), (3, 2), (2, 3)]  # (pool, stride): tiling, overlapping, with gaps


def tape_gradient(x: np.ndarray, upstream: np.ndarray, pool: int, stride: int) -> np.ndarray:
    """d(Σ avg_pool2d(x) · upstream)/dx, from a tape: the gradient the exercise writes."""
    xt = ef.constant(x)
    with GradientTape() as tape:
        tape.watch(xt)
        y = ef.nn.avg_pool2d(xt, ksize=pool, strides=stride, padding="VALID")
        loss = ef.reduce_sum(y * upstream)
    return tape.gradient(loss, xt).numpy()


@pytest.mark.parametrize(("pool", "stride"), POOLS)
def test_avg_pool2d_grad_matches_a_tape_on_hidden_inputs(chapter, pool, stride):
    rng = np.random.default_rng(1304 + 10 * pool + stride)
    for k in range(4):
        dtype = np.float64 if k % 2 else np.float32
        shape = (int(rng.integers(1, 3)), pool + int(rng.integers(0, 7)),
                 pool + int(rng.integers(0, 7)), int(rng.integers(1, 4)))  # fmt: skip
        x = rng.normal(size=shape).astype(dtype)
        out_shape = ef.nn.avg_pool2d(x, ksize=pool, strides=stride, padding="VALID").shape
        upstream = rng.normal(size=out_shape).astype(dtype)
        with no_ops("avg_pool2d_grad"):
            got = chapter.avg_pool2d_grad(upstream, shape, pool, stride)
        want = tape_gradient(x, upstream, pool, stride)
        where = f"avg_pool2d_grad(pool={pool}, stride={stride}) for an input of shape {shape}"
        assert isinstance(got, np.ndarray), f"{where}: expected a NumPy array, got {type(got)}"
        assert got.shape == shape, f"{where}: expected shape {shape}, got {got.shape}"
        assert got.dtype == dtype, f"{where}: expected dtype {np.dtype(dtype)}, got {got.dtype}"
        rtol = 1e-5 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol, err_msg=where)


# --- stretch: batch normalization's gradient ------------------------------------------------------
def layer_gradients(
    x: np.ndarray, gamma: np.ndarray, upstream: np.ndarray, epsilon: float
) -> list[np.ndarray]:
    """d(Σ out · upstream)/d(x, γ, β), ``out`` the chapter's layer training on ``x``: a tape."""
    layer = nn.BatchNormalization(epsilon=epsilon)
    layer.dtype = ef.as_dtype(x.dtype)  # (float64 too: its variables are made in build)
    layer.build(x.shape)
    layer.gamma.assign(gamma)
    xt = ef.constant(x)
    with GradientTape() as tape:
        tape.watch(xt)
        loss = ef.reduce_sum(layer(xt, training=True) * upstream)
    return [g.numpy() for g in tape.gradient(loss, [xt, layer.gamma, layer.beta])]


def check_batch_norm_grad(got: Any, x: np.ndarray, gamma: np.ndarray, upstream: np.ndarray,
                          epsilon: float) -> None:  # fmt: skip
    where = f"batch_norm_grad on x of shape {x.shape} {x.dtype}, ε = {epsilon}"
    assert isinstance(got, tuple | list) and len(got) == 3, (
        f"{where}: expected (dx, dgamma, dbeta), got {got!r:.200}"
    )
    channels = x.shape[-1]
    rtol = 1e-4 if x.dtype == np.float32 else 1e-10
    wanted = layer_gradients(x, gamma, upstream, epsilon)
    for name, mine, want in zip(("dx", "dgamma", "dbeta"), got, wanted, strict=True):
        shape = x.shape if name == "dx" else (channels,)
        assert isinstance(mine, np.ndarray), f"{where}: {name} should be a NumPy array"
        assert mine.shape == shape, f"{where}: {name} should have shape {shape}, got {mine.shape}"
        assert mine.dtype == x.dtype, f"{where}: {name} should be {x.dtype}, got {mine.dtype}"
        scale = float(np.abs(want).max())
        np.testing.assert_allclose(mine, want, rtol=rtol, atol=rtol * scale,
                                   err_msg=f"{where}: {name}, against a tape")  # fmt: skip


def test_batch_norm_grad_stretch_matches_a_tape_on_hidden_inputs(chapter):
    rng = np.random.default_rng(1305)
    for k in range(6):
        dtype = np.float64 if k % 3 else np.float32
        rank = 2 + k % 3  # a Dense layer's features, a sequence's, an image's channels
        shape = tuple(int(d) for d in rng.integers(2, 6, rank))
        x = (rng.normal(size=shape) * rng.uniform(0.5, 3) + rng.normal()).astype(dtype)
        gamma = rng.normal(size=shape[-1]).astype(dtype)
        upstream = rng.normal(size=shape).astype(dtype)
        epsilon = float(rng.choice([1e-3, 1e-2, 0.1]))
        with no_ops("batch_norm_grad"):
            got = chapter.batch_norm_grad(x, gamma, upstream, epsilon)
        check_batch_norm_grad(got, x, gamma, upstream, epsilon)


def test_batch_norm_grad_stretch_runs_no_python_loop(chapter):
    rng = np.random.default_rng(1306)
    shape = (64, 8, 8, 16)  # what the chapter's first BatchNormalization sees, per batch
    x = np.maximum(rng.normal(size=shape), 0).astype(np.float32)  # after a relu, as there
    gamma = rng.uniform(0.5, 1.5, 16).astype(np.float32)
    upstream = rng.normal(size=shape).astype(np.float32) / 64
    got, lines = lines_run(chapter.batch_norm_grad, x, gamma, upstream, 1e-3)
    check_batch_norm_grad(got, x, gamma, upstream, 1e-3)
    assert lines <= 40, (
        f"batch_norm_grad ran {lines} lines of Python for 16 channels of 4,096 numbers: a loop "
        "is still there (whole-array NumPy runs about ten lines, whatever the input's size)"
    )
