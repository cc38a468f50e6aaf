"""The helpers for ``while`` and ``for`` loops: a Python loop for Python values (a ``for``
over a list or ``range`` is unrolled into the graph being traced), a ``while_loop`` for a
symbolic tensor (see ``operators.py``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.graph.autograph.conditionals import graph_if
from eagerflow.graph.autograph.experimental import LoopOptions
from eagerflow.graph.autograph.values import (
    AutoGraphError,
    Spec,
    State,
    Undefined,
    UndefinedVariableError,
    Where,
    caller,
    describe,
    ignore,
    no_state,
    no_value,
    nothing,
    spec_of,
    tensor_like,
    zeros_like,
)
from eagerflow.graph.core.control_flow import while_loop
from eagerflow.graph.core.graph import Operation, SymbolicTensor
from eagerflow.graph.core.subgraphs import scratch
from eagerflow.graph.core.tensor_array import TensorArray
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import DTypeError, ShapeError, a_tensor

NO_OPTIONS = LoopOptions()


def _try(test: Callable[[], Any]) -> Any:
    """``test()``, tried out: while a graph is built, in a scratch graph, so that a test
    that turns out to be a tensor leaves no dead nodes behind (it is traced again, inside
    the loop's condition). A Python value it returns is the real answer."""
    if ef.executing_eagerly():
        return test()
    with scratch():
        return test()


def while_stmt(
    test: Callable[[], Any],
    body: Callable[[], None],
    get_state: Callable[[], State] = no_state,
    set_state: Callable[[State], None] = ignore,
    names: Sequence[str] = (),
    opts: LoopOptions = NO_OPTIONS,
) -> None:
    """``while test(): body()``. A test that is a symbolic tensor builds a ``while_loop``
    whose loop variables are the state variables (``opts``: the loop's ``set_loop_options``)."""
    where = caller()
    first = _try(test)
    if not isinstance(first, SymbolicTensor):
        _python_while(first, test, body, where)
    else:
        variables = _LoopVariables(get_state, set_state, names, where, body, opts)

        def condition(*values: Tensor) -> Any:
            variables.set(values)
            return test()

        def iteration(*values: Tensor) -> list[Tensor]:
            variables.set(values)
            body()
            return variables.after_iteration()

        results = while_loop(condition, iteration, variables.start, variables.invariants)
        variables.set(results)


def _python_while(
    first: Any, test: Callable[[], Any], body: Callable[[], None], where: Where
) -> None:
    value = first
    while value:
        body()
        value = test()
        if isinstance(value, SymbolicTensor):
            raise AutoGraphError(
                f"the condition of the while loop in {where} was a Python value before the "
                "loop and a tensor after an iteration, so the loop cannot be a graph loop: "
                "make its variables tensors before the loop (e.g. i = ef.constant(0))"
            )


def for_stmt(
    iterated: Any,
    extra_test: Callable[[], Any] | None,
    body: Callable[[Any], None],
    get_state: Callable[[], State] = no_state,
    set_state: Callable[[State], None] = ignore,
    names: Sequence[str] = (),
    opts: LoopOptions = NO_OPTIONS,
) -> None:
    """``for item in iterated: body(item)``, stopping early once ``extra_test()`` is false
    (``not break_``, ``not do_return``). A symbolic tensor builds a ``while_loop`` over its
    items (over the numbers themselves, for a ``range``); anything else is a Python loop."""
    where = caller()
    if not isinstance(iterated, SymbolicTensor):
        _python_for(iterated, extra_test, body, get_state, set_state, names, where)
        return
    items = _Items(iterated, where)
    variables = _LoopVariables(
        get_state, set_state, names, where, lambda: body(items.sample()), opts
    )

    def condition(index: Tensor, *values: Tensor) -> Any:
        variables.set(values)
        more = items.has_next(index)
        return more if extra_test is None else ef.logical_and(more, extra_test())

    def iteration(index: Tensor, *values: Tensor) -> list[Tensor]:
        variables.set(values)
        body(items.item(index))
        return [items.next(index), *variables.after_iteration()]

    start = [items.start, *variables.start]
    invariants = [(), *variables.invariants]
    results = while_loop(condition, iteration, start, invariants)
    variables.set(results[1:])


def _python_for(
    iterated: Any,
    extra_test: Callable[[], Any] | None,
    body: Callable[[Any], None],
    get_state: Callable[[], State],
    set_state: Callable[[State], None],
    names: Sequence[str],
    where: Where,
) -> None:
    """Python's ``for``. If the extra test becomes a tensor (a ``return`` or ``break`` under
    an ``if`` on a tensor), each later iteration runs under an ``if`` on it."""
    iterator = iter(iterated)
    while True:
        go_on = True if extra_test is None else extra_test()
        if not isinstance(go_on, SymbolicTensor) and not go_on:
            return
        try:
            item = next(iterator)
        except StopIteration:
            return
        if isinstance(go_on, SymbolicTensor):
            iteration = functools.partial(body, item)
            graph_if(go_on, iteration, nothing, get_state, set_state, names, where)
        else:
            body(item)


def _range_bounds(operation: Operation) -> tuple[Any, Any, Any]:
    """A ``Range``'s start, limit and delta: Python numbers known to the op, or its inputs."""
    attrs = operation.attrs
    if "start" in attrs:
        return (attrs["start"], attrs["limit"], attrs["delta"])
    return (operation.inputs[0], operation.inputs[1], operation.inputs[2])


# The ops whose output a loop counts through without making it, each with its bounds: the
# start, limit and delta of the numbers it would hold. Any other tensor is iterated item by item.
COUNTED: dict[str, Callable[[Operation], tuple[Any, Any, Any]]] = {"Range": _range_bounds}


class _Items:
    """What a graph loop over a tensor iterates: the numbers of a ``range`` (counted from its
    op's bounds, so the range itself is never made), or the items along a tensor's first
    axis (picked with ``gather``). Either way the loop counts with an index tensor."""

    def __init__(self, iterated: SymbolicTensor, where: Where) -> None:
        self.iterated = iterated
        operation = iterated.op
        bounds = COUNTED.get(operation.type)
        self.range: tuple[Any, Any, Any] | None = None
        if bounds is not None:
            self.range = bounds(operation)
            self.start = ef.convert_to_tensor(self.range[0], iterated.dtype)
        else:
            self.length = _length(iterated, where)
            self.start = ef.constant(0)

    def has_next(self, index: Tensor) -> Any:
        if self.range is None:
            return index < self.length
        _, limit, delta = self.range
        if not isinstance(delta, Tensor):
            return index < limit if delta > 0 else index > limit
        return ef.where(delta > 0, index < limit, index > limit)

    def item(self, index: Tensor) -> Tensor:
        return index if self.range is not None else ef.gather(self.iterated, index)

    def next(self, index: Tensor) -> Tensor:
        return index + (1 if self.range is None else self.range[2])

    def sample(self) -> Tensor:
        """An item, for staging (its value does not matter, only its dtype and shape)."""
        return self.item(self.start)


def _length(iterated: SymbolicTensor, where: Where) -> Any:
    """The number of items along the first axis: a Python int when the shape says so,
    else a scalar tensor computed from the element count."""
    shape = iterated.shape
    if shape is None or len(shape) == 0:
        what = "a tensor of unknown rank" if shape is None else "a scalar tensor"
        raise AutoGraphError(f"the for loop in {where} iterates over {what}")
    if shape[0] is not None:
        return shape[0]
    if None in shape[1:]:
        raise AutoGraphError(
            f"the for loop in {where} iterates over a tensor of shape {shape}: the length of "
            "its first axis cannot be found from its element count"
        )
    return ef.size(iterated) // int(np.prod(shape[1:], dtype=np.int64))


class _LoopVariables:
    """The state variables of a graph loop, as ``while_loop`` needs them.

    Before the loop each must have a value, and be a tensor or a number. There are two
    exceptions, found by *staging* one iteration (running the body once in a scratch graph,
    for the kinds of values it leaves, as TensorFlow's AutoGraph does):

    - a variable with no value yet that the body assigns before reading (a result computed
      in the loop, a ``return`` value) starts as zeros of the dtype and shape it gets;
    - a variable that is no tensor and that the body leaves as it is stays a Python value.
    """

    def __init__(
        self,
        get_state: Callable[[], State],
        set_state: Callable[[State], None],
        names: Sequence[str],
        where: Where,
        one_iteration: Callable[[], None],
        options: LoopOptions,
    ) -> None:
        self.get_state, self.set_state, self.names, self.where = get_state, set_state, names, where
        self.before = list(get_state())
        self.fixed: dict[int, Any] = {}  # position -> a Python value the loop leaves alone
        staged = self.before
        if not all(tensor_like(v) for v in self.before):
            staged = self._stage(one_iteration)
        self.start: list[Any] = []  # tensors and TensorArrays
        self.invariants: list[Any] = []
        for i, (name, before, after) in enumerate(zip(names, self.before, staged, strict=True)):
            if isinstance(before, TensorArray):  # while_loop carries it as one tensor
                self.start.append(before)
                self.invariants.append(None)
            elif tensor_like(before):
                self.start.append(ef.convert_to_tensor(before))
                self.invariants.append(options.invariant_of(before, self.start[-1].shape))
            elif no_value(before) and (isinstance(after, Spec) or tensor_like(after)):
                spec = after if isinstance(after, Spec) else spec_of(ef.constant(after))
                self._start_as_zeros(spec)
            elif after is before:
                self.fixed[i] = before
            elif isinstance(before, Undefined):
                raise UndefinedVariableError(
                    f"'{name}' has no value before the loop on a tensor in {where}: a graph "
                    f"loop needs a value for each variable it changes (give '{name}' one "
                    "before the loop)",
                    name,
                )
            else:
                raise DTypeError(
                    f"'{name}' is {describe(before)} before the loop on a tensor in {where}, "
                    "and the loop changes it: the variables of a graph loop must be tensors "
                    "(or numbers)"
                )

    def _stage(self, one_iteration: Callable[[], None]) -> list[Any]:
        """Trace one iteration into a scratch graph, from the values before the loop (with
        the same helpers: an ``if`` in there is a ``cond`` in the scratch graph); the kinds
        of values it leaves, a tensor's as a ``Spec``."""
        try:
            with scratch():
                self.set_state(self.before)
                one_iteration()
                return [spec_of(v) for v in self.get_state()]
        except UndefinedVariableError as e:
            if not (e.read and e.variable in self.names):
                raise
            raise UndefinedVariableError(
                f"'{e.variable}' is read in the loop on a tensor in {self.where} before it "
                "has a value: a graph loop needs a value for each variable it changes (give "
                f"'{e.variable}' one before the loop)",
                e.variable,
            ) from e
        finally:
            self.set_state(self.before)

    def _start_as_zeros(self, like: Spec) -> None:
        """Zeros as the start of a variable first assigned in the loop: the staging showed
        the body assigns it before reading it, so its value never shows."""
        self.start.append(zeros_like(like, self.where))
        self.invariants.append(like.shape)

    def set(self, values: Sequence[Any]) -> None:
        """Set the state variables: the loop's values, and the fixed Python values."""
        loop_values = iter(values)
        self.set_state([
            self.fixed[i] if i in self.fixed else next(loop_values) for i in range(len(self.names))
        ])  # fmt: skip

    def after_iteration(self) -> list[Tensor]:
        """The loop values at the end of an iteration, checked against the start's."""
        after = list(self.get_state())
        values: list[Tensor] = []
        starts = iter(zip(self.start, self.invariants, strict=True))
        for i, (name, value) in enumerate(zip(self.names, after, strict=True)):
            if i in self.fixed:
                if value is not self.fixed[i]:
                    raise DTypeError(
                        f"'{name}' is {describe(self.fixed[i])} before the loop on a tensor in "
                        f"{self.where} and changes in it: the variables of a graph loop "
                        "must be tensors (or numbers)"
                    )
                continue
            start, invariant = next(starts)
            values.append(self._checked(name, value, start, invariant))
        return values

    def _checked(self, name: str, value: Any, start: Any, invariant: Any) -> Any:
        if isinstance(start, TensorArray):
            return _checked_array(name, value, start, self.where)
        if not tensor_like(value):
            raise DTypeError(
                f"'{name}' is {describe(value)} after an iteration of the loop on a tensor "
                f"in {self.where}: the variables of a graph loop must be tensors (or numbers)"
            )
        tensor = value if isinstance(value, Tensor) else ef.convert_to_tensor(value, start.dtype)
        if tensor.dtype is not start.dtype:
            raise DTypeError(
                f"'{name}' is {a_tensor(start.dtype)} before the loop on a tensor in "
                f"{self.where} but {a_tensor(tensor.dtype)} after an iteration: a graph loop "
                "keeps each variable's dtype (use ef.cast, or start it as a "
                f"{tensor.dtype} value)"
            )
        if not _fits(tensor.shape, invariant):
            raise ShapeError(
                f"'{name}' has shape {start.shape} before the loop on a tensor in "
                f"{self.where} but shape {tensor.shape} after an iteration: a graph loop "
                "keeps each variable's shape, unless the loop's first statement allows it "
                f"(set_loop_options(shape_invariants=[({name}, shape)]), None for the "
                "dimensions that change)"
            )
        return tensor


def _checked_array(name: str, value: Any, start: TensorArray, where: Where) -> TensorArray:
    """A TensorArray loop variable stays a TensorArray of its dtype."""
    if not isinstance(value, TensorArray) or value.dtype is not start.dtype:
        raise DTypeError(
            f"'{name}' is a TensorArray of {start.dtype} before the loop on a tensor in "
            f"{where} but {describe(value)} after an iteration: a graph loop keeps each "
            "variable's kind and dtype"
        )
    return value


def _fits(shape: Any, invariant: Any) -> bool:
    """Whether ``shape`` is allowed where ``invariant`` (None: any size) is required."""
    if invariant is None:
        return True
    if shape is None or len(shape) != len(invariant):
        return False
    return all(i is None or s == i for s, i in zip(shape, invariant, strict=True))


__all__ = ["COUNTED", "for_stmt", "while_stmt"]
