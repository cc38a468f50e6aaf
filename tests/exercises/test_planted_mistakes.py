"""Wrong solutions that the exercise tests must reject.

Each case is a plausible mistake a reader could make (or an answer that games the test);
the chapter's test is run against it and must fail. The set grows with the exercises.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import test_ch08  # a module, not its names: pytest would collect an imported test again

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import Function, function


def _train_step_returning_the_loss_after_the_update(
    w: Variable, b: Variable, learning_rate: float
) -> Function:
    def step(x, y):  # type: ignore[no-untyped-def]
        with GradientTape() as tape:
            loss = ef.reduce_mean(ef.square(w * x + b - y))
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(learning_rate * dw)
        b.assign_sub(learning_rate * db)
        return ef.reduce_mean(ef.square(w * x + b - y))  # after the update: wrong

    return function(step)


def test_ch08_train_step_rejects_a_loss_computed_after_the_update() -> None:
    # Until traced functions read variables where the code reads them, this mistake passed:
    # every read inside the trace saw the value from the start of the call.
    chapter = SimpleNamespace(train_step_function=_train_step_returning_the_loss_after_the_update)
    with pytest.raises(AssertionError, match="before the update"):
        test_ch08.test_train_step_function_traces_once_and_learns(chapter)
