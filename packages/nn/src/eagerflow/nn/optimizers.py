"""Optimizers with TensorFlow 1.x's update formulas, written as variable assignments.

An optimizer turns ``(gradient, variable)`` pairs into assignments. Each update is written
once, with public ops, and works in both modes: eagerly the assignments happen as they are
called; in a graph they become nodes, and ``apply_gradients`` returns one *train op* that
runs them all (run it in a Session, once per step).

Optimizers keep state per variable in *slot* variables (momentum's accumulator, Adam's two
moments); ``variables()`` lists them (checkpoints save them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable, apply_gradient_descent
from eagerflow.graph import (
    Graph,
    Operation,
    control_dependencies,
    get_default_graph,
    global_variables,
    gradients,
    group,
    name_scope,
    trainable_variables,
)
from eagerflow.nn.replicas import current_replica_hook
from eagerflow.nn.schedules import LearningRateSchedule
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import InvalidArgumentError

GradsAndVars = Iterable[tuple[Any, Variable]]
Rate = float | LearningRateSchedule  # what ``learning_rate=`` may be


# what a hyperparameter may be, in words, and as a test
RULES: dict[str, Callable[[float], bool]] = {
    "> 0": lambda x: x > 0,
    ">= 0": lambda x: x >= 0,
    "in [0, 1)": lambda x: 0 <= x < 1,
}


def hyperparameter(owner: str, what: str, value: Any, rule: str) -> float:
    """``value`` as a float, once it passes ``RULES[rule]`` (NaN passes none)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{owner}: {what} must be a number, got {value!r}") from None
    if not RULES[rule](number):
        raise InvalidArgumentError(f"{owner}: {what} must be {rule}, got {value}")
    return number


class Optimizer:
    """The shared machinery; a subclass writes ``_apply(gradient, variable)``.

    As in Keras, the learning rate lives in a non-trainable float32 variable of the optimizer
    (``optimizer.learning_rate``; assigning a number assigns the variable), read by the update
    ops when they run: a new rate reaches a training step that ``function`` traced already,
    without tracing it again. A ``schedules.LearningRateSchedule`` given instead is evaluated
    at ``optimizer.iterations``, the number of ``apply_gradients`` calls so far. Like slots,
    both variables are made on first use, where they are used: eagerly, or in the graph a
    Session runs (Keras makes them with the optimizer; a ``function`` whose first call makes
    them is traced twice, as any that makes variables).
    """

    slot_names: tuple[str, ...] = ()  # the state it keeps per variable
    non_slot_names: tuple[str, ...] = ()  # and of its own (besides iterations, learning rate)

    def __init__(self, learning_rate: Rate, name: str) -> None:
        self.name = name
        # (slot name, primary variable) -> slot variable, in creation order
        self._slots: dict[tuple[str, Variable], Variable] = {}
        self._non_slots: dict[str, Variable] = {}
        self._schedule: LearningRateSchedule | None = None
        self._initial_rate = 0.0  # the rate variable's first value, until it is made
        self._rates: dict[ef.DType, Tensor] = {}  # the rate of this apply_gradients, by dtype
        self.learning_rate = learning_rate

    # --- the learning rate ------------------------------------------------------------------
    @property
    def learning_rate(self) -> Any:
        """The rate variable (made on first use), or the schedule's value at ``iterations``."""
        if self._schedule is not None:
            return self._schedule(self.iterations)
        return self.non_slot("learning_rate", lambda: ef.constant(self._initial_rate, ef.float32))

    @learning_rate.setter
    def learning_rate(self, value: float | LearningRateSchedule) -> None:
        if isinstance(value, LearningRateSchedule):
            self._schedule = value
            return
        if self._schedule is not None:
            raise TypeError(f"{self.name}: its learning rate is a {type(self._schedule).__name__}"
                            ", so it cannot be set to a number (make the optimizer with a "
                            "number to change its rate as it trains)")  # fmt: skip
        rate = hyperparameter(self.name, "learning_rate", value, "> 0")
        variable = self._non_slots.get("learning_rate")
        if variable is None:
            self._initial_rate = rate
        else:
            variable.assign(rate, read_value=False)

    @property
    def iterations(self) -> Variable:
        """How many times ``apply_gradients`` ran (int64, Keras' counter; schedules read it)."""
        return self.non_slot("iterations", lambda: ef.constant(0, ef.int64))

    def _learning_rate(self, dtype: ef.DType) -> Tensor:
        """The rate in ``dtype``, read once per ``apply_gradients`` call (Keras and TensorFlow
        1 both round it to float32 first, then cast it to the variable's dtype)."""
        rate = self._rates.get(dtype)
        if rate is None:
            rate = ef.convert_to_tensor(self.learning_rate)
            if rate.dtype != dtype:
                rate = ef.cast(rate, dtype)
            self._rates[dtype] = rate
        return rate

    # --- the two entry points ---------------------------------------------------------------
    def minimize(
        self,
        loss: Any,
        var_list: Sequence[Variable] | None = None,
        global_step: Variable | None = None,
    ) -> Operation | None:
        """Compute the gradients of ``loss`` and apply them (``compute_gradients``, then
        ``apply_gradients``).

        Graph mode: ``loss`` is a tensor; returns the train op. Eager mode: ``loss`` is a
        zero-argument callable (it must run under a tape); returns None.
        """
        return self.apply_gradients(self.compute_gradients(loss, var_list), global_step)

    def compute_gradients(
        self, loss: Any, var_list: Sequence[Variable] | None = None
    ) -> list[tuple[Any, Variable]]:
        """The ``(gradient, variable)`` pairs of ``loss``, for ``apply_gradients`` (change
        them in between: clip, scale, add noise). A gradient is None where ``loss`` does not
        depend on the variable. ``var_list`` defaults to the trainable variables (eagerly: those
        the loss read). ``loss`` is a tensor in a graph, a zero-argument callable eagerly."""
        if ef.executing_eagerly():
            if not callable(loss):  # a RuntimeError, as TensorFlow's: eager mode is the state
                raise RuntimeError(
                    f"{self.name}.compute_gradients: in eager mode `loss` must be a "
                    f"zero-argument callable returning the loss (got {type(loss).__name__}), "
                    "so the optimizer can record it on a GradientTape"
                )
            with GradientTape() as tape:
                value = loss()
            var_list = list(var_list) if var_list is not None else tape.watched_variables()
            if not var_list:
                raise ValueError(f"{self.name}.compute_gradients: no variables to optimize")
            grads = tape.gradient(value, var_list)
        else:
            if callable(loss):
                loss = loss()
            var_list = list(var_list) if var_list is not None else trainable_variables()
            if not var_list:
                raise ValueError(f"{self.name}.compute_gradients: no variables to optimize")
            grads = gradients(loss, var_list)
        return list(zip(grads, var_list, strict=True))

    def apply_gradients(
        self, grads_and_vars: GradsAndVars, global_step: Variable | None = None
    ) -> Operation | None:
        """Update each variable from its gradient; pairs whose gradient is None are skipped.

        Eager mode: updates now (and adds 1 to ``global_step``); returns None. Graph mode:
        returns the op that does it.
        """
        pairs = list(grads_and_vars)
        for pair in pairs:
            if not (isinstance(pair, tuple | list) and len(pair) == 2
                    and isinstance(pair[1], Variable)):  # fmt: skip
                raise TypeError(f"{self.name}.apply_gradients: expected (gradient, Variable) "
                                f"pairs, got {pair!r:.80}")  # fmt: skip
        kept = [(ef.convert_to_tensor(g), v) for g, v in pairs if g is not None]
        if not kept:
            names = [v.name for _, v in pairs]
            raise ValueError(f"No gradients provided for any variable: {names}")
        hook = current_replica_hook()  # under a distribution strategy: average over replicas
        if hook is not None:
            kept = hook.aggregate_gradients(kept)
        self._rates = {}
        try:
            return self._apply_all(kept, global_step)
        finally:
            self._rates = {}  # a graph's tensors must not leak into the next call

    def _apply_all(
        self, kept: list[tuple[Tensor, Variable]], global_step: Variable | None
    ) -> Operation | None:
        if ef.executing_eagerly():
            for grad, variable in kept:
                self._apply(grad, variable)
            self._finish()
            self.iterations.assign_add(1, read_value=False)
            if global_step is not None:
                global_step.assign_add(1)
            return None
        with name_scope(self.name):
            updates = [self._apply(grad, variable) for grad, variable in kept]
            with control_dependencies(updates):  # e.g. Adam's β powers move after the step
                updates.extend(self._finish())
                # after every read of the rate: a schedule reads the count before it moves
                updates.append(self.iterations.assign_add(1, read_value=False))
            if global_step is not None:
                with control_dependencies(updates):
                    updates.append(global_step.assign_add(1, read_value=False))
            return group(*updates, name="train")

    # --- what subclasses write --------------------------------------------------------------
    # Both return the update ops' outputs (``read_value=False``): in a traced function a read
    # value would be the Variable itself, which control_dependencies cannot wait for.
    def _apply(self, grad: Tensor, variable: Variable) -> Any:
        raise NotImplementedError

    def _finish(self) -> list[Any]:
        """Updates after every variable's (none by default)."""
        return []

    # --- state ------------------------------------------------------------------------------
    def slot(self, variable: Variable, slot_name: str, initial: float = 0.0) -> Variable:
        """The ``slot_name`` variable kept for ``variable`` (created, filled with ``initial``,
        on first use)."""
        key = (slot_name, variable)
        if key not in self._slots:
            base = variable.name.rsplit(":", 1)[0]
            with control_dependencies(None):  # its initializer waits for nothing
                self._slots[key] = Variable(
                    lambda: ef.fill(variable.shape, np.asarray(initial, variable.dtype.np)),
                    trainable=False, name=f"{base}/{self.name}/{slot_name}",
                )  # fmt: skip
        return self._slots[key]

    def non_slot(self, name: str, initial: Any) -> Variable:
        """A variable of the optimizer itself (e.g. Adam's β₁ᵗ), created on first use;
        ``initial`` is a value or, like a Variable's, a function returning one."""
        if name not in self._non_slots:
            with control_dependencies(None):  # its initializer waits for nothing
                self._non_slots[name] = Variable(
                    initial, trainable=False, name=f"{self.name}/{name}")  # fmt: skip
        return self._non_slots[name]

    def slots(self) -> list[tuple[str, Variable, Variable]]:
        """``(slot name, primary variable, slot variable)`` for every slot, in creation order."""
        return [(name, primary, slot) for (name, primary), slot in self._slots.items()]

    def non_slots(self) -> dict[str, Variable]:
        return dict(self._non_slots)

    def restorable_non_slots(self) -> tuple[str, ...]:
        """The non-slot variables a checkpoint may make in a new optimizer: ``iterations``,
        the learning rate (unless a schedule gives it) and the class's ``non_slot_names``."""
        rate = () if self._schedule is not None else ("learning_rate",)
        return ("iterations", *rate, *self.non_slot_names)

    def variables(self) -> list[Variable]:
        """All the optimizer's state: non-slot variables, then slots in creation order."""
        return [*self._non_slots.values(), *self._slots.values()]


class GradientDescentOptimizer(Optimizer):
    """variable -= learning_rate · gradient."""

    def __init__(self, learning_rate: Rate, name: str = "GradientDescent") -> None:
        super().__init__(learning_rate, name)

    def _apply(self, grad: Tensor, variable: Variable) -> Any:
        # variable.assign_sub(self.learning_rate * grad), as one op
        return apply_gradient_descent(variable, self._learning_rate(variable.dtype), grad)


class MomentumOptimizer(Optimizer):
    """accumulation = momentum · accumulation + gradient; variable -= lr · accumulation.

    With ``use_nesterov``: variable -= lr · (gradient + momentum · accumulation), looking one
    step ahead along the accumulated direction.
    """

    slot_names = ("momentum",)

    def __init__(
        self,
        learning_rate: Rate,
        momentum: float,
        use_nesterov: bool = False,
        name: str = "Momentum",
    ) -> None:
        super().__init__(learning_rate, name)
        self.momentum = hyperparameter(name, "momentum", momentum, ">= 0")
        self.use_nesterov = use_nesterov

    def _apply(self, grad: Tensor, variable: Variable) -> Any:
        accumulation = self.slot(variable, "momentum")
        accumulated = accumulation.assign(self.momentum * accumulation + grad)
        step = grad + self.momentum * accumulated if self.use_nesterov else accumulated
        rate = self._learning_rate(variable.dtype)
        return variable.assign_sub(rate * step, read_value=False)


class AdamOptimizer(Optimizer):
    """Adam (Kingma & Ba), in TensorFlow 1.x's form:

    m = β₁ m + (1-β₁) g;  v = β₂ v + (1-β₂) g²;
    variable -= lr · √(1-β₂ᵗ)/(1-β₁ᵗ) · m / (√v + ε)

    β₁ᵗ and β₂ᵗ are two variables of the optimizer, multiplied by β after each step.
    """

    slot_names = ("m", "v")
    non_slot_names = ("beta1_power", "beta2_power")

    def __init__(
        self,
        learning_rate: Rate = 0.001,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-8,
        name: str = "Adam",
    ) -> None:
        super().__init__(learning_rate, name)
        self.beta1 = hyperparameter(name, "beta1", beta1, "in [0, 1)")
        self.beta2 = hyperparameter(name, "beta2", beta2, "in [0, 1)")
        self.epsilon = hyperparameter(name, "epsilon", epsilon, ">= 0")

    def _powers(self, dtype: ef.DType) -> tuple[Variable, Variable]:
        # Initial values as functions: a Variable calls one outside any trace, so a first
        # step inside a `function` makes these eagerly, where they outlive the trace.
        return (self.non_slot("beta1_power", lambda: ef.constant(self.beta1, dtype)),
                self.non_slot("beta2_power", lambda: ef.constant(self.beta2, dtype)))  # fmt: skip

    def _apply(self, grad: Tensor, variable: Variable) -> Any:
        beta1_power, beta2_power = self._powers(variable.dtype)
        m, v = self.slot(variable, "m"), self.slot(variable, "v")
        m_t = m.assign(self.beta1 * m + (1.0 - self.beta1) * grad)
        v_t = v.assign(self.beta2 * v + (1.0 - self.beta2) * ef.square(grad))
        lr_t = (
            self._learning_rate(variable.dtype) * ef.sqrt(1.0 - beta2_power) / (1.0 - beta1_power)
        )
        return variable.assign_sub(lr_t * m_t / (ef.sqrt(v_t) + self.epsilon), read_value=False)

    def _finish(self) -> list[Any]:
        if "beta1_power" not in self._non_slots:
            return []
        beta1_power, beta2_power = self._non_slots["beta1_power"], self._non_slots["beta2_power"]
        return [beta1_power.assign(beta1_power * self.beta1, read_value=False),
                beta2_power.assign(beta2_power * self.beta2, read_value=False)]  # fmt: skip


class RMSPropOptimizer(Optimizer):
    """RMSProp, in TensorFlow 1.x's form (its mean square starts at 1, not 0):

    ms = ρ ms + (1-ρ) g²;  mom = μ mom + lr · g / √(ms + ε);  variable -= mom

    ``centered`` also tracks the mean gradient mg and divides by √(ms - mg² + ε).
    """

    slot_names = ("rms", "momentum", "mg")

    def __init__(
        self,
        learning_rate: Rate,
        decay: float = 0.9,
        momentum: float = 0.0,
        epsilon: float = 1e-10,
        centered: bool = False,
        name: str = "RMSProp",
    ) -> None:
        super().__init__(learning_rate, name)
        self.decay = hyperparameter(name, "decay", decay, "in [0, 1)")
        self.momentum = hyperparameter(name, "momentum", momentum, ">= 0")
        self.epsilon = hyperparameter(name, "epsilon", epsilon, ">= 0")
        self.centered = centered

    def _apply(self, grad: Tensor, variable: Variable) -> Any:
        ms = self.slot(variable, "rms", initial=1.0)
        mom = self.slot(variable, "momentum")
        ms_t = ms.assign(self.decay * ms + (1.0 - self.decay) * ef.square(grad))
        denominator = ms_t + self.epsilon
        if self.centered:
            mg = self.slot(variable, "mg")
            mg_t = mg.assign(self.decay * mg + (1.0 - self.decay) * grad)
            denominator = denominator - ef.square(mg_t)
        rate = self._learning_rate(variable.dtype)
        mom_t = mom.assign(self.momentum * mom + rate * grad / ef.sqrt(denominator))
        return variable.assign_sub(mom_t, read_value=False)


class Adagrad(Optimizer):
    """Adagrad (Duchi et al., 2011), in Keras' form, under Keras' name:

    accumulator += g²;  variable -= lr · g / √(accumulator + ε)

    The accumulator starts at ``initial_accumulator_value`` (0.1): a weight whose gradients
    have been large takes smaller and smaller steps, a rarely updated one keeps large ones.
    """

    slot_names = ("accumulator",)

    def __init__(
        self,
        learning_rate: Rate = 0.001,
        initial_accumulator_value: float = 0.1,
        epsilon: float = 1e-7,
        name: str = "Adagrad",
    ) -> None:
        super().__init__(learning_rate, name)
        self.initial_accumulator_value = hyperparameter(
            name, "initial_accumulator_value", initial_accumulator_value, ">= 0"
        )
        self.epsilon = hyperparameter(name, "epsilon", epsilon, ">= 0")

    def _apply(self, grad: Tensor, variable: Variable) -> Any:
        accumulator = self.slot(variable, "accumulator", initial=self.initial_accumulator_value)
        accumulated = accumulator.assign(accumulator + ef.square(grad))
        rate = self._learning_rate(variable.dtype)
        step = rate * grad / ef.sqrt(accumulated + self.epsilon)
        return variable.assign_sub(step, read_value=False)


# --- the global step ----------------------------------------------------------------------------
_eager_global_step: Variable | None = None


def get_or_create_global_step(graph: Graph | None = None) -> Variable:
    """The int64 step counter ``apply_gradients`` increments: one per graph, one in eager mode."""
    global _eager_global_step
    if graph is None and ef.executing_eagerly():
        if _eager_global_step is None:
            _eager_global_step = _new_global_step()
        return _eager_global_step
    graph = graph or get_default_graph()
    for variable in global_variables(graph):
        if variable.name == "global_step:0":
            return variable
    with graph.as_default():
        return _new_global_step()


def _new_global_step() -> Variable:
    return Variable(ef.constant(0, ef.int64), trainable=False, name="global_step")


__all__ = [
    "RULES",
    "AdamOptimizer",
    "GradientDescentOptimizer",
    "GradsAndVars",
    "MomentumOptimizer",
    "Optimizer",
    "RMSPropOptimizer",
    "get_or_create_global_step",
    "hyperparameter",
]
