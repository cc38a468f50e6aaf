"""Chapter 12 exercises — run `.venv/bin/pytest -m ch12`.

Optimizers and training: an optimizer of your own (Adagrad) written as variable
assignments, the training step that ``fit`` repeats, and (stretch) a learning-rate schedule
that eager code, a graph, a traced function and a checkpoint all follow.

Reference solutions: the same classes and functions as `exercises/ch12.py`, solved.
"""

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
    optimizers of ``eagerflow.nn`` it must work eagerly, in a graph and in a traced
    ``function``: eagerly the assignments happen at once; in a graph, return the assignment
    so ``apply_gradients`` can group it into the train op, and return it with
    ``read_value=False``, its update op: in a ``function`` a read value is the ``Variable``
    itself, which the train op cannot wait for.

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
        second line. Return the last assignment, with ``read_value=False``, for graph mode
        and ``function``.

    Hint 3:
        ``new = accumulator.assign(accumulator + ef.square(grad))``, then
        ``return variable.assign_sub(self.learning_rate * grad / ef.sqrt(new),
        read_value=False)``, as ``MomentumOptimizer._apply`` in
        ``packages/nn/src/eagerflow/nn/optimizers.py`` does. (Without ``read_value=False``,
        a traced ``function`` fails with "control_dependencies takes operations or tensors,
        got <Variable ...>": the Variable you returned.)
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
        update = self.learning_rate * grad / ef.sqrt(accumulated)
        return variable.assign_sub(update, read_value=False)  # an op a train op can wait for


def train_step(model: nn.Layer, optimizer: nn.Optimizer, x: np.ndarray, y: np.ndarray) -> float:
    """★★ One step of training a classifier: what ``fit`` does for each batch.

    1. run ``model(x, training=True)`` under a GradientTape, to get logits;
    2. the loss is the mean over the batch of
       ``nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)``;
    3. take the gradient of the loss for every one of ``model.trainable_variables``;
    4. let ``optimizer.apply_gradients`` update them.

    Write the step yourself: the tests refuse ``nn.fit``, which is this step, repeated.

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
    with GradientTape() as tape:
        logits = model(x, training=True)
        loss = ef.reduce_mean(nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    variables = model.trainable_variables
    grads = tape.gradient(loss, variables)
    optimizer.apply_gradients(zip(grads, variables, strict=True))
    return float(loss)


class ScheduledGradientDescent(nn.Optimizer):
    """★★★ Stretch: gradient descent whose learning rate follows a schedule: warm up, then decay.

    Large steps at the start of training, while the weights are random and the gradients
    large and erratic, can throw a network far off; small steps late in training let it
    settle. Transformers are trained with the schedule of Vaswani et al. (2017): the rate
    grows linearly for ``warmup_steps`` steps up to ``peak_rate``, then falls as 1/√t. For
    the t-th step (t = 1, 2, …: one per call of ``apply_gradients``):

        rate(t) = peak_rate · min(t / warmup_steps, √(warmup_steps / t))
        variable ← variable − rate(t) · gradient

    ``__init__`` is written for you: write ``_apply`` and ``_finish`` (and anything else you
    need). The whole difficulty is where t lives. The tests, on rates, warmups and gradients
    you do not see, ask for all of this:

    - eagerly, every variable of one ``apply_gradients`` call takes the same t, and two
      optimizers count their steps apart;
    - in a graph, ``apply_gradients`` builds the train op once, and a Session that runs it n
      times takes steps 1, 2, …, n;
    - in a ``function``, a training step traced once takes steps 1, 2, …, n over n calls;
    - a ``Checkpoint`` of the optimizer keeps t: restored into a new optimizer, training goes
      on with step t + 1.

    So t cannot be a Python number, which a trace or a graph would freeze at the value it had
    when they were built. It must be a variable of the optimizer, as Adam's β₁ᵗ is.

    Args:
        peak_rate: The rate at step ``warmup_steps``, the highest (> 0).
        warmup_steps: How many steps the rate grows for (>= 1).
        name: The optimizer's name, part of its variables' names.

    Hint 1:
        Adam's β₁ᵗ is also a number that changes once per step, and lives in a variable of
        the optimizer itself: read ``AdamOptimizer._powers`` and ``_finish`` in
        ``packages/nn/src/eagerflow/nn/optimizers.py``.

    Hint 2:
        ``self.non_slot(name, initial)`` makes the step variable on first use; a name in the
        class's ``non_slot_names`` lets a checkpoint make it in a new optimizer. ``_finish``
        runs once per ``apply_gradients``, after every ``_apply``: return the increment from
        it, since in a graph only what ``_apply`` and ``_finish`` return runs. Compute the
        rate with ops (``ef.cast`` the step to the variable's dtype, ``ef.minimum``,
        ``ef.sqrt``).

    Hint 3:
        ``non_slot_names = ("step",)``; in ``_apply``,
        ``t = ef.cast(self.non_slot("step", 0), variable.dtype) + 1.0``, then
        ``rate = self.learning_rate * ef.minimum(t / self.warmup_steps,
        ef.sqrt(self.warmup_steps / t))``; ``_finish`` returns
        ``[self.non_slot("step", 0).assign_add(1, read_value=False)]``.
    """

    non_slot_names = ("step",)  # a checkpoint restored into a new optimizer may make it

    def __init__(
        self, peak_rate: float, warmup_steps: int, name: str = "ScheduledGradientDescent"
    ) -> None:
        super().__init__(peak_rate, name)  # self.learning_rate is the peak rate
        if int(warmup_steps) < 1:
            raise ValueError(f"{name}: warmup_steps must be >= 1, got {warmup_steps}")
        self.warmup_steps = int(warmup_steps)

    def _apply(self, grad: Tensor, variable: Variable) -> Any:
        """Move ``variable`` by ``rate(t) · grad``, t being this ``apply_gradients`` call's step.

        Args:
            grad: The variable's gradient.
            variable: The variable to update.

        Returns:
            The assignment (in a graph, ``apply_gradients`` groups it into the train op).
        """
        t = ef.cast(self._step(), variable.dtype) + 1.0  # a tensor: read when the step runs
        rate = self.learning_rate * ef.minimum(t / self.warmup_steps,
                                               ef.sqrt(self.warmup_steps / t))  # fmt: skip
        return variable.assign_sub(rate * grad, read_value=False)

    def _finish(self) -> list[Any]:
        """What changes once per ``apply_gradients``, after every variable's update.

        Returns:
            The assignments to run (in a graph, the train op runs them after the updates).
        """
        return [self._step().assign_add(1, read_value=False)]

    def _step(self) -> Variable:
        """How many steps were taken: a variable of the optimizer, which checkpoints save."""
        return self.non_slot("step", 0)
