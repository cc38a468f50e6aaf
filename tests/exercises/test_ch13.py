"""Chapter 13 exercises: why graphs, a compiler sees everything (`exercises/ch13.py`)."""

from __future__ import annotations

import ast
import tracemalloc
from typing import Any

import numpy as np
import pytest
from ready_made import refusing

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import (
    Graph,
    Session,
    gradients,
    group,
    placeholder,
)
from eagerflow.graph.compiler import fusion
from eagerflow.graph.compiler import program as compiler_program
from eagerflow.graph.compiler.fusion import Cluster, find_clusters
from eagerflow.graph.compiler.specialize import Specialized, specialize
from eagerflow.graph.core import walks
from eagerflow.graph.core.session import Plan
from eagerflow.tensor.registry import get_op

pytestmark = pytest.mark.ch13


# --- fold_constants -------------------------------------------------------------------------------
def _folding_graph():  # type: ignore[no-untyped-def]
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, (2,), name="x")
        scale = ef.multiply(ef.sqrt(ef.constant(16.0, ef.float64), name="root"), 2.0, name="scale")
        offset = ef.add(scale, ef.reduce_sum(ef.ones((3,), ef.float64), name="three"), name="off")
        y = ef.multiply(x, offset, name="y")
        noise = ef.add(ef.random_uniform((), name="draw"), 1.0, name="noise")
        with g.control_dependencies([noise]):
            ef.multiply(ef.constant(5.0, name="five"), 2.0, name="late")
        left, right = ef.split(ef.constant([1.0, 2.0, 3.0, 4.0]), 2, name="halves")
        ef.add(left, right, name="pair")
    return g, x, y


def test_fold_constants_computes_what_is_known(chapter):
    g, _, _ = _folding_graph()
    known = chapter.fold_constants(g)
    assert isinstance(known, dict), f"expected a dict, got {known!r}"
    expected = {"root:0": 4.0, "scale:0": 8.0, "three:0": 3.0, "off:0": 11.0}
    for name, value in expected.items():
        assert name in known, f"expected {name} (= {value}) to be folded; got {sorted(known)}"
        assert float(known[name]) == value, f"{name}: expected {value}, got {known[name]!r}"
    np.testing.assert_array_equal(known.get("halves:0"), [1.0, 2.0], err_msg="halves:0")
    np.testing.assert_array_equal(known.get("pair:0"), [4.0, 6.0], err_msg="pair:0 (multi-output)")
    for name, why in [
        ("x:0", "a placeholder is fed"),
        ("y:0", "y needs the placeholder"),
        ("draw:0", "a random draw is stateful"),
        ("noise:0", "noise needs a random draw"),
        ("five:0", "this Const has a control input"),
        ("late:0", "late has a control input"),
    ]:
        assert name not in known, f"{name} must not be folded: {why}"


def test_fold_constants_agrees_with_the_session_plan(chapter):
    g, x, y = _folding_graph()
    known = chapter.fold_constants(g)
    plan = Plan([y], [x])
    needed = {"root", "scale", "three", "off"}  # the non-Const folded ops y needs (and Fill)
    folded_ops = {name.split(":")[0] for name in known} & (needed | {"Fill"})
    assert len(folded_ops) == plan.stats["folded"], (
        f"the Session's plan folds {plan.stats['folded']} operations for y; you folded "
        f"{sorted(folded_ops)}"
    )


# --- find_duplicates ------------------------------------------------------------------------------
def test_find_duplicates_merges_repeated_pure_work(chapter):
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (4,), name="x")
        x2 = placeholder(ef.float32, (4,), name="x2")
        a = ef.multiply(ef.tanh(x, name="t1"), 2.0, name="m1")
        b = ef.multiply(ef.tanh(x, name="t2"), 2.0, name="m2")
        total = ef.add(a, b, name="total")
        other = ef.tanh(x2, name="t3")
        ef.random_uniform((4,), name="r1")
        ef.random_uniform((4,), name="r2")
        s1 = ef.reduce_sum(x, axis=0, name="s1")
        s2 = ef.reduce_sum(x, name="s2")
        s3 = ef.reduce_sum(x, axis=0, name="s3")
    two_a, two_b = a.op.inputs[1].op.name, b.op.inputs[1].op.name
    got = chapter.find_duplicates(g)
    expected = {two_b: two_a, "t2": "t1", "m2": "m1", "s3": "s1"}
    assert got == expected, f"expected {expected}, got {got}"
    plan = Plan([total, other, s1, s2, s3], [x, x2])
    non_constants = sum(1 for name in got if g.get_operation_by_name(name).type != "Const")
    assert non_constants == plan.stats["merged"], "the Session's plan merges the same operations"


# --- both, on graphs the reader does not see ------------------------------------------------------
def random_graph(seed):  # type: ignore[no-untyped-def]
    """A graph of constants, a placeholder, random draws and pure ops, some repeated (to be
    merged), some waiting on control inputs (neither folded nor merged)."""
    rng = np.random.default_rng(seed)
    unary = [ef.tanh, ef.square, ef.abs, ef.exp]
    binary = [ef.add, ef.multiply, ef.subtract]
    g = Graph()
    made = []  # (function, inputs) of each pure op: some are made again
    with g.as_default():
        pool = [placeholder(ef.float64, (3,), name="x")]
        for i in range(18):
            kind = rng.random()
            if kind < 0.15:
                values = rng.integers(-3, 4, 3).astype(np.float64)
                pool.append(ef.constant(values))
                if rng.random() < 0.5:
                    pool.append(ef.constant(values))  # an equal constant: a duplicate
                continue
            if kind < 0.22:
                pool.append(ef.random_uniform((3,), dtype=ef.float64))  # stateful
                continue
            if kind < 0.4 and made:  # an op made again, on the same inputs
                fn, inputs, original = made[int(rng.integers(len(made)))]
                again = fn(*inputs)
                then = unary[int(rng.integers(len(unary)))]
                pool += [again, then(original), then(again)]  # the last repeats the one before
                continue
            elif kind < 0.47:
                keep = [p for p in pool[-4:]]
                axis = [None, 0][int(rng.integers(2))]
                fn, inputs = (lambda t, a=axis: ef.reduce_sum(t, axis=a, keepdims=True)), keep[-1:]
            else:
                fn = (unary + binary)[int(rng.integers(len(unary) + len(binary)))]
                arity = 1 if fn in unary else 2
                inputs = [
                    pool[int(i)] for i in rng.integers(max(0, len(pool) - 5), len(pool), arity)
                ]
            if rng.random() < 0.12:
                with g.control_dependencies([pool[int(rng.integers(len(pool)))].op]):
                    pool.append(fn(*inputs))
                continue
            pool.append(fn(*inputs))
            made.append((fn, inputs, pool[-1]))
    return g


def pure(operation):  # type: ignore[no-untyped-def]
    stateful = operation.op_def.stateful or operation.control_inputs
    return not stateful and operation.type != "Placeholder"


def reference_folding(graph):  # type: ignore[no-untyped-def]
    known = set()
    for operation in graph.get_operations():
        if pure(operation) and all(t in known for t in operation.inputs):
            known.update(operation.outputs)
    return known


def reference_duplicates(graph):  # type: ignore[no-untyped-def]
    same, first, duplicates = {}, {}, {}
    for operation in graph.get_operations():
        if not pure(operation):
            continue
        inputs = tuple(same.get(t.name, t.name) for t in operation.inputs)
        key = (operation.type, inputs, repr(sorted(operation.attrs.items())))
        original = first.setdefault(key, operation)
        if original is not operation:
            duplicates[operation.name] = original.name
            pairs = zip(operation.outputs, original.outputs, strict=True)
            same.update((a.name, b.name) for a, b in pairs)
    return duplicates


@pytest.mark.parametrize("seed", range(5))
def test_fold_constants_on_hidden_graphs(chapter, seed):
    g = random_graph(seed)
    known = chapter.fold_constants(g)
    assert isinstance(known, dict), f"expected a dict, got {known!r}"
    expected = reference_folding(g)
    missing = sorted(t.name for t in expected if t.name not in known)
    extra = sorted(set(known) - {t.name for t in expected})
    assert not missing and not extra, (
        f"a hidden graph: not folded but known {missing}; folded but not known {extra}"
    )
    with Session(g) as session:  # the values a Session computes, whatever x is fed
        values = session.run(sorted(expected, key=lambda t: t.name), {"x:0": np.ones(3)})
    for t, value in zip(sorted(expected, key=lambda t: t.name), values, strict=True):
        np.testing.assert_allclose(known[t.name], value, rtol=1e-12, err_msg=f"{t.name}")


@pytest.mark.parametrize("seed", range(5))
def test_find_duplicates_on_hidden_graphs(chapter, seed):
    g = random_graph(seed)
    got = chapter.find_duplicates(g)
    expected = reference_duplicates(g)
    assert got == expected, (
        f"a hidden graph ({len(g.get_operations())} operations): expected {expected}, got {got}"
    )


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
    ready_made = [(fusion, "find_clusters"), (fusion, "_finish")]  # the compiler's own pass
    with refusing("predict_clusters", "the compiler's clustering", *ready_made):
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


# --- plan_buffers (stretch) -----------------------------------------------------------------------
Feeds = dict[Any, tuple[int, ...]]


def alive(program: Specialized) -> dict[int, tuple[int, int]]:
    """Each value a node makes: the first and the last step it is alive."""
    span: dict[int, list[int]] = {}
    for step, node in enumerate(program.nodes):
        for v in node.outputs:
            span[v] = [step, step]
        for v in node.inputs:
            if v in span:
                span[v][1] = step
    for v in program.fetches:
        if v in span:
            span[v][1] = len(program.nodes)
    return {v: (first, last) for v, (first, last) in span.items()}


def fewest_buffers(program: Specialized) -> dict[tuple[Any, Any], int]:
    """For each shape and dtype, the most values of it alive at one step."""
    live = alive(program)
    most: dict[tuple[Any, Any], int] = {}
    for step in range(len(program.nodes) + 1):
        counts: dict[tuple[Any, Any], int] = {}
        for v, (first, last) in live.items():
            if first <= step <= last:
                key = (program.shapes[v], program.dtypes[v])
                counts[key] = counts.get(key, 0) + 1
        for key, count in counts.items():
            most[key] = max(most.get(key, 0), count)
    return most


def name_of(program: Specialized, v: int) -> str:
    """The tensor a value stands for: ``"mul:0"``."""
    for node in program.nodes:
        if v in node.outputs:
            return node.operation.outputs[node.outputs.index(v)].name
    return f"value {v}"


def run_with_buffers(program: Specialized, plan: Any, feeds: dict[Any, np.ndarray],
                     buffers_of: dict[int, Any]) -> list[Any]:  # fmt: skip
    """Run ``program`` as a compiled program would with the plan ``buffers_of``: each node's
    result is copied into its value's buffer, and later nodes read the buffer."""
    values: dict[int, Any] = dict(program.constants)
    values.update({plan.slot[t]: a for t, a in feeds.items()})
    buffers: dict[Any, np.ndarray] = {}
    for node in program.nodes:
        op = node.operation.op_def
        result = op.kernel(*(values[v] for v in node.inputs), **node.operation.attrs)
        for v, r in zip(node.outputs, result if op.multi_output else (result,), strict=True):
            shape, dtype = program.shapes[v], program.dtypes[v].np
            buffer = buffers.setdefault(buffers_of[v], np.empty(shape, dtype))
            buffer[...] = r
            values[v] = buffer
    return [values[v] for v in program.fetches]


def check_buffers(chapter: Any, fetches: list[Any], feeds: Feeds, seed: int, what: str) -> None:
    plan = Plan(list(fetches), list(feeds))
    program = specialize(plan, {plan.slot[t]: tuple(s) for t, s in feeds.items()})
    # the compiler's own planner, and the liveness it plans from: the answer, ready-made
    ready_made = [(compiler_program._Writer, "_plan_buffers"),
                  (compiler_program._Writer, "_last_uses"), (walks, "last_uses")]  # fmt: skip
    with refusing("plan_buffers", "the memory planner", *ready_made):
        got = chapter.plan_buffers(program)
    live = alive(program)
    assert isinstance(got, dict) and set(got) == set(live), (
        f"{what}: expected a buffer for each value the nodes make, {sorted(live)}; got {got!r:.300}"
    )
    by_buffer: dict[Any, list[int]] = {}
    for v, b in got.items():
        by_buffer.setdefault(b, []).append(v)
    for b, values in by_buffer.items():
        for i, u in enumerate(values):
            for v in values[i + 1 :]:
                pair = f"{name_of(program, u)} and {name_of(program, v)}"
                assert (program.shapes[u], program.dtypes[u]) == (
                    program.shapes[v], program.dtypes[v]
                ), (
                    f"{what}: {pair} share buffer {b!r}, but one is {program.dtypes[u]} "
                    f"{program.shapes[u]} and the other {program.dtypes[v]} {program.shapes[v]}"
                )  # fmt: skip
                (a0, a1), (b0, b1) = live[u], live[v]
                assert a1 < b0 or b1 < a0, (
                    f"{what}: {pair} share buffer {b!r}, but both are alive at step "
                    f"{max(a0, b0)} (alive at steps {a0}..{a1} and {b0}..{b1}, of "
                    f"{len(program.nodes)} nodes)"
                )
    used: dict[tuple[Any, Any], set[Any]] = {}
    for v, b in got.items():
        used.setdefault((program.shapes[v], program.dtypes[v]), set()).add(b)
    for key, fewest in fewest_buffers(program).items():
        assert len(used.get(key, ())) == fewest, (
            f"{what}: {len(used.get(key, ()))} buffers of dtype {key[1]} and shape {key[0]}; "
            f"at most {fewest} of those values are alive at once, so {fewest} suffice"
        )
    rng = np.random.default_rng(seed)
    arrays = {t: rng.uniform(-1, 1, feeds[t]).astype(t.dtype.np) for t in feeds}
    with Session(fetches[0].graph) as session:
        expected = session.run(list(fetches), arrays)
    for value, e, t in zip(run_with_buffers(program, plan, arrays, got), expected, fetches,
                           strict=True):  # fmt: skip
        np.testing.assert_allclose(
            value, e, rtol=1e-6, err_msg=f"{what}: {t.name}, run with your plan of buffers"
        )


def _mlp_step() -> tuple[list[Any], Feeds]:
    """A 2-layer MLP's loss and its weights' gradients: forward, then backward."""
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None, 16), name="x")
        y = placeholder(ef.float32, (None, 4), name="y")
        w1 = placeholder(ef.float32, (16, 32), name="w1")
        w2 = placeholder(ef.float32, (32, 4), name="w2")
        hidden = ef.relu(ef.matmul(x, w1))
        out = ef.matmul(hidden, w2)
        loss = ef.reduce_mean(ef.square(out - y))
        dw1, dw2 = gradients(loss, [w1, w2])
    return [loss, dw1, dw2], {x: (8, 16), y: (8, 4), w1: (16, 32), w2: (32, 4)}


def test_plan_buffers_on_an_mlp_training_step(chapter):
    fetches, feeds = _mlp_step()
    check_buffers(chapter, fetches, feeds, 909, "an MLP's loss and gradients")


def _chain_with_masks(seed: int) -> tuple[list[Any], Feeds]:
    """Elementwise ops on vectors, bool masks of the same shape, a split and a reduction."""
    rng = np.random.default_rng(seed)
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (10,), name="x")  # split needs the length
        z = placeholder(ef.float32, (10,), name="z")
        values = [x, z]
        for _ in range(14):
            a = values[int(rng.integers(max(0, len(values) - 3), len(values)))]
            b = values[int(rng.integers(len(values)))]
            kind = rng.random()
            if kind < 0.2:
                t = ef.where(a > b, a, 0.5 * b)  # a bool mask as long as the floats
            elif kind < 0.3:
                left, right = ef.split(a, 2)  # a multi-output op
                t = ef.concat([right, left], axis=0)
            elif kind < 0.6:
                t = [ef.tanh, ef.square, ef.abs, ef.negative][int(rng.integers(4))](a)
            else:
                t = [ef.add, ef.multiply, ef.subtract, ef.maximum][int(rng.integers(4))](a, b)
            values.append(t)
        total = ef.reduce_sum(values[-1] * values[len(values) // 2])
    return [values[-1], total, values[-4]], {x: (10,), z: (10,)}


def _stateless(build: Any) -> Any:
    def program() -> tuple[list[Any], Feeds]:
        graph = Graph()
        with graph.as_default():
            fetches, feeds = build()
        return fetches, feeds

    return program


def _layer_norm_parts() -> tuple[list[Any], Feeds]:
    x = placeholder(ef.float32, (None, 16), name="x")
    centred = x - ef.reduce_mean(x, axis=-1, keepdims=True)
    variance = ef.reduce_mean(centred * centred, axis=-1, keepdims=True)
    return [centred / ef.sqrt(variance + 1e-5) * 2.0, variance], {x: (8, 16)}


def _two_shapes() -> tuple[list[Any], Feeds]:
    x = placeholder(ef.float32, (None, 8), name="x")
    a = ef.tanh(x * 2.0 + 1.0)
    product = ef.matmul(a, ef.constant(np.ones((8, 3), np.float32)))
    b = ef.exp(-ef.square(a)) * 3.0 - a
    return [product * 2.0 + 1.0, b], {x: (4, 8)}


HIDDEN_BUFFER_PROGRAMS = {
    "layer_norm": _stateless(_layer_norm_parts),
    "two_shapes": _stateless(_two_shapes),
    **{f"chain_{seed}": lambda seed=seed: _chain_with_masks(seed) for seed in range(4)},
}


@pytest.mark.parametrize("name", list(HIDDEN_BUFFER_PROGRAMS))
def test_plan_buffers_on_hidden_programs(chapter, name):
    fetches, feeds = HIDDEN_BUFFER_PROGRAMS[name]()
    check_buffers(chapter, fetches, feeds, 919, f"hidden program {name}")
