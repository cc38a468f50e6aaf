"""Execution state is per thread, as in TensorFlow: the current context (the graph being
built), the recorders (tapes), a graph's name scopes and control dependencies, and the
variable values of a running Session."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import Graph, Session, get_default_graph, placeholder
from eagerflow.tensor import execution

TIMEOUT = 10.0  # seconds: a broken hand-off fails the test instead of hanging it


def _while_other_thread_holds(hold: Callable[[threading.Event, threading.Event], None]) -> Any:
    """Run ``hold(entered, release)`` in a thread; returns once it signalled ``entered``, with
    a function that releases it and joins (re-raising what it raised)."""
    entered, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def target() -> None:
        try:
            hold(entered, release)
        except BaseException as e:  # pragma: no cover - reported by finish()
            errors.append(e)
            entered.set()

    thread = threading.Thread(target=target)
    thread.start()
    assert entered.wait(TIMEOUT)

    def finish() -> None:
        release.set()
        thread.join(TIMEOUT)
        assert not thread.is_alive()
        if errors:
            raise errors[0]

    return finish


def test_another_threads_ops_run_eagerly_while_a_graph_is_built() -> None:
    g = Graph()

    def build(entered: threading.Event, release: threading.Event) -> None:
        with g.as_default():
            placeholder(ef.float32, ())
            entered.set()
            release.wait(TIMEOUT)
            assert get_default_graph() is g and not ef.executing_eagerly()

    finish = _while_other_thread_holds(build)
    try:
        assert ef.executing_eagerly() and get_default_graph() is not g
        assert float(ef.add(1.0, 2.0)) == 3.0  # eager here: no "add" node in the graph
    finally:
        finish()
    assert [o.type for o in g.get_operations()] == ["Placeholder"]


def test_a_tape_hears_only_its_own_threads_ops() -> None:
    x = ef.constant(3.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        with ThreadPoolExecutor(1) as pool:
            elsewhere = pool.submit(lambda: x * x).result(TIMEOUT)
            assert pool.submit(execution.active_recorders).result(TIMEOUT) == ()
        here = x * 2.0
        assert execution.active_recorders() == (tape,)
    assert tape.gradient(elsewhere, x) is None  # not recorded: computed in another thread
    assert float(tape.gradient(here, x)) == 2.0


def test_name_scopes_and_control_dependencies_are_per_thread() -> None:
    g = Graph()
    with g.as_default():
        first = ef.constant(1.0, name="first")

    def scoped(entered: threading.Event, release: threading.Event) -> None:
        with g.as_default(), g.name_scope("outer"), g.control_dependencies([first]):
            entered.set()
            release.wait(TIMEOUT)
            inside = ef.constant(2.0, name="inside")
        assert inside.name == "outer/inside:0" and inside.op.control_inputs == (first.op,)

    finish = _while_other_thread_holds(scoped)
    try:
        with g.as_default():
            mine = ef.constant(3.0, name="mine")
    finally:
        finish()
    assert mine.name == "mine:0" and mine.op.control_inputs == ()


@pytest.fixture
def frequent_switches() -> Iterator[None]:
    """Let threads take turns every microsecond, not every 5 ms, so they interleave inside
    a Session run or a graph's construction (where shared state would show)."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


@pytest.mark.usefixtures("frequent_switches")
def test_two_sessions_run_at_once_in_two_threads_with_their_own_values() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(np.zeros(3, np.float32))
        step = v.assign_add(ef.ones(3))
        init = v.initializer

    def train(times: int) -> Any:
        with Session(g) as s:
            s.run(init)
            for _ in range(times):
                s.run(step)
            return s.run(v)

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(train, [50, 80, 110, 140]))
    for times, value in zip([50, 80, 110, 140], results, strict=True):
        np.testing.assert_array_equal(value, np.full(3, times, np.float32))


@pytest.mark.usefixtures("frequent_switches")
def test_eager_ops_graphs_and_tapes_in_many_threads_at_once() -> None:
    """A small stress test: every thread builds, runs and differentiates its own work."""

    def work(seed: int) -> tuple[float, float, float]:
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((4, 4))
        x = ef.constant(a)
        with GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(ef.tanh(x) * x)
        eager_grad = float(ef.reduce_sum(tape.gradient(y, x)))
        g = Graph()
        with g.as_default(), g.name_scope(f"worker{seed}"):
            p = placeholder(ef.float64, (4, 4))
            gy = ef.reduce_sum(ef.tanh(p) * p)
        assert all(o.name.startswith(f"worker{seed}/") for o in g.get_operations())
        with Session(g) as s:
            graph_value = float(s.run(gy, {p: a}))
        return float(y), graph_value, eager_grad

    seeds = list(range(16))
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, seeds))
    for seed, (eager, graph, grad) in zip(seeds, results, strict=True):
        assert (eager, graph, grad) == work(seed)  # the same as alone in one thread
        assert eager == graph
