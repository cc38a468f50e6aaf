"""Chapter 9 exercises: why graphs, a compiler sees everything (`exercises/ch09.py`)."""

from __future__ import annotations

import ast
import tracemalloc
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, gradients, group, placeholder
from eagerflow.graph.compiler.fusion import Cluster, find_clusters
from eagerflow.graph.compiler.specialize import Specialized, specialize
from eagerflow.graph.session import Plan
from eagerflow.tensor.registry import get_op

pytestmark = pytest.mark.ch09


# --- fuse_unary_chain -----------------------------------------------------------------------------
def compile_chain(source: str) -> Any:
    """The test's own copy of the given helper: ``np`` is the source's only global."""
    namespace: dict[str, Any] = {"np": np}
    exec(compile(source, "<fused chain>", "exec"), namespace)
    return namespace["fused"]


def one_at_a_time(ops: list[str], x: np.ndarray) -> np.ndarray:
    """The chain as the interpreter runs it: each op's NumPy kernel, a new array each."""
    for op in ops:
        x = np.asarray(get_op(op).kernel(x))
    return x


def check_chain(chapter: Any, ops: list[str], x: np.ndarray) -> None:
    source = chapter.fuse_unary_chain(list(ops))
    assert isinstance(source, str), f"expected the source as a str, got {type(source).__name__}"
    fused = compile_chain(source)
    out = np.full_like(x, 12345.0)
    with np.errstate(all="ignore"):
        fused(x, out)
        expected = one_at_a_time(ops, x)
    np.testing.assert_allclose(
        out, expected, rtol=1e-12, atol=0, equal_nan=True,
        err_msg=f"the fused chain {ops} differs from its ops run one at a time, on x = {x}",
    )  # fmt: skip


def test_fuse_unary_chain_computes_the_chain(chapter):
    check_chain(chapter, ["Square", "Neg", "Exp"], np.linspace(-2.0, 2.0, 9))


HIDDEN_CHAINS = [
    [],
    ["Relu", "Square"],
    ["Neg", "Relu"],
    ["Relu", "Neg"],
    ["Abs", "Sqrt", "Log", "Neg", "Tanh"],
    ["Sign", "Square", "Identity", "Neg"],
    ["Tanh", "Square", "Neg", "Exp", "Relu", "Sqrt"],
    ["Log"],
]


@pytest.mark.parametrize("ops", HIDDEN_CHAINS, ids=lambda ops: "-".join(ops) or "empty")
def test_fuse_unary_chain_on_hidden_chains(chapter, ops):
    x = np.array([-3.0, -1.5, -0.25, 0.0, 0.5, 1.0, 2.5, np.nan, np.inf, -np.inf])
    check_chain(chapter, ops, x)


def test_fuse_unary_chain_is_one_loop_that_allocates_no_array(chapter):
    ops = ["Square", "Neg", "Exp", "Relu"]
    source = chapter.fuse_unary_chain(ops)
    loops = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.For | ast.While)]
    assert len(loops) == 1, (
        f"a fused chain is one loop over the elements; this source has {len(loops)}:\n{source}"
    )
    fused = compile_chain(source)
    x = np.linspace(-1.0, 1.0, 20_000)
    out = np.empty_like(x)
    fused(x, out)  # a first call, outside the count
    tracemalloc.start()
    start, _ = tracemalloc.get_traced_memory()
    fused(x, out)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak - start < x.nbytes // 4, (
        f"one call allocated up to {peak - start} bytes, for an input of {x.nbytes}: a fused "
        "loop keeps one element at a time and makes no intermediate array"
    )
    np.testing.assert_allclose(out, one_at_a_time(ops, x), rtol=1e-12)


# --- predict_clusters -----------------------------------------------------------------------------
def program_for(fetches: list[Any], feeds: dict[Any, tuple[int, ...]]) -> Specialized:
    plan = Plan(list(fetches), list(feeds))
    return specialize(plan, {plan.slot[t]: tuple(s) for t, s in feeds.items()})


def real_clusters(program: Specialized) -> set[tuple[str, ...]]:
    units = find_clusters(program)
    return {tuple(n.operation.name for n in u.nodes) for u in units if isinstance(u, Cluster)}


def check_clusters(chapter: Any, program: Specialized) -> None:
    names = [n.operation.name for n in program.nodes]
    got = chapter.predict_clusters(program)
    assert isinstance(got, list), f"expected a list of clusters, got {type(got).__name__}"
    for cluster in got:
        order = [names.index(n) for n in cluster if n in names]
        assert order == sorted(order) and len(order) == len(cluster), (
            f"each cluster lists op names of the program, in program order: got {cluster}, "
            f"program {names}"
        )
    expected = real_clusters(program)
    assert {tuple(c) for c in got} == expected, (
        f"program {names}:\nexpected the clusters {sorted(expected)},\ngot {got}"
    )


def regression_program() -> Specialized:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        y = placeholder(ef.float32, (None,), name="y")
        w, b = Variable(5.0, name="W"), Variable(10.0, name="B")
        error = w * x + b - y
        loss = ef.reduce_mean(error * error)
        dw, db = gradients(loss, [w, b])
        train = group(w.assign_sub(0.01 * dw), b.assign_sub(0.01 * db))
    return program_for([loss, train], {x: (1000,), y: (1000,)})


def test_predict_clusters_on_the_chapters_training_step(chapter):
    check_clusters(chapter, regression_program())


def _layer_norm() -> Specialized:  # a reduction's result read in its own domain
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None, 16), name="x")
        centred = x - ef.reduce_mean(x, axis=-1, keepdims=True)
        variance = ef.reduce_mean(centred * centred, axis=-1, keepdims=True)
        out = centred / ef.sqrt(variance + 1e-5) * 2.0
    return program_for([out], {x: (8, 16)})


def _write_between() -> Specialized:  # a variable write seals what came before it
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        calls = Variable(0.0, name="calls")
        before = x * 2.0 + 1.0
        count = calls.assign_add(1.0)  # reads nothing of the loop before it
        after = x * 3.0 - 1.0
    return program_for([before, count, after], {x: (50,)})


def _read_from_outside() -> Specialized:  # a matmul reads a cluster's value: sealed
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None, 8), name="x")
        a = x * 2.0 + 1.0
        product = ef.matmul(a, ef.constant(np.ones((8, 3), np.float32)))
        b = a * 3.0 - 1.0
    return program_for([product, b], {x: (4, 8)})


def _two_domains() -> Specialized:  # ops of two shapes interleaved: one loop per shape
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        z = placeholder(ef.float32, (None,), name="z")
        a = x * 2.0
        s = z * 3.0
        a2 = a + 1.0
        s2 = s - 1.0
        c = x * 5.0 - 2.0
    return program_for([a2, s2, c], {x: (16,), z: (4,)})


def _lone_ops() -> Specialized:  # a lone elementwise op is no cluster, a lone reduction is
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None, 4), name="x")
        z = placeholder(ef.float32, (None,), name="z")
        negated = -x
        total = ef.reduce_sum(z)
    return program_for([negated, total], {x: (3, 4), z: (5,)})


def _tanh_in_the_middle() -> Specialized:  # fusible or not: domain_of knows
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        out = ef.tanh(x * 2.0 + 1.0) * 3.0 - 1.0
        total = ef.reduce_max(out)
    return program_for([out, total], {x: (64,)})


HIDDEN_PROGRAMS = {
    "layer_norm": _layer_norm,
    "write_between": _write_between,
    "read_from_outside": _read_from_outside,
    "two_domains": _two_domains,
    "lone_ops": _lone_ops,
    "tanh_in_the_middle": _tanh_in_the_middle,
}


@pytest.mark.parametrize("name", list(HIDDEN_PROGRAMS))
def test_predict_clusters_agrees_with_the_compiler(chapter, name):
    check_clusters(chapter, HIDDEN_PROGRAMS[name]())
