"""``@function``: trace eager Python code into a graph once, then run the graph.

The first call with a new *signature* (each tensor argument's dtype and shape, each other
argument's value) runs the Python function with placeholders in a fresh graph: every op it
calls adds a node, Python side effects such as ``print`` happen now and only now. The graph
is cached as a ``ConcreteFunction``; later calls with the same signature run the graph.

A call is one op on the seam (``PartitionedCall``), so in eager mode it returns eager tensors
and a GradientTape records it as one op, whose gradient is another traced function built by
``gradients()`` from the same graph. Stateful ops keep eager meaning: a variable is read where
the code read it, every ``assign`` runs, in the code's order (``auto_control_deps``).

Before the first trace, AutoGraph converts the function's source (``autograph/``), so that an
``if``, ``while`` or ``for`` on a tensor becomes ``cond`` or ``while_loop`` instead of failing
on ``bool()`` of a symbolic tensor (``function(f, autograph=False)`` traces ``f`` as written).

``function(f, input_signature=[TensorSpec((None, 3))])`` fixes the signature instead: ``f`` is
traced once, with ``None`` sizes left open in the graph, and every call is checked against the
specs (``signatures.py``). A function traced more than 5 times warns (``RetracingWarning``),
naming the argument that keeps changing. And ``run_functions_eagerly(True)`` turns all of this
off: every ``function`` runs as plain Python, for a debugger.
"""

from __future__ import annotations

import functools
import threading
import types
import warnings
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, overload

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import OpRecord, Variable, register_gradient
from eagerflow.graph.autograph import maybe_convert
from eagerflow.graph.core.auto_control_deps import add_automatic_control_dependencies
from eagerflow.graph.core.gradients import gradients
from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor
from eagerflow.graph.core.subgraphs import FunctionGraph, Subgraph
from eagerflow.graph.tracing.signatures import (
    RETRACING_THRESHOLD,
    RetracingWarning,
    Signature,
    argument_signatures,
    bind_to_signature,
    check_input_signature,
    generalizes,
    relax,
    retracing_message,
    signature_of,
    signature_parameters,
    stacklevel_of_caller,
)
from eagerflow.graph.tracing.tensor_spec import TensorSpec
from eagerflow.tensor import Tensor
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import EagerflowError, ShapeError, a_tensor, format_shape
from eagerflow.tensor.execution import active_recorders, execute, executing_eagerly
from eagerflow.tensor.nest import flatten, pack_around_nones, pack_sequence_as
from eagerflow.tensor.registry import OPS, Attrs, Shape, op
from eagerflow.tensor.rules import compatible
from eagerflow.tensor.schema import Instance


class TraceGraph(FunctionGraph):
    """The graph a function is traced into. It notes the variables the function reads (a
    tape outside must see them used) and the ones it creates: those become eager variables,
    because they must outlive the trace."""

    assign_returns_variable = True  # TF 2: as in eager code

    def __init__(self, outer: Graph | None) -> None:
        super().__init__(outer or Graph())
        self.created: list[Variable] = []

    def create_variable(self, variable: Variable) -> None:
        """None: the variable is made eagerly, since it must outlive the trace."""
        self.created.append(variable)


class ConcreteFunction(Subgraph):
    """One traced graph of a function: inputs, outputs, and the stateful ops that run with
    them (ordered as the Python code ran them, see ``auto_control_deps``).

    Called with no tape recording, it runs just that. Under a tape (or inside a graph, where
    ``gradients()`` may come later) it runs its ``forward()`` variant instead, which also
    takes each variable it reads as an input and hands its backward pass the outputs of
    its stateful ops."""

    def __init__(
        self,
        graph: FunctionGraph,
        inputs: Sequence[SymbolicTensor],
        outputs: Sequence[SymbolicTensor],
        variables: Sequence[Variable] = (),
        side_effects: Sequence[Operation] = (),
        structure: Any = None,
        jit_compile: bool = False,
    ) -> None:
        super().__init__(graph, inputs, outputs, side_effects)
        self.jit_compile = jit_compile
        self.variables = list(variables)
        self.structure = structure
        # set on a forward variant: the outputs kept for the backward pass
        self.kept: list[SymbolicTensor] = []
        self._forward: ConcreteFunction | None = None
        self._gradient: ConcreteFunction | None = None

    @functools.cached_property
    def dtypes(self) -> tuple[tuple[DType, ...], list[DType]]:
        """The dtypes of its inputs and of its outputs (asked at every call)."""
        return tuple(t.dtype for t in self.arguments), [t.dtype for t in self.outputs]

    @functools.cached_property
    def arguments(self) -> list[SymbolicTensor]:
        """The graph's inputs (a function has no unused input slots, unlike a branch)."""
        return [t for t in self.inputs if t is not None]

    def __call__(self, *tensors: Any) -> Any:
        return self._run(self._converted(tensors))

    def _run(self, inputs: list[Tensor]) -> Any:
        """The call, for inputs that fit (``_converted``): one ``PartitionedCall``."""
        for watch in CALL_WATCHERS:
            watch(self)
        function = self
        if active_recorders() or not executing_eagerly():
            function = self.forward()
            inputs += [v.read_value() for v in self.variables]  # so a tape sees them used
        outputs = execute("PartitionedCall", tuple(inputs), {"function": function})
        structure = self.structure
        if structure is None:
            return None
        if isinstance(structure, Tensor):  # one tensor returned: nothing to pack
            return outputs[0]
        return pack_around_nones(structure, outputs)  # (a forward variant has more outputs)

    def _converted(self, values: Sequence[Any]) -> list[Tensor]:
        """The call's values as tensors that fit the graph's inputs: a Python number or
        NumPy array takes its input's dtype; a wrong count, dtype or shape is an error that
        names the input (a ``None`` size of the graph fits any)."""
        arguments = self.arguments
        if len(values) != len(arguments):
            names = ", ".join(t.op.name for t in arguments)
            raise TypeError(
                f"this concrete function takes {len(arguments)} tensor(s) ({names}), got "
                f"{len(values)}"
            )
        tensors = []
        for value, graph_input in zip(values, arguments, strict=True):
            if (
                isinstance(value, Tensor)
                and value.dtype is graph_input.dtype
                and compatible(graph_input.shape, value.shape)
            ):  # the usual call, checked without building a message
                tensors.append(value)
                continue
            expected = (
                f"input {graph_input.op.name} was traced for {a_tensor(graph_input.dtype)} of "
                f"shape {format_shape(graph_input.shape)}"
            )
            try:
                tensor = ef.convert_to_tensor(value, graph_input.dtype)
            except EagerflowError as e:
                raise type(e)(f"{expected}: {e}") from None
            if not compatible(graph_input.shape, tensor.shape):
                raise ShapeError(f"{expected}, got shape {format_shape(tensor.shape)}")
            tensors.append(tensor)
        return tensors

    def compiled_source(self) -> str:
        """The source that ``jit_compile=True`` made of this trace: each fused loop, then
        the program (for the last input signature it ran with; for the graph's own shapes
        if it has not run yet, and they are all known)."""
        compiled = self.compiled()
        if not compiled.programs:
            shapes = [t.shape for t in compiled.fed]
            if any(s is None or None in s for s in shapes):
                raise ValueError(
                    "the trace has inputs of unknown size: call the function first, and the "
                    "source compiled for that call's shapes is shown"
                )
            compiled.programs[tuple(shapes)] = compiled.compile(shapes)
        program = list(compiled.programs.values())[-1]
        return "\n\n".join([*program.kernels.values(), program.source]) + "\n"

    def forward(self) -> ConcreteFunction:
        """This function as a tape needs it: each variable it reads is an extra input (its
        *handle*: the gradient for it is the variable's), and the output of every stateful
        op it runs is an extra output, fed to the backward pass so that the backward pass
        never runs a stateful op again (no second ``assign``, no new random numbers)."""
        if self._forward is None:
            with self.graph.as_default():
                handles = [self.graph.handle(v) for v in self.variables]
            outputs = set(self.outputs)
            kept = [
                t
                for step in self.plan().steps
                if step.operation.op_def.stateful
                for t in step.operation.outputs
                if t not in outputs
            ]
            forward = ConcreteFunction(
                self.graph, [*self.arguments, *handles], [*self.outputs, *kept], (),
                self.side_effects, self.structure, self.jit_compile,
            )  # fmt: skip
            forward.kept = kept
            self._forward = forward
        return self._forward

    def gradient_function(self) -> ConcreteFunction:
        """The vector-Jacobian product: inputs, kept outputs and one seed per output in,
        d(outputs)/d(inputs) out (a handle's gradient is its variable's). Traced once, into
        this function's own graph.

        The variables' reads are kept outputs, so this function is fed their values and
        never reads a variable itself: its handle inputs are left unused (fresh
        placeholders). A gradient of this gradient then reaches each variable once, through
        the kept reads, as in TensorFlow, not a second time through the handles."""
        if self._gradient is None:
            graph = self.graph
            # fed, though computed in the graph: a gradient function's kept inputs
            fed = [t for t in self.arguments if not t.op.op_def.fed]
            with graph.as_default():
                seeds = [graph.input_like(t, "grad") for t in self.outputs]
                grads = gradients(self.outputs, self.arguments, grad_ys=seeds, stop_gradients=fed,
                                  unconnected_gradients="zero")  # fmt: skip
                own = [graph.input_like(t, "unused") if t in graph.handles else t
                       for t in self.inputs]  # fmt: skip
            inputs = [*own, *self.kept, *seeds]
            self._gradient = ConcreteFunction(
                self.graph,
                inputs,  # type: ignore[arg-type]
                grads,  # type: ignore[arg-type]
                jit_compile=self.jit_compile,
            )
        return self._gradient


def _call_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    return [t.shape for t in attrs["function"].outputs]


def _call_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    expected, results = attrs["function"].dtypes
    if tuple(dts) != expected:
        raise ef.DTypeError(f"the function was traced for inputs {list(expected)}, got {list(dts)}")
    return results


@op("PartitionedCall", shape=_call_shape, dtype=_call_dtype,
    attrs={"function": Instance(ConcreteFunction, "a ConcreteFunction")}, multi_output=True,
    stateful=True)  # fmt: skip
def call_kernel(*inputs: np.ndarray, function: ConcreteFunction) -> tuple[Any, ...]:
    """Run a traced function's graph on its inputs."""
    return tuple(function.call(inputs))


@register_gradient("PartitionedCall")
def _call_grad(op: OpRecord, *grads: Tensor) -> tuple[Tensor | None, ...]:
    function = op.attrs["function"]
    kept = op.outputs[len(op.outputs) - len(function.kept) :]
    inputs = (*op.inputs, *kept, *grads)
    return execute("PartitionedCall", inputs, {"function": function.gradient_function()})


# --- run_functions_eagerly -------------------------------------------------------------------
# One switch for the whole process, as TensorFlow's ``tf.config.run_functions_eagerly``: a
# debugging session wants every function plain, including those called by library code.
_run_eagerly = False
# How many exact (dtype, shape) signatures a Function remembers for its fast path: a trace
# with None sizes serves every batch size, and a long run must not keep one entry per size.
FAST_CACHE_SIZE = 256
# called with each ConcreteFunction that runs, when someone listens (summary.trace_on)
CALL_WATCHERS: list[Callable[[ConcreteFunction], None]] = []


def run_functions_eagerly(run_eagerly: bool) -> None:
    """``True``: every ``function`` runs its Python function as plain Python at each call
    (no trace, no AutoGraph), so ``print`` and ``breakpoint()`` inside run every time and a
    debugger steps through your own lines. ``False`` (the default) traces again; traces made
    before are kept. TensorFlow's ``tf.config.run_functions_eagerly``."""
    if not isinstance(run_eagerly, bool):
        raise TypeError(f"run_functions_eagerly takes True or False, got {run_eagerly!r}")
    global _run_eagerly
    _run_eagerly = run_eagerly


def functions_run_eagerly() -> bool:
    """Whether ``run_functions_eagerly(True)`` is in force (``tf.config.functions_run_eagerly``)."""
    return _run_eagerly


# --- Function ----------------------------------------------------------------------------------
class Function:
    """A Python function traced into a graph per input signature (see the module docs).

    On a method (``class M: @function def f(self, x)``) each instance gets a Function of its
    own, as in TensorFlow: ``m.f`` is ``f`` bound to ``m``, with its own traces, so a trace
    that captured ``m``'s variables never runs for another instance. An ``input_signature``
    describes the arguments after ``self``.
    """

    def __init__(
        self,
        python_function: Callable[..., Any],
        autograph: bool = True,
        input_signature: Sequence[Any] | None = None,
        jit_compile: bool = False,
        reduce_retracing: bool = False,
    ) -> None:
        if not callable(python_function):
            got = f"{type(python_function).__name__} {python_function!r:.40}"
            raise TypeError(f"function() takes a Python function to trace, got {got}")
        self.python_function = python_function
        self.autograph = autograph
        self.jit_compile, self.reduce_retracing = jit_compile, reduce_retracing
        self.input_signature = (
            None if input_signature is None else check_input_signature(input_signature)
        )
        self._parameters: list[str] | None = None  # the names input_signature describes
        self._traced_function: Callable[..., Any] | None = None  # converted, on first trace
        self._cache: dict[tuple[Signature, ...], ConcreteFunction] = {}  # one key per trace
        # the same traces, for calls with tensors alone, by each one's dtype and shape: a
        # trace with None sizes serves any number of shapes, so this one is bounded
        self._fast_cache: dict[tuple[Any, ...], ConcreteFunction] = {}
        self.trace_count = 0
        self._traced_signatures: list[dict[str, tuple[Signature, ...]]] = []  # for the warning
        self._warned_retracing = False
        self._tracing = threading.RLock()  # held while tracing (a trace may call itself)
        self._owner: type | None = None  # the class, if this is a method
        self._attribute = getattr(python_function, "__name__", "function")
        functools.update_wrapper(self, python_function)

    def __set_name__(self, owner: type, name: str) -> None:
        self._owner, self._attribute = owner, name

    def __get__(self, instance: Any, owner: type | None = None) -> Function:
        """``instance.f``: the Function of ``f`` bound to ``instance``, made on first use and
        kept in the instance's ``__dict__`` under the method's name (as ``cached_property``
        does), so later lookups find it there and it lives as long as the instance."""
        if instance is None:
            return self  # ``M.f``: calls pass the instance first, see ``_called_on_instance``
        try:
            bound_functions = vars(instance)
        except TypeError:
            raise TypeError(
                f"@function method {self._attribute}: {type(instance).__name__} instances "
                "have no __dict__ (__slots__) to keep their own traces in"
            ) from None
        bound = bound_functions.get(self._attribute)
        if not isinstance(bound, Function):
            method = types.MethodType(self.python_function, instance)
            bound = Function(method, self.autograph, self.input_signature, self.jit_compile,
                             self.reduce_retracing)  # fmt: skip
            bound_functions[self._attribute] = bound
        return bound

    def _called_on_instance(self, args: Sequence[Any]) -> bool:
        """``M.f(m, x)``: a method called through its class, the instance first."""
        return self._owner is not None and bool(args) and isinstance(args[0], self._owner)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs and not _run_eagerly and self._owner is None:  # the usual call, fast
            key = tuple([(x.dtype, x.shape) if type(x) is Tensor else _NOT_FAST for x in args])
            known = self._fast_cache.get(key)
            if known is not None:  # (checked when it was traced: these tensors fit it)
                return known._run(list(args))
        if self._called_on_instance(args):
            return self.__get__(args[0])(*args[1:], **kwargs)
        if _run_eagerly:
            return self._run_as_python(args, kwargs)
        concrete, leaves = self._concrete(args, kwargs)
        tensors = [x for x in leaves if isinstance(x, Tensor)]
        if len(tensors) < len(leaves):
            _refuse_specs(self._name(), leaves)
        return concrete(*tensors)

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The traced graph for these arguments, tracing it now if it is new: example
        tensors and Python values as in a call, or ``TensorSpec`` objects in place of tensors (a
        ``None`` size stays open, so the trace serves calls of any size there). With an
        ``input_signature`` and no arguments: the signature's one trace.

        The result is called with the tensors alone (Python values are part of its graph);
        ``.graph`` is the graph itself, to inspect (``get_operations()``, ``to_mermaid()``)."""
        if self._called_on_instance(args):
            return self.__get__(args[0]).get_concrete_function(*args[1:], **kwargs)
        if self.input_signature is not None and not args and not kwargs:
            args = self.input_signature
        return self._concrete(args, kwargs)[0]

    def experimental_get_tracing_count(self) -> int:
        """How many times the Python function has been traced (TensorFlow's name; also
        ``trace_count``)."""
        return self.trace_count

    def _run_as_python(self, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
        """The Python function as written, run now (``run_functions_eagerly(True)``). An
        input_signature still checks the arguments and makes them tensors, so the function
        gets what a trace would give it and a wrong input is the same error in both modes."""
        if self.input_signature is not None:
            args, kwargs = self._bind(args, kwargs), {}
            _refuse_specs(self._name(), flatten(list(args)))
        return self.python_function(*args, **kwargs)

    def _bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> list[Any]:
        """The arguments checked against the input_signature, as tensors (see ``signatures``)."""
        assert self.input_signature is not None
        if self._parameters is None:
            self._parameters = signature_parameters(
                self._name(), self.python_function, len(self.input_signature)
            )
        return bind_to_signature(self._name(), self._parameters, self.input_signature, args, kwargs)

    def _concrete(self, args: Any, kwargs: Any) -> tuple[ConcreteFunction, list[Any]]:
        """The trace for the arguments' signature (traced now if new), and the flattened
        arguments (NumPy arrays become tensors; with an input_signature, all of them do)."""
        fast_key = None
        if self.input_signature is None and not kwargs:  # the usual call: tensors only
            fast_key = tuple([(x.dtype, x.shape) if type(x) is Tensor else _NOT_FAST for x in args])
            concrete = self._fast_cache.get(fast_key)
            if concrete is not None:
                return concrete, list(args)
        if self.input_signature is None:
            structure = [list(args), dict(sorted(kwargs.items()))]
            leaves = [ef.convert_to_tensor(x) if isinstance(x, np.ndarray) else x
                      for x in flatten(structure)]  # fmt: skip
            trace_as = leaves  # a trace made for the arguments themselves
        else:
            structure = [self._bind(args, kwargs), {}]
            leaves = flatten(structure)
            trace_as = flatten(list(self.input_signature))  # one trace, for the specs
        key = tuple(map(signature_of, trace_as))
        concrete = self._cache.get(key)
        if concrete is None:
            with self._tracing:  # threads calling first at once: one traces, the others wait
                concrete = self._cache.get(key) or self._general_trace(key)
                if concrete is None and self.reduce_retracing and self.input_signature is None:
                    key, trace_as = relax(key, self._cache, trace_as)
                if concrete is None:
                    concrete = self._trace(structure, trace_as)
                    self._note_trace(structure, trace_as)
                    self._cache[key] = concrete
        if fast_key is not None and _NOT_FAST not in fast_key:
            if len(self._fast_cache) >= FAST_CACHE_SIZE:  # the oldest goes (dicts keep order)
                del self._fast_cache[next(iter(self._fast_cache))]
            self._fast_cache[fast_key] = concrete
        return concrete, leaves

    def _general_trace(self, key: tuple[Signature, ...]) -> ConcreteFunction | None:
        """A trace made for more general signatures than ``key``'s (``None`` sizes, from a
        TensorSpec or a placeholder), which can run this call too, as TensorFlow reuses it."""
        return next((c for k, c in self._cache.items() if generalizes(k, key)), None)

    def _trace(self, structure: Any, leaves: list[Any]) -> ConcreteFunction:
        outer = ef.execution.current_context()
        graph = TraceGraph(outer if isinstance(outer, Graph) else None)
        with graph.as_default():
            inputs = [
                _graph_input(graph, x, f"arg{i}")
                for i, x in enumerate(leaves)
                if isinstance(x, Tensor | TensorSpec)
            ]
            it = iter(inputs)
            traced = [next(it) if isinstance(x, Tensor | TensorSpec) else x for x in leaves]
            args, kwargs = pack_sequence_as(structure, traced)
            result = self._function_to_trace()(*args, **kwargs)
            returned = [r for r in flatten(result) if r is not None]  # None: given back
            outputs = [graph._as_graph_tensor(ef.convert_to_tensor(r), OPS["Identity"])
                       for r in returned]  # fmt: skip
        if graph.created and self.trace_count:
            raise ValueError(
                f"{self._name()} created variables on a retrace: a function may create them "
                "only the first time it is traced (create them outside, or once: `if v is None`)"
            )
        self.trace_count += 1
        if graph.created:  # as TensorFlow: trace again, which must create none (else each
            return self._trace(structure, leaves)  # call would silently reuse the first's)
        effects = add_automatic_control_dependencies(graph)
        return ConcreteFunction(graph, inputs, outputs, list(graph.variables), effects, result,
                                self.jit_compile)  # fmt: skip

    def _note_trace(self, structure: Any, leaves: list[Any]) -> None:
        """Remember each argument's signature in this trace; past the threshold, warn once
        (TensorFlow's heuristic), naming the arguments that kept changing."""
        if self._warned_retracing:
            return
        args, kwargs = pack_sequence_as(structure, leaves)
        self._traced_signatures.append(argument_signatures(self.python_function, args, kwargs))
        if self.trace_count > RETRACING_THRESHOLD:
            self._warned_retracing = True
            message = retracing_message(self._name(), self._traced_signatures)
            warnings.warn(message, RetracingWarning, stacklevel=stacklevel_of_caller())
            self._traced_signatures.clear()  # no longer needed

    def _function_to_trace(self) -> Callable[..., Any]:
        """The Python function, converted by AutoGraph unless ``autograph=False`` (one that
        cannot be converted is traced as written, with an ``AutoGraphWarning``)."""
        if self._traced_function is None:
            function = self.python_function
            self._traced_function = maybe_convert(function) if self.autograph else function
        return self._traced_function

    def _name(self) -> str:
        """How messages name the function: ``Model.apply``, not ``test.<locals>.Model.apply``."""
        qualified = getattr(self.python_function, "__qualname__", self._attribute)
        return qualified.rpartition("<locals>.")[2]

    def __repr__(self) -> str:
        name = self.python_function.__name__
        traces = f"{self.trace_count} trace" + ("" if self.trace_count == 1 else "s")
        return f"<eagerflow.graph.function {name} ({traces})>"


_NOT_FAST = object()  # an argument that is not a tensor: the full signature decides


class _Described(NamedTuple):
    """What ``input_like`` reads of a tensor, for a TensorSpec: its shape as a graph writes
    it (a spec's own ``shape`` is a ``TensorShape``) and its dtype."""

    shape: Shape | None  # None: not even the rank is known
    dtype: DType


def _graph_input(graph: TraceGraph, leaf: Tensor | TensorSpec, name: str) -> SymbolicTensor:
    """The trace's placeholder for a tensor argument, or for the tensors a TensorSpec
    describes (its ``None`` sizes stay unknown in the graph; its name, if any, names it)."""
    if isinstance(leaf, TensorSpec):
        return graph.input_like(_Described(leaf.static_shape, leaf.dtype), leaf.name or name)
    return graph.input_like(leaf, name)


def _refuse_specs(function_name: str, leaves: Sequence[Any]) -> None:
    """A TensorSpec describes tensors; a call needs the tensors themselves."""
    for leaf in leaves:
        if isinstance(leaf, TensorSpec):
            raise TypeError(
                f"{function_name}() was called with {leaf!r}: a TensorSpec describes an input, "
                "for get_concrete_function or input_signature; call the function with tensors"
            )


@overload
def function(
    python_function: Callable[..., Any],
    *,
    input_signature: Sequence[Any] | None = None,
    autograph: bool = True,
    jit_compile: bool = False,
    reduce_retracing: bool = False,
) -> Function: ...
@overload
def function(
    python_function: None = None,
    *,
    input_signature: Sequence[Any] | None = None,
    autograph: bool = True,
    jit_compile: bool = False,
    reduce_retracing: bool = False,
) -> Callable[[Callable[..., Any]], Function]: ...
def function(
    python_function: Callable[..., Any] | None = None,
    *,
    input_signature: Sequence[Any] | None = None,
    autograph: bool = True,
    jit_compile: bool = False,
    reduce_retracing: bool = False,
) -> Function | Callable[[Callable[..., Any]], Function]:
    """Decorator: trace ``python_function`` into a graph on the first call for each input
    signature, and run the cached graph afterwards. With ``autograph`` (the default), its
    Python control flow on tensors becomes graph control flow first (see ``autograph``).

    ``input_signature``, a list of ``TensorSpec`` (one per argument, ``None`` for sizes that
    may vary), traces it once for every call that fits, and makes a call that does not fit
    an error naming the argument: a ``DTypeError`` (a ``TypeError``) for a dtype, a
    ``ShapeError`` (a ``ValueError``) for a shape. Python numbers are converted to tensors.

    ``jit_compile=True`` runs each trace compiled (``eagerflow.graph.compiler``): elementwise
    ops fused into loops, buffers planned, the whole graph one generated Python function.
    ``get_concrete_function(...).compiled_source()`` shows what it made.
    ``reduce_retracing=True`` retraces for ``None`` sizes where shapes changed (``relax``).

    ``@function`` and ``@function(input_signature=..., autograph=False)`` both work, as in
    TensorFlow."""
    if python_function is None:
        return lambda f: Function(f, autograph, input_signature, jit_compile, reduce_retracing)
    return Function(python_function, autograph, input_signature, jit_compile, reduce_retracing)


__all__ = [
    "ConcreteFunction",
    "Function",
    "function",
    "functions_run_eagerly",
    "run_functions_eagerly",
]
