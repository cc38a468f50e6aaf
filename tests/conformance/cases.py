"""The conformance cases: each a function of a namespace ``ns`` (see ``namespaces.py``),
written once and run on TensorFlow (``record.py``) and on eagerflow (``test_conformance.py``).

A case returns tensors (or a list of them, or None) or raises; both are compared. Its name
says what it does: ``unary/sqrt/float32/edges``. The inputs are plain Python numbers, so that
both sides start from the same values.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Case = Callable[[Any], Any]
CASES: dict[str, Case] = {}

FLOATS = ("float32", "float64")
INTS = ("int32", "int64")
NAN, INF = float("nan"), float("inf")

# inputs by kind: a matrix, a scalar, an empty vector, and the edges of floating point
REGULAR = [[-2.5, -1.0, 0.0], [0.5, 1.5, 3.0]]
EDGES = [0.0, -0.0, NAN, INF, -INF, 1e-30, 1e30]
INT_VALUES = [[-3, -1, 0], [1, 2, 7]]


def case(name: str) -> Callable[[Case], Case]:
    def register(function: Case) -> Case:
        if name in CASES:
            raise ValueError(f"two cases named {name}")
        CASES[name] = function
        return function

    return register


def add(name: str, function: Case) -> None:
    case(name)(function)


def dtype(ns: Any, name: str) -> Any:
    return getattr(ns, name)


# --- elementwise, one input ------------------------------------------------------------------
UNARY = [
    "abs",
    "negative",
    "sign",
    "square",
    "sqrt",
    "exp",
    "log",
    "tanh",
    "sigmoid",
    "relu",
    "softplus",
    "elu",
    "leaky_relu",
    "softmax",
    "log_softmax",
]


def _unary(op: str, values: Any, dt: str) -> Case:
    return lambda ns: getattr(ns, op)(ns.constant(values, dtype(ns, dt)))


for _op in UNARY:
    for _dt in FLOATS:
        add(f"unary/{_op}/{_dt}/regular", _unary(_op, REGULAR, _dt))
        add(f"unary/{_op}/{_dt}/scalar", _unary(_op, 2.0, _dt))
        add(f"unary/{_op}/{_dt}/empty", _unary(_op, [], _dt))
        add(f"unary/{_op}/{_dt}/edges", _unary(_op, EDGES, _dt))
    for _dt in INTS:
        add(f"unary/{_op}/{_dt}/regular", _unary(_op, INT_VALUES, _dt))
    add(f"unary/{_op}/bool", _unary(_op, [True, False], "bool"))


# --- elementwise, two inputs -----------------------------------------------------------------
BINARY = [
    "add",
    "subtract",
    "multiply",
    "divide",
    "floordiv",
    "floormod",
    "maximum",
    "minimum",
    "pow",
    "equal",
    "not_equal",
    "less",
    "less_equal",
    "greater",
    "greater_equal",
]
LOGICAL = ("logical_and", "logical_or")
X = [[-7.0, -1.5, 0.0, 2.0], [3.0, 4.5, -2.0, 9.0]]
Y = [[2.0, -2.0, 3.0, 0.5], [-4.0, 2.0, 2.0, -3.0]]
XI = [[-7, -1, 0, 2], [3, 4, -2, 9]]
YI = [[2, -2, 3, 1], [-4, 2, 2, -3]]


def _binary(op: str, x: Any, y: Any, dt: str | None, dt_y: str | None = None) -> Case:
    def run(ns: Any) -> Any:
        a = x if dt is None else ns.constant(x, dtype(ns, dt))
        b = y if (dt_y or dt) is None else ns.constant(y, dtype(ns, dt_y or dt))
        return getattr(ns, op)(a, b)

    return run


for _op in BINARY:
    for _dt in FLOATS:
        add(f"binary/{_op}/{_dt}/regular", _binary(_op, X, Y, _dt))
        add(f"binary/{_op}/{_dt}/broadcast", _binary(_op, [[1.0], [-2.0]], [3.0, -1.5, 0.5], _dt))
        add(f"binary/{_op}/{_dt}/by_zero", _binary(_op, [1.0, -1.0, 0.0], [0.0, 0.0, 0.0], _dt))
        add(
            f"binary/{_op}/{_dt}/edges",
            _binary(_op, [INF, -INF, NAN, 5.0], [2.0, INF, 1.0, -INF], _dt),
        )
        add(f"binary/{_op}/{_dt}/python_scalar", lambda ns, op=_op, dt=_dt: getattr(ns, op)(
            ns.constant(X, dtype(ns, dt)), 2))  # fmt: skip
        add(f"binary/{_op}/{_dt}/empty", _binary(_op, [], [], _dt))
    for _dt in INTS:
        add(f"binary/{_op}/{_dt}/regular", _binary(_op, XI, YI, _dt))
        add(f"binary/{_op}/{_dt}/by_zero", _binary(_op, [1, -1, 0], [0, 0, 0], _dt))
    add(f"binary/{_op}/mixed_dtypes", _binary(_op, X, XI, "float32", "int32"))
    add(f"binary/{_op}/bool", _binary(_op, [True, False], [True, True], "bool"))
for _op in LOGICAL:
    add(f"binary/{_op}/bool", _binary(_op, [True, False, True], [True, True, False], "bool"))
    add(f"binary/{_op}/float32", _binary(_op, [1.0, 0.0], [1.0, 1.0], "float32"))
add("unary/logical_not/bool", _unary("logical_not", [True, False], "bool"))
add("unary/logical_not/float32", _unary("logical_not", [1.0, 0.0], "float32"))
for _dt in FLOATS + INTS:
    add(
        f"matmul/{_dt}/regular",
        _binary("matmul", [[1, 2, 3], [4, 5, 6]], [[1, 0], [0, 1], [2, 2]], _dt),
    )
    add(f"matmul/{_dt}/mismatched", _binary("matmul", [[1, 2, 3]], [[1, 2, 3]], _dt))
    add(f"matmul/{_dt}/vector", _binary("matmul", [1, 2], [[1], [2]], _dt))
    add(f"matmul/{_dt}/empty", lambda ns, dt=_dt: ns.matmul(
        ns.zeros((2, 0), dtype(ns, dt)), ns.zeros((0, 3), dtype(ns, dt))))  # fmt: skip


# --- reductions -------------------------------------------------------------------------------
REDUCTIONS = ["reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"]
AXES: tuple[Any, ...] = (None, 0, 1, -1, (0, 1), 2)


def _reduce(op: str, values: Any, dt: str, axis: Any, keepdims: bool = False) -> Case:
    return lambda ns: getattr(ns, op)(ns.constant(values, dtype(ns, dt)), axis=axis,
                                      keepdims=keepdims)  # fmt: skip


def _empty(rows: int, columns: int) -> Any:
    return lambda ns, dt: ns.zeros((rows, columns), dtype(ns, dt))


for _op in REDUCTIONS:
    for _dt in FLOATS + INTS:
        values = REGULAR if _dt in FLOATS else INT_VALUES
        for _axis in AXES:
            add(f"reduce/{_op}/{_dt}/axis={_axis}", _reduce(_op, values, _dt, _axis))
        add(f"reduce/{_op}/{_dt}/keepdims", _reduce(_op, values, _dt, 1, True))
        for _axis in (None, 0, 1):
            add(f"reduce/{_op}/{_dt}/empty(2,0)/axis={_axis}",
                lambda ns, op=_op, dt=_dt, axis=_axis: getattr(ns, op)(
                    ns.zeros((2, 0), dtype(ns, dt)), axis=axis))  # fmt: skip
    add(f"reduce/{_op}/float32/nan", _reduce(_op, [[1.0, NAN], [2.0, 3.0]], "float32", 1))
    add(f"reduce/{_op}/bool", _reduce(_op, [True, False], "bool", None))
for _op in ("argmax", "argmin"):
    for _dt in FLOATS + INTS:
        values = REGULAR if _dt in FLOATS else INT_VALUES
        for _axis in (0, 1, -1):
            add(f"reduce/{_op}/{_dt}/axis={_axis}",
                lambda ns, op=_op, v=values, dt=_dt, axis=_axis: getattr(ns, op)(
                    ns.constant(v, dtype(ns, dt)), axis=axis))  # fmt: skip
    add(f"reduce/{_op}/float32/nan", lambda ns, op=_op: getattr(ns, op)(
        ns.constant([1.0, NAN, 3.0], ns.float32), axis=0))  # fmt: skip
    add(f"reduce/{_op}/float32/ties", lambda ns, op=_op: getattr(ns, op)(
        ns.constant([3.0, 1.0, 3.0, 1.0], ns.float32), axis=0))  # fmt: skip
    add(f"reduce/{_op}/bool", lambda ns, op=_op: getattr(ns, op)(
        ns.constant([False, True, True], ns.bool), axis=0))  # fmt: skip


# --- making and shaping tensors ----------------------------------------------------------------
@case("constant/python_float")
def _(ns: Any) -> Any:
    return ns.constant(1.5)


@case("constant/empty_list_as_int64")
def _(ns: Any) -> Any:
    return ns.constant([], ns.int64)


@case("constant/empty_nested_list_as_bool")
def _(ns: Any) -> Any:
    return ns.constant([[], []], ns.bool)


@case("constant/python_int")
def _(ns: Any) -> Any:
    return ns.constant(7)


@case("constant/large_int")
def _(ns: Any) -> Any:
    return ns.constant(2**40)


@case("constant/bool")
def _(ns: Any) -> Any:
    return ns.constant([True, False])


@case("constant/mixed_list")
def _(ns: Any) -> Any:
    return ns.constant([1, 2.5])


@case("constant/int_to_float")
def _(ns: Any) -> Any:
    return ns.constant([1, 2], ns.float32)


@case("constant/float_to_int")
def _(ns: Any) -> Any:
    return ns.constant([1.5, 2.0], ns.int32)


@case("constant/ragged")
def _(ns: Any) -> Any:
    return ns.constant([[1.0], [2.0, 3.0]])


@case("convert_to_tensor/list_of_float64_tensors")
def _(ns: Any) -> Any:
    return ns.convert_to_tensor([ns.constant(1.0, ns.float64), ns.constant(2.0, ns.float64)])


@case("convert_to_tensor/list_of_int64_tensors")
def _(ns: Any) -> Any:
    return ns.convert_to_tensor([ns.constant(1, ns.int64), ns.constant(2, ns.int64)])


@case("convert_to_tensor/mixed_tensors")
def _(ns: Any) -> Any:
    return ns.convert_to_tensor([ns.constant(1.0, ns.float32), ns.constant(2.0, ns.float64)])


@case("stack/python_numbers")
def _(ns: Any) -> Any:
    return ns.stack([1, 2.5])


for _dt in FLOATS + INTS + ("bool",):
    add(f"cast/float32_to_{_dt}", lambda ns, dt=_dt: ns.cast(
        ns.constant([-1.7, -0.5, 0.0, 0.5, 2.9], ns.float32), dtype(ns, dt)))  # fmt: skip
    add(f"cast/int32_to_{_dt}", lambda ns, dt=_dt: ns.cast(
        ns.constant([-2, 0, 3], ns.int32), dtype(ns, dt)))  # fmt: skip
    add(f"zeros/{_dt}", lambda ns, dt=_dt: ns.zeros((2, 3), dtype(ns, dt)))
    add(f"ones/{_dt}", lambda ns, dt=_dt: ns.ones((0, 2), dtype(ns, dt)))
add(
    "cast/nan_inf_to_int32", lambda ns: ns.cast(ns.constant([NAN, INF, -INF], ns.float32), ns.int32)
)

RESHAPES = [(6,), (2, 3), (3, -1), (-1,), (-1, 2), (4, -1), (-2, 3), (2, 2), (1, 6, 1)]
for _shape in RESHAPES:
    add(f"reshape/{_shape}", lambda ns, s=_shape: ns.reshape(ns.constant(REGULAR), s))
add("reshape/empty_to_0,-1", lambda ns: ns.reshape(ns.zeros((0, 4)), (0, -1)))
add("reshape/empty_to_-1,0", lambda ns: ns.reshape(ns.zeros((0, 4)), (-1, 0)))
for _perm in [None, (1, 0), (0, 1), (0, 0), (2, 0)]:
    add(f"transpose/{_perm}", lambda ns, p=_perm: ns.transpose(ns.constant(REGULAR), p))
for _axis in (0, 1, -1, 2):
    add(f"concat/axis={_axis}", lambda ns, a=_axis: ns.concat(
        [ns.constant(REGULAR), ns.constant(REGULAR)], a))  # fmt: skip
    add(f"stack/axis={_axis}", lambda ns, a=_axis: ns.stack(
        [ns.constant(REGULAR), ns.constant(REGULAR)], a))  # fmt: skip
    add(f"expand_dims/axis={_axis}", lambda ns, a=_axis: ns.expand_dims(ns.constant(REGULAR), a))
add("concat/mixed_dtypes", lambda ns: ns.concat([ns.constant([1.0]), ns.constant([1])], 0))
for _sizes in (2, 3, [1, 2], [1, -1], [2, 2]):
    add(f"split/{_sizes}", lambda ns, s=_sizes: ns.split(ns.constant(REGULAR), s, axis=1))
for _axis in (None, 0, 1, (0, 2), -1):
    add(f"squeeze/axis={_axis}", lambda ns, a=_axis: ns.squeeze(ns.zeros((1, 3, 1)), a))
for _multiples in ([1, 2], [2, 1], [0, 1], [2]):
    add(f"tile/{_multiples}", lambda ns, m=_multiples: ns.tile(ns.constant(REGULAR), m))
for _shape in ((2, 3), (4, 2, 3), (3,), (2, 1)):
    add(f"broadcast_to/{_shape}", lambda ns, s=_shape: ns.broadcast_to(
        ns.constant([1.0, 2.0, 3.0]), s))  # fmt: skip
add("fill/float", lambda ns: ns.fill((2, 2), 1.5))
add("fill/int", lambda ns: ns.fill((2,), 3))
add("fill/empty", lambda ns: ns.fill((0, 3), 1.0))
for _dt in FLOATS + INTS:
    add(f"zeros_like/{_dt}", lambda ns, dt=_dt: ns.zeros_like(ns.constant([1, 2], dtype(ns, dt))))
    add(f"ones_like/{_dt}", lambda ns, dt=_dt: ns.ones_like(ns.constant([1, 2], dtype(ns, dt))))
    add(f"size/{_dt}", lambda ns, dt=_dt: ns.size(ns.zeros((2, 3), dtype(ns, dt))))
    add(f"identity/{_dt}", lambda ns, dt=_dt: ns.identity(ns.constant([1, 2], dtype(ns, dt))))


# --- ranges -----------------------------------------------------------------------------------
RANGES: list[tuple[Any, ...]] = [(5,), (1, 7, 2), (5, 0, -1), (0.0, 1.0, 0.25), (3, 3), (0, 1, 0),
                                 (2.5,), (0, 10, 3), (-3,)]  # fmt: skip
for _bounds in RANGES:
    add(f"range/{_bounds}", lambda ns, b=_bounds: ns.range(*b))
for _dt in FLOATS + INTS:
    add(f"range/tensor_bounds/{_dt}", lambda ns, dt=_dt: ns.range(
        ns.constant(1, dtype(ns, dt)), ns.constant(4, dtype(ns, dt))))  # fmt: skip
    add(f"range/dtype={_dt}", lambda ns, dt=_dt: ns.range(0, 3, dtype=dtype(ns, dt)))
add("range/float_to_int_dtype", lambda ns: ns.range(0.5, 3, dtype=ns.int32))
for _num in (0, 1, 2, 5):
    add(f"linspace/num={_num}", lambda ns, n=_num: ns.linspace(0.0, 1.0, n))
add("linspace/float64", lambda ns: ns.linspace(ns.constant(0.0, ns.float64), 1.0, 3))
add("linspace/int_bounds", lambda ns: ns.linspace(0, 4, 3))


# --- gathering and selecting ------------------------------------------------------------------
for _indices in ([0, 2], [[1], [0]], [], [3], [-1]):
    add(f"gather/{_indices}", lambda ns, i=_indices: ns.gather(ns.constant([10, 20, 30]), i))
add("gather/axis=1", lambda ns: ns.gather(ns.constant(REGULAR), [2, 0], axis=1))
for _depth in (3, 0):
    add(f"one_hot/depth={_depth}", lambda ns, d=_depth: ns.one_hot([0, 2, -1, 5], d))
add("one_hot/on_off_int", lambda ns: ns.one_hot([1, 0], 2, on_value=5, off_value=-1))
add("one_hot/float_indices", lambda ns: ns.one_hot(ns.constant([1.0, 0.0]), 2))
add("one_hot/dtype_float64", lambda ns: ns.one_hot([1], 3, dtype=ns.float64))
add("where/select", lambda ns: ns.where(ns.constant([True, False, True]), [1.0, 2.0, 3.0],
                                        [-1.0, -2.0, -3.0]))  # fmt: skip
add(
    "where/broadcast",
    lambda ns: ns.where(ns.constant([[True], [False]]), ns.constant([1.0, 2.0]), 0.0),
)
add("where/coordinates", lambda ns: ns.where(ns.constant([[True, False], [False, True]])))
add("where/numeric_condition", lambda ns: ns.where(ns.constant([1.0, 0.0, 2.0])))
add("where/empty", lambda ns: ns.where(ns.constant([False, False])))
add("unsorted_segment_sum/regular", lambda ns: ns.unsorted_segment_sum(
    ns.constant([1.0, 2.0, 3.0, 4.0]), ns.constant([0, 1, 0, 2]), 3))  # fmt: skip
add("unsorted_segment_sum/negative_ids", lambda ns: ns.unsorted_segment_sum(
    ns.constant([1.0, 2.0, 3.0]), ns.constant([0, -1, 1]), 2))  # fmt: skip
add("clip_by_value/regular", lambda ns: ns.clip_by_value(ns.constant(REGULAR), -1.0, 1.0))
add("clip_by_value/int", lambda ns: ns.clip_by_value(ns.constant(INT_VALUES), 0, 2))


# --- indexing and operators ---------------------------------------------------------------------
KEYS: list[Any] = [0, -1, (0, 1), (slice(None), 1), (slice(None, None, -1),), (Ellipsis, 0),
                   (None, 0), (slice(1, 5),), (slice(0, 0),), (0, 0, 0), 5]  # fmt: skip
for _i, _key in enumerate(KEYS):
    add(f"getitem/{_i}", lambda ns, k=_key: ns.constant(REGULAR)[k])
add("getitem/bool_mask", lambda ns: ns.constant([1.0, 2.0, 3.0])[ns.constant([True, False, True])])
add("operator/eq_bool_int", lambda ns: ns.constant([True, False]) == 1)
add("operator/eq_int_float", lambda ns: ns.constant([1, 2]) == 1.5)
add("operator/mul_bool", lambda ns: ns.constant([True, False]) * ns.constant([True, True]))
add("operator/neg_bool", lambda ns: -ns.constant([True]))
add("operator/pow_int_negative", lambda ns: ns.constant([2, 3]) ** -1)
add("operator/truediv_int", lambda ns: ns.constant([3, 4]) / ns.constant([2, 2]))
add("operator/rsub_python", lambda ns: 1 - ns.constant([0.5, 2.0]))
add("operator/matmul", lambda ns: ns.constant([[1.0, 2.0]]) @ ns.constant([[3.0], [4.0]]))


# --- gradients ---------------------------------------------------------------------------------
def _gradient(f: Callable[[Any, Any], Any], x: Any, dt: str = "float64") -> Case:
    def run(ns: Any) -> Any:
        v = ns.constant(x, dtype(ns, dt))
        with ns.GradientTape() as tape:
            tape.watch(v)
            y = f(ns, v)
        gradient = tape.gradient(y, v)
        # (TensorFlow's gradient of a gather is IndexedSlices: compared as the dense tensor)
        return None if gradient is None else ns.convert_to_tensor(gradient)

    return run


GRADIENTS: dict[str, Callable[[Any, Any], Any]] = {
    **{op: (lambda ns, v, op=op: getattr(ns, op)(v)) for op in UNARY},
    "square_of_sum": lambda ns, v: ns.square(ns.reduce_sum(v)),
    "reduce_max_ties": lambda ns, v: ns.reduce_max(v),
    "reduce_min": lambda ns, v: ns.reduce_min(v, axis=0),
    "reduce_prod": lambda ns, v: ns.reduce_prod(v),
    "reduce_mean": lambda ns, v: ns.reduce_mean(v, axis=-1),
    "matmul_self": lambda ns, v: ns.matmul(ns.reshape(v, (1, -1)), ns.reshape(v, (-1, 1))),
    "pow": lambda ns, v: ns.pow(v, 3.0),
    "pow_base": lambda ns, v: ns.pow(2.0, v),
    "divide": lambda ns, v: ns.divide(1.0, v),
    "maximum": lambda ns, v: ns.maximum(v, 0.5),
    "clip": lambda ns, v: ns.clip_by_value(v, -1.0, 1.0),
    "sqrt_masked_by_where": lambda ns, v: ns.where(v > 0, ns.sqrt(v), ns.zeros_like(v)),
    "gather": lambda ns, v: ns.gather(v, [0, 0, 2]),
    "concat": lambda ns, v: ns.concat([v, v * 2.0], 0),
    "stop_gradient": lambda ns, v: v * ns.stop_gradient(v),
    "getitem": lambda ns, v: v[1:],
    "cast_roundtrip": lambda ns, v: ns.cast(ns.cast(v, ns.float32), ns.float64),
    "floordiv": lambda ns, v: ns.floordiv(v, 2.0),
    "abs_at_zero": lambda ns, v: ns.abs(v),
}
for _name, _f in GRADIENTS.items():
    add(f"gradient/{_name}", _gradient(_f, [-1.5, 0.0, 2.0, 2.0]))


@case("gradient/relu_second_order")
def _(ns: Any) -> Any:
    x = ns.constant([-1.0, 2.0], ns.float64)
    with ns.GradientTape() as outer:
        outer.watch(x)
        with ns.GradientTape() as inner:
            inner.watch(x)
            y = ns.relu(x)
        dy = inner.gradient(y, x)
    return outer.gradient(dy, x)


@case("gradient/persistent_second_derivative")
def _(ns: Any) -> Any:
    x = ns.constant(3.0, ns.float64)
    with ns.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        dy = tape.gradient(y, x)
    return [dy, tape.gradient(dy, x)]


@case("gradient/of_variable_itself")
def _(ns: Any) -> Any:
    v = ns.Variable([1.0, 2.0])
    with ns.GradientTape() as tape:
        tape.watch(v)
    return tape.gradient(v, v)


@case("gradient/unconnected")
def _(ns: Any) -> Any:
    x = ns.constant(1.0)
    z = ns.constant(2.0)
    with ns.GradientTape() as tape:
        tape.watch(x)
        y = z * 2.0
    return tape.gradient(y, x)


@case("gradient/integer_source")
def _(ns: Any) -> Any:
    x = ns.constant(2)
    with ns.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)


@case("gradient/variable_sum")
def _(ns: Any) -> Any:
    v = ns.Variable([[1.0, 2.0], [3.0, 4.0]])
    with ns.GradientTape() as tape:
        y = ns.reduce_sum(ns.matmul(v, v))
    return tape.gradient(y, v)


@case("gradient/jacobian")
def _(ns: Any) -> Any:
    x = ns.constant([1.0, 2.0, 3.0], ns.float64)
    with ns.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.jacobian(y, x)


# --- functions ---------------------------------------------------------------------------------
@case("function/returns_tuple_with_none")
def _(ns: Any) -> Any:
    return ns.function(lambda x: (x * 2.0, None))(ns.constant(1.0))


@case("function/python_loop_over_range_of_tensor")
def _(ns: Any) -> Any:
    def f(n: Any) -> Any:
        total = ns.constant(0)
        for i in range(n):
            total += i
        return total

    return ns.function(f)(ns.constant(4))


@case("function/creates_variable_each_call")
def _(ns: Any) -> Any:
    def f() -> Any:
        v = ns.Variable(1.0)
        v.assign_add(1.0)
        return v.read_value()

    g = ns.function(f)
    return [g(), g()]


@case("function/values")
def _(ns: Any) -> Any:
    f = ns.function(lambda x, y: ns.reduce_sum(ns.matmul(x, y)) + ns.reduce_max(x))
    return f(ns.constant([[1.0, 2.0]]), ns.constant([[3.0], [4.0]]))


# --- Dataset (tf.data): cases of their own module ----------------------------------------------
from cases_data import CASES as DATA_CASES  # noqa: E402

CASES.update(DATA_CASES)

# --- the API gaps of issue 27 (Keras losses...): their own module, joining CASES ----------------
import cases_conv  # noqa: E402, F401  (convolution and pooling, custom_gradient)
import cases_gaps  # noqa: E402, F401
import cases_loops  # noqa: E402,F401  (graph loops: TensorArray loop variables, AutoGraph)
import cases_schedules  # noqa: E402, F401  (learning-rate schedules)
import cases_scope  # noqa: E402,F401  (get_variable, variable_scope)
import cases_seed  # noqa: E402,F401  (random ops' seeds)
import cases_tf1  # noqa: E402,F401  (adds the TensorFlow 1 and checkpoint cases)
