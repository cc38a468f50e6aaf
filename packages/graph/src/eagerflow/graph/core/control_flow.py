"""``cond`` and ``while_loop``: control flow as graph ops whose branches are subgraphs.

In eager mode they are plain Python ``if`` and ``while``, checked by the same rules as the
graph's ``If`` and ``While`` ops, so a mistake reads the same in both modes. In graph mode
each branch (or the loop's condition and body) is built once into a ``FunctionGraph`` of its
own: tensors it uses from an outer graph are *captured* as inputs, and the outer graph gets
one ``If`` (or ``While``) node. A Session runs that node's kernel, which runs only the
branch it needs.

The graphs of branches and bodies are ``subgraphs.py``'s; the gradients of ``If`` and
``While`` are in ``control_flow_grad.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.graph.core.auto_control_deps import add_automatic_control_dependencies
from eagerflow.graph.core.graph import Graph, SymbolicTensor, get_default_graph
from eagerflow.graph.core.subgraphs import FunctionGraph, Subgraph
from eagerflow.graph.core.tensor_array import LoopArrays, as_tensors, with_arrays
from eagerflow.tensor import Tensor
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import DTypeError, InvalidArgumentError, ShapeError, format_shape
from eagerflow.tensor.execution import execute, executing_eagerly
from eagerflow.tensor.nest import flatten
from eagerflow.tensor.registry import OPS, Attrs, Shape, op
from eagerflow.tensor.schema import Bool, Instance, Int, Maybe


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


def _capture_variables(*graphs: FunctionGraph) -> None:
    """Capture a read, in the current (outer) graph, of each variable the graphs read, as
    the graph's handle of it (see ``FunctionGraph``): call before ``_union_captures``."""
    for variable in dict.fromkeys(v for g in graphs for v in g.variables):
        read = variable.read_value()
        assert isinstance(read, SymbolicTensor)  # cond and while_loop build graphs only here
        for graph in graphs:
            if variable in graph.variables:
                graph.captures[read] = graph.handle(variable)


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
    # runs the branch `pred` chooses on `inputs` (what If does is said once, on `cond`)
    branch = then_branch if bool(pred) else else_branch
    return tuple(branch.call(inputs))


SUBGRAPH = Instance(Subgraph, "a Subgraph")
IF_ATTRS = {"then_branch": SUBGRAPH, "else_branch": SUBGRAPH}


@op("If", if_kernel, shape=_if_shape, dtype=_if_dtype, attrs=IF_ATTRS, multi_output=True,  # type: ignore[arg-type]  # unknown ranks
    stateful=True)  # fmt: skip
def cond(
    pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any], name: str | None = None
) -> Any:
    """``true_fn()`` if ``pred`` else ``false_fn()``. In a graph, both branches are built and
    the Session runs only the chosen one; they must return the same structure and dtypes."""
    if executing_eagerly():
        return true_fn() if _eager_predicate(pred) else false_fn()
    outer = get_default_graph()
    results: list[Any] = []  # each branch's result, as it returned it

    def branch(fn: Callable[[], Any]) -> Callable[[], Any]:
        def call() -> Any:  # a TensorArray leaves a branch as its one tensor
            results.append(fn())
            return as_tensors(results[-1])

        return call

    then_graph, _ = _build(branch(true_fn), [], outer)
    else_graph, _ = _build(branch(false_fn), [], outer)
    _capture_variables(then_graph, else_graph)
    captured = _union_captures(then_graph, else_graph)
    then_branch, else_branch = (
        Subgraph(g, [g.captures.get(t) for t in captured], g.results, g.effects)
        for g in (then_graph, else_graph)
    )
    pred = ef.convert_to_tensor(pred)
    attrs = {"then_branch": then_branch, "else_branch": else_branch}
    outputs = execute("If", (pred, *captured), attrs, name or "cond")
    return with_arrays(results[0], outputs)


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


def _while_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape | None]:
    if attrs["cond"] is not None:
        _check_scalar(attrs["cond"].outputs[0].shape, "the loop condition")
    carried, emitted = _split_outputs(attrs)
    stacked = [None if t.shape is None else (None, *t.shape) for t in emitted]
    return [*(t.shape for t in carried), *stacked]


def _while_dtype(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
    if attrs["cond"] is not None:
        _check_condition([t.dtype for t in attrs["cond"].outputs])
    elif not attrs["num_sequences"]:
        raise InvalidArgumentError("a While without a condition needs sequences to run over")
    starts = dts[: attrs["num_vars"]]
    carried, emitted = _split_outputs(attrs)
    _check_body(starts, [t.dtype for t in carried])
    return [*starts, *(t.dtype for t in emitted)]


def _split_outputs(attrs: Attrs) -> tuple[list[SymbolicTensor], list[SymbolicTensor]]:
    """The body's outputs: the loop variables' next values, then the emitted ones."""
    outputs = attrs["body"].outputs
    end = len(outputs) - attrs["num_emitted"]
    return outputs[:end], outputs[end:]


def while_kernel(
    *inputs: np.ndarray,
    cond: Subgraph | None,
    body: Subgraph,
    num_vars: int,
    num_sequences: int,
    num_emitted: int,
    reverse: bool,
) -> tuple[Any, ...]:
    # runs `body` while `cond` holds, from `inputs` (said once, on `while_loop`)
    # Runs `body` on the loop variables while `cond` is true; returns their final values.
    # The inputs are the loop variables, then `num_sequences` *sequences*, then the captured
    # tensors. The body reads one row of each sequence per iteration; a loop without a
    # `cond` runs once per row (the last row first if `reverse`). The body's outputs after
    # the loop variables are *emitted*: each is returned too, stacked over the iterations in
    # row order. `while_loop` uses neither; the While gradient uses both (see `_while_grad`).
    values = list(inputs[:num_vars])
    sequences = inputs[num_vars : num_vars + num_sequences]
    captured = list(inputs[num_vars + num_sequences :])
    emitted: list[list[Any]] = [[] for _ in range(num_emitted)]

    def run_body(rows: list[Any]) -> None:
        nonlocal values
        results = body.call([*values, *rows, *captured])
        values = results[:num_vars]
        for stack, result in zip(emitted, results[num_vars:], strict=True):
            stack.append(result)

    if cond is None:
        rows = _row_count(sequences)
        for k in reversed(range(rows)) if reverse else range(rows):
            run_body([s[k] for s in sequences])
        if reverse:  # row k's outputs go to row k
            for stack in emitted:
                stack.reverse()
    else:
        while bool(cond.call([*values, *captured])[0]):
            run_body([])
    like = body.outputs[num_vars:]
    return (*values, *(_stack(e, t) for e, t in zip(emitted, like, strict=True)))


def _row_count(sequences: Sequence[np.ndarray]) -> int:
    """How many iterations a loop over ``sequences`` runs: their common length."""
    counts = {len(s) for s in sequences}
    if len(counts) != 1:
        raise InvalidArgumentError(f"the sequences of a While must have one length, got {counts}")
    return counts.pop()


def _stack(values: list[Any], like: SymbolicTensor) -> np.ndarray:
    """One emitted output's values, stacked along a new axis 0 (``like``: its tensor).

    Values of different shapes (a loop variable that grows, under ``shape_invariants``)
    cannot be one array: they are kept as an object array of the iterations' arrays, which
    only the gradient's backward While reads, one row (one iteration's array) at a time."""
    if not values:  # no iteration: an empty stack (unknown dimensions taken as 0)
        shape = () if like.shape is None else tuple(d or 0 for d in like.shape)
        return np.zeros((0, *shape), like.dtype.np)
    if len({np.shape(v) for v in values}) > 1:  # a loop variable that grows: kept ragged
        ragged = np.empty(len(values), dtype=object)
        ragged[:] = [np.asarray(v) for v in values]
        return ragged
    return np.stack(values)


WHILE_ATTRS = {
    "cond": Maybe(SUBGRAPH),  # None: once per row of the sequences
    "body": SUBGRAPH,
    "num_vars": Int(min=0),
    "num_sequences": Int(min=0),
    "num_emitted": Int(min=0),
    "reverse": Bool(),
}


@op("While", while_kernel, shape=_while_shape, dtype=_while_dtype, attrs=WHILE_ATTRS,  # type: ignore[arg-type]  # unknown ranks
    multi_output=True, stateful=True)  # fmt: skip
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
    variable, keeping its dtype. A ``TensorArray`` may be a loop variable: in a graph the
    loop carries it as one tensor (see ``LoopArrays``), whose rows may grow if its size is
    dynamic."""
    if shape_invariants is not None and len(shape_invariants) != len(loop_vars):
        raise ShapeError(
            f"{len(shape_invariants)} shape_invariants for {len(loop_vars)} loop variables"
        ).at_op("While", loop_vars)
    if executing_eagerly():
        return _eager_while(cond, body, list(loop_vars))
    arrays = LoopArrays(loop_vars, body)
    cond, body = arrays.wrapped(cond), arrays.wrapped(body, results=True)
    outer = get_default_graph()
    start = arrays.start
    like: list[Any] = [  # tensors, or _Specs of the invariant shapes
        _Spec(arrays.invariant(i, shape_invariants), v.dtype) for i, v in enumerate(start)
    ]
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
    _capture_variables(cond_graph, body_graph)
    captured = _union_captures(cond_graph, body_graph)
    num_vars = len(start)

    def subgraph(graph: FunctionGraph) -> Subgraph:
        inputs = [*graph.arguments, *(graph.captures.get(t) for t in captured)]
        return Subgraph(graph, inputs, graph.results, graph.effects)

    attrs = loop_attrs(subgraph(cond_graph), subgraph(body_graph), num_vars)
    return arrays.unwrap(execute("While", (*start, *captured), attrs, name or "while"))


def loop_attrs(
    cond: Subgraph | None,
    body: Subgraph,
    num_vars: int,
    num_sequences: int = 0,
    num_emitted: int = 0,
    reverse: bool = False,
) -> Attrs:
    """The attributes of a While op (see ``while_kernel``)."""
    return {
        "cond": cond, "body": body, "num_vars": num_vars, "num_sequences": num_sequences,
        "num_emitted": num_emitted, "reverse": reverse,
    }  # fmt: skip


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


__all__ = ["cond", "loop_attrs", "while_loop"]
