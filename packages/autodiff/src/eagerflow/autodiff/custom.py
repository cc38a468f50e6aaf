"""``custom_gradient``: a function that brings its own gradient.

The wrapped function runs with every tape paused; then one ``CustomGradient`` op connects
its inputs to its outputs on the seam. Tapes record that single op, and its gradient rule
calls the function's own ``grad_fn``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from eagerflow.autodiff.registry import OpRecord, register_gradient
from eagerflow.tensor import DType, Tensor, convert_to_tensor
from eagerflow.tensor.execution import execute, no_recording
from eagerflow.tensor.nest import flatten, pack_sequence_as
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.schema import Function, Int


def _outputs_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    return list(shapes[attrs["num_inputs"] :])


def _outputs_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    return list(dts[attrs["num_inputs"] :])


@op("CustomGradient", shape=_outputs_shape, dtype=_outputs_dtype,
    attrs={"num_inputs": Int(min=0), "grad_fn": Function()}, multi_output=True)  # fmt: skip
def custom_gradient_kernel(
    *values: np.ndarray, num_inputs: int, grad_fn: Callable[..., Any]
) -> tuple[np.ndarray, ...]:
    """Passes the function's outputs through; its inputs are there only for the gradient."""
    return values[num_inputs:]


@register_gradient("CustomGradient")
def _custom_gradient_grad(op: OpRecord, *grads: Tensor) -> tuple[Tensor | None, ...]:
    n = op.attrs["num_inputs"]
    result = op.attrs["grad_fn"](*grads)
    result = tuple(result) if isinstance(result, list | tuple) else (result,)
    if len(result) != n:
        raise ValueError(
            f"custom_gradient: grad_fn returned {len(result)} gradient(s), but the function "
            f"has {n} input(s): return one gradient (or None) per input"
        )
    return (*result, *(None,) * len(grads))


def custom_gradient(f: Callable[..., tuple[Any, Callable[..., Any]]]) -> Callable[..., Any]:
    """Decorator: ``f(*inputs)`` returns ``(y, grad_fn)``, where ``grad_fn(*dys)`` returns
    one gradient per input. Use it for numerically better or cheaper gradients.

    >>> @custom_gradient
    ... def log1pexp(x):
    ...     e = exp(x)
    ...     return log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))
    """

    @functools.wraps(f)
    def wrapper(*args: Any) -> Any:
        inputs = tuple(convert_to_tensor(a) for a in args)
        with no_recording():
            y, grad_fn = f(*inputs)
        ys = tuple(convert_to_tensor(t) for t in flatten(y))
        attrs = {"num_inputs": len(inputs), "grad_fn": grad_fn}
        outputs = execute("CustomGradient", (*inputs, *ys), attrs)
        return pack_sequence_as(y, outputs)

    return wrapper


__all__ = ["custom_gradient", "custom_gradient_kernel"]
