"""Conformance cases for learning-rate schedules (``keras.optimizers.schedules``) and for an
optimizer whose rate is a schedule, read from its ``iterations`` inside a traced step.

Imported by ``cases.py``, whose ``CASES`` these join through its ``add``.
"""

from __future__ import annotations

from typing import Any

from cases import add

STEPS = [0, 1, 2, 3, 5, 8, 10, 11, 20, 37, 100]


def _schedule(cls: str, *args: Any, **kwargs: Any) -> Any:
    """The schedule's rate at each of ``STEPS`` (int64 steps, as an optimizer's count)."""

    def run(ns: Any) -> Any:
        schedule = getattr(ns.schedules, cls)(*args, **kwargs)
        return ns.stack([schedule(ns.constant(step, ns.int64)) for step in STEPS])

    return run


add("schedules/ExponentialDecay", _schedule("ExponentialDecay", 0.1, 10, 0.5))
add("schedules/ExponentialDecay/staircase",
    _schedule("ExponentialDecay", 0.1, 3, 0.8, staircase=True))  # fmt: skip
add("schedules/InverseTimeDecay", _schedule("InverseTimeDecay", 0.5, 4, 0.3))
add("schedules/InverseTimeDecay/staircase",
    _schedule("InverseTimeDecay", 0.5, 4, 0.3, staircase=True))  # fmt: skip
add("schedules/PolynomialDecay", _schedule("PolynomialDecay", 0.1, 10))
add("schedules/PolynomialDecay/power",
    _schedule("PolynomialDecay", 0.1, 10, end_learning_rate=0.01, power=2.0))  # fmt: skip
CYCLE = {"end_learning_rate": 0.02, "power": 0.5, "cycle": True}
add("schedules/PolynomialDecay/cycle", _schedule("PolynomialDecay", 0.1, 4, **CYCLE))
add("schedules/PiecewiseConstantDecay",
    _schedule("PiecewiseConstantDecay", [3, 10, 20], [1.0, 0.5, 0.1, 0.01]))  # fmt: skip
add("schedules/PiecewiseConstantDecay/one_boundary",
    _schedule("PiecewiseConstantDecay", [5], [0.3, 0.03]))  # fmt: skip


def _scheduled_steps(ns: Any) -> Any:
    """Adagrad on an exponentially decaying rate, 5 steps of one traced function: the rate
    each step used is the schedule's at the optimizer's count, which the trace reads."""
    v = ns.Variable(ns.constant([1.0, -2.0, 0.5]))
    scale = ns.constant([3.0, 0.5, -1.0])
    optimizer = ns.Adagrad(learning_rate=ns.schedules.ExponentialDecay(0.5, 2, 0.5))

    @ns.function
    def step() -> Any:
        with ns.GradientTape() as tape:
            loss = ns.reduce_sum(scale * v * v)
        optimizer.apply_gradients([(tape.gradient(loss, v), v)])

    values = []
    for _ in range(5):
        step()
        values.append(ns.convert_to_tensor(v))
    return [*values, ns.convert_to_tensor(optimizer.iterations)]


add("schedules/optimizer/traced_steps", _scheduled_steps)
