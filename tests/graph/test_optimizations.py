"""Plans prune, fold constants and merge common subexpressions, never changing results."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import Graph, Session, function, global_variables_initializer, placeholder


def run_both(build, feeds_of):  # type: ignore[no-untyped-def]
    """Run a graph's fetch with the plan's optimizations and with plain eager ops."""
    g = Graph()
    with g.as_default():
        placeholders, fetch = build()
    with Session(g) as s:
        feeds = dict(zip(placeholders, feeds_of, strict=True))
        got = s.run(fetch, feeds)
        plan = s.plan(fetch, feeds)  # the plan run() compiled, for its stats
    return got, plan.stats


def test_pruning_keeps_only_what_the_fetch_needs() -> None:
    def build():  # type: ignore[no-untyped-def]
        x = placeholder(ef.float32, (3,))
        wanted = ef.reduce_sum(x * x)
        for _ in range(10):  # a large part of the graph the fetch does not need
            ef.exp(x) + ef.log(ef.abs(x) + 1.0)
        return [x], wanted

    got, stats = run_both(build, [np.array([1.0, 2.0, 3.0], np.float32)])
    assert got == 14.0
    assert stats["graph"] > 60 and stats["needed"] == 2 and stats["kernel_calls"] == 2


def test_constant_folding_computes_constants_once() -> None:
    def build():  # type: ignore[no-untyped-def]
        x = placeholder(ef.float64, (2,))
        scale = ef.sqrt(ef.constant(16.0, ef.float64)) * 2.0 + ef.reduce_sum(
            ef.ones((3,), ef.float64)
        )
        return [x], x * scale  # scale = 4 * 2 + 3 = 11, known before any feed

    got, stats = run_both(build, [np.array([1.0, -2.0])])
    assert got.tolist() == [11.0, -22.0]
    assert stats["folded"] == 5  # Sqrt, Mul, Fill, Sum, AddV2
    assert stats["kernel_calls"] == 1  # only x * scale runs


def test_common_subexpressions_run_once() -> None:
    def build():  # type: ignore[no-untyped-def]
        x = placeholder(ef.float32, (4,))
        a = ef.tanh(x) * 2.0
        b = ef.tanh(x) * 2.0  # the same computation, built twice
        return [x], a + b

    feed = np.linspace(-1, 1, 4).astype(np.float32)
    got, stats = run_both(build, [feed])
    np.testing.assert_allclose(got, 4 * np.tanh(feed), rtol=1e-6)
    assert stats["merged"] == 2  # the second Tanh and the second Mul
    assert stats["kernel_calls"] == 3  # Tanh, Mul, AddV2


def test_stateful_ops_are_never_folded_or_merged() -> None:
    g = Graph()
    with g.as_default():
        r1 = ef.random_uniform((1000,))
        r2 = ef.random_uniform((1000,))
        v = Variable(0.0)
        bumps = [v.assign_add(1.0), v.assign_add(1.0)]
        init = global_variables_initializer()
    with Session(g) as s:
        s.run(init)
        first, second = s.run([r1, r2])
        assert not np.array_equal(first, second)  # two draws, not one merged
        assert not np.array_equal(s.run(r1), first)  # drawn at every run, not folded
        s.run(bumps)
        assert s.run(v) == 2.0


def test_folding_errors_are_our_errors() -> None:
    g = Graph()
    with g.as_default():
        bad = ef.constant([1, 2]) // ef.constant([0, 1])
    with (
        Session(g) as s,
        pytest.raises(ef.InvalidArgumentError, match=r"FloorDiv.*division by zero"),
    ):
        s.run(bad)


def test_traced_functions_are_optimized_too() -> None:
    @function
    def f(x):  # type: ignore[no-untyped-def]
        c = ef.exp(ef.constant(0.0)) * 3.0  # folded: 3
        return ef.square(x) * c + ef.square(x)  # Square merged

    x = ef.constant([1.0, 2.0])
    assert f(x).numpy().tolist() == [4.0, 16.0]
    plan = f.get_concrete_function(x)._plan  # private: the compiled plan
    assert plan.stats["folded"] == 2 and plan.stats["merged"] == 1
    with GradientTape() as tape:
        tape.watch(x)
        y = ef.reduce_sum(f(x))
    assert tape.gradient(y, x).numpy().tolist() == [8.0, 16.0]
