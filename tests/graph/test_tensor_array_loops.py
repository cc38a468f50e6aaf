"""``TensorArray`` in graph loops: a ``while_loop`` variable in a Session graph and in a
``function``, AutoGraph loops over tensors that write and read it, its gradients (checked by
float64 central differences) and its errors. Agreement with TensorFlow: cases_loops.py."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape
from eagerflow.graph import (
    Graph,
    Session,
    TensorArray,
    cond,
    function,
    gradients,
    placeholder,
    while_loop,
)
from eagerflow.tensor.errors import DTypeError, OutOfRangeError, ShapeError


def central_differences(f: Callable[[np.ndarray], float], at: np.ndarray) -> np.ndarray:
    eps = 1e-6
    grad = np.zeros_like(at)
    for index in np.ndindex(at.shape):
        step = np.zeros_like(at)
        step[index] = eps
        grad[index] = (f(at + step) - f(at - step)) / (2 * eps)
    return grad


def powers(x: ef.Tensor, n: ef.Tensor) -> ef.Tensor:
    """Slot i holds x ** (i + 1), each computed from the slot before it: the loop writes at
    its counter and reads the previous slot, so the gradient goes through both."""
    ta = TensorArray(ef.float64, size=3, element_shape=[2]).write(0, x)

    def body(i: ef.Tensor, ta: TensorArray) -> tuple[ef.Tensor, TensorArray]:
        return i + 1, ta.write(i, ta.read(i - 1) * x)

    _, ta = while_loop(lambda i, ta: i < n, body, [ef.constant(1), ta])
    return ta.stack()


def test_a_while_loop_variable_in_a_session_graph_and_its_gradient() -> None:
    at = np.array([0.7, -1.3])
    with Graph().as_default():
        x = placeholder(ef.float64, (2,))
        n = placeholder(ef.int32, ())
        y = powers(x, n)
        loss = ef.reduce_sum(ef.tanh(y))
        (dx,) = gradients(loss, [x])
        with Session() as session:
            stacked, grad = session.run([y, dx], {x: at, n: 3})

            def value(v: np.ndarray) -> float:
                return float(session.run(loss, {x: v, n: 3}))

            expected = central_differences(value, at)
    assert y.shape == (3, 2)  # a fixed size keeps its rows known
    np.testing.assert_allclose(stacked, [at, at**2, at**3])
    np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-8)


def test_an_autograph_loop_in_a_function_and_its_gradient() -> None:
    @function
    def running_products(x: ef.Tensor) -> ef.Tensor:
        ta = TensorArray(ef.float64, size=3, element_shape=[])
        ta = ta.write(0, x[0])
        for i in ef.range(1, 3):
            ta = ta.write(i, ta.read(i - 1) * x[i])
        return ta.stack()

    def loss(v: np.ndarray) -> float:
        return float(ef.reduce_sum(running_products(ef.constant(v)) ** 2).numpy())

    at = np.array([1.5, -0.5, 2.0])
    x = ef.constant(at)
    with GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(running_products(x) ** 2)
    assert running_products(x).numpy().tolist() == [1.5, -0.75, -1.5]
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), central_differences(loss, at))
    assert running_products.trace_count == 1


def test_a_dynamic_size_array_learns_its_element_shape_from_the_first_write() -> None:
    @function
    def collect(n: ef.Tensor) -> tuple[ef.Tensor, ef.Tensor]:
        ta = TensorArray(ef.int32, size=0, dynamic_size=True)
        i = ef.constant(0)
        while i < n:
            ta = ta.write(ta.size(), ef.stack([i, i * i]))
            i += 1
        return ta.stack(), ta.size()

    stacked, size = collect(ef.constant(3))
    assert stacked.numpy().tolist() == [[0, 0], [1, 1], [2, 4]] and int(size) == 3
    empty, _ = collect(ef.constant(0))
    assert empty.shape == (0, 2)


def test_an_array_from_a_graph_tensor_and_scatter_at_graph_indices() -> None:
    with Graph().as_default():
        rows = placeholder(ef.float32, (None, 2))
        where = placeholder(ef.int32, (2,))
        unstacked = TensorArray(ef.float32).unstack(rows)
        scattered = TensorArray(ef.float32, size=3, element_shape=[]).scatter(
            where, ef.constant([5.0, 7.0])
        )
        picked = unstacked.gather(where)
        with Session() as session:
            feed = {rows: np.arange(6, dtype=np.float32).reshape(3, 2), where: [2, 0]}
            s, p, n = session.run([scattered.stack(), picked, unstacked.size()], feed)
    assert s.tolist() == [7.0, 0.0, 5.0] and p.tolist() == [[4.0, 5.0], [0.0, 1.0]] and n == 3
    assert "as one tensor" in repr(unstacked)


def test_loop_errors_name_the_variable_and_the_problem() -> None:
    @function
    def becomes_a_tensor(n: ef.Tensor) -> ef.Tensor:
        ta = TensorArray(ef.float32, size=2, element_shape=[])
        for _ in ef.range(n):
            ta = ta.stack()
        return ta

    with pytest.raises(DTypeError, match=r"'ta' is a TensorArray of float32 before the loop"):
        becomes_a_tensor(ef.constant(2))

    @function
    def float_index(x: ef.Tensor) -> ef.Tensor:
        return TensorArray(ef.float32, size=2).write(x, 1.0).stack()

    with pytest.raises(DTypeError, match=r"an index must be int32 or int64, got float32"):
        float_index(ef.constant(0.0))

    @function
    def past_the_end(n: ef.Tensor) -> ef.Tensor:
        ta = TensorArray(ef.float32, size=2)
        for i in ef.range(n):
            ta = ta.write(i, 1.0)
        return ta.stack()

    assert past_the_end(ef.constant(2)).numpy().tolist() == [1.0, 1.0]
    with pytest.raises(OutOfRangeError, match=r"index 2 is out of range"):
        past_the_end(ef.constant(3))

    with Graph().as_default():
        i = placeholder(ef.int32, ())
        with pytest.raises(ShapeError, match=r"scatter at graph indices needs a vector"):
            TensorArray(ef.float32, size=2).scatter(i, [1.0])


def test_a_growing_array_has_gradients_through_its_writes_and_reads() -> None:
    @function
    def running_products(x: ef.Tensor) -> ef.Tensor:
        ta = TensorArray(ef.float64, size=1, dynamic_size=True, element_shape=[])
        ta = ta.write(0, x[0])
        for i in ef.range(1, 3):
            ta = ta.write(i, ta.read(i - 1) * x[i])
        return ta.stack()

    def loss(v: np.ndarray) -> float:
        return float(ef.reduce_sum(ef.tanh(running_products(ef.constant(v)))).numpy())

    at = np.array([0.5, -1.5, 0.8])
    x = ef.constant(at)
    with GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(ef.tanh(running_products(x)))
    assert running_products(x).shape == (3,)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), central_differences(loss, at))


def test_the_gradient_of_concat_along_sizes_known_only_at_run_time() -> None:
    with Graph().as_default():
        x = placeholder(ef.float64, (None, 2))
        y = ef.concat([x, x * 2.0], 0)
        (dx,) = gradients(ef.reduce_sum(y * y), [x])
        with Session() as session:
            at = np.array([[1.0, -2.0], [0.5, 3.0], [2.0, 0.0]])
            np.testing.assert_allclose(session.run(dx, {x: at}), 10.0 * at)
        with pytest.raises(ValueError, match=r"the gradient of concat needs the static size"):
            gradients(ef.concat([placeholder(ef.float64, (None, None)), x], 0), [x])


def test_an_if_on_a_tensor_writes_an_array_in_either_branch() -> None:
    @function
    def signed(x: ef.Tensor) -> ef.Tensor:
        ta = TensorArray(ef.float32, size=3, element_shape=[])
        for i in ef.range(3):
            if x[i] > 0:  # noqa: SIM108  (an if statement is what is tested)
                ta = ta.write(i, x[i])
            else:
                ta = ta.write(i, -x[i] * 10.0)
        return ta.stack()

    assert signed(ef.constant([1.0, -2.0, 3.0])).numpy().tolist() == [1.0, 20.0, 3.0]

    @function
    def mixed(x: ef.Tensor) -> ef.Tensor:
        ta = TensorArray(ef.float32, size=1, element_shape=[])
        if x > 0:  # noqa: SIM108  (an if statement is what is tested)
            ta = ta.write(0, x)
        else:
            ta = x
        return ta

    with pytest.raises(DTypeError, match=r"'ta' is a TensorArray in the if branch .* but a "):
        mixed(ef.constant(1.0))


def test_cond_branches_may_return_an_array() -> None:
    with Graph().as_default():
        x = placeholder(ef.float32, ())
        ta = TensorArray(ef.float32, size=2, element_shape=[])
        chosen = cond(x > 0, lambda: (ta.write(0, x), x), lambda: (ta.write(1, -x), -x))
        assert isinstance(chosen[0], TensorArray)
        with Session() as session:
            stacked = chosen[0].stack()
            assert session.run(stacked, {x: 2.0}).tolist() == [2.0, 0.0]
            assert session.run(stacked, {x: -3.0}).tolist() == [0.0, 3.0]
