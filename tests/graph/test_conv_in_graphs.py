"""conv2d and max_pool2d differentiated twice: in a graph by ``gradients()`` and eagerly by
nested tapes, the same gradient rules giving the same numbers."""

from __future__ import annotations

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape
from eagerflow.graph import Graph, Session, gradients, placeholder

rng = np.random.default_rng(5)


def test_second_order_through_a_tape_and_a_graph() -> None:
    """d/dw of ‖d loss/d x‖², the penalty of gradient-penalty training, two ways."""
    x, w = rng.standard_normal((1, 5, 5, 2)), rng.standard_normal((3, 3, 2, 2))

    def loss(a: ef.Tensor, b: ef.Tensor) -> ef.Tensor:
        pooled = ef.nn.max_pool2d(ef.tanh(ef.nn.conv2d(a, b, 1, "SAME")), 2, 2, "SAME")
        return ef.reduce_sum(pooled * pooled)

    xt, wt = ef.constant(x), ef.constant(w)
    with GradientTape() as outer:
        outer.watch(wt)
        with GradientTape() as inner:
            inner.watch(xt)
            y = loss(xt, wt)
        dx = inner.gradient(y, xt)
        assert dx is not None
        penalty = ef.reduce_sum(dx * dx)
    eager = outer.gradient(penalty, wt).numpy()

    graph = Graph()
    with graph.as_default():
        xs, ws = placeholder(ef.float64, x.shape), placeholder(ef.float64, w.shape)
        (gx,) = gradients(loss(xs, ws), [xs])
        assert gx is not None
        (gw,) = gradients(ef.reduce_sum(gx * gx), [ws])
    with Session(graph) as session:
        symbolic = session.run(gw, {xs: x, ws: w})
    np.testing.assert_allclose(symbolic, eager, rtol=1e-10, atol=1e-12)
    assert np.abs(eager).max() > 0


def test_a_graph_with_an_unknown_batch() -> None:
    """The gradient ops take the forward input's shape as an attribute: its batch may be None
    (the kernels read it from the gradient), the spatial sizes are known."""
    x, w = rng.standard_normal((3, 6, 5, 2)), rng.standard_normal((3, 3, 2, 4))

    def model(a: ef.Tensor, b: ef.Tensor) -> ef.Tensor:
        y = ef.nn.max_pool2d(ef.nn.conv2d(a, b, 2, "SAME"), 2, 1, "SAME")
        return ef.reduce_sum(ef.nn.avg_pool2d(y, 2, 2, "VALID") ** 2)

    graph = Graph()
    with graph.as_default():
        xs, ws = placeholder(ef.float64, (None, 6, 5, 2)), placeholder(ef.float64, w.shape)
        gx, gw = gradients(model(xs, ws), [xs, ws])
        assert gx is not None and gw is not None
        assert gx.shape == (None, 6, 5, 2) and gw.shape == w.shape
    with Session(graph) as session:
        symbolic = session.run([gx, gw], {xs: x, ws: w})
    xt, wt = ef.constant(x), ef.constant(w)
    with GradientTape() as tape:
        tape.watch([xt, wt])
        loss = model(xt, wt)
    for got, expected in zip(symbolic, tape.gradient(loss, [xt, wt]), strict=True):
        np.testing.assert_allclose(got, expected.numpy(), rtol=1e-12)
