"""``@function``: trace eager Python code into a graph once, then run the graph.

The first call with a new *signature* (each tensor argument's dtype and shape, each other
argument's value) runs the Python function with placeholders in a fresh graph: every op it
calls adds a node, Python side effects such as ``print`` happen now and only now. The graph
is cached as a ``ConcreteFunction``; later calls with the same signature run the graph.

A call is one op on the seam (``PartitionedCall``), so in eager mode it returns eager
tensors and a GradientTape records it as one op, whose gradient is another traced function
built by ``gradients()`` from the same graph. Variables read inside are captured: they become
inputs of the graph, read at each call (so tapes see them); assignments inside always run.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import OpRecord, Variable, register_gradient
from eagerflow.autodiff.tape import flatten, pack_like
from eagerflow.graph.control_flow import FunctionGraph, Subgraph
from eagerflow.graph.graph import Graph, Operation, SymbolicTensor
from eagerflow.tensor import Tensor
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.execution import execute
from eagerflow.tensor.registry import OPS, Attrs, OpDef, Shape, op

SIDE_EFFECTS = ("AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
                "ApplyGradientDescent")  # fmt: skip


class TraceGraph(FunctionGraph):
    """The graph a function is traced into: variables it reads become inputs, variables it
    creates become eager variables (they must outlive the trace)."""

    creates_eager_variables = True

    def __init__(self, outer: Graph | None) -> None:
        super().__init__(outer or Graph())
        self.variables: dict[Variable, SymbolicTensor] = {}  # captured variable -> input
        self.created: list[Variable] = []

    def variable_created(self, variable: Variable) -> None:
        self.created.append(variable)

    def run_op(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, name: str | None
    ) -> tuple[SymbolicTensor, ...]:
        variable = attrs.get("variable") if op.name == "ReadVariableOp" else None
        if isinstance(variable, Variable) and variable._array is not None:
            # An eager variable read inside the function: an input, read at each call.
            if variable not in self.variables:
                self.variables[variable] = self.input_like(variable, variable.name.split(":")[0])
            return (self.variables[variable],)
        return super().run_op(op, inputs, attrs, name)


class ConcreteFunction(Subgraph):
    """One traced graph of a function: inputs (arguments, then captured variables),
    outputs, and the side effects that run with it."""

    def __init__(
        self,
        graph: FunctionGraph,
        inputs: Sequence[SymbolicTensor],
        outputs: Sequence[SymbolicTensor],
        variables: Sequence[Variable] = (),
        side_effects: Sequence[Operation] = (),
        structure: Any = None,
    ) -> None:
        super().__init__(graph, inputs, outputs)
        self.variables = list(variables)
        self.side_effects = list(side_effects)
        self.structure = structure
        self._gradient: ConcreteFunction | None = None

    def call(self, arrays: Sequence[Any]) -> list[Any]:
        from eagerflow.graph.session import Plan

        feeds = dict(zip(self.inputs, arrays, strict=True))
        if self._plan is None:
            self._plan = Plan([*self.outputs, *self.side_effects], list(feeds))  # type: ignore[arg-type]
        return self._plan.run(feeds)[: len(self.outputs)]

    def __call__(self, *tensors: Any) -> Any:
        variable_values = [v.read_value() for v in self.variables]
        inputs = (*[ef.convert_to_tensor(t) for t in tensors], *variable_values)
        outputs = execute("PartitionedCall", inputs, {"function": self})
        return None if self.structure is None else pack_like(self.structure, outputs)

    def gradient_function(self) -> ConcreteFunction:
        """d(outputs)/d(inputs) seeded by new inputs: traced once, from this graph."""
        if self._gradient is None:
            from eagerflow.graph.gradients import gradients

            with self.graph.as_default():
                seeds = [self.graph.input_like(t, "grad") for t in self.outputs]
                grads = gradients(
                    self.outputs, self.inputs, grad_ys=seeds, unconnected_gradients="zero"
                )
            self._gradient = ConcreteFunction(self.graph, [*self.inputs, *seeds], grads)  # type: ignore[list-item, arg-type]
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
    gradient = op.attrs["function"].gradient_function()
    return execute("PartitionedCall", (*op.inputs, *grads), {"function": gradient})


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
    """A Python function traced into a graph per input signature (see the module docs)."""

    def __init__(self, python_function: Callable[..., Any]) -> None:
        self.python_function = python_function
        self._cache: dict[Any, ConcreteFunction] = {}
        self.trace_count = 0
        functools.update_wrapper(self, python_function)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        concrete, leaves = self._concrete(args, kwargs)
        return concrete(*[x for x in leaves if isinstance(x, Tensor)])

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The traced graph for these arguments (tracing it now if needed)."""
        return self._concrete(args, kwargs)[0]

    def _concrete(self, args: Any, kwargs: Any) -> tuple[ConcreteFunction, list[Any]]:
        """The cached trace for the arguments' signature (traced now if new), and the
        flattened arguments (NumPy arrays become tensors)."""
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
            args, kwargs = pack_like(structure, traced)
            result = self.python_function(*args, **kwargs)
            returned = [] if result is None else flatten(result)
            outputs = [graph._as_graph_tensor(ef.convert_to_tensor(r), OPS["Identity"])
                       for r in returned]  # fmt: skip
        if graph.created and self.trace_count:
            raise ValueError(
                f"{self.python_function.__name__} created variables on a retrace: a function "
                "may create variables only the first time it is traced"
            )
        self.trace_count += 1
        side_effects = [o for o in graph.get_operations() if o.type in SIDE_EFFECTS]
        variables = list(graph.variables)
        return ConcreteFunction(
            graph, [*inputs, *graph.variables.values()], outputs, variables, side_effects, result
        )

    def __repr__(self) -> str:
        name = self.python_function.__name__
        return f"<eagerflow.graph.function {name} ({self.trace_count} traces)>"


def function(python_function: Callable[..., Any]) -> Function:
    """Decorator: trace ``python_function`` into a graph on the first call for each input
    signature, and run the cached graph afterwards."""
    return Function(python_function)


__all__ = ["ConcreteFunction", "Function", "function"]
