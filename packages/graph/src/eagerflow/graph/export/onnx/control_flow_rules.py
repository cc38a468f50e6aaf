"""ONNX rules for the ops that run subgraphs: ``PartitionedCall`` (inlined), ``If`` and
``While`` (ONNX ``If`` and ``Loop``, whose bodies are translated by the same builder)."""

from __future__ import annotations

from eagerflow.graph.core.graph import Operation
from eagerflow.graph.core.subgraphs import Subgraph
from eagerflow.graph.export.onnx.builder import (
    OnnxBuilder,
    Refused,
    rule,
)


@rule("PartitionedCall")
def _call(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """A nested traced function, inlined: its graph's nodes translated here, its inputs
    standing for the call's."""
    function = node.attrs["function"]
    env = {t: name for t, name in zip(function.inputs, x, strict=True) if t is not None}
    return b.emit(function.graph, env, function.outputs)


@rule("If")
def _if(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """ONNX ``If``: each branch a subgraph without inputs, which uses the captured tensors
    of the outer graph by their names."""
    branches = {}
    for key in ("then_branch", "else_branch"):  # (ONNX's attributes have eagerflow's names)
        branch: Subgraph = node.attrs[key]
        env = {t: n for t, n in zip(branch.inputs, x[1:], strict=True) if t is not None}
        branches[key] = b.subgraph(branch.graph, env, branch.outputs, f"{node.name}/{key}")
    return b.node("If", x[:1], len(node.outputs), **branches)


@rule("While")
def _while(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """ONNX ``Loop`` with no trip count: the condition is computed once before the loop,
    and the body computes eagerflow's body and then its condition on the new values (the
    loop's ``cond`` output). Captured tensors are used from the outer graph by name."""
    cond: Subgraph | None = node.attrs["cond"]
    body: Subgraph = node.attrs["body"]
    n = node.attrs["num_vars"]
    if cond is None or node.attrs["num_sequences"] or node.attrs["num_emitted"]:
        raise Refused("a While over sequences (a gradient loop) has no ONNX translation here")
    captured = x[n:]

    def condition(values: list[str]) -> str:
        env = {
            t: v for t, v in zip(cond.inputs, [*values, *captured], strict=True) if t is not None
        }
        return b.emit(cond.graph, env, cond.outputs)[0]

    helper = b.onnx.helper
    iteration, cond_in = b.name("iteration"), b.name("cond_in")
    carried = [b.name(f"{node.name}/var{i}") for i in range(n)]
    inputs = [
        helper.make_tensor_value_info(iteration, b.onnx.TensorProto.INT64, []),
        helper.make_tensor_value_info(cond_in, b.onnx.TensorProto.BOOL, []),
        *(helper.make_tensor_value_info(name, b.elem_type(t.dtype), None)
          for name, t in zip(carried, node.inputs[:n], strict=True)),
    ]  # fmt: skip
    env = {t: v for t, v in zip(body.inputs, [*carried, *captured], strict=True) if t is not None}
    new_values = body.outputs[:n]
    # the condition on the new values, in the body graph: computed after the body's nodes
    graph = b.subgraph(
        body.graph, env, new_values, f"{node.name}/body", inputs,
        extra=lambda: [condition([env[t] for t in new_values])],
    )  # fmt: skip
    start = condition(x[:n])
    return b.node("Loop", ["", start, *x[:n]], n, body=graph)


@rule("NoOp")
def _no_op(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
    """Nothing: it has no outputs, and an ONNX graph runs what its outputs need."""
    return []


__all__: list[str] = []  # registers its rules in RULES
