"""Variables shared between threads, as TensorFlow's resource variables: every update is
atomic, every read a consistent snapshot that never changes afterwards, in every execution
mode (eager, a Session, a traced ``function``, ``jit_compile=True``).

Each test makes threads switch as often as CPython allows (``sys.setswitchinterval``), so a
read-modify-write without the variable's lock loses updates in nearly every run (before the
lock: ~30% of 16,000 ``assign_add`` lost eagerly, ~25% in a Session)."""

from __future__ import annotations

import sys
import threading
import warnings
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable, apply_gradient_descent
from eagerflow.graph import Graph, Session, function, global_variables_initializer

THREADS, UPDATES = 8, 2000
TIMEOUT = 30.0  # seconds: a deadlock fails the test instead of hanging the suite


@pytest.fixture(autouse=True)
def _switch_threads_often() -> Iterator[None]:
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _in_threads(step: Callable[[], object], threads: int = THREADS, times: int = UPDATES) -> None:
    """Run ``step`` ``times`` times in each of ``threads`` threads at once; re-raise any error."""
    errors: list[BaseException] = []
    start = threading.Barrier(threads)

    def work() -> None:
        try:
            start.wait(TIMEOUT)
            for _ in range(times):
                step()
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(TIMEOUT)
        assert not thread.is_alive(), "a thread did not finish: deadlock?"
    if errors:
        raise errors[0]


def _traced(body: Callable[[], object], mode: str) -> Callable[[], object]:
    """``body`` as it runs in ``mode`` (a Function traces on its first call)."""
    if mode == "eager":
        return body
    return function(body, jit_compile=mode == "jit")


@pytest.mark.parametrize("mode", ["eager", "function", "jit"])
def test_no_update_is_lost(mode: str) -> None:
    scalar, vector = Variable(0.0), Variable(np.zeros(3, np.float32))
    add_one = _traced(lambda: scalar.assign_add(1.0, read_value=False), mode)
    sub_ones = _traced(lambda: vector.assign_sub(ef.ones([3]), read_value=False), mode)

    def step() -> None:
        add_one()
        sub_ones()

    _in_threads(step)
    assert scalar.numpy() == THREADS * UPDATES
    assert vector.numpy().tolist() == [-THREADS * UPDATES] * 3


def test_no_update_is_lost_in_a_session() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(0, dtype=ef.int64)
        add_one = v.assign_add(ef.constant(1, ef.int64)).op
        init = global_variables_initializer()
    with Session(g) as session:
        session.run(init)
        _in_threads(lambda: session.run(add_one))
        assert session.run(v) == THREADS * UPDATES


def test_no_gradient_descent_step_is_lost() -> None:
    # the optimizer's op: variable -= alpha * delta, in place when the array is unshared
    v = Variable(np.zeros(4, np.float32))
    _in_threads(lambda: apply_gradient_descent(v, 0.5, -2.0 * np.ones(4, np.float32)))
    assert v.numpy().tolist() == [THREADS * UPDATES] * 4


def test_a_read_is_a_snapshot_that_never_changes() -> None:
    # Large enough that NumPy lets go of the GIL inside an in-place update, so a read taken
    # during one would see part of it, and a read taken just before would change under it.
    v = Variable(np.zeros(100_000, np.float32))
    ones = np.ones(100_000, np.float32)
    stop = threading.Event()
    mixed, changed = [], []

    def write() -> None:
        while not stop.is_set():
            v.assign_add(ones, read_value=False)  # all 0 -> all 1, in place
            v.assign_sub(ones, read_value=False)  # and back
            v.assign(ones, read_value=False)  # a new array
            v.assign(ones - ones, read_value=False)

    def read() -> None:
        for _ in range(150):
            tensor = v.read_value()
            seen = tensor.numpy().copy()
            if seen.min() != seen.max():
                mixed.append(seen)
            if not np.array_equal(seen, tensor.numpy()):
                changed.append(seen)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        _in_threads(read, threads=2, times=1)
    finally:
        stop.set()
        writer.join(TIMEOUT)
    assert not mixed, f"{len(mixed)} of 300 reads saw half an update"
    assert not changed, f"{len(changed)} of 300 tensors changed after they were read"


def test_numpy_and_repr_read_under_the_lock() -> None:
    v = Variable(np.zeros(100_000, np.float32))
    ones = np.ones(100_000, np.float32)
    stop = threading.Event()
    mixed = []

    def write() -> None:
        while not stop.is_set():
            v.assign_add(ones, read_value=False)
            v.assign_sub(ones, read_value=False)

    def read() -> None:
        for _ in range(150):
            seen = v.numpy()
            if seen.min() != seen.max():
                mixed.append(seen)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        _in_threads(read, threads=2, times=1)
    finally:
        stop.set()
        writer.join(TIMEOUT)
    assert not mixed
    assert "numpy=" in repr(v)


def test_threads_calling_a_function_first_at_once_trace_it_once() -> None:
    v = Variable(0.0)

    @function
    def add(x: ef.Tensor) -> ef.Tensor:
        return v.assign_add(x)

    x = ef.constant(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RetracingWarning for traces made at once
        _in_threads(lambda: add(x), times=5)
    assert add.experimental_get_tracing_count() == 1
    assert v.numpy() == THREADS * 5
