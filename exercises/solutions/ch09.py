"""Chapter 9 exercises — run `pytest -m ch09`.

Models and optimizers: an optimizer of your own (Adagrad) written as variable assignments,
a layer that makes its variables in ``build``, a model that holds a list of layers, and the
training step that ``fit`` repeats.

Reference solutions: the same classes and functions as `exercises/ch09.py`, solved.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.tensor import Tensor


class AdagradOptimizer(nn.Optimizer):
    """Adagrad (Duchi et al., 2011), in TensorFlow 1.x's form.

    Each variable gets a slot variable ``accumulator``, filled with
    ``initial_accumulator_value`` when it is first used. One step, for a gradient ``g``:

        accumulator ← accumulator + g²
        variable ← variable − learning_rate · g / √accumulator   (the new accumulator)

    A weight whose gradients have been large takes smaller and smaller steps; a rarely
    updated one keeps taking large steps. ``__init__`` is written for you: write
    ``_apply(grad, variable)``, the one method an optimizer subclass must define. Like the
    optimizers of ``eagerflow.nn`` it must work in both modes: eagerly the assignments happen
    at once; in a graph, return the assignment so ``apply_gradients`` can group it into the
    train op.

    Args:
        learning_rate: The step size.
        initial_accumulator_value: The accumulator's first value (> 0, so the first step
            does not divide by zero).
        name: The optimizer's name, part of its slot variables' names.

    Hint:
        ``self.slot(variable, "accumulator", initial=...)`` creates the slot on first use
        and returns the same variable afterwards. ``accumulator.assign(...)`` returns the
        new value: use it in the second line, as ``MomentumOptimizer._apply`` does in
        ``packages/nn/src/eagerflow/nn/optimizers.py``. Return
        ``variable.assign_sub(...)``.
    """

    def __init__(
        self,
        learning_rate: float,
        initial_accumulator_value: float = 0.1,
        name: str = "Adagrad",
    ) -> None:
        super().__init__(learning_rate, name)
        self.initial_accumulator_value = float(initial_accumulator_value)

    def _apply(self, grad: Tensor, variable: Variable) -> Any:
        accumulator = self.slot(variable, "accumulator", initial=self.initial_accumulator_value)
        accumulated = accumulator.assign(accumulator + ef.square(grad))
        return variable.assign_sub(self.learning_rate * grad / ef.sqrt(accumulated))


class FeatureScale(nn.Layer):
    """A layer that scales and shifts each feature: ``outputs = inputs · gamma + beta``.

    ``gamma`` and ``beta`` are trainable vectors with one entry per feature (the last axis
    of the inputs), so their size is known only when the layer first sees an input. That
    is what ``build(input_shape)`` is for: ``Layer.__call__`` calls it once, before the
    first ``call``. Start ``gamma`` at ones and ``beta`` at zeros, so a new layer is the
    identity. (Batch normalization ends with exactly this layer.)

    Write ``build`` and ``call``. Assign the variables to ``self.gamma`` then ``self.beta``:
    assigning them to attributes is all it takes for ``variables``, checkpoints and
    optimizers to find them, in that order. The constructor is ``Layer``'s:
    ``FeatureScale(name="scale")`` names the variables ``scale/gamma`` and ``scale/beta``.

    Hint:
        ``self.add_weight("gamma", (features,), "ones")`` makes a variable named after the
        layer and drawn by the named initializer. ``input_shape[-1]`` is the number of
        features. In ``call``, ``inputs * self.gamma + self.beta`` broadcasts over the batch.
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
    """A stack of residual blocks: ``x ← x + relu(x @ kernel + bias)``, ``depth`` times.

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

    Hint:
        ``super().__init__(name)`` first: it sets the model's name and ``built`` flag.
        Then ``self.blocks = [nn.Dense(units, activation="relu") for _ in range(depth)]``.
        In ``call``, loop over the blocks: ``x = x + block(x)``.
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


def train_step(model: nn.Layer, optimizer: nn.Optimizer, x: np.ndarray, y: np.ndarray) -> float:
    """One step of training a classifier: what ``fit`` does for each batch.

    1. run ``model(x, training=True)`` under a GradientTape, to get logits;
    2. the loss is the mean over the batch of
       ``nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)``;
    3. take the gradient of the loss for every one of ``model.trainable_variables``;
    4. let ``optimizer.apply_gradients`` update them.

    Args:
        model: A model (already built or not: it builds on its first call).
        optimizer: Any ``eagerflow.nn`` optimizer.
        x: A float32 batch of inputs.
        y: The int64 class of each example, shape ``(batch,)``.

    Returns:
        The loss *before* the update, as a Python float.

    Hint:
        Ask for ``model.trainable_variables`` after the forward pass: a model called for the
        first time creates its variables during that call. ``apply_gradients`` takes
        ``(gradient, variable)`` pairs: ``zip(grads, variables)``. Compare yours with the
        loop in ``fit`` (``packages/nn/src/eagerflow/nn/training.py``).
    """
    with GradientTape() as tape:
        logits = model(x, training=True)
        loss = ef.reduce_mean(nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables, strict=True))
    return float(loss)
