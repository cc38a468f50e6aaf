"""The gradients of ``If`` and ``While`` (the ops of ``control_flow.py``), registered with the
autodiff package's gradient registry when this module is imported (``eagerflow.graph`` does).

The gradient of ``If`` is another ``If``: each branch's gradient is built inside that branch's
graph, by the same ``gradients()``. The gradient of ``While`` is two more ``While`` ops: the
loop run again, keeping each iteration's loop variables on stacks, then a loop over the
iterations backwards, applying the body's gradient (built inside the body's graph, by the
same ``gradients()``) to one row of the stacks at a time. ``_while_grad`` says why stacks
rather than recomputing. Both being While ops, gradients of gradients need nothing more.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import eagerflow.tensor as ef
from eagerflow.autodiff import OpRecord, register_gradient
from eagerflow.graph.core.control_flow import loop_attrs
from eagerflow.graph.core.gradients import gradients
from eagerflow.graph.core.graph import SymbolicTensor
from eagerflow.graph.core.subgraphs import FunctionGraph, Subgraph
from eagerflow.graph.core.walks import operations_behind
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import InvalidArgumentError
from eagerflow.tensor.execution import execute


# --- the If gradient -------------------------------------------------------------------------
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

    graph = branch.graph
    with graph.as_default():
        seeds = [graph.input_like(g, "grad") for g in grads]
        inputs = [
            t if t is not None else graph.input_like(outer, "unused")
            for t, outer in zip(branch.inputs, captured, strict=True)
        ]
        d_inputs = gradients(branch.outputs, inputs, grad_ys=seeds, unconnected_gradients="zero")
    return Subgraph(graph, [*inputs, *seeds], d_inputs)  # type: ignore[arg-type]


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
    _check_rerunnable(op.attrs["cond"], op.attrs["body"])
    backward = _BackwardBody(op, grads)
    if backward.subgraph is None:
        return (None,) * len(op.inputs)  # nothing differentiable flows through this loop
    attrs = loop_attrs(
        cond=None,
        body=backward.subgraph,
        num_vars=len(backward.vars) + len(backward.captured),
        num_sequences=1
        + len(backward.recorded)
        + op.attrs["num_sequences"]
        + len(backward.emitted),
        num_emitted=len(backward.rows),
        reverse=not op.attrs["reverse"],
    )
    outputs = execute("While", _backward_inputs(op, grads, backward), attrs, "while_grad")
    return _at_input_positions(op, backward, outputs)


def _backward_inputs(
    op: OpRecord, grads: Sequence[Tensor | None], backward: _BackwardBody
) -> tuple[Tensor, ...]:
    """The backward While's inputs, in the order its body takes them (see ``_BackwardBody``)."""
    num_vars, num_sequences = op.attrs["num_vars"], op.attrs["num_sequences"]
    sequences = op.inputs[num_vars : num_vars + num_sequences]
    captured = op.inputs[num_vars + num_sequences :]
    return (
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


def _at_input_positions(
    op: OpRecord, backward: _BackwardBody, outputs: Sequence[Tensor]
) -> tuple[Tensor | None, ...]:
    """The backward loop's outputs, each at the position of its input in the op (None for
    the inputs with no gradient)."""
    num_vars, num_sequences = op.attrs["num_vars"], op.attrs["num_sequences"]
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
    for operation in operations_behind([t.op for t in tensors], control=False):
        if operation.op_def.fed:
            found.update(operation.outputs)
        elif operation.op_def.reads_state and isinstance(operation.graph, FunctionGraph):
            handles = operation.graph.handles
            found.update(h for h, v in handles.items() if v is operation.attrs["variable"])
    return found


def _check_rerunnable(*subgraphs: Subgraph | None) -> None:
    """Refuse a loop whose condition or body has an effect: the gradient runs them again.
    Reads are fine, and so are ops that run subgraphs (If, While, calls) without effects."""
    for subgraph in subgraphs:
        if subgraph is None:
            continue
        for operation in subgraph.graph.get_operations():
            if not operation.op_def.stateful or operation.op_def.reads_state:
                continue
            inner = [a for a in operation.attrs.values() if isinstance(a, Subgraph)]
            if not inner:
                raise InvalidArgumentError(
                    f"cannot differentiate a while_loop whose body or condition has an effect "
                    f"({operation.type} '{operation.name}'): the gradient runs the loop again, "
                    "so the effect would happen twice; move it out of the loop"
                )
            _check_rerunnable(*inner)


__all__: list[str] = []  # registers gradients; nothing to import
