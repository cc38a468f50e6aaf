"""GradientTape: watching, gradient(), jacobians, nesting, stop_gradient, custom gradients,
the gradient registry and check_gradients. Numbers are TensorFlow's documented examples."""

from __future__ import annotations

import collections
import gc
import math
import re
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import (
    GRADIENTS,
    GradientCheckError,
    GradientTape,
    Variable,
    check_gradients,
    custom_gradient,
    not_differentiable,
    register_gradient,
    stop_gradient,
)
from eagerflow.autodiff.tape import inputs_end, pack, unpack
from eagerflow.tensor import dtypes, execution, registry, rules


def value(t: Any) -> Any:
    """A gradient's value as NumPy (fails clearly on None)."""
    assert t is not None, "expected a gradient, got None"
    return np.asarray(t.numpy())


def raises(exc: type[Exception], *fragments: str):  # type: ignore[no-untyped-def]
    """pytest.raises that also checks every fragment appears in the message."""
    return pytest.raises(exc, match="(?s)" + "".join(f"(?=.*{re.escape(f)})" for f in fragments))


@pytest.fixture
def new_op() -> Iterator[str]:
    """A freshly registered float op (x -> -x) with no gradient rule; removed afterwards."""
    name = f"TestNoGrad_{uuid.uuid4().hex[:8]}"
    registry.register_op(
        name,
        np.negative,
        shape=rules.same_shape_rule,
        dtype=rules.same_dtype(dtypes.FLOATS),
    )
    try:
        yield name
    finally:
        registry.OPS.pop(name, None)
        GRADIENTS.pop(name, None)


def test_an_entry_unpacks_to_the_record_it_was_packed_from() -> None:
    # one flat tuple per op (see `pack`); several inputs and outputs must not run together
    x, y = ef.constant([1.0, 2.0]), ef.constant([3.0, 4.0])
    outputs = ef.split(ef.concat([x, y], 0), 2)
    op, attrs = registry.get_op("SplitV"), {"axis": 0}
    entry = pack(op, (x, y), attrs, tuple(outputs))
    assert entry[inputs_end(entry) :] == tuple(outputs)
    record = unpack(entry)
    assert (record.op, record.inputs, record.attrs) == (op, (x, y), attrs)
    assert record.outputs == tuple(outputs) and record.skip == frozenset()


# --- what a tape watches -------------------------------------------------------------------
def test_trainable_variables_are_watched_automatically_in_first_read_order() -> None:
    v1, v2 = Variable(1.0), Variable(2.0)
    fixed = Variable(3.0, trainable=False)
    with GradientTape() as tape:
        y = v2 * fixed * v1 * v2
    assert tape.watched_variables() == (v2, v1)
    g1, g2, gf = tape.gradient(y, [v1, v2, fixed])
    assert value(g1) == 12.0  # v2² · fixed
    assert value(g2) == 12.0  # 2 v2 · fixed · v1
    assert gf is None


def test_non_trainable_variable_is_watched_only_after_watch() -> None:
    fixed = Variable(3.0, trainable=False)
    with GradientTape() as tape:
        y = fixed * fixed
    assert tape.gradient(y, fixed) is None
    assert tape.watched_variables() == ()
    with GradientTape() as tape:
        tape.watch(fixed)
        y = fixed * fixed
    assert tape.watched_variables() == (fixed,)
    assert value(tape.gradient(y, fixed)) == 6.0


def test_plain_tensor_is_watched_only_after_watch() -> None:
    x = ef.constant(3.0)
    with GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert value(tape.gradient(y, x)) == 6.0


def test_unwatched_tensor_next_to_a_watched_one_gets_none() -> None:
    # TensorFlow's classic example: only x is watched, so y is a constant for this tape.
    x, y = ef.constant(3.0), ef.constant(2.0)
    with GradientTape() as tape:
        tape.watch(x)
        z = x * y
    dx, dy = tape.gradient(z, [x, y])
    assert value(dx) == 2.0
    assert dy is None


def test_rules_skip_exactly_the_inputs_that_lead_to_no_source(monkeypatch: Any) -> None:
    # Two paths in backprop: when every watched tensor is a source, the tape already knows
    # which tensors depend on one; otherwise backprop works it out. Both must tell each rule
    # the same thing, and give the same gradients.
    skips: list[frozenset[int]] = []
    mul_rule = GRADIENTS["Mul"]

    def spy(op: Any, grad: Any) -> Any:
        skips.append(op.skip)
        return mul_rule(op, grad)

    monkeypatch.setitem(GRADIENTS, "Mul", spy)
    x, w = ef.constant(3.0), ef.constant(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch([x, w])
        y = x * w
    assert [value(g) for g in tape.gradient(y, [x, w])] == [2.0, 3.0]  # every root a source
    assert skips == [frozenset()]
    assert value(tape.gradient(y, x)) == 2.0  # w is watched but not asked for
    assert skips[-1] == frozenset({1})
    assert value(tape.gradient(y, w)) == 3.0
    assert skips[-1] == frozenset({0})


def test_watch_accessed_variables_false_disables_auto_watching() -> None:
    v1, v2 = Variable(1.0), Variable(2.0)
    with GradientTape(watch_accessed_variables=False) as tape:
        y = v1 * v2
    assert tape.watched_variables() == ()
    assert tape.gradient(y, [v1, v2]) == [None, None]
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v2)
        y = v1 * v2
    assert tape.watched_variables() == (v2,)
    g1, g2 = tape.gradient(y, [v1, v2])
    assert g1 is None
    assert value(g2) == 1.0


def test_watch_accepts_tensors_variables_and_nested_lists() -> None:
    a, b, c = ef.constant(2.0), ef.constant([1.0, 2.0]), ef.constant(5.0)
    v = Variable(3.0, trainable=False)
    with GradientTape() as tape:
        tape.watch([a, [v, (b, [c])]])
        y = a * v * ef.reduce_sum(b) * c
    ga, gv, gb, gc = tape.gradient(y, [a, v, b, c])
    assert value(ga) == 3.0 * 3.0 * 5.0
    assert value(gv) == 2.0 * 3.0 * 5.0
    np.testing.assert_array_equal(value(gb), [30.0, 30.0])
    assert value(gc) == 2.0 * 3.0 * 3.0
    assert tape.watched_variables() == (v,)


@pytest.mark.parametrize("bad", ["x", 3.0, 2, np.array([1.0, 2.0]), None, [ef.constant(1.0), "x"]])
def test_watch_rejects_everything_else(bad: Any) -> None:
    with GradientTape() as tape, pytest.raises(ValueError, match="watch"):
        tape.watch(bad)


def test_watching_an_int_tensor_warns_and_its_gradient_is_none() -> None:
    xi = ef.constant([1, 2])
    with GradientTape() as tape:
        with pytest.warns(UserWarning, match="int32"):
            tape.watch(xi)
        y = ef.cast(xi, ef.float32) * 2.0
    assert tape.gradient(y, xi) is None


def test_bool_tensor_and_int_variable_have_no_gradient() -> None:
    xb = ef.constant([True, False])
    vi = Variable([1, 2])
    with GradientTape() as tape:
        with pytest.warns(UserWarning):
            tape.watch(xb)
        y = ef.cast(xb, ef.float32) * 3.0 + ef.cast(vi, ef.float32)
    assert tape.gradient(y, [xb, vi]) == [None, None]


# --- gradient(): targets, sources, seeds ------------------------------------------------------
def test_non_scalar_target_is_differentiated_as_its_sum() -> None:
    x = Variable(2.0)
    with GradientTape() as tape:
        y = x * [3.0, 4.0]
    assert value(tape.gradient(y, x)) == 7.0


def test_a_list_of_targets_is_summed() -> None:
    x = ef.constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        y1 = x * x  # 2x = 6
        y2 = x * [1.0, 2.0]  # 1 + 2 = 3
    assert value(tape.gradient([y1, y2], x)) == 9.0


def test_sources_may_be_any_nest_and_the_result_has_its_structure() -> None:
    Pair = collections.namedtuple("Pair", "first second")
    x = ef.constant([1.0, 2.0, 3.0])
    w = Variable([[1.0, 2.0], [3.0, 4.0]])
    b = Variable(0.5)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ef.reduce_sum(x) * ef.reduce_sum(w) + b
    assert isinstance(tape.gradient(y, x), ef.Tensor)
    assert isinstance(tape.gradient(y, w), ef.Tensor)
    grads = tape.gradient(y, {"x": x, "rest": [w, Pair(b, (x,))]})
    assert isinstance(grads, dict) and list(grads) == ["x", "rest"]
    assert isinstance(grads["rest"], list) and len(grads["rest"]) == 2
    pair = grads["rest"][1]
    assert isinstance(pair, Pair) and isinstance(pair.second, tuple)
    np.testing.assert_array_equal(value(grads["x"]), [10.0, 10.0, 10.0])  # sum(w)
    np.testing.assert_array_equal(value(grads["rest"][0]), np.full((2, 2), 6.0))  # sum(x)
    assert value(pair.first) == 1.0
    np.testing.assert_array_equal(value(pair.second[0]), [10.0, 10.0, 10.0])
    as_tuple = tape.gradient(y, (x, b))
    assert isinstance(as_tuple, tuple) and len(as_tuple) == 2
    for source, grad in [(x, grads["x"]), (w, grads["rest"][0]), (b, pair.first)]:
        assert grad.shape == source.shape
        assert grad.dtype is source.dtype


def test_output_gradients_seed_a_vector_jacobian_product() -> None:
    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = ef.stack([x[0] * x[1], x[0] + x[1], x[1] * x[1]])
    g = tape.gradient(y, x, output_gradients=ef.constant([1.0, 10.0, 100.0]))
    # J = [[x1, x0], [1, 1], [0, 2 x1]] = [[2, 1], [1, 1], [0, 4]];  uᵀJ with u = (1, 10, 100)
    np.testing.assert_allclose(value(g), [1 * 2 + 10 * 1, 1 * 1 + 10 * 1 + 100 * 4])


def test_output_gradients_for_a_list_of_targets() -> None:
    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y1 = x * 2.0
        y2 = x * x
    g = tape.gradient(
        [y1, y2], x, output_gradients=[ef.constant([1.0, 0.0]), ef.constant([0.0, 3.0])]
    )
    np.testing.assert_allclose(value(g), [2.0, 3.0 * 2.0 * 2.0])


def test_output_gradients_must_fit_the_targets() -> None:
    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    message = r"output_gradients\[0\] has shape \(3,\) but target 0 has shape \(2,\)"
    with pytest.raises(ef.ShapeError, match=message):
        tape.gradient(y, x, output_gradients=ef.constant([1.0, 1.0, 1.0]))
    with pytest.raises(ValueError, match=r"2 output_gradients for 1 targets"):
        tape.gradient(y, x, output_gradients=[ef.constant([1.0, 1.0])] * 2)
    # the refused calls left the (non-persistent) tape unused
    np.testing.assert_allclose(
        value(tape.gradient(y, x, output_gradients=ef.constant([3.0, 1.0]))), [6, 4]
    )


def test_unconnected_sources_get_none_by_default() -> None:
    x, other = ef.constant(2.0), ef.constant([1.0, 2.0])
    v = Variable([[1.0, 2.0, 3.0]])
    with GradientTape() as tape:
        tape.watch([x, other])
        y = x * x
    assert tape.gradient(y, [other, v], unconnected_gradients="none") == [None, None]


def test_unconnected_sources_get_zeros_of_their_shape_with_zero() -> None:
    x, other = ef.constant(2.0), ef.constant([1.0, 2.0])
    v = Variable([[1.0, 2.0, 3.0]])
    with GradientTape() as tape:
        tape.watch([x, other])
        y = x * x
    gx, gother, gv = tape.gradient(y, [x, other, v], unconnected_gradients="zero")
    assert value(gx) == 4.0
    assert gother.shape == (2,) and gother.dtype is ef.float32
    np.testing.assert_array_equal(value(gother), [0.0, 0.0])
    assert gv.shape == (1, 3)
    np.testing.assert_array_equal(value(gv), np.zeros((1, 3)))


@pytest.mark.parametrize("bad", ["zeros", "None", "", "ZERO"])
def test_unconnected_gradients_other_values_raise(bad: str) -> None:
    x = ef.constant(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients=bad)
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.jacobian(y, x, unconnected_gradients=bad)


def test_gradient_of_an_intermediate_and_of_a_target_itself() -> None:
    x = ef.constant(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert value(tape.gradient(z, y)) == 18.0  # dz/dy = 2y
    assert value(tape.gradient(y, y)) == 1.0


# --- persistence -------------------------------------------------------------------------------
def test_non_persistent_tape_computes_gradients_only_once() -> None:
    x = ef.constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    assert value(tape.gradient(y, x)) == 6.0
    with raises(RuntimeError, "persistent=True"):
        tape.gradient(y, x)
    with raises(RuntimeError, "persistent=True"):
        tape.jacobian(y, x)


def test_persistent_tape_tensorflow_example() -> None:
    x = ef.constant(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    assert value(tape.gradient(z, x)) == 108.0  # 4 x³
    assert value(tape.gradient(y, x)) == 6.0  # 2 x
    assert value(tape.gradient(z, x)) == 108.0  # the same answer again
    assert value(tape.gradient(y, x)) == 6.0
    assert value(tape.gradient(z, y)) == 18.0  # dz/dy = 2y


def test_non_persistent_tape_drops_its_records_after_gradient() -> None:
    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(x * x)
    # _records is private; we peek at it to check the memory is released.
    assert len(tape._entries) == 2
    tape.gradient(y, x)
    assert tape._entries == []


def test_non_persistent_tape_records_nothing_after_gradient_inside_the_block() -> None:
    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
        tape.gradient(y, x)
        for _ in range(5):
            y = y * 2.0
        # _records is private; we peek at it to check the spent tape holds nothing.
        assert tape._entries == []


def test_persistent_tape_keeps_its_records() -> None:
    x = ef.constant(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    assert len(tape._entries) == 1  # private attribute, peeked at on purpose


# --- stop_recording, reset, several tapes ------------------------------------------------------
def test_stop_recording_leaves_ops_off_the_tape() -> None:
    x = ef.constant(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            hidden = y * 3.0
        seen = y * 5.0
    assert tape.gradient(hidden, x) is None
    assert value(tape.gradient(seen, x)) == 20.0  # recording resumed after the block
    assert value(tape.gradient(y, x)) == 4.0


def test_stop_recording_on_a_tape_that_is_not_recording_raises() -> None:
    tape = GradientTape()
    with pytest.raises(RuntimeError, match="recording"), tape.stop_recording():
        pass
    with tape:
        pass
    with pytest.raises(RuntimeError, match="recording"), tape.stop_recording():
        pass


def test_gradient_inside_stop_recording_keeps_recording_stopped() -> None:
    x = ef.constant(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        with tape.stop_recording():
            assert value(tape.gradient(y, x)) == 6.0
            hidden = y * 2.0
        assert execution.active_recorders().count(tape) == 1
    assert tape.gradient(hidden, x) is None


def test_variable_gradient_after_gradient_inside_stop_recording() -> None:
    v = Variable(3.0)
    with GradientTape(persistent=True) as tape:
        y = v * v
        with tape.stop_recording():
            assert value(tape.gradient(y, v)) == 6.0
        z = v * 2.0
    assert value(tape.gradient(z, v)) == 2.0


def test_reset_forgets_what_was_recorded_and_recording_goes_on() -> None:
    # TensorFlow's reset() example: only the loss added after reset() is differentiated.
    v, u = Variable(2.0), Variable(3.0)
    with GradientTape() as tape:
        loss = v * v
        tape.reset()
        loss = loss + u * u
    assert tape.watched_variables() == (u,)
    gv, gu = tape.gradient(loss, [v, u])
    assert gv is None
    assert value(gu) == 6.0


def test_reset_forgets_watched_tensors() -> None:
    x = ef.constant(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        before = x * x
        tape.reset()
        after_unwatched = x * 3.0
        tape.watch(x)
        after = x * 5.0
    assert tape.gradient(before, x) is None
    assert tape.gradient(after_unwatched, x) is None
    assert value(tape.gradient(after, x)) == 5.0


def test_reset_makes_a_spent_tape_usable_again() -> None:
    x = ef.constant(2.0)
    with GradientTape() as tape:
        tape.watch(x)
        tape.gradient(x * x, x)
        tape.reset()
        tape.watch(x)
        y = x * x * x
    assert value(tape.gradient(y, x)) == 12.0


def test_several_tapes_record_at_once_each_with_its_own_watch_set() -> None:
    a = Variable(2.0, trainable=False)
    c = Variable(5.0, trainable=False)
    with GradientTape() as t1, GradientTape() as t2:
        t1.watch(a)
        t2.watch(c)
        z = a * c
    assert t1.watched_variables() == (a,)
    assert t2.watched_variables() == (c,)
    ga, gc = t1.gradient(z, [a, c])
    assert value(ga) == 5.0 and gc is None
    ga, gc = t2.gradient(z, [a, c])
    assert ga is None and value(gc) == 2.0


def test_a_second_tape_sees_only_ops_run_while_it_records() -> None:
    x = ef.constant(2.0)
    with GradientTape() as outer:
        outer.watch(x)
        y = x * x
        with GradientTape() as inner:
            inner.watch(y)
            z = y * 3.0
    assert value(inner.gradient(z, y)) == 3.0
    assert value(outer.gradient(z, x)) == 12.0


def test_several_tapes_with_plain_tensors_keep_their_own_watch_sets() -> None:
    a, c = ef.constant(2.0), ef.constant(5.0)
    with GradientTape(persistent=True) as t1, GradientTape(persistent=True) as t2:
        t1.watch(a)
        t2.watch(c)
        z = a * c
    assert value(t1.gradient(z, a)) == 5.0
    assert value(t2.gradient(z, c)) == 2.0
    assert t1.gradient(z, c) is None
    assert t2.gradient(z, a) is None


# --- higher derivatives ---------------------------------------------------------------------
def test_nested_tapes_give_the_second_derivative() -> None:
    x = ef.constant(1.0)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = x**3
        dy_dx = inner.gradient(y, x)
    d2y_dx2 = outer.gradient(dy_dx, x)
    assert value(dy_dx) == 3.0  # 3x²
    assert value(d2y_dx2) == 6.0  # 6x


def test_three_tapes_give_the_third_derivative() -> None:
    x = ef.constant(1.0)
    with GradientTape() as t3:
        t3.watch(x)
        with GradientTape() as t2:
            t2.watch(x)
            with GradientTape() as t1:
                t1.watch(x)
                y = x**3
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    assert (value(d1), value(d2), value(d3)) == (3.0, 6.0, 6.0)


def test_second_derivative_with_a_variable() -> None:
    v = Variable(2.0)
    with GradientTape() as outer:
        with GradientTape() as inner:
            y = ef.tanh(v)
        dy = inner.gradient(y, v)
    d2y = outer.gradient(dy, v)
    t = math.tanh(2.0)
    np.testing.assert_allclose(value(dy), 1 - t * t, rtol=1e-6)
    np.testing.assert_allclose(value(d2y), -2 * t * (1 - t * t), rtol=1e-5)


# --- jacobians -------------------------------------------------------------------------------
def test_jacobian_tensorflow_example() -> None:
    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    j = tape.jacobian(y, x)
    assert j.shape == (2, 2)
    np.testing.assert_array_equal(value(j), [[2.0, 0.0], [0.0, 4.0]])


def test_jacobian_shape_is_target_shape_plus_source_shape() -> None:
    xv = np.arange(6.0).reshape(2, 3)
    wv = np.arange(12.0).reshape(3, 4) / 10
    x, w = ef.constant(xv), ef.constant(wv)
    with GradientTape() as tape:
        tape.watch([x, w])
        y = ef.matmul(x, w)
    jx, jw = tape.jacobian(y, [x, w])
    assert jx.shape == (2, 4, 2, 3)
    assert jw.shape == (2, 4, 3, 4)
    # y[i, j] = Σₖ x[i, k] w[k, j]
    np.testing.assert_allclose(value(jx), np.einsum("ik,lj->ijkl", np.eye(2), wv))
    np.testing.assert_allclose(value(jw), np.einsum("ik,jl->ijkl", xv, np.eye(4)))


def test_jacobian_of_a_variable_and_of_a_scalar_target() -> None:
    v = Variable([1.0, 2.0, 3.0])
    with GradientTape() as tape:
        s = ef.reduce_sum(v * v)
    j = tape.jacobian(s, v)
    assert j.shape == (3,)
    np.testing.assert_array_equal(value(j), [2.0, 4.0, 6.0])


def test_jacobian_of_an_unconnected_source() -> None:
    x, other = ef.constant([1.0, 2.0]), ef.constant([3.0, 4.0, 5.0])
    with GradientTape(persistent=True) as tape:
        tape.watch([x, other])
        y = x * x
    assert tape.jacobian(y, other) is None
    zeros = tape.jacobian(y, other, unconnected_gradients="zero")
    assert zeros.shape == (2, 3)
    np.testing.assert_array_equal(value(zeros), np.zeros((2, 3)))


def test_batch_jacobian() -> None:
    xv = np.arange(6.0, dtype=np.float32).reshape(3, 2)
    x = ef.constant(xv)
    with GradientTape() as tape:
        tape.watch(x)
        y = x**2
    bj = tape.batch_jacobian(y, x)
    assert bj.shape == (3, 2, 2)
    expected = np.stack([np.diag(2 * row) for row in xv])
    np.testing.assert_array_equal(value(bj), expected)


# --- what is not differentiable -------------------------------------------------------------
def test_comparison_path_carries_no_gradient_only_the_direct_path() -> None:
    x = ef.constant([1.5, -2.0, 3.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = ef.cast(x > 0, ef.float32) * x
    np.testing.assert_array_equal(value(tape.gradient(y, x)), [1.0, 0.0, 1.0])


@pytest.mark.parametrize(
    "f",
    [
        pytest.param(lambda x: ef.cast(x > 0, ef.float32), id="greater"),
        pytest.param(lambda x: ef.cast(ef.equal(x, x), ef.float32), id="equal"),
        pytest.param(lambda x: ef.cast(ef.argmax(x), ef.float32), id="argmax"),
        pytest.param(lambda x: ef.cast(ef.argmin(x), ef.float32), id="argmin"),
        pytest.param(lambda x: ef.cast(ef.cast(x, ef.int32), ef.float32), id="cast-to-int"),
        pytest.param(lambda x: ef.cast(ef.cast(x, ef.bool_), ef.float32), id="cast-to-bool"),
        pytest.param(lambda x: x // 2.0, id="floordiv"),
        pytest.param(lambda x: ef.zeros_like(x) + ef.ones_like(x), id="zeros/ones_like"),
    ],
)
def test_non_differentiable_ops_give_none(f: Any) -> None:
    x = ef.constant([1.5, -2.0, 3.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert tape.gradient(y, x) is None


def test_an_op_without_a_gradient_rule_raises_lookup_error_naming_it(new_op: str) -> None:
    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        (y,) = execution.execute(new_op, (x,))
    np.testing.assert_array_equal(y.numpy(), [-1.0, -2.0])
    with pytest.raises(LookupError, match=new_op):
        tape.gradient(y, x)


def test_an_op_without_a_rule_off_the_gradient_path_is_fine(new_op: str) -> None:
    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        execution.execute(new_op, (x,))
        y = x * 3.0
    np.testing.assert_array_equal(value(tape.gradient(y, x)), [3.0, 3.0])


# --- stop_gradient and custom_gradient ------------------------------------------------------------
def test_stop_gradient_blocks_gradients() -> None:
    x = ef.constant(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        s = stop_gradient(x)
        y = x * s
    assert s.numpy() == 3.0
    assert tape.gradient(s, x) is None
    assert value(tape.gradient(y, x)) == 3.0  # only through the first factor


def test_custom_gradient_is_used() -> None:
    @custom_gradient
    def f(x: ef.Tensor) -> Any:
        def grad_fn(dy: ef.Tensor) -> ef.Tensor:
            return 42.0 * dy

        return x * x, grad_fn

    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])  # the forward value is f's
    np.testing.assert_array_equal(value(tape.gradient(y, x)), [42.0, 42.0])


def test_custom_gradient_tensorflow_log1pexp_example() -> None:
    @custom_gradient
    def log1pexp(x: ef.Tensor) -> Any:
        e = ef.exp(x)
        return ef.log(1.0 + e), lambda dy: dy * (1.0 - 1.0 / (1.0 + e))

    x = ef.constant(100.0, ef.float64)
    with GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    np.testing.assert_allclose(y.numpy(), 100.0)
    assert value(tape.gradient(y, x)) == 1.0


def test_custom_gradient_with_two_inputs() -> None:
    @custom_gradient
    def mul(a: ef.Tensor, b: ef.Tensor) -> Any:
        return a * b, lambda dy: (dy * b * 10.0, dy * a * 100.0)

    a, b = ef.constant(2.0), ef.constant(7.0)
    with GradientTape() as tape:
        tape.watch([a, b])
        y = mul(a, b)
    assert y.numpy() == 14.0
    ga, gb = tape.gradient(y, [a, b])
    assert value(ga) == 70.0
    assert value(gb) == 200.0


def test_custom_gradient_with_a_variable_and_under_nested_tapes() -> None:
    @custom_gradient
    def square(x: ef.Tensor) -> Any:
        return x * x, lambda dy: dy * 2.0 * x

    v = Variable(3.0)
    with GradientTape() as outer:
        with GradientTape() as inner:
            y = square(v)
        dy = inner.gradient(y, v)
    assert value(dy) == 6.0
    assert value(outer.gradient(dy, v)) == 2.0


def test_custom_gradient_returning_the_wrong_number_of_gradients_raises() -> None:
    @custom_gradient
    def f(x: ef.Tensor) -> Any:
        return x * x, lambda dy: (dy, dy)

    x = ef.constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    with raises(ValueError, "2 gradient", "1 input"):
        tape.gradient(y, x)


# --- long chains and shared nodes: iterative backprop ------------------------------------------
@pytest.mark.slow
def test_chain_of_a_million_ops() -> None:
    # Mostly additions, whose gradient rule runs no op, to keep it as cheap as it gets
    # (about 10 s on the 2-core CI machine).
    n = 1_000_000
    add, mul = ef.constant(1e-6, ef.float64), ef.constant(1.000001, ef.float64)
    x = ef.constant(1.0, ef.float64)
    with GradientTape() as tape:
        tape.watch(x)
        y = x
        for i in range(n):
            y = y * mul if i % 10 == 0 else y + add
    # every 10th op multiplies by c, the rest add: dy/dx = c ** (n / 10)
    np.testing.assert_allclose(value(tape.gradient(y, x)), 1.000001 ** (n // 10), rtol=1e-9)


def test_a_recorded_op_keeps_two_containers_alive_for_the_cycle_collector() -> None:
    # Its output tensor and the tape's flat entry, nothing more: CPython's cycle collector
    # walks every live container at each full collection, so every container kept per op
    # makes a long tape's ops dearer than a short one's (W5 in benchmarks/run.py).
    x, c = ef.constant([1.0, 2.0]), ef.constant(1.001)
    n = 2000
    gc.collect()
    before = len(gc.get_objects())
    with GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(n):
            y = y * c
    gc.collect()
    per_op = (len(gc.get_objects()) - before) / n
    assert 1.9 < per_op < 2.1, per_op
    np.testing.assert_allclose(value(tape.gradient(y, x)), [1.001**n] * 2, rtol=1e-3)


def test_chain_far_deeper_than_the_recursion_limit() -> None:
    n = 10_000
    c = ef.constant(1.0001, ef.float64)
    x = ef.constant(2.0, ef.float64)
    with GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(n):
            y = y * c
    np.testing.assert_allclose(value(tape.gradient(y, x)), 1.0001**n, rtol=1e-9)


def test_node_reused_many_times() -> None:
    a = ef.constant(1.0, ef.float64)
    with GradientTape() as tape:
        tape.watch(a)
        b = a
        for _ in range(30):
            b = b + b
    assert value(tape.gradient(b, a)) == 2.0**30


def test_diamond_graph() -> None:
    x = ef.constant(1.5, ef.float64)
    with GradientTape() as tape:
        tape.watch(x)
        a = x * 2.0
        b = x * 3.0
        c = a * b  # 6x²
        d = c + a  # 6x² + 2x
    assert value(tape.gradient(d, x)) == 12.0 * 1.5 + 2.0


def test_stacked_diamonds() -> None:
    x = ef.constant(1.0, ef.float64)
    with GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(20):
            y = y * 2.0 + y * 3.0  # each diamond multiplies by 5
    assert value(tape.gradient(y, x)) == 5.0**20


# --- the gradient registry --------------------------------------------------------------------
def test_registering_a_duplicate_gradient_raises_and_keeps_the_rule() -> None:
    original = GRADIENTS["Mul"]
    with pytest.raises(ValueError, match="Mul"):
        register_gradient("Mul")(lambda op, grad: (grad, grad))
    with pytest.raises(ValueError, match="Greater"):
        not_differentiable("Greater")
    with pytest.raises(ValueError, match="Mul"):
        not_differentiable("Mul")
    assert GRADIENTS["Mul"] is original
    assert GRADIENTS["Greater"] is None


def test_registering_a_rule_for_a_new_op(new_op: str) -> None:
    @register_gradient(new_op)
    def _negate_grad(op: Any, grad: ef.Tensor) -> tuple[ef.Tensor]:
        return (-grad,)

    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        (y,) = execution.execute(new_op, (x,))
        z = y * x  # -x²
    np.testing.assert_array_equal(value(tape.gradient(z, x)), [-2.0, -4.0])
    with pytest.raises(ValueError, match=new_op):
        register_gradient(new_op)(_negate_grad)


def test_declaring_a_new_op_not_differentiable(new_op: str) -> None:
    not_differentiable(new_op)
    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        (y,) = execution.execute(new_op, (x,))
    assert tape.gradient(y, x) is None


# --- check_gradients -----------------------------------------------------------------------------
@pytest.mark.parametrize("order", [1, 2])
def test_check_gradients_passes_on_correct_functions(order: int) -> None:
    rng = np.random.default_rng(0)
    error = check_gradients(lambda x: ef.tanh(x) * x, [np.array([0.3, -1.2, 2.0])], order=order)
    assert isinstance(error, float) and 0.0 <= error < 1e-6
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    error = check_gradients(lambda a, b: ef.sigmoid(ef.matmul(a, b)), [a, b], order=order)
    assert 0.0 <= error < 1e-6


def wrong_at_index_1(x: ef.Tensor) -> Any:
    """x², whose custom gradient is right for element 0 and 1.5 times too big for element 1."""
    scale = ef.constant([1.0, 1.5], ef.float64)
    return x * x, lambda dy: dy * 2.0 * x * scale


def test_check_gradients_catches_a_wrong_custom_gradient() -> None:
    f = custom_gradient(wrong_at_index_1)
    with pytest.raises(GradientCheckError) as info:
        check_gradients(f, [np.array([1.0, 2.0])])
    message = str(info.value)
    assert "analytic" in message and "numeric" in message
    assert "input 0" in message
    assert re.search(r"index \((np\.int64\()?1\)?,\)", message), message
    assert isinstance(info.value, AssertionError)


def test_check_gradients_message_prints_the_index_plainly() -> None:
    with pytest.raises(GradientCheckError, match=re.escape("index (1,)")):
        check_gradients(custom_gradient(wrong_at_index_1), [np.array([1.0, 2.0])])


def test_check_gradients_order_2_catches_a_wrong_second_derivative() -> None:
    @custom_gradient
    def square(x: ef.Tensor) -> Any:  # right first derivative, second derivative 0
        return x * x, lambda dy: dy * 2.0 * stop_gradient(x)

    inputs = [np.array([1.0, 2.0])]
    assert check_gradients(square, inputs, order=1) < 1e-6
    with pytest.raises(GradientCheckError, match=r"(?s)order-2.*analytic.*numeric"):
        check_gradients(square, inputs, order=2)


def test_check_gradients_rejects_other_orders() -> None:
    with pytest.raises(ValueError, match="order"):
        check_gradients(lambda x: x * x, [np.array([1.0])], order=3)


@pytest.mark.parametrize(
    ("rule", "fragments"),
    [
        (lambda op, grad: -grad, ["returned a Tensor", "for one input: `return (grad,)`"]),
        (lambda op, grad: (-grad, -grad), ["returned 2 gradients", "which has 1"]),
        (lambda op, grad: None, ["returned a NoneType", "a tuple or list of 1 gradient"]),
    ],
    ids=["bare_tensor", "two_for_one_input", "none"],
)
def test_a_rule_returning_the_wrong_thing_is_named(new_op: str, rule: Any, fragments: list) -> None:
    register_gradient(new_op)(rule)
    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        (y,) = execution.execute(new_op, (x,))
    with raises(ef.EagerflowError, f"the gradient rule of {new_op}", *fragments):
        tape.gradient(y, x)


def test_flat_ops_give_zeros_as_in_tensorflow() -> None:
    """sign and relu's gradient are differentiable with a zero derivative (TensorFlow gives
    zeros, not None): a second derivative through relu is 0, not unconnected."""
    x = ef.constant([-1.5, 2.0], ef.float64)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        s = ef.sign(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = ef.relu(x)
        dy = inner.gradient(y, x)
    np.testing.assert_array_equal(tape.gradient(s, x).numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(tape.gradient(dy, x).numpy(), [0.0, 0.0])


def test_a_watched_variable_as_target_has_gradient_ones() -> None:
    """d v / d v is ones, as in TensorFlow, also once the tape stopped recording; a target
    that sums v with a function of it counts v once."""
    v = Variable([1.0, 2.0])
    with GradientTape(persistent=True) as tape:
        y = v * 3.0
    np.testing.assert_array_equal(tape.gradient(v, v).numpy(), [1.0, 1.0])
    np.testing.assert_array_equal(tape.gradient([v, y], v).numpy(), [4.0, 4.0])
