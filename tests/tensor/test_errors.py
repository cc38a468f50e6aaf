"""Bad input gets a specific error that names the op and the shapes/dtypes involved."""

from __future__ import annotations

import re

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.tensor.errors import format_shape
from eagerflow.tensor.execution import execute


def raises(exc: type[Exception], *fragments: str):  # type: ignore[no-untyped-def]
    """pytest.raises that also checks every fragment appears in the message."""
    return pytest.raises(exc, match="(?s)" + "".join(f"(?=.*{re.escape(f)})" for f in fragments))


def test_non_broadcastable_shapes() -> None:
    with raises(ef.ShapeError, "AddV2", "float32[2,3]", "float32[4]", "cannot be broadcast"):
        ef.add(ef.ones((2, 3)), ef.ones(4))
    with raises(ef.ShapeError, "Mul", "(2, 3)", "(2,)"):
        ef.ones((2, 3)) * ef.ones(2)


def test_matmul_inner_dimensions() -> None:
    with raises(ef.ShapeError, "MatMul", "float32[2,3]", "float32[4,5]", "inner dimensions"):
        ef.matmul(ef.ones((2, 3)), ef.ones((4, 5)))
    with raises(ef.ShapeError, "MatMul", "rank >= 2"):
        ef.matmul(ef.ones(3), ef.ones(3))


def test_reshape_incompatible_size() -> None:
    with raises(ef.ShapeError, "Reshape", "float32[2,3]", "(4, 2)", "6 elements"):
        ef.reshape(ef.ones((2, 3)), (4, 2))
    with raises(ef.ShapeError, "Reshape", "(4, -1)"):
        ef.reshape(ef.ones((2, 3)), (4, -1))


@pytest.mark.parametrize(
    ("call", "op"),
    [
        (lambda x: ef.reduce_sum(x, axis=2), "Sum"),
        (lambda x: ef.reduce_mean(x, axis=-3), "Mean"),
        (lambda x: ef.argmax(x, axis=5), "ArgMax"),
        (lambda x: ef.expand_dims(x, 4), "ExpandDims"),
        (lambda x: ef.concat([x, x], axis=2), "ConcatV2"),
        (lambda x: ef.softmax(x, axis=2), "Softmax"),
        (lambda x: ef.gather(x, [0], axis=3), "GatherV2"),
    ],
)
def test_axis_out_of_range(call, op: str) -> None:  # type: ignore[no-untyped-def]
    with raises(ef.AxisError, op, "float32[2,3]", "out of range for rank 2"):
        call(ef.ones((2, 3)))


def test_dtype_mismatch() -> None:
    with raises(ef.DTypeError, "AddV2", "float32", "int32", "same dtype"):
        ef.constant([1.0]) + ef.constant([1])
    with raises(ef.DTypeError, "MatMul", "float32", "float64"):
        ef.matmul(ef.ones((2, 2)), ef.ones((2, 2), ef.float64))
    with raises(ef.DTypeError, "Sqrt", "int32", "not supported"):
        ef.sqrt(ef.constant([4]))
    with raises(ef.DTypeError, "SelectV2", "condition must be bool"):
        ef.where(ef.constant([1.0]), 1.0, 2.0)


def test_python_scalar_that_loses_information() -> None:
    with raises(ef.DTypeError, "1.5", "int32", "cast"):
        ef.constant([1, 2]) * 1.5
    with raises(ef.DTypeError, "True", "float32"):
        ef.constant([1.0]) + True


def test_ragged_nested_list() -> None:
    with raises(ef.ShapeError, "rectangular", "ragged"):
        ef.constant([[1.0, 2.0], [3.0]])


@pytest.mark.parametrize("value", ["abc", b"abc", ["a", "b"], object(), [1, None], {"a": 1}])
def test_strings_and_objects_are_not_tensors(value: object) -> None:
    with pytest.raises(ef.DTypeError, match="convert_to_tensor"):
        ef.constant(value)


def test_unsupported_numpy_dtype() -> None:
    with raises(ef.DTypeError, "uint8", "no eagerflow dtype"):
        ef.constant(np.zeros(3, np.uint8))


@pytest.mark.parametrize("conv", [int, float, bool])
def test_scalar_conversion_of_many_elements(conv: type) -> None:
    with raises(ef.ShapeError, f"{conv.__name__}()", "float32[2,2]", "4 elements"):
        conv(ef.ones((2, 2)))


def test_index_of_float_tensor() -> None:
    with pytest.raises(TypeError, match="integer"):
        range(ef.constant(3.0))  # type: ignore[call-overload]


def test_unknown_op() -> None:
    with raises(ef.UnknownOpError, "NoSuchOp"):
        execute("NoSuchOp", (ef.ones(2),))
    with pytest.raises(LookupError):  # UnknownOpError is a LookupError
        ef.get_op("NoSuchOp")


def test_index_out_of_range() -> None:
    with raises(ef.OutOfRangeError, "StridedSlice", "index 3", "size 3"):
        ef.ones(3)[3]
    with raises(ef.OutOfRangeError, "GatherV2", "index 7"):
        ef.gather(ef.ones(3), [0, 7])


def test_integer_division_by_zero() -> None:
    with raises(ef.InvalidArgumentError, "FloorDiv", "int32", "division by zero"):
        ef.constant([1, 2]) // 0
    with raises(ef.InvalidArgumentError, "FloorMod", "division by zero"):
        ef.constant([1, 2]) % ef.constant([1, 0])


def test_other_shape_errors_name_the_op() -> None:
    with raises(ef.ShapeError, "Transpose", "perm"):
        ef.transpose(ef.ones((2, 3)), [0, 0])
    with raises(ef.ShapeError, "Squeeze", "axis 1"):
        ef.squeeze(ef.ones((2, 3)), axis=1)
    with raises(ef.ShapeError, "Pack", "cannot stack"):
        ef.stack([ef.ones(2), ef.ones(3)])
    with raises(ef.ShapeError, "SplitV", "3 equal parts"):
        ef.split(ef.ones(4), 3)
    with raises(ef.ShapeError, "BroadcastTo", "(3,)", "(2, 2)"):
        ef.broadcast_to(ef.ones(3), (2, 2))
    with raises(ef.ShapeError, "Tile", "multiples"):
        ef.tile(ef.ones((2, 3)), [2])


def test_errors_are_also_builtin_exceptions() -> None:
    assert issubclass(ef.ShapeError, ValueError)
    assert issubclass(ef.AxisError, ValueError)
    assert issubclass(ef.DTypeError, TypeError)
    assert issubclass(ef.OutOfRangeError, IndexError)
    assert issubclass(ef.UnknownOpError, LookupError)


def test_kernel_failure_with_valid_shapes_is_still_our_error() -> None:
    """Where NumPy itself refuses (the argmax of no elements, which TensorFlow refuses too),
    the seam wraps it."""
    with raises(ef.InvalidArgumentError, "ArgMax", "float32[0]", "the kernel failed"):
        ef.argmax(ef.zeros(0), axis=0)


@pytest.mark.parametrize(
    ("seed", "error", "message"),
    [
        ("a", TypeError, "set_seed: the seed must be an int, got 'a'"),
        (1.5, TypeError, "set_seed: the seed must be an int, got 1.5"),
        (True, TypeError, "set_seed: the seed must be an int, got True"),
        (-1, ef.InvalidArgumentError, "set_seed: the seed must be >= 0, got -1"),
    ],
)
def test_set_seed_takes_an_int(seed: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=re.escape(message)):
        ef.set_seed(seed)  # type: ignore[arg-type]


def test_set_seed_none_draws_fresh_entropy() -> None:
    ef.set_seed(None)
    first = ef.random_uniform((4,)).numpy()
    ef.set_seed(None)
    assert not np.array_equal(first, ef.random_uniform((4,)).numpy())
    ef.set_seed(np.int64(7))
    again = ef.random_uniform((4,)).numpy()
    ef.set_seed(7)
    np.testing.assert_array_equal(again, ef.random_uniform((4,)).numpy())


def test_a_shape_is_written_one_way() -> None:
    written = [format_shape(s) for s in [(None, 3), (3,), (), None, (np.int64(2), 1)]]
    assert written == ["(None, 3)", "(3,)", "()", "<unknown>", "(2, 1)"]
    assert [str(ef.TensorShape(s)) for s in [(None, 3), None]] == ["(None, 3)", "<unknown>"]
    flags = {"transpose_a": False, "transpose_b": False}
    with raises(ef.ShapeError, "(None, 3) @ (4, 5)"):  # a rule's message, unknown dim and all
        ef.get_op("MatMul").shape_rule([(None, 3), (4, 5)], flags)
