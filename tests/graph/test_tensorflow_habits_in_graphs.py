"""What a TensorFlow user reaches for in graph mode, spelled and behaving as in TensorFlow: the
new ops built into graphs (``where(condition)``, ``ef.nn``, ``one_hot``'s dtype, ``linspace``),
the default Session, ``@function`` on methods, ``stop_gradients``, and fetching an eager tensor."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GRADIENTS, GradientTape, Variable
from eagerflow.graph import (
    Function,
    Graph,
    Session,
    function,
    get_default_session,
    global_variables_initializer,
    gradients,
    placeholder,
)


# --- the new ops in a graph ----------------------------------------------------------------------
def test_where_with_one_argument_in_a_graph() -> None:
    condition = np.array([[True, False, True], [False, False, True]])
    g = Graph()
    with g.as_default():
        c = placeholder(ef.bool_, (None, 3))
        coordinates = ef.where(c)
    assert coordinates.op.type == "Where"
    assert coordinates.shape == (None, 2) and coordinates.dtype is ef.int64
    with Session(g) as session:
        result = session.run(coordinates, {c: condition})
    np.testing.assert_array_equal(result, ef.where(condition).numpy())
    assert result.dtype == np.int64


def test_a_list_of_symbolic_tensors_converts_to_a_pack_node() -> None:
    f = function(lambda a, b: ef.convert_to_tensor([a, b]) * 2.0)
    result = f(ef.constant(1.0, ef.float64), ef.constant(3.0, ef.float64))
    assert result.dtype is ef.float64 and result.numpy().tolist() == [2.0, 6.0]


def test_where_is_declared_not_differentiable() -> None:
    assert "Where" in GRADIENTS and GRADIENTS["Where"] is None
    x = ef.constant([1.0, -2.0, 3.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(ef.cast(ef.where(x > 0), ef.float32))
    assert tape.gradient(y, x) is None


def test_one_hot_elu_and_leaky_relu_build_nodes() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float64, (2,))
        hot = ef.one_hot([0, 2], 3, on_value=5)
        activations = [ef.nn.elu(x), ef.nn.leaky_relu(x, alpha=0.1)]
    assert hot.dtype is ef.int32
    assert [a.op.type for a in activations] == ["Elu", "LeakyRelu"]
    assert activations[1].op.attrs["alpha"] == 0.1
    with Session(g) as session:
        hot_value, elu, leaky = session.run([hot, *activations], {x: [-1.0, 2.0]})
    np.testing.assert_array_equal(hot_value, [[5, 0, 0], [0, 0, 5]])
    np.testing.assert_allclose(elu, [np.expm1(-1.0), 2.0])
    np.testing.assert_allclose(leaky, [-0.1, 2.0])


def test_linspace_in_a_graph() -> None:
    g = Graph()
    with g.as_default():
        values = ef.linspace(-1.0, 1.0, 5)
    assert values.op.type == "LinSpace" and values.shape == (5,)
    with Session(g) as session:
        np.testing.assert_array_equal(session.run(values), ef.linspace(-1.0, 1.0, 5).numpy())


def test_get_shape_of_graph_tensors() -> None:
    g = Graph()
    with g.as_default():
        partial = placeholder(ef.float32, (None, 3))
        unknown = placeholder(ef.float32)
    assert partial.get_shape().as_list() == [None, 3]
    assert not partial.get_shape().is_fully_defined()
    assert unknown.get_shape() == ef.TensorShape(None) and unknown.get_shape().rank is None


# --- the default Session --------------------------------------------------------------------------
def _graph_with_a_variable() -> tuple[Graph, Any, Any, Any]:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (2,))
        w = Variable(3.0)
        y = w * x
        init = global_variables_initializer()
    return g, x, y, init


def test_a_with_block_makes_the_session_the_default_for_run_and_eval() -> None:
    g, x, y, init = _graph_with_a_variable()
    assert get_default_session() is None
    with Session(g) as session:
        assert get_default_session() is session
        assert init.run() is None
        np.testing.assert_array_equal(y.eval({x: [1.0, 2.0]}), [3.0, 6.0])
        np.testing.assert_array_equal(y.eval(feed_dict={x: [0.0, 1.0]}), [0.0, 3.0])
    assert get_default_session() is None
    with pytest.raises(RuntimeError, match="closed"):  # leaving `with Session` closes it
        session.run(init)


def test_as_default_nests_and_does_not_close() -> None:
    g = Graph()
    with g.as_default():
        w = Variable(1.0)
        grow = w.assign_add(1.0)
        init = global_variables_initializer()
    outer, inner = Session(g), Session(g)
    with outer.as_default():
        init.run()
        with inner.as_default():
            assert get_default_session() is inner
            init.run()
            grow.op.run()  # in the inner session only
            assert grow.eval() == 3.0
        assert get_default_session() is outer
        assert outer.run(w) == 1.0
    assert get_default_session() is None
    assert grow.eval(session=outer) == 2.0  # neither block closed its session
    assert inner.run(w) == 3.0


def test_eval_and_run_without_a_default_session_say_so() -> None:
    g, x, y, init = _graph_with_a_variable()
    with pytest.raises(
        ValueError,
        match=r"Cannot evaluate tensor mul:0 using `eval\(\)`: No "
        r"default session is registered. Use `with sess.as_default\(\):`",
    ):
        y.eval({x: [1.0, 2.0]})
    with pytest.raises(
        ValueError,
        match=r"Cannot execute operation init using `run\(\)`: No "
        r"default session",
    ):
        init.run()
    with Session(g) as session:  # an explicit session needs no default
        init.run(session=session)
        np.testing.assert_array_equal(y.eval({x: [1.0, 2.0]}, session), [3.0, 6.0])


def test_a_tensor_of_another_graph_than_the_session_is_an_error() -> None:
    _, x, y, init = _graph_with_a_variable()
    other = Graph()
    with other.as_default():
        ef.constant(1.0)
    with Session(other) as session:
        with pytest.raises(ValueError, match="default session to evaluate tensor mul:0: its graph"):
            y.eval({x: [1.0, 2.0]})
        with pytest.raises(ValueError, match="given session to execute operation init: its graph"):
            init.run(session=session)


def test_the_default_session_belongs_to_one_thread() -> None:
    g, x, y, init = _graph_with_a_variable()
    seen: dict[str, Any] = {}

    def other_thread() -> None:
        seen["default"] = get_default_session()
        try:
            y.eval({x: [1.0, 2.0]})
        except ValueError as e:
            seen["error"] = str(e)
        with Session(g) as own:  # this thread's default, not the main thread's
            seen["own"] = get_default_session() is own

    with Session(g) as session:
        init.run()
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join(10.0)
        assert get_default_session() is session
    assert seen["default"] is None and "No default session" in seen["error"] and seen["own"]


# --- stop_gradients -------------------------------------------------------------------------------
def test_stop_gradients_treats_the_tensors_as_constants() -> None:
    g = Graph()
    with g.as_default():  # TensorFlow's own example
        a = ef.constant(0.0)
        b = 2.0 * a
        plain = gradients(a + b, [a, b])
        stopped = gradients(a + b, [a, b], stop_gradients=[a, b])
    with Session(g) as session:
        assert session.run(plain) == [3.0, 1.0]  # d/da (a + 2a) = 3, d/db = 1
        assert session.run(stopped) == [1.0, 1.0]  # b is a constant: nothing flows through it


def test_stop_gradients_on_an_intermediate_tensor() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, ())
        h = x * x
        y = h * x  # x^3
        dy_dx, dy_dh = gradients(y, [x, h], stop_gradients=[h])
        (only_through_h,) = gradients(y, [x], stop_gradients=h)  # one tensor, not a list
        with pytest.raises(TypeError, match="stop_gradients must be tensors or variables"):
            gradients(y, [x], stop_gradients=[1.0])
    with Session(g) as session:
        # h held constant: dy/dx = h = x^2 (not 3x^2), and dy/dh = x
        assert session.run([dy_dx, dy_dh, only_through_h], {x: 3.0}) == [9.0, 3.0, 9.0]


# --- fetching an eager tensor ---------------------------------------------------------------------
def test_running_an_eager_tensor_says_what_it_is() -> None:
    eager = ef.constant([1.0, 2.0])
    g = Graph()
    with g.as_default():
        p = placeholder(ef.float32, (2,))
    with Session(g) as session:
        with pytest.raises(
            TypeError,
            match=r"is an eager tensor: it already has a value \(use "
            r"\.numpy\(\)\).*build it inside `with graph.as_default\(\):`",
        ):
            session.run(eager)
        with pytest.raises(TypeError, match="is an eager tensor"):
            session.run(p, {eager: [1.0, 2.0]})


# --- @function on methods -------------------------------------------------------------------------
class Scaler:
    """An object holding a variable, with a traced method (as a Keras layer's ``call``)."""

    def __init__(self, scale: float) -> None:
        self.scale = Variable(scale)
        self.shift: Variable | None = None

    @function
    def apply(self, x: ef.Tensor) -> ef.Tensor:
        if self.shift is None:  # made on the first trace, as a layer builds its weights
            self.shift = Variable(1.0)
        return self.scale * x + self.shift


def test_function_on_a_method_has_one_trace_cache_per_instance() -> None:
    small, large = Scaler(2.0), Scaler(10.0)
    x = ef.constant([1.0, 2.0])
    np.testing.assert_array_equal(small.apply(x).numpy(), [3.0, 5.0])
    np.testing.assert_array_equal(large.apply(x).numpy(), [11.0, 21.0])  # its own variables
    assert small.apply is small.apply and small.apply is not large.apply
    # 2: the first trace made `shift`, so it was traced again (to make none), as in TensorFlow
    assert small.apply.trace_count == large.apply.trace_count == 2
    # through the class: the instance's own traces, not a new one
    np.testing.assert_array_equal(Scaler.apply(small, x).numpy(), [3.0, 5.0])
    assert small.apply.trace_count == 2 and isinstance(Scaler.apply, Function)
    small.scale.assign(3.0)  # a variable is read at each call, not captured as a value
    np.testing.assert_array_equal(small.apply(x).numpy(), [4.0, 7.0])


def test_gradients_through_a_traced_method() -> None:
    small, large = Scaler(2.0), Scaler(10.0)
    x = ef.constant([1.0, 2.0])
    with GradientTape() as tape:
        loss = ef.reduce_sum(small.apply(x) * large.apply(x))
    assert small.shift is not None and large.shift is not None
    variables = [small.scale, small.shift, large.scale, large.shift]
    grads = [float(g.numpy()) for g in tape.gradient(loss, variables)]
    # loss = sum((2x + 1) * (10x + 1)) over x = 1, 2: the four partial derivatives by hand
    assert grads == [1 * 11 + 2 * 21, 11 + 21, 1 * 3 + 2 * 5, 3 + 5]


def test_a_method_of_a_class_without_dict_is_a_clear_error() -> None:
    class Slotted:
        __slots__ = ()

        @function
        def double(self, x: ef.Tensor) -> ef.Tensor:
            return x * 2.0

    with pytest.raises(TypeError, match=r"double: Slotted instances have no __dict__"):
        Slotted().double(ef.constant(1.0))


# --- habits TensorFlow refuses, refused the same way -------------------------------------------
def test_item_assignment_on_a_tensor_is_tensorflows_type_error() -> None:
    with pytest.raises(TypeError, match=r"^'Tensor' object does not support item assignment"):
        ef.constant([1.0, 2.0])[0] = 3.0

    @function
    def assign(x: Any) -> Any:
        x[0] = 3.0
        return x

    with pytest.raises(TypeError, match=r"^'Tensor' object does not support item assignment"):
        assign(ef.constant([1.0, 2.0]))


def test_a_list_appended_in_a_graph_loop_says_to_use_a_tensor_array() -> None:
    @function
    def collect(n: Any) -> Any:
        out = []
        for i in ef.range(n):
            out.append(i)
        return out

    with pytest.raises(ValueError, match=r"InaccessibleTensorError.*collect the values in a "):
        collect(ef.constant(3))


def test_a_graph_scalar_index_picks_a_row() -> None:
    with Graph().as_default():
        i = placeholder(ef.int32, ())
        row = ef.constant([[1.0, 2.0], [3.0, 4.0]])[i]
        assert row.shape == (2,)
        with Session() as session:
            assert session.run(row, {i: 1}).tolist() == [3.0, 4.0]
