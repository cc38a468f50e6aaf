"""Chapter 8 exercises: from eager to graph."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Function, Graph, function, placeholder
from eagerflow.graph.session import Plan

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
