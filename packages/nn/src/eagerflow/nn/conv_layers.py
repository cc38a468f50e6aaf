"""The layers of a convolutional network: ``Conv2D``, ``MaxPooling2D`` and ``AveragePooling2D``.

Images are NHWC, ``(batch, height, width, channels)``, as in Keras and TensorFlow, and a
kernel is ``[kernel_height, kernel_width, in_channels, filters]``. Each layer is one op of the
tensor package (``ef.nn.conv2d``, ``max_pool2d``, ``avg_pool2d``), whose gradients the autodiff
package already knows. What a layer adds is the bookkeeping: Keras's argument names and
defaults (lowercase ``padding="valid"``, ``strides`` that default to the pool size), the
kernel made from the first input's channels, and errors that name the layer.

A layer says its output shape without computing it (``compute_output_shape``) by asking the
op's own static shape rule in the op registry, so TensorFlow's arithmetic lives in one place
(``conv_ops.py``): along each spatial axis, with k the window's extent ((kernel - 1) ·
dilation + 1),

    "valid": out = ⌊(in - k) / stride⌋ + 1        "same": out = ⌈in / stride⌉
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

import eagerflow.tensor as ef
from eagerflow.nn import activations, initializers
from eagerflow.nn.module import Layer, Shape
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import EagerflowError, InvalidArgumentError, ShapeError, format_shape
from eagerflow.tensor.registry import get_op

Pair = tuple[int, int]


def _pair(layer: str, what: str, value: Any) -> Pair:
    """Keras's spellings of a per-axis size (one int for both axes, or (height, width)) as a
    pair of ints >= 1."""
    spelled = f"{layer}: {what} must be an int or a pair of ints, got {value!r}"
    try:
        if isinstance(value, bool):  # an int to Python, but never meant as a size
            raise TypeError
        if isinstance(value, Sequence):
            values = [operator.index(v) for v in value]
        else:
            values = [operator.index(value)] * 2
    except TypeError:
        raise TypeError(spelled) from None
    if len(values) != 2:
        raise InvalidArgumentError(spelled)
    if min(values) < 1:
        raise InvalidArgumentError(f"{layer}: {what} must be >= 1, got {value!r}")
    return values[0], values[1]


def _padding(layer: str, padding: Any) -> str:
    """``"valid"`` or ``"same"``, in any case (Keras writes them lowercase, the ops uppercase)."""
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
        raise InvalidArgumentError(f'{layer}: padding must be "valid" or "same", got {padding!r}')
    return padding.lower()


def _images(layer: Layer, shape: Shape | None, channels: int | None = None) -> Shape:
    """``shape`` if it is that of images (rank 4) with ``channels`` channels (when the layer
    has a kernel for so many); else a ShapeError naming the layer."""
    kind = type(layer).__name__
    if shape is None or len(shape) != 4:
        raise ShapeError(
            f"{kind} '{layer.name}': inputs must be images of shape (batch, height, width, "
            f"channels) (NHWC), got {format_shape(shape)}"
        )
    if channels is not None and shape[3] is not None and shape[3] != channels:
        raise ShapeError(
            f"{kind} '{layer.name}' was built for inputs with {channels} channels, but is "
            f"called on inputs of shape {format_shape(shape)}"
        )
    return shape


def _static_shape(layer: Layer, op_name: str, shapes: list[Shape], attrs: dict[str, Any]) -> Shape:
    """The output shape the op ``op_name`` would give, from its registered shape rule (the
    one a graph uses to give its nodes shapes), with the layer named if the images do not
    fit (a "valid" window larger than the image)."""
    try:
        (shape,) = get_op(op_name).shape_rule(shapes, attrs)
    except EagerflowError as e:
        raise ShapeError(f"{type(layer).__name__} '{layer.name}': {e}") from None
    return tuple(shape)


class Conv2D(Layer):
    """``activation(conv2d(inputs, kernel) + bias)`` over NHWC images: each of ``filters``
    output channels is a learned ``kernel_size`` window slid over the image,

        out[n, i, j, o] = bias[o] + Σ_{a,b,c} in[n, i·sh + a·dh, j·sw + b·dw, c] · kernel[a,b,c,o]

    with (sh, sw) the ``strides`` and (dh, dw) the ``dilation_rate``. The kernel,
    ``[kh, kw, in_channels, filters]``, takes its ``in_channels`` from the first input.
    ``padding="same"`` pads with zeros so that out = ⌈in / stride⌉; ``"valid"`` does not pad.
    Its Glorot limit counts each kernel tap: fan_in = kh·kw·in, fan_out = kh·kw·filters.
    """

    def __init__(
        self,
        filters: int,
        kernel_size: int | Sequence[int],
        strides: int | Sequence[int] = 1,
        padding: str = "valid",
        activation: str | activations.Activation | None = None,
        use_bias: bool = True,
        kernel_initializer: str | initializers.Initializer = "glorot_uniform",
        bias_initializer: str | initializers.Initializer = "zeros",
        dilation_rate: int | Sequence[int] = 1,
        name: str | None = None,
        *,
        input_shape: Sequence[int] | None = None,
        batch_input_shape: Sequence[int | None] | None = None,
    ) -> None:
        super().__init__(name, input_shape=input_shape, batch_input_shape=batch_input_shape)
        if isinstance(filters, bool) or not isinstance(filters, int | np.integer):
            raise TypeError(f"Conv2D: filters must be an int, got {filters!r}")
        if filters < 1:
            raise InvalidArgumentError(f"Conv2D: filters must be >= 1, got {filters}")
        self.filters = int(filters)
        self.kernel_size = _pair("Conv2D", "kernel_size", kernel_size)
        self.strides = _pair("Conv2D", "strides", strides)
        self.padding = _padding("Conv2D", padding)
        self.dilation_rate = _pair("Conv2D", "dilation_rate", dilation_rate)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)

    def build(self, input_shape: Shape | None) -> None:
        channels = _images(self, input_shape)[3]
        if channels is None:
            raise ShapeError(
                f"Conv2D '{self.name}': the number of input channels must be known to make "
                f"the kernel, got inputs of shape {format_shape(input_shape)}"
            )
        self.kernel = self.add_weight("kernel", (*self.kernel_size, channels, self.filters),
                                      self.kernel_initializer)  # fmt: skip
        if self.use_bias:
            self.bias = self.add_weight("bias", (self.filters,), self.bias_initializer)

    def compute_output_shape(self, input_shape: Shape | None) -> Shape:
        shape = _images(self, input_shape)
        kernel = (*self.kernel_size, shape[3], self.filters)
        return _static_shape(self, "Conv2D", [shape, kernel], self._attrs())

    def call(self, inputs: Any) -> Tensor:
        inputs = ef.convert_to_tensor(inputs)
        # checked at every call, not only at build: the kernel fixes the input channels
        _images(self, inputs.shape, self.kernel.shape[2])
        outputs = ef.nn.conv2d(inputs, self.kernel, self.strides, self.padding.upper(),
                               dilations=self.dilation_rate)  # fmt: skip
        if self.use_bias:
            outputs = outputs + self.bias  # (filters,) broadcasts along the last axis
        return outputs if self.activation is None else self.activation(outputs)

    def _attrs(self) -> dict[str, Any]:
        """The attributes the Conv2D op is given (as its public function normalizes them)."""
        return {"strides": self.strides, "padding": self.padding.upper(),
                "dilations": self.dilation_rate}  # fmt: skip


class _Pooling2D(Layer):
    """What the two pools share: a ``pool_size`` window moved ``strides`` apart (the pool size
    by default, so that windows tile the image), per channel. No variables."""

    op_name: ClassVar[str]  # the op in the registry: its shape rule gives the output shape

    def __init__(
        self,
        pool_size: int | Sequence[int] = 2,
        strides: int | Sequence[int] | None = None,
        padding: str = "valid",
        name: str | None = None,
        *,
        input_shape: Sequence[int] | None = None,
        batch_input_shape: Sequence[int | None] | None = None,
    ) -> None:
        super().__init__(name, input_shape=input_shape, batch_input_shape=batch_input_shape)
        kind = type(self).__name__
        self.pool_size = _pair(kind, "pool_size", pool_size)
        self.strides = self.pool_size if strides is None else _pair(kind, "strides", strides)
        self.padding = _padding(kind, padding)

    def compute_output_shape(self, input_shape: Shape | None) -> Shape:
        shape = _images(self, input_shape)
        return _static_shape(self, self.op_name, [shape], self._attrs())

    def call(self, inputs: Any) -> Tensor:
        inputs = ef.convert_to_tensor(inputs)
        _images(self, inputs.shape)
        return self._pool(inputs, self.pool_size, self.strides, self.padding.upper())

    def _pool(self, inputs: Tensor, ksize: Pair, strides: Pair, padding: str) -> Tensor:
        raise NotImplementedError

    def _attrs(self) -> dict[str, Any]:
        return {"ksize": self.pool_size, "strides": self.strides, "padding": self.padding.upper()}


class MaxPooling2D(_Pooling2D):
    """The largest value of each ``pool_size`` window, per channel; its gradient goes to that
    one cell (the first, in row-major order, if several tie). ``"same"`` padding never wins."""

    op_name = "MaxPool"

    def _pool(self, inputs: Tensor, ksize: Pair, strides: Pair, padding: str) -> Tensor:
        return ef.nn.max_pool2d(inputs, ksize, strides, padding)


class AveragePooling2D(_Pooling2D):
    """The mean of each ``pool_size`` window, per channel; with ``"same"`` padding a window at
    the border averages only its real cells (TensorFlow's rule)."""

    op_name = "AvgPool"

    def _pool(self, inputs: Tensor, ksize: Pair, strides: Pair, padding: str) -> Tensor:
        return ef.nn.avg_pool2d(inputs, ksize, strides, padding)


# Keras's shorter names for the same classes (the layers are still named max_pooling2d...).
MaxPool2D = MaxPooling2D
AveragePool2D = AveragePooling2D

__all__ = ["AveragePool2D", "AveragePooling2D", "Conv2D", "MaxPool2D", "MaxPooling2D"]
