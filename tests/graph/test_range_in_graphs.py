"""ef.range with tensor bounds: in a graph the length is known only when it runs."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.graph import Graph, Session, placeholder


def test_python_and_eager_bounds_give_a_known_length() -> None:
    assert ef.range(1, ef.constant(7), 2).numpy().tolist() == [1, 3, 5]
    two = ef.constant(2)  # an eager tensor: its value is known
    with Graph().as_default():
        r = ef.range(two, 5)
    assert r.shape == (3,)  # so it is an attribute, not an input
    assert r.op.inputs == ()


def test_a_symbolic_bound_makes_the_bounds_inputs() -> None:
    g = Graph()
    with g.as_default():
        n = placeholder(ef.int32, (), name="n")
        r = ef.range(1, n + 1)
    assert r.shape == (None,) and r.dtype == ef.int32
    assert [t.dtype for t in r.op.inputs] == [ef.int32] * 3
    session = Session(g)
    for value in (0, 1, 5):
        np.testing.assert_array_equal(session.run(r, {n: value}), np.arange(1, value + 1))


def test_dtype_is_the_widest_of_the_bounds_as_in_tensorflow() -> None:
    g = Graph()
    with g.as_default():
        n = placeholder(ef.int32, (), name="n")
        halves = ef.range(0, n, 0.5)  # a float bound: float32, the int tensor is cast
        down = ef.range(n, 0, ef.constant(-2, ef.int64))  # int64 wins over int32
    assert (halves.dtype, down.dtype) == (ef.float32, ef.int64)
    session = Session(g)
    np.testing.assert_array_equal(session.run(halves, {n: 2}), [0.0, 0.5, 1.0, 1.5])
    np.testing.assert_array_equal(session.run(down, {n: 5}), [5, 3, 1])


def test_bad_bounds_are_errors_naming_the_op() -> None:
    g = Graph()
    with g.as_default():
        n = placeholder(ef.int32, (2,), name="n")
        with pytest.raises(ef.ShapeError, match=r"Range\(.*\): range: limit must be a scalar"):
            ef.range(0, n)
        k = placeholder(ef.int32, (), name="k")
        r = ef.range(0, 5, k)
        with pytest.raises(ef.DTypeError, match=r"range: bounds must be numbers, got a bool"):
            ef.range(0, ef.equal(k, 0))
    with pytest.raises(ef.InvalidArgumentError, match="delta must not be 0"):
        Session(g).run(r, {k: 0})
