"""Initializers: how a layer's variables get their first values.

An initializer is a function ``(shape, dtype) -> Tensor``. The random ones draw from the
tensor package's one generator, so ``eagerflow.tensor.set_seed`` makes them reproducible. In a
graph they add a random op, so each Session draws its own values when it runs the variable's
initializer (as TensorFlow 1.x does).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import eagerflow.tensor as ef
from eagerflow.tensor import DType, Tensor

Initializer = Callable[[Sequence[int], DType], Tensor]


def zeros(shape: Sequence[int], dtype: DType = ef.float32) -> Tensor:
    """All zeros (Keras' ``\"zeros\"``): biases start here."""
    return ef.zeros(shape, dtype)


def ones(shape: Sequence[int], dtype: DType = ef.float32) -> Tensor:
    """All ones (Keras' ``\"ones\"``): a normalization's scale starts here."""
    return ef.ones(shape, dtype)


def constant(value: float = 0.0) -> Initializer:
    """Every element ``value`` (TensorFlow's ``constant_initializer`` for a number)."""

    def initializer(shape: Sequence[int], dtype: DType = ef.float32) -> Tensor:
        return ef.fill(shape, dtype.np.type(value))  # a NumPy scalar: Fill's dtype

    return initializer


def random_normal(mean: float = 0.0, stddev: float = 0.05) -> Initializer:
    """Draws from N(mean, stddev²) (Keras' defaults)."""

    def initializer(shape: Sequence[int], dtype: DType = ef.float32) -> Tensor:
        return ef.random_normal(shape, mean, stddev, dtype)

    return initializer


def glorot_uniform(shape: Sequence[int], dtype: DType = ef.float32) -> Tensor:
    """Uniform on [-l, l] with l = √(6 / (fan_in + fan_out)), which keeps the variance of
    activations and of gradients about the same from layer to layer (Glorot & Bengio, 2010)."""
    fan_in, fan_out = _fans(shape)
    limit = math.sqrt(6.0 / max(1, fan_in + fan_out))
    return ef.random_uniform(shape, -limit, limit, dtype)


def _fans(shape: Sequence[int]) -> tuple[int, int]:
    """How many inputs feed each output (fan_in) and how many outputs each input feeds
    (fan_out), as Keras counts them: for a Dense kernel [in, out] that is (in, out); for a
    convolution kernel [kh, kw, in, out] each output sums kh·kw·in products, and each input
    reaches kh·kw·out outputs, so both are multiplied by the receptive field kh·kw."""
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = math.prod(shape[:-2])  # kh·kw (1 for a Dense kernel)
    return shape[-2] * receptive, shape[-1] * receptive


_BY_NAME: dict[str, Initializer] = {
    "zeros": zeros,
    "ones": ones,
    "glorot_uniform": glorot_uniform,
    "random_normal": random_normal(),
}


def get(initializer: str | Initializer) -> Initializer:
    """An initializer from its name (``"glorot_uniform"``) or itself."""
    if callable(initializer):
        return initializer
    if initializer not in _BY_NAME:
        raise ValueError(f"unknown initializer {initializer!r}; known: {sorted(_BY_NAME)}")
    return _BY_NAME[initializer]


__all__ = ["Initializer", "constant", "get", "glorot_uniform", "ones", "random_normal", "zeros"]
