"""Conformance cases for random ops' seeds (``seed``: the graph's, ``seed2``: the op's): which
runs draw the same numbers. The numbers themselves differ (TensorFlow's Philox streams,
NumPy's here), so a case returns 1 where two draws are equal and 0 where they differ.
Merged into ``cases.CASES`` by ``cases.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from cases import case


def _seeded_graph(ns: Any, graph_seed: int | None, op_seed: int | None) -> Any:
    graph = ns.Graph()
    with graph.as_default():
        if graph_seed is not None:
            ns.set_random_seed(graph_seed)
        ns.constant(0.0)  # an op before: the op's own seed counts the graph's ops
        x = ns.random_uniform([4], seed=op_seed)
        y = ns.random_normal([2, 2], seed=op_seed)
    return graph, [x, y]


def _runs(ns: Any, graph: Any, fetches: Any, times: int = 2) -> list[Any]:
    with ns.Session(graph=graph) as session:
        return [session.run(fetches) for _ in range(times)]


def _same(a: Any, b: Any) -> int:
    return int(all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)))


def _sessions(ns: Any, graph_seed: int | None, op_seed: int | None) -> list[int]:
    """[each Session draws the same, two runs of one Session differ]"""
    graph, fetches = _seeded_graph(ns, graph_seed, op_seed)
    first, second = _runs(ns, graph, fetches), _runs(ns, graph, fetches)
    return [_same(first[0], second[0]) * _same(first[1], second[1]), _same(*first)]


@case("random/seed/graph_seed")
def _(ns: Any) -> Any:
    return _sessions(ns, 7, None)


@case("random/seed/op_seed")
def _(ns: Any) -> Any:
    return _sessions(ns, None, 3)


@case("random/seed/graph_and_op_seed")
def _(ns: Any) -> Any:
    return _sessions(ns, 7, 3)


@case("random/seed/unseeded")
def _(ns: Any) -> Any:
    return _sessions(ns, None, None)


@case("random/seed/rebuilt_graph_same_numbers")
def _(ns: Any) -> Any:
    a, fetches_a = _seeded_graph(ns, 11, None)
    b, fetches_b = _seeded_graph(ns, 11, None)
    return _same(_runs(ns, a, fetches_a, 1)[0], _runs(ns, b, fetches_b, 1)[0])


@case("random/seed/reimported_graph_def_same_stream")
def _(ns: Any) -> Any:
    graph, fetches = _seeded_graph(ns, 5, None)
    names = [t.name for t in fetches]
    again = ns.Graph()
    with again.as_default():
        imported = ns.import_graph_def(graph.as_graph_def(), return_elements=names)
    first, second = _runs(ns, graph, fetches, 2), _runs(ns, again, imported, 2)
    return [_same(first[0], second[0]), _same(first[1], second[1])]


@case("random/seed/two_ops_same_seeds")
def _(ns: Any) -> Any:
    graph = ns.Graph()
    with graph.as_default():
        ns.set_random_seed(1)
        x, y = ns.random_uniform([3], seed=2), ns.random_uniform([3], seed=2)
    with ns.Session(graph=graph) as session:
        a, b = session.run([x, y])
    return _same([a], [b])


@case("random/seed/eager_op_seed_restarts_with_set_seed")
def _(ns: Any) -> Any:
    ns.set_seed(1)
    first = [ns.random_uniform([3], seed=2).numpy() for _ in range(2)]
    ns.set_seed(1)
    again = ns.random_uniform([3], seed=2).numpy()
    return [_same([first[0]], [first[1]]), _same([first[0]], [again])]


@case("random/seed/bad_seed")
def _(ns: Any) -> Any:
    return ns.random_uniform([3], seed="two")
