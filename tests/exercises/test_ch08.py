"""Chapter 8 exercises: from eager to graph."""

from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import warnings

import numpy as np
import pytest
from ready_made import refusing

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Function, Graph, Session, SymbolicTensor, cond, function, placeholder
from eagerflow.graph.autograph import conversion, operators
from eagerflow.graph.autograph.converters import conditional_expressions, control_flow
from eagerflow.graph.core.session import Plan
from eagerflow.graph.tracing.signatures import RetracingWarning

pytestmark = pytest.mark.ch08


# --- signature ------------------------------------------------------------------------------------
def test_signature_describes_tensors_by_dtype_and_shape(chapter):
    a = chapter.signature(ef.constant([1.0, 2.0]))
    assert a == (("tensor", ef.float32, (2,)),), f"expected (('tensor', float32, (2,)),), got {a}"
    same = chapter.signature(ef.constant([5.0, -1.0]))
    assert a == same, "values do not matter, only dtype and shape"
    assert a != chapter.signature(ef.constant([1.0, 2.0, 3.0])), "a new shape is a new signature"
    assert a != chapter.signature(ef.constant([1, 2])), "a new dtype is a new signature"
    from_numpy = chapter.signature(np.array([1.0, 2.0], np.float32))
    assert from_numpy == a, f"a NumPy array counts as a tensor: expected {a}, got {from_numpy}"


def test_signature_describes_python_values_by_value_and_type(chapter):
    assert chapter.signature(2) == (("value", int, 2),), f"got {chapter.signature(2)}"
    assert chapter.signature(2) != chapter.signature(3), "each Python value is its own signature"
    assert chapter.signature(2) != chapter.signature(2.0), "an int and a float differ"
    assert chapter.signature(None, "relu") == (
        ("value", type(None), None),
        ("value", str, "relu"),
    ), f"got {chapter.signature(None, 'relu')}"


def test_signature_predicts_the_trace_count(chapter):
    @function
    def scale(x, factor):
        return x * factor

    calls = [
        (ef.constant([1.0, 2.0]), 2.0),
        (ef.constant([3.0, 4.0]), 2.0),  # same signature: no trace
        (ef.constant([3.0, 4.0]), 3.0),  # a new Python value: a trace
        (ef.constant([1.0, 2.0, 3.0]), 2.0),  # a new shape: a trace
        (np.array([7.0, 8.0], np.float32), 2.0),  # like the first call
        (ef.constant([1.0, 2.0], ef.float64), 2.0),  # a new dtype: a trace
        (ef.constant([1.0, 2.0]), ef.constant(2.0)),  # a tensor factor: a trace
        (ef.constant([1.0, 2.0]), ef.constant(5.0)),  # same signature as the previous one
    ]
    predicted = []
    for args in calls:
        scale(*args)
        predicted.append(chapter.signature(*args))
    assert scale.trace_count == 5, "the framework itself should trace 5 times here"
    got = len(set(predicted))
    assert got == scale.trace_count, (
        f"expected {scale.trace_count} distinct signatures (one per trace), got {got}"
    )


# --- mini_function --------------------------------------------------------------------------------
class Traced:
    """A function for mini_function that notes each call (a trace) and what it was given."""

    def __init__(self, fn):
        self.fn, self.calls = fn, []

    def __call__(self, *args):
        self.calls.append(args)
        return self.fn(*args)


class SessionRuns:
    def __init__(self, monkeypatch):
        self.count = 0
        run = Session.run

        def counted(session, *args, **kwargs):
            self.count += 1
            return run(session, *args, **kwargs)

        monkeypatch.setattr(Session, "run", counted)


def check_mini_function(chapter, monkeypatch, fn, calls, what):
    """Call mini_function(fn) on each argument tuple of ``calls``: fn must run once per new
    signature (as many times as ``@function`` traces), in a graph, and each call must run a
    Session and give fn's eager value."""
    real = function(fn)
    with warnings.catch_warnings():  # the hidden sequences retrace on purpose
        warnings.simplefilter("ignore", RetracingWarning)
        for args in calls:
            real(*args)
    traced = Traced(fn)
    mine = chapter.mini_function(traced)
    runs = SessionRuns(monkeypatch)
    for i, args in enumerate(calls):
        before = len(traced.calls)
        got = mine(*args)
        expected = fn(*(ef.convert_to_tensor(a) if isinstance(a, np.ndarray) else a for a in args))
        for traced_args in traced.calls[before:]:
            assert all(
                isinstance(t, SymbolicTensor) for t in traced_args if isinstance(t, ef.Tensor)
            ), f"{what}: fn was called with eager tensors {traced_args}: trace it in a Graph"
        assert isinstance(got, ef.Tensor) and not isinstance(got, SymbolicTensor), (
            f"{what}, call {i}: expected an eager tensor, got {got!r}"
        )
        np.testing.assert_allclose(
            got.numpy(), expected.numpy(), rtol=1e-6,
            err_msg=f"{what}, call {i} {args}: mini_function's value differs from fn's",
        )  # fmt: skip
        assert got.dtype is expected.dtype, (
            f"{what}, call {i} {args}: fn gives a {expected.dtype} tensor, mini_function a "
            f"{got.dtype} one: was this call run on a graph traced for another dtype?"
        )
        assert runs.count == i + 1, (
            f"{what}: after {i + 1} calls a Session ran {runs.count} times: run the traced "
            "graph with a Session on every call"
        )
    assert len(traced.calls) == real.trace_count, (
        f"{what}: fn ran {len(traced.calls)} times in {len(calls)} calls; @function traced "
        f"{real.trace_count} times: trace once per new signature, then reuse the graph"
    )


def test_mini_function_traces_once_per_signature(chapter, monkeypatch):
    def scale(x, factor):
        return x * factor

    calls = [
        (ef.constant([1.0, 2.0]), 2.0),
        (ef.constant([3.0, 4.0]), 2.0),  # same signature: no trace
        (ef.constant([3.0, 4.0]), 3.0),  # a new Python value: a trace
        (np.array([7.0, 8.0], np.float32), 2.0),  # like the first call
        (ef.constant([1.0, 2.0]), ef.constant(5.0)),  # a tensor factor: a trace
        (ef.constant([6.0, 1.0]), ef.constant(-1.0)),  # same: the new value is fed
    ]
    check_mini_function(chapter, monkeypatch, scale, calls, "x * factor")


def _hidden_function(x, power, mode):
    y = x**power if power else x
    if mode == "tanh":
        return ef.tanh(y) + ef.reduce_sum(x)
    if mode is None:
        return y * 0.5
    return ef.reduce_max(y * y, axis=-1)


def test_mini_function_on_hidden_call_sequences(chapter, monkeypatch):
    rng = np.random.default_rng(808)
    kinds = [((2,), np.float32), ((2, 2), np.float32), ((2,), np.float64)]
    for round_ in range(4):
        calls = []
        for _ in range(int(rng.integers(14, 20))):  # about half of them with a new signature
            shape, dtype = kinds[rng.integers(len(kinds))]
            x = rng.uniform(-1, 1, shape).astype(dtype)
            x = ef.constant(x) if rng.random() < 0.7 else x
            power = [2, 3][rng.integers(2)] if rng.random() < 0.9 else 0
            mode = ["tanh", "max"][rng.integers(2)] if rng.random() < 0.9 else None
            calls.append((x, power, mode))
        check_mini_function(chapter, monkeypatch, _hidden_function, calls, f"hidden {round_}")


def _scale_and_shift(x, factor):
    return x * factor + ef.reduce_sum(x)


def test_mini_function_on_hidden_dtypes_and_python_values(chapter, monkeypatch):
    # Two calls that differ only in a tensor's dtype, or only in the type of a Python value
    # (2 == 2.0 in Python, and they hash alike), must not share a trace.
    rng = np.random.default_rng(818)
    factors = [2, 2.0, 3, 3.0, 1, 1.0]
    for round_ in range(3):
        calls = []
        for _ in range(12):
            dtype = [np.float32, np.float64][rng.integers(2)]
            x = rng.uniform(-1, 1, 3).astype(dtype)
            calls.append((ef.constant(x), factors[rng.integers(len(factors))]))
        calls += [(ef.constant(np.ones(3, np.float64)), 2), (ef.constant(np.ones(3)), 2.0)]
        check_mini_function(
            chapter, monkeypatch, _scale_and_shift, calls, f"hidden dtypes and values {round_}"
        )


def test_mini_function_keys_its_cache_on_your_signature(chapter, monkeypatch):
    # The cache's key is what `signature` returns, no more, no less: with a signature that
    # gives every call a new key, every call traces; with one that gives every call the same
    # key, only the first does.
    module = sys.modules[chapter.mini_function.__module__]
    calls = [(ef.constant([1.0, 2.0]), 2.0), (ef.constant([3.0, 4.0]), 2.0),
             (ef.constant([5.0, 6.0]), 3.0), (ef.constant([7.0, 8.0]), 2.0)]  # fmt: skip
    for name, key, traces in [
        ("a new key for every call", lambda number: ("call", number), len(calls)),
        ("the same key for every call", lambda number: "always", 1),
    ]:
        number = [0]
        asked = []

        def spy(*args, key=key, number=number, asked=asked):
            asked.append(number[0])
            return key(number[0])

        monkeypatch.setattr(module, "signature", spy, raising=False)
        traced = Traced(lambda x, factor: x * factor)
        mine = chapter.mini_function(traced)
        for i, args in enumerate(calls):
            number[0] = i
            mine(*args)
        assert sorted(set(asked)) == list(range(len(calls))), (
            f"mini_function should look each call up by `signature(*args)` (yours, from above): "
            f"it was called for calls {sorted(set(asked))} of {len(calls)}"
        )
        assert len(traced.calls) == traces, (
            f"with a `signature` that gives {name}, fn should be traced {traces} time(s) in "
            f"{len(calls)} calls, and was traced {len(traced.calls)} time(s): key the cache "
            "on what `signature` returns"
        )


# --- train_step_function --------------------------------------------------------------------------
def test_train_step_function_traces_once_and_learns(chapter):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(50).astype(np.float32)
    ys = (3.0 * xs - 1.0).astype(np.float32)
    w, b = Variable(0.0), Variable(0.0)
    step = chapter.train_step_function(w, b, 0.1)
    assert isinstance(step, Function), f"expected a Function (use @function), got {step!r}"

    w_np, b_np = np.float32(0.0), np.float32(0.0)
    x, y = ef.constant(xs), ef.constant(ys)
    for i in range(40):
        loss = step(x, y)
        err = w_np * xs + b_np - ys
        expected_loss = np.mean(err * err)
        w_np = w_np - np.float32(0.1) * np.mean(2 * err * xs)
        b_np = b_np - np.float32(0.1) * np.mean(2 * err)
        assert float(loss) == pytest.approx(expected_loss, rel=1e-4), (
            f"step {i}: expected the loss {expected_loss} (before the update), got {loss!r}"
        )
    assert step.trace_count == 1, f"40 calls of one signature: expected 1 trace, got {step}"
    assert float(w.numpy()) == pytest.approx(float(w_np), rel=1e-4), f"w: got {w}"
    assert float(b.numpy()) == pytest.approx(float(b_np), rel=1e-4, abs=1e-6), f"b: got {b}"
    assert float(w.numpy()) == pytest.approx(3.0, abs=0.05), "w should approach 3"

    step(x[:10], y[:10])
    assert step.trace_count == 2, "a new length is a new signature: expected a second trace"


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


# --- bounce_with_cond -----------------------------------------------------------------------------
def eager_bounce(position, velocity, floor):  # type: ignore[no-untyped-def]
    """The chapter's ``bounce``, as given (the reader's copy could be edited)."""
    position = position + velocity
    if position < floor:
        position = 2 * floor - position
        velocity = -velocity * 0.8
        bounces = 1
    else:
        bounces = 0
    return position, velocity, bounces


def traced_without_autograph(fn, *args):  # type: ignore[no-untyped-def]
    """``function(fn, autograph=False)`` and its result for ``args``: an ``if`` on a tensor
    left in ``fn`` fails while tracing, which is reported as a wrong answer."""
    traced = function(fn, autograph=False)
    try:
        return traced, traced(*args)
    except TypeError as error:
        raise AssertionError(
            f"tracing it with autograph=False failed ({error}): is a Python if on a tensor "
            "left in it?"
        ) from error


BOUNCES = [  # (position, velocity, floor): not the docstring's; the edges included
    (5.0, -2.0, 0.0),  # falls, no bounce
    (1.0, -3.0, 0.0),  # through the floor: bounces
    (0.5, -0.5, 0.0),  # lands exactly on it: no bounce
    (-1.0, 0.5, -2.0),  # rising above a floor below zero
    (-1.5, -1.0, -2.0),  # through a floor below zero
    (3.0, 1.0, 10.0),  # below the floor after moving up: bounces up to it
    (2.5, 0.0, 2.5),  # resting on it
]


def test_bounce_with_cond_builds_an_if_node(chapter):
    args = [ef.constant(v) for v in BOUNCES[1]]
    traced, _ = traced_without_autograph(chapter.bounce_with_cond, *args)
    types = [op.type for op in traced.get_concrete_function(*args).graph.get_operations()]
    assert "If" in types, f"expected cond to build an If node; the traced graph has {types}"


def test_bounce_with_cond_gives_bounces_results_in_a_graph(chapter):
    for case in BOUNCES:
        args = [ef.constant(v) for v in case]
        _, got = traced_without_autograph(chapter.bounce_with_cond, *args)
        expected = eager_bounce(*args)
        assert isinstance(got, tuple | list) and len(got) == 3, (
            f"bounce_with_cond{case}: expected (position, velocity, bounces), got {got!r}"
        )
        for what, e, g in zip(("position", "velocity", "bounces"), expected, got, strict=True):
            assert float(g) == pytest.approx(float(e), abs=1e-6), (
                f"bounce_with_cond{case}: expected {what} {float(e)}, got {g!r}"
            )
        assert ef.convert_to_tensor(got[2]).dtype == ef.int32, f"bounces: got {got[2]!r}"


def test_bounce_with_cond_follows_a_ball_with_one_trace(chapter):
    traced = function(chapter.bounce_with_cond, autograph=False)
    position, velocity, floor = ef.constant(4.0), ef.constant(0.0), ef.constant(0.5)
    ball = [ef.constant(4.0), ef.constant(0.0)]
    bounces = 0
    for step in range(40):
        velocity = velocity - 0.3  # gravity, eagerly
        ball[1] = ball[1] - 0.3
        try:
            position, velocity, bounced = traced(position, velocity, floor)
        except TypeError as error:
            raise AssertionError(f"tracing with autograph=False failed: {error}") from error
        ball[0], ball[1], expected_bounced = eager_bounce(ball[0], ball[1], floor)
        bounces += int(bounced)
        assert float(position) == pytest.approx(float(ball[0]), abs=1e-5), (
            f"step {step}: expected the ball at {float(ball[0])}, got {float(position)}"
        )
        assert float(velocity) == pytest.approx(float(ball[1]), abs=1e-5), (
            f"step {step}: expected the velocity {float(ball[1])}, got {float(velocity)}"
        )
        assert int(bounced) == expected_bounced, (
            f"step {step}: expected {expected_bounced} bounces, got {int(bounced)}"
        )
    assert bounces >= 3, "the ball should have bounced a few times"
    assert traced.trace_count == 1, f"one signature, one trace: got {traced.trace_count}"


# --- if_to_ag_if ----------------------------------------------------------------------------------
def ag_if(test, if_true, if_false, names):  # type: ignore[no-untyped-def]
    """The exercise's runtime helper (the test's own copy)."""
    assert isinstance(names, tuple) and all(isinstance(n, str) for n in names), (
        f"ag_if's last argument: expected a tuple of the names, got {names!r}"
    )
    if isinstance(test, SymbolicTensor):
        return cond(test, if_true, if_false)
    return if_true() if test else if_false()


def refusing_autograph():  # type: ignore[no-untyped-def]
    """eagerflow's own AutoGraph: its conversion, its AST transformers, its ``if_stmt``."""
    ready_made = [
        (conversion, "convert"), (conversion, "to_code"), (conversion, "_compile"),
        (control_flow, "transform"), (conditional_expressions, "transform"),
        (operators, "if_stmt"), (conversion.HELPERS, "if_stmt"),
    ]  # fmt: skip
    return refusing("if_to_ag_if", "a mini AutoGraph", *ready_made)


def converted(chapter, fn):  # type: ignore[no-untyped-def]
    """``fn`` rewritten by the reader's ``if_to_ag_if``, compiled, and its new source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    with refusing_autograph():
        result = chapter.if_to_ag_if(tree)
    assert isinstance(result, ast.Module), f"expected the changed tree (a Module), got {result!r}"
    result = ast.fix_missing_locations(result)
    source = ast.unparse(result)
    namespace = {**fn.__globals__, "ag_if": ag_if}
    try:
        exec(compile(result, inspect.getsourcefile(fn) or "<converted>", "exec"), namespace)
    except (TypeError, ValueError, SyntaxError) as error:
        raise AssertionError(f"the changed tree does not compile ({error}):\n{source}") from error
    return namespace[fn.__name__], source


def piecewise(x):  # type: ignore[no-untyped-def]
    slope = 2.0
    offset = 0.0
    if x < 0.0:
        y = x * 0.5
        slope = 0.5
    else:
        y = x * slope + 1.0
        offset = 1.0
    return y, slope, offset


def clip_and_count(x, limit):  # type: ignore[no-untyped-def]
    clipped = 0
    if x > limit:
        x = limit
        clipped = 1
    return x, clipped


def with_python_conditions(x, double, log):  # type: ignore[no-untyped-def]
    if double:
        x = x * 2.0
    if log is not None:
        log.append("called")
    if x > 1.0:
        x = x - 1.0
    return x


def count_above(x):  # type: ignore[no-untyped-def]
    total = x * 0.0
    for k in range(3):
        if x > k:
            total = total + 1.0
    return total


class Box:
    def __init__(self):  # type: ignore[no-untyped-def]
        self.total = 0.0


def branches_to_leave_alone(x, flag, log, box):  # type: ignore[no-untyped-def]
    y = x * 1.0
    z = x * 0.0
    if flag:  # a call among the assignments
        y = y + 1.0
        log.append("flag")
    if flag:  # a tuple target
        z = z - 1.0
        y, z = z, y
    if flag:  # an augmented assignment
        y = y * 2.0
        z += 2.0
    if flag:  # an attribute
        y = y - 0.25
        box.total = y
    if flag:  # a nested if: the inner one is converted, the outer one stays
        z = z + 0.5
        if x > 1.0:
            z = z * 3.0
    if not flag:  # a return
        y = y + 10.0
        return y, z
    return y, z


# what if_to_ag_if must keep of branches_to_leave_alone, as ast.unparse writes it
KEPT = ["log.append('flag')", "y, z = (z, y)", "z += 2.0", "box.total = y", "z = z + 0.5",
        "return (y, z)"]  # fmt: skip


HIDDEN = [  # (function, Python arguments after x, values of x, tensor ifs it runs in a graph)
    (piecewise, (), [-2.0, -0.5, 0.0, 1.5], 1),
    (clip_and_count, (2.0,), [-1.0, 2.0, 2.5, 7.0], 1),
    (with_python_conditions, (True, None), [0.25, 0.5, 3.0], 1),
    (with_python_conditions, (False, None), [0.25, 1.5], 1),
    (count_above, (), [-1.0, 0.5, 1.5, 2.5], 3),
]
HIDDEN_IDS = ["piecewise", "clip_and_count", "python_flag_on", "python_flag_off", "in_a_loop"]


def run(fn, *args):  # type: ignore[no-untyped-def]
    with refusing_autograph():
        try:
            return fn(*args)
        except Exception as error:
            raise AssertionError(f"the converted function raised {error!r}") from error


def as_floats(result):  # type: ignore[no-untyped-def]
    return [float(v) for v in (result if isinstance(result, tuple | list) else [result])]


def test_if_to_ag_if_rewrites_the_ifs_that_only_assign(chapter):
    _, source = converted(chapter, piecewise)
    assert "ag_if(" in source and "if " not in source, (
        f"expected the if to become an ag_if call:\n{source}"
    )
    assert "lambda" in source, f"each branch should become a lambda:\n{source}"
    _, source = converted(chapter, with_python_conditions)
    assert source.count("ag_if(") == 2, f"expected two ifs converted:\n{source}"
    assert "if log is not None:" in source, f"an if with a call in it stays an if:\n{source}"
    _, source = converted(chapter, count_above)
    assert "ag_if(" in source, f"the if in the for loop should be converted too:\n{source}"


@pytest.mark.parametrize(("fn", "extra", "xs", "ifs"), HIDDEN, ids=HIDDEN_IDS)
def test_if_to_ag_if_gives_the_eager_results_in_a_graph(chapter, fn, extra, xs, ifs):
    new, source = converted(chapter, fn)
    traced = function(new, autograph=False)  # only the reader's rewrite makes this traceable
    for x in xs:
        expected = as_floats(fn(ef.constant(x), *extra))
        got = as_floats(run(traced, ef.constant(x), *extra))
        assert got == pytest.approx(expected), (
            f"{fn.__name__}({x}, ...) traced: expected {expected}, got {got}; the code was\n"
            f"{source}"
        )
    graph = traced.get_concrete_function(ef.constant(xs[0]), *extra).graph
    found = [op.type for op in graph.get_operations()].count("If")
    assert found == ifs, f"{fn.__name__}: expected {ifs} If node(s), got {found}:\n{source}"
    assert traced.trace_count == 1, "one signature, one trace"


@pytest.mark.parametrize(("fn", "extra", "xs", "ifs"), HIDDEN, ids=HIDDEN_IDS)
def test_if_to_ag_if_still_runs_eagerly(chapter, fn, extra, xs, ifs):
    new, source = converted(chapter, fn)
    for x in xs:
        for value in (ef.constant(x), x):  # an eager tensor, a Python number: Python's if
            expected = as_floats(fn(value, *extra))
            got = as_floats(run(new, value, *extra))
            assert got == pytest.approx(expected), (
                f"{fn.__name__}({value!r}, ...) eagerly: expected {expected}, got {got}; the "
                f"code was\n{source}"
            )
    if fn is with_python_conditions:
        log: list[str] = []
        run(new, ef.constant(1.0), True, log)
        assert log == ["called"], f"the if with a call in it must still run:\n{source}"


def test_if_to_ag_if_leaves_the_other_ifs_whole(chapter):
    new, source = converted(chapter, branches_to_leave_alone)
    assert source.count("ag_if(") == 1, (
        "only the innermost if of branches_to_leave_alone assigns nothing but names: expected "
        f"one ag_if, the other ifs left as they are:\n{source}"
    )
    for statement in KEPT:
        assert statement in source, (
            f"`{statement}` is gone: an if whose branches hold anything but `name = ...` must "
            f"be left as it is, every statement kept:\n{source}"
        )
    for flag in (True, False):
        for x in (ef.constant(2.0), ef.constant(-0.5), 1.5):
            log, box = [], Box()
            expected = as_floats(branches_to_leave_alone(x, flag, log, box))
            my_log, my_box = [], Box()
            got = as_floats(run(new, x, flag, my_log, my_box))
            assert (got, my_log, float(my_box.total)) == (
                pytest.approx(expected),
                log,
                pytest.approx(float(box.total)),
            ), (
                f"branches_to_leave_alone({x!r}, {flag}): expected {expected}, log {log} and "
                f"box.total {float(box.total)}, got {got}, {my_log} and {float(my_box.total)}; "
                f"the code was\n{source}"
            )


# --- relaxing_function (stretch) ------------------------------------------------------------------
def predicted_traces(calls):
    """The placeholder shapes of each trace the exercise's rules make, in order."""
    entries, traces = {}, []
    for args in calls:
        tensors = [ef.convert_to_tensor(a) for a in args if isinstance(a, ef.Tensor | np.ndarray)]
        key = tuple(
            ("tensor", ef.convert_to_tensor(a).dtype, np.ndim(a))
            if isinstance(a, ef.Tensor | np.ndarray) else ("value", type(a), a)
            for a in args
        )  # fmt: skip
        shapes = [tuple(t.shape) for t in tensors]
        old = entries.get(key)
        if old is not None:
            pairs = [(o, s) for po, ps in zip(old, shapes, strict=True)
                     for o, s in zip(po, ps, strict=True)]  # fmt: skip
            fits = all(o is None or o == s for o, s in pairs)
            if fits:
                continue
            shapes = [tuple(o if o == s else None for o, s in zip(po, ps, strict=True))
                      for po, ps in zip(old, shapes, strict=True)]  # fmt: skip
        entries[key] = shapes
        traces.append(shapes)
    return traces


def check_relaxing(chapter, monkeypatch, fn, calls, what):
    traced = Traced(fn)
    mine = chapter.relaxing_function(traced)
    runs = SessionRuns(monkeypatch)
    for i, args in enumerate(calls):
        got = mine(*args)
        expected = fn(*(ef.convert_to_tensor(a) if isinstance(a, np.ndarray) else a for a in args))
        np.testing.assert_allclose(
            np.asarray(got), expected.numpy(), rtol=1e-6,
            err_msg=f"{what}, call {i}: the value differs from fn's",
        )  # fmt: skip
    assert runs.count == len(calls), f"{what}: run a Session on every call"
    expected = predicted_traces(calls)
    got = [[tuple(t.shape) for t in args if isinstance(t, SymbolicTensor)] for args in traced.calls]
    assert got == expected, (
        f"{what}: expected {len(expected)} traces with placeholder shapes {expected}, "
        f"got {len(got)}: {got}"
    )


def test_relaxing_function_stretch_relaxes_a_changing_length(chapter, monkeypatch):
    calls = [(ef.constant(np.ones(n)), 2.0) for n in (2, 2, 3, 5, 2)]
    calls.append((ef.constant(np.ones(4)), 3.0))  # a new Python value: its own entry
    check_relaxing(chapter, monkeypatch, lambda x, k: ef.reduce_sum(x) * k, calls, "lengths")


def test_relaxing_function_stretch_on_hidden_call_sequences(chapter, monkeypatch):
    rng = np.random.default_rng(818)
    for round_ in range(3):
        calls = []
        for _ in range(int(rng.integers(8, 14))):
            rows = int(rng.integers(1, 4))
            cols = [3, int(rng.integers(2, 5))][round_ % 2]
            x = rng.uniform(-1, 1, (rows, cols)).astype([np.float32, np.float64][rng.integers(2)])
            calls.append(
                (x if rng.random() < 0.3 else ef.constant(x), ["sum", "max"][rng.integers(2)])
            )

        def fn(x, how):
            return ef.reduce_sum(x * x, axis=1) if how == "sum" else ef.reduce_max(x, axis=1)

        check_relaxing(chapter, monkeypatch, fn, calls, f"hidden sequence {round_}")
