"""Running graphs: ``Session.run(fetches, feed_dict)`` computes the needed part of a graph,
holds each graph variable's value, and compiles each (fetches, feeds) combination once."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import (
    Graph,
    Session,
    control_dependencies,
    global_variables_initializer,
    gradients,
    group,
    no_op,
    placeholder,
    variables_initializer,
)


def _sum_graph() -> tuple[Graph, ef.Tensor, ef.Tensor, ef.Tensor]:
    """x (placeholder (2,)), h = x * 2, out = h + 1."""
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, shape=(2,), name="x")
        h = ef.multiply(x, 2.0, name="h")
        out = ef.add(h, 1.0, name="out")
    return g, x, h, out


# --- opening and closing --------------------------------------------------------------------------
def test_session_as_context_manager_runs_and_closes() -> None:
    g = Graph()
    with g.as_default():
        c = ef.constant(1.0) + ef.constant(2.0)
    with Session(g) as sess:
        assert sess.graph is g
        assert sess.run(c) == 3.0
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(c)


def test_close_then_run_raises_runtime_error() -> None:
    g = Graph()
    with g.as_default():
        c = ef.constant(1.0)
    sess = Session(g)
    assert sess.run(c) == 1.0
    sess.close()
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(c)


def test_session_without_graph_uses_the_graph_being_built() -> None:
    g = Graph()
    with g.as_default():
        c = ef.constant(4.0)
        sess = Session()
    assert sess.graph is g
    assert sess.run(c) == 4.0


# --- what can be fetched --------------------------------------------------------------------------
def test_fetch_a_tensor_gives_its_value() -> None:
    g = Graph()
    with g.as_default():
        a = ef.constant([[1.0, 2.0]])
        b = ef.constant([[3.0], [4.0]])
        m = a @ b + 1.0
    with Session(g) as sess:
        result = sess.run(m)
    assert isinstance(result, np.ndarray)
    assert result.dtype == np.float32 and result.shape == (1, 1)
    np.testing.assert_array_equal(result, [[12.0]])


def test_zero_d_results_are_numpy_scalars() -> None:
    g = Graph()
    with g.as_default():
        c = ef.constant(1.5) * 2.0
        i = ef.constant(7) + 1
    with Session(g) as sess:
        rc, ri = sess.run([c, i])
    assert isinstance(rc, np.generic) and not isinstance(rc, np.ndarray)
    assert rc.dtype == np.float32 and rc == 3.0
    assert isinstance(ri, np.generic) and ri.dtype == np.int32 and ri == 8


def test_fetch_an_operation_gives_none() -> None:
    g = Graph()
    with g.as_default():
        c = ef.constant(1.0) + 1.0
        nothing = no_op()
    with Session(g) as sess:
        assert sess.run(c.op) is None
        assert sess.run(nothing) is None


def test_fetch_by_tensor_name_and_by_operation_name() -> None:
    g = Graph()
    with g.as_default():
        ef.constant(1.0) + ef.constant(2.0)
    with Session(g) as sess:
        assert sess.run("add:0") == 3.0
        assert sess.run("add") is None
        with pytest.raises(KeyError, match="missing"):
            sess.run("missing:0")
        with pytest.raises(KeyError, match="missing"):
            sess.run("missing")


def test_fetch_a_variable_gives_its_value() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(np.array([1.0, 2.0], np.float32), name="v")
        init = global_variables_initializer()
    with Session(g) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        assert sess.run([v])[0].dtype == np.float32


def test_nested_fetches_mirror_their_structure() -> None:
    g = Graph()
    with g.as_default():
        a = ef.constant(1.0)
        b = ef.constant([2.0, 3.0])
        c = ef.add(a, a, name="c")
        v = Variable(5.0, name="v")
        init = global_variables_initializer()
    with Session(g) as sess:
        sess.run(init)
        result = sess.run({"a": a, "pair": (b, [c.op, "c:0"]), "nested": {"v": v, "name": "c"}})
    assert list(result) == ["a", "pair", "nested"]
    assert result["a"] == 1.0
    assert isinstance(result["pair"], tuple) and len(result["pair"]) == 2
    np.testing.assert_array_equal(result["pair"][0], [2.0, 3.0])
    assert isinstance(result["pair"][1], list)
    assert result["pair"][1][0] is None
    assert result["pair"][1][1] == 2.0
    assert result["nested"] == {"v": 5.0, "name": None}


def test_fetching_a_tensor_of_another_graph_is_an_error() -> None:
    g1, g2 = Graph(), Graph()
    with g1.as_default():
        a = ef.constant(1.0)
    with g2.as_default():
        ef.constant(2.0)
    with Session(g2) as sess, pytest.raises(ValueError, match="graph"):
        sess.run(a)


def test_fetching_something_that_is_not_a_fetch_is_a_type_error() -> None:
    g = Graph()
    with g.as_default():
        ef.constant(1.0)
    with Session(g) as sess, pytest.raises(TypeError):
        sess.run(3.0)


def test_mutating_a_result_does_not_affect_later_runs() -> None:
    g = Graph()
    with g.as_default():
        c = ef.constant([1.0, 2.0, 3.0])
        d = ef.identity(c)
        v = Variable(np.array([1.0, 2.0], np.float32), name="v")
        init = global_variables_initializer()
    with Session(g) as sess:
        sess.run(init)
        first = sess.run(c)
        first[0] = 100.0
        np.testing.assert_array_equal(sess.run(c), [1.0, 2.0, 3.0])
        ident = sess.run(d)
        ident[:] = -1.0
        np.testing.assert_array_equal(sess.run(d), [1.0, 2.0, 3.0])
        value = sess.run(v)
        value[1] = 50.0
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])
        a, b = sess.run([c, c])
        a[0] = 7.0
        assert b[0] == 1.0  # the same tensor fetched twice: two independent arrays
    np.testing.assert_array_equal(c.op.attrs["value"], [1.0, 2.0, 3.0])


def test_mutating_a_fed_array_afterwards_does_not_change_a_variable() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(np.zeros(2, np.float32), name="v")
        p = placeholder(ef.float32, shape=(2,), name="p")
        store = v.assign(p)
        init = global_variables_initializer()
    with Session(g) as sess:
        sess.run(init)
        fed = np.array([1.0, 2.0], np.float32)
        sess.run(store, {p: fed})
        fed[0] = 99.0
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


# --- feeding --------------------------------------------------------------------------------------
def test_feed_a_placeholder() -> None:
    g, x, _, out = _sum_graph()
    with Session(g) as sess:
        np.testing.assert_array_equal(sess.run(out, {x: [1.0, 2.0]}), [3.0, 5.0])
        np.testing.assert_array_equal(sess.run(out, {x: np.array([0.0, -1.0])}), [1.0, -1.0])
        np.testing.assert_array_equal(sess.run(out, {"x:0": [2.0, 2.0]}), [5.0, 5.0])
        fed = sess.run(x, {x: [4.0, 5.0]})  # a fed tensor can be fetched too
    assert fed.dtype == np.float32
    np.testing.assert_array_equal(fed, [4.0, 5.0])


def test_any_tensor_can_be_fed_replacing_its_computation() -> None:
    g, x, h, out = _sum_graph()
    with Session(g) as sess:
        # x is not fed: h's value replaces everything upstream of it
        np.testing.assert_array_equal(sess.run(out, {h: [10.0, 20.0]}), [11.0, 21.0])
        # fed even though x is fed too: the fed h wins over x * 2
        np.testing.assert_array_equal(sess.run(out, {x: [1.0, 1.0], h: [0.0, 0.0]}), [1.0, 1.0])
        np.testing.assert_array_equal(sess.run(h, {h: [7.0, 8.0]}), [7.0, 8.0])
    g2 = Graph()
    with g2.as_default():
        c = ef.constant(2.0)
        d = c * 3.0
    with Session(g2) as sess:
        assert sess.run(d, {c: 5.0}) == 15.0  # a constant is a tensor like any other
        assert sess.run(d) == 6.0


def test_missing_feed_raises_invalid_argument_naming_the_placeholder() -> None:
    g, _, _, out = _sum_graph()
    with Session(g) as sess, pytest.raises(ef.InvalidArgumentError, match="x:0"):
        sess.run(out)


def test_unneeded_unfed_placeholder_is_fine() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, shape=(), name="x")
        placeholder(ef.float32, shape=(), name="unused")
        y = x * 2.0
        k = ef.constant(3.0) + 1.0
    with Session(g) as sess:
        assert sess.run(y, {x: 2.0}) == 4.0
        assert sess.run(k) == 4.0


def test_only_the_needed_part_of_the_graph_runs() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(0.0, name="v")
        bump = v.assign_add(1.0)  # an unrelated, stateful branch
        x = placeholder(ef.float32, shape=(), name="x")
        y = x * 2.0
        reads = v.read_value() + 0.0
        init = global_variables_initializer()
    with Session(g) as sess:
        sess.run(init)
        for _ in range(3):
            assert sess.run(y, {x: 1.0}) == 2.0
            assert sess.run(reads) == 0.0
        assert sess.run(v) == 0.0  # the assign never ran
        sess.run(bump)
        assert sess.run(v) == 1.0


def test_fed_value_of_wrong_shape_raises_value_error() -> None:
    g, x, _, out = _sum_graph()
    with Session(g) as sess:
        with pytest.raises(ValueError) as info:
            sess.run(out, {x: [1.0, 2.0, 3.0]})
        assert str(info.value) == (
            "Cannot feed value of shape (3,) for Tensor 'x:0', which has shape (2,)"
        )
        with pytest.raises(ValueError, match="shape"):
            sess.run(out, {x: [[1.0, 2.0]]})  # wrong rank
        with pytest.raises(ValueError, match="shape"):
            sess.run(out, {x: 1.0})


def test_fed_value_of_wrong_dtype_raises_value_error() -> None:
    g = Graph()
    with g.as_default():
        i = placeholder(ef.int32, shape=(), name="i")
        j = i + 1
    with Session(g) as sess:
        with pytest.raises(ValueError, match="i:0"):
            sess.run(j, {i: 1.5})
        with pytest.raises(ValueError):
            sess.run(j, {i: np.array(2.5)})
        with pytest.raises(ValueError):
            sess.run(j, {i: True})
        assert sess.run(j, {i: 2}) == 3
        assert sess.run(j, {i: np.int64(4)}) == 5


def test_none_dimensions_accept_any_size() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, shape=(None, 3), name="x")
        y = ef.reduce_sum(x, axis=1)
        u = placeholder(ef.float32, shape=None, name="u")
        z = u * 2.0
    with Session(g) as sess:
        for n in (1, 4, 0):
            assert sess.run(y, {x: np.ones((n, 3))}).shape == (n,)
        with pytest.raises(ValueError, match=r"\(None, 3\)"):
            sess.run(y, {x: np.ones((4, 2))})
        with pytest.raises(ValueError):
            sess.run(y, {x: np.ones(3)})
        assert sess.run(z, {u: 1.0}) == 2.0
        np.testing.assert_array_equal(sess.run(z, {u: np.ones((2, 2, 2))}), np.full((2, 2, 2), 2))


def test_feed_dict_keys_must_be_tensors() -> None:
    g, _, _, out = _sum_graph()
    with Session(g) as sess, pytest.raises(TypeError, match="feed_dict"):
        sess.run(out, {out.op: [1.0, 2.0]})


# --- plans ----------------------------------------------------------------------------------------
# `Session._plans` is private: counted here only to show that each combination compiles once.
def test_each_fetch_and_feed_combination_is_compiled_once() -> None:
    g, x, h, out = _sum_graph()
    with Session(g) as sess:
        for i in range(5):
            result = sess.run(out, {x: [float(i), 1.0]})
            np.testing.assert_array_equal(result, [2.0 * i + 1.0, 3.0])  # fresh values each time
        assert len(sess._plans) == 1
        plan = sess.plan(out, [x])
        sess.run(out, {x: [0.0, 0.0]})
        assert sess.plan(out, {x: None}) is plan  # reused, not recompiled (a feed_dict will do)
        assert len(sess._plans) == 1
        sess.run(h, {x: [0.0, 0.0]})  # other fetches
        assert len(sess._plans) == 2
        sess.run(out, {h: [0.0, 0.0]})  # same fetch, other fed tensors
        assert len(sess._plans) == 3
        sess.run([out, h], {x: [1.0, 1.0]})
        sess.run([out, h], {x: [2.0, 2.0]})
        assert len(sess._plans) == 4


def test_intermediates_are_freed_after_their_last_use() -> None:
    g, x, h, out = _sum_graph()
    with Session(g) as sess:
        sess.run(out, {x: [1.0, 2.0]})
        plan = sess.plan(out, [x])
        steps = {s.operation.name: s for s in plan.steps}
        h_slot = plan.slot[h]
        freed_at = [s.operation.name for s in plan.steps if h_slot in s.free]
        assert freed_at == ["out"]  # h is freed right after `out`, its last reader, ran
        assert h_slot in steps["out"].inputs
        assert all(plan.slot[out] not in s.free for s in plan.steps)  # fetched: kept
        assert all(plan.slot[x] not in s.free for s in plan.steps)  # fed: kept
        assert "x" not in steps  # a fed placeholder is not run

        sess.run([out, h], {x: [1.0, 2.0]})
        plan2 = sess.plan([out, h], [x])
        assert plan2 is not plan
        assert all(plan2.slot[h] not in s.free for s in plan2.steps)  # fetched now: kept


# --- variables ------------------------------------------------------------------------------------
def test_global_variables_initializer_initializes_every_variable() -> None:
    g = Graph()
    with g.as_default():
        a = Variable(np.arange(3, dtype=np.float32), name="a")
        b = Variable(7, name="b")
        init = global_variables_initializer()
    with Session(g) as sess:
        assert sess.run(init) is None
        np.testing.assert_array_equal(sess.run(a), [0.0, 1.0, 2.0])
        assert sess.run(b) == 7 and sess.run(b).dtype == np.int32


def test_variables_initializer_and_initializer_initialize_only_their_variables() -> None:
    g = Graph()
    with g.as_default():
        a = Variable(1.0, name="a")
        b = Variable(2.0, name="b")
        init_a = variables_initializer([a])
    with Session(g) as sess:
        sess.run(init_a)
        assert sess.run(a) == 1.0
        with pytest.raises(ef.FailedPreconditionError, match="b:0"):
            sess.run(b)
        sess.run(b.initializer)
        assert sess.run(b) == 2.0


def test_reading_an_uninitialized_variable_names_it() -> None:
    g = Graph()
    with g.as_default():
        w = Variable(1.0, name="w")
        r = w * 2.0
    with Session(g) as sess:
        with pytest.raises(ef.FailedPreconditionError, match="'w:0'"):
            sess.run(w)
        with pytest.raises(ef.FailedPreconditionError, match="'w:0'"):
            sess.run(r)


def test_assign_assign_add_and_assign_sub_change_the_value_when_run() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(np.array([1.0, 2.0], np.float32), name="v")
        set_op = v.assign([10.0, 20.0])
        add_op = v.assign_add([1.0, 1.0])
        sub_op = v.assign_sub([5.0, 5.0])
        init = global_variables_initializer()
    with Session(g) as sess:
        sess.run(init)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])  # building changed nothing
        np.testing.assert_array_equal(sess.run(set_op), [10.0, 20.0])
        np.testing.assert_array_equal(sess.run(v), [10.0, 20.0])
        np.testing.assert_array_equal(sess.run(add_op), [11.0, 21.0])
        sess.run(add_op.op)
        np.testing.assert_array_equal(sess.run(v), [12.0, 22.0])
        np.testing.assert_array_equal(sess.run(sub_op), [7.0, 17.0])
        sess.run(init)
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_assign_from_a_placeholder() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(0.0, name="v")
        p = placeholder(ef.float32, shape=(), name="p")
        store = v.assign(p)
        init = global_variables_initializer()
    with Session(g) as sess:
        sess.run(init)
        sess.run(store, {p: 3.5})
        assert sess.run(v) == 3.5


def test_control_dependencies_order_the_assign_before_the_read() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(0.0, name="v")
        with control_dependencies([v.assign_add(1.0)]):
            r = v.read_value() * 1.0
        init = global_variables_initializer()
    with Session(g) as sess:
        sess.run(init)
        assert sess.run(r) == 1.0
        assert sess.run(r) == 2.0  # each run adds again
        assert sess.run(r) == 3.0
        assert sess.run(v) == 3.0  # a plain read runs no assign


def test_group_runs_all_its_inputs() -> None:
    g = Graph()
    with g.as_default():
        a = Variable(0.0, name="a")
        b = Variable(10.0, name="b")
        both = group(a.assign_add(1.0), b.assign_sub(1.0))
        init = global_variables_initializer()
    assert both.type == "NoOp"
    with Session(g) as sess:
        sess.run(init)
        assert sess.run(both) is None
        assert sess.run([a, b]) == [1.0, 9.0]
        sess.run(both)
        assert sess.run([a, b]) == [2.0, 8.0]


def test_two_sessions_on_one_graph_hold_independent_values() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(0.0, name="v")
        bump = v.assign_add(1.0)
        init = global_variables_initializer()
    s1, s2 = Session(g), Session(g)
    s1.run(init)
    with pytest.raises(ef.FailedPreconditionError):
        s2.run(v)  # initializing s1 did not initialize s2
    s2.run(init)
    s1.run(bump)
    s1.run(bump)
    s2.run(bump)
    assert s1.run(v) == 2.0
    assert s2.run(v) == 1.0
    s1.close()
    assert s2.run(v) == 1.0
    s2.close()


# --- errors at run time ---------------------------------------------------------------------------
def test_runtime_kernel_error_names_the_op_type_and_the_node() -> None:
    g = Graph()
    with g.as_default():
        p = placeholder(ef.int32, shape=(), name="p")
        q = placeholder(ef.int32, shape=(), name="q")
        d = ef.floordiv(p, q, name="quotient")
        dd = ef.floordiv(p, q)
    with Session(g) as sess:
        with pytest.raises(ef.EagerflowError) as info:
            sess.run(d, {p: 7, q: 0})
        # the message is the eager one; the node is named in a note under the traceback
        assert str(info.value) == "FloorDiv(int32[], int32[]): integer division by zero"
        assert info.value.__notes__ == ["(in graph node 'quotient')"]
        assert isinstance(info.value, ef.InvalidArgumentError)
        with pytest.raises(ef.EagerflowError) as info:
            sess.run(dd, {p: 7, q: 0})
        assert info.value.__notes__ == ["(in graph node 'floordiv')"]
        assert sess.run(d, {p: 7, q: 2}) == 3  # the session is still usable


def test_runtime_shape_error_with_unknown_dimensions_names_the_node() -> None:
    g = Graph()
    with g.as_default():
        a = placeholder(ef.float32, shape=(None,), name="a")
        b = placeholder(ef.float32, shape=(None,), name="b")
        s = ef.add(a, b, name="total")
    with Session(g) as sess:
        with pytest.raises(ef.ShapeError) as info:
            sess.run(s, {a: np.ones(2), b: np.ones(3)})
        assert str(info.value).startswith("AddV2(float32[2], float32[3]): shapes (2,) and (3,)")
        assert info.value.__notes__ == ["(in graph node 'total')"]
        np.testing.assert_array_equal(sess.run(s, {a: np.ones(3), b: np.ones(3)}), [2, 2, 2])


# --- gradients and training -----------------------------------------------------------------------
def test_symbolic_gradients_match_numpy() -> None:
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(3, 1)).astype(np.float32)
    b0 = np.array([0.5], np.float32)
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, shape=(None, 3), name="x")
        y = placeholder(ef.float32, shape=(None, 1), name="y")
        W = Variable(w0, name="W")
        b = Variable(b0, name="b")
        loss = ef.reduce_mean(ef.square(x @ W + b - y))
        gW, gb = gradients(loss, [W, b])
        init = global_variables_initializer()
    assert gW.shape == (3, 1) and gb.shape == (1,)
    with Session(g) as sess:
        sess.run(init)
        for n in (5, 2):  # the batch size is only known at run time
            xs = rng.normal(size=(n, 3)).astype(np.float32)
            ys = rng.normal(size=(n, 1)).astype(np.float32)
            residual = xs @ w0 + b0 - ys
            want_w = 2.0 * xs.T @ residual / n
            want_b = 2.0 * residual.sum(axis=0) / n
            got_w, got_b = sess.run([gW, gb], {x: xs, y: ys})
            np.testing.assert_allclose(got_w, want_w, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(got_b, want_b, rtol=1e-5, atol=1e-6)


def test_grad_ys_seed_the_product_and_must_fit_the_targets() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, shape=(None, 2), name="x")
        y = x * x
        (dx,) = gradients(y, [x], grad_ys=[placeholder(ef.float32, (None, 2))])  # unknown fits
        with pytest.raises(ef.ShapeError, match=r"grad_ys\[0\] has shape \(3,\) but target 0"):
            gradients(y, [x], grad_ys=ef.ones(3))
        with pytest.raises(ValueError, match=r"2 grad_ys for 1 targets"):
            gradients(y, [x], grad_ys=[ef.ones(2), ef.ones(2)])
        (weighted,) = gradients(y, [x], grad_ys=ef.constant([[1.0, 10.0]]))
    with Session(g) as sess:
        np.testing.assert_allclose(sess.run(weighted, {x: [[1.0, 2.0]]}), [[2.0, 40.0]])
    assert dx.shape == (None, 2)


def test_gradient_nodes_go_in_a_gradients_scope_of_their_own() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, shape=(2,), name="x")
        loss = ef.reduce_sum(x * x)
        before = {op.name for op in g.get_operations()}
        (dx,) = gradients(loss, [x])
        first = [op.name for op in g.get_operations() if op.name not in before]
        (d2x,) = gradients(ef.reduce_sum(dx), [x], name="second")
    assert first and all(name.startswith("gradients/") for name in first), first
    assert dx.name.startswith("gradients/")
    assert d2x.name.startswith("second/")
    with g.as_default():
        (again,) = gradients(loss, [x])
    assert again.name.startswith("gradients_1/")  # unique, like any other name
    with Session(g) as sess:
        np.testing.assert_array_equal(sess.run(dx, {x: [1.0, -2.0]}), [2.0, -4.0])
        np.testing.assert_array_equal(sess.run(d2x, {x: [1.0, -2.0]}), [2.0, 2.0])


def test_training_linear_regression_in_graph_mode_converges() -> None:
    rng = np.random.default_rng(1)
    true_w = np.array([[1.0], [-2.0], [3.0]], np.float32)
    xs = rng.normal(size=(64, 3)).astype(np.float32)
    ys = xs @ true_w + 0.5
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, shape=(None, 3), name="x")
        y = placeholder(ef.float32, shape=(None, 1), name="y")
        W = Variable(np.zeros((3, 1), np.float32), name="W")
        b = Variable(np.zeros((1,), np.float32), name="b")
        loss = ef.reduce_mean(ef.square(x @ W + b - y))
        gW, gb = gradients(loss, [W, b])
        train = group(W.assign_sub(gW * 0.1), b.assign_sub(gb * 0.1))
        init = global_variables_initializer()
    n_ops = len(g.get_operations())
    with Session(g) as sess:
        sess.run(init)
        first = sess.run(loss, {x: xs, y: ys})
        for _ in range(200):
            sess.run(train, {x: xs, y: ys})
        last = sess.run(loss, {x: xs, y: ys})
        w, bias = sess.run([W, b])
    assert len(g.get_operations()) == n_ops  # training added no nodes
    assert last < 1e-4 < first
    np.testing.assert_allclose(w, true_w, atol=1e-2)
    np.testing.assert_allclose(bias, [0.5], atol=1e-2)


def test_a_captured_eager_tensor_does_not_carry_control_dependencies_outside_the_block() -> None:
    e = ef.constant(1.0)  # an eager tensor, captured into the graph on first use
    g = Graph()
    with g.as_default():
        v = Variable(0.0, name="v")
        with control_dependencies([v.assign_add(1.0)]):
            v.read_value() + e
        unrelated = e * 2.0  # built outside the block: depends on nothing stateful
        init = global_variables_initializer()
    with Session(g) as sess:
        sess.run(init)
        assert sess.run(unrelated) == 2.0
        assert sess.run(v) == 0.0


def test_a_fed_output_of_a_multi_output_op_keeps_the_fed_value():
    # `left` is fed, but split still runs for `right`: its kernel must not overwrite the feed
    import eagerflow.tensor as ef
    from eagerflow.graph import Graph, Session, placeholder

    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (4,))
        left, right = ef.split(x, 2)
        total = left * 10.0 + right
    with Session(g) as s:
        out = s.run(total, {x: [1.0, 2.0, 3.0, 4.0], left: [100.0, 200.0]})
    assert out.tolist() == [1003.0, 2004.0]


def test_plan_of_a_closed_session_is_an_error() -> None:
    g, x, _, out = _sum_graph()
    sess = Session(g)
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.plan(out, [x])
