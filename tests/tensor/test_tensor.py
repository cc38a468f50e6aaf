"""Tensor basics: conversion rules, printing, Python protocols, immutability, == and hashing."""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest

import eagerflow.tensor as ef


def test_first_eager_snippet_from_the_seed() -> None:
    """The classic first eager snippet (shared/seeds/000): runs now, prints like TF."""
    code = "from eagerflow.tensor import matmul\nx = [[2.]]\nm = matmul(x, x)\nprint(m)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "Tensor([[4.]], shape=(1, 1), dtype=float32)\n"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3.0, "Tensor(3.0, shape=(), dtype=float32)"),
        (7, "Tensor(7, shape=(), dtype=int32)"),
        (True, "Tensor(True, shape=(), dtype=bool)"),
        ([1.5, 2.0], "Tensor([1.5 2. ], shape=(2,), dtype=float32)"),
        ([[1, 2], [3, 4]], "Tensor(\n[[1 2]\n [3 4]], shape=(2, 2), dtype=int32)"),
        (np.zeros((0, 2)), "Tensor([], shape=(0, 2), dtype=float64)"),
    ],
)
def test_printing_follows_tensorflow(value: object, text: str) -> None:
    assert repr(ef.constant(value)) == text
    assert str(ef.constant(value)) == text


@pytest.mark.parametrize(
    ("value", "dtype"),
    [
        (1.0, ef.float32),
        (1, ef.int32),
        (2**40, ef.int64),
        (True, ef.bool_),
        ([1, 2.5], ef.float32),
        ([[True], [False]], ef.bool_),
        (np.float64(1.0), ef.float64),
        (np.zeros(2, np.float16), ef.float16),
        (np.zeros(2, np.int64), ef.int64),
        (np.array([True]), ef.bool_),
    ],
)
def test_conversion_dtypes(value: object, dtype: ef.DType) -> None:
    assert ef.convert_to_tensor(value).dtype is dtype
    assert ef.constant(value).dtype is dtype


def test_requested_dtypes_convert_when_lossless() -> None:
    assert ef.constant([1, 2], dtype=ef.float64).dtype is ef.float64
    assert ef.constant(np.arange(3.0), dtype="float32").dtype is ef.float32
    with pytest.raises(ef.DTypeError):
        ef.constant(1.5, dtype=ef.int32)
    with pytest.raises(ef.DTypeError):
        ef.constant([1, 0], dtype=ef.bool_)
    with pytest.raises(ef.DTypeError):
        ef.constant(2**40, dtype=ef.int32)
    with pytest.raises(ef.DTypeError, match="cast"):
        ef.convert_to_tensor(ef.constant(1.0), dtype=ef.float64)


def test_a_list_of_tensors_is_packed_keeping_their_dtype() -> None:
    # as TensorFlow's auto-packing: no trip through NumPy's float32 / int32 defaults
    x = ef.constant(1.0, ef.float64)
    assert ef.convert_to_tensor([x, 2.0]).dtype is ef.float64  # the number takes x's dtype
    assert ef.constant([[x], [x]]).dtype is ef.float64
    assert ef.convert_to_tensor([ef.constant(1, ef.int64), 3]).numpy().tolist() == [1, 3]
    with pytest.raises(ef.DTypeError, match="float64 into a list of float32 tensors"):
        ef.convert_to_tensor([ef.constant(1.0), x])
    with pytest.raises(ef.DTypeError, match="losing information"):
        ef.convert_to_tensor([ef.constant(1), 1.5])


def test_stack_of_python_numbers_converts_them_together() -> None:
    assert ef.stack([1, 2.5]).dtype is ef.float32
    assert ef.stack([ef.constant(1, ef.int64), 2]).dtype is ef.int64


def test_constant_with_shape() -> None:
    assert ef.constant(0.5, shape=(2, 3)).numpy().tolist() == [[0.5] * 3] * 2
    assert ef.constant([1, 2, 3, 4], shape=[2, 2]).numpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(ef.ShapeError, match="3 values cannot fill shape"):
        ef.constant([1, 2, 3], shape=(2, 2))


def test_python_scalar_takes_the_tensors_dtype() -> None:
    x = ef.constant([1.0, 2.0], dtype=ef.float64)
    assert (x * 2).dtype is ef.float64
    assert (2 * x).dtype is ef.float64
    assert (ef.constant([1, 2]) + 1).dtype is ef.int32
    assert (x * [3.0, 4.0]).numpy().tolist() == [3.0, 8.0]
    assert (np.array([1.0, 1.0]) + ef.constant([1.0, 2.0])).dtype is ef.float32  # __radd__


def test_properties_and_numpy() -> None:
    t = ef.constant([[1, 2, 3], [4, 5, 6]])
    assert t.shape == (2, 3) and t.ndim == 2 and len(t) == 2 and t.dtype is ef.int32
    assert isinstance(t.numpy(), np.ndarray) and t.numpy().dtype == np.int32
    scalar = ef.constant(2.5).numpy()
    assert isinstance(scalar, np.float32) and scalar == 2.5
    assert ef.is_tensor(t) and not ef.is_tensor(t.numpy())


def test_numpy_functions_accept_tensors() -> None:
    a, b = ef.constant([1.0, 2.0]), ef.constant([3.0, 4.0])
    product = np.multiply(a, b)
    assert type(product) is np.ndarray and product.tolist() == [3.0, 8.0]
    assert np.asarray(a, dtype=np.float64).dtype == np.float64


def test_tensors_are_immutable() -> None:
    t = ef.constant([1.0, 2.0])
    t.numpy()[0] = 99.0  # a copy
    view = np.asarray(t)
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 99.0
    source = np.array([1.0, 2.0])
    u = ef.constant(source)
    source[0] = 99.0  # the tensor copied its input
    assert t.numpy().tolist() == [1.0, 2.0] and u.numpy().tolist() == [1.0, 2.0]
    with pytest.raises(AttributeError):
        t.shape = (1, 2)  # type: ignore[misc]
    with pytest.raises(AttributeError):
        t.anything = 1  # type: ignore[attr-defined]


def test_one_element_conversions_for_python_control_flow() -> None:
    t = ef.constant(15)
    assert int(t % 3) == 0 and list(range(ef.constant(3))) == [0, 1, 2]
    assert float(ef.constant([[2.5]])) == 2.5
    assert bool(ef.constant(1.0) > 0) and not bool(ef.constant([0]))
    fizz = [("fizz" if int(n % 3) == 0 else int(n)) for n in ef.range(1, 5)]
    assert fizz == [1, 2, "fizz", 4]
    assert [1, 2, 3][ef.constant(1)] == 2  # __index__


def test_iteration_and_len() -> None:
    t = ef.constant([[1, 2], [3, 4], [5, 6]])
    rows = list(t)
    assert len(rows) == 3 and all(isinstance(r, ef.Tensor) for r in rows)
    assert rows[2].numpy().tolist() == [5, 6]
    with pytest.raises(TypeError, match="0-d"):
        len(ef.constant(1.0))
    with pytest.raises(TypeError, match="0-d"):
        iter(ef.constant(1.0)).__next__()


def test_getitem() -> None:
    data = np.arange(24).reshape(2, 3, 4)
    t = ef.constant(data)
    for key in [0, -1, (1, 2), (slice(None), 1), (Ellipsis, 0), (None, 0, slice(None, None, -1)),
                (0, slice(1, None), slice(None, None, 2))]:  # fmt: skip
        assert np.array_equal(t[key].numpy(), data[key]), key
    assert np.array_equal(t[[1, 0]].numpy(), data[[1, 0]])  # gather
    assert np.array_equal(t[ef.constant([1, 1])].numpy(), data[[1, 1]])
    assert t[ef.constant(1)].shape == (3, 4)
    assert t[1 : ef.constant(2)].shape == (1, 3, 4)
    with pytest.raises(TypeError, match="bool"):
        t[True]
    with pytest.raises(TypeError, match="index must be"):
        t["a"]


def test_equality_is_elementwise_and_hash_is_identity() -> None:
    a, b = ef.constant([1.0, 2.0]), ef.constant([1.0, 3.0])
    eq = a == b
    assert (
        isinstance(eq, ef.Tensor) and eq.dtype is ef.bool_ and eq.numpy().tolist() == [True, False]
    )
    assert (a != b).numpy().tolist() == [False, True]
    assert (a == None) is False and (a != None) is True  # noqa: E711 - not convertible
    feed = {a: 1, b: 2}  # tensors key dictionaries by identity, like feed_dict
    assert feed[a] == 1 and len({a, b, ef.constant([1.0, 2.0])}) == 3


def test_operators() -> None:
    x, y = ef.constant([6.0, -7.0]), ef.constant([4.0, 2.0])
    expected = {
        "+": [10.0, -5.0], "-": [2.0, -9.0], "*": [24.0, -14.0], "/": [1.5, -3.5],
        "//": [1.0, -4.0], "%": [2.0, 1.0], "**": [1296.0, 49.0],
    }  # fmt: skip
    for symbol, values in expected.items():
        assert eval(f"x {symbol} y").numpy().tolist() == values, symbol
    assert (-x).numpy().tolist() == [-6.0, 7.0] and abs(x).numpy().tolist() == [6.0, 7.0]
    assert (+x) is x
    assert (x < y).numpy().tolist() == [False, True] and (x >= y).numpy().tolist() == [True, False]
    assert (1 - x).numpy().tolist() == [-5.0, 8.0] and (12 / y).numpy().tolist() == [3.0, 6.0]
    assert (2**y).numpy().tolist() == [16.0, 4.0] and (7 % y).numpy().tolist() == [3.0, 1.0]
    p, q = ef.constant([True, False]), ef.constant([True, True])
    assert (p & q).numpy().tolist() == [True, False] and (p | q).numpy().tolist() == [True, True]
    assert (~p).numpy().tolist() == [False, True]
    m = ef.constant([[1.0, 2.0]])
    assert (m @ ef.transpose(m)).numpy().tolist() == [[5.0]]
    assert ([[1.0, 2.0]] @ ef.transpose(m)).numpy().tolist() == [[5.0]]


def test_integer_division_follows_tensorflow() -> None:
    q = ef.constant([7, -7]) / ef.constant([2, 2])
    assert q.dtype is ef.float64 and q.numpy().tolist() == [3.5, -3.5]
    assert (ef.constant([7, -7]) // 2).numpy().tolist() == [3, -4]
    assert (ef.constant([7, -7]) % 3).numpy().tolist() == [1, 2]
    assert ef.reduce_mean(ef.constant([1, 2])).numpy() == 1  # truncates, as in TF
    assert ef.reduce_mean(ef.constant([-1, -2])).numpy() == -1


def test_dtypes() -> None:
    assert [d.name for d in (ef.float16, ef.float32, ef.float64)] == [
        "float16", "float32", "float64"]  # fmt: skip
    assert ef.as_dtype("int64") is ef.int64 and ef.as_dtype(np.float32) is ef.float32
    assert ef.as_dtype(bool) is ef.bool_ and ef.as_dtype(np.dtype("bool")) is ef.bool_
    assert ef.bool is ef.bool_  # TensorFlow's spelling, still available
    assert ef.float32.is_floating and ef.int32.is_integer and ef.bool_.is_bool
    assert ef.int32.max == 2**31 - 1 and ef.bool_.min is False
    assert pickle.loads(pickle.dumps(ef.float64)) is ef.float64
    with pytest.raises(TypeError, match="no dtype"):
        ef.as_dtype("complex64")


def test_overflow_and_inf_minus_inf_give_ieee_answers_without_numpy_warnings() -> None:
    # In a fresh program: pytest restores the warning filters after importing test modules,
    # which drops the filter eagerflow adds when it is imported.
    script = """if True:
        import numpy as np
        import eagerflow.tensor as ef
        inf, big = ef.constant([np.inf]), ef.constant([3e38])
        results = [inf - inf, inf + -inf, inf * 0.0, big * 10.0, big + big]
        print([float(r.numpy()[0]) for r in results])
        from eagerflow.graph import Graph, Session
        with Graph().as_default() as graph:
            difference = ef.constant([np.inf]) - ef.constant([np.inf])
        print("graph:", Session(graph).run(difference))
        try:
            np.subtract(np.array([np.inf]), np.array([np.inf]))  # plain NumPy still warns
        except RuntimeWarning as warning:
            print("numpy:", warning)
    """
    run = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", script],
                         capture_output=True, text=True, check=True)  # fmt: skip
    assert run.stdout.splitlines() == [
        "[nan, nan, nan, inf, inf]",
        "graph: [nan]",
        "numpy: invalid value encountered in subtract",
    ]


def test_stable_kernels_at_large_magnitudes() -> None:
    big = ef.constant([-1e4, 0.0, 1e4])
    assert ef.sigmoid(big).numpy().tolist() == [0.0, 0.5, 1.0]
    assert ef.softplus(big).numpy().tolist() == pytest.approx([0.0, np.log(2.0), 1e4])
    assert np.allclose(ef.softmax(big).numpy(), [0.0, 0.0, 1.0])
    assert np.allclose(ef.log_softmax(big).numpy(), [-2e4, -1e4, 0.0])
    with np.errstate(all="raise"):  # and no NumPy warning escapes from our kernels
        ef.log(ef.constant([0.0])), ef.sqrt(ef.constant([-1.0])), ef.exp(ef.constant([1e4]))
