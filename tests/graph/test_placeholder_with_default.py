"""``placeholder_with_default``: a graph input that is its default unless fed, whose static
shape is the given one (which must fit the default's), with an identity gradient."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.graph import Graph, Session, gradients, placeholder_with_default
from eagerflow.tensor.errors import ShapeError

DEFAULT = [[1.0, 2.0, 3.0]]


def test_unfed_it_is_its_default_and_fed_it_is_the_feed() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder_with_default(ef.constant(DEFAULT), [None, 3], name="x")
        y = x * 2.0
    assert x.shape == (None, 3) and x.op.name == "x"
    fed = np.arange(12, dtype=np.float32).reshape(4, 3)
    with Session(graph=graph) as session:
        assert np.array_equal(session.run(y), np.array(DEFAULT, np.float32) * 2)
        assert np.array_equal(session.run(y, {x: fed}), fed * 2)
        assert np.array_equal(session.run(y), np.array(DEFAULT, np.float32) * 2)  # not kept


def test_a_feed_must_fit_the_given_shape() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder_with_default(ef.constant(DEFAULT), [None, 3])
    with Session(graph=graph) as session, pytest.raises(ValueError, match="shape"):
        session.run(x, {x: np.zeros((2, 4), np.float32)})


@pytest.mark.parametrize(
    ("shape", "expected"), [(None, None), ([1, 3], (1, 3)), ([None, None], (None, None))]
)
def test_the_given_shape_may_be_more_general(shape, expected) -> None:
    with Graph().as_default():
        assert placeholder_with_default(ef.constant(DEFAULT), shape).shape == expected


@pytest.mark.parametrize("shape", [[3], [None, 4], [2, 3]])
def test_a_shape_that_does_not_fit_the_default_is_refused(shape) -> None:
    with Graph().as_default(), pytest.raises(ShapeError, match=r"PlaceholderWithDefault.*\(1, 3\)"):
        placeholder_with_default(ef.constant(DEFAULT), shape)


def test_its_gradient_is_the_identity_and_eagerly_it_is_its_default() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder_with_default(ef.constant(DEFAULT), [None, 3])
        (dx,) = gradients(ef.reduce_sum(x * x), [x])
    with Session(graph=graph) as session:
        assert np.array_equal(session.run(dx), 2 * np.array(DEFAULT, np.float32))
    eager = placeholder_with_default(np.int64(7), [])
    assert eager.dtype == ef.int64 and eager.numpy() == 7


def test_a_sum_of_a_tensor_of_unknown_rank_has_a_gradient() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder_with_default(ef.constant(DEFAULT), None)
        (dx,) = gradients(ef.reduce_sum(x), [x])
    assert x.shape is None
    with Session(graph=graph) as session:
        assert np.array_equal(session.run(dx), np.ones((1, 3), np.float32))
        assert np.array_equal(session.run(dx, {x: np.zeros(4, np.float32)}), np.ones(4))
