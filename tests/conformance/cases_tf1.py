"""Conformance cases for TensorFlow 1 names (``tf.compat.v1``) and the checkpoint API:
``placeholder_with_default`` eagerly and in a Session graph, numbered ``Checkpoint.save`` and
``CheckpointManager``. Merged into ``cases.CASES`` by ``cases.py``.

A graph case builds its graph and runs it in a Session, and returns the fetched values as
eager tensors (``ns.constant``), so that both sides are compared as any case is.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from cases import case

DEFAULT = [[1.0, 2.0]]


@case("tf1/placeholder_with_default/eager")
def _(ns: Any) -> Any:
    return ns.placeholder_with_default(ns.constant(DEFAULT), [None, 2])


def _graph_run(ns: Any, shape: Any, feed: Any = None) -> Any:
    """``y = 3 x`` and ``dx of sum(x y)`` for ``x = placeholder_with_default(DEFAULT, shape)``,
    run unfed or fed; with the static shape of ``x`` (-1 for unknown, [-2] for unknown rank)."""
    graph = ns.Graph()
    with graph.as_default():
        x = ns.placeholder_with_default(ns.constant(DEFAULT), shape)
        y = x * 3.0
        (dx,) = ns.gradients(ns.reduce_sum(y * x), [x])
        static = _static(x.shape)
    with ns.Session(graph=graph) as session:
        values = session.run([y, dx], None if feed is None else {x: feed})
    return [ns.constant(v) for v in values] + [ns.constant(static)]


def _static(shape: Any) -> list[int]:
    """A static shape as numbers: TensorFlow's ``TensorShape`` or eagerflow's tuple (None:
    an unknown rank, on both sides)."""
    if shape is None or getattr(shape, "rank", 0) is None:
        return [-2]
    return [-1 if d is None else int(d) for d in shape]


@case("tf1/placeholder_with_default/graph/unfed")
def _(ns: Any) -> Any:
    return _graph_run(ns, [None, 2])


@case("tf1/placeholder_with_default/graph/fed")
def _(ns: Any) -> Any:
    return _graph_run(ns, [None, 2], feed=[[1.0, 1.0], [2.0, 2.0]])


@case("tf1/placeholder_with_default/graph/unknown_rank")
def _(ns: Any) -> Any:
    return _graph_run(ns, None)


@case("tf1/placeholder_with_default/graph/fed_wrong_shape")
def _(ns: Any) -> Any:
    return _graph_run(ns, [None, 2], feed=[[1.0, 1.0, 1.0]])


@case("tf1/placeholder_with_default/graph/rank_mismatch")
def _(ns: Any) -> Any:
    return _graph_run(ns, [2])


@case("tf1/placeholder_with_default/graph/size_mismatch")
def _(ns: Any) -> Any:
    return _graph_run(ns, [None, 3])


@case("tf1/placeholder_with_default/eager/size_mismatch")
def _(ns: Any) -> Any:
    return ns.placeholder_with_default(ns.constant(DEFAULT), [None, 3])


def _number(path: str) -> int:
    return int(os.path.basename(path).rpartition("-")[2])


@case("train/checkpoint/save_numbers")
def _(ns: Any) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        checkpoint = ns.Checkpoint(v=ns.Variable(1.0))
        prefix = os.path.join(folder, "p")
        first, second = checkpoint.save(prefix), checkpoint.save(prefix)
        written = checkpoint.write(os.path.join(folder, "w"))
        return [_number(first), _number(second), int(written == os.path.join(folder, "w"))]


@case("train/checkpoint_manager/keeps_the_newest")
def _(ns: Any) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        v = ns.Variable(0.0)
        manager = ns.CheckpointManager(ns.Checkpoint(v=v), folder, max_to_keep=2)
        empty = manager.latest_checkpoint is None and ns.latest_checkpoint(folder) is None
        for i in range(3):
            v.assign(float(i))
            manager.save()
        latest = manager.latest_checkpoint
        same = latest == ns.latest_checkpoint(folder) == manager.checkpoints[-1]
        restored = ns.Variable(-1.0)
        ns.Checkpoint(v=restored).restore(latest)
        return [int(empty), int(same), [_number(p) for p in manager.checkpoints],
                restored.read_value()]  # fmt: skip


@case("tf1/optimizer/compute_gradients/eager")
def _(ns: Any) -> Any:
    v, unused = ns.Variable([1.0, 2.0]), ns.Variable(5.0)
    optimizer = ns.GradientDescentOptimizer(0.5)
    pairs = optimizer.compute_gradients(lambda: ns.reduce_sum(v * v), [v, unused])
    optimizer.apply_gradients(pairs)
    return [pairs[0][0], pairs[1][0], int(pairs[0][1] is v), v.read_value()]


@case("tf1/optimizer/compute_gradients/graph")
def _(ns: Any) -> Any:
    graph = ns.Graph()
    with graph.as_default():
        v, unused = ns.Variable([1.0, 2.0]), ns.Variable(5.0)
        optimizer = ns.GradientDescentOptimizer(0.5)
        pairs = optimizer.compute_gradients(ns.reduce_sum(v * v), [v, unused])
        scaled = [(g * 2.0, w) for g, w in pairs if g is not None]
        train = optimizer.apply_gradients(scaled)
        init = ns.global_variables_initializer()
    with ns.Session(graph=graph) as session:
        session.run(init)
        grad = session.run(pairs[0][0])
        session.run(train)
        value = session.run(v)
    return [ns.constant(grad), int(pairs[1][0] is None), ns.constant(value)]


@case("tf1/optimizer/compute_gradients/eager_tensor_loss")
def _(ns: Any) -> Any:
    v = ns.Variable(1.0)
    return ns.GradientDescentOptimizer(0.5).compute_gradients(v * 2.0, [v])


def _saver_graph(ns: Any, scale: float) -> Any:
    graph = ns.Graph()
    with graph.as_default():
        w = ns.Variable([scale, scale], name="w")
        double = w.assign(w * 2.0)
        init = ns.global_variables_initializer()
        saver = ns.Saver(max_to_keep=2)
    return graph, w, double, init, saver


@case("train/saver/save_restore")
def _(ns: Any) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        graph, _, double, init, saver = _saver_graph(ns, 1.0)
        with ns.Session(graph=graph) as session:
            session.run(init)
            for step in range(3):
                session.run(double)
                saver.save(session, os.path.join(folder, "m"), global_step=step)
        kept = [_number(p) for p in saver.last_checkpoints]
        latest = ns.latest_checkpoint(folder)
        graph, w, _, init, saver = _saver_graph(ns, 0.0)
        with ns.Session(graph=graph) as session:
            session.run(init)
            saver.restore(session, latest)
            value = session.run(w)
        return [kept, _number(latest), ns.constant(value)]
