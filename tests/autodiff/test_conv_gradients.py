"""Gradients of conv2d and the pools, first and second order, by central differences in
float64 on fixed geometries (tests/op_cases.py draws more; tests/graph/test_conv_in_graphs.py
differentiates them twice in a graph)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import check_gradients

rng = np.random.default_rng(3)
GEOMETRIES = list(itertools.product([1, 2], ["SAME", "VALID"], [1, 2]))


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize(("stride", "padding", "dilation"), GEOMETRIES)
def test_conv2d_and_its_backprops(order: int, stride: int, padding: str, dilation: int) -> None:
    x, w = rng.standard_normal((2, 5, 6, 2)), rng.standard_normal((2, 3, 2, 3))
    attrs: dict[str, Any] = {"strides": stride, "padding": padding, "dilations": dilation}

    def f(a: ef.Tensor, b: ef.Tensor) -> ef.Tensor:  # nonlinear, so order 2 is not trivial
        return ef.tanh(ef.nn.conv2d(a, b, **attrs))

    check_gradients(f, [x, w], order=order)
    dy = rng.standard_normal(ef.nn.conv2d(x, w, **attrs).numpy().shape)
    check_gradients(lambda b, g: ef.nn.conv2d_backprop_input(x.shape, b, g, **attrs) ** 2,
                    [w, dy], order=order)  # fmt: skip
    check_gradients(lambda a, g: ef.nn.conv2d_backprop_filter(a, w.shape, g, **attrs) ** 2,
                    [x, dy], order=order)  # fmt: skip


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
@pytest.mark.parametrize("pool", [ef.nn.max_pool2d, ef.nn.avg_pool2d])
def test_pools(order: int, padding: str, pool: object) -> None:
    x = rng.standard_normal((2, 5, 7, 2))
    for ksize, strides in [(2, 2), (3, 1), ([3, 2], [2, 1])]:
        # squared, so the second order runs MaxPoolGrad's (or AvgPoolGrad's) own gradient
        def f(t: ef.Tensor, ksize: object = ksize, strides: object = strides) -> ef.Tensor:
            return pool(t, ksize, strides, padding) ** 2  # type: ignore[operator]

        check_gradients(f, [x], order=order)
