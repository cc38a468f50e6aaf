"""The execution seam: one entry point, pluggable contexts, recorders told about every op."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.tensor import execution
from eagerflow.tensor.registry import OpDef


class Log:
    """A recorder that remembers what it was told."""

    def __init__(self) -> None:
        self.records: list[tuple[str, tuple, dict, tuple]] = []

    def record(self, op: OpDef, inputs: tuple, attrs: Any, outputs: tuple) -> None:
        self.records.append((op.name, inputs, dict(attrs), outputs))


def test_recorder_sees_every_op_with_inputs_attrs_and_outputs() -> None:
    a, b = ef.constant([[1.0, 2.0]]), ef.constant([[3.0], [4.0]])
    log = Log()
    with execution.recording(log):
        m = ef.matmul(a, b)
        s = ef.reduce_sum(m * 2.0, axis=0)
    assert [r[0] for r in log.records] == ["MatMul", "Mul", "Sum"]
    _, inputs, attrs, outputs = log.records[0]
    assert inputs == (a, b) and outputs == (m,)  # the very same objects (identity)
    assert attrs == {"transpose_a": False, "transpose_b": False}
    assert log.records[2][2] == {"axis": 0, "keepdims": False}
    assert log.records[2][3] == (s,)
    ef.add(a, a)
    assert len(log.records) == 3  # removed at the end of the block


def test_operators_take_the_same_path_as_the_functions() -> None:
    x, y = ef.constant([1.0, 2.0]), ef.constant([3.0, 4.0])
    log = Log()
    with execution.recording(log):
        _ = x + y, x - y, x * y, x / y, x // y, x % y, x**y, -x, abs(x), x < y, x == y
        _ = ef.constant([[1.0]]) @ ef.constant([[2.0]])
        _ = x[0]
    assert [r[0] for r in log.records] == [
        "AddV2", "Sub", "Mul", "RealDiv", "FloorDiv", "FloorMod", "Pow", "Neg", "Abs", "Less",
        "Equal", "Const", "Const", "MatMul", "StridedSlice",
    ]  # fmt: skip


def test_several_recorders_and_removal() -> None:
    first, second = Log(), Log()
    execution.add_recorder(first)
    try:
        ef.add(1.0, 2.0)
        with execution.recording(second):
            ef.add(1.0, 2.0)
    finally:
        execution.remove_recorder(first)
    assert len(first.records) == 2 and len(second.records) == 1
    assert execution.active_recorders() == ()


class PretendGraph:
    """A context like the graph package's: it builds instead of computing."""

    def __init__(self) -> None:
        self.built: list[tuple[str, str | None]] = []

    def run_op(self, op: OpDef, inputs: tuple, attrs: Any, name: str | None) -> tuple:
        self.built.append((op.name, name))
        shapes = op.shape_rule([t.shape for t in inputs], attrs)
        dts = op.dtype_rule([t.dtype for t in inputs], attrs)
        # stand-in outputs: zeros of the statically inferred shape and dtype
        return tuple(ef.Tensor(np.zeros(s, d.np), d) for s, d in zip(shapes, dts, strict=True))


def test_a_context_decides_what_ops_do() -> None:
    ctx = PretendGraph()
    assert ef.executing_eagerly()
    with execution.context(ctx):
        assert not ef.executing_eagerly() and execution.current_context() is ctx
        out = ef.matmul(ef.ones((2, 3)), ef.ones((3, 4)), name="mm")
        parts = ef.split(ef.ones((2, 6)), [1, 5], axis=1)
    assert ef.executing_eagerly() and execution.current_context() is None
    assert ctx.built == [("Fill", None), ("Fill", None), ("MatMul", "mm"), ("Fill", None),
                         ("SplitV", None)]  # fmt: skip
    assert out.shape == (2, 4) and not out.numpy().any()  # built, not computed
    assert [p.shape for p in parts] == [(2, 1), (2, 5)]


def test_context_is_restored_after_an_error() -> None:
    with pytest.raises(RuntimeError), execution.context(PretendGraph()):
        raise RuntimeError("boom")
    assert ef.executing_eagerly()


def test_recorders_see_ops_built_by_a_context_too() -> None:
    log = Log()
    with execution.context(PretendGraph()), execution.recording(log):
        ef.add(ef.ones(2), ef.ones(2))
    assert [r[0] for r in log.records] == ["Fill", "Fill", "AddV2"]


def test_a_failing_op_records_nothing() -> None:
    log = Log()
    with execution.recording(log), pytest.raises(ef.ShapeError):
        ef.ones(2) + ef.ones(3)
    assert [r[0] for r in log.records] == ["Fill", "Fill"]


def test_symbolic_tensor_in_eager_mode_is_explained() -> None:
    class Symbolic(ef.Tensor):
        __slots__ = ()
        shape = (2,)  # a graph tensor knows its static shape, not its value

    s = Symbolic(None, ef.float32)  # type: ignore[arg-type]
    with pytest.raises(ef.InvalidArgumentError, match=r"symbolic .* Session"):
        ef.add(s, ef.ones(()))


def test_eager_binary_ops_remember_dtype_answers_but_never_errors() -> None:
    op = execution.OPS["Sub"]
    op.known_dtypes.clear()
    a, b = ef.constant([1.0, 2.0]), ef.constant([3.0, 4.0])
    np.testing.assert_array_equal((a - b).numpy(), [-2.0, -2.0])
    assert op.known_dtypes == {(ef.float32, ef.float32): op.dtype_rule((ef.float32,) * 2, {})}
    ints = ef.constant([1, 2])
    for _ in range(2):  # a refused pair is asked of the rule again, and refused again
        with pytest.raises(ef.DTypeError, match="Sub"):
            a - ints
    assert list(op.known_dtypes) == [(ef.float32, ef.float32)]


class Careless:
    """A context whose run_op returns what it was given to return."""

    assign_returns_variable = True

    def __init__(self, answer: Any) -> None:
        self.answer = answer

    def run_op(self, op: OpDef, inputs: tuple, attrs: Any, name: str | None) -> Any:
        return self.answer

    def create_variable(self, variable: Any) -> None:
        return None


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        (ef.constant(1.0), "Careless.run_op returned a Tensor (write `return (output,)`) for Neg"),
        ([ef.constant(1.0)], "Careless.run_op returned a list"),
        (
            (ef.constant(1.0), ef.constant(2.0)),
            "returned a tuple of 2 for Neg; expected a tuple of",
        ),
    ],
    ids=["bare_tensor", "list", "two_outputs"],
)
def test_a_context_returning_something_else_than_a_tuple_of_outputs_is_named(
    answer: Any, fragment: str
) -> None:
    x = ef.constant(1.0)
    with execution.context(Careless(answer)), pytest.raises(ef.EagerflowError) as caught:
        ef.negative(x)
    assert fragment in str(caught.value)
