"""The execution seam: the one function every public op calls, and what decides its meaning.

``execute(op_name, inputs, attrs)`` does two things:

1. with no context installed (eager mode) it runs the op's NumPy kernel now and returns
   eager tensors. The graph package installs a *context* of its own, whose ``run_op`` adds
   a node to a graph and returns symbolic tensors instead; a Session runs that node's kernel
   later, through the same ``run_kernel`` as eager execution, so it fails the same way;
2. it tells every registered *recorder* what happened (op, inputs, attrs, outputs). The
   autodiff package's GradientTape is such a recorder.

This package knows neither tapes nor graphs: only these two small interfaces. That is the
whole trick behind TensorFlow's ``gen_math_ops._mat_mul``: ``if in graph mode: add a node,
else: execute now; then record the gradient``.

The current context and the recorders belong to the thread that set them, as in
TensorFlow: while one thread builds a graph, another thread's ops still run eagerly, and a
tape hears only the ops of its own thread. (They are a ``contextvars.ContextVar``, which is
per thread and also per asyncio task.)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from operator import attrgetter
from typing import Any, Protocol

import numpy as np

from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import EagerflowError, InvalidArgumentError, UnknownOpError
from eagerflow.tensor.registry import OPS, Attrs, OpDef
from eagerflow.tensor.tensor import Tensor

NO_ATTRS: Attrs = {}  # shared by every op without attributes; never mutated


class Context(Protocol):
    """How ops run: eagerly, or by building a graph (see ``eagerflow.graph``).

    Besides ops, a context decides about state made and changed inside it: the autodiff
    package's ``Variable`` asks it where a new variable's value lives, and what ``assign``
    returns. (This package knows no variables: to it they are just objects.)
    """

    #: What ``variable.assign(...)`` returns in this context: the variable itself (TF 2, as
    #: eagerly) or the assign op's output (TF 1 graphs, where it is something to fetch).
    assign_returns_variable: bool

    def run_op(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, name: str | None
    ) -> tuple[Tensor, ...]: ...

    def create_variable(self, variable: Any) -> Any:
        """Called as ``variable`` is made in this context: return where its value will live
        (an autodiff ``Storage``), or None to make it an eager variable after all."""
        ...


class Recorder(Protocol):
    """Something told about every op after it ran (a GradientTape, a tracer, a profiler)."""

    def record(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, outputs: tuple[Tensor, ...]
    ) -> None: ...


def run_kernel(op: OpDef, args: Sequence[Any], attrs: Attrs, inputs: Sequence[Tensor]) -> Any:
    """Call ``op``'s kernel on the NumPy values ``args``: the one place a kernel runs, for an
    eager op (``execute``), a step of a Session's plan and constant folding alike.

    ``inputs`` are the tensors ``args`` are the values of (eager tensors, or a graph's symbolic
    ones): an error names their dtypes. A failing kernel raises the same error everywhere: an
    eagerflow error as the kernel raised it, any other (NumPy's) as ``explain_failure`` says
    it; either prefixed with the op and its inputs, such as ``MatMul(float32[2,3], ...)``.
    """
    try:
        if attrs:
            return op.kernel(*args, **attrs)
        return op.kernel(*args)  # (an empty **attrs would cost ~30 ns per op)
    except EagerflowError as e:  # the kernel's own check, e.g. an integer division by zero
        raise e.at_op(op.name, _as_run(args, inputs)) from None
    except Exception as e:
        raise explain_failure(op, _as_run(args, inputs), attrs, e) from e


def _as_run(args: Sequence[Any], inputs: Sequence[Tensor]) -> list[Tensor]:
    """The inputs as the kernel got them: each input's dtype, the shape of its value (a
    graph's tensor may not know its shape before it runs). Made only for an error message."""
    pairs = zip(args, inputs, strict=True)
    return [t if a is None else Tensor(np.asarray(a), t.dtype) for a, t in pairs]


def explain_failure(
    op: OpDef, inputs: Sequence[Tensor], attrs: Attrs, error: Exception
) -> EagerflowError:
    """Turn a NumPy error into ours: the op's shape rule says what is wrong with the shapes.

    Runs only after a kernel failed, so running a kernel never pays for the shape rule.
    """
    if any(getattr(t, "_value", None) is None for t in inputs):
        return InvalidArgumentError(
            "a symbolic (graph) tensor cannot be used in eager mode; run it with a Session, "
            "or build this op inside the graph's `as_default()` block"
        ).at_op(op.name, inputs)
    try:
        op.shape_rule([t.shape for t in inputs], attrs)
    except EagerflowError as e:
        return e.at_op(op.name, inputs)
    detail = f"{type(error).__name__}: {error}"
    return InvalidArgumentError(f"the kernel failed with {detail}").at_op(op.name, inputs)


# `map(_value_of, inputs)`: `(t._value for t in inputs)` without a generator's frame
_value_of, _dtype_of = attrgetter("_value"), attrgetter("_dtype")


class State:
    """What decides how an op runs, in one thread: one record, so ``execute`` looks up once.

    (A class with slots: unpacking a NamedTuple, a tuple subclass, costs ~25 ns more per op.)
    """

    __slots__ = ("context", "recorders")

    def __init__(self, context: Context | None, recorders: tuple[Recorder, ...]) -> None:
        self.context = context  # None: eager execution
        self.recorders = recorders  # replaced, never mutated, so loops need no copy


_EAGER = State(None, ())
_state: ContextVar[State] = ContextVar("eagerflow_state", default=_EAGER)


# The eager hot path, kept in one function on purpose (over ruff's complexity limit): every
# eager op runs it, and each helper it called would add a Python call (~60 ns) to ops of 1-2 us.
def execute(  # noqa: C901
    op_name: str, inputs: tuple[Tensor, ...], attrs: Attrs = NO_ATTRS, name: str | None = None
) -> tuple[Tensor, ...]:
    """Run op ``op_name`` on ``inputs`` in the current context and notify the recorders.

    The one entry point of every public op. Returns the op's outputs as a tuple.
    """
    try:
        op = OPS[op_name]
    except KeyError:
        raise UnknownOpError(f"no op named {op_name!r} is registered") from None

    state = _state.get()
    if state.context is not None:  # e.g. a graph is being built: the context decides
        outputs = state.context.run_op(op, inputs, attrs, name)
        if outputs.__class__ is not tuple or (len(outputs) != 1 and not op.multi_output):
            raise _bad_outputs(state.context, op, outputs)
    else:  # eager mode: run the kernel now; `name` is ignored, as in TensorFlow
        # The inputs' dtypes and values, by hand for the usual two, one or no inputs: `map`
        # and `tuple` cost ~150 ns each, on an op of 1-2 us
        n = len(inputs)
        if n == 2:
            x, y = inputs
            dts: tuple[DType, ...] = (x._dtype, y._dtype)
            args: tuple[Any, ...] = (x._value, y._value)
        elif n == 1:
            (x,) = inputs
            dts = (x._dtype,)
            args = (x._value,)
        elif n == 0:  # a variable's read, a constant
            dts = args = ()
        else:
            dts = tuple(map(_dtype_of, inputs))
            args = tuple(map(_value_of, inputs))
        try:
            if attrs:
                out_dtypes = op.dtype_rule(dts, attrs)
            else:  # a rule always gives the same answer: asked once (see OpDef.known_dtypes)
                out_dtypes = op.known_dtypes.get(dts) or _remember_dtypes(op, dts)
        except EagerflowError as e:  # the dtype rule refused the inputs
            raise e.at_op(op.name, inputs) from None
        result = run_kernel(op, args, attrs, inputs)
        if op.multi_output:
            outputs = tuple(map(Tensor, result, out_dtypes))
        else:
            outputs = (Tensor(result, out_dtypes[0]),)

    if state.recorders:  # (most ops have none to tell: an empty loop costs ~30 ns)
        for recorder in state.recorders:
            recorder.record(op, inputs, attrs, outputs)
    return outputs


def _bad_outputs(context: Context, op: OpDef, got: Any) -> EagerflowError:
    """The error for a context whose ``run_op`` returned something else than a tuple of
    outputs (one, unless the op has several)."""
    where = f"{type(context).__qualname__}.run_op"
    count = "one per output" if op.multi_output else "of one tensor"
    if got.__class__ is tuple:
        what = f"a tuple of {len(got)}"
    else:
        what = f"a {type(got).__name__}" + (
            " (write `return (output,)`)" if not op.multi_output else ""
        )
    return EagerflowError(f"{where} returned {what} for {op.name}; expected a tuple {count}")


def _remember_dtypes(op: OpDef, dts: tuple[DType, ...]) -> Sequence[DType]:
    """The dtype rule's answer for these input dtypes (no attributes), kept for next time."""
    known = op.known_dtypes[dts] = op.dtype_rule(dts, NO_ATTRS)
    return known


# --- the small public interface upper layers plug into ------------------------------------
# Each change builds a new State for this thread; a `with` block restores only the field it
# changed, so a tape that leaves inside a graph's block stays gone when the block ends.
def current_context() -> Context | None:
    """The context ops run in now, in this thread; None means eager execution."""
    return _state.get().context


def executing_eagerly() -> bool:
    """True when ops run at once (no graph is being built in this thread)."""
    return _state.get().context is None


@contextmanager
def context(ctx: Context | None) -> Iterator[Context | None]:
    """Make ``ctx`` the current context inside the ``with`` block (None: eager; they nest)."""
    outer = _state.get().context
    _set_context(ctx)
    try:
        yield ctx
    finally:
        _set_context(outer)


def _set_context(ctx: Context | None) -> None:
    _state.set(State(ctx, _state.get().recorders))


def _set_recorders(recorders: tuple[Recorder, ...]) -> None:
    _state.set(State(_state.get().context, recorders))


def add_recorder(recorder: Recorder) -> None:
    """Tell ``recorder`` about every op of this thread from now on (until ``remove_recorder``)."""
    _set_recorders((*_state.get().recorders, recorder))


def remove_recorder(recorder: Recorder) -> None:
    """Stop telling ``recorder`` about this thread's ops."""
    recorders = _state.get().recorders
    if recorders and recorders[-1] is recorder:  # the usual case: the newest one leaves
        _set_recorders(recorders[:-1])
    else:
        _set_recorders(tuple(r for r in recorders if r is not recorder))


def active_recorders() -> tuple[Recorder, ...]:
    """The recorders this thread's ops are told about, oldest first."""
    return _state.get().recorders


@contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """``add_recorder`` for the duration of a ``with`` block."""
    add_recorder(recorder)
    try:
        yield recorder
    finally:
        remove_recorder(recorder)


@contextmanager
def older_recorders(recorder: Recorder) -> Iterator[None]:
    """Inside the block only the recorders added before ``recorder`` hear ops: for a recorder
    that runs ops of its own while it handles one (a ``ForwardAccumulator`` computing a
    tangent). Outer recorders hear those ops, so they can differentiate them in turn; the
    recorder itself and those added after it (inner ones) do not."""
    every = _state.get().recorders
    older = every[: next((i for i, r in enumerate(every) if r is recorder), len(every))]
    _set_recorders(older)
    try:
        yield
    finally:
        _set_recorders(every)


@contextmanager
def no_recording() -> Iterator[None]:
    """Hide every recorder inside the block (for work that must not be differentiated)."""
    hidden = _state.get().recorders
    _set_recorders(())
    try:
        yield
    finally:
        _set_recorders(hidden)


__all__ = [
    "NO_ATTRS",
    "Context",
    "Recorder",
    "State",
    "active_recorders",
    "add_recorder",
    "context",
    "current_context",
    "execute",
    "executing_eagerly",
    "explain_failure",
    "no_recording",
    "older_recorders",
    "recording",
    "remove_recorder",
    "run_kernel",
]
