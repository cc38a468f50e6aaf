"""The helpers converted code calls (as ``ag__.if_stmt`` and so on): Python or graph, decided
when the code runs.

The converters cannot tell from the source whether ``x > 0`` will be a Python bool or a
tensor: that depends on what ``x`` is at run time. So they turn each statement into a call
of a helper here, which looks:

- a Python value (or an eager tensor, which has one) runs the blocks as Python would: an
  ``if`` runs one branch, a ``for`` over a list or ``range`` runs once per item (it is
  *unrolled* into the graph being traced);
- a symbolic tensor makes graph control flow: ``if`` becomes ``cond``, ``while`` and
  ``for`` over a tensor become ``while_loop``.

Graph control flow needs the variables a statement changes as values in and out (``cond``
and ``while_loop`` are functions of them). The converted code hands each helper a pair of
functions for that, ``get_state`` and ``set_state``, and the variables' names for messages.
Those messages name the user's variable and line, as TensorFlow's AutoGraph does, because
the mistakes are the user's: a variable assigned in one branch only, a loop variable whose
dtype changes from one iteration to the next, a loop variable with no value before the loop.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np

import eagerflow.tensor as ef
from eagerflow.graph.core.control_flow import cond, while_loop
from eagerflow.graph.core.graph import Operation, SymbolicTensor, get_default_graph
from eagerflow.graph.core.subgraphs import FunctionGraph
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import DTypeError, EagerflowError, ShapeError, a_tensor

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


def _no_value(value: Any) -> bool:
    return isinstance(value, Undefined | UndefinedReturnValue)


# --- where the user's statement is ---------------------------------------------------------------
class Where(NamedTuple):
    """The user's statement a helper is running, for messages."""

    function: str
    filename: str
    line: int

    def __str__(self) -> str:
        return f"{self.function} ({os.path.basename(self.filename)}:{self.line})"


def _caller() -> Where:
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


def _no_state() -> State:
    return ()


def _ignore(values: State) -> None:
    pass


def _nothing() -> None:
    pass


# --- tensors, and values that can become one ---------------------------------------------------
_NUMBERS = (bool, int, float, np.number, np.bool_, np.ndarray)


def _tensor_like(value: Any) -> bool:
    """A tensor, or a Python or NumPy number a graph can hold as one (not a variable: a
    variable in a variable stays a variable, not a read of its value)."""
    return isinstance(value, (Tensor, *_NUMBERS))


def _describe(value: Any) -> str:
    if isinstance(value, Tensor):
        return a_tensor(value.dtype)
    if _no_value(value):
        return "no value"
    return f"{type(value).__name__} {value!r:.40}"


def _same_python_value(a: Any, b: Any) -> bool:
    """Whether two values that are not tensors are "the same" for a graph: one object, or
    equal numbers, strings or None (None and "no return yet" both mean returning None)."""
    if a is b:
        return True
    if {type(a), type(b)} <= {type(None), UndefinedReturnValue}:
        return True
    simple = (bool, int, float, str)
    return type(a) is type(b) and isinstance(a, simple) and bool(a == b)


# --- a graph to try things in ---------------------------------------------------------------------
class _ScratchGraph(FunctionGraph):
    """A graph to trace code into and throw away. A tensor of any enclosing graph becomes a
    placeholder here, and the enclosing graphs never hear of it (a real branch graph would
    ask each one in between to capture it)."""

    def capture(self, t: SymbolicTensor) -> SymbolicTensor:
        if t not in self.captures:
            self.captures[t] = self.input_like(t, "outer")
        return self.captures[t]


@contextmanager
def _scratch() -> Iterator[None]:
    with _ScratchGraph(get_default_graph()).as_default():
        yield


def _try(test: Callable[[], Any]) -> Any:
    """``test()``, tried out: while a graph is built, in a scratch graph, so that a test
    that turns out to be a tensor leaves no dead nodes behind (it is traced again, inside
    the loop's condition). A Python value it returns is the real answer."""
    if ef.executing_eagerly():
        return test()
    with _scratch():
        return test()


# --- if ---------------------------------------------------------------------------------------
def if_stmt(
    condition: Any,
    body: Callable[[], None],
    orelse: Callable[[], None] | None = None,
    get_state: Callable[[], State] = _no_state,
    set_state: Callable[[State], None] = _ignore,
    names: Sequence[str] = (),
    nouts: int = 0,
) -> None:
    """``if condition: body() else: orelse()``. A symbolic tensor condition builds a ``cond``
    whose outputs are the first ``nouts`` state variables (the others the branches only
    read and change: each branch starts from their value before the ``if``)."""
    if isinstance(condition, SymbolicTensor):
        where = _caller()
        orelse = orelse or _nothing
        _graph_if(condition, body, orelse, get_state, set_state, names[:nouts], where)
    elif condition:
        body()
    elif orelse is not None:
        orelse()


def _graph_if(
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

    def of_branch(self, which: str, values: list[Any]) -> list[Tensor]:
        """The tensors branch ``which`` outputs, checked against the if branch's."""
        self.branches[which] = values
        tensors: list[Tensor] = []
        for i, (name, value) in enumerate(zip(self.names, values, strict=True)):
            if which == "if":
                self.dtypes.append(None)
                self.shapes.append(None)
                if _tensor_like(value):
                    tensors.append(self._tensor(name, value, which))
                    self.dtypes[i], self.shapes[i] = tensors[-1].dtype, tensors[-1].shape
            else:
                first = self.branches["if"][i]
                if isinstance(value, UndefinedReturnValue) and self.dtypes[i] is not None:
                    value = _zeros(_Spec(self.dtypes[i], self.shapes[i]), self.where)
                self._check_same_kind(name, first, value)
                if self.dtypes[i] is not None:
                    tensors.append(self._tensor(name, value, which, self.dtypes[i]))
        return tensors

    def final(self, results: Sequence[Tensor]) -> list[Any]:
        """Each variable's value after the ``if``: the cond's output, or the Python value
        both branches agree on (equal numbers stay numbers: ``do_return = True`` in both
        branches is still a Python True after them)."""
        outputs = iter(results)
        final: list[Any] = []
        for first, other, dtype in zip(
            self.branches["if"], self.branches["else"], self.dtypes, strict=True
        ):
            output = next(outputs) if dtype is not None else None
            both_python = not isinstance(first, Tensor) and not isinstance(other, Tensor)
            if dtype is None or (both_python and _same_python_value(first, other)):
                final.append(first)
            else:
                final.append(output)
        return final

    def _check_same_kind(self, name: str, first: Any, other: Any) -> None:
        """The else branch's value of a variable fits the if branch's."""
        both_tensors = _tensor_like(first) and _tensor_like(other)
        neither = not _tensor_like(first) and not _tensor_like(other)
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
            f"'{name}' is {_describe(first)} in the if branch of the if on a tensor in "
            f"{self.where} but {_describe(other)} in its else branch: only tensors (and "
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


# --- loops ------------------------------------------------------------------------------------
def while_stmt(
    test: Callable[[], Any],
    body: Callable[[], None],
    get_state: Callable[[], State] = _no_state,
    set_state: Callable[[State], None] = _ignore,
    names: Sequence[str] = (),
) -> None:
    """``while test(): body()``. A test that is a symbolic tensor builds a ``while_loop``
    whose loop variables are the state variables."""
    where = _caller()
    first = _try(test)
    if not isinstance(first, SymbolicTensor):
        _python_while(first, test, body, where)
    else:
        variables = _LoopVariables(get_state, set_state, names, where, body)

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
    get_state: Callable[[], State] = _no_state,
    set_state: Callable[[State], None] = _ignore,
    names: Sequence[str] = (),
) -> None:
    """``for item in iterated: body(item)``, stopping early once ``extra_test()`` is false
    (``not break_``, ``not do_return``). A symbolic tensor builds a ``while_loop`` over its
    items (over the numbers themselves, for a ``range``); anything else is a Python loop."""
    where = _caller()
    if not isinstance(iterated, SymbolicTensor):
        _python_for(iterated, extra_test, body, get_state, set_state, names, where)
        return
    items = _Items(iterated, where)
    variables = _LoopVariables(get_state, set_state, names, where, lambda: body(items.sample()))

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
            _graph_if(go_on, iteration, _nothing, get_state, set_state, names, where)
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
    ) -> None:
        self.get_state, self.set_state, self.names, self.where = get_state, set_state, names, where
        self.before = list(get_state())
        self.fixed: dict[int, Any] = {}  # position -> a Python value the loop leaves alone
        staged = self.before
        if not all(_tensor_like(v) for v in self.before):
            staged = self._stage(one_iteration)
        self.start: list[Tensor] = []
        self.invariants: list[Any] = []
        for i, (name, before, after) in enumerate(zip(names, self.before, staged, strict=True)):
            if _tensor_like(before):
                self.start.append(ef.convert_to_tensor(before))
                self.invariants.append(self.start[-1].shape)
            elif _no_value(before) and (isinstance(after, _Spec) or _tensor_like(after)):
                spec = after if isinstance(after, _Spec) else _spec(ef.constant(after))
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
                    f"'{name}' is {_describe(before)} before the loop on a tensor in {where}, "
                    "and the loop changes it: the variables of a graph loop must be tensors "
                    "(or numbers)"
                )

    def _stage(self, one_iteration: Callable[[], None]) -> list[Any]:
        """Trace one iteration into a scratch graph, from the values before the loop (with
        the same helpers: an ``if`` in there is a ``cond`` in the scratch graph); the kinds
        of values it leaves, a tensor's as a ``_Spec``."""
        try:
            with _scratch():
                self.set_state(self.before)
                one_iteration()
                return [_spec(v) for v in self.get_state()]
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

    def _start_as_zeros(self, like: _Spec) -> None:
        """Zeros as the start of a variable first assigned in the loop: the staging showed
        the body assigns it before reading it, so its value never shows."""
        self.start.append(_zeros(like, self.where))
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
                        f"'{name}' is {_describe(self.fixed[i])} before the loop on a tensor in "
                        f"{self.where} and changes in it: the variables of a graph loop "
                        "must be tensors (or numbers)"
                    )
                continue
            start, invariant = next(starts)
            values.append(self._checked(name, value, start, invariant))
        return values

    def _checked(self, name: str, value: Any, start: Tensor, invariant: Any) -> Tensor:
        if not _tensor_like(value):
            raise DTypeError(
                f"'{name}' is {_describe(value)} after an iteration of the loop on a tensor "
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
                "keeps each variable's shape"
            )
        return tensor


class _Spec(NamedTuple):
    """The dtype and shape of a tensor seen while staging (the scratch graph's tensors
    themselves must not leave it)."""

    dtype: Any
    shape: Any


def _spec(value: Any) -> Any:
    return _Spec(value.dtype, value.shape) if isinstance(value, Tensor) else value


def _zeros(like: _Spec, where: Where) -> Tensor:
    """Zeros of ``like``'s dtype and shape (an unknown dimension becomes 0), standing for a
    value that is never read."""
    if like.shape is None:
        raise AutoGraphError(f"a value in {where} needs a placeholder, but its rank is unknown")
    return ef.zeros(tuple(0 if d is None else d for d in like.shape), like.dtype)


def _fits(shape: Any, invariant: Any) -> bool:
    """Whether ``shape`` is allowed where ``invariant`` (None: any size) is required."""
    if invariant is None:
        return True
    if shape is None or len(shape) != len(invariant):
        return False
    return all(i is None or s == i for s, i in zip(shape, invariant, strict=True))


__all__ = [
    "COUNTED",
    "AutoGraphError",
    "Undefined",
    "UndefinedReturnValue",
    "UndefinedVariableError",
    "Where",
    "and_",
    "for_stmt",
    "if_exp",
    "if_stmt",
    "not_",
    "or_",
    "retval",
    "while_stmt",
]
