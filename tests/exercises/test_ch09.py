"""Chapter 9 exercises: tracing, from eager to graph (`exercises/ch09.py`).

``mini_function`` is a piece of the "Build a mini TensorFlow" track: its tests hand it the
reader's own ``MiniGraph`` and ``run_mini`` of chapter 7 (counting their use) and skip, saying
"needs ch07.MiniGraph first", until those are done.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from track import is_stub

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Function, Session, SymbolicTensor, function
from eagerflow.graph.tracing.signatures import RetracingWarning

pytestmark = pytest.mark.ch09


# --- signature ------------------------------------------------------------------------------------
def test_signature_describes_tensors_by_dtype_and_shape(chapter):
    a = chapter.signature(ef.constant([1.0, 2.0]))
    assert a == (("tensor", ef.float32, (2,)),), f"expected (('tensor', float32, (2,)),), got {a}"
    same = chapter.signature(ef.constant([5.0, -1.0]))
    assert a == same, "values do not matter, only dtype and shape"
    assert a != chapter.signature(ef.constant([1.0, 2.0, 3.0])), "a new shape is a new signature"
    assert a != chapter.signature(ef.constant([1, 2])), "a new dtype is a new signature"
    from_numpy = chapter.signature(np.array([1.0, 2.0], np.float32))
    assert from_numpy == a, f"a NumPy array counts as a tensor: expected {a}, got {from_numpy}"


def test_signature_describes_python_values_by_value_and_type(chapter):
    assert chapter.signature(2) == (("value", int, 2),), f"got {chapter.signature(2)}"
    assert chapter.signature(2) != chapter.signature(3), "each Python value is its own signature"
    assert chapter.signature(2) != chapter.signature(2.0), "an int and a float differ"
    assert chapter.signature(None, "relu") == (
        ("value", type(None), None),
        ("value", str, "relu"),
    ), f"got {chapter.signature(None, 'relu')}"


def test_signature_predicts_the_trace_count(chapter):
    @function
    def scale(x, factor):
        return x * factor

    calls = [
        (ef.constant([1.0, 2.0]), 2.0),
        (ef.constant([3.0, 4.0]), 2.0),  # same signature: no trace
        (ef.constant([3.0, 4.0]), 3.0),  # a new Python value: a trace
        (ef.constant([1.0, 2.0, 3.0]), 2.0),  # a new shape: a trace
        (np.array([7.0, 8.0], np.float32), 2.0),  # like the first call
        (ef.constant([1.0, 2.0], ef.float64), 2.0),  # a new dtype: a trace
        (ef.constant([1.0, 2.0]), ef.constant(2.0)),  # a tensor factor: a trace
        (ef.constant([1.0, 2.0]), ef.constant(5.0)),  # same signature as the previous one
    ]
    predicted = []
    for args in calls:
        scale(*args)
        predicted.append(chapter.signature(*args))
    assert scale.trace_count == 5, "the framework itself should trace 5 times here"
    got = len(set(predicted))
    assert got == scale.trace_count, (
        f"expected {scale.trace_count} distinct signatures (one per trace), got {got}"
    )


# --- mini_function --------------------------------------------------------------------------------
class Traced:
    """A function for mini_function that notes each call (a trace) and what it was given."""

    def __init__(self, fn):
        self.fn, self.calls = fn, []

    def __call__(self, *args):
        self.calls.append(args)
        return self.fn(*args)


class SessionRuns:
    def __init__(self, monkeypatch):
        self.count = 0
        run = Session.run

        def counted(session, *args, **kwargs):
            self.count += 1
            return run(session, *args, **kwargs)

        monkeypatch.setattr(Session, "run", counted)


class YourGraphMode:
    """The reader's MiniGraph and run_mini of chapter 7, counting their use: the graphs
    made, and the runs."""

    def __init__(self, chapter, earlier_piece):
        if is_stub(chapter.mini_function):  # its own stub first: "not attempted yet"
            chapter.mini_function(None, None, None)
        graph, run, self.Symbol = (earlier_piece("ch07", name)
                                   for name in ("MiniGraph", "run_mini", "Symbol"))  # fmt: skip
        self.graphs = self.runs = 0
        mode = self

        class MiniGraph(graph):  # type: ignore[misc,valid-type]
            def __init__(self, *args, **kwargs):
                mode.graphs += 1
                super().__init__(*args, **kwargs)

        def run_mini(*args, **kwargs):
            mode.runs += 1
            return run(*args, **kwargs)

        self.MiniGraph, self.run_mini = MiniGraph, run_mini

    def mini_function(self, chapter, fn):
        return chapter.mini_function(fn, self.MiniGraph, self.run_mini)


def check_mini_function(chapter, earlier_piece, fn, calls, what):
    """Call mini_function(fn) on each argument tuple of ``calls``: fn must run once per new
    signature (as many times as ``@function`` traces), in the reader's MiniGraph, and each
    call must run their run_mini and give fn's eager value."""
    mode = YourGraphMode(chapter, earlier_piece)
    real = function(fn)
    with warnings.catch_warnings():  # the hidden sequences retrace on purpose
        warnings.simplefilter("ignore", RetracingWarning)
        for args in calls:
            real(*args)
    traced = Traced(fn)
    mine = mode.mini_function(chapter, traced)
    for i, args in enumerate(calls):
        before = len(traced.calls)
        got = mine(*args)
        expected = fn(*(ef.convert_to_tensor(a) if isinstance(a, np.ndarray) else a for a in args))
        for traced_args in traced.calls[before:]:
            assert all(
                isinstance(t, mode.Symbol) for t in traced_args if isinstance(t, ef.Tensor)
            ), (
                f"{what}: fn was called with {traced_args}: trace it in your MiniGraph (its "
                "placeholders are Symbols)"
            )
        assert isinstance(got, ef.Tensor) and type(got) is ef.Tensor, (
            f"{what}, call {i}: expected an eager tensor, got {got!r}"
        )
        np.testing.assert_allclose(
            got.numpy(), expected.numpy(), rtol=1e-6,
            err_msg=f"{what}, call {i} {args}: mini_function's value differs from fn's",
        )  # fmt: skip
        assert got.dtype is expected.dtype, (
            f"{what}, call {i} {args}: fn gives a {expected.dtype} tensor, mini_function a "
            f"{got.dtype} one: was this call run on a graph traced for another dtype?"
        )
        assert mode.runs == i + 1, (
            f"{what}: after {i + 1} calls your run_mini ran {mode.runs} times: run the traced "
            "graph with run_mini on every call"
        )
    assert len(traced.calls) == real.trace_count, (
        f"{what}: fn ran {len(traced.calls)} times in {len(calls)} calls; @function traced "
        f"{real.trace_count} times: trace once per new signature, then reuse the graph"
    )
    assert mode.graphs == real.trace_count, (
        f"{what}: {mode.graphs} MiniGraphs made for {real.trace_count} traces: one per trace"
    )


def test_mini_function_traces_once_per_signature(chapter, earlier_piece):
    def scale(x, factor):
        return x * factor

    calls = [
        (ef.constant([1.0, 2.0]), 2.0),
        (ef.constant([3.0, 4.0]), 2.0),  # same signature: no trace
        (ef.constant([3.0, 4.0]), 3.0),  # a new Python value: a trace
        (np.array([7.0, 8.0], np.float32), 2.0),  # like the first call
        (ef.constant([1.0, 2.0]), ef.constant(5.0)),  # a tensor factor: a trace
        (ef.constant([6.0, 1.0]), ef.constant(-1.0)),  # same: the new value is fed
    ]
    check_mini_function(chapter, earlier_piece, scale, calls, "x * factor")


def _hidden_function(x, power, mode):
    y = x**power if power else x
    if mode == "tanh":
        return ef.tanh(y) + ef.reduce_sum(x)
    if mode is None:
        return y * 0.5
    return ef.reduce_max(y * y, axis=-1)


def test_mini_function_on_hidden_call_sequences(chapter, earlier_piece):
    rng = np.random.default_rng(808)
    kinds = [((2,), np.float32), ((2, 2), np.float32), ((2,), np.float64)]
    for round_ in range(4):
        calls = []
        for _ in range(int(rng.integers(14, 20))):  # about half of them with a new signature
            shape, dtype = kinds[rng.integers(len(kinds))]
            x = rng.uniform(-1, 1, shape).astype(dtype)
            x = ef.constant(x) if rng.random() < 0.7 else x
            power = [2, 3][rng.integers(2)] if rng.random() < 0.9 else 0
            mode = ["tanh", "max"][rng.integers(2)] if rng.random() < 0.9 else None
            calls.append((x, power, mode))
        check_mini_function(chapter, earlier_piece, _hidden_function, calls, f"hidden {round_}")


def _scale_and_shift(x, factor):
    return x * factor + ef.reduce_sum(x)


def test_mini_function_on_hidden_dtypes_and_python_values(chapter, earlier_piece):
    # Two calls that differ only in a tensor's dtype, or only in the type of a Python value
    # (2 == 2.0 in Python, and they hash alike), must not share a trace.
    rng = np.random.default_rng(818)
    factors = [2, 2.0, 3, 3.0, 1, 1.0]
    for round_ in range(3):
        calls = []
        for _ in range(12):
            dtype = [np.float32, np.float64][rng.integers(2)]
            x = rng.uniform(-1, 1, 3).astype(dtype)
            calls.append((ef.constant(x), factors[rng.integers(len(factors))]))
        calls += [(ef.constant(np.ones(3, np.float64)), 2), (ef.constant(np.ones(3)), 2.0)]
        check_mini_function(
            chapter, earlier_piece, _scale_and_shift, calls, f"hidden dtypes and values {round_}"
        )


def test_mini_function_keys_its_cache_on_your_signature(chapter, earlier_piece, monkeypatch):
    # The cache's key is what `signature` returns, no more, no less: with a signature that
    # gives every call a new key, every call traces; with one that gives every call the same
    # key, only the first does.
    mode = YourGraphMode(chapter, earlier_piece)
    module = sys.modules[chapter.mini_function.__module__]
    calls = [(ef.constant([1.0, 2.0]), 2.0), (ef.constant([3.0, 4.0]), 2.0),
             (ef.constant([5.0, 6.0]), 3.0), (ef.constant([7.0, 8.0]), 2.0)]  # fmt: skip
    for name, key, traces in [
        ("a new key for every call", lambda number: ("call", number), len(calls)),
        ("the same key for every call", lambda number: "always", 1),
    ]:
        number = [0]
        asked = []

        def spy(*args, key=key, number=number, asked=asked):
            asked.append(number[0])
            return key(number[0])

        monkeypatch.setattr(module, "signature", spy, raising=False)
        traced = Traced(lambda x, factor: x * factor)
        mine = mode.mini_function(chapter, traced)
        for i, args in enumerate(calls):
            number[0] = i
            mine(*args)
        assert sorted(set(asked)) == list(range(len(calls))), (
            f"mini_function should look each call up by `signature(*args)` (yours, from above): "
            f"it was called for calls {sorted(set(asked))} of {len(calls)}"
        )
        assert len(traced.calls) == traces, (
            f"with a `signature` that gives {name}, fn should be traced {traces} time(s) in "
            f"{len(calls)} calls, and was traced {len(traced.calls)} time(s): key the cache "
            "on what `signature` returns"
        )


# --- train_step_function --------------------------------------------------------------------------
def test_train_step_function_traces_once_and_learns(chapter):
    rng = np.random.default_rng(0)
    xs = rng.standard_normal(50).astype(np.float32)
    ys = (3.0 * xs - 1.0).astype(np.float32)
    w, b = Variable(0.0), Variable(0.0)
    step = chapter.train_step_function(w, b, 0.1)
    assert isinstance(step, Function), f"expected a Function (use @function), got {step!r}"

    w_np, b_np = np.float32(0.0), np.float32(0.0)
    x, y = ef.constant(xs), ef.constant(ys)
    for i in range(40):
        loss = step(x, y)
        err = w_np * xs + b_np - ys
        expected_loss = np.mean(err * err)
        w_np = w_np - np.float32(0.1) * np.mean(2 * err * xs)
        b_np = b_np - np.float32(0.1) * np.mean(2 * err)
        assert float(loss) == pytest.approx(expected_loss, rel=1e-4), (
            f"step {i}: expected the loss {expected_loss} (before the update), got {loss!r}"
        )
    assert step.trace_count == 1, f"40 calls of one signature: expected 1 trace, got {step}"
    assert float(w.numpy()) == pytest.approx(float(w_np), rel=1e-4), f"w: got {w}"
    assert float(b.numpy()) == pytest.approx(float(b_np), rel=1e-4, abs=1e-6), f"b: got {b}"
    assert float(w.numpy()) == pytest.approx(3.0, abs=0.05), "w should approach 3"

    step(x[:10], y[:10])
    assert step.trace_count == 2, "a new length is a new signature: expected a second trace"


# --- relaxing_function (stretch) ------------------------------------------------------------------
def predicted_traces(calls):
    """The placeholder shapes of each trace the exercise's rules make, in order."""
    entries, traces = {}, []
    for args in calls:
        tensors = [ef.convert_to_tensor(a) for a in args if isinstance(a, ef.Tensor | np.ndarray)]
        key = tuple(
            ("tensor", ef.convert_to_tensor(a).dtype, np.ndim(a))
            if isinstance(a, ef.Tensor | np.ndarray) else ("value", type(a), a)
            for a in args
        )  # fmt: skip
        shapes = [tuple(t.shape) for t in tensors]
        old = entries.get(key)
        if old is not None:
            pairs = [(o, s) for po, ps in zip(old, shapes, strict=True)
                     for o, s in zip(po, ps, strict=True)]  # fmt: skip
            fits = all(o is None or o == s for o, s in pairs)
            if fits:
                continue
            shapes = [tuple(o if o == s else None for o, s in zip(po, ps, strict=True))
                      for po, ps in zip(old, shapes, strict=True)]  # fmt: skip
        entries[key] = shapes
        traces.append(shapes)
    return traces


def check_relaxing(chapter, monkeypatch, fn, calls, what):
    traced = Traced(fn)
    mine = chapter.relaxing_function(traced)
    runs = SessionRuns(monkeypatch)
    for i, args in enumerate(calls):
        got = mine(*args)
        expected = fn(*(ef.convert_to_tensor(a) if isinstance(a, np.ndarray) else a for a in args))
        np.testing.assert_allclose(
            np.asarray(got), expected.numpy(), rtol=1e-6,
            err_msg=f"{what}, call {i}: the value differs from fn's",
        )  # fmt: skip
    assert runs.count == len(calls), f"{what}: run a Session on every call"
    expected = predicted_traces(calls)
    got = [[tuple(t.shape) for t in args if isinstance(t, SymbolicTensor)] for args in traced.calls]
    assert got == expected, (
        f"{what}: expected {len(expected)} traces with placeholder shapes {expected}, "
        f"got {len(got)}: {got}"
    )


def test_relaxing_function_stretch_relaxes_a_changing_length(chapter, monkeypatch):
    calls = [(ef.constant(np.ones(n)), 2.0) for n in (2, 2, 3, 5, 2)]
    calls.append((ef.constant(np.ones(4)), 3.0))  # a new Python value: its own entry
    check_relaxing(chapter, monkeypatch, lambda x, k: ef.reduce_sum(x) * k, calls, "lengths")


def test_relaxing_function_stretch_on_hidden_call_sequences(chapter, monkeypatch):
    rng = np.random.default_rng(818)
    for round_ in range(3):
        calls = []
        for _ in range(int(rng.integers(8, 14))):
            rows = int(rng.integers(1, 4))
            cols = [3, int(rng.integers(2, 5))][round_ % 2]
            x = rng.uniform(-1, 1, (rows, cols)).astype([np.float32, np.float64][rng.integers(2)])
            calls.append(
                (x if rng.random() < 0.3 else ef.constant(x), ["sum", "max"][rng.integers(2)])
            )

        def fn(x, how):
            return ef.reduce_sum(x * x, axis=1) if how == "sum" else ef.reduce_max(x, axis=1)

        check_relaxing(chapter, monkeypatch, fn, calls, f"hidden sequence {round_}")
