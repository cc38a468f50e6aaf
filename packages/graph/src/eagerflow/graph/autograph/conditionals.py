"""The helpers for ``if`` statements, ``x if c else y`` and ``and``, ``or``, ``not``: Python's
meaning for Python values, a ``cond`` for a symbolic tensor (see ``operators.py``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import eagerflow.tensor as ef
from eagerflow.graph.autograph.values import (
    AutoGraphError,
    Spec,
    State,
    Undefined,
    UndefinedReturnValue,
    UndefinedVariableError,
    Where,
    caller,
    describe,
    ignore,
    no_state,
    nothing,
    tensor_like,
    zeros_like,
)
from eagerflow.graph.core.control_flow import cond
from eagerflow.graph.core.graph import SymbolicTensor
from eagerflow.graph.core.tensor_array import TensorArray
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import DTypeError, a_tensor


def if_stmt(
    condition: Any,
    body: Callable[[], None],
    orelse: Callable[[], None] | None = None,
    get_state: Callable[[], State] = no_state,
    set_state: Callable[[State], None] = ignore,
    names: Sequence[str] = (),
    nouts: int = 0,
) -> None:
    """``if condition: body() else: orelse()``. A symbolic tensor condition builds a ``cond``
    whose outputs are the first ``nouts`` state variables (the others the branches only
    read and change: each branch starts from their value before the ``if``)."""
    if isinstance(condition, SymbolicTensor):
        where = caller()
        orelse = orelse or nothing
        graph_if(condition, body, orelse, get_state, set_state, names[:nouts], where)
    elif condition:
        body()
    elif orelse is not None:
        orelse()


def graph_if(
    condition: SymbolicTensor,
    body: Callable[[], None],
    orelse: Callable[[], None],
    get_state: Callable[[], State],
    set_state: Callable[[State], None],
    names: Sequence[str],
    where: Where,
) -> None:
    before = tuple(get_state())
    outputs = _IfOutputs(names, where)

    def branch(block: Callable[[], None], which: str) -> Callable[[], list[Tensor]]:
        def traced() -> list[Tensor]:
            set_state(before)  # each branch starts from the values before the if
            block()
            return outputs.of_branch(which, list(get_state())[: len(names)])

        return traced

    results = cond(condition, branch(body, "if"), branch(orelse, "else"))
    set_state([*outputs.final(results), *before[len(names) :]])


class _IfOutputs:
    """The values an ``if`` on a tensor leaves in its output variables.

    ``cond`` traces the if branch, then the else branch. A variable that is a tensor (or a
    number) at the end of the if branch becomes an output of the cond, and must be one, of
    the same dtype, at the end of the else branch. Any other value (a string, an object,
    no value at all) must be the same in both branches, and stays a Python value.

    One exception: when the if branch returns and the else branch does not (yet: a later
    statement, or a later iteration, will), the else branch gets zeros as its return value,
    of the if branch's dtype and shape. They are never returned: the ``do_return`` flag
    that comes out of the same cond says the function has not returned on that path.
    """

    def __init__(self, names: Sequence[str], where: Where) -> None:
        self.names = names
        self.where = where
        self.branches: dict[str, list[Any]] = {}  # branch -> its values, as Python left them
        self.dtypes: list[Any] = []  # the if branch's output dtypes (None: not an output)
        self.shapes: list[Any] = []
        self.arrays: dict[int, TensorArray] = {}  # position -> the if branch's array

    def of_branch(self, which: str, values: list[Any]) -> list[Tensor]:
        """The tensors branch ``which`` outputs, checked against the if branch's."""
        values = [self._unpacked(i, which, v) for i, v in enumerate(values)]
        self.branches[which] = values
        tensors: list[Tensor] = []
        for i, (name, value) in enumerate(zip(self.names, values, strict=True)):
            if which == "if":
                self.dtypes.append(None)
                self.shapes.append(None)
                if tensor_like(value):
                    tensors.append(self._tensor(name, value, which))
                    self.dtypes[i], self.shapes[i] = tensors[-1].dtype, tensors[-1].shape
            else:
                first = self.branches["if"][i]
                if isinstance(value, UndefinedReturnValue) and self.dtypes[i] is not None:
                    value = zeros_like(Spec(self.dtypes[i], self.shapes[i]), self.where)
                self._check_same_kind(name, first, value)
                if self.dtypes[i] is not None:
                    tensors.append(self._tensor(name, value, which, self.dtypes[i]))
        return tensors

    def _unpacked(self, i: int, which: str, value: Any) -> Any:
        """A TensorArray as its one tensor (see ``LoopArrays``): the cond outputs that, and
        ``final`` makes it an array again, like the if branch's."""
        if which == "if" and isinstance(value, TensorArray):
            self.arrays[i] = value
        elif i in self.arrays and not isinstance(value, TensorArray):
            raise DTypeError(
                f"'{self.names[i]}' is a TensorArray in the if branch of the if on a tensor in "
                f"{self.where} but {describe(value)} in its else branch"
            )
        return value.loop_tensor() if isinstance(value, TensorArray) else value

    def final(self, results: Sequence[Tensor]) -> list[Any]:
        """Each variable's value after the ``if``: the cond's output, or the Python value
        both branches agree on (equal numbers stay numbers: ``do_return = True`` in both
        branches is still a Python True after them)."""
        outputs = iter(results)
        final: list[Any] = []
        for i, (first, other, dtype) in enumerate(
            zip(self.branches["if"], self.branches["else"], self.dtypes, strict=True)
        ):
            output: Any = next(outputs) if dtype is not None else None
            if i in self.arrays:  # (an array is always an output: its tensor has a dtype)
                output = self.arrays[i].from_loop(output)
            both_python = not isinstance(first, Tensor) and not isinstance(other, Tensor)
            if dtype is None or (both_python and _same_python_value(first, other)):
                final.append(first)
            else:
                final.append(output)
        return final

    def _check_same_kind(self, name: str, first: Any, other: Any) -> None:
        """The else branch's value of a variable fits the if branch's."""
        both_tensors = tensor_like(first) and tensor_like(other)
        neither = not tensor_like(first) and not tensor_like(other)
        if both_tensors or (neither and _same_python_value(first, other)):
            return
        for value, branch, other_branch in ((first, "if", "else"), (other, "else", "if")):
            if isinstance(value, Undefined):
                raise UndefinedVariableError(
                    f"'{name}' is assigned in the {other_branch} branch of the if on a tensor "
                    f"in {self.where} but not in its {branch} branch, and used after it: a "
                    f"graph runs one branch or the other, so '{name}' needs a value from "
                    f"both (assign it in the {branch} branch too, or before the if)",
                    name,
                )
            if isinstance(value, UndefinedReturnValue):
                raise AutoGraphError(
                    f"the {other_branch} branch of the if on a tensor in {self.where} "
                    f"returns a value but its {branch} branch does not: in a graph, if one "
                    "branch returns, the other must return too"
                )
        raise DTypeError(
            f"'{name}' is {describe(first)} in the if branch of the if on a tensor in "
            f"{self.where} but {describe(other)} in its else branch: only tensors (and "
            "numbers) may differ between the branches of a graph's if"
        )

    def _tensor(self, name: str, value: Any, which: str, dtype: Any = None) -> Tensor:
        if dtype is not None and not isinstance(value, Tensor):
            try:  # a Python number takes the if branch's dtype when it can
                return ef.convert_to_tensor(value, dtype)
            except DTypeError:
                pass
        tensor = ef.convert_to_tensor(value)
        if dtype is not None and tensor.dtype is not dtype:
            raise DTypeError(
                f"'{name}' is {a_tensor(dtype)} in the if branch of the if on a tensor in "
                f"{self.where} but {a_tensor(tensor.dtype)} in its else branch: a graph's "
                "if must give each variable one dtype (use ef.cast)"
            )
        return tensor


def if_exp(condition: Any, body: Callable[[], Any], orelse: Callable[[], Any]) -> Any:
    """``body() if condition else orelse()``: a ``cond`` for a symbolic tensor condition."""
    if isinstance(condition, SymbolicTensor):
        return cond(condition, lambda: ef.convert_to_tensor(body()),
                    lambda: ef.convert_to_tensor(orelse()))  # fmt: skip
    return body() if condition else orelse()


# --- logical expressions ----------------------------------------------------------------------
def and_(left: Callable[[], Any], right: Callable[[], Any]) -> Any:
    """``left() and right()``: Python's meaning for Python values; for a symbolic tensor, a
    ``cond`` that evaluates ``right`` only where ``left`` is true (as Python would)."""
    value = left()
    if isinstance(value, SymbolicTensor):
        return cond(value, lambda: ef.convert_to_tensor(right()), lambda: value)
    return right() if value else value


def or_(left: Callable[[], Any], right: Callable[[], Any]) -> Any:
    """``left() or right()`` (see ``and_``)."""
    value = left()
    if isinstance(value, SymbolicTensor):
        return cond(value, lambda: value, lambda: ef.convert_to_tensor(right()))
    return value if value else right()


def not_(value: Any) -> Any:
    """``not value``: ``logical_not`` of a symbolic tensor, Python's ``not`` otherwise."""
    if isinstance(value, SymbolicTensor):
        return ef.logical_not(value)
    return not value


def _same_python_value(a: Any, b: Any) -> bool:
    """Whether two values that are not tensors are "the same" for a graph: one object, or
    equal numbers, strings or None (None and "no return yet" both mean returning None)."""
    if a is b:
        return True
    if {type(a), type(b)} <= {type(None), UndefinedReturnValue}:
        return True
    simple = (bool, int, float, str)
    return type(a) is type(b) and isinstance(a, simple) and bool(a == b)


__all__ = ["and_", "if_exp", "if_stmt", "not_", "or_"]
