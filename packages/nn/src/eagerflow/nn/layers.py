"""The layers: ``Dense``, ``Flatten``, ``Dropout`` and ``Sequential`` (for images, see
``conv_layers.py``; ``BatchNormalization`` is in ``normalization.py``).

Each is a few ops in ``call``; the ops' gradients come from the autodiff package's rules, so
a layer never says how to differentiate itself.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import eagerflow.tensor as ef
from eagerflow.nn import activations, initializers
from eagerflow.nn.module import Layer, Model, Shape
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import InvalidArgumentError, ShapeError, format_shape


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``; the kernel's shape comes from the first input."""

    def __init__(
        self,
        units: int,
        activation: str | activations.Activation | None = None,
        use_bias: bool = True,
        kernel_initializer: str | initializers.Initializer = "glorot_uniform",
        bias_initializer: str | initializers.Initializer = "zeros",
        name: str | None = None,
        *,
        input_shape: Sequence[int] | None = None,
        batch_input_shape: Sequence[int | None] | None = None,
        input_dim: int | None = None,
    ) -> None:
        super().__init__(name, input_shape=input_shape, batch_input_shape=batch_input_shape,
                         input_dim=input_dim)  # fmt: skip
        if int(units) < 1:
            raise InvalidArgumentError(f"Dense: units must be >= 1, got {units}")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def build(self, input_shape: Shape | None) -> None:
        if input_shape is None or len(input_shape) != 2 or input_shape[-1] is None:
            raise ShapeError(
                f"Dense '{self.name}': inputs must have shape (batch, features) with known "
                f"features, got {format_shape(input_shape)}"
            )
        self.kernel = self.add_weight("kernel", (input_shape[-1], self.units),
                                      self.kernel_initializer)  # fmt: skip
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.units,), self.bias_initializer)

    def compute_output_shape(self, input_shape: Shape | None) -> Shape:
        return (*(input_shape or (None,))[:-1], self.units)

    def call(self, inputs: Any) -> Tensor:
        outputs = ef.matmul(inputs, self.kernel)
        if self.use_bias:
            outputs = outputs + self.bias
        return outputs if self.activation is None else self.activation(outputs)


class Flatten(Layer):
    """(batch, d1, d2, ...) -> (batch, d1·d2·...), in row-major order (the last axis varies
    fastest): for NHWC images, pixel (i, j)'s channels are entries (i·w + j)·c onwards, the
    order Keras's Flatten gives channels-last images, so a Dense kernel after it lines up."""

    def __init__(
        self,
        name: str | None = None,
        *,
        input_shape: Sequence[int] | None = None,
        batch_input_shape: Sequence[int | None] | None = None,
    ) -> None:
        super().__init__(name, input_shape=input_shape, batch_input_shape=batch_input_shape)

    def compute_output_shape(self, input_shape: Shape | None) -> Shape:
        return (None if not input_shape else input_shape[0], self._features(input_shape))

    def call(self, inputs: Any) -> Tensor:
        inputs = ef.convert_to_tensor(inputs)
        return ef.reshape(inputs, (-1, self._features(inputs.shape)))

    def _features(self, shape: Shape | None) -> int:
        """d1·d2·..., which must all be known."""
        if shape is None or len(shape) < 1 or None in shape[1:]:
            raise ShapeError(
                f"Flatten '{self.name}': needs known non-batch dims, got {format_shape(shape)}"
            )
        return math.prod(shape[1:])  # type: ignore[arg-type]  # (no None: checked above)


class Dropout(Layer):
    """While training, zero each input with probability ``rate`` and scale the rest by
    1 / (1 - rate), so the expected output equals the input; otherwise the identity."""

    def __init__(
        self,
        rate: float,
        name: str | None = None,
        *,
        input_shape: Sequence[int] | None = None,
        batch_input_shape: Sequence[int | None] | None = None,
    ) -> None:
        super().__init__(name, input_shape=input_shape, batch_input_shape=batch_input_shape)
        if not 0.0 <= rate < 1.0:
            raise InvalidArgumentError(f"Dropout: rate must be in [0, 1), got {rate}")
        self.rate = float(rate)

    def compute_output_shape(self, input_shape: Shape | None) -> Shape | None:
        return input_shape

    def call(self, inputs: Any, training: bool = False) -> Tensor:
        inputs = ef.convert_to_tensor(inputs)
        if not training or self.rate == 0.0:
            return inputs
        if inputs.shape is None or None in inputs.shape:
            raise ShapeError(
                f"Dropout '{self.name}': training needs a fully known input shape to draw its "
                f"mask, got {format_shape(inputs.shape)} (give the placeholder a batch size)"
            )
        keep = ef.random_uniform(inputs.shape, 0.0, 1.0, inputs.dtype) >= self.rate
        return inputs * ef.cast(keep, inputs.dtype) / (1.0 - self.rate)


class Sequential(Model):
    """Layers applied one after the other: ``Sequential([Dense(64, "relu"), Dense(10)])``.

    If the first layer is given its input shape (``Dense(64, "relu", input_shape=(784,))``),
    the model builds every layer at once, as Keras does, passing each layer's output shape
    to the next: its variables exist before the first call (a checkpoint can be restored).
    """

    def __init__(self, layers: Iterable[Layer] = (), name: str | None = None) -> None:
        super().__init__(name)
        self.layers: list[Layer] = []
        for layer in layers:
            self.add(layer)

    def add(self, layer: Layer) -> None:
        if not isinstance(layer, Layer):
            raise TypeError(
                f"Sequential '{self.name}': layer {len(self.layers)} must be a Layer, "
                f"got {layer!r} of type {type(layer).__name__}"
            )
        self.layers.append(layer)
        first = self.layers[0].batch_input_shape
        if first is not None:  # the model knows its input: build the new layer too
            self.built = False  # (the layers built already are left as they are)
            self.build(first)

    def build(self, input_shape: Shape | None) -> None:
        """Build each layer in turn from the output shape of the one before. A layer that
        cannot say its output shape (see ``Layer.compute_output_shape``) stops this: it and
        the layers after it build on the first call."""
        shape = input_shape
        for layer in self.layers:
            layer.build(shape)
            try:
                shape = layer.compute_output_shape(shape)
            except NotImplementedError:
                return
            layer.output_shape = shape
        self.output_shape = shape

    def compute_output_shape(self, input_shape: Shape | None) -> Shape | None:
        shape = input_shape
        for layer in self.layers:
            shape = layer.compute_output_shape(shape)
        return shape

    def call(self, inputs: Any, training: bool = False) -> Any:
        for layer in self.layers:
            inputs = layer(inputs, training=training)
        return inputs


__all__ = ["Dense", "Dropout", "Flatten", "Sequential"]
