"""Losses and metrics, composed from public ops (so their gradients come for free), except
the sparse softmax cross-entropy: one fused op, for speed, as in TensorFlow.

As in TensorFlow, the cross-entropy functions take keyword arguments only (``labels=``,
``logits=``): swapping the two is a classic silent bug. They return one loss per example;
take ``reduce_mean`` of the result for a batch loss. ``mean_squared_error`` is already the
mean.

Stability: every cross-entropy works from ``log_softmax``, ``softplus`` or the fused kernel,
which subtract the largest logit before exponentiating and so never overflow: logits of
magnitude 1e4 give finite losses and gradients.
"""

from __future__ import annotations

from typing import Any

import eagerflow.tensor as ef
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import DTypeError, ShapeError, describe
from eagerflow.tensor.rules import compatible


def _floats(name: str, labels: Any, predictions: Any) -> tuple[Tensor, Tensor]:
    """Both as tensors of the predictions' float dtype, with equal shapes (no broadcasting:
    labels of shape (n,) against predictions (n, 1) would silently give an (n, n) loss)."""
    predictions = ef.convert_to_tensor(predictions)
    if not predictions.dtype.is_floating:
        raise DTypeError(f"{name}: predictions must be floats, got {describe(predictions)}")
    labels = ef.convert_to_tensor(labels, _float_of(labels, predictions))
    if labels.dtype is not predictions.dtype:
        raise DTypeError(f"{name}: labels {describe(labels)} and predictions "
                         f"{describe(predictions)} must have the same dtype")  # fmt: skip
    if not compatible(labels.shape, predictions.shape):
        raise ShapeError(f"{name}: labels {describe(labels)} and predictions "
                         f"{describe(predictions)} must have the same shape")  # fmt: skip
    return labels, predictions


def _float_of(labels: Any, predictions: Tensor) -> Any:
    # NumPy or Python labels take the predictions' dtype; tensors keep their own.
    return None if ef.is_tensor(labels) else predictions.dtype


def mean_squared_error(labels: Any, predictions: Any) -> Tensor:
    """mean((predictions - labels)²), a scalar."""
    labels, predictions = _floats("mean_squared_error", labels, predictions)
    return ef.reduce_mean(ef.square(predictions - labels))


def softmax_cross_entropy_with_logits(*, labels: Any, logits: Any, axis: int = -1) -> Tensor:
    """-Σ labels · log softmax(logits) along ``axis``: one loss per example.

    ``labels`` is a probability distribution per example (one-hot, or soft labels).
    """
    labels, logits = _floats("softmax_cross_entropy_with_logits", labels, logits)
    return -ef.reduce_sum(labels * ef.log_softmax(logits, axis=axis), axis=axis)


def sparse_softmax_cross_entropy_with_logits(*, labels: Any, logits: Any) -> Tensor:
    """-log softmax(logits)[label] per example; ``labels`` are class indices, shape (batch,).

    The one loss that is a single fused op (``SparseSoftmaxCrossEntropyWithLogits``, as in
    TensorFlow): it is in every classifier's training step, and one kernel computing the loss
    and its gradient together is much cheaper than the five ops of one-hot and log-softmax.
    """
    name = "sparse_softmax_cross_entropy_with_logits"
    logits = ef.convert_to_tensor(logits)
    labels = ef.convert_to_tensor(labels)
    if not logits.dtype.is_floating or not labels.dtype.is_integer:
        raise DTypeError(f"{name}: needs integer labels and float logits, got labels "
                         f"{describe(labels)} and logits {describe(logits)}")  # fmt: skip
    depth = None if logits.shape is None else logits.shape[-1]
    if depth is None or not compatible(labels.shape, logits.shape[:-1]):
        raise ShapeError(f"{name}: labels {describe(labels)} must have the shape of logits "
                         f"{describe(logits)} without its last (known) axis")  # fmt: skip
    # the kernel checks every label is in [0, depth): eagerly, or when a Session runs it
    return ef.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def sigmoid_cross_entropy_with_logits(*, labels: Any, logits: Any) -> Tensor:
    """-z log σ(x) - (1 - z) log(1 - σ(x)), elementwise, for labels z and logits x.

    Computed as max(x, 0) - x z + log(1 + e^-|x|), which never overflows. The max and the
    -|x| are written with one ``where`` on x >= 0 (not relu and abs, whose gradients at 0
    are 0), so at x = 0 the gradient is the true σ(0) - z.
    """
    labels, logits = _floats("sigmoid_cross_entropy_with_logits", labels, logits)
    positive = logits >= 0
    relu_logits = ef.where(positive, logits, ef.zeros_like(logits))
    neg_abs_logits = ef.where(positive, -logits, logits)
    return relu_logits - logits * labels + ef.softplus(neg_abs_logits)


def accuracy(labels: Any, predictions: Any) -> Tensor:
    """The fraction of examples whose highest-scoring class is the label (a float32 scalar).

    ``labels`` are class indices (one axis fewer than ``predictions``) or one-hot rows (the
    same shape). Not differentiable: it counts.
    """
    predictions = ef.convert_to_tensor(predictions)
    labels = ef.convert_to_tensor(labels)
    if labels.shape is not None and predictions.shape is not None:
        if len(labels.shape) == len(predictions.shape):  # one-hot
            labels = ef.argmax(labels, axis=-1)
        elif len(labels.shape) != len(predictions.shape) - 1:
            raise ShapeError(f"accuracy: labels {describe(labels)} do not fit predictions "
                             f"{describe(predictions)}")  # fmt: skip
    predicted = ef.argmax(predictions, axis=-1)
    correct = ef.equal(predicted, ef.cast(labels, predicted.dtype))
    return ef.reduce_mean(ef.cast(correct, ef.float32))


__all__ = [
    "accuracy",
    "mean_squared_error",
    "sigmoid_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits",
]
