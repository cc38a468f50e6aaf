"""``@function``: trace eager Python code into a graph once, then run the graph.

The first call with a new *signature* (each tensor argument's dtype and shape, each other
argument's value) runs the Python function with placeholders in a fresh graph: every op it
calls adds a node, Python side effects such as ``print`` happen now and only now. The graph
is cached as a ``ConcreteFunction``; later calls with the same signature run the graph.

A call is one op on the seam (``PartitionedCall``), so in eager mode it returns eager
tensors and a GradientTape records it as one op, whose gradient is another traced function
built by ``gradients()`` from the same graph.

Stateful ops keep eager meaning: a variable is read where the Python code read it, every
``assign`` runs, and they run in the order the code ran them (``auto_control_deps``).

Before the first trace, AutoGraph converts the function's source (``autograph/``), so that
an ``if``, ``while`` or ``for`` on a tensor becomes ``cond`` or ``while_loop`` instead of
failing on ``bool()`` of a symbolic tensor. ``function(f, autograph=False)`` traces ``f`` as
it is written.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Sequence
from typing import Any, overload

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import OpRecord, Variable, register_gradient
from eagerflow.graph.auto_control_deps import add_automatic_control_dependencies
from eagerflow.graph.control_flow import FunctionGraph, Subgraph
from eagerflow.graph.graph import Graph, Operation, SymbolicTensor
from eagerflow.tensor import Tensor
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.execution import active_recorders, execute, executing_eagerly
from eagerflow.tensor.nest import flatten, pack_sequence_as
from eagerflow.tensor.registry import OPS, Attrs, OpDef, Shape, op


class TraceGraph(FunctionGraph):
    """The graph a function is traced into. It notes the variables the function reads (a
    tape outside must see them used) and the ones it creates: those become eager variables,
    because they must outlive the trace."""

    assign_returns_variable = True  # TF 2: as in eager code

    def __init__(self, outer: Graph | None) -> None:
        super().__init__(outer or Graph())
        self.variables: dict[Variable, None] = {}  # read inside, in order of first read
        self.created: list[Variable] = []

    def create_variable(self, variable: Variable) -> None:
        """None: the variable is made eagerly, since it must outlive the trace."""
        self.created.append(variable)

    def run_op(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, name: str | None
    ) -> tuple[SymbolicTensor, ...]:
        if op.name == "ReadVariableOp":  # a real read, run where the Python code read
            self.variables[attrs["variable"]] = None
        return super().run_op(op, inputs, attrs, name)


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
    ) -> None:
        super().__init__(graph, inputs, outputs, side_effects)
        self.variables = list(variables)
        self.structure = structure
        # set on a forward variant: which inputs stand for variables, which outputs are kept
        self.handles: dict[SymbolicTensor, Variable] = {}
        self.kept: list[SymbolicTensor] = []
        self._forward: ConcreteFunction | None = None
        self._gradient: ConcreteFunction | None = None

    @property
    def arguments(self) -> list[SymbolicTensor]:
        """The graph's inputs (a function has no unused input slots, unlike a branch)."""
        return [t for t in self.inputs if t is not None]

    def __call__(self, *tensors: Any) -> Any:
        inputs = [ef.convert_to_tensor(t) for t in tensors]
        function = self
        if active_recorders() or not executing_eagerly():
            function = self.forward()
            inputs += [v.read_value() for v in self.variables]  # so a tape sees them used
        outputs = execute("PartitionedCall", tuple(inputs), {"function": function})
        if self.structure is None:
            return None
        return pack_sequence_as(self.structure, outputs[: len(self.outputs)])

    def forward(self) -> ConcreteFunction:
        """This function as a tape needs it: each variable it reads is an extra input (its
        *handle*: the gradient for it is the variable's), and the output of every stateful
        op it runs is an extra output, fed to the backward pass so that the backward pass
        never runs a stateful op again (no second ``assign``, no new random numbers)."""
        if self._forward is None:
            with self.graph.as_default():
                handles = {self.graph.input_like(v, "handle"): v for v in self.variables}
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
                self.side_effects, self.structure,
            )  # fmt: skip
            forward.handles, forward.kept = handles, kept
            self._forward = forward
        return self._forward

    def gradient_function(self) -> ConcreteFunction:
        """The vector-Jacobian product: inputs, kept outputs and one seed per output in,
        d(outputs)/d(inputs) out (a handle's gradient is its variable's). Traced once, into
        this function's own graph."""
        if self._gradient is None:
            from eagerflow.graph.gradients import gradients

            with self.graph.as_default():
                seeds = [self.graph.input_like(t, "grad") for t in self.outputs]
                xs = [self.handles.get(t, t) for t in self.arguments]
                grads = gradients(self.outputs, xs, grad_ys=seeds, unconnected_gradients="zero")
            inputs = [*self.inputs, *self.kept, *seeds]
            self._gradient = ConcreteFunction(self.graph, inputs, grads)  # type: ignore[arg-type]
        return self._gradient


def _call_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    return [t.shape for t in attrs["function"].outputs]


def _call_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    expected = [t.dtype for t in attrs["function"].inputs]
    if list(dts) != expected:
        raise ef.DTypeError(f"the function was traced for inputs {expected}, got {list(dts)}")
    return [t.dtype for t in attrs["function"].outputs]


@op("PartitionedCall", shape=_call_shape, dtype=_call_dtype, multi_output=True, stateful=True)
def call_kernel(*inputs: np.ndarray, function: ConcreteFunction) -> tuple[Any, ...]:
    """Run a traced function's graph on its inputs."""
    return tuple(function.call(inputs))


@register_gradient("PartitionedCall")
def _call_grad(op: OpRecord, *grads: Tensor) -> tuple[Tensor | None, ...]:
    function = op.attrs["function"]
    kept = op.outputs[len(op.outputs) - len(function.kept) :]
    inputs = (*op.inputs, *kept, *grads)
    return execute("PartitionedCall", inputs, {"function": function.gradient_function()})


def _signature_of(leaf: Any) -> Any:
    if isinstance(leaf, Tensor):
        return ("tensor", leaf.dtype, None if leaf.shape is None else tuple(leaf.shape))
    if isinstance(leaf, Variable):
        return ("variable", id(leaf))
    try:
        hash(leaf)
    except TypeError:
        return ("value", type(leaf), repr(leaf))
    return ("value", type(leaf), leaf)


class Function:
    """A Python function traced into a graph per input signature (see the module docs).

    On a method (``class M: @function def f(self, x)``) each instance gets a Function of its
    own, as in TensorFlow: ``m.f`` is ``f`` bound to ``m``, with its own traces, so a trace
    that captured ``m``'s variables never runs for another instance.
    """

    def __init__(self, python_function: Callable[..., Any], autograph: bool = True) -> None:
        self.python_function = python_function
        self.autograph = autograph
        self._traced_function: Callable[..., Any] | None = None  # converted, on first trace
        self._cache: dict[Any, ConcreteFunction] = {}
        self.trace_count = 0
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
            return self  # ``M.f``: calls pass the instance first, see ``_concrete``
        try:
            bound_functions = vars(instance)
        except TypeError:
            raise TypeError(
                f"@function method {self._attribute}: {type(instance).__name__} instances "
                "have no __dict__ (__slots__) to keep their own traces in"
            ) from None
        bound = bound_functions.get(self._attribute)
        if not isinstance(bound, Function):
            bound = Function(types.MethodType(self.python_function, instance), self.autograph)
            bound_functions[self._attribute] = bound
        return bound

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        concrete, leaves = self._concrete(args, kwargs)
        return concrete(*[x for x in leaves if isinstance(x, Tensor)])

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The traced graph for these arguments (tracing it now if needed)."""
        return self._concrete(args, kwargs)[0]

    def _concrete(self, args: Any, kwargs: Any) -> tuple[ConcreteFunction, list[Any]]:
        """The cached trace for the arguments' signature (traced now if new), and the
        flattened arguments (NumPy arrays become tensors)."""
        if self._owner is not None and args and isinstance(args[0], self._owner):
            return self.__get__(args[0])._concrete(args[1:], kwargs)  # ``M.f(m, x)``
        structure = [list(args), dict(sorted(kwargs.items()))]
        leaves = [
            ef.convert_to_tensor(x) if isinstance(x, np.ndarray) else x for x in flatten(structure)
        ]
        key = tuple(_signature_of(x) for x in leaves)
        if key not in self._cache:
            self._cache[key] = self._trace(structure, leaves)
        return self._cache[key], leaves

    def _trace(self, structure: Any, leaves: list[Any]) -> ConcreteFunction:
        outer = ef.execution.current_context()
        graph = TraceGraph(outer if isinstance(outer, Graph) else None)
        with graph.as_default():
            inputs = [
                graph.input_like(x, f"arg{i}")
                for i, x in enumerate(leaves)
                if isinstance(x, Tensor)
            ]
            it = iter(inputs)
            traced = [next(it) if isinstance(x, Tensor) else x for x in leaves]
            args, kwargs = pack_sequence_as(structure, traced)
            result = self._function_to_trace()(*args, **kwargs)
            returned = [] if result is None else flatten(result)
            outputs = [graph._as_graph_tensor(ef.convert_to_tensor(r), OPS["Identity"])
                       for r in returned]  # fmt: skip
        if graph.created and self.trace_count:
            raise ValueError(
                f"{self.python_function.__name__} created variables on a retrace: a function "
                "may create variables only the first time it is traced"
            )
        self.trace_count += 1
        effects = add_automatic_control_dependencies(graph)
        return ConcreteFunction(graph, inputs, outputs, list(graph.variables), effects, result)

    def _function_to_trace(self) -> Callable[..., Any]:
        """The Python function, converted by AutoGraph unless ``autograph=False`` (one that
        cannot be converted is traced as written, with an ``AutoGraphWarning``)."""
        if self._traced_function is None:
            from eagerflow.graph.autograph import maybe_convert  # it imports this package

            function = self.python_function
            self._traced_function = maybe_convert(function) if self.autograph else function
        return self._traced_function

    def __repr__(self) -> str:
        name = self.python_function.__name__
        return f"<eagerflow.graph.function {name} ({self.trace_count} traces)>"


@overload
def function(python_function: Callable[..., Any], *, autograph: bool = True) -> Function: ...
@overload
def function(
    python_function: None = None, *, autograph: bool = True
) -> Callable[[Callable[..., Any]], Function]: ...
def function(
    python_function: Callable[..., Any] | None = None, *, autograph: bool = True
) -> Function | Callable[[Callable[..., Any]], Function]:
    """Decorator: trace ``python_function`` into a graph on the first call for each input
    signature, and run the cached graph afterwards. With ``autograph`` (the default), its
    Python control flow on tensors becomes graph control flow first (see ``autograph``).

    ``@function`` and ``@function(autograph=False)`` both work, as in TensorFlow."""
    if python_function is None:
        return lambda f: Function(f, autograph)
    return Function(python_function, autograph)


__all__ = ["ConcreteFunction", "Function", "function"]
