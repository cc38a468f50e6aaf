"""``check_gradients``: compare the tape's gradients with numerical ones.

The numerical derivative is the float64 central difference

    ∂s/∂xⱼ ≈ (s(x + ε eⱼ) - s(x - ε eⱼ)) / 2ε        (error O(ε²))

of the scalar ``s(x) = Σ u · f(x)``, for a random ``u`` fixed per check, so every entry of
the Jacobian matters. For inputs with many elements it checks random directions ``v``
instead of every ``eⱼ``. Order 2 checks the first derivative the same way: its own gradient
comes from nested tapes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff.tape import GradientTape
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import format_shape


class GradientCheckError(AssertionError):
    """The analytic (tape) and numeric (finite difference) gradients disagree."""


def check_gradients(
    f: Callable[..., Tensor],
    inputs: Sequence[Any],
    order: int = 1,
    *,
    eps: float = 1e-6,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    max_elements: int = 64,
    directions: int = 8,
    seed: int = 0,
) -> float:
    """Check ``f``'s gradients (``order`` 1 or 2) at ``inputs``; return the largest error.

    ``f`` takes one tensor per input and returns a float tensor. Inputs are converted to
    float64. On a mismatch, raises ``GradientCheckError`` naming the input, the worst index,
    and the analytic and numeric values.
    """
    if not callable(f):
        raise TypeError(f"check_gradients: f must be a function of tensors, got {f!r:.40}")
    if order not in (1, 2):
        raise ValueError(f"check_gradients: order must be 1 or 2, got {order}")
    arrays = [np.array(x, dtype=np.float64) for x in inputs]
    rng = np.random.default_rng(seed)
    if order == 2:
        f = _first_derivative(f, arrays, rng)
    return _check_first_order(f, arrays, eps, rtol, atol, max_elements, directions, rng, order)


def _first_derivative(
    f: Callable[..., Tensor], arrays: list[np.ndarray], rng: np.random.Generator
) -> Callable[..., Tensor]:
    """x -> ∇ₓ Σ w · f(x), flattened and joined over inputs (itself differentiable)."""
    out_shape = f(*[ef.constant(a) for a in arrays]).shape
    weights = ef.constant(rng.standard_normal(out_shape))  # type: ignore[arg-type]

    def gradient_of_f(*xs: Tensor) -> Tensor:
        with GradientTape() as tape:
            tape.watch(list(xs))
            total = ef.reduce_sum(weights * f(*xs))
        grads = tape.gradient(total, list(xs), unconnected_gradients="zero")
        return ef.concat([ef.reshape(g, (-1,)) for g in grads], axis=0)

    return gradient_of_f


def _check_first_order(
    f: Callable[..., Tensor],
    arrays: list[np.ndarray],
    eps: float,
    rtol: float,
    atol: float,
    max_elements: int,
    directions: int,
    rng: np.random.Generator,
    order: int,
) -> float:
    tensors = [ef.constant(a) for a in arrays]
    with GradientTape() as tape:
        tape.watch(tensors)
        y = f(*tensors)
        if not y.dtype.is_floating:
            raise TypeError(f"check_gradients needs f to return a float tensor, got {y.dtype}")
        u = ef.constant(rng.standard_normal(y.shape))  # type: ignore[arg-type]
        total = ef.reduce_sum(u * ef.cast(y, ef.float64))
    analytic = tape.gradient(total, tensors, unconnected_gradients="zero")
    u_np = u.numpy()

    def s(values: list[np.ndarray]) -> float:
        out = f(*[ef.constant(v) for v in values]).numpy().astype(np.float64)
        return float(np.sum(u_np * out))

    worst = 0.0
    for i, (x, grad) in enumerate(zip(arrays, analytic, strict=True)):
        g = grad.numpy()
        probes: list[tuple[Any, np.ndarray]]
        if x.size <= max_elements:  # every element
            probes = [(_index(j, x.shape), _unit(x.shape, j)) for j in range(x.size)]
            label = "index"
        else:  # random directions
            probes = [(k, _direction(x.shape, rng)) for k in range(directions)]
            label = "random direction"
        for where, v in probes:
            plus = [a + eps * v if n == i else a for n, a in enumerate(arrays)]
            minus = [a - eps * v if n == i else a for n, a in enumerate(arrays)]
            numeric = (s(plus) - s(minus)) / (2 * eps)
            exact = float(np.sum(g * v))
            error = abs(exact - numeric)
            worst = max(worst, error)
            tolerance = atol + rtol * max(abs(exact), abs(numeric))
            if not error <= tolerance:
                raise GradientCheckError(
                    f"order-{order} gradient of input {i} (shape {format_shape(x.shape)}) is wrong "
                    f"at {label} {where}: analytic {exact:.10g}, numeric {numeric:.10g} "
                    f"(difference {error:.3g} > tolerance {tolerance:.3g})"
                )
    return worst


def _index(j: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(j, shape))


def _unit(shape: tuple[int, ...], j: int) -> np.ndarray:
    v = np.zeros(int(np.prod(shape)))
    v[j] = 1.0
    return v.reshape(shape)


def _direction(shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(shape)
    return v / np.linalg.norm(v)


__all__ = ["GradientCheckError", "check_gradients"]
