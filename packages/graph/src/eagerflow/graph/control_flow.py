"""``cond`` and ``while_loop``: control flow as graph ops whose branches are subgraphs.

In eager mode they are plain Python ``if`` and ``while``, checked by the same rules as the
graph's ``If`` and ``While`` ops, so a mistake reads the same in both modes. In graph mode
each branch (or the loop's condition and body) is built once into a ``FunctionGraph`` of its
own: tensors it uses from an outer graph are *captured* as inputs, and the outer graph gets
one ``If`` (or ``While``) node. A Session runs that node's kernel, which runs only the
branch it needs.

The gradient of ``If`` is another ``If``: each branch's gradient is built inside that branch's
graph, by the same ``gradients()``. Gradients through ``While`` are not supported (the
rule raises an error naming the op).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import OpRecord, register_gradient
from eagerflow.graph.auto_control_deps import add_automatic_control_dependencies
from eagerflow.graph.graph import Graph, Operation, SymbolicTensor, get_default_graph
from eagerflow.tensor import Tensor
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import DTypeError, ShapeError, format_shape
from eagerflow.tensor.execution import execute, executing_eagerly
from eagerflow.tensor.nest import flatten, pack_sequence_as
from eagerflow.tensor.registry import OPS, Attrs, Shape, op


class FunctionGraph(Graph):
    """The graph of a branch or loop body: outer tensors it uses become its inputs."""

    def __init__(self, outer: Graph) -> None:
        super().__init__()
        self.outer = outer
        self.captures: dict[SymbolicTensor, SymbolicTensor] = {}  # outer tensor -> input
        self.arguments: list[SymbolicTensor] = []  # the function's own inputs
        self.results: list[SymbolicTensor] = []  # what the function returned
        self.effects: list[Operation] = []  # the stateful ops that must run (not reads)

    def _as_graph_tensor(self, t: Tensor, op: Any) -> SymbolicTensor:
        if isinstance(t, SymbolicTensor) and t.graph is not self:
            return self.capture(t)
        return super()._as_graph_tensor(t, op)

    def capture(self, t: SymbolicTensor) -> SymbolicTensor:
        """The input of this graph standing for ``t`` of an enclosing graph."""
        if t.graph is not self.outer:  # from further out: the outer graph captures it first
            if not isinstance(self.outer, FunctionGraph):
                raise ValueError(
                    f"tensor {t.name} belongs to a graph that does not enclose this one"
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
        self._plan: Any = None

    def plan(self) -> Any:
        """The Session ``Plan`` that runs this subgraph (compiled on first use)."""
        from eagerflow.graph.session import Plan  # the Session's executor, reused

        if self._plan is None:
            fed = [t for t in self.inputs if t is not None]
            self._plan = Plan([*self.outputs, *self.side_effects], fed)
        return self._plan

    def call(self, arrays: Sequence[Any]) -> list[Any]:
        """Run the subgraph on input values (positions as in ``inputs``); its outputs."""
        feeds = {t: a for t, a in zip(self.inputs, arrays, strict=True) if t is not None}
        return self.plan().run(feeds)[: len(self.outputs)]

    def __repr__(self) -> str:
        return f"<Subgraph with {len(self.graph.get_operations())} operations>"


def _build(fn: Callable[..., Any], args: Sequence[Any], outer: Graph) -> tuple[FunctionGraph, Any]:
    """Call ``fn`` with graph inputs like ``args`` inside a new FunctionGraph of ``outer``;
    its stateful ops keep their program order (see ``auto_control_deps``)."""
    graph = FunctionGraph(outer)
    with graph.as_default():
        inputs = [graph.input_like(a, f"arg{i}") for i, a in enumerate(args)]
        result = fn(*inputs)
        # results may be Python values, or tensors of an outer graph: make them this graph's
        outputs = [graph._as_graph_tensor(ef.convert_to_tensor(r), OPS["Identity"])
                   for r in flatten(result)]  # fmt: skip
    graph.arguments, graph.results = inputs, outputs
    graph.effects = add_automatic_control_dependencies(graph)
    return graph, result


def _merge(a: Shape | None, b: Shape | None) -> Shape | None:
    """The most specific shape compatible with both (dimensions that differ become None)."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b, strict=True))


def _union_captures(*graphs: FunctionGraph) -> list[SymbolicTensor]:
    return list(dict.fromkeys(t for g in graphs for t in g.captures))


def _check_scalar(shape: Shape | None, what: str) -> None:
    """Python's ``if`` and ``while`` need one truth value: a shape of () (or not yet known)."""
    if shape is not None and shape != ():
        raise ShapeError(f"{what} must be a scalar, got shape {format_shape(shape)}")


# --- cond ------------------------------------------------------------------------------------
def _if_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape | None]:
    _check_scalar(shapes[0], "cond's predicate")
    then, other = attrs["then_branch"].outputs, attrs["else_branch"].outputs
    return [_merge(a.shape, b.shape) for a, b in zip(then, other, strict=True)]


def _check_predicate(dtype: DType) -> None:
    if dtype is not ef.bool_:
        raise DTypeError(f"cond needs a bool predicate, got {dtype}")


def _if_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    _check_predicate(dts[0])
    then, other = attrs["then_branch"].outputs, attrs["else_branch"].outputs
    if len(then) != len(other):
        raise ShapeError(f"the branches return {len(then)} and {len(other)} tensors")
    for a, b in zip(then, other, strict=True):
        if a.dtype is not b.dtype:
            raise DTypeError(f"the branches return different dtypes: {a.dtype} and {b.dtype}")
    return [t.dtype for t in then]


def _eager_predicate(pred: Any) -> bool:
    """``bool(pred)``, once it passes the If rules (a Python value passes as it is)."""
    if isinstance(pred, Tensor):
        try:
            _check_predicate(pred.dtype)
            _check_scalar(pred.shape, "cond's predicate")
        except (ShapeError, DTypeError) as e:
            raise e.at_op("If", [pred]) from None
    return bool(pred)


def if_kernel(
    pred: np.ndarray, *inputs: np.ndarray, then_branch: Subgraph, else_branch: Subgraph
) -> tuple[Any, ...]:
    branch = then_branch if bool(pred) else else_branch
    return tuple(branch.call(inputs))


@op("If", if_kernel, shape=_if_shape, dtype=_if_dtype, multi_output=True, stateful=True)  # type: ignore[arg-type]  # unknown ranks
def cond(
    pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any], name: str | None = None
) -> Any:
    """``true_fn()`` if ``pred`` else ``false_fn()``. In a graph, both branches are built and
    the Session runs only the chosen one; they must return the same structure and dtypes."""
    if executing_eagerly():
        return true_fn() if _eager_predicate(pred) else false_fn()
    outer = get_default_graph()
    then_graph, then_result = _build(true_fn, [], outer)
    else_graph, _ = _build(false_fn, [], outer)
    captured = _union_captures(then_graph, else_graph)
    then_branch, else_branch = (
        Subgraph(g, [g.captures.get(t) for t in captured], g.results, g.effects)
        for g in (then_graph, else_graph)
    )
    pred = ef.convert_to_tensor(pred)
    attrs = {"then_branch": then_branch, "else_branch": else_branch}
    outputs = execute("If", (pred, *captured), attrs, name or "cond")
    return pack_sequence_as(then_result, outputs)


@register_gradient("If")
def _if_grad(op: OpRecord, *grads: Tensor) -> tuple[Tensor | None, ...]:
    # d cond(p, f, g) = cond(p, df, dg): each branch's gradient is built in its own graph
    pred, *captured = op.inputs
    then_grad, else_grad = (
        _gradient_branch(op.attrs[key], captured, grads) for key in ("then_branch", "else_branch")
    )
    attrs = {"then_branch": then_grad, "else_branch": else_grad}
    return (None, *execute("If", (pred, *captured, *grads), attrs, "cond_grad"))


def _gradient_branch(
    branch: Subgraph, captured: Sequence[Tensor], grads: Sequence[Tensor]
) -> Subgraph:
    """A subgraph of the branch's own graph computing d(outputs)/d(inputs), seeded by new
    inputs; an input this branch never used gets a zero gradient (the other branch may)."""
    from eagerflow.graph.gradients import gradients

    graph = branch.graph
    with graph.as_default():
        seeds = [graph.input_like(g, "grad") for g in grads]
        inputs = [
            t if t is not None else graph.input_like(outer, "unused")
            for t, outer in zip(branch.inputs, captured, strict=True)
        ]
        d_inputs = gradients(branch.outputs, inputs, grad_ys=seeds, unconnected_gradients="zero")
    return Subgraph(graph, [*inputs, *seeds], d_inputs)  # type: ignore[arg-type]


@register_gradient("While")
def _while_grad(op: OpRecord, *grads: Tensor) -> tuple[Tensor | None, ...]:
    raise LookupError(
        "gradients through while_loop (op 'While') are not supported in eagerflow: "
        "differentiate the loop eagerly with a GradientTape, or unroll it"
    )


# --- while_loop ------------------------------------------------------------------------------
def _check_condition(dtypes: Sequence[DType | None]) -> None:
    """The loop condition returns one bool (None: a Python value, as eager mode allows)."""
    if len(dtypes) != 1 or dtypes[0] not in (ef.bool_, None):
        got = ", ".join(str(d) for d in dtypes) or "nothing"
        raise DTypeError(f"the loop condition must return one bool, got {got}")


def _refusing_none(cond: Callable[..., Any]) -> Callable[..., Any]:
    """``cond``, made to raise if it returns None (its ``return`` forgotten): eagerly, Python
    would take that None as False and end the loop silently."""

    def checked(*args: Any) -> Any:
        result = cond(*args)
        if result is None:
            raise DTypeError("the loop condition returned None: is its return missing?")
        return result

    return checked


def _check_body(starts: Sequence[DType | None], ends: Sequence[DType | None]) -> None:
    """The body returns one value per loop variable, each keeping its dtype."""
    if len(ends) != len(starts):
        raise ShapeError(f"the body returns {len(ends)} values for {len(starts)} loop variables")
    for i, (start, end) in enumerate(zip(starts, ends, strict=True)):
        if None not in (start, end) and start is not end:
            raise DTypeError(f"loop variable {i} starts as {start} but the body returns {end}")


def _while_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    _check_scalar(attrs["cond"].outputs[0].shape, "the loop condition")
    return [t.shape for t in attrs["body"].outputs]


def _while_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    _check_condition([t.dtype for t in attrs["cond"].outputs])
    starts = dts[: attrs["num_vars"]]
    _check_body(starts, [t.dtype for t in attrs["body"].outputs])
    return list(starts)


def while_kernel(
    *inputs: np.ndarray, cond: Subgraph, body: Subgraph, num_vars: int
) -> tuple[Any, ...]:
    values, captured = list(inputs[:num_vars]), list(inputs[num_vars:])
    while bool(cond.call([*values, *captured])[0]):
        values = body.call([*values, *captured])
    return tuple(values)


@op("While", while_kernel, shape=_while_shape, dtype=_while_dtype, multi_output=True,
    stateful=True)  # fmt: skip
def while_loop(
    cond: Callable[..., Any],
    body: Callable[..., Any],
    loop_vars: Sequence[Any],
    shape_invariants: Sequence[Any] | None = None,
    name: str | None = None,
) -> Any:
    """Repeat ``loop_vars = body(*loop_vars)`` while ``cond(*loop_vars)``; returns the final
    loop variables (a list, as given). ``shape_invariants`` allows a variable's shape to
    change between iterations (e.g. ``(None,)`` for a growing vector).

    In both modes ``cond`` must return one scalar bool, and ``body`` one value per loop
    variable, keeping its dtype."""
    if shape_invariants is not None and len(shape_invariants) != len(loop_vars):
        raise ShapeError(
            f"{len(shape_invariants)} shape_invariants for {len(loop_vars)} loop variables"
        ).at_op("While", loop_vars)
    if executing_eagerly():
        return _eager_while(cond, body, list(loop_vars))
    outer = get_default_graph()
    start = [ef.convert_to_tensor(v) for v in loop_vars]
    like: list[Any] = start  # tensors, or _Specs of the invariant shapes
    if shape_invariants:
        like = [_Spec(None if s is None else tuple(s), v.dtype)
                for v, s in zip(start, shape_invariants, strict=True)]  # fmt: skip
    try:
        cond_graph, _ = _build(_refusing_none(cond), like, outer)
    except DTypeError as e:
        raise e.at_op("While", start) from None
    body_graph, _ = _build(body, like, outer)
    # a body returning too few or too many values is the While rule's to report
    for i, (spec, out) in enumerate(zip(like, body_graph.results, strict=False)):
        if _merge(spec.shape, out.shape) != spec.shape:
            raise ShapeError(
                f"loop variable {i} has shape {format_shape(spec.shape)} but the body returns "
                f"{format_shape(out.shape)}; "
                "pass shape_invariants (None for dimensions that change)"
            ).at_op("While", start)
    captured = _union_captures(cond_graph, body_graph)
    num_vars = len(start)

    def subgraph(graph: FunctionGraph) -> Subgraph:
        inputs = [*graph.arguments, *(graph.captures.get(t) for t in captured)]
        return Subgraph(graph, inputs, graph.results, graph.effects)

    attrs = {"cond": subgraph(cond_graph), "body": subgraph(body_graph), "num_vars": num_vars}
    return list(execute("While", (*start, *captured), attrs, name or "while"))


def _eager_while(
    cond: Callable[..., Any], body: Callable[..., Any], values: list[Any]
) -> list[Any]:
    """Python's own ``while``, checked by the same rules as the While op."""

    def dtypes(results: Sequence[Any]) -> list[DType | None]:
        return [r.dtype if isinstance(r, Tensor) else None for r in results]

    cond = _refusing_none(cond)
    try:
        while True:
            decision = flatten(cond(*values))
            _check_condition(dtypes(decision))
            _check_scalar(getattr(decision[0], "shape", ()), "the loop condition")
            if not decision[0]:
                return values
            results = flatten(body(*values))
            _check_body(dtypes(values), dtypes(results))
            values = results
    except (ShapeError, DTypeError) as e:
        raise e.at_op("While", values) from None


class _Spec:
    """A shape and dtype, for building a loop body against a shape invariant."""

    def __init__(self, shape: Shape | None, dtype: DType) -> None:
        self.shape = shape
        self.dtype = dtype


__all__ = ["FunctionGraph", "Subgraph", "cond", "if_kernel", "while_kernel", "while_loop"]
