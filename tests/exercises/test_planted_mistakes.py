"""Wrong solutions that the exercise tests must reject.

Each case is a plausible mistake a reader could make (or an answer that games the test);
the chapter's test is run against it and must fail. The set grows with the exercises.
"""

from __future__ import annotations

import ast
import base64
import importlib.util
import math
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest
import test_ch01
import test_ch02
import test_ch03
import test_ch04
import test_ch05
import test_ch06
import test_ch07
import test_ch08
import test_ch09  # a module, not its names: pytest would collect an imported test again
import test_ch10
import test_ch11
import test_ch12
import test_ch13
import test_ch14
import test_ch15
import test_ch16
import test_ch17
import test_ch18
import test_ch19
import test_ch20

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import (
    ForwardAccumulator,
    GradientTape,
    OpRecord,
    Variable,
    forward_jacobian,
    register_gradient,
)
from eagerflow.autodiff.registry import GRADIENTS
from eagerflow.graph import (
    Function,
    Graph,
    TensorSpec,
    cond,
    function,
    gradients,
    placeholder,
    while_loop,
)
from eagerflow.graph import SymbolicTensor as SymbolicTensorType
from eagerflow.graph.autograph.analysis import analyze
from eagerflow.graph.autograph.converters import control_flow as autograph_control_flow
from eagerflow.graph.autograph.naming import Namer
from eagerflow.graph.compiler import fusion as compiler_fusion
from eagerflow.graph.compiler import program as compiler_program
from eagerflow.graph.compiler.fusion import Cluster, domain_of
from eagerflow.graph.compiler.kernels import ELEMENTWISE, REDUCTIONS
from eagerflow.graph.core import graph as ef_graph
from eagerflow.graph.core import session as session_module
from eagerflow.graph.core.session import Plan
from eagerflow.graph.core.state import session_values
from eagerflow.graph.export.graph_def import decode_attr, encode_attr
from eagerflow.tensor import rules as ef_rules
from eagerflow.tensor.dtypes import FLOATS, DType
from eagerflow.tensor.errors import EagerflowError, ShapeError
from eagerflow.tensor.execution import execute, recording
from eagerflow.tensor.registry import OPS, register_op
from eagerflow.tensor.rules import broadcast_rule, same_dtype, same_shape_rule


def _train_step_returning_the_loss_after_the_update(
    w: Variable, b: Variable, learning_rate: float
) -> Function:
    def step(x, y):  # type: ignore[no-untyped-def]
        with GradientTape() as tape:
            loss = ef.reduce_mean(ef.square(w * x + b - y))
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(learning_rate * dw)
        b.assign_sub(learning_rate * db)
        return ef.reduce_mean(ef.square(w * x + b - y))  # after the update: wrong

    return function(step)


def test_ch09_train_step_rejects_a_loss_computed_after_the_update() -> None:
    # Until traced functions read variables where the code reads them, this mistake passed:
    # every read inside the trace saw the value from the start of the call.
    chapter = SimpleNamespace(train_step_function=_train_step_returning_the_loss_after_the_update)
    with pytest.raises(AssertionError, match="before the update"):
        test_ch09.test_train_step_function_traces_once_and_learns(chapter)


# --- chapter 10: AutoGraph by hand ----------------------------------------------------------------
def _bounce_damping_every_step(position, velocity, floor):  # type: ignore[no-untyped-def]
    position = position + velocity
    position, bounces = cond(
        position < floor, lambda: (2 * floor - position, 1), lambda: (position, 0)
    )
    return position, -velocity * 0.8, bounces  # the velocity changes without a bounce too


def _bounce_testing_before_moving(position, velocity, floor):  # type: ignore[no-untyped-def]
    moved = position + velocity
    return cond(
        position < floor,  # where the ball was, not where it went
        lambda: (2 * floor - moved, -velocity * 0.8, 1),
        lambda: (moved, velocity, 0),
    )


def _bounce_with_where(position, velocity, floor):  # type: ignore[no-untyped-def]
    position = position + velocity
    below = position < floor
    return (
        ef.where(below, 2 * floor - position, position),
        ef.where(below, -velocity * 0.8, velocity),
        ef.cast(below, ef.int32),
    )  # the right numbers, but both sides computed: no If node


@pytest.mark.parametrize(
    ("mistake", "test", "message"),
    [
        (_bounce_damping_every_step, "gives_bounces_results_in_a_graph", "expected velocity"),
        (_bounce_testing_before_moving, "gives_bounces_results_in_a_graph", "expected"),
        (_bounce_with_where, "builds_an_if_node", "If node"),
    ],
    ids=["damping_every_step", "testing_before_moving", "where_instead_of_cond"],
)
def test_ch10_bounce_with_cond_rejects(mistake, test, message) -> None:  # type: ignore[no-untyped-def]
    chapter = SimpleNamespace(bounce_with_cond=mistake)
    with pytest.raises(AssertionError, match=message):
        getattr(test_ch10, f"test_bounce_with_cond_{test}")(chapter)


def _lambda(values: list[ast.expr]) -> ast.Lambda:
    no_arguments = ast.arguments(
        posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    return ast.Lambda(args=no_arguments, body=ast.Tuple(values, ast.Load()))


def _only_assigns(node: ast.If) -> bool:
    statements = [*node.body, *node.orelse]
    return all(
        isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
        for s in statements
    )


def _ag_if_call(node: ast.If, names: list[str]) -> ast.Assign:
    """The rewrite of a convertible if, as the solution makes it, for the names given."""
    branches = []
    for statements in (node.body, node.orelse):
        assigned = {s.targets[0].id: s.value for s in statements}  # type: ignore[attr-defined]
        branches.append(_lambda([assigned.get(n, ast.Name(n, ast.Load())) for n in names]))
    call = ast.Call(
        ast.Name("ag_if", ast.Load()),
        [node.test, *branches, ast.Tuple([ast.Constant(n) for n in names], ast.Load())],
        [],
    )
    targets = ast.Tuple([ast.Name(n, ast.Store()) for n in names], ast.Store())
    return ast.copy_location(ast.Assign([targets], call), node)


def _if_to_ag_if_with_the_if_branchs_names_only(tree: ast.AST) -> ast.AST:
    class Mistake(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> ast.stmt:
            self.generic_visit(node)
            if not _only_assigns(node):
                return node
            names = sorted({s.targets[0].id for s in node.body})  # type: ignore[attr-defined]
            return _ag_if_call(node, names)  # what only the else assigns is lost

    return Mistake().visit(tree)


def _if_to_ag_if_at_the_top_only(tree: ast.AST) -> ast.AST:
    (definition,) = tree.body  # type: ignore[attr-defined]
    for i, statement in enumerate(definition.body):  # not into loops: no generic_visit
        if isinstance(statement, ast.If) and _only_assigns(statement):
            names = sorted({s.targets[0].id for s in [*statement.body, *statement.orelse]})
            definition.body[i] = _ag_if_call(statement, names)
    return tree


def _if_to_ag_if_computing_both_branches_first(tree: ast.AST) -> ast.AST:
    class Mistake(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> ast.stmt:
            self.generic_visit(node)
            if not _only_assigns(node):
                return node
            names = sorted({s.targets[0].id for s in [*node.body, *node.orelse]})
            new = _ag_if_call(node, names)
            call = new.value
            assert isinstance(call, ast.Call)
            call.args[1:3] = [lam.body for lam in call.args[1:3]]  # tuples, not lambdas
            return new

    return Mistake().visit(tree)


@pytest.mark.parametrize(
    ("mistake", "fn", "message"),
    [
        (_if_to_ag_if_with_the_if_branchs_names_only, "piecewise", "traced: expected"),
        (_if_to_ag_if_at_the_top_only, "in_a_loop", r"bool\(\) of the symbolic tensor"),
        (_if_to_ag_if_computing_both_branches_first, "clip_and_count", "not callable"),
    ],
    ids=["if_branchs_names_only", "top_level_ifs_only", "branches_not_lambdas"],
)
def test_ch10_if_to_ag_if_rejects(mistake, fn, message) -> None:  # type: ignore[no-untyped-def]
    chapter = SimpleNamespace(if_to_ag_if=mistake)
    case = test_ch10.HIDDEN[test_ch10.HIDDEN_IDS.index(fn)]
    with pytest.raises(AssertionError, match=message):
        test_ch10.test_if_to_ag_if_gives_the_eager_results_in_a_graph(chapter, *case)


def _if_to_ag_if_by_eagerflows_autograph(tree: ast.AST) -> ast.AST:
    (definition,) = tree.body  # type: ignore[attr-defined]
    analyze(definition)
    definition = autograph_control_flow.transform(definition, Namer(definition))  # gamed
    helpers = "ag__ = __import__('eagerflow.graph.autograph', fromlist=['conversion'])"
    definition.body[:0] = ast.parse(f"{helpers}.conversion.HELPERS").body
    tree.body = [definition]  # type: ignore[attr-defined]
    return tree


def test_ch10_if_to_ag_if_rejects_eagerflows_autograph() -> None:
    chapter = SimpleNamespace(if_to_ag_if=_if_to_ag_if_by_eagerflows_autograph)
    message = (
        "if_to_ag_if: this exercise asks you to build a mini AutoGraph yourself: calling "
        "eagerflow.graph.autograph.converters.control_flow.transform is not allowed"
    )
    case = test_ch10.HIDDEN[test_ch10.HIDDEN_IDS.index("piecewise")]
    with pytest.raises(AssertionError, match=message):
        test_ch10.test_if_to_ag_if_gives_the_eager_results_in_a_graph(chapter, *case)


def _if_to_ag_if_dropping_statements(tree: ast.AST) -> ast.AST:
    def assigns(statements: list[ast.stmt]) -> list[ast.stmt]:
        return [s for s in statements if _only_assigns(ast.If(ast.Constant(1), [s], []))]

    class Mistake(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> ast.stmt:
            self.generic_visit(node)
            kept = ast.If(node.test, assigns(node.body), assigns(node.orelse))
            names = sorted({s.targets[0].id for s in [*kept.body, *kept.orelse]})  # type: ignore[attr-defined]
            if not names:
                return node
            return _ag_if_call(ast.copy_location(kept, node), names)  # the rest is dropped

    return Mistake().visit(tree)


def test_ch10_if_to_ag_if_rejects_dropping_statements() -> None:
    chapter = SimpleNamespace(if_to_ag_if=_if_to_ag_if_dropping_statements)
    with pytest.raises(AssertionError, match="the other ifs left as they are"):
        test_ch10.test_if_to_ag_if_leaves_the_other_ifs_whole(chapter)


# --- chapter 13: a fused loop by hand -------------------------------------------------------------
def _fuse_by_pasting_text(ops):  # type: ignore[no-untyped-def]
    expression = "x[i]"
    for op in ops:  # no parentheses: Relu then Square reads "... else 0 * x[i] if ..."
        expression = ELEMENTWISE[op].format(expression)
    return f"def fused(x, out):\n    for i in range(len(x)):\n        out[i] = {expression}\n"


def _fuse_in_reverse(ops):  # type: ignore[no-untyped-def]
    lines = ["def fused(x, out):", "    for i in range(len(x)):", "        v = x[i]"]
    lines += [f"        v = {ELEMENTWISE[op].format('v')}" for op in reversed(ops)]
    return "\n".join([*lines, "        out[i] = v"]) + "\n"


def _one_loop_per_op(ops):  # type: ignore[no-untyped-def]
    lines = ["def fused(x, out):", "    out[:] = x"]
    for op in ops:  # right values, but every op another pass over the whole array
        lines += ["    for i in range(len(x)):",
                  f"        out[i] = {ELEMENTWISE[op].format('out[i]')}"]  # fmt: skip
    return "\n".join(lines) + "\n"


_NUMPY = {"Neg": "np.negative", "Abs": "np.abs", "Square": "np.square", "Exp": "np.exp",
          "Relu": "(lambda a: np.maximum(a, 0))"}  # fmt: skip


def _whole_arrays_with_numpy(ops):  # type: ignore[no-untyped-def]
    expression = "x"
    for op in ops:  # one NumPy call per op: an array per op, no loop
        expression = f"{_NUMPY[op]}({expression})"
    return f"def fused(x, out):\n    out[:] = {expression}\n"


@pytest.mark.parametrize(
    ("mistake", "ops", "message"),
    [
        (_fuse_by_pasting_text, ["Relu", "Square"], "differs from its ops"),
        (_fuse_in_reverse, ["Neg", "Relu"], "differs from its ops"),
        (_one_loop_per_op, None, "has 4"),
        (_whole_arrays_with_numpy, None, "has 0"),
    ],
    ids=["text_pasted_without_parentheses", "ops_in_reverse", "a_loop_per_op", "numpy_calls"],
)
def test_ch13_fuse_unary_chain_rejects(mistake, ops, message) -> None:  # type: ignore[no-untyped-def]
    chapter = SimpleNamespace(fuse_unary_chain=mistake)
    with pytest.raises(AssertionError, match=message):
        if ops is None:
            test_ch13.test_fuse_unary_chain_is_one_loop_that_allocates_no_array(chapter)
        else:
            test_ch13.test_fuse_unary_chain_on_hidden_chains(chapter, ops)


# --- chapter 13: clustering by hand ---------------------------------------------------------------
def _clusters_with(  # type: ignore[no-untyped-def]
    program,
    reductions_end_chains=True,
    writes_seal=True,
    outside_readers_seal=True,
    by_domain=True,
    drop_single_ops=True,
):
    """The rules of predict_clusters, each of which a mistake can forget."""
    made_by, open_by_domain, clusters = {}, {}, []
    previous = None  # the cluster the previous node joined (for the "consecutive" mistake)
    for node in program.nodes:
        domain = domain_of(node, program)
        sources = [made_by[v] for v in node.inputs if v in made_by]
        if domain is None:
            if outside_readers_seal:
                for cluster in sources:
                    cluster["sealed"] = True
            op = node.operation.op_def
            if writes_seal and op.stateful and not op.reads_state:
                for cluster in clusters:
                    cluster["sealed"] = True
            previous = None
            continue
        for v in node.inputs:
            cluster = made_by.get(v)
            if cluster is not None and (
                cluster["domain"] != domain or (reductions_end_chains and v in cluster["reduced"])
            ):
                cluster["sealed"] = True
        cluster = open_by_domain.get(domain) if by_domain else previous
        if cluster is None or cluster["sealed"] or cluster["domain"] != domain:
            cluster = {"domain": domain, "names": [], "reduced": set(), "sealed": False}
            clusters.append(cluster)
            open_by_domain[domain] = cluster
        cluster["names"].append(node.operation.name)
        previous = cluster
        for v in node.outputs:
            made_by[v] = cluster
            if node.type in REDUCTIONS:
                cluster["reduced"].add(v)
    return [c["names"] for c in clusters
            if not drop_single_ops or len(c["names"]) > 1 or c["reduced"]]  # fmt: skip


@pytest.mark.parametrize(
    ("rule", "program"),
    [
        ("reductions_end_chains", "layer_norm"),
        ("writes_seal", "write_between"),
        ("outside_readers_seal", "read_from_outside"),
        ("by_domain", "two_domains"),
        ("drop_single_ops", "lone_ops"),
    ],
)
def test_ch13_predict_clusters_rejects_forgetting(rule, program) -> None:  # type: ignore[no-untyped-def]
    def mistake(p):  # type: ignore[no-untyped-def]
        return _clusters_with(p, **{rule: False})

    chapter = SimpleNamespace(predict_clusters=mistake)
    test_ch13.test_predict_clusters_agrees_with_the_compiler(  # the rules together pass
        SimpleNamespace(predict_clusters=_clusters_with), program
    )
    with pytest.raises(AssertionError, match="expected the clusters"):
        test_ch13.test_predict_clusters_agrees_with_the_compiler(chapter, program)


def _clusters_of_the_compiler(program):  # type: ignore[no-untyped-def]
    units = compiler_fusion.find_clusters(program)  # gamed: the compiler's own pass
    return [[n.operation.name for n in u.nodes] for u in units if isinstance(u, Cluster)]


def _clusters_of_a_compiled_plan(program):  # type: ignore[no-untyped-def]
    units = compiler_program.find_clusters(program)  # gamed: the same, where the compiler calls it
    return [[n.operation.name for n in u.nodes] for u in units if isinstance(u, Cluster)]


@pytest.mark.parametrize(
    ("mistake", "program"),
    [(_clusters_of_the_compiler, "layer_norm"), (_clusters_of_a_compiled_plan, "two_domains")],
    ids=["find_clusters", "find_clusters_of_the_compilers_program"],
)
def test_ch13_predict_clusters_rejects_the_compilers_pass(mistake, program) -> None:  # type: ignore[no-untyped-def]
    chapter = SimpleNamespace(predict_clusters=mistake)
    message = (
        "predict_clusters: this exercise asks you to build the compiler's clustering yourself: "
        "calling eagerflow.graph.compiler.fusion.find_clusters is not allowed"
    )
    with pytest.raises(AssertionError, match=message):
        test_ch13.test_predict_clusters_agrees_with_the_compiler(chapter, program)


def test_ch13_predict_clusters_rejects_a_constant_answer() -> None:
    answer = test_ch13.real_clusters(test_ch13.regression_program())
    chapter = SimpleNamespace(predict_clusters=lambda program: [list(c) for c in answer])
    test_ch13.test_predict_clusters_on_the_chapters_training_step(chapter)  # it fits here
    with pytest.raises(AssertionError, match=r"expected the clusters|in program order"):
        test_ch13.test_predict_clusters_agrees_with_the_compiler(chapter, "layer_norm")


# --- chapter 13: the memory planner (stretch) -----------------------------------------------------
def _plan_buffers(program, kind=None, free_first=False, fetched_live=True, free_at="last"):  # type: ignore[no-untyped-def]
    """A memory planner, wrong in the way its arguments say."""

    def key(v):  # type: ignore[no-untyped-def]
        return (program.shapes[v], program.dtypes[v]) if kind is None else kind(program, v)

    ends: dict[int, list[int]] = {}
    seen: dict[int, int] = {}
    for step, node in enumerate(program.nodes):
        for v in node.inputs:
            if free_at == "last" or v not in seen:
                seen[v] = step
    for v in program.fetches if fetched_live else ():
        seen[v] = len(program.nodes)
    for v, step in seen.items():
        ends.setdefault(step, []).append(v)
    free: dict[object, list[int]] = {}
    plan: dict[int, int] = {}
    for step, node in enumerate(program.nodes):
        freed = [v for v in ends.get(step, []) if v in plan]
        if free_first:  # the node's outputs may take the buffers of its own inputs: wrong
            for v in freed:
                free.setdefault(key(v), []).append(plan[v])
        for v in node.outputs:
            pool = free.get(key(v))
            plan[v] = pool.pop() if pool else len(set(plan.values()))
            if v not in seen:  # never read: free at once
                free.setdefault(key(v), []).append(plan[v])
        if not free_first:
            for v in freed:
                free.setdefault(key(v), []).append(plan[v])
    return plan


def _a_buffer_per_value(program):  # type: ignore[no-untyped-def]
    return {v: v for node in program.nodes for v in node.outputs}


@pytest.mark.parametrize(
    ("mistake", "program", "message"),
    [
        (_a_buffer_per_value, "chain_1", "suffice"),
        (lambda p: _plan_buffers(p, kind=lambda p, v: p.shapes[v]), "chain_0", "bool"),
        (lambda p: _plan_buffers(p, kind=lambda p, v: "any"), "two_shapes", "share buffer"),
        (lambda p: _plan_buffers(p, free_first=True), "chain_2", "both are alive"),
        (lambda p: _plan_buffers(p, fetched_live=False), "layer_norm", "both are alive"),
        (lambda p: _plan_buffers(p, free_at="first"), "two_shapes", "both are alive"),
    ],
    ids=["no_sharing", "ignoring_dtypes", "ignoring_shapes", "outputs_take_inputs_buffers",
         "fetched_values_freed", "freed_at_the_first_read"],
)  # fmt: skip
def test_ch13_plan_buffers_rejects(mistake, program, message) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch13.test_plan_buffers_on_hidden_programs, message, program,
            plan_buffers=mistake)  # fmt: skip


def test_ch13_plan_buffers_mistakes_pass_the_tests_own_check_of_the_solution() -> None:
    # the planner above, with no mistake switched on, is a right answer: the mistakes are
    # the switches, not the planner
    for name in test_ch13.HIDDEN_BUFFER_PROGRAMS:
        test_ch13.test_plan_buffers_on_hidden_programs(
            SimpleNamespace(plan_buffers=_plan_buffers), name
        )


# --- chapter 14: attributes as JSON ---------------------------------------------------------------
def _encoder(  # type: ignore[no-untyped-def]
    specials_as_strings=True, bytes_not_digits=True, bool_first=True, lists_marked=True
):
    """An encode_attr with the chapter's format, each rule of which a mistake can forget."""

    def encode(value):  # type: ignore[no-untyped-def]
        if value is None or isinstance(value, str):
            return value
        if bool_first and isinstance(value, bool):
            return value
        if isinstance(value, int):
            return int(value)  # True becomes 1 when bools are not tested first
        if isinstance(value, float):
            return (
                value if math.isfinite(value) or not specials_as_strings else {"float": repr(value)}
            )
        if isinstance(value, tuple):
            return [encode(v) for v in value]
        if isinstance(value, list):
            return (
                {"list": [encode(v) for v in value]} if lists_marked else [encode(v) for v in value]
            )
        if isinstance(value, DType):
            return {"dtype": value.name}
        if isinstance(value, np.ndarray):
            entry = {"dtype": value.dtype.name, "shape": list(value.shape)}
            if bytes_not_digits:
                little = value.astype(value.dtype.newbyteorder("<"))
                return {"tensor": {**entry, "base64": base64.b64encode(little.tobytes()).decode()}}
            return {"tensor": {**entry, "values": value.tolist()}}  # digits: NaN payloads lost
        raise TypeError(type(value).__name__)

    return encode


def _decode_values_or_bytes(data):  # type: ignore[no-untyped-def]
    if isinstance(data, dict) and "tensor" in data and "values" in data["tensor"]:
        return np.array(data["tensor"]["values"], data["tensor"]["dtype"])
    if isinstance(data, list):
        return tuple(_decode_values_or_bytes(v) for v in data)
    if isinstance(data, dict) and "list" in data:
        return [_decode_values_or_bytes(v) for v in data["list"]]
    return decode_attr(data)


@pytest.mark.parametrize(
    ("rule", "value", "message"),
    [
        ("specials_as_strings", "nan", "not strict JSON"),
        ("bytes_not_digits", "nan payloads", "not strict JSON"),
        ("bytes_not_digits", "int64 extremes", "cannot read your encoding"),
        ("bool_first", "bool is not int", "not v, bit for bit"),
        ("lists_marked", "list is not tuple", "not v, bit for bit"),
    ],
)
def test_ch14_encode_attr_rejects_forgetting(rule, value, message) -> None:  # type: ignore[no-untyped-def]
    right = SimpleNamespace(encode_attr=_encoder(), decode_attr=_decode_values_or_bytes)
    test = (test_ch14.test_the_chapters_format_both_ways if "read" in message
            else test_ch14.test_round_trip_on_hidden_values)  # fmt: skip
    test(right, value)  # the rules together pass
    chapter = SimpleNamespace(
        encode_attr=_encoder(**{rule: False}), decode_attr=_decode_values_or_bytes
    )
    with pytest.raises(AssertionError, match=message):
        test(chapter, value)


def _exercise_module(monkeypatch, **names):  # type: ignore[no-untyped-def]
    """A module holding ``names`` as a reader's exercise file would: the tests' refusals
    find a ready-made function it re-exports (`encode_attr = graph_def.encode_attr`)."""
    module = ModuleType("eagerflow_exercises_planted")
    vars(module).update(names)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


@pytest.mark.parametrize(
    ("mine", "test", "refused"),
    [
        ({"encode_attr": encode_attr, "decode_attr": decode_attr}, "round_trip_on_hidden_values",
         "encode_attr"),
        ({"encode_attr": _encoder(), "decode_attr": decode_attr}, "the_chapters_format_both_ways",
         "decode_attr"),
    ],
    ids=["both_re_exported", "decode_attr_re_exported"],
)  # fmt: skip
def test_ch14_encode_attr_rejects_the_chapters_own(mine, test, refused, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    chapter = _exercise_module(monkeypatch, **mine)  # gamed: the chapter's functions, re-exported
    message = (
        "encode_attr and decode_attr: this exercise asks you to build the encoder yourself: "
        f"calling eagerflow.graph.export.graph_def.{refused} is not allowed"
    )
    with pytest.raises(AssertionError, match=message):
        getattr(test_ch14, f"test_{test}")(chapter, "nan payloads")


def test_ch14_decode_attr_rejects_a_read_only_view() -> None:
    def view(data):  # type: ignore[no-untyped-def]
        if isinstance(data, dict) and "tensor" in data:
            entry = data["tensor"]
            raw = base64.b64decode(entry["base64"])
            return np.frombuffer(raw, entry["dtype"]).reshape(entry["shape"])  # read-only
        return decode_attr(data)

    chapter = SimpleNamespace(encode_attr=encode_attr, decode_attr=view)
    with pytest.raises(AssertionError, match="writable"):
        test_ch14.test_round_trip_on_hidden_values(chapter, "uint8")


# --- chapter 14: a saved function that reports its calls ------------------------------------------
def _square_printing_with_python():  # type: ignore[no-untyped-def]
    @function(input_signature=[TensorSpec((None,), ef.float32)])
    def square(x):  # type: ignore[no-untyped-def]
        y = x * x
        print("squares:", y)  # runs while tracing, once: the loaded function never prints
        return y

    return square


def _square_reporting_its_input():  # type: ignore[no-untyped-def]
    @function(input_signature=[TensorSpec((None,), ef.float32)])
    def square(x):  # type: ignore[no-untyped-def]
        ef.print("squares:", x)
        return x * x

    return square


def _square_without_a_signature():  # type: ignore[no-untyped-def]
    @function
    def square(x):  # type: ignore[no-untyped-def]
        y = x * x
        ef.print("squares:", y)
        return y

    return square


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_square_printing_with_python, "printed ''"),
        (_square_reporting_its_input, "expected 'squares: "),
        (_square_without_a_signature, "refused your function"),
    ],
    ids=["python_print", "prints_the_input", "no_input_signature"],
)
def test_ch14_reporting_square_rejects(mistake, message, tmp_path) -> None:  # type: ignore[no-untyped-def]
    chapter = SimpleNamespace(reporting_square=mistake)
    with pytest.raises(AssertionError, match=message):
        test_ch14.test_the_loaded_function_reports_every_call(chapter, tmp_path)


# --- chapter 14: a GraphDef as NumPy source (stretch) ---------------------------------------------
_NUMPY_RULES = {
    "AddV2": "{0} + {1}", "Sub": "{0} - {1}", "Mul": "{0} * {1}", "RealDiv": "{0} / {1}",
    "Maximum": "np.maximum({0}, {1})", "Neg": "-{0}", "Square": "np.square({0})",
    "Exp": "np.exp({0})", "Log": "np.log({0})", "Tanh": "np.tanh({0})",
    "Relu": "np.maximum({0}, 0)", "Reshape": "np.reshape({0}, {shape!r})",
    "Transpose": "np.transpose({0}, {perm!r})",
    "Sum": "np.sum({0}, axis={axis!r}, keepdims={keepdims!r})",
    "Mean": "np.mean({0}, axis={axis!r}, keepdims={keepdims!r})",
}  # fmt: skip


def _numpy_source(graph_def, fetches, const_dtype=True, transposes=True, inline=False,  # type: ignore[no-untyped-def]
                  keepdims=True, feed_dtype=""):  # fmt: skip
    """numpy_source, wrong in the way its arguments say."""
    lines, names = ["def run(feeds):"], {}
    for k, node in enumerate(graph_def["node"]):
        attrs = {key: decode_attr(value) for key, value in node.get("attr", {}).items()}
        args = [names[t] for t in node.get("input", [])]
        if node["op"] == "Placeholder":
            expression = f"np.asarray(feeds[{node['name']!r}]{feed_dtype})"
        elif node["op"] == "Const":
            dtype = f", {attrs['value'].dtype.name!r}" if const_dtype else ""
            expression = f"np.array({attrs['value'].tolist()!r}{dtype})"
        elif node["op"] == "MatMul":
            a, b = args
            if transposes and attrs["transpose_a"]:
                a = f"np.swapaxes({a}, -1, -2)"
            if transposes and attrs["transpose_b"]:
                b = f"np.swapaxes({b}, -1, -2)"
            expression = f"np.matmul({a}, {b})"
        else:
            if not keepdims:
                attrs["keepdims"] = False
            expression = _NUMPY_RULES[node["op"]].format(*args, **attrs)
        if inline:  # text pasted into text: "a + b" times c reads "a + b * c"
            names[f"{node['name']}:0"] = expression
        else:
            lines.append(f"    v{k} = {expression}")
            names[f"{node['name']}:0"] = f"v{k}"
    lines.append(f"    return [{', '.join(names[f] for f in fetches)}]")
    return "\n".join(lines) + "\n"


def _numpy_source_with_eagerflow(graph_def, fetches):  # type: ignore[no-untyped-def]
    return (
        "import json\n"
        "from eagerflow.graph import Graph, Session, import_graph_def\n"
        "def run(feeds):\n"
        "    graph = Graph()\n"
        "    with graph.as_default():\n"
        f"        tensors = import_graph_def({graph_def!r}, return_elements={list(fetches)!r})\n"
        "    with Session(graph) as session:\n"
        "        return session.run(tensors, {f'import/{k}:0': v for k, v in feeds.items()})\n"
    )  # eagerflow does the work: not an exporter


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_numpy_source_with_eagerflow, "imports 'json'|imports 'eagerflow"),
        (lambda d, f: _numpy_source(d, f, const_dtype=False), "expected float32 .* got float64"),
        (lambda d, f: _numpy_source(d, f, transposes=False), "raised ValueError"),
        (lambda d, f: _numpy_source(d, f, inline=True), "Mismatched"),
        (lambda d, f: _numpy_source(d, f, keepdims=False), "of shape"),
        (lambda d, f: _numpy_source(d, f, feed_dtype=", np.float64"), "got float64"),
    ],
    ids=["imports_eagerflow", "constants_as_float64", "transposes_ignored", "text_pasted",
         "keepdims_ignored", "feeds_as_float64"],
)  # fmt: skip
def test_ch14_numpy_source_rejects(mistake, message) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch14.test_numpy_source_on_hidden_networks, message, 0, numpy_source=mistake)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_ch14_numpy_source_rejects_constants_written_by_repr() -> None:
    # _numpy_source writes np.array([inf, nan], ...): names that the source does not define
    rejects(test_ch14.test_numpy_source_of_constants_that_are_not_finite,
            "name 'inf' is not defined", numpy_source=_numpy_source)  # fmt: skip


def test_ch14_numpy_source_planted_mistakes_are_mistakes() -> None:
    # the translator above, with no mistake switched on, passes: the switches are the mistakes
    test_ch14.test_numpy_source_on_hidden_networks(SimpleNamespace(numpy_source=_numpy_source), 0)


# --- chapter 16: convolutions and pooling by hand -------------------------------------------------
def _conv_loops(images, filters, flip=False, shrink=0, dtype=None):  # type: ignore[no-untyped-def]
    batch, height, width, _ = images.shape
    kh, kw, _, out_channels = filters.shape
    if flip:  # a textbook convolution: the filter rotated by 180 degrees
        filters = filters[::-1, ::-1]
    oh, ow = height - kh + 1 - shrink, width - kw + 1 - shrink
    out = np.zeros((batch, oh, ow, out_channels), dtype or images.dtype)
    for n in range(batch):
        for i in range(oh):
            for j in range(ow):
                for o in range(out_channels):
                    out[n, i, j, o] = np.sum(images[n, i : i + kh, j : j + kw, :] * filters[..., o])
    return out


def _conv_with_eagerflow(images, filters):  # type: ignore[no-untyped-def]
    return ef.nn.conv2d(images, filters, strides=1, padding="VALID").numpy()


def _im2col_without_transpose(images, filters):  # type: ignore[no-untyped-def]
    kh, kw, _, out_channels = filters.shape
    windows = np.lib.stride_tricks.sliding_window_view(images, (kh, kw), axis=(1, 2))
    batch, oh, ow = windows.shape[:3]
    rows = windows.reshape(batch * oh * ow, -1)  # (c, kh, kw) order against (kh, kw, c)
    return (rows @ filters.reshape(-1, out_channels)).reshape(batch, oh, ow, out_channels)


@pytest.mark.parametrize(
    ("mistake", "test", "message"),
    [
        (lambda x, f: _conv_loops(x, f, flip=True), "does_not_flip_the_filter", "rotated"),
        (lambda x, f: _conv_loops(x, f, shrink=1), "matches_conv2d_on_hidden_inputs",
         "expected shape"),
        (lambda x, f: _conv_loops(x, f, dtype=np.float64), "matches_conv2d_on_hidden_inputs",
         "expected dtype float32"),
        (_conv_with_eagerflow, "matches_conv2d_on_hidden_inputs", "ran eagerflow ops"),
    ],
    ids=["flipped_filter", "one_row_short", "always_float64", "calls_conv2d"],
)  # fmt: skip
def test_ch16_conv2d_loops_rejects(mistake, test, message) -> None:  # type: ignore[no-untyped-def]
    chapter = SimpleNamespace(conv2d_loops=mistake)
    with pytest.raises(AssertionError, match=message):
        getattr(test_ch16, f"test_conv2d_loops_{test}")(chapter)


@pytest.mark.parametrize(
    ("mistake", "test", "message"),
    [
        (_im2col_without_transpose, "matches_conv2d_on_hidden_inputs", "Not equal"),
        (_conv_loops, "runs_no_python_loop", "a loop is still"),
        (_conv_with_eagerflow, "matches_conv2d_on_hidden_inputs", "ran eagerflow ops"),
    ],
    ids=["rows_in_the_wrong_order", "loops", "calls_conv2d"],
)
def test_ch16_conv2d_im2col_rejects(mistake, test, message) -> None:  # type: ignore[no-untyped-def]
    chapter = SimpleNamespace(conv2d_im2col=mistake)
    with pytest.raises(AssertionError, match=message):
        getattr(test_ch16, f"test_conv2d_im2col_{test}")(chapter)


def _avg_grad(upstream, input_shape, pool, stride, add=True, scale=True, step=None):  # type: ignore[no-untyped-def]
    dx = np.zeros(input_shape, upstream.dtype)
    step = stride if step is None else step
    for i in range(upstream.shape[1]):
        for j in range(upstream.shape[2]):
            share = upstream[:, i : i + 1, j : j + 1, :] / (pool**2 if scale else 1)
            window = (slice(None), slice(i * step, i * step + pool),
                      slice(j * step, j * step + pool), slice(None))  # fmt: skip
            if add:
                dx[window] += share
            else:  # a later window overwrites what an earlier one sent
                dx[window] = share
    return dx


def _avg_grad_with_a_tape(upstream, input_shape, pool, stride):  # type: ignore[no-untyped-def]
    x = np.zeros(input_shape, upstream.dtype)
    return test_ch16.tape_gradient(x, upstream, pool, stride)


@pytest.mark.parametrize(
    "mistake",
    [
        lambda u, s, p, st: _avg_grad(u, s, p, st, add=False),
        lambda u, s, p, st: _avg_grad(u, s, p, st, scale=False),
        lambda u, s, p, st: _avg_grad(u, s, p, st, step=p),
        _avg_grad_with_a_tape,
    ],
    ids=["assigns_instead_of_adding", "no_division_by_pool_squared", "steps_by_the_pool",
         "uses_a_tape"],
)  # fmt: skip
def test_ch16_avg_pool2d_grad_rejects(mistake) -> None:  # type: ignore[no-untyped-def]
    chapter = SimpleNamespace(avg_pool2d_grad=mistake)
    failures = 0
    for pool, stride in test_ch16.POOLS:
        try:
            test_ch16.test_avg_pool2d_grad_matches_a_tape_on_hidden_inputs(chapter, pool, stride)
        except AssertionError:
            failures += 1
    assert failures, "every (pool, stride) case accepted the mistake"


# --- chapter 16: batch normalization's gradient (stretch) -----------------------------------------
def _bn_grad(x, gamma, upstream, epsilon, mean_path=True, variance_path=True, axes=None,
             ddof=0, dgamma_of_x=False):  # type: ignore[no-untyped-def]  # fmt: skip
    """The reference formula, with one part forgotten or changed."""
    axes = tuple(range(x.ndim - 1)) if axes is None else axes
    m = np.prod([x.shape[a] for a in axes])
    centred = x - x.mean(axis=axes, keepdims=True)
    r = 1.0 / np.sqrt((centred**2).sum(axis=axes, keepdims=True) / (m - ddof) + epsilon)
    x_hat, g = centred * r, upstream * gamma
    dx = g - (g.mean(axis=axes, keepdims=True) if mean_path else 0)
    if variance_path:
        dx = dx - x_hat * (g * x_hat).mean(axis=axes, keepdims=True)
    dgamma = (upstream * (x if dgamma_of_x else x_hat)).sum(axis=tuple(range(x.ndim - 1)))
    dbeta = upstream.sum(axis=tuple(range(x.ndim - 1)))
    return tuple(a.astype(x.dtype) for a in (r * dx, dgamma, dbeta))


def _bn_grad_with_a_tape(x, gamma, upstream, epsilon):  # type: ignore[no-untyped-def]
    return tuple(test_ch16.layer_gradients(x, gamma, upstream, epsilon))


def _bn_grad_channel_by_channel(x, gamma, upstream, epsilon):  # type: ignore[no-untyped-def]
    parts = [_bn_grad(x[..., c : c + 1], gamma[c : c + 1], upstream[..., c : c + 1], epsilon)
             for c in range(x.shape[-1])]  # fmt: skip
    return tuple(np.concatenate(p, axis=-1) for p in zip(*parts, strict=True))


@pytest.mark.parametrize(
    ("mistake", "test", "message"),
    [
        (lambda *a: _bn_grad(*a, mean_path=False, variance_path=False), "matches_a_tape",
         "dx, against a tape"),
        (lambda *a: _bn_grad(*a, variance_path=False), "matches_a_tape", "dx, against a tape"),
        (lambda *a: _bn_grad(*a, mean_path=False), "matches_a_tape", "dx, against a tape"),
        (lambda *a: _bn_grad(*a, axes=(0,)), "matches_a_tape", "against a tape"),
        (lambda *a: _bn_grad(*a, ddof=1), "matches_a_tape", "dx, against a tape"),
        (lambda *a: _bn_grad(*a, dgamma_of_x=True), "matches_a_tape", "dgamma, against a tape"),
        (_bn_grad_with_a_tape, "matches_a_tape", "ran eagerflow ops"),
        (_bn_grad_channel_by_channel, "runs_no_python_loop", "a loop is still there"),
    ],
    ids=["statistics_held_fixed", "no_path_through_the_variance", "no_path_through_the_mean",
         "statistics_per_pixel", "unbiased_variance", "dgamma_from_x", "uses_a_tape",
         "loops_over_channels"],
)  # fmt: skip
def test_ch16_batch_norm_grad_rejects(mistake, test, message) -> None:  # type: ignore[no-untyped-def]
    test_fn = getattr(test_ch16, f"test_batch_norm_grad_stretch_{test}" + (
        "_on_hidden_inputs" if test == "matches_a_tape" else ""))  # fmt: skip
    rejects(test_fn, message, batch_norm_grad=mistake)


# --- chapter 17: early stopping (stretch) ---------------------------------------------------------
def _early_stopping(xt, yt, xv, yv, degree, lr, max_steps, patience, keep_last=False,
                    wait=None):  # type: ignore[no-untyped-def]  # fmt: skip
    train, val = xt[:, None] ** np.arange(degree + 1), xv[:, None] ** np.arange(degree + 1)
    w = Variable(ef.zeros((degree + 1,), ef.float64))
    best, best_w, best_step, t = np.mean((val @ w.numpy() - yv) ** 2), w.numpy(), 0, 0
    for t in range(1, max_steps + 1):
        with GradientTape() as tape:
            loss = ef.reduce_mean(ef.square(ef.reduce_sum(ef.constant(train) * w, axis=1) - yt))
        w.assign_sub(lr * tape.gradient(loss, w))
        current = np.mean((val @ w.numpy() - yv) ** 2)
        if current < best:
            best, best_w, best_step = current, w.numpy(), t
        elif t - best_step >= (wait or patience):
            break
    return (w.numpy() if keep_last else best_w), best_step, t


def _early_stopping_in_closed_form(xt, yt, xv, yv, degree, lr, max_steps, patience):  # type: ignore[no-untyped-def]
    features = xt[:, None] ** np.arange(degree + 1)
    w = np.linalg.lstsq(features, yt, rcond=None)[0]  # gamed: the exact fit, no training
    return w, max_steps, max_steps


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (lambda *case: _early_stopping(*case, keep_last=True), "the weights of the best step"),
        (lambda *case: _early_stopping(*case, wait=1), "expected best step"),
        (_early_stopping_in_closed_form, "expected best step"),
    ],
    ids=["last_weights", "no_patience", "closed_form"],
)
def test_ch17_early_stopping_rejects(mistake, message, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch17.test_early_stopping_stretch_on_hidden_data, message, monkeypatch,
            early_stopping=mistake)  # fmt: skip


# --- dtypes: a class index, least squares ---------------------------------------------------------
def _fizzbuzz_class_in_int64(n):  # type: ignore[no-untyped-def]
    def multiple_of(k):  # type: ignore[no-untyped-def]
        return ef.equal(ef.floormod(n, k), 0)

    def c(k):  # type: ignore[no-untyped-def]
        return lambda: ef.constant(k, ef.int64)  # the right numbers, in int64

    return cond(multiple_of(15), c(3), lambda: cond(
        multiple_of(5), c(2), lambda: cond(multiple_of(3), c(1), c(0))))  # fmt: skip


def test_ch15_fizzbuzz_class_rejects_an_int64_class() -> None:
    rejects(test_ch15.test_fizzbuzz_class_on_hidden_numbers, "int32 scalar",
            fizzbuzz_class=_fizzbuzz_class_in_int64)  # fmt: skip


def _least_squares_in_float32(x, y):  # type: ignore[no-untyped-def]
    x, y = np.asarray(x, np.float32), np.asarray(y, np.float32)  # the hint said float64
    dx, dy = x - x.mean(), y - y.mean()
    w = float(np.mean(dx * dy) / np.mean(dx * dx))
    return w, float(y.mean() - w * x.mean())


def test_ch17_least_squares_rejects_float32() -> None:
    test_ch17.test_least_squares_on_hidden_data(  # it passes the tests of values that float32 fits
        SimpleNamespace(least_squares=_least_squares_in_float32)
    )
    rejects(test_ch17.test_least_squares_works_in_float64, "compute in float64",
            least_squares=_least_squares_in_float32)  # fmt: skip


# --- how a mistake is run -------------------------------------------------------------------------
FAILED = (AssertionError, pytest.fail.Exception)


def rejects(test: Callable[..., object], match: str, *args: object, **exercises: object) -> None:
    """``test`` (a chapter's test function) fails on a chapter made of ``exercises``."""
    with pytest.raises(FAILED, match=match):
        test(SimpleNamespace(**exercises), *args)


# --- chapter 2: a profiler (stretch) --------------------------------------------------------------
def _profile_by_gaps(fn, *args):  # type: ignore[no-untyped-def]
    profile, last = {}, [time.perf_counter()]

    class Gaps:  # the time since the previous op: the Python in between counts too
        def record(self, op, inputs, attrs, outputs):
            now = time.perf_counter()
            calls, total = profile.get(op.name, (0, 0.0))
            profile[op.name] = (calls + 1, total + now - last[0])
            last[0] = now

    with test_ch02.recording(Gaps()):
        result = fn(*args)
    return result, profile


def _profile_by_running_again(fn, *args):  # type: ignore[no-untyped-def]
    profile = {}

    class Again:  # times a second run of each kernel
        def record(self, op, inputs, attrs, outputs):
            start = time.perf_counter()
            op.kernel(*(np.asarray(t) for t in inputs), **attrs)
            calls, total = profile.get(op.name, (0, 0.0))
            profile[op.name] = (calls + 1, total + time.perf_counter() - start)

    with test_ch02.recording(Again()):
        result = fn(*args)
    return result, profile


def _profile_of_counts(fn, *args):  # type: ignore[no-untyped-def]
    names = []

    class Names:
        def record(self, op, inputs, attrs, outputs):
            names.append(op.name)

    with test_ch02.recording(Names()):
        result = fn(*args)
    return result, {n: (names.count(n), 0.0) for n in names}  # gamed: counts, no clock


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_profile_by_gaps, "not the time between ops"),
        (_profile_by_running_again, "run each kernel once"),
        (_profile_of_counts, "SleepyIdentity's kernels took"),
    ],
    ids=["time_between_records", "kernels_run_twice", "no_clock"],
)
def test_ch02_profile_ops_rejects(mistake, message) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch02.test_profile_ops_stretch_times_kernels_on_hidden_programs, message,
            profile_ops=mistake)  # fmt: skip


# --- chapter 3: tapes -----------------------------------------------------------------------------
_LOOKUP = {1.0: 6.0, -1.0: -6.0, 0.5: -0.7268619813835873, 0.25: 4 * math.exp(0.5)}


def _second_derivative_from_a_table(f, x):
    return ef.constant(_LOOKUP.get(x, 0.0))  # the visible curves' answers, by their x


def _second_derivative_by_differences(f, x):
    h = 1e-4  # float64 central differences meet the visible tolerance, without any tape
    values = [float(f(ef.constant(x + d, ef.float64))) for d in (-h, 0.0, h)]
    return ef.constant((values[0] - 2 * values[1] + values[2]) / h**2)


def _second_derivative_with_one_tape(f, x):
    x = ef.constant(x)
    with GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)  # f', not f''


def _second_derivative_of_the_inner_tape_after_it_closed(f, x):
    x = ef.constant(x)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = f(x)
    dy = inner.gradient(y, x)  # computed after the outer tape stopped: it saw nothing
    return outer.gradient(dy, x)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_second_derivative_from_a_table, "hidden curve"),
        (_second_derivative_by_differences, "called f 3 times"),
        (_second_derivative_with_one_tape, "hidden curve"),
        (_second_derivative_of_the_inner_tape_after_it_closed, "hidden curve"),
    ],
    ids=["lookup_table", "finite_differences", "one_tape", "inner_gradient_outside_outer"],
)
def test_ch03_second_derivative_rejects(mistake, message, monkeypatch) -> None:
    test = test_ch03.test_second_derivative_on_hidden_curves_comes_from_tapes
    rejects(test, message, monkeypatch, second_derivative=mistake)


def _jacobian_with_tape_jacobian(f, x):
    with GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.jacobian(y, x)


def _jacobian_running_f_per_row(f, x):
    rows = []
    for i in range(int(f(x).shape[0])):
        with GradientTape() as tape:
            tape.watch(x)
            y = f(x)[i]
        rows.append(tape.gradient(y, x))
    return ef.stack(rows)


def _jacobian_transposed(f, x):
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
        rows = [y[i] for i in range(y.shape[0])]
    return ef.transpose(ef.stack([tape.gradient(r, x) for r in rows]))


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (
            _jacobian_with_tape_jacobian,
            "calling eagerflow.autodiff.tape.GradientTape.jacobian is not allowed",
        ),
        (_jacobian_running_f_per_row, "f ran 4 times"),
        (_jacobian_transposed, r"expected a \(3, 2\) Jacobian"),
    ],
    ids=["tape_jacobian", "f_per_row", "transposed"],
)
def test_ch03_jacobian_by_rows_rejects(mistake, message) -> None:
    test = test_ch03.test_jacobian_by_rows_on_hidden_functions_runs_f_once
    rejects(test, message, jacobian_by_rows=mistake)


def _numerical_gradient_from_a_tape(f, x, eps=1e-4):
    t = ef.constant(x)
    with GradientTape() as tape:
        tape.watch(t)
        y = f(t)
    return tape.gradient(y, t).numpy()


def _numerical_gradient_forward_differences(f, x, eps=1e-4):
    base = float(f(ef.constant(x)))
    grad = np.zeros_like(x)
    for j in range(len(x)):
        e = np.zeros_like(x)
        e[j] = eps
        grad[j] = (float(f(ef.constant(x + e))) - base) / eps
    return grad


def _numerical_gradient_nudging_x_in_place(f, x, eps=1e-4):
    grad = np.zeros_like(x)
    for j in range(len(x)):
        x[j] += eps
        up = float(f(ef.constant(x)))
        x[j] -= 2 * eps
        down = float(f(ef.constant(x)))
        x[j] += eps  # back, but not bit for bit
        grad[j] = (up - down) / (2 * eps)
    return grad


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_numerical_gradient_from_a_tape, "used a GradientTape"),
        (_numerical_gradient_forward_differences, "numerical gradient of sum"),
        (_numerical_gradient_nudging_x_in_place, "do not change x in place"),
    ],
    ids=["tape", "forward_differences", "x_changed_in_place"],
)
def test_ch03_numerical_gradient_rejects(mistake, message, monkeypatch) -> None:
    test = test_ch03.test_numerical_gradient_on_hidden_functions_without_a_tape
    rejects(test, message, monkeypatch, numerical_gradient=mistake)


# --- chapter 6: graphs and Sessions ---------------------------------------------------------------
_VISIBLE = np.array([-2.0, -0.5, 0.0, 1.0, 3.0], np.float32)


def _polynomial_graph_precomputed(coefficients):
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        y = ef.constant(np.polynomial.polynomial.polyval(_VISIBLE, coefficients), ef.float32)
    return graph, x, y  # the visible feed's answer, whatever x is


def _polynomial_graph_highest_first(coefficients):
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        y = float(coefficients[0])
        for c in coefficients[1:]:
            y = y * x + float(c)
    return graph, x, y


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_polynomial_graph_precomputed, "computed from the placeholder x"),
        (_polynomial_graph_highest_first, "the polynomial"),
    ],
    ids=["answer_as_a_constant", "coefficients_highest_first"],
)
def test_ch06_polynomial_graph_rejects(mistake, message) -> None:
    test = test_ch06.test_polynomial_graph_on_hidden_coefficients_and_feeds
    rejects(test, message, polynomial_graph=mistake)


def _order_without(fetches, fed, stop_at_fed=True, controls=True):
    """An execution order that forgets one rule or another."""
    stack = [f.op if hasattr(f, "op") else f for f in fetches]
    seen = set()
    while stack:
        operation = stack.pop()
        if operation not in seen:
            seen.add(operation)
            stack += [t.op for t in operation.inputs if not (stop_at_fed and t in fed)]
            stack += list(operation.control_inputs) if controls else []
    return [o for o in fetches[0].graph.get_operations() if o in seen]


def _order_of_the_sessions_plan(fetches, fed=()):
    return session_module._needed_operations(list(fetches), set(fed))  # gamed: ready-made


def _order_of_everything(fetches, fed=()):
    return list(fetches[0].graph.get_operations())


def _order_through_fed_tensors(fetches, fed=()):
    return _order_without(fetches, fed, stop_at_fed=False)


def _order_without_control_inputs(fetches, fed=()):
    return _order_without(fetches, fed, controls=False)


@pytest.mark.parametrize(
    ("mistake", "seed", "message"),
    [
        (_order_of_everything, 0, "expected the operations"),
        (_order_through_fed_tensors, 1, "expected the operations"),
        (_order_without_control_inputs, 4, "has the control input"),
        (
            _order_of_the_sessions_plan,
            2,
            "execution_order: this exercise asks you to build the "
            "walk back from the fetches yourself: calling eagerflow.graph.core.session."
            "_needed_operations is not allowed",
        ),
    ],
    ids=[
        "every_operation",
        "walks_past_fed_tensors",
        "forgets_control_inputs",
        "sessions_needed_operations",
    ],
)
def test_ch06_execution_order_rejects(mistake, seed, message) -> None:
    rejects(test_ch06.test_execution_order_on_hidden_graphs, message, seed, execution_order=mistake)


def _run_graph_computing_over_the_feed(fetches, feed_dict):
    graph = fetches[0].graph
    values = dict(feed_dict)
    for operation in graph.get_operations():
        if operation.type == "Placeholder" or not all(t in values for t in operation.inputs):
            continue
        op = operation.op_def
        result = op.kernel(*(values[t] for t in operation.inputs), **operation.attrs)
        values.update(zip(operation.outputs, result if op.multi_output else (result,), strict=True))
    return [values[f] for f in fetches]  # a fed intermediate is computed over


def test_ch06_run_graph_rejects_computing_over_a_fed_tensor() -> None:
    rejects(test_ch06.test_run_graph_on_hidden_graphs, "hidden graph", 1,
            run_graph=_run_graph_computing_over_the_feed)  # fmt: skip


def _run_graph_by_the_sessions_plan(fetches, feed_dict):
    return Plan(list(fetches), list(feed_dict)).run(dict(feed_dict))  # gamed: a Session's own


def test_ch06_run_graph_rejects_the_sessions_plan() -> None:
    message = "run_graph: .* calling eagerflow.graph.core.session.Plan is not allowed"
    rejects(test_ch06.test_run_graph_on_hidden_graphs, message, 1,
            run_graph=_run_graph_by_the_sessions_plan)  # fmt: skip


# --- chapter 6: a Session with a memory (stretch) -------------------------------------------------
def _needed(fetches, fed):  # type: ignore[no-untyped-def]
    """The operations fetches need, in graph order (the reader's execution_order, solved)."""
    needed = test_ch06.needed_operations(list(fetches), set(fed))
    graph = next(iter(needed)).graph
    return [o for o in graph.get_operations() if o in needed]


class _MiniSession:
    """A MiniSession, wrong in the way its class attributes say."""

    shared: dict[object, np.ndarray] | None = None  # one store for every Session: wrong
    in_place = False  # update the stored array itself, and hand it out: wrong
    snapshot = False  # every op of a run sees the values from the start of the run: wrong
    zeros_if_unset = False  # an uninitialized variable reads 0: wrong
    real_kernels = False  # run the variable kernels in the framework's store

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.values = {} if self.shared is None else self.shared

    def read(self, variable):  # type: ignore[no-untyped-def]
        values = self.start if self.snapshot else self.values
        if variable not in values:
            if not self.zeros_if_unset:
                raise ef.FailedPreconditionError(f"{variable.name} is not initialized")
            values[variable] = np.zeros(variable.shape, variable.dtype.np)
        return values[variable]

    def run(self, fetches, feed_dict=None):  # type: ignore[no-untyped-def]
        values = dict(feed_dict or {})
        self.start = dict(self.values)
        for operation in _needed(fetches, values):
            inputs = [values[t] for t in operation.inputs]
            variable, kind = operation.attrs.get("variable"), operation.type
            if self.real_kernels and variable is not None:
                with session_values(self.values):
                    result = operation.op_def.kernel(*inputs, **operation.attrs)
            elif kind in ("VariableV2", "ReadVariableOp"):
                result = self.read(variable)
            elif kind == "AssignVariableOp":
                result = self.values[variable] = inputs[0] if self.in_place else inputs[0].copy()
            elif kind in ("AssignAddVariableOp", "AssignSubVariableOp"):
                ufunc = np.add if kind == "AssignAddVariableOp" else np.subtract
                old = self.read(variable)
                result = ufunc(old, inputs[0], out=old if self.in_place else None)
                self.values[variable] = result
            else:
                result = operation.op_def.kernel(*inputs, **operation.attrs)
            results = result if operation.op_def.multi_output else (result,)
            for t, value in zip(operation.outputs, results, strict=True):
                values.setdefault(t, value)
        out = [None if isinstance(f, ef_graph.Operation) else values[f] for f in fetches]
        return out if self.in_place else [None if v is None else np.array(v) for v in out]


class _MiniSessionSharingOneStore(_MiniSession):
    shared = {}  # noqa: RUF012 (the mistake)


class _MiniSessionUpdatingInPlace(_MiniSession):
    in_place = True


class _MiniSessionReadingAtTheStart(_MiniSession):
    snapshot = True


class _MiniSessionReadingZeros(_MiniSession):
    zeros_if_unset = True


class _MiniSessionWithTheRealStore(_MiniSession):
    real_kernels = True


class _MiniSessionOfAPlan:
    def __init__(self, graph: Graph) -> None:
        self.values: dict[object, np.ndarray] = {}

    def run(self, fetches, feed_dict=None):  # type: ignore[no-untyped-def]
        feed = dict(feed_dict or {})
        with session_values(self.values):  # gamed: a Session's plan, on a store of its own
            return Plan(list(fetches), list(feed)).run(feed)


class _MiniSessionOfARealSession:
    def __init__(self, graph: Graph) -> None:
        self.values: dict[object, np.ndarray] = {}
        self.session = test_ch06.Session(graph)

    def run(self, fetches, feed_dict=None):  # type: ignore[no-untyped-def]
        return self.session.run(list(fetches), feed_dict)


@pytest.mark.parametrize(
    ("mistake", "test", "message"),
    [
        (_MiniSessionSharingOneStore, "keeps_a_running_total_per_session", "no values|second"),
        (_MiniSessionUpdatingInPlace, "values_are_its_own", "changed"),
        (_MiniSessionReadingAtTheStart, "on_hidden_run_sequences", "hidden sequence"),
        (_MiniSessionReadingZeros, "refuses_an_uninitialized_variable", "DID NOT RAISE"),
        (_MiniSessionWithTheRealStore, "on_hidden_run_sequences", "store"),
        (_MiniSessionOfARealSession, "trains_like_a_session_on_hidden_data", "Session.run"),
        (
            _MiniSessionOfAPlan,
            "on_hidden_run_sequences",
            "calling eagerflow.graph.core.session.Plan is not allowed",
        ),
    ],
    ids=[
        "one_store_for_all",
        "in_place",
        "reads_at_the_start",
        "zeros",
        "real_store",
        "session",
        "sessions_plan",
    ],
)
def test_ch06_mini_session_rejects(mistake, test, message, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    args = (0,) if test == "on_hidden_run_sequences" else ()
    rejects(getattr(test_ch06, f"test_mini_session_{test}"), message, monkeypatch, *args,
            MiniSession=mistake)  # fmt: skip


# --- chapter 13: constant folding and CSE by hand -------------------------------------------------
def _fold_constants_literally(graph):
    return {"root:0": 4.0, "scale:0": 8.0, "three:0": 3.0, "off:0": 11.0,
            "halves:0": np.array([1.0, 2.0]), "pair:0": np.array([4.0, 6.0])}  # fmt: skip


def _fold_constants_by_name(graph):
    known = {}  # the values of every op whose inputs come from ops named Const...
    for operation in graph.get_operations():
        if operation.type == "Const" or (
            operation.inputs and all(t.op.type == "Const" for t in operation.inputs)
        ):
            op = operation.op_def
            result = op.kernel(*(known[t.name] for t in operation.inputs), **operation.attrs)
            known.update(
                zip([t.name for t in operation.outputs],
                    result if op.multi_output else (result,), strict=True)
            )  # fmt: skip
    return known  # ... so no folding of folded values, and control inputs are ignored


@pytest.mark.parametrize(
    ("mistake", "message"),
    [(_fold_constants_literally, "a hidden graph"), (_fold_constants_by_name, "a hidden graph")],
    ids=["literal_dict", "one_level_only"],
)
def test_ch13_fold_constants_rejects(mistake, message) -> None:
    rejects(test_ch13.test_fold_constants_on_hidden_graphs, message, 0, fold_constants=mistake)


def _find_duplicates_literally(graph):
    names = [o.name for o in graph.get_operations() if o.type == "Const"]
    return {names[1]: names[0], "t2": "t1", "m2": "m1", "s3": "s1"}  # the visible graph's


def _find_duplicates_without_renaming(graph):
    first, duplicates = {}, {}
    for operation in graph.get_operations():
        if operation.op_def.stateful or operation.control_inputs or operation.type == "Placeholder":
            continue
        key = (operation.type, tuple(t.name for t in operation.inputs),
               repr(sorted(operation.attrs.items())))  # fmt: skip
        original = first.setdefault(key, operation)
        if original is not operation:
            duplicates[operation.name] = original.name
    return duplicates  # Tanh_1:0 * 2 is not seen to repeat Tanh:0 * 2


@pytest.mark.parametrize(
    ("mistake", "seed"),
    [(_find_duplicates_literally, 0), (_find_duplicates_without_renaming, 0)],
    ids=["literal_dict", "inputs_not_renamed"],
)
def test_ch13_find_duplicates_rejects(mistake, seed) -> None:
    test = test_ch13.test_find_duplicates_on_hidden_graphs
    rejects(test, "a hidden graph", seed, find_duplicates=mistake)


# --- chapter 15: FizzBuzz -------------------------------------------------------------------------
def _decode_literally(numbers, logits):
    return ["1", "Fizz", "Buzz", "FizzBuzz", "Fizz", "9"]  # the visible test's answer


def _decode_the_truth(numbers, logits):
    words = ("", "Fizz", "Buzz", "FizzBuzz")
    return [str(n) if test_ch15.python_class(n) == 0 else words[test_ch15.python_class(n)]
            for n in numbers]  # fmt: skip


def _decode_with_fizz_and_buzz_swapped(numbers, logits):
    classes = np.argmax(np.asarray(logits), axis=1)
    words = ("", "Buzz", "Fizz", "FizzBuzz")
    return [str(n) if c == 0 else words[c] for n, c in zip(numbers, classes, strict=True)]


@pytest.mark.parametrize(
    "mistake",
    [_decode_literally, _decode_the_truth, _decode_with_fizz_and_buzz_swapped],
    ids=["literal_list", "the_true_class", "fizz_and_buzz_swapped"],
)
def test_ch15_decode_rejects(mistake) -> None:
    rejects(test_ch15.test_decode_on_hidden_predictions, "hidden numbers", decode=mistake)


_CLASSES = {n: test_ch15.python_class(n) for n in range(1, 31)}


def _fizzbuzz_class_from_a_table(n):
    if isinstance(n, SymbolicTensorType):
        return cond(ef.equal(n % 15, 0), lambda: ef.constant(3), lambda: ef.constant(0))
    return ef.constant(_CLASSES.get(int(n), 0))


def _fizzbuzz_class_testing_3_first(n):
    return cond(
        ef.equal(n % 3, 0), lambda: ef.constant(1),
        lambda: cond(ef.equal(n % 5, 0), lambda: ef.constant(2),
                     lambda: cond(ef.equal(n % 15, 0), lambda: ef.constant(3),
                                  lambda: ef.constant(0))),
    )  # fmt: skip


@pytest.mark.parametrize(
    "mistake",
    [_fizzbuzz_class_from_a_table, _fizzbuzz_class_testing_3_first],
    ids=["table_of_1_to_30", "multiple_of_3_tested_first"],
)
def test_ch15_fizzbuzz_class_rejects(mistake) -> None:
    test = test_ch15.test_fizzbuzz_class_on_hidden_numbers
    rejects(test, "fizzbuzz_class", fizzbuzz_class=mistake)


def _binary_encode_most_significant_first(numbers, bits=10):
    numbers = ef.convert_to_tensor(numbers)
    powers = ef.constant([2 ** (bits - 1 - i) for i in range(bits)], numbers.dtype)
    digits = ef.floormod(ef.floordiv(ef.expand_dims(numbers, 1), powers), 2)
    return ef.cast(digits, ef.float32)


def _binary_encode_ten_bits_always(numbers, bits=10):
    numbers = ef.convert_to_tensor(numbers)
    powers = ef.constant([2**i for i in range(10)], numbers.dtype)
    return ef.cast(ef.floormod(ef.floordiv(ef.expand_dims(numbers, 1), powers), 2), ef.float32)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_binary_encode_most_significant_first, "least significant first"),
        (_binary_encode_ten_bits_always, r"expected a \(9, 3\) tensor"),
    ],
    ids=["most_significant_first", "bits_ignored"],
)
def test_ch15_binary_encode_rejects(mistake, message) -> None:
    rejects(test_ch15.test_binary_encode_on_hidden_numbers, message, binary_encode=mistake)


# --- chapter 15: the FizzBuzz network's weights by hand (stretch) ---------------------------------
def _fizzbuzz_weights(bits, mod3=None, mod5=None, targets=None, out_bias=(0.5, 0, 0, -0.5)):  # type: ignore[no-untyped-def]
    """The reference construction (hinges of the two digit sums), with one part changed."""
    kernels, biases, out_rows, bias = [], [], [], np.array(out_bias, float)
    for k, weigh, reads in ((3, mod3, np.eye(4)[1] + np.eye(4)[3]),
                            (5, mod5, np.eye(4)[2] + np.eye(4)[3])):  # fmt: skip
        weigh = weigh or (lambda i, k=k: (pow(2, i, k) + k // 2) % k - k // 2)
        weights = np.array([weigh(i) for i in range(bits)], float)
        lo, hi = int(weights[weights < 0].sum()), int(weights[weights > 0].sum())
        values = np.arange(lo, hi + 1)
        target = ((targets or (lambda v, k: v % k == 0))(values, k)).astype(float)
        kernels.append(np.repeat(weights[:, None], hi - lo, axis=1))
        biases.append(-np.arange(lo, hi, dtype=float))
        out_rows.append(np.outer(np.diff(np.diff(target), prepend=0.0), reads))
        bias += target[0] * reads
    return np.concatenate(kernels, 1), np.concatenate(biases), np.concatenate(out_rows), bias


def _fizzbuzz_weights_as_a_table(bits):  # type: ignore[no-untyped-def]
    numbers = np.arange(2**bits)
    digits = (numbers[:, None] >> np.arange(bits)) & 1
    kernel = (2.0 * digits - 1).T  # unit m is 1 on m's digits exactly, 0 on every other number
    bias = 1.0 - digits.sum(axis=1)
    classes = np.select([numbers % 15 == 0, numbers % 5 == 0, numbers % 3 == 0], [3, 2, 1], 0)
    return kernel, bias, np.eye(4)[classes], np.zeros(4)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_fizzbuzz_weights_as_a_table, "a table"),
        (lambda bits: _fizzbuzz_weights(bits, mod5=lambda i: 2**i), "at most 6·bits"),
        (lambda bits: _fizzbuzz_weights(bits, mod3=lambda i: 1), "numbers whose right class"),
        (lambda bits: _fizzbuzz_weights(bits, targets=lambda v, k: v == 0),
         "numbers whose right class"),
        (lambda bits: _fizzbuzz_weights(bits, out_bias=(0, 0, 0, -1)), "does not win by 0.1"),
        (lambda bits: _fizzbuzz_weights(10), "expected shapes"),
    ],
    ids=["a_unit_per_number", "mod_5_sum_is_n_itself", "decimal_digit_sum_for_3",
         "only_a_sum_of_0_is_a_multiple", "ties_for_plain_numbers", "ten_digits_always"],
)  # fmt: skip
def test_ch15_fizzbuzz_weights_rejects(mistake, message) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch15.test_fizzbuzz_weights_stretch_on_hidden_widths, message,
            fizzbuzz_weights=mistake)  # fmt: skip


# --- chapter 17: linear regression ----------------------------------------------------------------
def _train_in_graph_with_numpy(x, y, steps, learning_rate):
    w, b, losses = 5.0, 10.0, []  # right numbers, and 0 == 0 ops for 10 and 200 steps
    x, y = x.astype(np.float64), y.astype(np.float64)
    for _ in range(steps):
        error = w * x + b - y
        losses.append(float(np.mean(error**2)))
        w, b = w - learning_rate * 2 * np.mean(error * x), b - learning_rate * 2 * np.mean(error)
    return float(w), float(b), losses


def _train_in_graph_eagerly(x, y, steps, learning_rate):
    w, b, losses = Variable(5.0), Variable(10.0), []  # no graph: the ops run at every step
    for _ in range(steps):
        with GradientTape() as tape:
            loss = ef.reduce_mean(ef.square(w * x + b - y))
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(learning_rate * dw)
        b.assign_sub(learning_rate * db)
        losses.append(float(loss))
    return float(w), float(b), losses


@pytest.mark.parametrize(
    ("mistake", "test", "message"),
    [
        (_train_in_graph_with_numpy, "builds_once_and_runs_many_times", "no op at all"),
        (_train_in_graph_with_numpy, "runs_a_session_on_hidden_data", "Session.run ran 0 times"),
        (_train_in_graph_eagerly, "builds_once_and_runs_many_times", "in graph mode the ops"),
    ],
    ids=["numpy_no_ops", "numpy_no_session", "eager_loop"],
)
def test_ch17_train_in_graph_rejects(mistake, test, message, monkeypatch) -> None:
    function = getattr(test_ch17, f"test_train_in_graph_{test}")
    args = (monkeypatch,) if "session" in test else ()
    rejects(function, message, *args, train_in_graph=mistake)


def _mse_gradients_without_the_2(w, b, x, y):
    error = w * x + b - y
    return float(np.mean(error * x)), float(np.mean(error))


def _least_squares_mixing_ddof(x, y):
    x, y = x.astype(np.float64), y.astype(np.float64)
    w = np.cov(x, y)[0, 1] / np.var(x)  # np.cov divides by n - 1, np.var by n
    return float(w), float(y.mean() - w * x.mean())


def test_ch17_mse_gradients_rejects_forgetting_the_2() -> None:
    rejects(test_ch17.test_mse_gradients_on_hidden_data, "hidden points",
            mse_gradients=_mse_gradients_without_the_2)  # fmt: skip


def test_ch17_least_squares_rejects_mixing_ddof() -> None:
    rejects(test_ch17.test_least_squares_on_hidden_data, "hidden points",
            least_squares=_least_squares_mixing_ddof)  # fmt: skip


# --- chapter 11: layer normalization (stretch) ----------------------------------------------------
class _LayerNorm(nn.Layer):
    """A right layer normalization, which each mistake below changes in one place."""

    def __init__(self, epsilon=1e-3, name=None, *, input_shape=None):  # type: ignore[no-untyped-def]
        super().__init__(name, input_shape=input_shape)
        self.epsilon = epsilon

    def build(self, input_shape):  # type: ignore[no-untyped-def]
        self.gamma = self.add_weight("gamma", (input_shape[-1],), "ones")
        self.beta = self.add_weight("beta", (input_shape[-1],), "zeros")

    def compute_output_shape(self, input_shape):  # type: ignore[no-untyped-def]
        return input_shape

    def call(self, inputs):  # type: ignore[no-untyped-def]
        mean, variance = self.moments(inputs)
        return self.scale(inputs - mean, variance) * self.gamma + self.beta

    def moments(self, x):  # type: ignore[no-untyped-def]
        mean = ef.reduce_mean(x, axis=-1, keepdims=True)
        return mean, ef.reduce_mean(ef.square(x - mean), axis=-1, keepdims=True)

    def scale(self, centred, variance):  # type: ignore[no-untyped-def]
        return centred / ef.sqrt(variance + self.epsilon)


class _LayerNormOverTheBatch(_LayerNorm):
    def moments(self, x):  # type: ignore[no-untyped-def]
        mean = ef.reduce_mean(x, axis=0, keepdims=True)  # batch normalization's axis
        return mean, ef.reduce_mean(ef.square(x - mean), axis=0, keepdims=True)


class _LayerNormWithEpsilonOutsideTheRoot(_LayerNorm):
    def scale(self, centred, variance):  # type: ignore[no-untyped-def]
        return centred / (ef.sqrt(variance) + self.epsilon)


class _LayerNormWithTheUnbiasedVariance(_LayerNorm):
    def moments(self, x):  # type: ignore[no-untyped-def]
        mean, variance = super().moments(x)
        n = x.shape[-1]
        return mean, variance * (n / (n - 1))


class _LayerNormWithOnePassVariance(_LayerNorm):
    def moments(self, x):  # type: ignore[no-untyped-def]
        mean = ef.reduce_mean(x, axis=-1, keepdims=True)
        return mean, ef.reduce_mean(ef.square(x), axis=-1, keepdims=True) - ef.square(mean)


class _LayerNormWithConstantStatistics(_LayerNorm):
    def moments(self, x):  # type: ignore[no-untyped-def]
        return tuple(ef.stop_gradient(m) for m in super().moments(x))  # as if they were data


class _LayerNormFeaturesFromAxis1(_LayerNorm):
    def build(self, input_shape):  # type: ignore[no-untyped-def]
        self.gamma = self.add_weight("gamma", (input_shape[1],), "ones")
        self.beta = self.add_weight("beta", (input_shape[1],), "zeros")


class _LayerNormWithoutItsOutputShape(_LayerNorm):
    def compute_output_shape(self, input_shape):  # type: ignore[no-untyped-def]
        return nn.Layer.compute_output_shape(self, input_shape)  # raises: "does not say"


class _LayerNormCopyingGammaAndBeta(_LayerNorm):
    def call(self, inputs):  # type: ignore[no-untyped-def]
        mean, variance = self.moments(inputs)
        gamma, beta = ef.constant(self.gamma.numpy()), ef.constant(self.beta.numpy())
        return self.scale(inputs - mean, variance) * gamma + beta  # their values, not them


class _LayerNormMakingItsVariablesInCall(_LayerNorm):
    def build(self, input_shape):  # type: ignore[no-untyped-def]
        pass

    def call(self, inputs):  # type: ignore[no-untyped-def]
        super().build(inputs.shape)  # new variables at every call
        return super().call(inputs)


class _LayerNormInNumPy(_LayerNorm):
    def call(self, inputs):  # type: ignore[no-untyped-def]
        x = np.asarray(inputs, np.float64)  # right numbers, eagerly: no ops, no graph
        centred = x - x.mean(axis=-1, keepdims=True)
        scale = np.sqrt(np.square(centred).mean(axis=-1, keepdims=True) + self.epsilon)
        return ef.constant((centred / scale * self.gamma.numpy() + self.beta.numpy()), ef.float32)


@pytest.mark.parametrize(
    ("mistake", "test", "message"),
    [
        (_LayerNormInNumPy, "runs_on_a_placeholder_in_a_session", "on a placeholder"),
        (_LayerNormInNumPy, "gradients_train_it_inside_a_model", "no gradient"),
        (_LayerNormOverTheBatch, "matches_numpy_on_hidden_inputs", "over its last axis"),
        (_LayerNormWithEpsilonOutsideTheRoot, "matches_numpy_on_hidden_inputs", "epsilon"),
        (_LayerNormWithTheUnbiasedVariance, "matches_numpy_on_hidden_inputs", "the biased"),
        (_LayerNormWithOnePassVariance, "is_unmoved_by_a_large_offset", "centre first"),
        (_LayerNormWithConstantStatistics, "gradients_train_it_inside_a_model", "flows through"),
        (_LayerNormFeaturesFromAxis1, "matches_numpy_on_hidden_inputs", "one entry per feature"),
        (_LayerNormWithoutItsOutputShape, "lets_sequential_build_before_any_call", "before any"),
        (_LayerNormCopyingGammaAndBeta, "is_traced_once_and_reads_its_variables", "were assigned"),
        (_LayerNormCopyingGammaAndBeta, "gradients_train_it_inside_a_model", "no gradient"),
        (_LayerNormMakingItsVariablesInCall, "matches_numpy_on_hidden_inputs", "build should"),
    ],
    ids=["numpy_on_a_placeholder", "numpy_under_a_tape", "over_the_batch",
         "epsilon_outside_the_root", "unbiased_variance", "one_pass_variance",
         "constant_statistics", "features_from_axis_1", "no_output_shape",
         "copied_gamma_in_a_function", "copied_gamma_under_a_tape", "variables_made_in_call"],
)  # fmt: skip
def test_ch11_layer_normalization_rejects(mistake, test, message) -> None:  # type: ignore[no-untyped-def]
    test_function = getattr(test_ch11, f"test_layer_norm_{test}")
    args = [(3, 4, 7)] if test.startswith("matches") else []
    rejects(test_function, message, *args, LayerNormalization=mistake)


# --- chapter 12: a learning-rate schedule (stretch) -----------------------------------------------
class _Scheduled(nn.Optimizer):
    """A right scheduled gradient descent, which each mistake below changes in one place."""

    non_slot_names = ("step",)

    def __init__(self, peak_rate, warmup_steps, name="Scheduled"):  # type: ignore[no-untyped-def]
        super().__init__(peak_rate, name)
        self.warmup_steps = warmup_steps

    def _apply(self, grad, variable):  # type: ignore[no-untyped-def]
        return variable.assign_sub(self.rate(variable.dtype) * grad, read_value=False)

    def rate(self, dtype):  # type: ignore[no-untyped-def]
        t = ef.cast(self.step(), dtype) + 1.0
        return self.learning_rate * ef.minimum(t / self.warmup_steps,
                                               ef.sqrt(self.warmup_steps / t))  # fmt: skip

    def _finish(self):  # type: ignore[no-untyped-def]
        return [self.step().assign_add(1, read_value=False)]

    def step(self):  # type: ignore[no-untyped-def]
        return self.non_slot("step", 0)


class _ScheduledCountingInPython(_Scheduled):
    t = 0

    def rate(self, dtype):  # type: ignore[no-untyped-def]
        t, warmup = self.t + 1, self.warmup_steps
        return self.learning_rate * min(t / warmup, math.sqrt(warmup / t))  # frozen when traced

    def _finish(self):  # type: ignore[no-untyped-def]
        self.t += 1
        return []


class _ScheduledCountingPerVariable(_Scheduled):
    def _apply(self, grad, variable):  # type: ignore[no-untyped-def]
        update = super()._apply(grad, variable)
        self.step().assign_add(1)  # once per variable, not per call
        return update

    def _finish(self):  # type: ignore[no-untyped-def]
        return []


class _ScheduledFromStepZero(_Scheduled):
    def rate(self, dtype):  # type: ignore[no-untyped-def]
        t = ef.maximum(ef.cast(self.step(), dtype), 1e-6)  # the first step is step 0: rate 0
        return self.learning_rate * ef.minimum(t / self.warmup_steps,
                                               ef.sqrt(self.warmup_steps / t))  # fmt: skip


class _ScheduledDecayingAsOneOverRootT(_Scheduled):
    def rate(self, dtype):  # type: ignore[no-untyped-def]
        t = ef.cast(self.step(), dtype) + 1.0  # min(t / w, 1 / √t): not peak_rate at the peak
        return self.learning_rate * ef.minimum(t / self.warmup_steps, 1.0 / ef.sqrt(t))


class _ScheduledNotReturningTheIncrement(_Scheduled):
    def _finish(self):  # type: ignore[no-untyped-def]
        self.step().assign_add(1, read_value=False)  # a graph node nothing runs
        return []


class _ScheduledReadingTheStepAsANumber(_Scheduled):
    def rate(self, dtype):  # type: ignore[no-untyped-def]
        t, warmup = float(self.step().numpy()) + 1, self.warmup_steps
        return self.learning_rate * min(t / warmup, math.sqrt(warmup / t))


class _ScheduledWithAStepOfItsOwn(_Scheduled):
    def step(self):  # type: ignore[no-untyped-def]
        if not hasattr(self, "_count"):
            self._count = Variable(0, trainable=False)  # right, but no checkpoint sees it
        return self._count


class _ScheduledWithoutNonSlotNames(_Scheduled):
    non_slot_names = ()


@pytest.mark.parametrize(
    ("mistake", "test", "message"),
    [
        (_ScheduledCountingInPython, "builds_a_train_op_a_session_runs_many_times", "Session"),
        (_ScheduledCountingInPython, "in_a_function_traced_once", "frozen in the trace"),
        (_ScheduledCountingPerVariable, "takes_one_step_per_call_eagerly", "the same rate"),
        (_ScheduledFromStepZero, "takes_one_step_per_call_eagerly", "after step 1 "),
        (_ScheduledDecayingAsOneOverRootT, "takes_one_step_per_call_eagerly", "rate\\(2\\)"),
        (_ScheduledNotReturningTheIncrement, "builds_a_train_op_a_session_runs_many_times",
         "after step 2 "),
        (_ScheduledReadingTheStepAsANumber, "builds_a_train_op_a_session_runs_many_times",
         "no value to read"),
        (_ScheduledReadingTheStepAsANumber, "in_a_function_traced_once", "frozen in the trace"),
        (_ScheduledWithAStepOfItsOwn, "resumes_from_a_checkpoint", "one of the optimizer's"),
        (_ScheduledWithoutNonSlotNames, "resumes_from_a_checkpoint", "non_slot_names"),
    ],
    ids=["python_count_in_a_session", "python_count_in_a_function", "one_step_per_variable",
         "from_step_zero", "one_over_root_t", "increment_not_returned", "numpy_in_a_graph",
         "numpy_in_a_function", "step_of_its_own", "without_non_slot_names"],
)  # fmt: skip
def test_ch12_scheduled_gradient_descent_rejects(mistake, test, message, tmp_path) -> None:  # type: ignore[no-untyped-def]
    test_function = getattr(test_ch12, f"test_scheduled_descent_{test}")
    args = [tmp_path] if "checkpoint" in test else []
    rejects(test_function, message, *args, ScheduledGradientDescent=mistake)


class _AdagradAsItsHintSaid(nn.Optimizer):
    """Adagrad as its Hint 3 read: the last assignment returned with its read value."""

    def __init__(self, learning_rate, initial_accumulator_value=0.1, name="Adagrad"):  # type: ignore[no-untyped-def]
        super().__init__(learning_rate, name)
        self.initial_accumulator_value = float(initial_accumulator_value)

    def _apply(self, grad, variable):  # type: ignore[no-untyped-def]
        accumulator = self.slot(variable, "accumulator", initial=self.initial_accumulator_value)
        new = accumulator.assign(accumulator + ef.square(grad))
        return variable.assign_sub(self.learning_rate * grad / ef.sqrt(new))  # the Variable


def test_ch12_adagrad_rejects_returning_the_read_value() -> None:
    # right eagerly and in a graph; in a traced function the train op cannot wait for it
    chapter = SimpleNamespace(AdagradOptimizer=_AdagradAsItsHintSaid)
    test_ch12.test_adagrad_works_in_a_graph_through_minimize(chapter)
    rejects(test_ch12.test_adagrad_in_a_function_traced_once, "read_value=False",
            AdagradOptimizer=_AdagradAsItsHintSaid)  # fmt: skip


def _train_step_by_fit(model, optimizer, x, y):  # type: ignore[no-untyped-def]
    history = nn.fit(
        model,
        x,
        y,
        loss="sparse_softmax_cross_entropy",
        optimizer=optimizer,
        batch_size=len(x),
        shuffle=False,
        verbose=False,
    )  # gamed: fit, one batch
    return float(history["loss"][0])


@pytest.mark.parametrize(
    "test", ["takes_one_gradient_step_on_the_mean_loss", "builds_a_new_model_and_learns"]
)
def test_ch12_train_step_rejects_fit(test) -> None:  # type: ignore[no-untyped-def]
    message = (
        "train_step: this exercise asks you to build the training step yourself: calling "
        "eagerflow.nn.training.fit is not allowed"
    )
    rejects(getattr(test_ch12, f"test_train_step_{test}"), message, train_step=_train_step_by_fit)


# --- chapter 1: shapes, broadcasting, the registry ------------------------------------------------
def _broadcast_from_the_left(a, b):
    a, b = tuple(a) + (1,) * (len(b) - len(a)), tuple(b) + (1,) * (len(a) - len(b))
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))  # padded on the wrong side


def _broadcast_without_checking(a, b):
    rank = max(len(a), len(b))
    a, b = (1,) * (rank - len(a)) + tuple(a), (1,) * (rank - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b, strict=True))  # (3,) and (4,) give (4,)


def _broadcast_by_numpy(a, b):
    return tuple(np.broadcast_shapes(a, b))  # gamed: NumPy's rule, ready-made


def _broadcast_by_numpy_broadcast(a, b):
    return np.broadcast(np.empty(a), np.empty(b)).shape  # gamed: the same, by another name


def _broadcast_by_eagerflows_rule(a, b):
    return tuple(ef_rules.broadcast(tuple(a), tuple(b)))  # gamed: the framework's own


def _broadcast_by_adding_arrays(a, b):
    try:
        return (np.empty(a) + np.empty(b)).shape  # gamed: NumPy broadcasts two arrays
    except ValueError as error:
        raise ShapeError(str(error)) from None


def _broadcast_by_broadcast_to(a, b):
    zero = np.zeros(())  # no memory for the big shapes: zero strides, gamed all the same
    try:
        return np.broadcast_arrays(np.broadcast_to(zero, a), np.broadcast_to(zero, b))[0].shape
    except ValueError as error:
        raise ShapeError(str(error)) from None


_REFUSED_BROADCAST = "this exercise asks you to build the broadcasting rule yourself: calling"


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_broadcast_from_the_left, "broadcast_shape"),
        (_broadcast_without_checking, "ShapeError"),
        (_broadcast_by_numpy, _REFUSED_BROADCAST + " numpy.broadcast_shapes is not allowed"),
        (_broadcast_by_numpy_broadcast, _REFUSED_BROADCAST + " numpy.broadcast is not allowed"),
        (_broadcast_by_eagerflows_rule, _REFUSED_BROADCAST + " eagerflow.tensor.rules.broadcast"),
    ],
    ids=["aligned_on_the_left", "no_shape_error", "np_broadcast_shapes", "np_broadcast",
         "eagerflows_rule"],
)  # fmt: skip
def test_ch01_broadcast_shape_rejects(mistake, message) -> None:
    rejects(test_ch01.test_broadcast_shape_on_hidden_shapes, message, broadcast_shape=mistake)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_broadcast_by_adding_arrays, "did you make arrays of these shapes"),
        (_broadcast_by_broadcast_to, _REFUSED_BROADCAST + " numpy.broadcast_to is not allowed"),
    ],
    ids=["adding_empty_arrays", "np_broadcast_to"],
)
def test_ch01_broadcast_shape_rejects_numpys_broadcasting(mistake, message) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch01.test_broadcast_shape_of_shapes_too_big_to_allocate, message,
            broadcast_shape=mistake)  # fmt: skip
    # (and on the ordinary shapes they are right: only the shapes too big give them away)
    if mistake is _broadcast_by_adding_arrays:
        test_ch01.test_broadcast_shape_on_hidden_shapes(SimpleNamespace(broadcast_shape=mistake))


def _squared_distances_in_numpy(a, b):
    a, b = a.numpy(), b.numpy()
    return ((a[:, None, :] - b[None, :, :]) ** 2).sum(axis=-1)  # a NumPy array


def _squared_distances_in_numpy_made_a_tensor(a, b):
    return ef.constant(_squared_distances_in_numpy(a, b))  # gamed: no op computed it


def _squared_distances_of_copies(a, b):
    a, b = ef.constant(a.numpy()), ef.constant(b.numpy())  # gamed: ops, but not on a and b
    return ef.reduce_sum(ef.square(ef.expand_dims(a, 1) - ef.expand_dims(b, 0)), axis=-1)


def _squared_distances_summed_over_the_wrong_axis(a, b):
    d = ef.expand_dims(a, 1) - ef.expand_dims(b, 0)
    return ef.reduce_sum(ef.square(d), axis=0)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_squared_distances_in_numpy, "expected an eagerflow Tensor"),
        (_squared_distances_summed_over_the_wrong_axis, "expected shape"),
        (_squared_distances_in_numpy_made_a_tensor, "computing it in NumPy .* is not allowed"),
        (_squared_distances_of_copies, "what ops .* made from a and b"),
    ],
    ids=["numpy_array", "wrong_axis", "numpy_made_a_tensor", "ops_on_copies"],
)
def test_ch01_squared_distances_rejects(mistake, message) -> None:
    rejects(test_ch01.test_squared_distances_on_hidden_points, message, squared_distances=mistake)


def test_ch01_dtype_message_says_numpy_dtype() -> None:
    message = test_ch01.dtype_message(np.zeros(2), ef.float64)
    assert "eagerflow DType (ef.float64), not NumPy's dtype float64" in message


def _cube_in_numpy(x):
    return ef.constant(np.asarray(ef.convert_to_tensor(x)) ** 3)  # no Cube op on the seam


def test_ch01_cube_rejects_numpy_instead_of_the_op() -> None:
    rejects(test_ch01.test_cube_on_hidden_values, "should run the one op Cube", cube=_cube_in_numpy)


# --- chapter 1: Hypot (stretch) -------------------------------------------------------------------
def _hypot(kernel=np.hypot, shape=broadcast_rule, dtype=None):  # type: ignore[no-untyped-def]
    """A hypot that registers ``Hypot`` with these parts of its row."""

    def hypot(a, b):  # type: ignore[no-untyped-def]
        if "Hypot" not in OPS:
            register_op("Hypot", kernel, shape=shape, dtype=dtype or same_dtype(FLOATS))
        return execute("Hypot", (ef.convert_to_tensor(a), ef.convert_to_tensor(b)))[0]

    return hypot


def _hypot_of_ops(a, b):  # type: ignore[no-untyped-def]
    return ef.sqrt(ef.square(a) + ef.square(b))  # four ops, and it overflows


@pytest.mark.parametrize(
    ("mistake", "test", "message"),
    [
        (_hypot_of_ops, "rules_and_values_on_hidden_inputs", "the one op Hypot"),
        (_hypot(kernel=lambda a, b: np.sqrt(a * a + b * b)), "rules_and_values_on_hidden_inputs",
         "overflowed or underflowed"),
        (_hypot(shape=same_shape_rule), "rules_answer_without_running", "shape rule"),
        (_hypot(dtype=lambda dts, attrs: [ef.float64]), "rules_answer_without_running",
         "dtype rule"),
    ],
    ids=["composed_of_ops", "squares_first", "first_inputs_shape", "dtype_hard_coded"],
)  # fmt: skip
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # (the mistakes)
def test_ch01_hypot_rejects(mistake, test, message) -> None:  # type: ignore[no-untyped-def]
    rejects(getattr(test_ch01, f"test_hypot_stretch_{test}"), message, hypot=mistake)


# --- chapter 2: recorders -------------------------------------------------------------------------
def _count_ops_by_hand(fn, *args):
    fn(*args)
    return {"MatMul": 1, "AddV2": 1}  # the visible test's answer


def _first_non_finite_last(fn, *args):
    found = []

    class Recorder:
        def record(self, op, inputs, attrs, outputs):
            if not all(np.isfinite(t.numpy()).all() for t in outputs):
                found.append(op.name)

    with test_ch02.recording(Recorder()):
        fn(*args)
    return found[-1] if found else None  # the last op with a NaN, not the first


def _power_iteration(a, tol, steps=None, on_lambda=False):
    v = ef.ones((a.shape[0], 1), ef.float64) / a.shape[0] ** 0.5
    lam, n = ef.constant(0.0, ef.float64), 0
    while True:
        w = ef.matmul(a, v)
        new_lam = ef.sqrt(ef.reduce_sum(w * w))
        new = w / new_lam
        n += 1
        if on_lambda:  # the eigenvalue settles long before the vector: stops too early
            change = abs(float(new_lam) - float(lam))
        else:
            change = float(ef.reduce_max(ef.abs(new - v)))
        v, lam = new, new_lam
        if (steps is None and change < tol) or n == steps:
            return float(lam), n


def _power_iteration_with_numpy(a, tol):
    values = np.linalg.eigvalsh(a.numpy())
    _, steps = test_ch02.numpy_power_iteration(a.numpy(), tol)
    return float(values[-1]), steps  # right answers, no loop on tensors


@pytest.mark.parametrize(
    ("test", "mistake", "message"),
    [
        ("test_count_ops_on_hidden_programs", {"count_ops": _count_ops_by_hand}, "hidden"),
        (
            "test_power_iteration_stops_when_converged_on_hidden_matrices",
            {"power_iteration": lambda a, tol: _power_iteration(a, tol, steps=40)},
            "expected about",
        ),
        (
            "test_power_iteration_stops_when_converged_on_hidden_matrices",
            {"power_iteration": lambda a, tol: _power_iteration(a, tol, on_lambda=True)},
            "expected about",
        ),
        (
            "test_power_iteration_stops_when_converged_on_hidden_matrices",
            {"power_iteration": _power_iteration_with_numpy},
            "MatMul ops ran",
        ),
        (
            "test_first_non_finite_on_hidden_programs",
            {"first_non_finite": _first_non_finite_last},
            "expected 'Sqrt'",
        ),
    ],
    ids=[
        "count_ops_literal",
        "power_iteration_fixed_steps",
        "power_iteration_stopping_on_lambda",
        "power_iteration_numpy",
        "first_non_finite_keeps_the_last",
    ],
)
def test_ch02_rejects(test, mistake, message) -> None:
    rejects(getattr(test_ch02, test), message, **mistake)


# --- chapter 5: variables -------------------------------------------------------------------------
def _sgd_step_making_new_variables(variables, grads, learning_rate):
    for v, g in zip(variables, grads, strict=True):
        v = Variable(v - learning_rate * g)  # a new variable: the model's is unchanged


def _momentum_step_with_the_old_velocity(variables, velocities, grads, learning_rate, momentum=0.9):
    for w, v, g in zip(variables, velocities, grads, strict=True):
        w.assign_sub(learning_rate * v)  # the velocity before this step's gradient
        v.assign(momentum * v + g)


def _fit_quadratic_with_one_tape(xs, ys, steps, learning_rate):
    a, b, c = Variable(0.0), Variable(0.0), Variable(0.0)
    with GradientTape(persistent=True) as tape:
        loss = ef.reduce_mean(ef.square(a * xs * xs + b * xs + c - ys))
    for _ in range(steps):  # the gradient of the first loss, every step
        for v, g in zip([a, b, c], tape.gradient(loss, [a, b, c]), strict=True):
            v.assign_sub(learning_rate * g)
    return float(a), float(b), float(c)


@pytest.mark.parametrize(
    ("test", "mistake", "message"),
    [
        ("test_sgd_step_on_hidden_variables", {"sgd_step": _sgd_step_making_new_variables}, "v -"),
        (
            "test_momentum_step_on_hidden_gradients",
            {"momentum_step": _momentum_step_with_the_old_velocity},
            "5 hidden steps",
        ),
        (
            "test_fit_quadratic_on_hidden_data",
            {"fit_quadratic": _fit_quadratic_with_one_tape},
            "hidden data",
        ),
    ],
    ids=["sgd_new_variables", "momentum_old_velocity", "fit_with_one_tape"],
)
def test_ch05_rejects(test, mistake, message) -> None:
    rejects(getattr(test_ch05, test), message, **mistake)


# --- chapter 7: one op, two modes -----------------------------------------------------------------
def _cross_entropy_unstable(logits, labels):
    lse = ef.log(ef.reduce_sum(ef.exp(logits), axis=-1, keepdims=True))  # exp(1000) = inf
    return ef.reduce_sum(labels * (lse - logits), axis=-1)


def _cross_entropy_built_in(logits, labels):
    return nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)  # gamed


def _cross_entropy_of_log_softmax(logits, labels):
    return -ef.reduce_sum(labels * ef.log_softmax(logits), axis=-1)  # gamed: stable, ready-made


def _second_derivative_graph_of_f_prime_only(f):
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float64, (), name="x")
        (dy,) = gradients(f(x), [x])
    return graph, x, dy


@pytest.mark.parametrize(
    ("test", "mistake", "message"),
    [
        (
            "test_cross_entropy_on_hidden_batches_in_both_modes",
            {"cross_entropy": _cross_entropy_unstable},
            "hidden",
        ),
        (
            "test_second_derivative_graph_on_a_hidden_polynomial",
            {"second_derivative_graph": _second_derivative_graph_of_f_prime_only},
            "hidden polynomial",
        ),
        (
            "test_cross_entropy_on_hidden_batches_in_both_modes",
            {"cross_entropy": _cross_entropy_built_in},
            "cross_entropy: this exercise asks you to build the stable cross-entropy yourself: "
            "calling eagerflow.nn.losses.softmax_cross_entropy_with_logits is not allowed",
        ),
        (
            "test_cross_entropy_on_hidden_batches_in_both_modes",
            {"cross_entropy": _cross_entropy_of_log_softmax},
            "calling eagerflow.tensor.nn_ops.log_softmax is not allowed",
        ),
    ],
    ids=[
        "cross_entropy_unstable",
        "second_derivative_is_f_prime",
        "cross_entropy_built_in",
        "cross_entropy_of_log_softmax",
    ],
)
def test_ch07_rejects(test, mistake, message) -> None:
    rejects(getattr(test_ch07, test), message, **mistake)


# --- chapter 8: control flow ----------------------------------------------------------------------
def _huber_without_the_half(x, delta=1.0):
    return cond(ef.abs(x) <= delta, lambda: 0.5 * x * x, lambda: delta * ef.abs(x))


def _safe_reciprocal_with_where(x):
    return ef.where(ef.equal(x, 0.0), ef.zeros_like(x), 1.0 / x)  # nan gradient at 0


def _safe_reciprocal_returning_x_at_0(x):
    return cond(ef.equal(x, 0.0), lambda: x, lambda: 1.0 / x)  # 0, but with slope 1


def _newton_sqrt(a, tol, max_steps, cap=None, stop=None):
    def keep_going(g, n):
        near = ef.abs(g * g - a) > tol
        return near if cap is None else ef.logical_and(near, cap(n, max_steps))

    return tuple(while_loop(keep_going, lambda g, n: ((g + a / g) / 2.0, n + 1),
                            [a, ef.constant(0)]))  # fmt: skip


def _newton_sqrt_in_python(a, tol, max_steps):
    g, n = float(a), 0  # a Python loop: no While node, and a placeholder has no value
    while abs(g * g - float(a)) > tol and n < max_steps:
        g, n = (g + float(a) / g) / 2.0, n + 1
    return ef.constant(g, ef.float64), ef.constant(n)


def _newton_sqrt_from_a_table(a, tol, max_steps):
    return ef.sqrt(a), ef.constant(min(max_steps, 5))  # gamed: the true root, a guessed count


_HIDDEN_NEWTON = "test_collatz_steps_and_newton_sqrt_on_hidden_numbers"


@pytest.mark.parametrize(
    ("test", "mistake", "message"),
    [
        (
            "test_safe_reciprocal_and_huber_on_hidden_points",
            {"safe_reciprocal": lambda x: cond(ef.equal(x, 0.0), lambda: ef.zeros_like(x),
                                               lambda: 1.0 / x),
             "huber": _huber_without_the_half},
            "huber",
        ),
        (
            "test_safe_reciprocal_and_huber_on_hidden_points",
            {"safe_reciprocal": _safe_reciprocal_with_where},
            "nan|where",
        ),
        (
            "test_safe_reciprocal_and_huber_on_hidden_points",
            {"safe_reciprocal": _safe_reciprocal_returning_x_at_0},
            "d safe_reciprocal",
        ),
        (
            _HIDDEN_NEWTON,
            {"newton_sqrt": lambda a, tol, max_steps: _newton_sqrt(a, tol, max_steps)},
            "should run",
        ),
        (
            _HIDDEN_NEWTON,
            {"newton_sqrt": lambda a, tol, max_steps: _newton_sqrt(
                a, tol, max_steps, cap=lambda n, m: n <= m)},
            "should run",
        ),
        (_HIDDEN_NEWTON, {"newton_sqrt": _newton_sqrt_in_python}, "while_loop"),
        (_HIDDEN_NEWTON, {"newton_sqrt": _newton_sqrt_from_a_table}, "While node"),
    ],
    ids=["huber_without_the_half", "safe_reciprocal_with_where", "safe_reciprocal_x_at_0",
         "newton_without_a_cap", "newton_cap_off_by_one", "newton_in_python",
         "newton_from_sqrt"],
)  # fmt: skip
def test_ch08_rejects(test, mistake, message) -> None:
    chapter = {"collatz_steps": _collatz_steps, **mistake}
    rejects(getattr(test_ch08, test), message, **chapter)


def _collatz_steps(n):  # the right collatz_steps, for the tests that also call it
    def body(k, steps):
        return cond(ef.equal(k % 2, 0), lambda: k // 2, lambda: 3 * k + 1), steps + 1

    return while_loop(lambda k, steps: k > 1, body, [n, ef.constant(0, ef.int64)])[1]


# --- chapter 8: exponentiation by squaring (stretch) ----------------------------------------------
def _power_one_factor_at_a_time(x, n):  # type: ignore[no-untyped-def]
    result, _ = while_loop(lambda r, k: k > 0, lambda r, k: (r * x, k - 1),
                           [ef.ones_like(x), ef.abs(n)])  # fmt: skip
    return cond(n < 0, lambda: 1.0 / result, lambda: result)  # n steps, not log n


def _power_with_pow(x, n):  # type: ignore[no-untyped-def]
    return ef.pow(x, ef.cast(n, x.dtype))  # right, and no loop


def _power_by_squaring(x, n, parity=1, negative=True):  # type: ignore[no-untyped-def]
    def step(result, power, k):  # type: ignore[no-untyped-def]
        odd = ef.equal(k % 2, parity)
        return cond(odd, lambda: result * power, lambda: result), power * power, k // 2

    k = ef.abs(n) if negative else n
    result, _, _ = while_loop(lambda r, p, k: k > 0, step, [ef.ones_like(x), x, k])
    return cond(n < 0, lambda: 1.0 / result, lambda: result) if negative else result


def _power_unrolled_for_eleven_digits(x, n):  # type: ignore[no-untyped-def]
    result, power, k = ef.ones_like(x), x, ef.abs(n)
    for _ in range(11):  # enough for |n| < 2048, decided while building: no While node
        result = ef.where(ef.equal(k % 2, 1), result * power, result)
        power, k = power * power, k // 2
    return cond(n < 0, lambda: 1.0 / result, lambda: result)


_HIDDEN_POWERS = "on_hidden_exponents"


@pytest.mark.parametrize(
    ("mistake", "test", "message"),
    [
        (_power_one_factor_at_a_time, _HIDDEN_POWERS, "multiplications"),
        (_power_one_factor_at_a_time, "in_a_graph_loops_at_run_time", "body ran"),
        (_power_with_pow, _HIDDEN_POWERS, "pow"),
        (lambda x, n: _power_by_squaring(x, n, parity=0), _HIDDEN_POWERS, "power_by_squaring"),
        (lambda x, n: _power_by_squaring(x, n, negative=False), _HIDDEN_POWERS,
         "power_by_squaring"),
        (_power_unrolled_for_eleven_digits, "in_a_graph_loops_at_run_time", "While node"),
    ],
    ids=["one_factor_per_step", "one_iteration_per_factor", "pow", "even_digits",
         "negative_n_ignored", "unrolled"],
)  # fmt: skip
def test_ch08_power_by_squaring_rejects(mistake, test, message, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    rejects(getattr(test_ch08, f"test_power_by_squaring_{test}"), message, monkeypatch,
            power_by_squaring=mistake)  # fmt: skip


# --- gradient rules and contexts that return the wrong thing --------------------------------------
def _softsign(x):
    if "Softsign" not in OPS:  # as the chapter's file registers it
        register_op("Softsign", lambda a: a / (1 + np.abs(a)), shape=same_shape_rule,
                    dtype=same_dtype(FLOATS))  # fmt: skip
    return execute("Softsign", (ef.convert_to_tensor(x),))[0]


def test_ch03_softsign_gradient_rejects_a_bare_tensor_and_names_the_rule() -> None:
    saved = GRADIENTS.pop("Softsign", None)

    def register_softsign_gradient():
        if "Softsign" not in GRADIENTS:
            register_gradient("Softsign")(
                lambda op, grad: grad / ef.square(1 + ef.abs(op.inputs[0]))
            )

    try:
        chapter = SimpleNamespace(register_softsign_gradient=register_softsign_gradient,
                                  softsign=_softsign)  # fmt: skip
        with pytest.raises(EagerflowError, match=r"gradient rule of Softsign .* returned a Tensor"):
            test_ch03.test_softsign_gradient_values(chapter)
    finally:
        GRADIENTS.pop("Softsign", None)
        if saved is not None:
            GRADIENTS["Softsign"] = saved


class _LoggingContextReturningATensor:
    assign_returns_variable = True

    def __init__(self):
        self.log = []

    def create_variable(self, variable):
        return None

    def run_op(self, op, inputs, attrs, name):
        self.log.append(op.name)
        dtypes = op.dtype_rule([t.dtype for t in inputs], attrs)
        result = op.kernel(*(np.asarray(t) for t in inputs), **attrs)
        if op.multi_output:
            return tuple(ef.Tensor(a, d) for a, d in zip(result, dtypes, strict=True))
        return ef.Tensor(result, dtypes[0])  # not a tuple


def test_ch07_logging_context_rejects_a_bare_tensor_and_names_run_op() -> None:
    chapter = SimpleNamespace(LoggingContext=_LoggingContextReturningATensor)
    match = r"_LoggingContextReturningATensor.run_op returned a Tensor .* for MatMul"
    with pytest.raises(EagerflowError, match=match):
        test_ch07.test_logging_context_runs_ops_eagerly_and_logs_them(chapter)


# --- chapter 3: a MiniTape of one's own -----------------------------------------------------------
class _MiniTape:
    """The chapter's MiniTape (its ``__init__`` and ``record``); subclasses get it wrong."""

    def __init__(self, source):
        self.records, self.tracked = [], {source}

    def record(self, op, inputs, attrs, outputs):
        if any(t in self.tracked for t in inputs):
            self.records.append(OpRecord(op, inputs, attrs, outputs))
            self.tracked.update(outputs)

    def _apply(self, record, grad, grads, add=True):
        for t, g in zip(record.inputs, GRADIENTS[record.op.name](record, grad), strict=True):
            if g is not None:
                grads[t] = grads[t] + g if add and t in grads else g


class _MiniTapeInRecordOrder(_MiniTape):
    def gradient(self, target, source):  # the chapter's walk: right only for records in order
        grads = {target: ef.ones_like(target)}
        for record in reversed(self.records):
            if record.outputs[0] in grads:
                self._apply(record, grads[record.outputs[0]], grads)
        return grads.get(source)


class _MiniTapeOverwriting(_MiniTape):
    def gradient(self, target, source):  # the last use of a tensor wins: no accumulation
        grads = {target: ef.ones_like(target)}
        for record in reversed(self.records):
            if record.outputs[0] in grads:
                self._apply(record, grads[record.outputs[0]], grads, add=False)
        return grads.get(source)


class _MiniTapeOnePathAtATime(_MiniTape):
    def gradient(self, target, source):  # right numbers, one rule call per path
        made = {r.outputs[0]: r for r in self.records}
        grads = {}

        def push(t, grad):
            grads[t] = grads[t] + grad if t in grads else grad
            record = made.get(t)
            if record is not None:
                rule = GRADIENTS[record.op.name]
                for i, g in zip(record.inputs, rule(record, grad), strict=True):
                    if g is not None:
                        push(i, g)

        push(target, ef.ones_like(target))
        return grads.get(source)


class _MiniTapeCallingBackprop(_MiniTape):
    def gradient(self, target, source):  # eagerflow's own walk does the work
        from eagerflow.autodiff import tape

        records = sorted(self.records, key=lambda r: r.outputs[0].__hash__())  # creation order
        entries = [tape.pack(r.op, r.inputs, r.attrs, r.outputs) for r in records]
        return tape.backprop(entries, [target], [ef.ones_like(target)], {source}).get(source)


@pytest.mark.parametrize(
    ("test", "mistake", "message"),
    [
        ("test_mini_tape_does_not_rely_on_the_order_of_the_records", _MiniTapeInRecordOrder,
         "records in reverse"),
        ("test_mini_tape_on_hidden_programs_with_shuffled_records", _MiniTapeInRecordOrder,
         "hidden program"),
        ("test_mini_tape_adds_the_gradients_of_a_tensor_used_twice", _MiniTapeOverwriting,
         "disagrees"),
        ("test_mini_tape_on_hidden_programs_with_shuffled_records", _MiniTapeOnePathAtATime,
         "a rule ran"),
        ("test_mini_tape_on_hidden_programs_with_shuffled_records", _MiniTapeCallingBackprop,
         "eagerflow's tape"),
    ],
    ids=["in_record_order", "in_record_order_hidden", "overwriting", "one_path_at_a_time",
         "calling_backprop"],
)  # fmt: skip
def test_ch03_mini_tape_rejects(test, mistake, message, monkeypatch) -> None:
    rejects(getattr(test_ch03, test), message, monkeypatch, MiniTape=mistake)


# --- chapter 3: broadcasting gradients ------------------------------------------------------------
def _unbroadcast_leading_axes_only(grad, shape):
    lead = grad.ndim - len(shape)
    return ef.reduce_sum(grad, axis=tuple(range(lead))) if lead else grad


def _unbroadcast_in_numpy(grad, shape):
    value = test_ch03.numpy_unbroadcast(grad.numpy(), shape)
    return ef.constant(value, grad.dtype)  # right numbers, but a tape sees no op


def _unbroadcast_without_keepdims(grad, shape):
    lead = grad.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1)
    return ef.reduce_sum(grad, axis=axes) if axes else grad  # the size-1 axes are dropped


_VISIBLE_UNBROADCASTS = {(3, 1): [[6.0, 22.0, 38.0]], (4,): [60.0, 66.0, 72.0, 78.0]}


def _unbroadcast_from_a_table(grad, shape):
    return ef.constant(np.broadcast_to(_VISIBLE_UNBROADCASTS.get(shape, 0.0), shape))  # gamed


@pytest.mark.parametrize(
    ("test", "mistake", "message"),
    [
        ("test_unbroadcast_sums_over_the_stretched_axes", _unbroadcast_leading_axes_only,
         "expected that shape"),
        ("test_unbroadcast_on_hidden_shapes_with_eagerflow_ops", _unbroadcast_in_numpy,
         "no reduce_sum"),
        ("test_unbroadcast_on_hidden_shapes_with_eagerflow_ops", _unbroadcast_without_keepdims,
         "expected that shape"),
        ("test_unbroadcast_on_hidden_shapes_with_eagerflow_ops", _unbroadcast_from_a_table,
         "hidden"),
    ],
    ids=["leading_axes_only", "numpy", "without_keepdims", "lookup_table"],
)  # fmt: skip
def test_ch03_unbroadcast_rejects(test, mistake, message) -> None:
    rejects(getattr(test_ch03, test), message, unbroadcast=mistake)


def _add_gradient_not_summed(op, grad):
    return grad, grad


def _mul_gradient_swapped(op, grad):
    x, y = op.inputs
    return (test_ch03.numpy_unbroadcast_tensor(grad * x, x.shape),
            test_ch03.numpy_unbroadcast_tensor(grad * y, y.shape))  # fmt: skip


def _mul_gradient_in_numpy(op, grad):
    x, y = (t.numpy() for t in op.inputs)
    g = grad.numpy()
    dx, dy = (test_ch03.numpy_unbroadcast(g * y, x.shape),
              test_ch03.numpy_unbroadcast(g * x, y.shape))  # fmt: skip
    return ef.constant(dx), ef.constant(dy)  # right first derivatives; a tape sees constants


def _real_add_gradient(op, grad):
    return GRADIENTS["AddV2"](op, grad)


@pytest.mark.parametrize(
    ("test", "rules", "message"),
    [
        ("test_broadcasting_rules_match_the_real_ops_on_hidden_shapes",
         {"add_gradient": _add_gradient_not_summed, "mul_gradient": GRADIENTS["Mul"]},
         "should have shape"),
        ("test_broadcasting_rules_match_the_real_ops_on_hidden_shapes",
         {"add_gradient": _real_add_gradient, "mul_gradient": _mul_gradient_swapped},
         "x \\* y"),
        ("test_mul_gradient_has_a_second_derivative", {"mul_gradient": _mul_gradient_in_numpy},
         "second derivative"),
    ],
    ids=["add_not_summed", "mul_swapped", "mul_in_numpy"],
)  # fmt: skip
def test_ch03_broadcasting_rules_reject(test, rules, message, monkeypatch) -> None:
    rejects(getattr(test_ch03, test), message, monkeypatch, **rules)


# --- chapter 7: a graph-building context ----------------------------------------------------------
class _Symbol(ef.Tensor):
    __slots__ = ("_shape", "index", "node")

    def __init__(self, node, index, shape, dtype):
        super().__init__(None, dtype)
        self.node, self.index, self._shape = node, index, tuple(shape)

    @property
    def shape(self):
        return self._shape


class _MiniGraph:
    """The given part of the chapter's MiniGraph, and a right ``run_op``."""

    assign_returns_variable = False

    def __init__(self):
        self.nodes = []

    def placeholder(self, shape, dtype):
        node = SimpleNamespace(op=None, inputs=(), attrs={})
        node.outputs = (_Symbol(node, 0, shape, dtype),)
        self.nodes.append(node)
        return node.outputs[0]

    def _node(self, op, inputs, attrs, shapes, dtypes):
        node = SimpleNamespace(op=op, inputs=tuple(inputs), attrs=attrs)
        node.outputs = tuple(
            _Symbol(node, i, s, d) for i, (s, d) in enumerate(zip(shapes, dtypes, strict=True))
        )
        self.nodes.append(node)
        return node.outputs

    def run_op(self, op, inputs, attrs, name):
        shapes = op.shape_rule([t.shape for t in inputs], attrs)
        return self._node(
            op, inputs, attrs, shapes, op.dtype_rule([t.dtype for t in inputs], attrs)
        )


class _MiniGraphRunningKernelsOnZeros(_MiniGraph):
    def run_op(self, op, inputs, attrs, name):  # the shapes by running the kernel: gamed
        zeros = [np.zeros(t.shape, t.dtype.np) for t in inputs]
        result = op.kernel(*zeros, **attrs)
        results = result if op.multi_output else (result,)
        dtypes = op.dtype_rule([t.dtype for t in inputs], attrs)
        return self._node(op, inputs, attrs, [np.shape(r) for r in results], dtypes)


class _MiniGraphWithTheFirstInputsShape(_MiniGraph):
    def run_op(self, op, inputs, attrs, name):
        dtypes = op.dtype_rule([t.dtype for t in inputs], attrs)
        return self._node(op, inputs, attrs, [inputs[0].shape] * len(dtypes), dtypes)


class _MiniGraphWithTheFirstInputsDType(_MiniGraph):
    def run_op(self, op, inputs, attrs, name):
        shapes = op.shape_rule([t.shape for t in inputs], attrs)
        return self._node(op, inputs, attrs, shapes, [inputs[0].dtype] * len(shapes))


def _run_mini(fetch, feeds, memo=True, cache=None):
    done = {} if cache is None else cache

    def value(t):
        if not isinstance(t, _Symbol):
            return np.asarray(t)
        node = t.node
        if node.op is None:
            return np.asarray(feeds[t])
        if not memo or id(node) not in done:
            result = node.op.kernel(*(value(i) for i in node.inputs), **node.attrs)
            done[id(node)] = tuple(result) if node.op.multi_output else (result,)
        return done[id(node)][t.index]

    return np.asarray(value(fetch))


_CACHE: dict = {}


@pytest.mark.parametrize(
    ("test", "mini_graph", "run_mini", "message"),
    [
        ("test_mini_graph_on_hidden_programs", _MiniGraphRunningKernelsOnZeros, _run_mini,
         "building ran kernels"),
        ("test_mini_graph_builds_nodes_and_run_mini_runs_them", _MiniGraphWithTheFirstInputsShape,
         _run_mini, "should have shape"),
        ("test_mini_graph_outputs_have_the_rules_shape_and_dtype",
         _MiniGraphWithTheFirstInputsDType, _run_mini, "dtype int32"),
        ("test_mini_graph_builds_nodes_and_run_mini_runs_them", _MiniGraph,
         lambda f, feeds: _run_mini(f, feeds, memo=False), "run each node once"),
        ("test_mini_graph_on_hidden_programs", _MiniGraph,
         lambda f, feeds: _run_mini(f, feeds, cache=_CACHE), "fed other values"),
    ],
    ids=["kernels_on_zeros", "first_inputs_shape", "first_inputs_dtype", "no_memo",
         "values_kept_between_runs"],
)  # fmt: skip
def test_ch07_mini_graph_rejects(test, mini_graph, run_mini, message, monkeypatch) -> None:
    _CACHE.clear()
    rejects(getattr(test_ch07, test), message, monkeypatch, MiniGraph=mini_graph,
            run_mini=run_mini)  # fmt: skip


# --- chapter 9: a mini @function ------------------------------------------------------------------
def _mini_function(fn, MiniGraph, run_mini, key=None, keep_value=False, trace_always=False):
    """A mini_function, wrong in the way its arguments say."""
    cache = {}

    def call(*args):
        args = tuple(ef.convert_to_tensor(a) if isinstance(a, np.ndarray) else a for a in args)
        tensors = [a for a in args if isinstance(a, ef.Tensor)]
        k = (key or _signature)(args)
        if trace_always or k not in cache:
            graph = MiniGraph()
            holders = [graph.placeholder(tuple(t.shape), t.dtype) for t in tensors]
            fed = iter(holders)
            with ef.execution.context(graph):
                result = fn(*(next(fed) if isinstance(a, ef.Tensor) else a for a in args))
            cache[k] = [holders, result, None]
        entry = cache[k]
        holders, result, kept = entry
        value = run_mini(result, {h: np.asarray(t) for h, t in zip(holders, tensors, strict=True)})
        if keep_value:  # the value of the trace's own call, for every later call: wrong
            entry[2] = value if kept is None else kept
            value = entry[2]
        return ef.constant(value)

    return call


def _mini_function_in_eagerflows_graph(fn, MiniGraph, run_mini):
    """Right, but on eagerflow's own Graph and Session: not the reader's graph mode."""
    cache = {}

    def call(*args):
        args = tuple(ef.convert_to_tensor(a) if isinstance(a, np.ndarray) else a for a in args)
        tensors = [a for a in args if isinstance(a, ef.Tensor)]
        k = _signature(args)
        if k not in cache:
            graph = Graph()
            with graph.as_default():
                holders = [placeholder(t.dtype, tuple(t.shape)) for t in tensors]
                fed = iter(holders)
                result = fn(*(next(fed) if isinstance(a, ef.Tensor) else a for a in args))
            cache[k] = (graph, holders, result)
        graph, holders, result = cache[k]
        feeds = {h: np.asarray(t) for h, t in zip(holders, tensors, strict=True)}
        return ef.constant(test_ch09.Session(graph).run(result, feeds))

    return call


def _signature(args):
    return tuple((a.dtype, tuple(a.shape)) if isinstance(a, ef.Tensor) else (type(a), a)
                 for a in args)  # fmt: skip


def _mini_function_by_shapes_only(fn, *pieces):
    return _mini_function(fn, *pieces, key=lambda args: tuple(
        tuple(a.shape) for a in args if isinstance(a, ef.Tensor)))  # fmt: skip


def _mini_function_eagerly(fn, *pieces):
    return lambda *args: fn(*(ef.convert_to_tensor(a) if isinstance(a, np.ndarray) else a
                              for a in args))  # fmt: skip


def _mini_function_running_its_own_kernels(fn, MiniGraph, run_mini):
    """Traces into the reader's MiniGraph, but runs the nodes itself: not their run_mini."""
    return _mini_function(fn, MiniGraph, _reference_piece("ch07", "run_mini"))


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (lambda fn, *p: _mini_function(fn, *p, trace_always=True), "fn ran"),
        (_mini_function_by_shapes_only, "differs from fn's"),
        (lambda fn, *p: _mini_function(fn, *p, keep_value=True), "differs from fn's"),
        (_mini_function_eagerly, "trace it in your MiniGraph|run_mini ran"),
        (_mini_function_in_eagerflows_graph, "trace it in your MiniGraph"),
        (_mini_function_running_its_own_kernels, "your run_mini ran"),
    ],
    ids=["tracing_every_call", "keyed_on_shapes_only", "first_value_kept", "eager_calls",
         "eagerflows_graph_and_session", "not_your_run_mini"],
)  # fmt: skip
def test_ch09_mini_function_rejects(mistake, message) -> None:
    rejects(test_ch09.test_mini_function_on_hidden_call_sequences, message, _reference_piece,
            mini_function=mistake)  # fmt: skip


def test_ch09_the_reference_mini_function_passes_on_the_reference_pieces(monkeypatch) -> None:
    """The planted mistakes fail for their mistake: the reference passes the same tests."""
    chapter = SimpleNamespace(mini_function=_reference("ch09").mini_function,
                              signature=_reference("ch09").signature)  # fmt: skip
    test_ch09.test_mini_function_on_hidden_call_sequences(chapter, _reference_piece)


# --- chapter 9: a mini @function's cache key ------------------------------------------------------
def _key_without_dtypes(args):  # type: ignore[no-untyped-def]
    return tuple(("tensor", tuple(a.shape)) if isinstance(a, ef.Tensor) else ("value", type(a), a)
                 for a in args)  # fmt: skip


def _key_without_python_values(args):  # type: ignore[no-untyped-def]
    return tuple(("tensor", a.dtype, tuple(a.shape)) for a in args if isinstance(a, ef.Tensor))


def _key_without_the_values_types(args):  # type: ignore[no-untyped-def]
    # 2 and 2.0 are equal, and hash alike: one key for both
    return tuple(("tensor", a.dtype, tuple(a.shape)) if isinstance(a, ef.Tensor) else ("value", a)
                 for a in args)  # fmt: skip


def _key_on_shapes_only(args):  # type: ignore[no-untyped-def]
    return tuple(tuple(a.shape) for a in args if isinstance(a, ef.Tensor))


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (_key_without_dtypes, "float64|fn ran"),
        (_key_without_python_values, "differs from fn's"),
        (_key_without_the_values_types, "fn ran"),
        (_key_on_shapes_only, "differs from fn's|float64"),
    ],
    ids=["without_dtypes", "without_python_values", "without_the_values_types", "shapes_only"],
)
def test_ch09_mini_function_rejects_a_wrong_key(key, message, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    test = test_ch09.test_mini_function_on_hidden_dtypes_and_python_values
    mistake = lambda fn, *pieces: _mini_function(fn, *pieces, key=key)  # noqa: E731
    rejects(test, message, _reference_piece, mini_function=mistake)
    # and none of them asks the reader's `signature`: the spy sees it
    test = test_ch09.test_mini_function_keys_its_cache_on_your_signature
    rejects(test, "signature", _reference_piece, monkeypatch, mini_function=mistake)


def test_ch09_mini_function_rejects_a_right_key_of_its_own(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # the right key, computed without the reader's `signature`: not the exercise
    test = test_ch09.test_mini_function_keys_its_cache_on_your_signature
    rejects(test, "signature", _reference_piece, monkeypatch, mini_function=_mini_function)


# --- chapter 4: forward mode (stretch) ------------------------------------------------------------
def _jvp_by_differences(f, x, v, h=1e-6):
    y = f(x)
    return y, (f(x + h * v) - f(x - h * v)) / (2 * h)  # f three times, no tangents


def _jvp_from_the_tape(f, x, v):
    with GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return y, ef.matmul(tape.jacobian(y, x), ef.reshape(v, (-1, 1)))[:, 0]  # reverse mode


def _jvp_by_the_accumulator(f, x, v):
    with ForwardAccumulator(x, v) as accumulator:  # gamed: the framework's forward mode
        y = f(x)
    return y, accumulator.jvp(y)


def _jvp_zeros(f, x, v):
    y = f(x)
    return y, ef.zeros_like(y)  # gamed: the shape is right


def _jvp_forgetting_a_product_term(f, x, v):
    tangents = {x: v}
    busy = []

    class Forward:
        def record(self, op, inputs, attrs, outputs):
            if busy or not any(t in tangents for t in inputs):
                return
            busy.append(1)
            ts = [tangents[t] if t in tangents else ef.zeros_like(t) for t in inputs]
            a, out, ta = inputs[0], outputs[0], ts[0]
            rules = {
                "AddV2": lambda: ta + ts[1],
                "Sub": lambda: ta - ts[1],
                "Mul": lambda: ta * inputs[1],  # the a·tb term is missing
                "RealDiv": lambda: (ta - out * ts[1]) / inputs[1],
                "Neg": lambda: -ta,
                "Square": lambda: 2.0 * a * ta,
                "Exp": lambda: ta * out,
                "Log": lambda: ta / a,
                "Tanh": lambda: ta * (1.0 - out * out),
            }
            tangents[out] = rules[op.name]()
            busy.pop()

    with test_ch02.recording(Forward()):
        y = f(x)
    return y, tangents.get(y, ef.zeros_like(y))


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_jvp_by_differences, "called f 3 times"),
        (_jvp_from_the_tape, "eagerflow's tape"),
        (_jvp_zeros, "J·v"),
        (_jvp_forgetting_a_product_term, "J·v"),
        (_jvp_by_the_accumulator, "jvp: this exercise asks you to build forward mode yourself: "
         "calling eagerflow.autodiff.forward.ForwardAccumulator is not allowed"),
    ],
    ids=["finite_differences", "reverse_mode_tape", "zeros", "mul_without_a_term",
         "forward_accumulator"],
)  # fmt: skip
def test_ch04_jvp_rejects(mistake, message, monkeypatch) -> None:
    test = test_ch04.test_jvp_stretch_matches_the_jacobian_on_hidden_programs
    rejects(test, message, monkeypatch, jvp=mistake)


# --- chapter 4: forward mode with ForwardAccumulator ----------------------------------------------
def _columns_from_a_tape(f, x):  # type: ignore[no-untyped-def]
    with GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.jacobian(y, x)  # reverse mode: right numbers, one pass per output


def _columns_from_the_library(f, x):  # type: ignore[no-untyped-def]
    return forward_jacobian(f, x)


def _columns_as_rows(f, x):  # type: ignore[no-untyped-def]
    columns = []
    for j in range(x.shape[0]):
        with ForwardAccumulator(x, ef.one_hot(j, x.shape[0], dtype=x.dtype)) as acc:
            y = f(x)
        columns.append(acc.jvp(y))
    return ef.stack(columns)  # (n, m): the transpose


def _columns_in_one_pass(f, x):  # type: ignore[no-untyped-def]
    with ForwardAccumulator(x, ef.ones_like(x)) as acc:
        y = f(x)
    return ef.stack([acc.jvp(y)] * x.shape[0], axis=1)  # every column is J·(1, ..., 1)


def _columns_by_differences(f, x, h=1e-6):  # type: ignore[no-untyped-def]
    n = x.shape[0]
    steps = [h * ef.one_hot(j, n, dtype=x.dtype) for j in range(n)]
    return ef.stack([(f(x + e) - f(x - e)) / (2 * h) for e in steps], axis=1)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_columns_from_a_tape, "inputs to .* outputs ran 1 times"),
        (_columns_from_the_library, "forward_jacobian"),
        (_columns_as_rows, "one column per input"),
        (_columns_in_one_pass, "ran 1 times"),
        (_columns_by_differences, "ran .* times"),
    ],
    ids=["reverse_mode_tape", "forward_jacobian", "transposed", "one_pass", "differences"],
)
def test_ch04_jacobian_by_columns_rejects(mistake, message) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch04.test_jacobian_by_columns_on_hidden_tall_functions, message,
            jacobian_by_columns=mistake)  # fmt: skip


def _hvp_with_the_hessian(f, x, v):  # type: ignore[no-untyped-def]
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = f(x)
        g = inner.gradient(y, x)
    return ef.reshape(outer.jacobian(g, x) @ ef.reshape(v, (-1, 1)), (-1,))  # n² entries


def _hvp_reverse_over_forward(f, x, v):  # type: ignore[no-untyped-def]
    with GradientTape() as tape:
        tape.watch(x)
        with ForwardAccumulator(x, v) as acc:
            y = f(x)
        along_v = acc.jvp(y)
    return tape.gradient(along_v, x)  # the right numbers, the other nesting


def _hvp_of_the_tape_closed_outside(f, x, v):  # type: ignore[no-untyped-def]
    with ForwardAccumulator(x, v) as acc, GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    g = tape.gradient(y, x)  # after the accumulator's block: it hears none of this
    tangent = acc.jvp(g)
    return ef.zeros_like(x) if tangent is None else tangent


def _hvp_the_gradient(f, x, v):  # type: ignore[no-untyped-def]
    with ForwardAccumulator(x, v), GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)  # ∇f, not H·v


def _hvp_by_differences(f, x, v, h=1e-5):  # type: ignore[no-untyped-def]
    def gradient(t):  # type: ignore[no-untyped-def]
        with GradientTape() as tape:
            tape.watch(t)
            y = f(t)
        return tape.gradient(y, t)

    return (gradient(x + h * v) - gradient(x - h * v)) / (2 * h)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_hvp_with_the_hessian, "no Hessian is built"),
        (_hvp_reverse_over_forward, "reverse-over-forward"),
        (_hvp_of_the_tape_closed_outside, "hidden f"),
        (_hvp_the_gradient, "hidden f"),
        (_hvp_by_differences, "ran f 2 times"),
    ],
    ids=["full_hessian", "reverse_over_forward", "gradient_outside", "gradient", "differences"],
)
def test_ch04_hessian_vector_product_rejects(mistake, message, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch04.test_hessian_vector_product_on_hidden_functions, message, monkeypatch,
            hessian_vector_product=mistake)  # fmt: skip


# --- chapter 9: relaxed shapes (stretch) ----------------------------------------------------------
def _relaxing(fn, first=None, relax=None, exact_key=False):
    """A relaxing_function whose first trace's shapes are ``first(shape)`` and whose relaxed
    shapes are ``relax(old, new)``; with ``exact_key`` it never relaxes (mini_function)."""
    cache = {}

    def call(*args):
        args = tuple(ef.convert_to_tensor(a) if isinstance(a, np.ndarray) else a for a in args)
        tensors = [a for a in args if isinstance(a, ef.Tensor)]
        key = tuple(
            ("tensor", a.dtype, tuple(a.shape) if exact_key else a.ndim)
            if isinstance(a, ef.Tensor) else ("value", type(a), a)
            for a in args
        )  # fmt: skip
        shapes = [(first or tuple)(t.shape) for t in tensors]
        entry = cache.get(key)
        if entry is not None:
            old = [tuple(p.shape) for p in entry[1]]
            new = [tuple(t.shape) for t in tensors]
            if any(o is not None and o != s for po, ps in zip(old, new, strict=True)
                   for o, s in zip(po, ps, strict=True)):  # fmt: skip
                shapes = [relax(po, ps) for po, ps in zip(old, new, strict=True)]
                entry = None
        if entry is None:
            graph = Graph()
            with graph.as_default():
                holders = [placeholder(t.dtype, s) for t, s in zip(tensors, shapes, strict=True)]
                fed = iter(holders)
                result = fn(*(next(fed) if isinstance(a, ef.Tensor) else a for a in args))
            entry = cache[key] = (graph, holders, result)
        graph, holders, result = entry
        feeds = {h: np.asarray(t) for h, t in zip(holders, tensors, strict=True)}
        return ef.constant(test_ch09.Session(graph).run(result, feeds))

    return call


@pytest.mark.parametrize(
    "mistake",
    [
        lambda fn: _relaxing(fn, exact_key=True),
        lambda fn: _relaxing(fn, first=lambda s: (None,) * len(s)),
        lambda fn: _relaxing(fn, relax=lambda old, new: (None,) * len(new)),
    ],
    ids=["a_trace_per_shape", "unknown_from_the_start", "every_dimension_relaxed"],
)
def test_ch09_relaxing_function_rejects(mistake, monkeypatch) -> None:
    test = test_ch09.test_relaxing_function_stretch_on_hidden_call_sequences
    rejects(test, "traces with placeholder shapes", monkeypatch, relaxing_function=mistake)


# --- chapter 7: gradients in a MiniGraph (stretch) ------------------------------------------------
def _mini_gradients(graph, y, x, rules=GRADIENTS, accumulate=True, order=reversed):
    grads = {}
    with ef.execution.context(graph):
        grads[y] = ef.ones_like(y)
        for node in order(list(graph.nodes)):
            grad = grads.get(node.outputs[0]) if node.inputs else None
            rule = rules.get(node.op.name) if node.op is not None else None
            if grad is None or rule is None:
                continue
            record = OpRecord(node.op, node.inputs, node.attrs, node.outputs)
            for t, g in zip(node.inputs, rule(record, grad), strict=True):
                if g is not None:
                    grads[t] = grads[t] + g if accumulate and t in grads else g
    return grads.get(x)


def _mini_gradients_of_ones(graph, y, x):
    with ef.execution.context(graph):
        return ef.ones_like(x) * 0.5  # gamed: a node of the right shape


@pytest.mark.parametrize(
    "mistake",
    [
        lambda g, y, x: _mini_gradients(g, y, x, accumulate=False),
        lambda g, y, x: _mini_gradients(g, y, x, order=list),
        _mini_gradients_of_ones,
    ],
    ids=["overwriting", "nodes_in_build_order", "ones"],
)
def test_ch07_mini_gradients_rejects(mistake, monkeypatch) -> None:
    chapter = {"MiniGraph": _MiniGraph, "run_mini": _run_mini, "mini_gradients": mistake}
    test = test_ch07.test_mini_gradients_stretch_on_hidden_programs
    rejects(test, "hidden program|the symbol of a new node", monkeypatch, **chapter)


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (lambda g, y, x, rules=GRADIENTS: _mini_gradients(g, y, x), "never called your ch03"),
        (
            lambda g, y, x, rules=GRADIENTS: _mini_gradients(g, y, x, rules, accumulate=False),
            "from your chapter 3 rules",
        ),
    ],
    ids=["eagerflows_own_table", "overwriting"],
)
def test_ch07_mini_gradients_rejects_other_rules(mistake, message, monkeypatch) -> None:
    chapter = SimpleNamespace(MiniGraph=_MiniGraph, run_mini=_run_mini, mini_gradients=mistake)
    with pytest.raises(FAILED, match=message):
        test_ch07.test_mini_gradients_calls_your_chapter_3_rules(chapter, _reference_piece,
                                                                  monkeypatch)  # fmt: skip


def test_ch07_mini_gradients_rejects_a_disagreeing_mini_tape(monkeypatch) -> None:
    """The check against the reader's MiniTape can fail: a MiniTape that finds zeros."""

    class _ZerosTape(_reference_piece("ch03", "MiniTape")):  # type: ignore[misc]
        def gradient(self, target, source):
            return ef.zeros_like(source)

    def pieces(chapter: str, name: str) -> object:
        return _ZerosTape if name == "MiniTape" else _reference_piece(chapter, name)

    ref = _reference("ch07")
    chapter = SimpleNamespace(MiniGraph=ref.MiniGraph, run_mini=ref.run_mini,
                              mini_gradients=ref.mini_gradients)  # fmt: skip
    with pytest.raises(FAILED, match="your MiniTape's"):
        test_ch07.test_mini_gradients_calls_your_chapter_3_rules(chapter, pieces, monkeypatch)


def test_ch07_the_reference_meets_the_chapter_3_rules(monkeypatch) -> None:
    """The planted mistakes fail for their mistake: the reference passes the same test."""
    ref = _reference("ch07")
    chapter = SimpleNamespace(MiniGraph=ref.MiniGraph, run_mini=ref.run_mini,
                              mini_gradients=ref.mini_gradients)  # fmt: skip
    test_ch07.test_mini_gradients_calls_your_chapter_3_rules(chapter, _reference_piece, monkeypatch)


# --- chapter 5: Adam (stretch) --------------------------------------------------------------------
class _Adam:
    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-7):
        self.lr, self.b1, self.b2, self.eps = learning_rate, beta1, beta2, epsilon
        self.slots, self.t = {}, 0

    def state(self):
        return self.slots

    def apply(self, variables, grads):
        self.t += 1
        for w, g in zip(variables, grads, strict=True):
            state = self.state()
            if id(w) not in state:
                state[id(w)] = (Variable(ef.zeros(w.shape, w.dtype)),
                                Variable(ef.zeros(w.shape, w.dtype)))  # fmt: skip
            m, v = state[id(w)]
            m.assign(self.b1 * m + (1 - self.b1) * g)
            v.assign(self.b2 * v + (1 - self.b2) * g * g)
            w.assign_sub(self.update(m, v))

    def update(self, m, v):
        m_hat, v_hat = m / (1 - self.b1**self.t), v / (1 - self.b2**self.t)
        return self.lr * m_hat / (ef.sqrt(v_hat) + self.eps)


class _AdamWithoutBiasCorrection(_Adam):
    def update(self, m, v):
        return self.lr * m / (ef.sqrt(v) + self.eps)


class _AdamWithEpsilonUnderTheRoot(_Adam):
    def update(self, m, v):
        m_hat, v_hat = m / (1 - self.b1**self.t), v / (1 - self.b2**self.t)
        return self.lr * m_hat / ef.sqrt(v_hat + self.eps)


class _AdamAsSgd(_Adam):
    def update(self, m, v):
        return self.lr * m  # gamed: a step in the right direction


@pytest.mark.parametrize(
    "mistake",
    [_AdamWithoutBiasCorrection, _AdamWithEpsilonUnderTheRoot, _AdamAsSgd],
    ids=["without_bias_correction", "epsilon_under_the_root", "momentum_only"],
)
def test_ch05_adam_rejects(mistake) -> None:
    rejects(test_ch05.test_adam_stretch_on_hidden_gradients, "after step", Adam=mistake)


# --- chapter 20: the whole stack ------------------------------------------------------------------
def _stack_report_counting_the_trace_too(fn, *args):  # type: ignore[no-untyped-def]
    """The recorder left on while tracing: the trace's build-time ops are counted as eager."""
    report = {"eager_ops": 0}

    class Counter:
        def record(self, op, inputs, attrs, outputs):  # type: ignore[no-untyped-def]
            report["eager_ops"] += 1

    with recording(Counter()):
        fn(*args)
        operations = function(fn).get_concrete_function(*args).graph.get_operations()
    report["graph_nodes"] = len(operations)
    report["if_nodes"] = sum(op.type == "If" for op in operations)
    return report


def _stack_report_without_autograph(fn, *args):  # type: ignore[no-untyped-def]
    """Traced with autograph=False: a tensor if fails or runs one branch, and no If node."""
    right = test_ch20.expected_report(fn, *args)
    try:
        traced = function(fn, autograph=False).get_concrete_function(*args)
    except TypeError:
        return {**right, "if_nodes": 0}
    operations = traced.graph.get_operations()
    return {**right, "graph_nodes": len(operations),
            "if_nodes": sum(op.type == "If" for op in operations)}  # fmt: skip


@pytest.mark.parametrize(
    "mistake", [_stack_report_counting_the_trace_too, _stack_report_without_autograph]
)
def test_ch20_stack_report_rejects(mistake) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch20.test_stack_report_on_hidden_functions, "expected", 0, stack_report=mistake)


# --- chapter 13: the memory planner, ready-made ---------------------------------------------------
def _plan_buffers_from_the_compilers_liveness(program):  # type: ignore[no-untyped-def]
    """The right walk, on the liveness the compiler's own planner computes: gamed."""
    writer = compiler_program._Writer(program, list(program.nodes), "numpy")
    last = writer._last_uses(include_fetched=True)
    free, plan = {}, {}  # type: ignore[var-annotated]
    for step, node in enumerate(program.nodes):
        for v in node.outputs:
            pool = free.setdefault((program.shapes[v], program.dtypes[v]), [])
            plan[v] = pool.pop() if pool else len(plan)
        for v in last.get(step, ()):
            if v in plan and v not in program.fetches:
                free[(program.shapes[v], program.dtypes[v])].append(plan[v])
    return plan


def _plan_buffers_by_the_compiler(program):  # type: ignore[no-untyped-def]
    arrays = compiler_program._Writer(program, list(program.nodes), "numpy")._plan_buffers()
    ids: dict[int, int] = {}
    return {v: ids.setdefault(id(a), len(ids)) for v, a in arrays.items()}


@pytest.mark.parametrize(
    "mistake",
    [_plan_buffers_from_the_compilers_liveness, _plan_buffers_by_the_compiler],
    ids=["compilers_liveness", "compilers_planner"],
)
def test_ch13_plan_buffers_rejects_the_compilers_own_planner(mistake) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch13.test_plan_buffers_on_hidden_programs, "the memory planner yourself",
            "chain_1", plan_buffers=mistake)  # fmt: skip


# --- chapter 20: the capstone, trained with the reader's own pieces -------------------------------
def _reference(chapter: str) -> ModuleType:
    """A chapter's reference solutions: the pieces of a reader who has solved them."""
    name = f"reference_solutions_{chapter}"
    if name not in sys.modules:
        path = Path(__file__).resolve().parents[2] / "exercises" / "solutions" / f"{chapter}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def _reference_piece(chapter: str, name: str) -> object:
    return getattr(_reference(chapter), name)


def _train(pieces, x, y, params, steps, learning_rate, gradients_by="mini", feed_first=False,
           trained=("w1", "b1", "w2", "b2"), optimizer=None):  # type: ignore[no-untyped-def]  # fmt: skip
    """The reference ``train``, with a knob for each mistake."""
    ref = _reference("ch20")
    graph = pieces.MiniGraph()
    xs, ys = graph.placeholder(x.shape, ef.float32), graph.placeholder(y.shape, ef.float32)
    symbols = {n: graph.placeholder(params[n].shape, ef.float32) for n in ref.PARAMETERS}
    with ef.execution.context(graph):
        loss = ref.mean_squared_error(ref.predict(xs, symbols), ys)
    grads = [pieces.mini_gradients(graph, loss, symbols[n]) for n in trained]
    variables = {n: Variable(ef.constant(params[n])) for n in ref.PARAMETERS}
    adam = optimizer(learning_rate) if optimizer else pieces.Adam(learning_rate)
    losses = []
    for _ in range(steps):
        feeds = {xs: x, ys: y}
        feeds.update({symbols[n]: (params[n] if feed_first else variables[n].numpy())
                      for n in ref.PARAMETERS})  # fmt: skip
        losses.append(float(pieces.run_mini(loss, feeds)))
        if gradients_by == "differences":  # run_mini on the loss only, nudging each entry
            values = [ef.constant(_differences(pieces, loss, feeds, symbols[n])) for n in trained]
        elif gradients_by == "tape":
            with GradientTape() as tape:
                value = ref.mean_squared_error(ref.predict(ef.constant(x), variables), y)
            values = tape.gradient(value, [variables[n] for n in trained])
        else:
            values = [ef.constant(pieces.run_mini(g, feeds)) for g in grads]
        if optimizer:
            adam.apply_gradients(list(zip(values, [variables[n] for n in trained], strict=True)))
        else:
            adam.apply([variables[n] for n in trained], values)
    return {n: v.numpy() for n, v in variables.items()}, losses


def _differences(pieces, loss, feeds, symbol, h=1e-3):  # type: ignore[no-untyped-def]
    value = feeds[symbol]
    grad = np.zeros_like(value)
    for i in np.ndindex(value.shape):
        e = np.zeros_like(value)
        e[i] = h
        up = pieces.run_mini(loss, {**feeds, symbol: value + e})
        down = pieces.run_mini(loss, {**feeds, symbol: value - e})
        grad[i] = (up - down) / (2 * h)
    return grad


def _train_in_numpy(pieces, x, y, params, steps, learning_rate):  # type: ignore[no-untyped-def]
    """Right numbers, by hand: backpropagation and Adam in NumPy, no piece used: gamed."""
    p = {n: v.astype(np.float64) for n, v in params.items()}
    m = {n: np.zeros_like(v) for n, v in p.items()}
    v2 = {n: np.zeros_like(v) for n, v in p.items()}
    losses = []
    for t in range(1, steps + 1):
        h = np.tanh(x @ p["w1"] + p["b1"])
        err = h @ p["w2"] + p["b2"] - y
        losses.append(float(np.mean(err**2)))
        d = 2 * err / err.size
        dh = d @ p["w2"].T * (1 - h**2)
        g = {"w1": x.T @ dh, "b1": dh.sum(0), "w2": h.T @ d, "b2": d.sum(0)}
        for n in p:
            m[n] = 0.9 * m[n] + 0.1 * g[n]
            v2[n] = 0.999 * v2[n] + 0.001 * g[n] ** 2
            p[n] -= learning_rate * m[n] / (1 - 0.9**t) / (np.sqrt(v2[n] / (1 - 0.999**t)) + 1e-7)
    return {n: v.astype(np.float32) for n, v in p.items()}, losses


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (lambda *a: _train(*a, gradients_by="tape"), "GradientTape is not allowed"),
        (lambda *a: _train(*a, optimizer=nn.optimizers.AdamOptimizer),
         "Optimizer.apply_gradients is not allowed"),
        (lambda *a: _train(*a, trained=("w1", "w2")), "after training|loss before each step"),
        (lambda *a: _train(*a, feed_first=True), "loss before each step"),
        (_train_in_numpy, "called MiniGraph.run_op 0 times"),
        (lambda *a: _train(*a, gradients_by="differences"), "not values run_mini computed"),
    ],
    ids=["tape", "frameworks_adam", "biases_never_trained", "first_values_fed", "numpy_by_hand",
         "finite_differences"],
)  # fmt: skip
def test_ch20_train_rejects(mistake, message) -> None:  # type: ignore[no-untyped-def]
    chapter = SimpleNamespace(Pieces=_reference("ch20").Pieces, train=mistake)
    with pytest.raises(FAILED, match=message):
        test_ch20.test_train_learns_with_your_pieces_only(chapter, _reference_piece, "two_to_one")


def _export_through_a_real_graph(pieces, params):  # type: ignore[no-untyped-def]
    graph = Graph()  # gamed: the framework's graph and its GraphDef, not the reader's
    with graph.as_default():
        x = placeholder(ef.float32, (None, params["w1"].shape[0]), name="x")
        prediction = _reference("ch20").predict(x, {n: ef.constant(v) for n, v in params.items()})
    return pieces.numpy_source(graph.as_graph_def(), [prediction.name])


def _export_in_float64(pieces, params):  # type: ignore[no-untyped-def]
    source = _reference("ch20").export(pieces, params)
    return source.replace("'float32'", "'float64'")  # the constants' dtype written wrong


def _export_the_hidden_layer(pieces, params):  # type: ignore[no-untyped-def]
    source = _reference("ch20").export(pieces, params)
    lines = source.splitlines()  # return the tanh's variable: a layer short
    tanh = next(line.split(" = ")[0].strip() for line in lines if "np.tanh" in line)
    return "\n".join([*lines[:-1], f"    return [{tanh}]"]) + "\n"


@pytest.mark.parametrize(
    ("mistake", "message"),
    [
        (_export_through_a_real_graph, "Graph is not allowed"),
        (_export_in_float64, "float32"),
        (_export_the_hidden_layer, "expected float32 predictions of shape"),
    ],
    ids=["real_graph", "float64_constants", "hidden_layer_only"],
)
def test_ch20_export_rejects(mistake, message) -> None:  # type: ignore[no-untyped-def]
    chapter = SimpleNamespace(Pieces=_reference("ch20").Pieces, export=mistake)
    with pytest.raises(FAILED, match=message):
        test_ch20.test_export_gives_the_models_predictions(chapter, _reference_piece)


def test_ch20_the_reference_pieces_pass_as_they_are() -> None:
    # the mistakes above fail on their mistake alone: the same pieces, right, pass
    ref = _reference("ch20")
    chapter = SimpleNamespace(Pieces=ref.Pieces, train=_train, export=ref.export)
    test_ch20.test_train_learns_with_your_pieces_only(chapter, _reference_piece, "two_to_one")
    test_ch20.test_export_gives_the_models_predictions(chapter, _reference_piece)


# --- chapter 18: an event file's bytes ------------------------------------------------------------
def _crc_zlib(data):  # type: ignore[no-untyped-def]
    import zlib

    return zlib.crc32(data)  # CRC-32, not CRC-32C: another polynomial


def _crc_not_inverted(data):  # type: ignore[no-untyped-def]
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc  # the final xor forgotten


@pytest.mark.parametrize("mistake", [_crc_zlib, _crc_not_inverted])
def test_ch18_crc32c_rejects(mistake) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch18.test_crc32c_on_hidden_bytes, "crc32c of", 18, crc32c=mistake)


def _frame(data, crc, mask=True, order="<"):  # type: ignore[no-untyped-def]
    import struct

    def masked(chunk):  # type: ignore[no-untyped-def]
        c = crc(chunk)
        return ((((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF) if mask else c

    length = struct.pack(order + "Q", len(data))
    return length + struct.pack("<I", masked(length)) + data + struct.pack("<I", masked(data))


@pytest.mark.parametrize(("mistake", "message"), [
    (lambda data, crc: _frame(data, crc, mask=False), "masked CRC-32C of the 8 length"),
    (lambda data, crc: _frame(data, crc, order=">"), "the length: 8 bytes, little-endian"),
    (lambda data, crc: _frame(data, crc)[:-4] + b"\0\0\0\0", "comes last"),
])  # fmt: skip
def test_ch18_frame_record_rejects(mistake, message) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch18.test_frame_record_matches_tensorboards_record_writer, message, 4,
            frame_record=mistake)  # fmt: skip


def _event_file(path, tag, values, version=True, first_step=0):  # type: ignore[no-untyped-def]
    from tensorboard.compat.proto import event_pb2, summary_pb2

    ref = _reference("ch18")
    events = [event_pb2.Event(file_version="brain.Event:2")] if version else []
    for step, value in enumerate(values, first_step):
        scalar = summary_pb2.Summary.Value(tag=tag, simple_value=value)
        summary = summary_pb2.Summary(value=[scalar])
        events.append(event_pb2.Event(step=step, summary=summary))
    with open(path, "wb") as f:
        for event in events:
            f.write(ref.frame_record(event.SerializeToString(), ref.crc32c))


@pytest.mark.parametrize(("mistake", "message"), [
    (lambda p, t, v: _event_file(p, t, v, version=False), "file_version"),
    (lambda p, t, v: _event_file(p, t, v, first_step=1), "value i at step i"),
    (lambda p, t, v: _event_file(p, "loss", v), "no scalar"),
])  # fmt: skip
def test_ch18_scalar_event_file_rejects(mistake, message, tmp_path) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch18.test_scalar_event_file_is_read_by_tensorboard, message, tmp_path, 7,
            scalar_event_file=mistake)  # fmt: skip


# --- chapter 19: graphs across machines -----------------------------------------------------------
def _cut_with_partition(graph):  # type: ignore[no-untyped-def]
    import eagerflow.graph as eg  # the partitioner's own answer: refused

    parts = eg.partition(graph, 3)
    return sorted({(t.name, next(k for k, p in parts.items() if t.op in p.copies), task)
                   for task, part in parts.items() for t in part.received})  # fmt: skip


def _cut(graph, once=True, default=0, reverse=False):  # type: ignore[no-untyped-def]
    found = []
    for op in graph.get_operations():
        for tensor in op.inputs:
            tasks = []
            for device in (tensor.op.device, op.device):
                match = re.search(r"/task:(\d+)", device)
                tasks.append(int(match.group(1)) if match else default)
            source, dest = tasks[::-1] if reverse else tasks
            if source != dest and None not in tasks:
                found.append((tensor.name, source, dest))
    return sorted(set(found)) if once else sorted(found)


@pytest.mark.parametrize(("mistake", "message"), [
    (_cut_with_partition, "not allowed"),
    (lambda g: _cut(g, once=False), "want"),  # a tensor used twice on one task sent twice
    (lambda g: _cut(g, default=None), "want"),  # an op without a device is on no task
    (lambda g: _cut(g, reverse=True), "want"),  # (to, from)
])  # fmt: skip
def test_ch19_cut_edges_rejects(mistake, message) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch19.test_cut_edges_finds_the_partitioners_cut, message, 19, cut_edges=mistake)


def _average(comm, grads, packed=True, mean=True, dtype=np.float32):  # type: ignore[no-untyped-def]
    if not packed:  # one all-reduce per gradient
        return [comm.all_reduce(np.array(g, np.float32)) / comm.size for g in grads]
    buffer = np.concatenate([np.asarray(g, np.float32).reshape(-1) for g in grads])
    total = comm.all_reduce(buffer) / (comm.size if mean else 1)
    parts = np.split(total.astype(dtype), np.cumsum([np.size(g) for g in grads])[:-1])
    return [p.reshape(np.shape(g)) for p, g in zip(parts, grads, strict=True)]


@pytest.mark.parametrize(("mistake", "message"), [
    (lambda c, g: _average(c, g, packed=False), "called all_reduce 4 times"),
    (lambda c, g: _average(c, g, mean=False), "gradient 0"),  # the sum, not the mean
    (lambda c, g: _average(c, g, dtype=np.float64), "keep float32"),
])  # fmt: skip
def test_ch19_average_gradients_rejects(mistake, message) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch19.test_average_gradients_takes_the_mean_in_one_all_reduce, message, 2,
            average_gradients=mistake)  # fmt: skip


def _ring(comm, array, whole=False, gather=True, in_place=False):  # type: ignore[no-untyped-def]
    size, rank = comm.size, comm.rank
    flat = array.reshape(-1) if in_place else np.array(array, copy=True).reshape(-1)
    if whole:  # the whole array round the ring, size - 1 times: each adds what it gets
        running, total = flat.copy(), flat.copy()
        for step in range(2 * (size - 1)):
            request = comm.send(running, (rank + 1) % size, tag=step)
            got = comm.recv((rank - 1) % size, tag=step, shape=flat.shape, dtype=flat.dtype)
            request.wait()
            if step < size - 1:
                total += got
            running = got
        return total.reshape(np.shape(array))
    chunks = np.array_split(flat, size)
    right, left = (rank + 1) % size, (rank - 1) % size
    for step in range(size - 1):
        mine, theirs = (rank - step) % size, (rank - step - 1) % size
        request = comm.send(chunks[mine], right, tag=step)
        got = comm.recv(left, tag=step, shape=chunks[theirs].shape, dtype=flat.dtype)
        request.wait()
        chunks[theirs] += got
    for step in range(size - 1 if gather else 0):
        mine, theirs = (rank + 1 - step) % size, (rank - step) % size
        request = comm.send(chunks[mine], right, tag=size + step)
        got = comm.recv(left, tag=size + step, shape=chunks[theirs].shape, dtype=flat.dtype)
        request.wait()
        chunks[theirs][...] = got
    return flat.reshape(np.shape(array))


@pytest.mark.parametrize(("mistake", "message"), [
    (lambda c, a: _ring(c, a, whole=True), "numbers at once"),
    (lambda c, a: _ring(c, a, gather=False), "sum"),  # the all-gather round forgotten
    (lambda c, a: _ring(c, a, in_place=True), "the input changed"),
    (lambda c, a: c.all_reduce(np.array(a)), "must not call comm.all_reduce"),
])  # fmt: skip
def test_ch19_ring_all_reduce_rejects(mistake, message) -> None:  # type: ignore[no-untyped-def]
    rejects(test_ch19.test_ring_all_reduce_sums_on_every_task, message, 3, np.float64,
            ring_all_reduce=mistake)  # fmt: skip
