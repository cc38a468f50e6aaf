"""to_mermaid() and to_dot() draw the real objects: graphs (with name scopes) and tapes."""

from __future__ import annotations

import re

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import (
    Graph,
    cond,
    control_dependencies,
    name_scope,
    placeholder,
    while_loop,
)


def small_graph() -> Graph:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None, 3), name="x")
        with name_scope("layer1"):
            w = Variable(np.ones((3, 2), np.float32), name="W")
            with name_scope("act"):
                y = ef.relu(ef.matmul(x, w))
        with control_dependencies([y]):
            ef.reduce_mean(y, name="loss")
    return g


def test_graph_to_mermaid() -> None:
    text = small_graph().to_mermaid()
    lines = text.splitlines()
    assert lines[0] == "flowchart TD"
    assert 'n_x(["x<br/><small>Placeholder: float32 (None, 3)</small>"])' in text
    assert '[("W<br/><small>VariableV2: float32 (3, 2)</small>")]' in text  # a cylinder
    # scopes nest: act inside layer1, and the matmul inside act
    layer1 = lines.index('  subgraph n_scope_layer1_["layer1"]')
    act = lines.index('    subgraph n_scope_layer1_act_["act"]')
    matmul = next(i for i, line in enumerate(lines) if "n_layer1_act_MatMul[" in line)
    assert layer1 < act < matmul
    assert '  n_x -->|"(None, 3)"| n_layer1_act_MatMul' in lines
    assert "  n_layer1_W --> n_layer1_act_ReadVariableOp" in lines  # a variable feeds its reads
    assert "  n_layer1_act_Relu -.-> n_loss" in lines  # control dependency: dashed


def test_graph_to_dot() -> None:
    text = small_graph().to_dot()
    assert text.startswith("digraph n_graph {") and text.rstrip().endswith("}")
    assert "subgraph cluster_n_layer1_ {" in text and 'label="layer1";' in text
    assert 'n_x [label="x\\nPlaceholder: float32 (None, 3)", shape=ellipse];' in text
    assert "n_layer1_act_Relu -> n_loss [style=dashed];" in text
    assert text.count("{") == text.count("}")


def branching_graph() -> Graph:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (), name="x")
        w = Variable(3.0, name="w")
        cond(x > 1.0, lambda: x * w, lambda: x * x)
    return g


def test_branches_are_drawn_only_when_asked() -> None:
    g = branching_graph()
    assert "cond_then" not in g.to_mermaid()
    text = g.to_mermaid(branches=True)
    lines = text.splitlines()
    then = lines.index('  subgraph n_scope_cond__then_["cond: then"]')
    other = lines.index('  subgraph n_scope_cond__else_["cond: else"]')
    inside_then = lines[then + 1 : lines.index("  end", then)]
    assert any(line.startswith("    n_cond_then_branch_mul[") for line in inside_then)
    assert then < other
    # the outer x feeds each branch's captured input; each branch's result feeds the If
    assert '  n_x -->|"()"| n_cond_then_branch_captured' in lines
    assert '  n_x -->|"()"| n_cond_else_branch_captured' in lines
    assert '  n_cond_then_branch_mul -->|"then"| n_cond' in lines
    assert '  n_cond_else_branch_mul -->|"else"| n_cond' in lines
    # a variable of the outer graph feeds its reads inside a branch
    assert any(line.startswith("  n_w --> n_cond_then_branch_") for line in lines)
    dot = g.to_dot(branches=True)
    assert "subgraph cluster_n_cond__then_ {" in dot and dot.count("{") == dot.count("}")


def test_nested_loops_and_branches_get_ids_of_their_own() -> None:
    g = Graph()
    with g.as_default():
        n = placeholder(ef.int32, (), name="n")

        def body(i: ef.Tensor, total: ef.Tensor) -> tuple[ef.Tensor, ef.Tensor]:
            step = cond(i > 2, lambda: ef.constant(2.0), lambda: ef.constant(1.0))
            return i + 1, total + step

        while_loop(lambda i, total: i < n, body, [ef.constant(0), ef.constant(0.0)])
    text = g.to_mermaid(branches=True)
    ids = re.findall(r"^ *(n_\w+)[\[(>]", text, re.M)
    assert len(ids) == len(set(ids))  # every node once, under a unique id
    assert '    subgraph n_scope_while__body_cond__then_["cond: then"]' in text  # boxes nest
    assert '  n_n -->|"()"| n_while_cond_captured' in text
    assert '  n_while_body_add_1 -->|"body"| n_while' in text
    assert '  n_while_body_cond_then_branch_Const -->|"then"| n_while_body_cond' in text


def test_tape_to_mermaid_and_dot() -> None:
    w, x = Variable(2.0, name="w"), ef.constant(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = w * x + x
    text = tape.to_mermaid()
    assert text.splitlines()[1:] == [
        '  op0["Mul<br/><small>float32 ()</small>"]',
        '  in0[("w:0<br/><small>float32 ()</small>")]',
        '  in1(["watched<br/><small>float32 ()</small>"])',
        '  op1["AddV2<br/><small>float32 ()</small>"]',
        '  in0 -->|"()"| op0',
        '  in1 -->|"()"| op0',
        '  op0 -->|"()"| op1',
        '  in1 -->|"()"| op1',
    ]
    assert "op0 -> op1" in tape.to_dot()
    assert float(tape.gradient(y, x)) == 3.0  # drawing does not disturb the tape


def test_tape_inputs_are_numbered_in_order() -> None:
    x = ef.constant(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = (x * 2.0 + 1.0) * 4.0  # three constants, met after ops already have ids
    lines = [line for line in tape.to_mermaid().splitlines() if "-->" not in line]
    assert re.findall(r"^  (in\d+)", "\n".join(lines), re.M) == ["in0", "in1", "in2", "in3"]
    assert float(tape.gradient(y, x)) == 8.0


def test_jupyter_draws_graphs_and_tapes() -> None:
    """``_repr_mimebundle_``: a mermaid fence as markdown (JupyterLab >= 4.1 draws it), and
    the usual repr as plain text."""
    graph = small_graph()
    bundle = graph._repr_mimebundle_()
    assert bundle == {
        "text/markdown": f"```mermaid\n{graph.to_mermaid()}```\n",
        "text/plain": repr(graph),
    }
    x = ef.constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        x * x
    bundle = tape._repr_mimebundle_(include=None, exclude=None)  # as IPython calls it
    assert bundle["text/markdown"] == f"```mermaid\n{tape.to_mermaid()}```\n"
    assert "Mul" in bundle["text/markdown"]
    assert bundle["text/plain"] == repr(tape)
