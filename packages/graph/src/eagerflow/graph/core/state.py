"""Where the variables of a graph keep their values: in each Session, not in the variable.

A variable made while a graph is built (TF 1.x style) is a node; the graph answers the
variable's ``create_variable`` question with ``SESSION_STORAGE``. Each Session holds its own
dict of values and makes it current while it runs (per thread: two Sessions may run at once
in two threads), so the variable kernels read and write that Session's value.
"""

from __future__ import annotations

from contextvars import ContextVar

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.tensor.errors import FailedPreconditionError

Values = dict[Variable, np.ndarray]
_running: ContextVar[Values | None] = ContextVar("eagerflow_session_values", default=None)


class session_values:
    """Inside the block, graph variables read and write ``values`` (a Session's). A class,
    not a generator: every ``Session.run`` enters it, and this costs a quarter as much."""

    __slots__ = ("_token", "_values")

    def __init__(self, values: Values) -> None:
        self._values = values

    def __enter__(self) -> None:
        self._token = _running.set(self._values)

    def __exit__(self, *exc: object) -> None:
        _running.reset(self._token)


class SessionStorage:
    """The autodiff ``Storage`` of graph variables: the running Session's values."""

    def read(self, variable: Variable) -> np.ndarray:
        values = _running.get()
        if values is None:
            raise FailedPreconditionError(
                f"variable '{variable.name}' lives in a graph: its value is per Session; "
                "fetch it with session.run(variable)"
            )
        if variable not in values:
            raise FailedPreconditionError(
                f"variable '{variable.name}' is not initialized: run its initializer "
                "(global_variables_initializer()) in this Session first"
            )
        return values[variable]

    def write(self, variable: Variable, value: np.ndarray) -> None:
        values = _running.get()
        if values is None:
            raise FailedPreconditionError(
                f"variable '{variable.name}' lives in a graph: use a Session"
            )
        values[variable] = value


SESSION_STORAGE = SessionStorage()

__all__ = ["SESSION_STORAGE", "SessionStorage", "Values", "session_values"]
