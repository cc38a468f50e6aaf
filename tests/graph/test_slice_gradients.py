"""Gradients of indexing in graphs whose batch size is unknown: ``x[:, :2]`` on a
``(None, 3)`` placeholder, the slice every classifier head takes."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape
from eagerflow.graph import Graph, Session, gradients, placeholder
from eagerflow.tensor.errors import InvalidArgumentError

KEYS = [
    (slice(None), slice(None, 2)),
    (Ellipsis, 1),
    (slice(None), None, slice(1, None, 2)),
    (Ellipsis, slice(None, None, -1)),
]


def eager_gradients(values: np.ndarray, key: tuple) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[type-arg]
    x = ef.constant(values)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = ef.reduce_sum(ef.square(x[key]))
        dx = inner.gradient(y, x)
        z = ef.reduce_sum(dx * dx)
    return dx.numpy(), outer.gradient(z, x).numpy()


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_slice_gradients_with_an_unknown_batch_size(key: tuple) -> None:  # type: ignore[type-arg]
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float64, (None, 3), name="x")
        (dx,) = gradients(ef.reduce_sum(ef.square(x[key])), [x])
        (ddx,) = gradients(ef.reduce_sum(dx * dx), [x])
    assert dx.shape == (None, 3)
    with Session(graph) as session:
        for batch in (1, 4):
            values = np.random.default_rng(batch).normal(size=(batch, 3))
            got = session.run([dx, ddx], {x: values})
            for g, want in zip(got, eager_gradients(values, key), strict=True):
                np.testing.assert_allclose(g, want, rtol=1e-12)


def test_an_unknown_size_the_key_does_not_keep_whole_is_an_error() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float64, (None, 3), name="x")
        with pytest.raises(InvalidArgumentError, match=r"size of axis 0 .* unknown .* slice"):
            gradients(ef.reduce_sum(x[:2]), [x])
