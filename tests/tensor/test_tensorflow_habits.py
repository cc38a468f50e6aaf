"""What a TensorFlow user reaches for first, spelled and behaving as in TensorFlow: format
specs on tensors, ``tf.nn``, ``tf.linspace``, ``get_shape()``, ``one_hot``'s dtype from its
values, and ``tf.where`` with one argument."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef


# --- format specs ---------------------------------------------------------------------------------
def test_a_one_element_tensor_formats_like_its_python_number() -> None:
    loss = ef.constant(0.123456)
    assert f"{loss:.3f}" == "0.123"
    assert "{:.3f}".format(loss) == "0.123"  # noqa: UP032 (the spelling users write)
    assert f"{ef.constant([[7]]):>4}" == "   7"  # one element, whatever the shape
    assert f"{ef.constant(2**40):,}" == "1,099,511,627,776"
    assert f"{ef.constant(True):d}" == "1"


def test_an_empty_format_spec_keeps_str() -> None:
    t = ef.constant([1.0, 2.0])
    assert f"{t}" == format(t, "") == str(t)


def test_a_format_spec_on_several_elements_is_a_shape_error() -> None:
    with pytest.raises(ef.ShapeError, match=r"format\(\) needs .* one element, got float32\[2\]"):
        f"{ef.constant([1.0, 2.0]):.3f}"


# --- tf.nn ----------------------------------------------------------------------------------------
def test_tf_nn_spelling() -> None:
    """``ef.nn.relu`` is ``ef.relu``: one op, two spellings (the old one stays)."""
    for name in ("relu", "softmax", "log_softmax", "sigmoid", "tanh", "softplus"):
        assert getattr(ef.nn, name) is getattr(ef, name)
    assert ef.nn.sparse_softmax_cross_entropy_with_logits is (
        ef.sparse_softmax_cross_entropy_with_logits
    )


def test_elu_and_leaky_relu_values() -> None:
    x = ef.constant([-2.0, -0.5, 0.0, 3.0], ef.float64)
    np.testing.assert_allclose(ef.nn.elu(x).numpy(), [np.expm1(-2), np.expm1(-0.5), 0, 3])
    np.testing.assert_allclose(ef.nn.leaky_relu(x).numpy(), [-0.4, -0.1, 0, 3])  # alpha=0.2
    np.testing.assert_allclose(ef.nn.leaky_relu(x, alpha=0.5).numpy(), [-1, -0.25, 0, 3])
    assert ef.nn.elu(ef.constant([-1e4, 1e4])).numpy().tolist() == [-1.0, 1e4]  # no overflow


def test_star_on_bools_is_logical_and_and_eq_refuses_another_kind() -> None:
    t, f = ef.constant([True, False]), ef.constant([True, True])
    assert (t * f).numpy().tolist() == [True, False] and (True * t).dtype is ef.bool_
    with pytest.raises(ef.DTypeError, match="Mul"):
        ef.multiply(t, f)  # the op refuses bools, as TensorFlow's Mul does
    with pytest.raises(TypeError):
        _ = t == 1  # as TensorFlow: not silently False
    assert (t == None) is False  # noqa: E711 - None alone falls back to identity


def test_elu_takes_floats_only_and_leaky_relu_casts_ints_to_float32() -> None:
    with pytest.raises(ef.DTypeError, match=r"Elu\(int32\[2\]\)"):
        ef.nn.elu([1, 2])
    result = ef.nn.leaky_relu([-5, 2])  # as TensorFlow's leaky_relu: a cast first
    assert result.dtype is ef.float32 and result.numpy().tolist() == [-1.0, 2.0]


def test_leaky_relus_alpha_must_be_a_number() -> None:
    with pytest.raises(TypeError, match=r"leaky_relu: alpha must be a number, got '0.1'"):
        ef.nn.leaky_relu([1.0], alpha="0.1")  # type: ignore[arg-type]


# --- one_hot's dtype ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kwargs", "dtype", "row"),
    [
        ({}, ef.float32, [0, 1, 0]),
        ({"on_value": 5, "off_value": 0}, ef.int32, [0, 5, 0]),
        ({"on_value": 5}, ef.int32, [0, 5, 0]),  # the other value is 0 (or 1) of that dtype
        ({"off_value": -1}, ef.int32, [-1, 1, -1]),
        ({"on_value": np.float64(0.5)}, ef.float64, [0, 0.5, 0]),
        ({"on_value": ef.constant(7, ef.int64), "off_value": 2**33}, ef.int64, [2**33, 7, 2**33]),
        ({"on_value": True, "off_value": False}, ef.bool_, [False, True, False]),
        ({"on_value": 5, "dtype": ef.float64}, ef.float64, [0, 5, 0]),  # dtype= wins
    ],
)
def test_one_hot_takes_its_dtype_from_its_values(kwargs: dict, dtype: ef.DType, row: list) -> None:
    result = ef.one_hot([1], 3, **kwargs)
    assert result.dtype is dtype
    assert result.numpy().tolist() == [row]


def test_one_hots_values_of_two_dtypes_are_a_dtype_error() -> None:
    with pytest.raises(ef.DTypeError, match=r"OneHot\(int32\[1\]\): on_value and off_value .* "
                       r"got int32 and float32"):  # fmt: skip
        ef.one_hot([1], 3, on_value=1, off_value=0.5)


# --- where(condition): the coordinates of the True elements ---------------------------------------
@pytest.mark.parametrize(
    "condition",
    [
        [[True, False], [False, True], [True, True]],
        [False, False, False],
        np.zeros((2, 0, 3), bool),
        np.array(True),
        np.random.default_rng(0).random((3, 4, 2)) > 0.5,
    ],
)
def test_where_with_one_argument_gives_coordinates(condition: object) -> None:
    result = ef.where(condition)
    expected = np.argwhere(np.asarray(condition))
    assert result.dtype is ef.int64
    assert result.shape == expected.shape  # (number of True elements, rank)
    np.testing.assert_array_equal(result.numpy(), expected)


def test_where_with_one_argument_is_an_op_of_data_dependent_shape() -> None:
    assert ef.get_op("Where").shape_rule([(4, 3)], {}) == [(None, 2)]


def test_where_needs_a_bool_condition_and_both_or_neither_of_x_and_y() -> None:
    assert ef.where([3, 0, -1]).numpy().tolist() == [[0], [2]]  # alone: nonzero is True, as TF
    with pytest.raises(ef.DTypeError, match=r"SelectV2\(int32\[2\].*condition must be bool"):
        ef.where([1, 0], [1.0, 2.0], [3.0, 4.0])
    with pytest.raises(ef.InvalidArgumentError, match=r"x and y must both be given or both"):
        ef.where([True], [1.0])
    with pytest.raises(ef.InvalidArgumentError, match=r"x and y must both be given or both"):
        ef.where([True], y=[1.0])


# --- linspace -------------------------------------------------------------------------------------
def test_linspace_matches_numpy() -> None:
    result = ef.linspace(0, 1, 5)  # TF: tf.linspace; two ints give float64 (tests/conformance)
    assert result.dtype is ef.float64
    assert ef.linspace(0.0, 1, 5).dtype is ef.float32  # a Python float: float32
    np.testing.assert_allclose(result.numpy(), np.linspace(0, 1, 5))
    assert ef.linspace(np.float64(-1), 2.0, 4).dtype is ef.float64  # start's float dtype
    assert ef.linspace(3.0, 7.0, 1).numpy().tolist() == [3.0]  # one value: the start
    assert ef.get_op("LinSpace").shape_rule([], {"start": 0, "stop": 1, "num": 3}) == [(3,)]


def test_linspace_mistakes() -> None:
    assert ef.linspace(0.0, 1.0, 0).shape == (0,)  # none, as in TensorFlow
    with pytest.raises(ef.InvalidArgumentError, match=r"LinSpace\(\): num must be >= 0, got -1"):
        ef.linspace(0.0, 1.0, -1)
    with pytest.raises(TypeError, match=r"linspace: num must be an int, got 2.5"):
        ef.linspace(0.0, 1.0, 2.5)  # type: ignore[arg-type]
    with pytest.raises(ef.DTypeError, match=r"LinSpace\(\): start and stop .* float64 and float32"):
        ef.linspace(np.float64(0), np.float32(1), 3)
    with pytest.raises(ef.DTypeError, match=r"LinSpace\(\): start and stop must be numbers"):
        ef.linspace(True, 1.0, 3)


# --- get_shape() and TensorShape ------------------------------------------------------------------
def test_get_shape_is_a_tuple_with_tensorflows_methods() -> None:
    shape = ef.zeros((2, 3)).get_shape()
    assert isinstance(shape, ef.TensorShape) and isinstance(shape, tuple)
    assert shape == (2, 3) and (2, 3) == shape and shape[1] == 3  # noqa: SIM300 (both sides)
    assert shape.as_list() == [2, 3] and shape.rank == 2 and shape.is_fully_defined()
    assert repr(shape) == "TensorShape([2, 3])" and str(shape) == "(2, 3)"
    assert ef.constant(1.0).get_shape().as_list() == []


def test_a_shape_of_unknown_rank() -> None:
    shape = ef.TensorShape(None)
    assert shape.rank is None and not shape.is_fully_defined()
    assert shape != () and shape == ef.TensorShape(None)
    assert repr(shape) == "TensorShape(None)" and str(shape) == "<unknown>"
    with pytest.raises(ValueError, match=r"as_list\(\) is not defined on a shape of unknown rank"):
        shape.as_list()
    partial = ef.TensorShape([None, 3])
    assert partial.rank == 2 and not partial.is_fully_defined() and partial == (None, 3)


def test_a_bool_mask_index_keeps_the_true_slices() -> None:
    # t[mask] is TensorFlow's boolean_mask: a mask of the first axes, flattened with them
    x = ef.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert x[ef.constant([True, False, True])].numpy().tolist() == [[1.0, 2.0], [5.0, 6.0]]
    assert x[x > 2.5].numpy().tolist() == [3.0, 4.0, 5.0, 6.0]
    assert x[[False, False, False]].shape == (0, 2)
