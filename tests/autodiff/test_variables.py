"""Variable: mutable state read and written through ops on the seam, usable like a tensor."""

from __future__ import annotations

import re
import weakref
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable, apply_gradient_descent
from eagerflow.tensor import execution


class OpNames:
    """A recorder on the seam that remembers the name and outputs of every op."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.outputs: list[tuple[Any, ...]] = []

    def record(self, op: Any, inputs: Any, attrs: Any, outputs: Any) -> None:
        self.names.append(op.name)
        self.outputs.append(tuple(outputs))


def raises(exc: type[Exception], *fragments: str):  # type: ignore[no-untyped-def]
    """pytest.raises that also checks every fragment appears in the message."""
    return pytest.raises(exc, match="(?s)" + "".join(f"(?=.*{re.escape(f)})" for f in fragments))


# --- construction and properties -------------------------------------------------------------
def test_scalar_variable_properties() -> None:
    v = Variable(5.0, name="weight")
    assert v.name == "weight:0"
    assert v.shape == ()
    assert v.dtype is ef.float32
    assert v.trainable is True
    assert v.numpy() == 5.0
    assert isinstance(v.numpy(), np.float32)


def test_default_name_is_variable_0() -> None:
    assert Variable(1.0).name == "Variable:0"


def test_array_variable_properties() -> None:
    v = Variable([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], trainable=False)
    assert v.shape == (2, 3)
    assert v.ndim == 2
    assert v.dtype is ef.float32
    assert v.trainable is False
    np.testing.assert_array_equal(v.numpy(), [[1, 2, 3], [4, 5, 6]])


@pytest.mark.parametrize(
    ("value", "dtype", "expected"),
    [
        (1, None, ef.int32),
        (1, "float64", ef.float64),
        (1.0, ef.float64, ef.float64),
        (True, None, ef.bool_),
        (np.zeros(3, np.float64), None, ef.float64),
    ],
)
def test_dtype_argument_and_inference(value: Any, dtype: Any, expected: ef.DType) -> None:
    assert Variable(value, dtype=dtype).dtype is expected


def test_numpy_returns_a_copy() -> None:
    v = Variable([1.0, 2.0])
    array = v.numpy()
    array[0] = 100.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_initial_numpy_array_is_copied() -> None:
    source = np.array([1.0, 2.0], np.float32)
    v = Variable(source)
    source[0] = 100.0
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])


def test_initial_value_may_be_a_callable() -> None:
    calls = []

    def init() -> ef.Tensor:
        calls.append(1)
        return ef.ones((2, 3))

    v = Variable(init, name="init")
    assert calls == [1]
    assert v.shape == (2, 3)
    np.testing.assert_array_equal(v.numpy(), np.ones((2, 3)))
    assert Variable(lambda: [1.0, 2.0]).shape == (2,)


def test_read_value_is_a_tensor_with_the_current_value() -> None:
    v = Variable([1.0, 2.0])
    t = v.read_value()
    assert isinstance(t, ef.Tensor)
    assert t.dtype is ef.float32 and t.shape == (2,)
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


# --- printing --------------------------------------------------------------------------------
def test_scalar_repr_is_tensorflow_like() -> None:
    v = Variable(5.0, name="weight")
    assert repr(v) == "<Variable 'weight:0' shape=() dtype=float32, numpy=5.0>"
    assert str(v) == "<Variable 'weight:0' shape=() dtype=float32, numpy=5.0>"


def test_array_repr_shows_name_shape_dtype_and_values() -> None:
    text = repr(Variable([[1.0, 2.0], [3.0, 4.0]], name="kernel"))
    assert text.startswith("<Variable 'kernel:0' shape=(2, 2) dtype=float32, numpy=")
    assert text.endswith(">")
    values = [float(s) for s in re.findall(r"\d+\.\d*", text.split("numpy=")[1])]
    assert values == [1.0, 2.0, 3.0, 4.0]


# --- assignment ------------------------------------------------------------------------------
def test_assign_replaces_the_value() -> None:
    v = Variable([1.0, 2.0])
    result = v.assign([3.0, 4.0])
    assert result is v  # read_value=True: the variable itself, as in TensorFlow 2
    np.testing.assert_array_equal(v.numpy(), [3.0, 4.0])


def test_assign_add_and_assign_sub() -> None:
    v = Variable(5.0)
    v.assign_add(2.0)
    assert v.numpy() == 7.0
    v.assign_sub(ef.constant(3.0))
    assert v.numpy() == 4.0
    w = Variable([1.0, 2.0])
    w.assign_add([10.0, 20.0])
    w.assign_sub([1.0, 1.0])
    np.testing.assert_array_equal(w.numpy(), [10.0, 21.0])
    assert w.dtype is ef.float32 and w.shape == (2,)


def test_assign_accepts_a_tensor_and_python_ints_for_float_variables() -> None:
    v = Variable([1.0, 2.0])
    v.assign(ef.constant([5.0, 6.0]))
    np.testing.assert_array_equal(v.numpy(), [5.0, 6.0])
    v.assign([7, 8])  # ints convert losslessly to the variable's float dtype
    np.testing.assert_array_equal(v.numpy(), [7.0, 8.0])
    assert v.dtype is ef.float32


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_tensor_read_before_an_assignment_keeps_its_old_value(method: str) -> None:
    v = Variable([1.0, 2.0])
    before = v.read_value()
    as_array = np.asarray(before)
    getattr(v, method)([10.0, 10.0])
    np.testing.assert_array_equal(before.numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(as_array, [1.0, 2.0])
    assert not np.array_equal(v.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_assigning_another_shape_raises_shape_error_and_changes_nothing(method: str) -> None:
    v = Variable([1.0, 2.0], name="weight")
    with raises(ef.ShapeError, "weight:0", "(3,)", "(2,)"):
        getattr(v, method)([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert v.shape == (2,)


def test_assigning_to_a_scalar_variable_another_shape_raises() -> None:
    v = Variable(5.0, name="weight")
    with raises(ef.ShapeError, "weight:0"):
        v.assign([1.0, 2.0])
    assert v.numpy() == 5.0 and v.shape == ()


@pytest.mark.parametrize("method", ["assign_add", "assign_sub"])
@pytest.mark.parametrize("delta", [[1.0], 1.0])
def test_assign_add_sub_do_not_broadcast(method: str, delta: Any) -> None:
    v = Variable([1.0, 2.0, 3.0], name="weight")
    with raises(ef.ShapeError, "weight:0"):
        getattr(v, method)(delta)
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_assigning_another_dtype_raises_dtype_error_and_changes_nothing(method: str) -> None:
    v = Variable([1.0, 2.0], name="weight")
    with raises(ef.DTypeError, "weight:0", "int32", "float32"):
        getattr(v, method)(ef.constant([1, 2]))
    with raises(ef.DTypeError, "weight:0", "float64"):
        getattr(v, method)(ef.constant([1.0, 2.0], ef.float64))
    np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
    assert v.dtype is ef.float32


# --- updates write in place only when nothing else holds the array (copy on write) ----------
UPDATES: dict[str, Any] = {
    "assign_add": lambda v: v.assign_add([1.0, 1.0]),
    "assign_sub": lambda v: v.assign_sub([1.0, 1.0]),
    "apply_gradient_descent": lambda v: apply_gradient_descent(v, 0.5, [1.0, 1.0]),
}


@pytest.mark.parametrize("update", UPDATES.values(), ids=list(UPDATES))
def test_an_update_writes_in_place_when_nothing_else_holds_the_array(update: Any) -> None:
    v = Variable([1.0, 2.0])
    array = weakref.ref(v._array)  # (a weak reference: it does not count as holding it)
    update(v)
    assert v._array is array()
    assert not np.array_equal(v.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("update", UPDATES.values(), ids=list(UPDATES))
def test_an_update_copies_an_array_that_a_tensor_still_holds(update: Any) -> None:
    v = Variable([1.0, 2.0])
    before = v.read_value()
    update(v)
    assert v._array is not before._value
    np.testing.assert_array_equal(before.numpy(), [1.0, 2.0])
    before_again = v.read_value()
    snapshot = before_again.numpy()
    update(v)  # the new array is shared again, so it is copied again
    np.testing.assert_array_equal(before_again.numpy(), snapshot)


@pytest.mark.parametrize("update", UPDATES.values(), ids=list(UPDATES))
def test_an_update_never_writes_through_a_view(update: Any) -> None:
    c = ef.constant([[1.0, 2.0], [3.0, 4.0]])
    v = Variable(np.zeros(2, np.float32))
    v.assign(ef.reshape(c, (4,))[1:3])  # a view into c's array, which only v now holds
    assert v._array.base is not None
    update(v)
    np.testing.assert_array_equal(c.numpy(), [[1.0, 2.0], [3.0, 4.0]])


def test_a_spent_tape_lets_go_of_the_values_it_read() -> None:
    v = Variable([1.0, 2.0])
    with GradientTape() as tape:
        y = ef.reduce_sum(v * v)
    tape.gradient(y, v)
    array = weakref.ref(v._array)
    v.assign_sub([0.5, 0.5])
    assert v._array is array()  # the tape no longer holds the read: updated in place
    assert tape.watched_variables() == (v,)  # though it still knows what it watched


# --- the seam: reads and assignments are ops ----------------------------------------------------
def test_read_value_is_a_read_variable_op() -> None:
    v = Variable([1.0, 2.0])
    log = OpNames()
    with execution.recording(log):
        t = v.read_value()
    assert log.names == ["ReadVariableOp"]
    assert log.outputs[0] == (t,)  # the very tensor handed back


@pytest.mark.parametrize(
    ("use", "then"),
    [
        (lambda v: v + 1.0, "AddV2"),
        (lambda v: 2.0 * v, "Mul"),
        (lambda v: ef.reduce_sum(v), "Sum"),
        (lambda v: v[0], "StridedSlice"),
        (lambda v: v > 0.0, "Greater"),
        (lambda v: ef.convert_to_tensor(v), None),
    ],
)
def test_every_use_reads_through_the_seam(use: Any, then: str | None) -> None:
    v = Variable([1.0, 2.0])
    log = OpNames()
    with execution.recording(log):
        use(v)
    assert log.names[0] == "ReadVariableOp"
    assert log.names[1:] == ([] if then is None else [then])


def test_assignments_are_ops() -> None:
    v = Variable([1.0, 2.0])
    log = OpNames()
    with execution.recording(log):
        v.assign([3.0, 4.0])
        v.assign_add([1.0, 1.0])
        v.assign_sub([1.0, 1.0])
    assert log.names == ["AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp"]


@pytest.mark.parametrize("method", ["assign", "assign_add", "assign_sub"])
def test_assignment_cuts_the_gradient_path(method: str) -> None:
    x = ef.constant(3.0)
    v = Variable(1.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        result = getattr(v, method)(x * 2.0, read_value=False)
        after = v * 1.0
    assert tape.gradient(result, x) is None
    assert tape.gradient(after, x) is None
    assert float(tape.gradient(after, v)) == 1.0  # the read after the assignment is watched


# --- a variable works where a tensor does ------------------------------------------------------
def test_arithmetic_operators() -> None:
    v = Variable([2.0, 4.0])
    cases = {
        "v + 1": (v + 1, [3.0, 5.0]),
        "1 + v": (1 + v, [3.0, 5.0]),
        "v - 1": (v - 1, [1.0, 3.0]),
        "10 - v": (10 - v, [8.0, 6.0]),
        "2 * v": (2 * v, [4.0, 8.0]),
        "v * v": (v * v, [4.0, 16.0]),
        "v / 2": (v / 2, [1.0, 2.0]),
        "8 / v": (8 / v, [4.0, 2.0]),
        "v // 3": (v // 3, [0.0, 1.0]),
        "v % 3": (v % 3, [2.0, 1.0]),
        "v ** 2": (v**2, [4.0, 16.0]),
        "2 ** v": (2**v, [4.0, 16.0]),
        "-v": (-v, [-2.0, -4.0]),
        "abs(-v)": (abs(-v), [2.0, 4.0]),
        "ndarray + v": (np.ones(2, np.float32) + v, [3.0, 5.0]),
    }
    for label, (result, expected) in cases.items():
        assert isinstance(result, ef.Tensor), label
        np.testing.assert_array_equal(result.numpy(), expected, err_msg=label)


def test_matmul_operator_and_ops_taking_tensors() -> None:
    v = Variable([[1.0, 2.0], [3.0, 4.0]])
    m = ef.constant([[1.0], [1.0]])
    np.testing.assert_array_equal((v @ m).numpy(), [[3.0], [7.0]])
    np.testing.assert_array_equal(ef.matmul(v, m).numpy(), [[3.0], [7.0]])
    np.testing.assert_array_equal(ef.matmul(ef.transpose(m), v).numpy(), [[4.0, 6.0]])
    np.testing.assert_array_equal((ef.constant([[1.0, 1.0]]) @ v).numpy(), [[4.0, 6.0]])
    assert ef.reduce_sum(v).numpy() == 10.0
    np.testing.assert_array_equal(ef.reduce_sum(v, axis=0).numpy(), [4.0, 6.0])
    np.testing.assert_array_equal(ef.add(v, v).numpy(), [[2.0, 4.0], [6.0, 8.0]])
    assert ef.convert_to_tensor(v).shape == (2, 2)


def test_indexing_and_iteration() -> None:
    v = Variable([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(v[0].numpy(), [1.0, 2.0])
    assert v[1, 0].numpy() == 3.0
    np.testing.assert_array_equal(v[:, 1].numpy(), [2.0, 4.0])
    assert len(v) == 2
    rows = list(v)
    assert len(rows) == 2
    np.testing.assert_array_equal(rows[1].numpy(), [3.0, 4.0])


def test_comparisons_are_elementwise() -> None:
    v = Variable([1.0, 2.0, 3.0])
    for result, expected in [
        (v < 2.0, [True, False, False]),
        (v <= 2.0, [True, True, False]),
        (v > 2.0, [False, False, True]),
        (v >= 2.0, [False, True, True]),
        (v == 2.0, [False, True, False]),
        (v != 2.0, [True, False, True]),
    ]:
        assert result.dtype is ef.bool_
        np.testing.assert_array_equal(result.numpy(), expected)


def test_python_scalar_conversions() -> None:
    assert float(Variable(2.5)) == 2.5
    assert int(Variable(3)) == 3
    assert bool(Variable(True)) is True
    assert [10, 20, 30][Variable(1)] == 20  # __index__


def test_operator_results_follow_assignments() -> None:
    v = Variable(1.0)
    v.assign(5.0)
    assert (v + 1).numpy() == 6.0
    assert (v * 2).numpy() == 10.0


# --- identity ---------------------------------------------------------------------------------
def test_variables_hash_by_identity() -> None:
    a, b = Variable(1.0), Variable(1.0)
    table = {a: "a", b: "b"}
    assert len(table) == 2
    assert table[a] == "a" and table[b] == "b"
    a.assign(7.0)  # the key does not depend on the value
    assert table[a] == "a"
    assert {a, b, a} == {a, b}
    assert hash(a) != hash(b)


def test_a_format_spec_formats_the_value() -> None:
    v = Variable(2.5)
    assert f"{v:.2f}" == "2.50"
    assert f"{v}" == str(v)  # an empty spec keeps the variable's own str
    with raises(ef.ShapeError, "format() needs", "float32[2]"):
        f"{Variable([1.0, 2.0]):.1f}"
