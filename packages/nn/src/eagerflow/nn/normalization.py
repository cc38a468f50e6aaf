"""``BatchNormalization``: the one layer that computes differently while training, and changes
its own state as it computes.

Training, it normalizes each channel with the statistics of the batch itself, and moves two
non-trainable variables, the moving mean and variance, towards them. At inference it uses
those moving statistics instead, so an example's output no longer depends on its batch.

Moving the statistics is an assignment, not a gradient step, and where it runs depends on the
mode (``Layer.add_update``): eagerly at once; in a ``function`` by the function itself (its
automatic control dependencies run every ``assign``); in a graph built for a Session only if
you run it, with the ops in ``layer.updates`` (or the model's), as TensorFlow 1.x asks::

    with control_dependencies(model.updates):
        train_op = optimizer.minimize(loss)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.nn import initializers
from eagerflow.nn.module import Layer, Shape
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import AxisError, InvalidArgumentError, ShapeError, format_shape
from eagerflow.tensor.rules import normalize_axis


class BatchNormalization(Layer):
    """Normalize each channel (each index along ``axis``, the last by default: the channels
    of NHWC images, the features of a Dense layer's output), then scale and shift it:

        out = γ · (x - mean) / √(variance + ε) + β

    with ``training=True`` the mean and variance of this batch, over every axis but ``axis``
    (for images: over the batch and all pixels), and otherwise the moving ones. Training also
    moves them, with ``momentum`` close to 1 for a long memory:

        moving = moving · momentum + batch · (1 - momentum)

    The batch variance is the biased one, mean((x - mean)²), in both places: normalizing uses
    it (as every framework does), and so does the moving variance, as in Keras 3 and in
    TensorFlow 2's Keras without its fused kernel. TensorFlow's fused kernel and PyTorch move
    towards the unbiased n/(n-1) · variance instead (n values per channel): a difference of
    about 1/n, negligible for the thousands of values a batch of images gives each channel.

    γ (``gamma``, with ``scale``) and β (``beta``, with ``center``) are trained; the moving
    statistics are not (``non_trainable_variables``), but checkpoints save them, since
    inference needs them. Keras's argument names and defaults.
    """

    def __init__(
        self,
        axis: int = -1,
        momentum: float = 0.99,
        epsilon: float = 1e-3,
        center: bool = True,
        scale: bool = True,
        beta_initializer: str | initializers.Initializer = "zeros",
        gamma_initializer: str | initializers.Initializer = "ones",
        moving_mean_initializer: str | initializers.Initializer = "zeros",
        moving_variance_initializer: str | initializers.Initializer = "ones",
        name: str | None = None,
        *,
        input_shape: Sequence[int] | None = None,
        batch_input_shape: Sequence[int | None] | None = None,
    ) -> None:
        super().__init__(name, input_shape=input_shape, batch_input_shape=batch_input_shape)
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise TypeError(f"BatchNormalization: axis must be an int, got {axis!r}")
        if not 0.0 <= momentum <= 1.0:
            raise InvalidArgumentError(
                f"BatchNormalization: momentum must be in [0, 1], got {momentum}"
            )
        if not epsilon > 0.0:  # (also refuses NaN) ε keeps √(variance + ε) away from 0
            raise InvalidArgumentError(f"BatchNormalization: epsilon must be > 0, got {epsilon}")
        self.axis = axis
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.center = center
        self.scale = scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)

    def build(self, input_shape: Shape | None) -> None:
        if input_shape is None:
            raise ShapeError(
                f"BatchNormalization '{self.name}': inputs must have a known rank, got "
                f"{format_shape(input_shape)}"
            )
        rank = len(input_shape)
        try:
            axis = normalize_axis(self.axis, rank)
        except AxisError as e:
            raise AxisError(
                f"BatchNormalization '{self.name}': axis {self.axis} is out of range for "
                f"inputs of shape {format_shape(input_shape)}"
            ) from e
        channels = input_shape[axis]
        if channels is None or axis == 0:
            raise ShapeError(
                f"BatchNormalization '{self.name}': the size along axis {self.axis} must be "
                f"known, and not the batch's, got inputs of shape {format_shape(input_shape)}"
            )
        self._rank, self._axis = rank, axis
        self._reduction_axes = [a for a in range(rank) if a != axis]
        # a (channels,) vector broadcasts against the inputs along the last axis as it is;
        # along another axis it must become [1, channels, 1, ...]
        self._broadcast_shape: tuple[int, ...] | None = None
        if axis != rank - 1:
            self._broadcast_shape = tuple(channels if a == axis else 1 for a in range(rank))
        # Keras's order: gamma, beta, moving_mean, moving_variance
        if self.scale:
            self.gamma = self.add_weight("gamma", (channels,), self.gamma_initializer)
        if self.center:
            self.beta = self.add_weight("beta", (channels,), self.beta_initializer)
        # not trained: moved by call itself (see _move), yet saved by checkpoints
        self.moving_mean = self.add_weight(
            "moving_mean", (channels,), self.moving_mean_initializer, trainable=False
        )
        self.moving_variance = self.add_weight(
            "moving_variance", (channels,), self.moving_variance_initializer, trainable=False
        )

    def compute_output_shape(self, input_shape: Shape | None) -> Shape | None:
        return input_shape

    def call(self, inputs: Any, training: bool = False) -> Tensor:
        inputs = ef.convert_to_tensor(inputs)
        self._check(inputs.shape)
        if training:
            mean = ef.reduce_mean(inputs, self._reduction_axes)
            centered = inputs - self._broadcast(mean)
            variance = ef.reduce_mean(ef.square(centered), self._reduction_axes)  # biased
            self.add_update([self._move(self.moving_mean, mean),
                             self._move(self.moving_variance, variance)])  # fmt: skip
        else:
            centered = inputs - self._broadcast(self.moving_mean)
            variance = self.moving_variance.read_value()
        # one (channels,) factor, γ / √(variance + ε), rather than three full-size ops
        factor = 1.0 / ef.sqrt(variance + self.epsilon)
        if self.scale:
            factor = factor * self.gamma
        outputs = centered * self._broadcast(factor)
        if self.center:
            outputs = outputs + self._broadcast(self.beta)
        return outputs

    def _move(self, moving: Variable, batch: Tensor) -> Any:
        """moving ← moving · momentum + batch · (1 - momentum), written as Keras writes it,
        moving -= (moving - batch) · (1 - momentum): one ``assign_sub``, which may update the
        variable's array in place. The batch statistic is a constant here: no gradient flows
        into an assignment."""
        return moving.assign_sub((moving - batch) * (1.0 - self.momentum), read_value=False)

    def _broadcast(self, vector: Any) -> Any:
        """A (channels,) vector shaped to broadcast against the inputs along ``axis``."""
        if self._broadcast_shape is None:
            return vector
        return ef.reshape(vector, self._broadcast_shape)

    def _check(self, shape: Shape | None) -> None:
        """The inputs have the rank and the number of channels the layer was built for."""
        channels = self.moving_mean.shape[0]
        if shape is not None and (
            len(shape) != self._rank or shape[self._axis] not in (None, channels)
        ):
            raise ShapeError(
                f"BatchNormalization '{self.name}' was built for inputs of rank {self._rank} "
                f"with {channels} channels along axis {self.axis}, but is called on inputs of "
                f"shape {format_shape(shape)}"
            )


__all__ = ["BatchNormalization"]
