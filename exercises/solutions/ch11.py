"""Chapter 11 exercises — run `.venv/bin/pytest -m ch11`.

Models and layers: a layer that makes its variables in ``build``, a model that holds a
list of layers, a dense layer that runs as one op, and (stretch) layer normalization.

Reference solutions: the same classes and functions as `exercises/ch11.py`, solved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import register_gradient
from eagerflow.autodiff.registry import GRADIENTS
from eagerflow.tensor import Tensor
from eagerflow.tensor.dtypes import FLOATS
from eagerflow.tensor.errors import ShapeError, format_shape
from eagerflow.tensor.execution import execute
from eagerflow.tensor.registry import OPS, Attrs, Shape, register_op
from eagerflow.tensor.rules import same_dtype


class FeatureScale(nn.Layer):
    """★ A layer that scales and shifts each feature: ``outputs = inputs · gamma + beta``.

    ``gamma`` and ``beta`` are trainable vectors with one entry per feature (the last axis
    of the inputs), so their size is known only when the layer first sees an input. That
    is what ``build(input_shape)`` is for: ``Layer.__call__`` calls it once, before the
    first ``call``. Start ``gamma`` at ones and ``beta`` at zeros, so a new layer is the
    identity. (Batch normalization ends with exactly this layer.)

    Write ``build`` and ``call``. Assign the variables to ``self.gamma`` then ``self.beta``:
    assigning them to attributes is all it takes for ``variables``, checkpoints and
    optimizers to find them, in that order. The constructor is ``Layer``'s:
    ``FeatureScale(name="scale")`` names the variables ``scale/gamma`` and ``scale/beta``.

    Hint 1:
        Variables whose size depends on the input are made in ``build``, which
        ``Layer.__call__`` runs before the first ``call``.

    Hint 2:
        ``self.add_weight(name, shape, initializer)`` makes a variable named after the layer;
        ``input_shape[-1]`` is the number of features.

    Hint 3:
        ``self.gamma = self.add_weight("gamma", (features,), "ones")``, ``beta`` with
        ``"zeros"``; ``call`` returns ``inputs * self.gamma + self.beta`` (it broadcasts over
        the batch).
    """

    def build(self, input_shape: tuple[int | None, ...]) -> None:
        """Create ``self.gamma`` (ones) and ``self.beta`` (zeros), of shape (features,).

        Args:
            input_shape: The shape of the first input, e.g. ``(None, 3)`` in a graph.
        """
        features = input_shape[-1]
        self.gamma = self.add_weight("gamma", (features,), "ones")
        self.beta = self.add_weight("beta", (features,), "zeros")

    def call(self, inputs: Any) -> Tensor:
        """Scale and shift ``inputs`` (shape ``(batch, features)``), feature by feature.

        Args:
            inputs: A float32 tensor (eager or symbolic).

        Returns:
            ``inputs · gamma + beta``, of the inputs' shape.
        """
        return inputs * self.gamma + self.beta


class Residual(nn.Model):
    """★★ A stack of residual blocks: ``x ← x + relu(x @ kernel + bias)``, ``depth`` times.

    Each block is a ``Dense(units, activation="relu")`` whose output is *added* to its
    input instead of replacing it, so the inputs must already have ``units`` features. This
    skip connection is what lets very deep networks (ResNets) train: a block that has
    learned nothing yet passes its input through.

    Write ``__init__`` and ``call``. Keep the blocks in a list assigned to ``self.blocks``:
    a model tracks the layers it finds in lists, so ``model.variables`` lists
    ``blocks/0/kernel``, ``blocks/0/bias``, ``blocks/1/kernel``, … without your registering
    anything.

    Args:
        units: The number of features of the inputs and of every block.
        depth: How many blocks.
        name: The model's name (None: one derived from the class name).

    Hint 1:
        A model finds the layers held in its attributes, lists included.

    Hint 2:
        ``super().__init__(name)`` first (it sets the name and the ``built`` flag). Keep the
        ``Dense`` blocks in a list on ``self.blocks``; in ``call``, add each block's output to
        its input.

    Hint 3:
        ``self.blocks = [nn.Dense(units, activation="relu") for _ in range(depth)]``; in
        ``call``, ``x = x + block(x)`` for each block.
    """

    def __init__(self, units: int, depth: int, name: str | None = None) -> None:
        super().__init__(name)
        self.blocks = [nn.Dense(units, activation="relu") for _ in range(depth)]

    def call(self, inputs: Any) -> Any:
        """Apply the blocks in order, each adding its output to its input.

        Args:
            inputs: A float32 tensor of shape ``(batch, units)``.

        Returns:
            A tensor of the same shape.
        """
        x = inputs
        for block in self.blocks:
            x = x + block(x)
        return x


# --- a layer of one op ----------------------------------------------------------------------------
# Given: the shape rule of the op ``FusedDense`` (its dtype rule is ``same_dtype(FLOATS)``).
def fused_dense_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    """x (batch, k), kernel (k, units), bias (units,) -> (batch, units); None is unknown."""
    x, kernel, bias = shapes

    def fits(a: int | None, b: int | None) -> bool:
        return a is None or b is None or a == b

    if not (len(x) == len(kernel) == 2 and len(bias) == 1 and fits(x[1], kernel[0])
            and fits(kernel[1], bias[0])):  # fmt: skip
        got = ", ".join(map(format_shape, (x, kernel, bias)))
        raise ShapeError(f"needs x (batch, k), kernel (k, units) and bias (units,), got {got}")
    return [(x[0], kernel[1])]


def fused_dense_kernel(
    x: np.ndarray, kernel: np.ndarray, bias: np.ndarray, relu: bool
) -> np.ndarray:
    """★ ``x @ kernel + bias``, then ``max(·, 0)`` if ``relu``: three ops' work in one kernel.

    ``Dense`` runs three ops, and eagerly each of them costs a trip through the seam and a
    new array. This kernel makes one array, the matrix product, and does the rest *in
    place* in it: that array is the kernel's own, so nobody else can see it change. Never
    write into ``x``, ``kernel`` or ``bias``: they belong to the caller (and a tape may
    still need them).

    Args:
        x: The inputs, shape (batch, k).
        kernel: The weights, shape (k, units).
        bias: The bias, shape (units,).
        relu: Whether to apply relu as well.

    Returns:
        A new array of shape (batch, units), of the inputs' dtype.

    Hint 1:
        Make one new array, and do the rest of the work in it.

    Hint 2:
        The matrix product is a new array, yours to change. ``+=`` and NumPy's ``out=`` write
        into an existing array.

    Hint 3:
        ``out = x @ kernel``; ``out += bias``; if ``relu``, ``np.maximum(out, 0, out=out)``.
    """
    out = x @ kernel  # a new array, ours to change
    out += bias
    if relu:
        np.maximum(out, 0, out=out)
    return out


def register_fused_dense() -> None:
    """★★★ Register the op ``FusedDense`` and its gradient rule, once (a second call does nothing).

    The op: ``fused_dense_kernel`` with the rules ``fused_dense_shape`` and
    ``same_dtype(FLOATS)``; its inputs are ``(x, kernel, bias)`` and its attribute ``relu``.

    The gradient, for y = relu(x W + b) and an incoming gradient g: first g ← g where y > 0
    (only if ``relu``; that is ``ef.relu_grad(g, y)``), then

        dx = g Wᵀ,   dW = xᵀ g,   db = Σ g over the batch (axis 0)

    Skip each one whose input needs no gradient (``op.needs(i)`` is False: return None for
    it). For a network's first layer, x is data, and dx would cost as much as the forward
    matrix product. Write the rule with eagerflow ops (``ef.matmul`` with
    ``transpose_a``/``transpose_b``, ``ef.reduce_sum``), so it also works in graph mode and
    can itself be differentiated.

    Hint 1:
        Two registrations, each skipped when already done, as chapter 3's
        ``register_softsign_gradient``.

    Hint 2:
        ``register_op`` with the kernel and the two rules. The rule: mask ``g`` first when
        ``op.attrs["relu"]``, then the three gradients, each only if ``op.needs(i)``.
        ``MatMul``'s rule in ``packages/autodiff/src/eagerflow/autodiff/math_grad.py`` is the
        one to copy.

    Hint 3:
        ``dx = ef.matmul(g, kernel, transpose_b=True)``,
        ``dW = ef.matmul(x, g, transpose_a=True)``, ``db = ef.reduce_sum(g, axis=0)``, with
        ``x, kernel, _ = op.inputs``.
    """
    if "FusedDense" not in OPS:
        register_op("FusedDense", fused_dense_kernel, shape=fused_dense_shape,
                    dtype=same_dtype(FLOATS))  # fmt: skip
    if "FusedDense" in GRADIENTS:
        return

    @register_gradient("FusedDense")
    def _fused_dense_grad(op: Any, grad: Tensor) -> tuple[Tensor | None, ...]:
        x, kernel, _ = op.inputs
        if op.attrs["relu"]:
            grad = ef.relu_grad(grad, op.outputs[0])
        return (
            ef.matmul(grad, kernel, transpose_b=True) if op.needs(0) else None,
            ef.matmul(x, grad, transpose_a=True) if op.needs(1) else None,
            ef.reduce_sum(grad, axis=0) if op.needs(2) else None,
        )


class FusedDense(nn.Dense):
    """★★ ``Dense``, with its matrix product, bias and relu run as one op, ``FusedDense``.

    It has the same variables, built the same way (``build`` is ``Dense``'s), and gives the
    same outputs and gradients, while a ``relu`` layer runs one op instead of three. This is
    what PyTorch's ``nn.Linear`` does (one ``addmm`` for the product and the bias), and what
    TensorFlow's graph optimizer does when it rewrites MatMul, BiasAdd and Relu into one
    ``_FusedMatMul``. Fewer ops means less Python per step in eager mode, and two fewer
    arrays of the layer's output size.

    Write ``call``:

    - with the activation ``nn.activations.relu`` (``FusedDense(64, "relu")``): one
      ``FusedDense`` op with ``relu=True``;
    - with no activation: one ``FusedDense`` op with ``relu=False``;
    - with any other activation: the op with ``relu=False``, then the activation;
    - with ``use_bias=False``: ``Dense``'s own ``call`` (there is no bias to fuse).

    Hint 1:
        Call ``register_fused_dense()`` first. The op takes tensors: convert the inputs and both
        variables with ``ef.convert_to_tensor`` (a variable becomes a read, which a tape
        watches).

    Hint 2:
        Four cases: without a bias, ``super().call(inputs)``; otherwise the op, with
        ``relu=True`` only when ``self.activation is nn.activations.relu``, and any other
        activation applied after it.

    Hint 3:
        ``execute("FusedDense", (x, kernel, bias), {"relu": relu})[0]`` gives the output.
    """

    def call(self, inputs: Any) -> Tensor:
        """``activation(inputs @ kernel + bias)``, through the op ``FusedDense``.

        Args:
            inputs: A float tensor of shape (batch, features), eager or symbolic.

        Returns:
            A tensor of shape (batch, units).
        """
        if not self.use_bias:
            return super().call(inputs)
        register_fused_dense()
        relu = self.activation is nn.activations.relu
        inputs = (ef.convert_to_tensor(inputs), ef.convert_to_tensor(self.kernel),
                  ef.convert_to_tensor(self.bias))  # fmt: skip
        outputs = execute("FusedDense", inputs, {"relu": relu})[0]
        return outputs if relu or self.activation is None else self.activation(outputs)


class LayerNormalization(nn.Layer):
    """★★★ Stretch: layer normalization, the transformers' normalization, as a layer of yours.

    ``BatchNormalization`` (chapter 16) normalizes each feature over the *batch*: it must
    compute differently while training, and keep moving averages for inference. Layer
    normalization (Ba, Kiros and Hinton, 2016) normalizes each *example* over its own
    features, the last axis, so it computes the same thing at all times:

        mean = the mean of x over the last axis
        variance = the mean of (x − mean)² over the last axis   (the biased variance)
        outputs = gamma · (x − mean) / √(variance + epsilon) + beta

    ``gamma`` (ones) and ``beta`` (zeros) are trainable vectors with one entry per feature,
    assigned to ``self.gamma`` then ``self.beta``. ``__init__`` is written for you: write
    ``build``, ``compute_output_shape`` and ``call``, with any ops you like. The tests use
    inputs you do not see, and ask for all of this:

    - inputs of any rank from 2 (``(batch, features)``, ``(batch, time, features)``, …),
      whose sizes may be unknown except the last: the layer runs on a placeholder in a
      Session, and in a ``function`` traced once for ``TensorSpec((None, None, features))``
      that still reads ``gamma`` and ``beta`` when they have been trained since;
    - each example's outputs depend on that example alone;
    - float32 inputs far from zero (``x + 10000``) give the outputs of ``x``;
    - a tape gives the gradients of the inputs, ``gamma`` and ``beta``, and an optimizer
      trains the layer inside a model;
    - a ``Sequential`` told its input shape builds the layer, and the layers after it, before
      any call.

    Args:
        epsilon: Added to the variance, so that a constant example does not divide by zero.
        name: The layer's name, and so its variables' (None: one from a counter).
        input_shape: The shape of one example, to build the layer at once (as ``Dense``'s).

    Hint 1:
        Start from ``FeatureScale``: the same two variables, and the same ``build``. The
        statistics are reductions over the last axis that keep it (``keepdims=True``), so
        they broadcast back against the inputs whatever their rank.

    Hint 2:
        ``x + 10000`` in float32 keeps only about three decimals of ``x``, and its square
        about none: mean(x²) − mean² subtracts two numbers near 10⁸. Centre first, then
        square. ``Sequential.build`` asks each layer ``compute_output_shape`` to build the
        next; a normalization does not change the shape.

    Hint 3:
        ``mean = ef.reduce_mean(inputs, axis=-1, keepdims=True)``; ``centred = inputs - mean``;
        ``variance = ef.reduce_mean(ef.square(centred), axis=-1, keepdims=True)``; return
        ``centred / ef.sqrt(variance + self.epsilon) * self.gamma + self.beta``.
    """

    def __init__(
        self,
        epsilon: float = 1e-3,
        name: str | None = None,
        *,
        input_shape: Sequence[int] | None = None,
    ) -> None:
        super().__init__(name, input_shape=input_shape)
        self.epsilon = float(epsilon)

    def build(self, input_shape: tuple[int | None, ...] | None) -> None:
        """Create ``self.gamma`` (ones) and ``self.beta`` (zeros), of shape (features,).

        Args:
            input_shape: The shape of the first input, e.g. ``(None, None, 8)`` in a graph.
        """
        if input_shape is None or len(input_shape) < 2 or input_shape[-1] is None:
            raise ShapeError(
                f"LayerNormalization '{self.name}': needs inputs (batch, ..., "
                f"features) with known features, got {format_shape(input_shape)}"
            )
        features = input_shape[-1]
        self.gamma = self.add_weight("gamma", (features,), "ones")
        self.beta = self.add_weight("beta", (features,), "zeros")

    def compute_output_shape(
        self, input_shape: tuple[int | None, ...] | None
    ) -> tuple[int | None, ...] | None:
        """The shape ``call`` returns for inputs of ``input_shape``.

        Args:
            input_shape: The inputs' shape, e.g. ``(None, 8)``.

        Returns:
            The outputs' shape.
        """
        return input_shape

    def call(self, inputs: Any) -> Tensor:
        """Normalize each example over its last axis, then scale by gamma and shift by beta.

        Args:
            inputs: A float32 tensor of shape ``(batch, …, features)``, eager or symbolic.

        Returns:
            A tensor of the inputs' shape.
        """
        mean = ef.reduce_mean(inputs, axis=-1, keepdims=True)  # (batch, ..., 1): broadcasts
        centred = inputs - mean  # first: a variance of centred values loses no digits
        variance = ef.reduce_mean(ef.square(centred), axis=-1, keepdims=True)
        return centred / ef.sqrt(variance + self.epsilon) * self.gamma + self.beta
