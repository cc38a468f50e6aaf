"""``TensorArray``: eagerly, in a graph run by a Session, in a ``function``, under a tape, and
its errors. Its agreement with ``tf.TensorArray`` is in tests/conformance/cases_gaps.py."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape
from eagerflow.graph import Graph, Session, TensorArray, function, placeholder
from eagerflow.tensor.errors import DTypeError, OutOfRangeError, ShapeError


def test_write_returns_a_new_array_and_leaves_the_old_one() -> None:
    empty = TensorArray(ef.float32, size=2, element_shape=[2])
    written = empty.write(0, [1.0, 2.0])
    assert written.stack().numpy().tolist() == [[1.0, 2.0], [0.0, 0.0]]
    assert empty.stack().numpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert repr(written) == "<TensorArray TensorArray dtype=float32 size=2 element_shape=(2,)>"


def test_in_a_graph_run_by_a_session() -> None:
    with Graph().as_default():
        x = placeholder(ef.float32, (None, 2))
        ta = TensorArray(ef.float32, size=2).write(0, x * 2.0).write(1, x + 1.0)
        stacked, joined = ta.stack(), ta.concat()
        with Session() as session:
            s, c = session.run([stacked, joined], {x: np.ones((1, 2), np.float32)})
    assert s.tolist() == [[[2.0, 2.0]], [[2.0, 2.0]]] and c.shape == (2, 2)


def test_gradients_flow_through_it_eagerly_and_in_a_function() -> None:
    def total(x: ef.Tensor) -> ef.Tensor:
        ta = TensorArray(ef.float32, size=0, dynamic_size=True)
        for i in range(3):
            ta = ta.write(i, x * float(i + 1))
        return ef.reduce_sum(ta.stack())

    for f in (total, function(total)):
        x = ef.constant([1.0, 2.0])
        with GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        assert tape.gradient(y, x).numpy().tolist() == [6.0, 6.0]


def test_errors_name_the_array_and_the_problem() -> None:
    ta = TensorArray(ef.float32, size=1, name="steps")
    with pytest.raises(OutOfRangeError, match=r"steps: cannot write index 1: its size is 1"):
        ta.write(1, 1.0)
    with pytest.raises(DTypeError, match=r"steps: holds float32"):
        ta.write(0, ef.constant(1, ef.int32))
    with pytest.raises(ShapeError, match=r"steps: cannot read index 0: it was never written"):
        ta.read(0)
    with pytest.raises(ShapeError, match=r"cannot write a value of shape \(3,\)"):
        ta.write(0, [1.0, 2.0]).write(0, [1.0, 2.0, 3.0])
    with pytest.raises(OutOfRangeError, match=r"steps: index must be >= 0, got -1"):
        ta.write(-1, 1.0)
    with Graph().as_default():  # a graph index: the array becomes one tensor, checked at run
        i = placeholder(ef.int32, ())
        stacked = ta.write(i, 1.0).stack()
        with Session() as session:
            assert session.run(stacked, {i: 0}).tolist() == [1.0]
            with pytest.raises(OutOfRangeError, match=r"index 1 is out of range"):
                session.run(stacked, {i: 1})
