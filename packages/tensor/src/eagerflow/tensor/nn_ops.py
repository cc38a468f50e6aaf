"""Neural-network ops: activations and softmax, with kernels that stay finite for huge inputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.tensor.dtypes import FLOATS, INTEGERS, NUMBERS, DType, float32
from eagerflow.tensor.errors import (
    DTypeError,
    InvalidArgumentError,
    OutOfRangeError,
    ShapeError,
    format_shape,
)
from eagerflow.tensor.execution import NO_ATTRS, execute
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.rules import compatible, names, normalize_axis, same_dtype, same_shape_rule
from eagerflow.tensor.schema import Float, Int
from eagerflow.tensor.tensor import Tensor, convert_to_tensor


def relu_kernel(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0).astype(x.dtype, copy=False)


@op("Relu", relu_kernel, shape=same_shape_rule, dtype=same_dtype(NUMBERS), retains_inputs=False)
def relu(x: Any, name: str | None = None) -> Tensor:
    """max(x, 0), elementwise."""
    return execute("Relu", (convert_to_tensor(x),), NO_ATTRS, name)[0]


def equal_shapes_rule(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """Two inputs of one shape (no broadcasting); the output has it too."""
    a, b = shapes
    if not compatible(a, b):
        raise ShapeError(
            f"needs two tensors of the same shape, got {format_shape(a)} and {format_shape(b)}"
        )
    return [tuple(y if x is None else x for x, y in zip(a, b, strict=True))]


def relu_grad_kernel(gradients: np.ndarray, outputs: np.ndarray) -> np.ndarray:
    # a multiply by the mask: NumPy's `where` on an unpredictable mask is several times slower
    if gradients.shape != outputs.shape:  # NumPy would broadcast them
        equal_shapes_rule([gradients.shape, outputs.shape], NO_ATTRS)
    return gradients * (outputs > 0)


@op(
    "ReluGrad",
    relu_grad_kernel,
    shape=equal_shapes_rule,
    dtype=same_dtype(NUMBERS),
    retains_inputs=False,
)
def relu_grad(gradients: Any, outputs: Any, name: str | None = None) -> Tensor:
    """The gradient of ``relu``: ``gradients`` masked by ``outputs > 0`` (one op, as in TF,
    rather than a compare, a cast and a multiply)."""
    inputs = (convert_to_tensor(gradients), convert_to_tensor(outputs))
    return execute("ReluGrad", inputs, NO_ATTRS, name)[0]


def softplus_kernel(x: np.ndarray) -> np.ndarray:
    # logaddexp(0, x), so a large x never overflows
    return np.logaddexp(np.zeros((), x.dtype), x)


@op(
    "Softplus",
    softplus_kernel,
    shape=same_shape_rule,
    dtype=same_dtype(FLOATS),
    retains_inputs=False,
)
def softplus(x: Any, name: str | None = None) -> Tensor:
    """log(1 + eˣ), elementwise: a smooth relu."""
    return execute("Softplus", (convert_to_tensor(x),), NO_ATTRS, name)[0]


def elu_kernel(x: np.ndarray) -> np.ndarray:
    # expm1 of min(x, 0), so a large x never overflows
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


@op("Elu", elu_kernel, shape=same_shape_rule, dtype=same_dtype(FLOATS), retains_inputs=False)
def elu(features: Any, name: str | None = None) -> Tensor:
    """The exponential linear unit: x for x > 0, eˣ - 1 below (smooth at 0, unlike relu)."""
    return execute("Elu", (convert_to_tensor(features),), NO_ATTRS, name)[0]


def leaky_relu_kernel(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x > 0, x, x * alpha).astype(x.dtype, copy=False)


@op(
    "LeakyRelu",
    leaky_relu_kernel,
    shape=same_shape_rule,
    dtype=same_dtype(FLOATS),
    attrs={"alpha": Float()},
    retains_inputs=False,
)
def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """x for x > 0, ``alpha``·x below: a relu whose negative side still has a gradient.

    Integer features are cast to float32 first, as TensorFlow does."""
    if isinstance(alpha, bool) or not isinstance(alpha, int | float | np.number):
        raise TypeError(f"leaky_relu: alpha must be a number, got {alpha!r}")
    features = convert_to_tensor(features)
    if features.dtype in INTEGERS:
        features = execute("Cast", (features,), {"dtype": float32})[0]
    return execute("LeakyRelu", (features,), {"alpha": float(alpha)}, name)[0]


def axis_shape_rule(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """Same shape out; ``attrs['axis']`` must be an axis of the input."""
    normalize_axis(attrs["axis"], len(shapes[0]))
    return same_shape_rule(shapes, attrs)


def softmax_kernel(x: np.ndarray, axis: int) -> np.ndarray:
    # the max is subtracted first, so eˣ cannot overflow
    normalize_axis(axis, x.ndim)  # a scalar has no axis to normalize along (NumPy's -1 would)
    if x.size == 0:  # nothing to normalize (and no max to subtract)
        return x.copy()
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@op(
    "Softmax",
    softmax_kernel,
    shape=axis_shape_rule,
    dtype=same_dtype(FLOATS),
    attrs={"axis": Int()},
    retains_inputs=False,
)
def softmax(logits: Any, axis: int = -1, name: str | None = None) -> Tensor:
    """Turn ``logits`` into probabilities along ``axis``: eˣ / Σ eˣ (they sum to 1 there)."""
    return execute("Softmax", (convert_to_tensor(logits),), {"axis": int(axis)}, name)[0]


def log_softmax_kernel(x: np.ndarray, axis: int) -> np.ndarray:
    # x - log Σ eˣ, shifted by the max so it is finite for any finite x
    normalize_axis(axis, x.ndim)
    if x.size == 0:
        return x.copy()
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


@op(
    "LogSoftmax",
    log_softmax_kernel,
    shape=axis_shape_rule,
    dtype=same_dtype(FLOATS),
    attrs={"axis": Int()},
    retains_inputs=False,
)
def log_softmax(logits: Any, axis: int = -1, name: str | None = None) -> Tensor:
    """log(softmax(logits)) along ``axis``, computed without overflow or log(0)."""
    return execute("LogSoftmax", (convert_to_tensor(logits),), {"axis": int(axis)}, name)[0]


# --- the fused loss ------------------------------------------------------------------------------
def _sparse_xent_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    logits, labels = shapes
    if not logits or not compatible(labels, logits[:-1]):
        raise ShapeError(
            f"labels {format_shape(labels)} must have the shape of logits "
            f"{format_shape(logits)} without its last axis"
        )
    if logits[-1] == 0:
        raise InvalidArgumentError("logits need at least one class (their last axis is empty)")
    return [tuple(logits[:-1]), tuple(logits)]


def _sparse_xent_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    logits, labels = dts
    if logits not in FLOATS or labels not in INTEGERS:
        raise DTypeError(f"needs float logits ({names(FLOATS)}) and integer labels "
                         f"({names(INTEGERS)}), got {logits} and {labels}")  # fmt: skip
    return [logits, logits]


def sparse_softmax_cross_entropy_kernel(
    logits: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    if labels.shape != logits.shape[:-1]:  # the reshapes below would hide a mismatch
        _sparse_xent_shape([logits.shape, labels.shape], NO_ATTRS)
    depth = logits.shape[-1]
    # As rows of a matrix, whatever the batch shape; ufunc.reduce and one fancy index per
    # step, because on arrays this small each NumPy call costs more than its arithmetic.
    flat = labels.reshape(-1)
    if flat.size and (np.minimum.reduce(flat) < 0 or np.maximum.reduce(flat) >= depth):
        bad = flat[(flat < 0) | (flat >= depth)][0]
        raise OutOfRangeError(f"label {bad} is out of range [0, {depth})")
    z, picked = logits.reshape(-1, depth), (np.arange(flat.size), flat)
    shifted = z - np.maximum.reduce(z, axis=1, keepdims=True)  # eᶻ cannot overflow
    exp = np.exp(shifted)
    total = np.add.reduce(exp, axis=1, keepdims=True)
    loss = np.log(total[:, 0]) - shifted[picked]
    backprop = np.divide(exp, total, out=exp)  # softmax(z), in place of eᶻ
    backprop[picked] -= 1
    return loss.reshape(labels.shape), backprop.reshape(logits.shape)


@op("SparseSoftmaxCrossEntropyWithLogits", sparse_softmax_cross_entropy_kernel,
    shape=_sparse_xent_shape, dtype=_sparse_xent_dtype, multi_output=True,
    retains_inputs=False)  # fmt: skip
def sparse_softmax_cross_entropy_with_logits(
    *, labels: Any, logits: Any, name: str | None = None
) -> Tensor:
    """-log softmax(logits)[label], one loss per example, as one fused op.

    ``labels`` are class indices with the shape of ``logits`` minus its last axis; a label
    outside ``[0, classes)`` is an ``OutOfRangeError`` (eagerly, or when a Session runs it).
    The op's second output is the loss's gradient, softmax(logits) - onehot(label): one
    pass computes both, as TensorFlow's fused kernel does, so the backward pass only scales
    it.
    """
    inputs = (convert_to_tensor(logits), convert_to_tensor(labels))
    return execute("SparseSoftmaxCrossEntropyWithLogits", inputs, NO_ATTRS, name)[0]


__all__ = [
    "log_softmax",
    "relu",
    "relu_grad",
    "softmax",
    "softplus",
    "sparse_softmax_cross_entropy_with_logits",
]
