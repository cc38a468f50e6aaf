"""Chapter 12 exercises — run `.venv/bin/pytest -m ch12`.

Optimizers and training: an optimizer of your own (Adagrad) written as variable
assignments, and the training step that ``fit`` repeats.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch12`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch12.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.tensor import Tensor


class AdagradOptimizer(nn.Optimizer):
    """★★ Adagrad (Duchi et al., 2011), in TensorFlow 1.x's form.

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

    Hint 1:
        An optimizer keeps what it remembers about each variable in slot variables.

    Hint 2:
        ``self.slot(variable, "accumulator", initial=...)`` creates the slot on first use and
        returns the same variable afterwards. ``assign`` returns the new value: use it in the
        second line. Return the last assignment, for graph mode.

    Hint 3:
        ``new = accumulator.assign(accumulator + ef.square(grad))``, then
        ``return variable.assign_sub(self.learning_rate * grad / ef.sqrt(new))``, as
        ``MomentumOptimizer._apply`` in ``packages/nn/src/eagerflow/nn/optimizers.py`` does.
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
        raise NotImplementedError


def train_step(model: nn.Layer, optimizer: nn.Optimizer, x: np.ndarray, y: np.ndarray) -> float:
    """★★ One step of training a classifier: what ``fit`` does for each batch.

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

    Hint 1:
        This is the body of ``fit``'s loop, for one batch
        (``packages/nn/src/eagerflow/nn/training.py``).

    Hint 2:
        Call the model under the tape, and ask for ``model.trainable_variables`` only after that
        call: a first call creates them. ``apply_gradients`` takes ``(gradient, variable)``
        pairs.

    Hint 3:
        ``loss = ef.reduce_mean(nn.sparse_softmax_cross_entropy_with_logits(labels=y,
        logits=model(x, training=True)))`` under the tape;
        ``optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))``; ``return
        float(loss)``.
    """
    raise NotImplementedError
