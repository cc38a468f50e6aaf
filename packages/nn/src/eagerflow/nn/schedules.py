"""Learning-rate schedules with Keras' names and formulas (``keras.optimizers.schedules``).

A schedule is a function of the step: give one to an optimizer as its ``learning_rate`` and
each ``apply_gradients`` calls it on ``optimizer.iterations`` (how many steps ran before this
one, an int64 variable). It is written with ops, not Python arithmetic, so a training step
traced once by ``function`` reads the count each time it runs, and the rate follows it; a
Python number would be frozen into the graph at the value it had when traced.

Each returns a float32 scalar, as Keras' do for Python numbers:

- ``ExponentialDecay``:  lr₀ · rate^(step / decay_steps)
- ``InverseTimeDecay``:  lr₀ / (1 + rate · step / decay_steps)
- ``PolynomialDecay``:   (lr₀ - end) · (1 - min(step, decay_steps) / decay_steps)^power + end
- ``PiecewiseConstantDecay``: ``values[i]`` while ``boundaries[i-1] < step <= boundaries[i]``

(``staircase=True`` takes the floor of step / decay_steps: the rate changes in jumps.)
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import eagerflow.tensor as ef
from eagerflow.tensor import Tensor

RATE = ef.float32  # the dtype of a schedule's Python numbers, as in Keras


class LearningRateSchedule:
    """The base class: a subclass writes ``__call__(step)``, returning the rate as a tensor."""

    def __call__(self, step: Any) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define __call__(step)")

    def get_config(self) -> dict[str, Any]:
        """The arguments that make this schedule again (``type(s)(**s.get_config())``)."""
        return dict(vars(self))


def _positive_steps(owner: str, decay_steps: Any) -> Any:
    if not decay_steps > 0:
        raise ValueError(f"{owner}: decay_steps must be > 0, got {decay_steps!r}")
    return decay_steps


def _fraction(step: Any, decay_steps: Any, staircase: bool) -> Tensor:
    """step / decay_steps in float32, floored with ``staircase``."""
    steps = ef.cast(step, RATE)
    period = ef.constant(decay_steps, RATE)
    return ef.floordiv(steps, period) if staircase else steps / period


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate · decay_rate ^ (step / decay_steps)``."""

    def __init__(self, initial_learning_rate: float, decay_steps: float, decay_rate: float,
                 staircase: bool = False, name: str = "ExponentialDecay") -> None:  # fmt: skip
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive_steps(name, decay_steps)
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name

    def __call__(self, step: Any) -> Tensor:
        p = _fraction(step, self.decay_steps, self.staircase)
        initial = ef.constant(self.initial_learning_rate, RATE)
        return initial * ef.pow(ef.constant(self.decay_rate, RATE), p)


class InverseTimeDecay(LearningRateSchedule):
    """``initial_learning_rate / (1 + decay_rate · step / decay_steps)``."""

    def __init__(self, initial_learning_rate: float, decay_steps: float, decay_rate: float,
                 staircase: bool = False, name: str = "InverseTimeDecay") -> None:  # fmt: skip
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive_steps(name, decay_steps)
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name

    def __call__(self, step: Any) -> Tensor:
        p = _fraction(step, self.decay_steps, self.staircase)
        denominator = 1.0 + ef.constant(self.decay_rate, RATE) * p
        return ef.constant(self.initial_learning_rate, RATE) / denominator


class PolynomialDecay(LearningRateSchedule):
    """From ``initial_learning_rate`` to ``end_learning_rate`` in ``decay_steps`` steps along
    (1 - step / decay_steps)^power, then ``end_learning_rate``. With ``cycle`` it starts again
    instead, over the first multiple of ``decay_steps`` at or past the step."""

    def __init__(self, initial_learning_rate: float, decay_steps: float,
                 end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
                 name: str = "PolynomialDecay") -> None:  # fmt: skip
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = _positive_steps(name, decay_steps)
        self.end_learning_rate, self.power = end_learning_rate, power
        self.cycle, self.name = cycle, name

    def __call__(self, step: Any) -> Tensor:
        steps = ef.cast(step, RATE)
        period = ef.constant(self.decay_steps, RATE)
        if self.cycle:  # ceil(step / decay_steps), at least 1, as -floor(-step / decay_steps)
            cycles = ef.negative(ef.floordiv(ef.negative(steps), period))
            period = period * ef.maximum(cycles, 1.0)
        else:
            steps = ef.minimum(steps, period)
        end = ef.constant(self.end_learning_rate, RATE)
        initial = ef.constant(self.initial_learning_rate, RATE)
        return (initial - end) * ef.pow(1.0 - steps / period, self.power) + end


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` up to step ``boundaries[0]`` (included), ``values[1]`` up to
    ``boundaries[1]``, ..., ``values[-1]`` after the last boundary."""

    def __init__(self, boundaries: Sequence[int], values: Sequence[float],
                 name: str = "PiecewiseConstant") -> None:  # fmt: skip
        if len(boundaries) != len(values) - 1:
            raise ValueError(f"{name}: give one more value than boundaries, got "
                             f"{len(boundaries)} boundaries and {len(values)} values")  # fmt: skip
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step: Any) -> Tensor:
        # the sum of each value times "the step is in its range" (0 or 1), as Keras computes it
        step = ef.convert_to_tensor(step)
        if not self.boundaries:
            return ef.constant(self.values[0], RATE)
        edges = [ef.cast(ef.constant(b), step.dtype) for b in self.boundaries]
        ranges = [ef.less_equal(step, edges[0]), ef.greater(step, edges[-1])]
        ranges += [ef.logical_and(ef.greater(step, low), ef.less_equal(step, high))
                   for low, high in pairwise(edges)]  # fmt: skip
        values = [self.values[0], self.values[-1], *self.values[1:-1]]
        total = ef.constant(0.0, RATE)
        for inside, value in zip(ranges, values, strict=True):
            total = total + ef.cast(inside, RATE) * ef.constant(value, RATE)
        return total


__all__ = [
    "ExponentialDecay",
    "InverseTimeDecay",
    "LearningRateSchedule",
    "PiecewiseConstantDecay",
    "PolynomialDecay",
]
