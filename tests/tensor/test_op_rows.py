"""One row per op: what is true of an op is a field of its ``OpDef``, set where the op is
defined, and no code elsewhere compares an op's name with a string. How one layer
*interprets* an op (its gradient, its JVP, its compiled loop, its ONNX nodes) lives in that
layer's one registry keyed by the op's name, which names registered ops only and is
complete, or says why not.

The rows and registries are read in a fresh interpreter that imports the four packages: the
tests of this process register ops and rules of their own (exercises, planted mistakes).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import dataclasses, json
import eagerflow.graph, eagerflow.nn
from eagerflow.autodiff.forward import JVPS
from eagerflow.autodiff.registry import GRADIENTS
from eagerflow.graph import onnx, tf_graph_def
from eagerflow.graph.autograph.operators import COUNTED
from eagerflow.graph.compiler.kernels import ELEMENTWISE, INTO_BUFFER, REDUCTIONS
from eagerflow.tensor.registry import OPS, Facts

facts = [*Facts.__annotations__, "stateful", "multi_output"]
print(json.dumps({
    "ops": {name: {f: getattr(op, f) for f in facts} for name, op in OPS.items()},
    "gradients": {name: rule is not None for name, rule in GRADIENTS.items()},
    "jvps": sorted(JVPS),
    "onnx": sorted(onnx.RULES),
    "not_exportable": onnx.NOT_EXPORTABLE,
    "tf_rules": sorted(tf_graph_def.TF_RULES),
    "no_tf_counterpart": tf_graph_def.NO_TF_COUNTERPART,
    "elementwise": sorted(ELEMENTWISE),
    "reductions": sorted(REDUCTIONS),
    "into_buffer": sorted(INTO_BUFFER),
    "counted": sorted(COUNTED),
}))
"""


@cache
def _tables() -> dict[str, Any]:
    found = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    return json.loads(found.stdout)  # type: ignore[no-any-return]


def _ops_with(fact: str, value: Any = True) -> set[str]:
    return {name for name, row in _tables()["ops"].items() if row[fact] == value}


# --- (1) no comparisons with op names outside an op's definition -----------------------------
_NAMES = {"type", "name", "op_name", "op_type"}  # what holds an op's name: o.type, op.name, ...


def _holds_a_name(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in _NAMES
    return isinstance(node, ast.Name) and node.id in _NAMES


def _strings(node: ast.expr) -> list[str]:
    """The string literals of ``"X"``, ``("X", "Y")``, ``{"X"}``, ``frozenset({"X"})``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    if isinstance(node, ast.Call) and node.args:
        return _strings(node.args[0])
    return []


def _defined_ops(function: ast.AST) -> set[str]:
    """The ops a function's ``@op("Name", ...)`` decorators define."""
    decorators = getattr(function, "decorator_list", [])
    return {
        d.args[0].value
        for d in decorators
        if isinstance(d, ast.Call)
        and isinstance(d.func, ast.Name)
        and d.func.id == "op"
        and d.args
        and isinstance(d.args[0], ast.Constant)
    }


def _comparisons(source: str, where: str, ops: set[str]) -> list[str]:
    """``where:line: comparison`` for each comparison with a name of ``ops`` in ``source``."""
    found: list[str] = []

    def visit(node: ast.AST, defining: set[str]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            defining = defining | _defined_ops(node)
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(map(_holds_a_name, sides)):
                named = {s for side in sides for s in _strings(side)} & ops
                if named - defining:
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        for child in ast.iter_child_nodes(node):
            visit(child, defining)

    visit(ast.parse(source, where), set())
    return found


def test_no_code_compares_an_op_name_outside_the_ops_definition() -> None:
    ops = set(_tables()["ops"])
    found = [
        comparison
        for path in sorted(ROOT.glob("packages/*/src/**/*.py"))
        for comparison in _comparisons(path.read_text(), str(path.relative_to(ROOT)), ops)
    ]
    assert not found, (
        "compare an OpDef field (operation.op_def.reads_state, ...) or dispatch through a "
        "layer's registry, not the op's name:\n" + "\n".join(found)
    )


def test_the_scan_sees_what_it_forbids() -> None:
    source = """
if operation.type in ("Max", "Min") or op.name == "ReadVariableOp":
    pass
if variable.name == "global_step:0" or name == "NoOp":
    pass

@op("Range", range_kernel)
def range(start):
    if start.op.type == "Range":  # inside the op's own definition
        pass
"""
    found = _comparisons(source, "planted.py", {"Max", "Min", "NoOp", "ReadVariableOp", "Range"})
    assert [c.split(":")[1] for c in found] == ["2", "2", "4"], found


# --- (2) each interpretation's registry: registered ops only, and complete ------------------
def test_every_op_has_a_gradient_rule_or_is_declared_not_differentiable() -> None:
    ops, gradients = set(_tables()["ops"]), set(_tables()["gradients"])
    assert gradients <= ops, f"gradient rules of no registered op: {sorted(gradients - ops)}"
    assert ops <= gradients, (
        f"ops without a gradient rule: {sorted(ops - gradients)}: register one with "
        "@register_gradient, or declare them with not_differentiable()"
    )


def test_explicit_jvps_are_of_differentiable_ops() -> None:
    """A JVP rule is optional (without one, the gradient rule is transposed), but it must
    be of a registered op that has a gradient rule, or it would never be used."""
    differentiable = {name for name, has in _tables()["gradients"].items() if has}
    jvps = set(_tables()["jvps"])
    assert jvps <= differentiable, sorted(jvps - differentiable)


def test_every_op_is_exported_to_onnx_or_says_why_not() -> None:
    ops, rules = set(_tables()["ops"]), set(_tables()["onnx"])
    refused: dict[str, str] = _tables()["not_exportable"]
    assert rules <= ops, f"ONNX rules of no registered op: {sorted(rules - ops)}"
    assert set(refused) <= ops, f"refusals of no registered op: {sorted(set(refused) - ops)}"
    assert not rules & set(refused), f"both a rule and a refusal: {sorted(rules & set(refused))}"
    missing = ops - rules - set(refused)
    assert not missing, f"ops with neither an ONNX rule nor a reason in NOT_EXPORTABLE: {missing}"
    assert all(len(why) > 10 for why in refused.values())


def test_every_op_has_a_tensorflow_rule_or_says_why_not() -> None:
    """The TensorFlow GraphDef lowering (``eagerflow.graph.tf_graph_def``): every op has a
    rule in ``TF_RULES`` or is named in ``NO_TF_COUNTERPART`` with its reason, never both."""
    ops, rules = set(_tables()["ops"]), set(_tables()["tf_rules"])
    refused: dict[str, str] = _tables()["no_tf_counterpart"]
    assert rules <= ops, f"TensorFlow rules of no registered op: {sorted(rules - ops)}"
    assert set(refused) <= ops, f"reasons for no registered op: {sorted(set(refused) - ops)}"
    assert not rules & set(refused), f"both a rule and a reason: {sorted(rules & set(refused))}"
    missing = ops - rules - set(refused)
    assert not missing, f"ops with neither a TensorFlow rule nor a reason: {sorted(missing)}"
    assert all(len(why) > 10 for why in refused.values())


def test_the_compilers_lowerings_name_registered_ops() -> None:
    """Not complete by design: an op without a lowering runs its NumPy kernel."""
    ops = set(_tables()["ops"])
    elementwise, reductions = set(_tables()["elementwise"]), set(_tables()["reductions"])
    for table in ("elementwise", "reductions", "into_buffer", "counted"):
        named = set(_tables()[table])
        assert named <= ops, f"{table} names unregistered ops: {sorted(named - ops)}"
    assert not elementwise & reductions
    assert _ops_with("transcendental") <= elementwise  # the cost only matters to a fused loop


# --- (3) the tables the facts replaced, recomputed from the rows -----------------------------
def test_the_facts_hold_what_the_old_tables_held() -> None:
    assert _ops_with("reads_state") == {"ReadVariableOp", "VariableV2"}  # READS, VARIABLE_READS
    assert _ops_with("needs_only_shapes") == {"OnesLike", "ZerosLike", "Size"}  # SHAPE_ONLY
    assert _ops_with("transcendental") == {"Exp", "Log", "Tanh"}  # TRANSCENDENTAL
    assert _ops_with("retains_inputs", False) == {  # NON_RETAINING
        "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "Neg", "Abs", "Sign", "Square",
        "Sqrt", "Exp", "Log", "Tanh", "Sigmoid", "Relu", "ReluGrad", "Less", "LessEqual",
        "Greater", "GreaterEqual", "Equal", "NotEqual", "LogicalAnd", "LogicalOr",
        "LogicalNot", "SelectV2", "Cast", "Pow", "FloorDiv", "FloorMod", "Softplus", "Elu",
        "LeakyRelu", "MatMul", "Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin",
        "Softmax", "LogSoftmax", "SparseSoftmaxCrossEntropyWithLogits", "AssignAddVariableOp",
        "AssignSubVariableOp", "ApplyGradientDescent",
    }  # fmt: skip
    default_names = {  # DEFAULT_NAMES (whose "Neg": "Neg" was the op's own name)
        name: row["default_name"] for name, row in _tables()["ops"].items() if row["default_name"]
    }
    assert default_names == {
        "AddV2": "add", "Sub": "sub", "Mul": "mul", "RealDiv": "truediv",
        "FloorDiv": "floordiv", "FloorMod": "mod", "Pow": "pow",
    }  # fmt: skip
    # the names that code compared operations with
    assert _ops_with("fed") == {"Placeholder"}
    assert _ops_with("defines_variable") == {"VariableV2"}
    assert _ops_with("constant") == {"Const"}
    assert _ops_with("expands") == {"BroadcastTo"}


def test_a_graph_names_a_python_operators_node_after_the_operator() -> None:
    import eagerflow.tensor as ef
    from eagerflow.graph import Graph, placeholder

    with Graph().as_default():
        x = placeholder(ef.float32, ())
        assert [(x + x).op.name, (x % x).op.name, (x * x).op.name] == ["add", "mod", "mul"]
        assert ef.negative(x).op.name == "Neg"
