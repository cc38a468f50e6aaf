"""``cond`` and ``while_loop``: control flow as graph ops whose branches are subgraphs.

In eager mode they are plain Python ``if`` and ``while``, checked by the same rules as the
graph's ``If`` and ``While`` ops, so a mistake reads the same in both modes. In graph mode
each branch (or the loop's condition and body) is built once into a ``FunctionGraph`` of its
own: tensors it uses from an outer graph are *captured* as inputs, and the outer graph gets
one ``If`` (or ``While``) node. A Session runs that node's kernel, which runs only the
branch it needs.

The gradient of ``If`` is another ``If``: each branch's gradient is built inside that branch's
graph, by the same ``gradients()``. The gradient of ``While`` is two more ``While`` ops: the
loop run again, keeping each iteration's loop variables on stacks, then a loop over the
iterations backwards, applying the body's gradient (built inside the body's graph, by the
same ``gradients()``) to one row of the stacks at a time. ``_while_grad`` says why stacks
rather than recomputing. Both being While ops, gradients of gradients need nothing more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import OpRecord, Variable, register_gradient
from eagerflow.graph.core.auto_control_deps import READS, add_automatic_control_dependencies
from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor, get_default_graph
from eagerflow.tensor import Tensor
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import DTypeError, InvalidArgumentError, ShapeError, format_shape
from eagerflow.tensor.execution import execute, executing_eagerly
from eagerflow.tensor.nest import flatten, pack_sequence_as
from eagerflow.tensor.registry import OPS, Attrs, OpDef, Shape, op


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
        if op.name == "ReadVariableOp":
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
        self.jit_compile = False  # run compiled (see ``eagerflow.graph.compiler``)
        self._unused_inputs = any(t is None for t in self.inputs)
        self._plan: Any = None
        self._compiled: Any = None
        self._compiled_copy: Subgraph | None = None

    def plan(self) -> Any:
        """The Session ``Plan`` that runs this subgraph (compiled on first use)."""
        from eagerflow.graph.core.session import Plan  # the Session's executor, reused

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
            from eagerflow.graph.compiler import compile_plan

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
    _capture_variables(then_graph, else_graph)
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
    from eagerflow.graph.core.gradients import gradients

    graph = branch.graph
    with graph.as_default():
        seeds = [graph.input_like(g, "grad") for g in grads]
        inputs = [
            t if t is not None else graph.input_like(outer, "unused")
            for t, outer in zip(branch.inputs, captured, strict=True)
        ]
        d_inputs = gradients(branch.outputs, inputs, grad_ys=seeds, unconnected_gradients="zero")
    return Subgraph(graph, [*inputs, *seeds], d_inputs)  # type: ignore[arg-type]


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
    """One emitted output's values, stacked along a new axis 0 (``like``: its tensor)."""
    if not values:  # no iteration: an empty stack (unknown dimensions taken as 0)
        shape = () if like.shape is None else tuple(d or 0 for d in like.shape)
        return np.zeros((0, *shape), like.dtype.np)
    shapes = {np.shape(v) for v in values}
    if len(shapes) > 1:
        raise ShapeError(
            f"a While emitted values of different shapes {sorted(shapes)}: the gradient of a "
            "loop keeps each iteration's loop variables stacked, so they must keep one shape"
        )
    return np.stack(values)


@op("While", while_kernel, shape=_while_shape, dtype=_while_dtype, multi_output=True,  # type: ignore[arg-type]  # unknown ranks
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
    _capture_variables(cond_graph, body_graph)
    captured = _union_captures(cond_graph, body_graph)
    num_vars = len(start)

    def subgraph(graph: FunctionGraph) -> Subgraph:
        inputs = [*graph.arguments, *(graph.captures.get(t) for t in captured)]
        return Subgraph(graph, inputs, graph.results, graph.effects)

    attrs = _loop_attrs(subgraph(cond_graph), subgraph(body_graph), num_vars)
    return list(execute("While", (*start, *captured), attrs, name or "while"))


def _loop_attrs(
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


# --- the While gradient ----------------------------------------------------------------------
@register_gradient("While", accepts_none=True)
def _while_grad(op: OpRecord, *grads: Tensor | None) -> tuple[Tensor | None, ...]:
    """Reverse mode through a loop: run the loop again, keeping each iteration's loop
    variables on stacks; then run a second loop over the iterations backwards, applying the
    body's vector-Jacobian product to one row of the stacks at a time.

    For ``v = body(v, c)`` repeated n times from ``v₀``, with the gradient ``ḡ`` of the final
    ``v``: start from ``a = ḡ``; for k = n-1 down to 0, ``(a, dc) = vjp(body at vₖ, c)(a)``,
    adding up the ``dc``. Then ``a`` is the gradient of ``v₀``, the sum that of ``c``.

    Both loops are While ops: the first *emits* its loop variables, the second reads them as
    *sequences* (see ``while_kernel``). The vector-Jacobian product is built by the same
    ``gradients()``, inside the body's own graph, as ``_if_grad`` does for branches. So the
    gradient of this gradient is this same rule, applied to those two loops.

    Why stacks: the way without them recomputes each vₖ from v₀ during the backward loop,
    n²/2 body runs instead of n. For a 1000-step loop of ``tanh(y) + x`` the forward loop
    takes about 0.01 s, its gradient 0.04 s and the second order 0.08 s; the recomputing
    alone would take 5 s. Stacks cost memory instead: n copies of each loop variable the
    backward loop reads (only those: ``_BackwardBody.recorded``).

    Why run the loop again: TensorFlow 2 makes the forward While itself keep the stacks,
    once a gradient asks for them; here the forward op stays as it was built (under a tape it
    has even run already), and the gradient runs its loop a second time. That is also why a
    loop with effects (``assign``, random numbers) is refused: they would happen twice.
    """
    num_vars, num_sequences = op.attrs["num_vars"], op.attrs["num_sequences"]
    _check_rerunnable(op.attrs["cond"], op.attrs["body"])
    backward = _BackwardBody(op, grads)
    if backward.subgraph is None:
        return (None,) * len(op.inputs)  # nothing differentiable flows through this loop
    sequences = op.inputs[num_vars : num_vars + num_sequences]
    captured = op.inputs[num_vars + num_sequences :]
    inputs = (
        # carried: the loop variables' gradients, the sums of the captured tensors' gradients
        *(_or_zeros(grads[i], op.outputs[i]) for i in backward.vars),
        *(ef.zeros_like(captured[i]) for i in backward.captured),
        # one row per iteration: a tick, the recorded loop variables, the loop's own rows,
        # the gradients of what it emitted
        *_history(op, backward.recorded),
        *sequences,
        *(grads[num_vars + i] for i in backward.emitted),
        # the same at every iteration
        *(captured[i] for i in backward.reads),
    )
    attrs = _loop_attrs(
        cond=None,
        body=backward.subgraph,
        num_vars=len(backward.vars) + len(backward.captured),
        num_sequences=1 + len(backward.recorded) + num_sequences + len(backward.emitted),
        num_emitted=len(backward.rows),
        reverse=not op.attrs["reverse"],
    )
    outputs = execute("While", inputs, attrs, "while_grad")
    # each output back to the position of its input in the op
    result: list[Tensor | None] = [None] * len(op.inputs)
    positions = [
        *backward.vars,
        *(num_vars + num_sequences + i for i in backward.captured),
        *(num_vars + i for i in backward.rows),
    ]
    for position, gradient in zip(positions, outputs, strict=True):
        result[position] = gradient
    return tuple(result)


def _or_zeros(grad: Tensor | None, like: Tensor) -> Tensor:
    return ef.zeros_like(like) if grad is None else grad


def _history(op: OpRecord, recorded: Sequence[int]) -> list[Tensor]:
    """The op's loop run again, emitting at each iteration a tick (so the backward loop has
    one row per iteration, even if nothing else is recorded) and the loop variables at the
    positions ``recorded``, as the iteration starts. Returns the stacks, ticks first."""
    body: Subgraph = op.attrs["body"]
    with body.graph.as_default():
        tick = ef.constant(False, name="tick")
    # (the recorded loop variables are the body's input placeholders: fetched as fed)
    emitted: list[Any] = [tick, *(body.inputs[i] for i in recorded)]
    recording = Subgraph(body.graph, body.inputs, [*body.outputs, *emitted], body.side_effects)
    attrs = {**op.attrs, "body": recording, "num_emitted": op.attrs["num_emitted"] + len(emitted)}
    return list(execute("While", op.inputs, attrs, "while_history")[-len(emitted) :])


class _BackwardBody:
    """One iteration of the backward loop, built in the forward body's graph.

    What takes part, by position among the body's inputs and outputs:

    - ``vars``: the loop variables that need a gradient: the floating ones whose final value
      has a gradient, and those the body computes them from (again and again, until no new
      one turns up);
    - ``emitted``: the emitted outputs whose stacks have a gradient;
    - ``rows`` and ``captured``: the floating sequences and captured tensors that the op's
      caller wants gradients for;
    - ``recorded`` and ``reads``: the loop variables and captured tensors that the
      vector-Jacobian product reads (only those are stacked, or fed).

    The backward body's inputs are, as a While feeds them: carried, the gradients ``a`` of the
    ``vars`` and the sums so far of the ``captured`` ones' gradients; one row of each
    sequence: a tick (unused), the ``recorded`` loop variables, the forward loop's own rows,
    the gradients of the ``emitted`` rows; then the captured tensors the body ``reads``. It
    returns the next ``a``, the sums plus this iteration's share, and emits the gradients of
    the ``rows``. ``subgraph`` is None if nothing differentiable flows through the loop.
    """

    def __init__(self, op: OpRecord, grads: Sequence[Tensor | None]) -> None:
        from eagerflow.graph.core.gradients import gradients

        body: Subgraph = op.attrs["body"]
        num_vars, num_sequences = op.attrs["num_vars"], op.attrs["num_sequences"]
        var_inputs = body.inputs[:num_vars]
        row_inputs = body.inputs[num_vars : num_vars + num_sequences]
        captured_inputs = body.inputs[num_vars + num_sequences :]
        next_values, emitted = body.outputs[:num_vars], body.outputs[num_vars:]

        self.emitted = [i for i in _floating(emitted) if grads[num_vars + i] is not None]
        seeded = [i for i in _floating(next_values) if grads[i] is not None]
        seeded_emitted = [emitted[i] for i in self.emitted]
        self.vars = _needing_gradients(var_inputs, next_values, seeded, seeded_emitted)
        self.rows = [i for i in _floating(row_inputs) if op.needs(num_vars + i)]
        self.captured = [
            i for i in _floating(captured_inputs) if op.needs(num_vars + num_sequences + i)
        ]
        self.subgraph: Subgraph | None = None
        self.recorded: list[int] = []
        self.reads: list[int] = []
        if not (self.vars or self.emitted):
            return
        graph = body.graph
        with graph.as_default():
            carried = [graph.input_like(var_inputs[i], "grad") for i in self.vars]
            totals = [graph.input_like(captured_inputs[i], "total") for i in self.captured]
            emitted_grads = [graph.input_like(emitted[i], "grad") for i in self.emitted]
            ys = [*(next_values[i] for i in self.vars), *(emitted[i] for i in self.emitted)]
            xs = [
                *(var_inputs[i] for i in self.vars),
                *(row_inputs[i] for i in self.rows),
                *(captured_inputs[i] for i in self.captured),
            ]
            d = gradients(ys, xs, [*carried, *emitted_grads], unconnected_gradients="zero")
            d_vars = d[: len(self.vars)]
            d_rows = d[len(self.vars) : len(self.vars) + len(self.rows)]
            d_captured = d[len(self.vars) + len(self.rows) :]
            new_totals = [ef.add(t, g) for t, g in zip(totals, d_captured, strict=True)]
        outputs = [*d_vars, *new_totals, *d_rows]
        read = _placeholders_behind(outputs)  # type: ignore[arg-type]
        self.recorded = [i for i, t in enumerate(var_inputs) if t in read]
        self.reads = [i for i, t in enumerate(captured_inputs) if t in read]
        inputs = [
            *carried,
            *totals,
            None,  # the tick
            *(var_inputs[i] for i in self.recorded),
            *row_inputs,
            *emitted_grads,
            *(captured_inputs[i] for i in self.reads),
        ]
        self.subgraph = Subgraph(graph, inputs, outputs)  # type: ignore[arg-type]


def _floating(tensors: Sequence[SymbolicTensor | None]) -> list[int]:
    """The positions of the floating-point tensors: the only ones with gradients."""
    return [i for i, t in enumerate(tensors) if t is not None and t.dtype.is_floating]


def _needing_gradients(
    var_inputs: Sequence[SymbolicTensor | None],
    next_values: Sequence[SymbolicTensor],
    seeded: Sequence[int],
    emitted: Sequence[SymbolicTensor],
) -> list[int]:
    """The loop variables whose gradients the backward loop carries: those ``seeded`` (their
    final value has a gradient), and every floating one the body computes a carried one, or
    a seeded ``emitted`` output, from."""
    floating = _floating(var_inputs)
    needed = set(seeded)
    new = list(seeded)
    behind = _placeholders_behind([*(next_values[i] for i in new), *emitted])
    while True:
        new = [i for i in floating if i not in needed and var_inputs[i] in behind]
        if not new:
            return sorted(needed)
        needed.update(new)
        behind = _placeholders_behind([next_values[i] for i in new])


def _placeholders_behind(tensors: Sequence[SymbolicTensor]) -> set[SymbolicTensor]:
    """The placeholders that ``tensors`` are computed from (through data edges), counting
    a read of a variable as its handle's (see ``FunctionGraph``): a loop whose backward
    body reads a variable needs its handle fed, so that a gradient of the backward loop
    reaches the variable too."""
    found: set[SymbolicTensor] = set()
    seen: set[Operation] = set()
    stack = [t.op for t in tensors]
    while stack:
        operation = stack.pop()
        if operation in seen:
            continue
        seen.add(operation)
        if operation.type == "Placeholder":
            found.update(operation.outputs)
        elif operation.type in READS and isinstance(operation.graph, FunctionGraph):
            handles = operation.graph.handles
            found.update(h for h, v in handles.items() if v is operation.attrs["variable"])
        stack.extend(t.op for t in operation.inputs)
    return found


def _check_rerunnable(*subgraphs: Subgraph | None) -> None:
    """Refuse a loop whose condition or body has an effect: the gradient runs them again.
    Reads are fine, and so are ops that run subgraphs (If, While, calls) without effects."""
    for subgraph in subgraphs:
        if subgraph is None:
            continue
        for operation in subgraph.graph.get_operations():
            if not operation.op_def.stateful or operation.type in READS:
                continue
            inner = [a for a in operation.attrs.values() if isinstance(a, Subgraph)]
            if not inner:
                raise InvalidArgumentError(
                    f"cannot differentiate a while_loop whose body or condition has an effect "
                    f"({operation.type} '{operation.name}'): the gradient runs the loop again, "
                    "so the effect would happen twice; move it out of the loop"
                )
            _check_rerunnable(*inner)


class _Spec:
    """A shape and dtype, for building a loop body against a shape invariant."""

    def __init__(self, shape: Shape | None, dtype: DType) -> None:
        self.shape = shape
        self.dtype = dtype


__all__ = ["FunctionGraph", "Subgraph", "cond", "if_kernel", "while_kernel", "while_loop"]
