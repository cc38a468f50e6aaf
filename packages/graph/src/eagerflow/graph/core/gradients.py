"""``gradients()``: symbolic differentiation, by the very rules the eager tape uses.

Each operation of the graph becomes an entry like a tape's (its inputs, attributes and
outputs are symbolic tensors), and the autodiff package's ``backward`` walks them backwards.
The rules it calls are written with public ops, and the graph is the current context, so
every gradient computation becomes new nodes of the graph: there is no second set of rules.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.autodiff.tape import backward, check_unconnected_gradients, pack
from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor
from eagerflow.graph.core.subgraphs import FunctionGraph
from eagerflow.tensor import Tensor
from eagerflow.tensor.nest import flatten


def gradients(
    ys: Any,
    xs: Any,
    grad_ys: Any = None,
    stop_gradients: Any = None,
    unconnected_gradients: str = "none",
    name: str = "gradients",
) -> list[SymbolicTensor | None]:
    """Symbolic d(sum of ys)/d(x) for each x in ``xs`` (tensors or variables of one graph).

    Returns a list as long as ``xs``: None for an x the ys do not depend on (zeros with
    ``unconnected_gradients="zero"``). ``grad_ys`` seeds the vector-Jacobian product. The
    tensors in ``stop_gradients`` count as constants: no gradient flows back through the
    operations that made them, as if each were wrapped in ``stop_gradient``. The
    new nodes go in the name scope ``name`` (``gradients/``, then ``gradients_1/``, ...),
    as in TensorFlow, so a picture of the graph shows them apart.
    """
    check_unconnected_gradients(unconnected_gradients)  # before the graph gets any node
    targets = flatten(ys)
    sources = flatten(xs)
    graph = _graph_of([*targets, *sources])
    with graph.as_default(), graph.name_scope(name):
        targets = [ef.convert_to_tensor(y) for y in targets]
        keys = [_keys(graph, x) for x in sources]
        # a stopped tensor's operation is left out: its gradient reaches it and goes no further
        stops = [] if stop_gradients is None else flatten(stop_gradients)
        stopped = {t.op for s in stops for t in _keys(graph, s, "stop_gradients")}
        kept = [o for o in graph.get_operations() if o not in stopped]
        entries = [pack(o.op_def, o.inputs, o.attrs, o.outputs) for o in kept]
        placed: AbstractContextManager[Any] = nullcontext()
        if any(o.device for o in kept):
            entries = Colocated(graph, kept, entries)
            # the seeds (ones like the ys) go with the first y, as its gradient rule will
            placed = graph.device(targets[0].op.device or None) if targets else placed
        with placed:  # made in this graph's block, the gradients are SymbolicTensors
            return backward(  # type: ignore[return-value]
                entries,
                targets,
                sources,
                keys,
                grad_ys,
                unconnected_gradients,
                seeds_name="grad_ys",
            )


class Colocated(list[Any]):
    """The entries of a placed graph, which place each gradient node with its forward op
    (TensorFlow's ``colocate_gradients_with_ops``), so the backward pass is cut across tasks
    where the forward pass is.

    ``backprop`` walks the entries with ``reversed()``, calling each op's gradient rule (and
    adding up its inputs' gradients) before it takes the next: while an entry is taken, the
    graph places new nodes on the device of that entry's operation."""

    def __init__(self, graph: Graph, operations: list[Operation], entries: list[Any]) -> None:
        super().__init__(entries)
        self.graph = graph
        self.operations = operations

    def __reversed__(self) -> Iterator[Any]:
        for operation, entry in zip(reversed(self.operations), super().__reversed__(), strict=True):
            with self.graph.device(None), self.graph.device(operation.device or None):
                yield entry


def _graph_of(tensors: Sequence[Any]) -> Graph:
    for t in tensors:
        if isinstance(t, SymbolicTensor):
            return t.graph
    raise ValueError("gradients() needs tensors of a graph (build them inside graph.as_default())")


def _keys(graph: Graph, x: Any, what: str = "xs") -> list[SymbolicTensor]:
    """The tensors whose gradients make up x's gradient (``what`` names the argument)."""
    if isinstance(graph, FunctionGraph) and isinstance(x, SymbolicTensor) and x in graph.handles:
        x = graph.handles[x]  # a variable's handle (see FunctionGraph): the variable
    if isinstance(x, Variable):  # every read of the variable in this graph
        return [
            o.outputs[0]
            for o in graph.get_operations()
            if o.op_def.reads_state and o.attrs["variable"] is x
        ]
    if isinstance(x, SymbolicTensor):
        if x.graph is not graph:
            raise ValueError(f"{x.name} belongs to another graph than the ys")
        return [x] if x.dtype.is_floating else []
    if isinstance(x, Tensor):
        raise ValueError("gradients() takes graph tensors; for eager tensors use a GradientTape")
    raise TypeError(f"{what} must be tensors or variables, got {type(x).__name__}")


__all__ = ["gradients"]
