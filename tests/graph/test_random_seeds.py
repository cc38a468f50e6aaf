"""Random ops' seeds: TensorFlow's rules for ``seed`` / ``seed2`` (``get_seed``), each
Session's own streams, and the seeds kept by eagerflow's graph JSON and by TensorFlow
GraphDefs, so a graph read back draws what it drew. (What TensorFlow does with the same
programs: tests/conformance/cases_seed.py.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import eagerflow.graph as g
import eagerflow.tensor as ef
from eagerflow.graph import tf_graph_def
from eagerflow.tensor.random_ops import DEFAULT_GRAPH_SEED


def _seeds(t) -> tuple[int, int]:
    return t.op.attrs["seed"], t.op.attrs["seed2"]


def test_tensorflows_rules_for_the_two_seeds() -> None:
    with g.Graph().as_default():
        assert _seeds(ef.random_uniform([1])) == (0, 0)  # unseeded: the shared generator
        assert _seeds(ef.random_uniform([1], seed=4)) == (DEFAULT_GRAPH_SEED, 4)
        g.set_random_seed(9)
        ef.constant(1.0)
        count = len(g.get_default_graph().get_operations())
        assert _seeds(ef.random_normal([1])) == (9, count)  # the op's own: the ops made so far
        assert _seeds(ef.random_shuffle([1, 2], seed=2)) == (9, 2)
        g.set_random_seed(0)
        assert _seeds(ef.random_uniform([1], seed=0)) == (0, 2**31 - 1)  # (0, 0): unseeded


@pytest.mark.parametrize("bad", ["1", 1.5, True, -1])
def test_a_bad_seed_is_refused(bad) -> None:
    with pytest.raises(TypeError, match="seed"):
        ef.random_uniform([1], seed=bad)
    with g.Graph().as_default(), pytest.raises(TypeError, match="set_random_seed"):
        g.set_random_seed(bad)


def _seeded_graph():
    graph = g.Graph()
    with graph.as_default():
        g.set_random_seed(3)
        x = ef.random_uniform([5]) + ef.random_normal([5]) + ef.cast(
            ef.random_shuffle(ef.range(5)), ef.float32)  # fmt: skip
    return graph, x


def _draws(graph, fetch, runs: int = 2) -> list[np.ndarray]:
    with g.Session(graph=graph) as session:
        return [session.run(fetch) for _ in range(runs)]


def test_each_session_starts_the_streams_afresh() -> None:
    graph, x = _seeded_graph()
    first, second = _draws(graph, x), _draws(graph, x)
    np.testing.assert_array_equal(first, second)
    assert not np.array_equal(first[0], first[1])  # the stream goes on within a Session


def test_the_graph_json_keeps_the_seeds(tmp_path) -> None:
    graph, x = _seeded_graph()
    path = g.write_graph(graph, tmp_path, "seeded.json")
    again = g.Graph()
    with again.as_default():
        (y,) = g.import_graph_def(g.read_graph_def(path), return_elements=[x.name])
    np.testing.assert_array_equal(_draws(graph, x), _draws(again, y))


def test_a_tensorflow_graph_def_keeps_the_seeds(tmp_path) -> None:
    pytest.importorskip("tensorboard.compat.proto.graph_pb2")
    graph = g.Graph()
    with graph.as_default():
        g.set_random_seed(3)
        x = ef.random_uniform([5]) + ef.random_normal([5], seed=8) + ef.random_shuffle(
            ef.constant([0.0, 1.0, 2.0, 3.0, 4.0]), seed=1)  # fmt: skip
    path = tf_graph_def.write(graph, tmp_path / "seeded.pbtxt", outputs=[x])
    text = Path(path).read_text()
    assert 'key: "seed2"' in text and "i: 8" in text and 'op: "RandomStandardNormal"' in text
    again = g.Graph()
    with again.as_default():
        (y,) = tf_graph_def.import_graph_def(path, return_elements=[x.name])
    np.testing.assert_array_equal(_draws(graph, x), _draws(again, y))


def test_other_bounds_are_refused_by_the_tensorflow_writer() -> None:
    graph = g.Graph()
    with graph.as_default():
        x = ef.random_uniform([2], 1.0, 2.0, seed=1)
    with pytest.raises(tf_graph_def.NoTfCounterpartError, match=r"only floats on \[0, 1\)"):
        tf_graph_def.to_proto(graph, outputs=[x])


def test_eager_seeded_ops_restart_with_set_seed() -> None:
    ef.set_seed(5)
    a, b = ef.random_uniform([3], seed=1).numpy(), ef.random_uniform([3], seed=1).numpy()
    ef.set_seed(5)
    np.testing.assert_array_equal(ef.random_uniform([3], seed=1).numpy(), a)
    assert not np.array_equal(a, b)
