"""What the helpers of ``operators.py`` share: the values that stand for "no value yet",
where the user's statement is (for messages) and which values can be tensors. (The scratch
graph they try code in is ``core/subgraphs.py``'s, which ``while_loop`` uses too.)"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

import eagerflow.tensor as ef
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import EagerflowError, a_tensor

State = Sequence[Any]


class AutoGraphError(EagerflowError, ValueError):
    """Python code that cannot become graph code as it is written (the message says why)."""


class UndefinedVariableError(EagerflowError, UnboundLocalError):
    """A variable used while it has no value: Python's ``UnboundLocalError``, found while
    tracing (also for a path Python would not have taken, since a graph has both)."""

    def __init__(self, message: str, variable: str, read: bool = False) -> None:
        super().__init__(message)
        self.variable = variable
        self.read = read  # raised by reading the variable (not by a check of the helpers)


# --- values that stand for "no value yet" ------------------------------------------------------
class Undefined:
    """The value of variable ``name`` before it is assigned (the converted code sets it, so
    that the helpers can tell). Using it in any way raises ``UndefinedVariableError``, as
    Python would raise ``UnboundLocalError``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Undefined({self.name!r})"

    def _used(self, *args: Any, **kwargs: Any) -> Any:
        raise UndefinedVariableError(
            f"local variable '{self.name}' is used before it has a value", self.name, read=True
        )

    def __getattr__(self, attribute: str) -> Any:
        return self._used()

    __bool__ = __call__ = __iter__ = __len__ = __getitem__ = __setitem__ = __index__ = _used
    __int__ = __float__ = __str__ = __format__ = __array__ = __eagerflow_tensor__ = _used
    __neg__ = __pos__ = __abs__ = __invert__ = __lt__ = __le__ = __gt__ = __ge__ = _used
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __matmul__ = _used
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _used
    __pow__ = __rpow__ = __and__ = __rand__ = __or__ = __ror__ = __rmatmul__ = _used


class UndefinedReturnValue:
    """The return value of a converted function before any ``return`` ran."""

    def __repr__(self) -> str:
        return "UndefinedReturnValue()"


def retval(value: Any) -> Any:
    """What the converted function returns: None if no ``return`` ran, as in Python."""
    return None if isinstance(value, UndefinedReturnValue) else value


def no_value(value: Any) -> bool:
    return isinstance(value, Undefined | UndefinedReturnValue)


# --- where the user's statement is ---------------------------------------------------------------
class Where(NamedTuple):
    """The user's statement a helper is running, for messages."""

    function: str
    filename: str
    line: int

    def __str__(self) -> str:
        return f"{self.function} ({os.path.basename(self.filename)}:{self.line})"


def caller() -> Where:
    """Where the helper that calls this was called from: the converted function's frame,
    whose line numbers are the user's own (``conversion.py`` keeps them)."""
    frame = inspect.currentframe()
    for _ in range(2):
        frame = frame.f_back if frame else None
    if frame is None:  # pragma: no cover - Pythons without frames
        return Where("?", "?", 0)
    code = frame.f_code
    return Where(_users_function(code.co_qualname), code.co_filename, frame.f_lineno)


_GENERATED = re.compile(r"(if_body|else_body|loop_body)(_\d+)?")


def _users_function(qualname: str) -> str:
    """The user's function in a converted frame's qualified name: without the converter's
    factory around it and the block functions inside it.
    ``autograph_factory.<locals>.autograph_make.<locals>.Model.apply.<locals>.if_body``
    is ``Model.apply``."""
    parts = qualname.split(".<locals>.")
    while len(parts) > 1 and _GENERATED.fullmatch(parts[-1]):
        parts.pop()
    while parts and parts[0] in ("autograph_factory", "autograph_make"):
        parts.pop(0)
    return ".<locals>.".join(parts) or qualname


def no_state() -> State:
    return ()


def ignore(values: State) -> None:
    pass


def nothing() -> None:
    pass


# --- tensors, and values that can become one ---------------------------------------------------
_NUMBERS = (bool, int, float, np.number, np.bool_, np.ndarray)


def tensor_like(value: Any) -> bool:
    """A tensor, or a Python or NumPy number a graph can hold as one (not a variable: a
    variable in a variable stays a variable, not a read of its value)."""
    return isinstance(value, (Tensor, *_NUMBERS))


def describe(value: Any) -> str:
    if isinstance(value, Tensor):
        return a_tensor(value.dtype)
    if no_value(value):
        return "no value"
    return f"{type(value).__name__} {value!r:.40}"


class Spec(NamedTuple):
    """The dtype and shape of a tensor seen while staging (the scratch graph's tensors
    themselves must not leave it)."""

    dtype: Any
    shape: Any


def spec_of(value: Any) -> Any:
    return Spec(value.dtype, value.shape) if isinstance(value, Tensor) else value


def zeros_like(like: Spec, where: Where) -> Tensor:
    """Zeros of ``like``'s dtype and shape (an unknown dimension becomes 0), standing for a
    value that is never read."""
    if like.shape is None:
        raise AutoGraphError(f"a value in {where} needs a placeholder, but its rank is unknown")
    return ef.zeros(tuple(0 if d is None else d for d in like.shape), like.dtype)


__all__ = [
    "AutoGraphError",
    "Undefined",
    "UndefinedReturnValue",
    "UndefinedVariableError",
    "Where",
    "retval",
]
