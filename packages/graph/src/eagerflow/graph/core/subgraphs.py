"""Graphs inside graphs: the ``FunctionGraph`` of a branch, loop body or traced function, and
the ``Subgraph`` that an ``If``, ``While`` or ``PartitionedCall`` node keeps to run it.

A ``Subgraph`` runs through the Session's own ``Plan`` (or, with ``jit_compile``, the plan
compiled by ``eagerflow.graph.compiler``, reached through ``seams.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from eagerflow.autodiff import Variable
from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor, get_default_graph
from eagerflow.graph.core.seams import SEAMS, registered
from eagerflow.graph.core.session import Plan
from eagerflow.tensor import Tensor
from eagerflow.tensor.registry import OPS, Attrs, OpDef


class FunctionGraph(Graph):
    """The graph of a branch or loop body: outer tensors it uses become its inputs.

    A variable it reads is read right here, when it runs (an ``assign`` before the read in
    the same branch must count), yet a gradient for the variable must reach the outer graph.
    So the op that runs this graph also gets a read of the variable from the outer graph as
    an input (``_capture_variables``), whose value nobody uses: inside, that input is the
    variable's *handle*, and ``gradients()`` takes d/d(handle) to mean d/d(variable), the sum
    over the variable's reads in here. Outside, its gradient flows to that outer read, so
    to the variable, like any other read's."""

    def __init__(self, outer: Graph) -> None:
        super().__init__()
        self.outer = outer
        self.captures: dict[SymbolicTensor, SymbolicTensor] = {}  # outer tensor -> input
        self.arguments: list[SymbolicTensor] = []  # the function's own inputs
        self.results: list[SymbolicTensor] = []  # what the function returned
        self.effects: list[Operation] = []  # the stateful ops that must run (not reads)
        self.variables: dict[Variable, None] = {}  # read inside, in order of first read
        self.handles: dict[SymbolicTensor, Variable] = {}  # input -> the variable it stands for

    def run_op(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, name: str | None
    ) -> tuple[SymbolicTensor, ...]:
        if op.reads_state:
            self.variables[attrs["variable"]] = None
        return super().run_op(op, inputs, attrs, name)

    def handle(self, variable: Variable) -> SymbolicTensor:
        """A new input of this graph standing for ``variable`` in gradients."""
        placeholder = self.input_like(variable, "handle")
        self.handles[placeholder] = variable
        return placeholder

    def _as_graph_tensor(self, t: Tensor, op: Any) -> SymbolicTensor:
        if isinstance(t, SymbolicTensor) and t.graph is not self:
            return self.capture(t)
        return super()._as_graph_tensor(t, op)

    def capture(self, t: SymbolicTensor) -> SymbolicTensor:
        """The input of this graph standing for ``t`` of an enclosing graph."""
        if t.graph is not self.outer:  # from further out: the outer graph captures it first
            if not isinstance(self.outer, FunctionGraph):
                raise ValueError(
                    f"tensor {t.name} belongs to a graph that does not enclose this one (as "
                    "TensorFlow's InaccessibleTensorError says). If it was made in a loop body "
                    "or a branch: a graph loop hands out its loop variables only, and a Python "
                    "list appended to in a loop on a tensor keeps the body's "
                    "tensors, so collect the values in a TensorArray instead"
                )
            t = self.outer.capture(t)
        if t not in self.captures:
            self.captures[t] = self.input_like(t, "captured")
        return self.captures[t]

    def input_like(self, t: Any, name: str) -> SymbolicTensor:
        """A new placeholder input of this graph with t's (static) shape and dtype."""
        shape = None if t.shape is None else tuple(t.shape)
        placeholder = OPS["Placeholder"]
        attrs = {"shape": shape, "dtype": t.dtype}
        return self.create_op(placeholder, (), attrs, [shape], [t.dtype], name).outputs[0]


class Subgraph:
    """A FunctionGraph to run: which of its tensors are fed (by position) and fetched, and
    which of its operations run for their effect alone (an ``assign`` nobody reads)."""

    def __init__(
        self,
        graph: FunctionGraph,
        inputs: Sequence[SymbolicTensor | None],
        outputs: Sequence[SymbolicTensor],
        side_effects: Sequence[Operation] = (),
    ) -> None:
        self.graph = graph
        self.inputs = list(inputs)  # None: this subgraph does not use that input
        self.outputs = list(outputs)
        self.side_effects = list(side_effects)
        self.jit_compile = False  # run compiled (see ``eagerflow.graph.compiler``)
        self._unused_inputs = any(t is None for t in self.inputs)
        self._plan: Any = None
        self._compiled: Any = None
        self._compiled_copy: Subgraph | None = None

    def plan(self) -> Any:
        """The Session ``Plan`` that runs this subgraph (made on first use)."""
        if self._plan is None:
            fed = [t for t in self.inputs if t is not None]
            self._plan = Plan([*self.outputs, *self.side_effects], fed)
        return self._plan

    def compiled_copy(self) -> Subgraph:
        """This subgraph, to run compiled: what a compiled program's ``If`` or ``While``
        runs (made once; this one is left to run as the interpreter runs it)."""
        if self._compiled_copy is None:
            copy = Subgraph(self.graph, self.inputs, self.outputs, self.side_effects)
            copy.jit_compile = True
            self._compiled_copy = copy
        return self._compiled_copy

    def compiled(self) -> Any:
        """The plan compiled (a ``compiler.CompiledPlan``), as ``jit_compile`` runs it."""
        if self._compiled is None:
            compile_plan = registered(SEAMS.compile_plan, "eagerflow.graph.compiler")
            self._compiled = compile_plan(self.plan())
        return self._compiled

    def call(self, arrays: Sequence[Any]) -> list[Any]:
        """Run the subgraph on input values (positions as in ``inputs``); its outputs."""
        if self.jit_compile:  # fed in the plan's order: the used inputs, in order
            if self._unused_inputs:
                arrays = [a for t, a in zip(self.inputs, arrays, strict=True) if t is not None]
            return self.compiled().run_arrays(arrays)[: len(self.outputs)]
        feeds = {t: a for t, a in zip(self.inputs, arrays, strict=True) if t is not None}
        return self.plan().run(feeds)[: len(self.outputs)]

    def __repr__(self) -> str:
        return f"<Subgraph with {len(self.graph.get_operations())} operations>"


class ScratchGraph(FunctionGraph):
    """A graph to trace code into and throw away. A tensor of any enclosing graph becomes a
    placeholder here, and the enclosing graphs never hear of it (a real branch graph would
    ask each one in between to capture it)."""

    def capture(self, t: SymbolicTensor) -> SymbolicTensor:
        if t not in self.captures:
            self.captures[t] = self.input_like(t, "outer")
        return self.captures[t]


@contextmanager
def scratch() -> Iterator[None]:
    """Build into a throwaway graph (see ``ScratchGraph``) inside this block."""
    with ScratchGraph(get_default_graph()).as_default():
        yield


__all__ = ["FunctionGraph", "ScratchGraph", "Subgraph", "scratch"]
