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


# --- Keras' loss classes -------------------------------------------------------------------------
REDUCTIONS = ("sum_over_batch_size", "sum", "none")
EPSILON = 1e-7  # Keras' backend.epsilon(): how far probabilities are kept from 0 and 1


class Loss:
    """A Keras 3 loss object: ``loss(y_true, y_pred)`` gives one loss per example (the
    per-element losses averaged over the last axis), then reduces them by ``reduction``:

    - ``"sum_over_batch_size"`` (the default): their mean, a scalar;
    - ``"sum"``: their sum;
    - ``"none"``: the per-example losses themselves.

    Built from public ops, so gradients come for free; ``fit(loss=...)`` takes one as it takes
    any ``(labels, outputs)`` function. Unlike Keras, which computes in ``float32`` whatever
    it is given, the loss keeps the predictions' float dtype.
    """

    def __init__(self, reduction: str = "sum_over_batch_size", name: str | None = None) -> None:
        if reduction not in REDUCTIONS:
            raise ValueError(f"{type(self).__name__}: reduction must be one of {REDUCTIONS}, "
                             f"got {reduction!r}")  # fmt: skip
        self.reduction = reduction
        self.name = name or _snake(type(self).__name__)

    def call(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        """One loss per example (a subclass's formula)."""
        raise NotImplementedError(f"{type(self).__name__} must define call(y_true, y_pred)")

    def __call__(self, y_true: Any, y_pred: Any) -> Tensor:
        y_pred = ef.convert_to_tensor(y_pred)
        if not y_pred.dtype.is_floating:
            raise DTypeError(f"{self.name}: predictions must be floats, got {describe(y_pred)}")
        losses = self.call(ef.convert_to_tensor(y_true), y_pred)
        if self.reduction == "none":
            return losses
        total = ef.reduce_sum(losses)
        if self.reduction == "sum":
            return total
        return total / ef.cast(ef.size(losses), total.dtype)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _same(name: str, y_true: Tensor, y_pred: Tensor) -> Tensor:
    """``y_true`` cast to the predictions' dtype, checked to have their shape."""
    labels, _ = _floats(name, ef.cast(y_true, y_pred.dtype), y_pred)
    return labels


class MeanSquaredError(Loss):
    """mean((y_pred - y_true)²) over the last axis."""

    def call(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        y_true = _same(self.name, y_true, y_pred)
        return ef.reduce_mean(ef.square(y_pred - y_true), axis=-1)


class MeanAbsoluteError(Loss):
    """mean(|y_pred - y_true|) over the last axis."""

    def call(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        y_true = _same(self.name, y_true, y_pred)
        return ef.reduce_mean(ef.abs(y_pred - y_true), axis=-1)


class Huber(Loss):
    """½x² where the error x = |y_pred - y_true| is at most ``delta``, δ·x - ½δ² beyond (a
    straight line: large errors pull linearly, not quadratically); mean over the last axis."""

    def __init__(self, delta: float = 1.0, reduction: str = "sum_over_batch_size",
                 name: str | None = None) -> None:  # fmt: skip
        super().__init__(reduction, name)
        self.delta = float(delta)

    def call(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        y_true = _same(self.name, y_true, y_pred)
        error = ef.abs(y_pred - y_true)
        delta = ef.constant(self.delta, y_pred.dtype)
        half = ef.constant(0.5, y_pred.dtype)
        quadratic = half * ef.square(error)
        linear = delta * error - half * delta * delta
        return ef.reduce_mean(ef.where(error <= delta, quadratic, linear), axis=-1)


class _Probabilistic(Loss):
    def __init__(self, from_logits: bool = False, reduction: str = "sum_over_batch_size",
                 name: str | None = None) -> None:  # fmt: skip
        super().__init__(reduction, name)
        self.from_logits = bool(from_logits)


def _clipped(probabilities: Tensor) -> Tensor:
    # log(0) is -inf: Keras keeps probabilities in [ε, 1 - ε]
    return ef.clip_by_value(probabilities, EPSILON, 1.0 - EPSILON)


class BinaryCrossentropy(_Probabilistic):
    """-y log p - (1 - y) log(1 - p) per element, mean over the last axis; ``p`` is
    ``y_pred`` (probabilities, clipped to [ε, 1 - ε]) or σ(``y_pred``) with
    ``from_logits=True`` (then computed stably by ``sigmoid_cross_entropy_with_logits``)."""

    def call(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        y_true = _same(self.name, y_true, y_pred)
        if self.from_logits:
            elements = sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
        else:
            p = _clipped(y_pred)
            elements = -(y_true * ef.log(p) + (1.0 - y_true) * ef.log(1.0 - p))
        return ef.reduce_mean(elements, axis=-1)


class CategoricalCrossentropy(_Probabilistic):
    """-Σ y log p over the last axis, for one-hot (or soft) ``y_true``; ``p`` is ``y_pred``
    rescaled to sum to 1 and clipped, or softmax(``y_pred``) with ``from_logits=True``."""

    def call(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        y_true = _same(self.name, y_true, y_pred)
        if self.from_logits:
            return softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred)
        p = _clipped(y_pred / ef.reduce_sum(y_pred, axis=-1, keepdims=True))
        return -ef.reduce_sum(y_true * ef.log(p), axis=-1)


class SparseCategoricalCrossentropy(_Probabilistic):
    """-log p[label] per example, for integer class indices ``y_true`` (shape (batch,) or
    (batch, 1)); ``p`` as in ``CategoricalCrossentropy``."""

    def call(self, y_true: Tensor, y_pred: Tensor) -> Tensor:
        shape = y_true.shape
        if shape is not None and y_pred.shape is not None and len(shape) == len(y_pred.shape):
            y_true = ef.squeeze(y_true, axis=-1)  # Keras takes labels of shape (batch, 1)
        if y_true.dtype.is_floating:
            y_true = ef.cast(y_true, ef.int64)
        logits = y_pred
        if not self.from_logits:  # log p: log-softmax leaves normalised log-probabilities be
            logits = ef.log(_clipped(y_pred / ef.reduce_sum(y_pred, axis=-1, keepdims=True)))
        return sparse_softmax_cross_entropy_with_logits(labels=y_true, logits=logits)


__all__ = [
    "BinaryCrossentropy",
    "CategoricalCrossentropy",
    "Huber",
    "Loss",
    "MeanAbsoluteError",
    "MeanSquaredError",
    "SparseCategoricalCrossentropy",
    "accuracy",
    "mean_squared_error",
    "sigmoid_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits",
]
