"""Neural-network ops: activations and softmax, with kernels that stay finite for huge inputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.tensor.dtypes import FLOATS, NUMBERS
from eagerflow.tensor.execution import NO_ATTRS, execute
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.rules import normalize_axis, same_dtype, same_shape_rule
from eagerflow.tensor.tensor import Tensor, convert_to_tensor


@op("Relu", shape=same_shape_rule, dtype=same_dtype(NUMBERS))
def relu_kernel(x: np.ndarray) -> np.ndarray:
    """max(x, 0), elementwise."""
    return np.maximum(x, 0).astype(x.dtype, copy=False)


def relu(x: Any, name: str | None = None) -> Tensor:
    """max(x, 0), elementwise."""
    return execute("Relu", (convert_to_tensor(x),), NO_ATTRS, name)[0]


@op("Softplus", shape=same_shape_rule, dtype=same_dtype(FLOATS))
def softplus_kernel(x: np.ndarray) -> np.ndarray:
    """log(1 + eˣ), elementwise, computed as logaddexp(0, x) so large x never overflows."""
    return np.logaddexp(np.zeros((), x.dtype), x)


def softplus(x: Any, name: str | None = None) -> Tensor:
    """log(1 + eˣ), elementwise: a smooth relu."""
    return execute("Softplus", (convert_to_tensor(x),), NO_ATTRS, name)[0]


def axis_shape_rule(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """Same shape out; ``attrs['axis']`` must be an axis of the input."""
    normalize_axis(attrs["axis"], len(shapes[0]))
    return same_shape_rule(shapes, attrs)


@op("Softmax", shape=axis_shape_rule, dtype=same_dtype(FLOATS))
def softmax_kernel(x: np.ndarray, axis: int) -> np.ndarray:
    """eˣ / Σ eˣ along ``axis``; the max is subtracted first, so eˣ cannot overflow."""
    if x.size == 0:  # nothing to normalize (and no max to subtract)
        return x.copy()
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax(logits: Any, axis: int = -1, name: str | None = None) -> Tensor:
    """Turn ``logits`` into probabilities along ``axis`` (they sum to 1 there)."""
    return execute("Softmax", (convert_to_tensor(logits),), {"axis": int(axis)}, name)[0]


@op("LogSoftmax", shape=axis_shape_rule, dtype=same_dtype(FLOATS))
def log_softmax_kernel(x: np.ndarray, axis: int) -> np.ndarray:
    """x - log Σ eˣ along ``axis``, shifted by the max so it is finite for any finite x."""
    if x.size == 0:
        return x.copy()
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def log_softmax(logits: Any, axis: int = -1, name: str | None = None) -> Tensor:
    """log(softmax(logits)) along ``axis``, computed without overflow or log(0)."""
    return execute("LogSoftmax", (convert_to_tensor(logits),), {"axis": int(axis)}, name)[0]
