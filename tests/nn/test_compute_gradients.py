"""``Optimizer.compute_gradients``: TensorFlow 1's first half of ``minimize``, whose
``(gradient, variable)`` pairs may be changed before ``apply_gradients``."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, Session, global_variables_initializer


def test_eagerly_it_takes_a_callable_and_gives_pairs() -> None:
    v, unused = Variable([1.0, 2.0]), Variable(5.0)
    optimizer = nn.AdamOptimizer(0.1)
    pairs = optimizer.compute_gradients(lambda: ef.reduce_sum(v * v), [v, unused])
    assert [w for _, w in pairs] == [v, unused]
    np.testing.assert_array_equal(pairs[0][0].numpy(), [2.0, 4.0])
    assert pairs[1][0] is None
    with pytest.raises(RuntimeError, match=r"compute_gradients.*callable"):  # TensorFlow's class
        optimizer.compute_gradients(v * 2.0, [v])


def test_eagerly_the_default_variables_are_those_the_loss_read() -> None:
    v, w = Variable(3.0), Variable(4.0)
    pairs = nn.GradientDescentOptimizer(0.1).compute_gradients(lambda: v * w)
    assert {id(x) for _, x in pairs} == {id(v), id(w)}
    assert sorted(float(g.numpy()) for g, _ in pairs) == [3.0, 4.0]
    with pytest.raises(ValueError, match="no variables"):
        nn.GradientDescentOptimizer(0.1).compute_gradients(lambda: ef.constant(1.0))


def test_in_a_graph_changed_gradients_are_applied() -> None:
    graph = Graph()
    with graph.as_default():
        v = Variable([1.0, -2.0])
        optimizer = nn.GradientDescentOptimizer(0.25)
        pairs = optimizer.compute_gradients(ef.reduce_sum(v * v))  # every trainable variable
        clipped = [(ef.clip_by_value(g, -1.0, 1.0), w) for g, w in pairs]
        train = optimizer.apply_gradients(clipped)
        init = global_variables_initializer()
    assert [w for _, w in pairs] == [v]
    with Session(graph=graph) as session:
        session.run(init)
        np.testing.assert_array_equal(session.run(pairs[0][0]), [2.0, -4.0])
        session.run(train)
        np.testing.assert_array_equal(session.run(v), [0.75, -1.75])
