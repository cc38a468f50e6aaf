"""Property tests: every public op of ``eagerflow.tensor`` against a NumPy reference.

Hypothesis draws shapes (broadcasting included), dtypes and values; references are computed
with NumPy in float64 (int64 for integers), and results are checked for value, dtype (our
``DType`` objects, by identity) and shape.

A recorder (the seam's own extension point) watches every op run in this module and checks
that the op's registered shape and dtype rules, the ones graph mode relies on, predict the eager
result, and that the NumPy array inside a tensor has the dtype the tensor claims.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import eagerflow.tensor as ef
from eagerflow.tensor import execution

F16, F32, F64 = ef.float16, ef.float32, ef.float64
I32, I64, B = ef.int32, ef.int64, ef.bool_
FLOATS = (F16, F32, F64)
INTS = (I32, I64)
NUMBERS = (*FLOATS, *INTS)
ALL = (*NUMBERS, B)

# Relative and absolute tolerances of one correctly rounded (or nearly so) float operation.
RTOL = {F16: 2e-3, F32: 2e-6, F64: 1e-12}
ATOL = {F16: 1e-3, F32: 1e-6, F64: 1e-12}

QUICK = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PER_DTYPE = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- every op's rules must predict what its kernel did ------------------------------------------
class RuleChecker:
    """A recorder: the op's shape and dtype rules agree with the eager outputs."""

    def record(self, op: ef.OpDef, inputs: tuple, attrs: Any, outputs: tuple) -> None:
        try:
            shapes = [tuple(s) for s in op.shape_rule([t.shape for t in inputs], attrs)]
            dts = list(op.dtype_rule([t.dtype for t in inputs], attrs))
        except Exception as e:  # an AssertionError, so `pytest.raises(ShapeError)` won't eat it
            raise AssertionError(f"{op.name}: its rules reject inputs its kernel took: {e}") from e
        got = [tuple(t.shape) for t in outputs]
        assert shapes == got, f"{op.name}: shape rule says {shapes}, kernel gave {got}"
        assert dts == [t.dtype for t in outputs], f"{op.name}: dtype rule says {dts}"
        for t in outputs:
            assert np.asarray(t).dtype == t.dtype.np, f"{op.name}: {t.dtype} holds the wrong array"


@pytest.fixture(autouse=True, scope="module")
def _rules_agree_with_kernels() -> Iterator[None]:
    with execution.recording(RuleChecker()):
        yield


# --- helpers ------------------------------------------------------------------------------------
def as64(a: Any) -> np.ndarray:
    """The exact float64/int64/bool version of a reference operand."""
    a = np.asarray(a)
    kind = a.dtype.kind
    return a.astype(np.float64 if kind == "f" else np.int64 if kind == "i" else np.bool_)


def check(
    result: Any,
    expected: Any,
    dtype: ef.DType,
    *,
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """``result`` is a tensor of ``dtype`` whose shape and values are ``expected``'s."""
    assert isinstance(result, ef.Tensor), f"not a tensor: {result!r}"
    assert result.dtype is dtype, f"dtype {result.dtype}, expected {dtype}"
    expected = np.asarray(expected)
    assert result.shape == expected.shape, f"shape {result.shape}, expected {expected.shape}"
    got = np.asarray(result)
    assert got.dtype == dtype.np
    if dtype.is_floating:
        np.testing.assert_allclose(
            got.astype(np.float64),
            expected.astype(np.float64),
            rtol=RTOL[dtype] if rtol is None else rtol,
            atol=ATOL[dtype] if atol is None else atol,
        )
    else:
        np.testing.assert_array_equal(got, expected)


def floats(dtype: ef.DType, lo: float, hi: float) -> st.SearchStrategy[float]:
    """Finite floats in [lo, hi], each exactly representable in ``dtype``."""
    return st.floats(
        lo,
        hi,
        width=dtype.np.itemsize * 8,
        allow_nan=False,
        allow_infinity=False,
        allow_subnormal=False,
    )


def quarters(lo: int, hi: int) -> st.SearchStrategy[float]:
    """Multiples of 1/4 in [lo, hi]: exact in every float dtype, so sums of a few are too."""
    return st.integers(4 * lo, 4 * hi).map(lambda k: k / 4)


def values(dtype: ef.DType, lo: int = -100, hi: int = 100) -> st.SearchStrategy[Any]:
    if dtype is B:
        return st.booleans()
    if dtype.is_integer:
        return st.integers(lo, hi)
    return floats(dtype, lo, hi)


def arrays(
    dtype: ef.DType, shape: Any, elements: st.SearchStrategy[Any] | None = None
) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(dtype.np, shape, elements=values(dtype) if elements is None else elements)


def python_scalar(dtype: ef.DType, value: Any) -> Any:
    return bool(value) if dtype is B else int(value) if dtype.is_integer else float(value)


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
some_dtype = st.sampled_from(ALL)


@st.composite
def any_array(draw: st.DrawFn, shape: Any = shapes) -> np.ndarray:
    dtype = draw(some_dtype)
    return draw(arrays(dtype, shape if isinstance(shape, tuple) else draw(shape)))


def tensor(a: np.ndarray) -> ef.Tensor:
    t = ef.constant(a)
    assert t.dtype is ef.as_dtype(a.dtype)
    return t


# --- elementwise binary ops ---------------------------------------------------------------------
def _divisors(dtype: ef.DType) -> st.SearchStrategy[Any]:
    """Float divisors: 0 (x/0 is ±inf or nan) or |y| >= 1/16, so that no quotient overflows."""
    return st.one_of(st.just(0.0), floats(dtype, 1 / 16, 100), floats(dtype, -100, -1 / 16))


_FLOOR_DIVISORS = [-8, -4, -3, -2, -1.5, -1, -0.5, -0.25, 0.25, 0.5, 1, 1.5, 2, 3, 4, 8]
_SMALL_INTS = st.integers(-3, 3)


def _compare_values(dtype: ef.DType) -> st.SearchStrategy[Any]:
    """Few distinct values (so that ties happen) mixed with arbitrary ones."""
    if dtype is B:
        return st.booleans()
    small = _SMALL_INTS if dtype.is_integer else _SMALL_INTS.map(float)
    return st.one_of(small, values(dtype))


@dataclass(frozen=True)
class Binary:
    fn: Callable[..., ef.Tensor]
    op: str  # the TensorFlow name, which error messages carry
    ref: Callable[[np.ndarray, np.ndarray], np.ndarray]
    dtypes: tuple[ef.DType, ...]
    symbol: Callable[[Any, Any], Any] | None = None
    elements: Callable[[ef.DType], tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]] = (
        lambda d: (values(d), values(d))
    )
    exact: bool = False  # no rounding at all: compare floats exactly too
    to_bool: bool = False  # a comparison: the result is bool


def _ref_divide(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.true_divide(x.astype(np.float64), y.astype(np.float64))


def _floor_elements(d: ef.DType) -> tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]:
    if d.is_integer:
        return st.integers(-100, 100), st.integers(-10, 10).filter(bool)
    return quarters(-100, 100), st.sampled_from(_FLOOR_DIVISORS)


def _pow_real(d: ef.DType) -> tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]:
    """Positive bases to fractional exponents (integers to small non-negative powers)."""
    if d.is_integer:
        return st.integers(-8, 8), st.integers(0, 5)
    return floats(d, 0.25, 4), quarters(-3, 3)


def _pow_integral(d: ef.DType) -> tuple[st.SearchStrategy[Any], st.SearchStrategy[Any]]:
    """Any non-zero base, negative ones included, to integral exponents."""
    base = st.one_of(floats(d, 0.25, 4), floats(d, -4, -0.25))
    return base, st.integers(-3, 3).map(float)


def _pow_ref(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.power(x, y)


BINARY = {
    "add": Binary(ef.add, "AddV2", np.add, NUMBERS, operator.add),
    "subtract": Binary(ef.subtract, "Sub", np.subtract, NUMBERS, operator.sub),
    "multiply": Binary(ef.multiply, "Mul", np.multiply, NUMBERS, operator.mul),
    "divide": Binary(
        ef.divide,
        "RealDiv",
        _ref_divide,
        NUMBERS,
        operator.truediv,
        lambda d: (values(d), st.integers(-100, 100) if d.is_integer else _divisors(d)),
    ),
    "floordiv": Binary(
        ef.floordiv, "FloorDiv", np.floor_divide, NUMBERS, operator.floordiv, _floor_elements, True
    ),
    "floormod": Binary(
        ef.floormod, "FloorMod", np.mod, NUMBERS, operator.mod, _floor_elements, True
    ),
    "pow-real": Binary(ef.pow, "Pow", _pow_ref, NUMBERS, operator.pow, _pow_real),
    "pow-integral": Binary(ef.pow, "Pow", _pow_ref, FLOATS, operator.pow, _pow_integral),
    "maximum": Binary(ef.maximum, "Maximum", np.maximum, NUMBERS, exact=True),
    "minimum": Binary(ef.minimum, "Minimum", np.minimum, NUMBERS, exact=True),
    **{
        name: Binary(
            fn,
            tf,
            ref,
            dts,
            sym,
            lambda d: (_compare_values(d), _compare_values(d)),
            exact=True,
            to_bool=True,
        )
        for name, fn, tf, ref, dts, sym in [
            ("less", ef.less, "Less", np.less, NUMBERS, operator.lt),
            ("less_equal", ef.less_equal, "LessEqual", np.less_equal, NUMBERS, operator.le),
            ("greater", ef.greater, "Greater", np.greater, NUMBERS, operator.gt),
            (
                "greater_equal",
                ef.greater_equal,
                "GreaterEqual",
                np.greater_equal,
                NUMBERS,
                operator.ge,
            ),
            ("equal", ef.equal, "Equal", np.equal, ALL, operator.eq),
            ("not_equal", ef.not_equal, "NotEqual", np.not_equal, ALL, operator.ne),
            ("logical_and", ef.logical_and, "LogicalAnd", np.logical_and, (B,), operator.and_),
            ("logical_or", ef.logical_or, "LogicalOr", np.logical_or, (B,), operator.or_),
        ]
    },
}


def _result_dtype(spec: Binary, dtype: ef.DType) -> ef.DType:
    if spec.to_bool:
        return B
    if spec.fn is ef.divide and dtype.is_integer:
        return F64  # TensorFlow's truediv: integers are divided as float64
    return dtype


def per_dtype(table: dict[str, Any]) -> Any:
    """Every (op, dtype) pair it supports, as pytest parameters: each dtype is tested each run."""
    return pytest.mark.parametrize(
        ("name", "dtype"),
        [pytest.param(n, d, id=f"{n}-{d.name}") for n, spec in table.items() for d in spec.dtypes],
    )


@per_dtype(BINARY)
@PER_DTYPE
@given(data=st.data())
def test_binary_op_matches_numpy(name: str, dtype: ef.DType, data: st.DataObject) -> None:
    spec = BINARY[name]
    xs, ys = spec.elements(dtype)
    # "tensors": two tensors; "right"/"left": the other operand is a Python scalar
    mode = data.draw(st.sampled_from(["tensors", "tensors", "right", "left"]), label="mode")
    bshapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=3))
    x_shape, y_shape = bshapes.input_shapes
    if mode == "left":
        x_shape = ()
    elif mode == "right":
        y_shape = ()
    x = data.draw(arrays(dtype, x_shape, xs), label="x")
    y = data.draw(arrays(dtype, y_shape, ys), label="y")
    use_symbol = spec.symbol is not None and data.draw(st.booleans(), label="operator")
    call = spec.symbol if use_symbol else spec.fn
    assert call is not None

    lhs = python_scalar(dtype, x) if mode == "left" else tensor(x)
    rhs = python_scalar(dtype, y) if mode == "right" else tensor(y)
    result, ref = call(lhs, rhs), spec.ref(as64(x), as64(y))
    out = _result_dtype(spec, dtype)
    if spec.exact:
        check(result, ref, out, rtol=0, atol=0)
    else:
        check(result, ref, out)


@pytest.mark.parametrize("name", sorted({s.op: n for n, s in BINARY.items()}.values()))
@FEW
@given(data=st.data())
def test_binary_op_on_two_dtypes_names_op_and_both_dtypes(name: str, data: st.DataObject) -> None:
    spec = BINARY[name]
    dt1 = data.draw(st.sampled_from(spec.dtypes))
    dt2 = data.draw(st.sampled_from([d for d in ALL if d is not dt1]))
    if data.draw(st.booleans()):
        dt1, dt2 = dt2, dt1
    a = ef.ones((2, 3), dt1)
    b = ef.ones((2, 3), dt2)
    with pytest.raises(ef.DTypeError) as info:
        spec.fn(a, b)
    message = str(info.value)
    assert message.startswith(spec.op + "(")
    assert dt1.name in message
    assert dt2.name in message


@pytest.mark.parametrize("name", list(BINARY))
def test_binary_op_rejects_unsupported_dtypes(name: str) -> None:
    spec = BINARY[name]
    for dtype in ALL:
        if dtype in spec.dtypes or (spec.fn is ef.pow and dtype in NUMBERS):
            continue
        with pytest.raises(ef.DTypeError, match=spec.op):
            spec.fn(ef.zeros((2,), dtype), ef.zeros((2,), dtype))


@pytest.mark.parametrize(
    ("op", "call"),
    [
        ("MatMul", lambda a, b: ef.matmul(a, b)),
        ("SelectV2", lambda a, b: ef.where(ef.ones((2, 2), B), a, b)),
        ("ConcatV2", lambda a, b: ef.concat([a, b], 0)),
        ("Pack", lambda a, b: ef.stack([a, b])),
        ("Maximum", lambda a, b: ef.clip_by_value(a, b, b)),
    ],
)
@FEW
@given(dtypes=st.permutations(ALL))
def test_multi_input_ops_on_two_dtypes_name_op_and_both_dtypes(op, call, dtypes) -> None:
    dt1, dt2 = dtypes[:2]
    with pytest.raises(ef.DTypeError) as info:
        call(ef.ones((2, 2), dt1), ef.ones((2, 2), dt2))
    message = str(info.value)
    assert message.startswith(op + "(")
    assert dt1.name in message
    assert dt2.name in message


def test_division_special_cases() -> None:
    """Float x/0 follows IEEE 754 (no error); integer floordiv/floormod by 0 and integers to a
    negative power are InvalidArgumentError."""
    check(ef.divide([1.0, -1.0, 0.0], 0.0), [np.inf, -np.inf, np.nan], F32)
    i = ef.constant([7, -7], dtype=I64)
    for fn, op in [(ef.floordiv, "FloorDiv"), (ef.floormod, "FloorMod")]:
        with pytest.raises(ef.InvalidArgumentError, match=op):
            fn(i, ef.constant([2, 0], dtype=I64))
    with pytest.raises(ef.InvalidArgumentError, match="Pow"):
        ef.pow(i, -1)


# --- Python scalars and conversion ---------------------------------------------------------------
_SCALAR_OPS = [operator.add, operator.sub, operator.mul, operator.floordiv, operator.pow]


@QUICK
@given(data=st.data(), fn=st.sampled_from(_SCALAR_OPS), k=st.integers(1, 3), left=st.booleans())
def test_python_int_takes_the_tensors_dtype(data, fn, k, left) -> None:
    """``int32_tensor * 2`` stays int32, ``2 ** float16_tensor`` stays float16, ..."""
    dtype = data.draw(st.sampled_from(NUMBERS))
    x = data.draw(arrays(dtype, data.draw(shapes), st.integers(1, 4)))
    t = tensor(x)
    result = fn(k, t) if left else fn(t, k)
    ref = fn(k, as64(x)) if left else fn(as64(x), k)
    check(result, ref, dtype)


@QUICK
@given(
    dtype=st.sampled_from(FLOATS),
    shape=shapes,
    fn=st.sampled_from([operator.add, operator.sub, operator.mul, operator.truediv]),
    v=quarters(-8, 8).filter(bool),
)
def test_python_float_takes_the_float_tensors_dtype(dtype, shape, fn, v) -> None:
    """``float16_tensor + 1.5`` stays float16."""
    x = np.full(shape, 1.5, dtype.np)
    check(fn(tensor(x), v), fn(as64(x), v), dtype)
    check(fn(v, tensor(x)), fn(v, as64(x)), dtype)


@FEW
@given(dtype=st.sampled_from(INTS), v=quarters(-8, 8).filter(lambda v: v != int(v)))
def test_python_float_with_integer_tensor_is_a_dtype_error(dtype, v) -> None:
    t = ef.ones((2,), dtype)
    with pytest.raises(ef.DTypeError, match=dtype.name):
        t + v
    with pytest.raises(ef.DTypeError, match=dtype.name):
        v * t


@QUICK
@given(
    f=st.floats(-1e30, 1e30, allow_nan=False),
    i=st.integers(np.iinfo(np.int32).min, np.iinfo(np.int32).max),
    big=st.one_of(
        st.integers(np.iinfo(np.int64).min, np.iinfo(np.int32).min - 1),
        st.integers(np.iinfo(np.int32).max + 1, np.iinfo(np.int64).max),
    ),
    b=st.booleans(),
    rows=st.lists(st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=2), min_size=1, max_size=3),
    arr=any_array(),
)
def test_conversion_defaults(f, i, big, b, rows, arr) -> None:
    check(ef.constant(f), np.float32(f), F32)
    check(ef.convert_to_tensor(i), i, I32)
    check(ef.constant(big), big, I64)
    check(ef.constant(b), b, B)
    check(ef.constant(rows), np.array(rows, np.float32), F32)
    dtype = ef.as_dtype(arr.dtype)
    check(ef.constant(arr), arr, dtype, rtol=0, atol=0)
    check(ef.convert_to_tensor(arr), arr, dtype, rtol=0, atol=0)
    if arr.ndim == 0:
        check(ef.constant(arr[()]), arr, dtype, rtol=0, atol=0)  # a NumPy scalar keeps its dtype


# --- printing -----------------------------------------------------------------------------------
@QUICK
@given(arr=any_array(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_repr_wraps_numpys_str(arr: np.ndarray) -> None:
    t = ef.constant(arr)
    body = str(arr)
    if "\n" in body:
        body = "\n" + body
    expected = f"Tensor({body}, shape={arr.shape}, dtype={ef.as_dtype(arr.dtype).name})"
    assert repr(t) == expected
    assert str(t) == expected
    # op results, including the NumPy scalars 0-d results can be, print the same way
    total = ef.reduce_sum(ef.cast(t, F64))
    value = np.asarray(total)
    assert repr(total) == f"Tensor({value}, shape={value.shape}, dtype={total.dtype.name})"


# --- unary ops ----------------------------------------------------------------------------------
def _sigmoid_ref(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^-x) without overflow: e^x / (1 + e^x) for negative x."""
    x = np.asarray(x, np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _elu_ref(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def _softplus_ref(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


@dataclass(frozen=True)
class Unary:
    fn: Callable[..., ef.Tensor]
    op: str
    ref: Callable[[np.ndarray], np.ndarray]
    dtypes: tuple[ef.DType, ...]
    lo: int = -100
    hi: int = 100


def _nan_ok(f: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    def ref(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return f(x)

    return ref


UNARY = {
    "negative": Unary(ef.negative, "Neg", np.negative, NUMBERS),
    "abs": Unary(ef.abs, "Abs", np.abs, NUMBERS),
    "sign": Unary(ef.sign, "Sign", np.sign, NUMBERS),
    "square": Unary(ef.square, "Square", np.square, NUMBERS),
    "sqrt": Unary(ef.sqrt, "Sqrt", _nan_ok(np.sqrt), FLOATS, -4, 1000),  # nan below 0
    "exp": Unary(ef.exp, "Exp", np.exp, FLOATS, -20, 10),
    "log": Unary(ef.log, "Log", _nan_ok(np.log), FLOATS, -1, 1000),  # -inf at 0, nan below
    "tanh": Unary(ef.tanh, "Tanh", np.tanh, FLOATS, -20, 20),
    "sigmoid": Unary(ef.sigmoid, "Sigmoid", _sigmoid_ref, FLOATS, -30, 30),
    "relu": Unary(ef.relu, "Relu", lambda x: np.maximum(x, 0), NUMBERS),
    "softplus": Unary(ef.softplus, "Softplus", _softplus_ref, FLOATS, -30, 30),
    "elu": Unary(ef.nn.elu, "Elu", _elu_ref, FLOATS, -30, 30),
    "leaky_relu": Unary(
        ef.nn.leaky_relu, "LeakyRelu", lambda x: np.where(x > 0, x, 0.2 * x), FLOATS
    ),
    "logical_not": Unary(ef.logical_not, "LogicalNot", np.logical_not, (B,)),
}


@per_dtype(UNARY)
@PER_DTYPE
@given(data=st.data())
def test_unary_op_matches_numpy(name: str, dtype: ef.DType, data: st.DataObject) -> None:
    spec = UNARY[name]
    x = data.draw(arrays(dtype, data.draw(shapes), values(dtype, spec.lo, spec.hi)), label="x")
    check(spec.fn(tensor(x)), spec.ref(as64(x)), dtype)
    if spec.fn is ef.negative:
        check(-tensor(x), -as64(x), dtype)
    elif spec.fn is ef.abs:
        check(abs(tensor(x)), np.abs(as64(x)), dtype)
    elif spec.fn is ef.logical_not:
        check(~tensor(x), ~x, dtype)


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_op_rejects_unsupported_dtypes(name: str) -> None:
    spec = UNARY[name]
    for dtype in ALL:
        if spec.fn is ef.nn.leaky_relu and dtype in INTS:
            assert spec.fn(ef.zeros((2, 1), dtype)).dtype is F32  # cast first, as TensorFlow
        elif dtype not in spec.dtypes:
            with pytest.raises(ef.DTypeError, match=spec.op):
                spec.fn(ef.zeros((2, 1), dtype))


@pytest.mark.parametrize("src", ALL, ids=lambda d: d.name)
@QUICK
@given(data=st.data(), dst=some_dtype, spelling=st.sampled_from(["dtype", "name", "numpy"]))
def test_cast(src, data, dst, spelling) -> None:
    # every value is in range for every dtype: ints up to 1000 are exact even in float16
    x = data.draw(arrays(src, data.draw(shapes), values(src, -1000, 1000)))
    target = {"dtype": dst, "name": dst.name, "numpy": dst.np}[spelling]
    result = ef.cast(tensor(x), target)
    if dst is B:
        ref = x != 0  # nonzero is True
    elif src.is_floating and dst.is_integer:
        ref = np.trunc(as64(x))  # floats to ints truncate toward zero
    else:
        ref = as64(x)
    check(result, ref, dst)


# --- reductions ---------------------------------------------------------------------------------
@st.composite
def axes(draw: st.DrawFn, ndim: int) -> Any:
    """None, an int, or a tuple/list of distinct axes, negative ones included."""
    kind = draw(st.sampled_from(["none", "int", "tuple", "list"]))
    if kind == "none" or (kind == "int" and ndim == 0):
        return None
    if kind == "int":
        return draw(st.integers(-ndim, ndim - 1))
    chosen = draw(hnp.valid_tuple_axes(ndim))
    return chosen if kind == "tuple" else list(chosen)


def _reduced(shape: tuple[int, ...], axis: Any) -> int:
    """How many elements each output element of a reduction over ``axis`` combines."""
    if axis is None:
        return math.prod(shape)
    picked = [axis] if isinstance(axis, int) else list(axis)
    return math.prod(shape[a] for a in picked)


def _mean_ref(x: np.ndarray, axis: Any, keepdims: bool) -> np.ndarray:
    total = np.sum(x, axis=axis, keepdims=keepdims)
    if x.dtype.kind == "i":  # integer mean truncates toward zero, as in TensorFlow
        return np.trunc(total / _reduced(x.shape, axis)).astype(np.int64)
    return total / _reduced(x.shape, axis)


_PROD_VALUES = [-1.5, -1.25, -1, -0.75, -0.5, 0.5, 0.75, 1, 1.25, 1.5]
REDUCTIONS = {
    # fn, numpy reference, may the reduced axes be empty, float elements, int elements
    "reduce_sum": (ef.reduce_sum, np.sum, True, quarters(-2, 2), st.integers(-100, 100)),
    "reduce_mean": (ef.reduce_mean, _mean_ref, False, quarters(-2, 2), st.integers(-100, 100)),
    "reduce_max": (ef.reduce_max, np.max, False, None, None),
    "reduce_min": (ef.reduce_min, np.min, False, None, None),
    "reduce_prod": (ef.reduce_prod, np.prod, True, st.sampled_from(_PROD_VALUES), _SMALL_INTS),
}


@pytest.mark.parametrize("dtype", NUMBERS, ids=lambda d: d.name)
@pytest.mark.parametrize("name", list(REDUCTIONS))
@PER_DTYPE
@given(data=st.data())
def test_reduction_matches_numpy(name: str, dtype: ef.DType, data: st.DataObject) -> None:
    fn, ref, empty_ok, float_elements, int_elements = REDUCTIONS[name]
    if fn is ef.reduce_prod:  # at most 27 elements, so products stay in range
        shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    else:
        shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4))
    elements = int_elements if dtype.is_integer else float_elements
    x = data.draw(arrays(dtype, shape, elements), label="x")
    axis = data.draw(axes(x.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    if not empty_ok and _reduced(shape, axis) == 0:
        return  # max/min/mean of nothing: not compared here
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    expected = ref(as64(x), axis=np_axis, keepdims=keepdims)
    # a float16 product rounds up to 26 times, and may end far below float16's resolution
    rtol, atol = (2e-2, 1e-4) if fn is ef.reduce_prod and dtype is F16 else (None, None)
    check(fn(tensor(x), axis=axis, keepdims=keepdims), expected, dtype, rtol=rtol, atol=atol)
    if not keepdims and axis is None:
        check(fn(tensor(x)), expected, dtype, rtol=rtol, atol=atol)  # the defaults


@QUICK
@given(data=st.data())
def test_integer_mean_truncates_toward_zero(data: st.DataObject) -> None:
    """As in TensorFlow: mean([-7, 2]) is -2 for integers (floor division would give -3)."""
    dtype = data.draw(st.sampled_from(INTS))
    x = data.draw(arrays(dtype, hnp.array_shapes(min_dims=1, max_dims=3, min_side=2, max_side=4)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    total = np.sum(as64(x), axis=axis)
    expected = [math.trunc(int(s) / x.shape[axis]) for s in total.flat]
    check(ef.reduce_mean(x, axis=axis), np.reshape(expected, total.shape), dtype)
    check(ef.reduce_mean([[-7, 2], [3, 4]], axis=0), [-2, 3], I32)


@pytest.mark.parametrize(("fn", "ref"), [(ef.argmax, np.argmax), (ef.argmin, np.argmin)])
@pytest.mark.parametrize("dtype", NUMBERS, ids=lambda d: d.name)
@PER_DTYPE
@given(data=st.data())
def test_argmax_argmin(fn, ref, dtype, data: st.DataObject) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(dtype, shape, _compare_values(dtype)))  # ties: the first one wins
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    output_type = data.draw(st.sampled_from([None, I32, I64]))
    if output_type is None:
        result, output_type = fn(tensor(x), axis=axis), I64  # TensorFlow's default
    else:
        result = fn(tensor(x), axis=axis, output_type=output_type)
    check(result, ref(x, axis=axis), output_type)
    if axis == 0:
        check(fn(tensor(x)), ref(x, axis=0), I64)


# --- matmul and softmax -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", NUMBERS, ids=lambda d: d.name)
@QUICK
@given(data=st.data())
def test_matmul(dtype: ef.DType, data: st.DataObject) -> None:
    batch = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
    m, k, n = data.draw(st.tuples(*[st.integers(0, 4)] * 3), label="m, k, n")
    ta, tb = data.draw(st.booleans(), label="transpose_a"), data.draw(st.booleans())
    a_shape = (*batch.input_shapes[0], *((k, m) if ta else (m, k)))
    b_shape = (*batch.input_shapes[1], *((n, k) if tb else (k, n)))
    # Multiples of 1/4 in [-4, 4]: every product and sum is exact, even in float16.
    elements = st.integers(-10, 10) if dtype.is_integer else quarters(-4, 4)
    a = data.draw(arrays(dtype, a_shape, elements), label="a")
    b = data.draw(arrays(dtype, b_shape, elements), label="b")
    expected = np.matmul(
        np.swapaxes(as64(a), -1, -2) if ta else as64(a),
        np.swapaxes(as64(b), -1, -2) if tb else as64(b),
    )
    assert expected.shape == (*batch.result_shape, m, n)
    check(ef.matmul(tensor(a), tensor(b), transpose_a=ta, transpose_b=tb), expected, dtype)
    if not ta and not tb:
        check(tensor(a) @ tensor(b), expected, dtype)


def _softmax_ref(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _log_softmax_ref(x: np.ndarray, axis: int) -> np.ndarray:
    return x - np.logaddexp.reduce(x, axis=axis, keepdims=True)


@pytest.mark.parametrize(
    ("fn", "ref"), [(ef.softmax, _softmax_ref), (ef.log_softmax, _log_softmax_ref)]
)
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: d.name)
@QUICK
@given(data=st.data())
def test_softmax_and_log_softmax(fn, ref, dtype, data: st.DataObject) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    x = data.draw(arrays(dtype, shape, floats(dtype, -50, 50)))
    axis = data.draw(st.one_of(st.none(), st.integers(-x.ndim, x.ndim - 1)))
    if axis is None:
        result, axis = fn(tensor(x)), -1
    else:
        result = fn(tensor(x), axis=axis)
    expected = ref(as64(x), axis)
    check(result, expected, dtype, atol={F16: 2e-3, F32: 1e-5, F64: 1e-12}[dtype])
    if fn is ef.softmax:  # and they sum to 1 along the axis
        sums = np.sum(np.asarray(result, np.float64), axis=axis)
        np.testing.assert_allclose(sums, 1, rtol=0, atol={F16: 1e-2, F32: 1e-5, F64: 1e-12}[dtype])


@pytest.mark.parametrize("fn", [ef.softmax, ef.log_softmax])
def test_softmax_over_an_empty_axis_is_empty(fn) -> None:
    """An empty tensor has nothing to normalize: the result is empty, as the shape rule says."""
    check(fn(ef.zeros((3, 0))), np.zeros((3, 0)), F32)


@QUICK
@given(data=st.data())
def test_stable_kernels_at_magnitudes_up_to_1e4(data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from([F32, F64]))
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=5))
    big = st.one_of(
        st.sampled_from([-1e4, 1e4, -1e3, 1e3, -100.0, 100.0]), floats(dtype, -1e4, 1e4)
    )
    x = data.draw(arrays(dtype, shape, big))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    x64 = as64(x)
    tiny = {F32: 1e-37, F64: 1e-300}[dtype]  # subnormal results lose relative precision
    rtol = {F32: 1e-5, F64: 1e-12}[dtype]
    for result, expected, atol in [
        (ef.sigmoid(tensor(x)), _sigmoid_ref(x64), tiny),
        (ef.softplus(tensor(x)), _softplus_ref(x64), tiny),
        (ef.softmax(tensor(x), axis=axis), _softmax_ref(x64, axis), tiny),
        (ef.log_softmax(tensor(x), axis=axis), _log_softmax_ref(x64, axis), 1e-5),
    ]:
        assert np.all(np.isfinite(np.asarray(result)))
        check(result, expected, dtype, rtol=rtol, atol=atol)


# --- shapes: reshape, transpose, expand_dims, squeeze, broadcast_to, tile -----------------------
@st.composite
def reshape_target(draw: st.DrawFn, size: int) -> tuple[int, ...]:
    """A shape with ``size`` elements, maybe with one -1 to infer."""
    rank = draw(st.integers(0 if size == 1 else 1, 4))
    dims: list[int] = []
    left = size
    for _ in range(rank - 1):
        if left == 0:
            d = draw(st.integers(0, 3))
        else:
            d = draw(st.sampled_from([d for d in range(1, left + 1) if left % d == 0]))
            left //= d
        dims.append(d)
    if rank:
        dims.append(left if left or 0 in dims else 0)
    if rank and math.prod(dims) and draw(st.booleans()):
        dims[draw(st.integers(0, rank - 1))] = -1
    return tuple(dims)


@QUICK
@given(data=st.data())
def test_reshape(data: st.DataObject) -> None:
    x = data.draw(any_array())
    target = data.draw(reshape_target(x.size))
    dtype = ef.as_dtype(x.dtype)
    check(ef.reshape(tensor(x), target), np.reshape(x, target), dtype, rtol=0, atol=0)
    check(ef.reshape(tensor(x), list(target)), np.reshape(x, target), dtype, rtol=0, atol=0)


@QUICK
@given(data=st.data())
def test_transpose(data: st.DataObject) -> None:
    x = data.draw(any_array(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3)))
    perm = data.draw(st.permutations(range(x.ndim)))
    dtype = ef.as_dtype(x.dtype)
    check(ef.transpose(tensor(x), perm), np.transpose(x, perm), dtype, rtol=0, atol=0)
    check(ef.transpose(tensor(x)), x.T, dtype, rtol=0, atol=0)  # default: reverse the axes


@QUICK
@given(data=st.data())
def test_expand_dims_and_squeeze(data: st.DataObject) -> None:
    x = data.draw(any_array(hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=3)))
    dtype = ef.as_dtype(x.dtype)
    axis = data.draw(st.integers(-x.ndim - 1, x.ndim))
    check(ef.expand_dims(tensor(x), axis), np.expand_dims(x, axis), dtype, rtol=0, atol=0)
    check(ef.squeeze(tensor(x)), np.squeeze(x), dtype, rtol=0, atol=0)
    ones = [i for i, d in enumerate(x.shape) if d == 1]
    if ones:
        picked = data.draw(st.lists(st.sampled_from(ones), min_size=1, unique=True))
        picked = [a - x.ndim if data.draw(st.booleans()) else a for a in picked]
        sq = picked[0] if len(picked) == 1 and data.draw(st.booleans()) else picked
        expected = np.squeeze(x, axis=tuple(picked))
        check(ef.squeeze(tensor(x), axis=sq), expected, dtype, rtol=0, atol=0)


@QUICK
@given(data=st.data())
def test_broadcast_to(data: st.DataObject) -> None:
    target = data.draw(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=3))
    keep = data.draw(st.integers(0, len(target)))
    source = tuple(1 if data.draw(st.booleans()) else d for d in target[len(target) - keep :])
    x = data.draw(any_array(source))
    dtype = ef.as_dtype(x.dtype)
    check(ef.broadcast_to(tensor(x), target), np.broadcast_to(x, target), dtype, rtol=0, atol=0)


@QUICK
@given(data=st.data())
def test_tile(data: st.DataObject) -> None:
    x = data.draw(any_array(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)))
    multiples = data.draw(st.lists(st.integers(0, 3), min_size=x.ndim, max_size=x.ndim))
    dtype = ef.as_dtype(x.dtype)
    check(ef.tile(tensor(x), multiples), np.tile(x, multiples), dtype, rtol=0, atol=0)


def test_tile_multiples_must_match_the_rank() -> None:
    """NumPy's tile pads short or long multiples; TensorFlow's (and the shape rule) refuse."""
    for multiples in ([2], [2, 1, 1], [-1, 1]):
        with pytest.raises(ef.ShapeError, match="Tile"):
            ef.tile(ef.zeros((2, 3)), multiples)


# --- joining and splitting ----------------------------------------------------------------------
@QUICK
@given(data=st.data())
def test_concat(data: st.DataObject) -> None:
    base = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3))
    axis = data.draw(st.integers(-len(base), len(base) - 1))
    dtype = data.draw(some_dtype)
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    parts = []
    for s in sizes:
        shape = list(base)
        shape[axis] = s
        parts.append(data.draw(arrays(dtype, tuple(shape))))
    expected = np.concatenate(parts, axis=axis)
    check(ef.concat([tensor(p) for p in parts], axis), expected, dtype, rtol=0, atol=0)


@QUICK
@given(data=st.data())
def test_stack(data: st.DataObject) -> None:
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    dtype = data.draw(some_dtype)
    parts = data.draw(st.lists(arrays(dtype, shape), min_size=1, max_size=4))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    expected = np.stack(parts, axis=axis)
    check(ef.stack([tensor(p) for p in parts], axis=axis), expected, dtype, rtol=0, atol=0)
    if axis == 0:
        check(ef.stack([tensor(p) for p in parts]), expected, dtype, rtol=0, atol=0)


@QUICK
@given(data=st.data())
def test_split_into_equal_parts(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 4))
    shape = list(data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    shape[axis] *= n
    x = data.draw(any_array(tuple(shape)))
    dtype = ef.as_dtype(x.dtype)
    pieces = ef.split(tensor(x), n, axis=axis)
    expected = np.split(x, n, axis=axis)
    assert isinstance(pieces, list)
    assert len(pieces) == n
    for got, want in zip(pieces, expected, strict=True):
        check(got, want, dtype, rtol=0, atol=0)


@QUICK
@given(data=st.data())
def test_split_by_sizes(data: st.DataObject) -> None:
    sizes = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    shape = list(data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    shape[axis] = sum(sizes)
    x = data.draw(any_array(tuple(shape)))
    dtype = ef.as_dtype(x.dtype)
    pieces = ef.split(tensor(x), sizes, axis=axis)
    expected = np.split(x, np.cumsum(sizes)[:-1], axis=axis)
    assert len(pieces) == len(sizes)
    for got, want, size in zip(pieces, expected, sizes, strict=True):
        assert got.shape[axis] == size
        check(got, want, dtype, rtol=0, atol=0)


@pytest.mark.parametrize("sizes", [[1, 1], [3, 3], [-1, 6], [2, 2, 2]])
def test_split_sizes_must_add_up(sizes: list[int]) -> None:
    """np.split would quietly make a last piece of whatever is left; SplitV refuses."""
    with pytest.raises(ef.ShapeError, match="SplitV"):
        ef.split(ef.zeros((5, 2)), sizes)


# --- selecting: gather, one_hot, where, clip_by_value -------------------------------------------
@QUICK
@given(data=st.data())
def test_gather(data: st.DataObject) -> None:
    x = data.draw(any_array(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)))
    dtype = ef.as_dtype(x.dtype)
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    index_dtype = data.draw(st.sampled_from(INTS))
    index_shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    indices = data.draw(arrays(index_dtype, index_shape, st.integers(0, x.shape[axis] - 1)))
    expected = np.take(x, indices, axis=axis)
    check(ef.gather(tensor(x), tensor(indices), axis=axis), expected, dtype, rtol=0, atol=0)
    if axis in (0, -x.ndim) and indices.size:  # (an empty list would convert to float32)
        check(ef.gather(tensor(x), indices.tolist()), expected, dtype, rtol=0, atol=0)
        if indices.ndim:  # t[int list] and t[int tensor] gather along the first axis
            check(tensor(x)[indices.tolist()], expected, dtype, rtol=0, atol=0)
            check(tensor(x)[tensor(indices)], expected, dtype, rtol=0, atol=0)


@QUICK
@given(data=st.data())
def test_gather_index_out_of_range(data: st.DataObject) -> None:
    x = data.draw(any_array(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    size = x.shape[axis]
    bad = data.draw(st.one_of(st.integers(-5, -1), st.integers(size, size + 5)))
    with pytest.raises(ef.OutOfRangeError, match="GatherV2"):
        ef.gather(tensor(x), [0, bad] if size else [bad], axis=axis)


@QUICK
@given(data=st.data())
def test_one_hot(data: st.DataObject) -> None:
    depth = data.draw(st.integers(0, 4))
    index_shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=3))
    index_dtype = data.draw(st.sampled_from(INTS))
    # -1 and depth are out of range: their rows are all off_value
    indices = data.draw(arrays(index_dtype, index_shape, st.integers(-1, depth)))
    axis = data.draw(st.one_of(st.just(-1), st.integers(0, indices.ndim)))
    dtype = data.draw(st.one_of(st.none(), some_dtype))
    if dtype is None:
        result, dtype, on, off = ef.one_hot(tensor(indices), depth, axis=axis), F32, 1, 0
    else:
        on, off = data.draw(st.tuples(values(dtype, -8, 8), values(dtype, -8, 8)))
        result = ef.one_hot(indices, depth, on_value=on, off_value=off, axis=axis, dtype=dtype)
    hot = np.eye(depth + 2, dtype=bool)[indices + 1][..., 1 : depth + 1]
    expected = np.moveaxis(np.where(hot, on, off).astype(dtype.np), -1, axis)
    check(result, expected, dtype, rtol=0, atol=0)


@QUICK
@given(data=st.data())
def test_where(data: st.DataObject) -> None:
    bshapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    c_shape, x_shape, y_shape = bshapes.input_shapes
    dtype = data.draw(some_dtype)
    cond = data.draw(arrays(B, c_shape))
    x = data.draw(arrays(dtype, x_shape))
    y = data.draw(arrays(dtype, y_shape))
    expected = np.where(cond, x, y)
    check(ef.where(tensor(cond), tensor(x), tensor(y)), expected, dtype, rtol=0, atol=0)
    # a Python scalar x takes y's dtype
    v = python_scalar(dtype, x.flat[0]) if x.size else python_scalar(dtype, 1)
    expected = np.where(cond, np.asarray(v, dtype.np), y)
    check(ef.where(cond, v, tensor(y)), expected, dtype, rtol=0, atol=0)


@QUICK
@given(data=st.data())
def test_clip_by_value(data: st.DataObject) -> None:
    dtype = data.draw(st.sampled_from(NUMBERS))
    bshapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3))
    t_shape, lo_shape, hi_shape = bshapes.input_shapes
    t = data.draw(arrays(dtype, t_shape))
    if data.draw(st.booleans()):  # Python scalar bounds
        lo, hi = sorted(data.draw(st.tuples(values(dtype), values(dtype))))
        lo, hi = python_scalar(dtype, lo), python_scalar(dtype, hi)
        result, t_shape = ef.clip_by_value(tensor(t), lo, hi), t.shape
    else:
        a = data.draw(arrays(dtype, lo_shape))
        b = data.draw(arrays(dtype, (1,) * len(hi_shape)))
        lo, hi = np.minimum(a, b), np.maximum(a, b)  # lo <= hi elementwise
        result = ef.clip_by_value(tensor(t), tensor(lo), tensor(hi))
    expected = np.minimum(np.maximum(as64(t), lo), hi)
    check(result, expected, dtype, rtol=0, atol=0)


# --- making tensors -----------------------------------------------------------------------------
@QUICK
@given(shape=shapes, dtype=st.one_of(st.none(), some_dtype), spelling=st.booleans())
def test_zeros_ones(shape, dtype, spelling) -> None:
    if dtype is None:
        check(ef.zeros(shape), np.zeros(shape), F32)  # float32 by default
        check(ef.ones(list(shape)), np.ones(shape), F32)
        return
    d = dtype.name if spelling else dtype
    check(ef.zeros(shape, d), np.zeros(shape, dtype.np), dtype, rtol=0, atol=0)
    check(ef.ones(shape, dtype=d), np.ones(shape, dtype.np), dtype, rtol=0, atol=0)


@QUICK
@given(data=st.data())
def test_fill(data: st.DataObject) -> None:
    shape = data.draw(shapes)
    kind = data.draw(st.sampled_from(["float", "int", "bool", "numpy"]))
    if kind == "float":
        value, dtype = data.draw(st.floats(-1e6, 1e6)), F32
    elif kind == "int":
        value, dtype = data.draw(st.integers(-(2**31), 2**31 - 1)), I32
    elif kind == "bool":
        value, dtype = data.draw(st.booleans()), B
    else:
        dtype = data.draw(some_dtype)
        value = data.draw(arrays(dtype, ()))[()]  # a NumPy scalar keeps its dtype
    expected = np.full(shape, value, dtype.np)
    check(ef.fill(shape, value), expected, dtype, rtol=0, atol=0)


@QUICK
@given(x=any_array())
def test_zeros_like_ones_like_identity(x) -> None:
    dtype = ef.as_dtype(x.dtype)
    t = tensor(x)
    check(ef.zeros_like(t), np.zeros_like(x), dtype, rtol=0, atol=0)
    check(ef.ones_like(t), np.ones_like(x), dtype, rtol=0, atol=0)
    check(ef.identity(t), x, dtype, rtol=0, atol=0)
    check(ef.zeros_like(x), np.zeros_like(x), dtype, rtol=0, atol=0)  # NumPy values convert


@QUICK
@given(
    start=st.integers(-20, 20),
    limit=st.integers(-20, 20),
    delta=st.integers(-5, 5).filter(bool),
    dtype=st.one_of(st.none(), st.sampled_from(NUMBERS)),
)
def test_range_of_ints(start, limit, delta, dtype) -> None:
    if (limit - start) * delta < 0:  # never gets there: TensorFlow refuses, NumPy is empty
        with pytest.raises(ef.InvalidArgumentError, match="never reaches"):
            ef.range(start, limit, delta, dtype=dtype)
        return
    expected = np.arange(start, limit, delta)
    if dtype is None:
        check(ef.range(start, limit, delta), expected, I32)  # int32 for ints
    else:
        check(ef.range(start, limit, delta, dtype=dtype), expected, dtype)
    check(ef.range(abs(limit)), np.arange(abs(limit)), I32)


@QUICK
@given(start=quarters(-10, 10), limit=quarters(-10, 10), delta=quarters(-3, 3).filter(bool))
def test_range_of_floats(start, limit, delta) -> None:
    if (limit - start) * delta < 0:
        with pytest.raises(ef.InvalidArgumentError, match="never reaches"):
            ef.range(start, limit, delta)
        return
    check(ef.range(start, limit, delta), np.arange(start, limit, delta), F32)  # float32
    check(ef.range(start, limit, delta, dtype=F64), np.arange(start, limit, delta), F64)


def test_range_of_large_ints() -> None:
    """Ints beyond int32 make an int64 range (as convert_to_tensor does), never wrap around."""
    start = 2**31 - 2
    check(ef.range(start, start + 4), np.arange(start, start + 4), I64)


# --- t[...], iteration and len ------------------------------------------------------------------
@QUICK
@given(data=st.data())
def test_basic_indexing(data: st.DataObject) -> None:
    x = data.draw(any_array(hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=4)))
    key = data.draw(hnp.basic_indices(x.shape, min_dims=0, allow_newaxis=True))
    expected = x[key]
    check(tensor(x)[key], expected, ef.as_dtype(x.dtype), rtol=0, atol=0)


@QUICK
@given(data=st.data())
def test_indexing_out_of_range(data: st.DataObject) -> None:
    x = data.draw(any_array(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=3)))
    axis = data.draw(st.integers(0, x.ndim - 1))
    size = x.shape[axis]
    bad = data.draw(st.one_of(st.integers(size, size + 3), st.integers(-size - 3, -size - 1)))
    key = (*[slice(None)] * axis, bad)
    with pytest.raises(ef.OutOfRangeError, match="StridedSlice"):
        tensor(x)[key]


def test_zero_slice_step_is_our_error() -> None:
    """Not the bare ValueError of slice.indices(): an eagerflow error naming the op."""
    with pytest.raises(ef.InvalidArgumentError, match="StridedSlice"):
        ef.constant([1, 2, 3])[::0]


@QUICK
@given(x=any_array(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_iteration_and_len(x) -> None:
    t = tensor(x)
    dtype = ef.as_dtype(x.dtype)
    if x.ndim == 0:
        with pytest.raises(TypeError):
            len(t)
        with pytest.raises(TypeError):
            list(t)
        return
    rows = list(t)
    assert len(t) == len(rows) == x.shape[0]
    for row, want in zip(rows, x, strict=True):
        check(row, want, dtype, rtol=0, atol=0)


# --- axes given as NumPy integers -----------------------------------------------------------------
def test_numpy_integer_axis() -> None:
    """Every op takes a NumPy integer axis (e.g. one computed with np.argmax)."""
    x = np.arange(6.0).reshape(1, 2, 3)
    axis = np.int64(2)
    check(ef.argmax(x, axis=axis), np.argmax(x, axis=2), I64)
    check(ef.expand_dims(x, axis), np.expand_dims(x, 2), F64)
    check(ef.reduce_sum(x, axis=axis), np.sum(x, axis=2), F64)
    check(ef.squeeze(x, axis=np.int64(0)), x[0], F64)


# --- random ops ---------------------------------------------------------------------------------
def _draw_all(
    shape: tuple[int, ...], dtype: ef.DType, minval: int, maxval: int, x: np.ndarray
) -> list[np.ndarray]:
    return [
        np.asarray(
            ef.random_normal(shape, mean=1.0, stddev=2.0, dtype=dtype if dtype.is_floating else F32)
        ),
        np.asarray(ef.random_uniform(shape, minval, maxval, dtype=dtype)),
        np.asarray(ef.random_shuffle(tensor(x))),
    ]


@QUICK
@given(
    seed=st.integers(0, 2**32 - 1),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5),
    dtype=st.sampled_from([F32, F64, I32, I64]),
    bounds=st.tuples(st.integers(-50, 50), st.integers(1, 50)),
)
def test_random_ops_are_reproducible_and_in_range(seed, shape, dtype, bounds) -> None:
    minval, maxval = bounds[0], bounds[0] + bounds[1]
    x = np.arange(math.prod(shape) * 2).reshape((*shape, 2)) if shape else np.arange(3)
    ef.set_seed(seed)
    first = _draw_all(shape, dtype, minval, maxval, x)
    ef.set_seed(seed)
    second = _draw_all(shape, dtype, minval, maxval, x)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b, strict=True)
    normal, uniform, _ = first
    assert normal.shape == uniform.shape == shape
    assert normal.dtype == (dtype.np if dtype.is_floating else np.float32)
    assert uniform.dtype == dtype.np
    assert np.all(np.isfinite(normal))
    assert np.all((minval <= uniform) & (uniform < maxval)), (minval, maxval, uniform)


@QUICK
@given(
    x=any_array(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_shuffle_permutes_the_first_axis(x, seed) -> None:
    dtype = ef.as_dtype(x.dtype)
    if x.ndim == 0:
        check(ef.random_shuffle(tensor(x)), x, dtype, rtol=0, atol=0)
        return
    # Shuffle the row numbers with the same seed, to learn the permutation.
    ef.set_seed(seed)
    perm = np.asarray(ef.random_shuffle(np.arange(x.shape[0]))).tolist()
    assert sorted(perm) == list(range(x.shape[0]))
    ef.set_seed(seed)
    check(ef.random_shuffle(tensor(x)), x[perm], dtype, rtol=0, atol=0)


def test_random_normal_moments_and_dtypes() -> None:
    ef.set_seed(1234)
    x = np.asarray(ef.random_normal((20000,), mean=3.0, stddev=2.0, dtype=F64))
    assert abs(x.mean() - 3.0) < 0.1
    assert abs(x.std() - 2.0) < 0.1
    for dtype in FLOATS:
        t = ef.random_normal([3, 2], dtype=dtype)
        assert t.dtype is dtype
        assert t.shape == (3, 2)
    with pytest.raises(ef.DTypeError, match="RandomNormal"):
        ef.random_normal([2], dtype=I32)


@pytest.mark.parametrize("dtype", [F16, F32, F64], ids=lambda d: d.name)
def test_random_uniform_stays_below_maxval(dtype: ef.DType) -> None:
    """[minval, maxval) also after rounding to the dtype: float64 draws just below 1 must not
    round up to 1 (drawn in float64 and merely cast, float16 would hit 1.0 ~60 times here)."""
    x = np.asarray(ef.random_uniform((200000,), dtype=dtype))
    assert x.dtype == dtype.np
    assert x.min() >= 0
    assert x.max() < 1, f"{np.sum(x >= 1)} of {x.size} draws equal maxval"
