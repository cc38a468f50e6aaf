"""``eagerflow.graph.onnx.export``: every mapped op, run by ONNX Runtime, agrees with eagerflow.

Each case is a small traced function with an input signature (a ``None`` batch dimension,
shapes that broadcast); it is exported once, and hypothesis draws a few batch sizes and
input values for it: ONNX Runtime's outputs must equal eagerflow's (floats within float32
rounding, integers and bools exactly). ``test_every_rule_has_a_case`` keeps the cases in
step with ``RULES``. Then the tutorial's three models, the dynamic batch, the refusals.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import eagerflow.tensor as ef  # noqa: E402
import eagerflow.tensor.nn  # noqa: E402, F401  (ef.nn: elu, leaky_relu)
from eagerflow import nn  # noqa: E402
from eagerflow.autodiff import Variable, custom_gradient  # noqa: E402
from eagerflow.graph import ConcreteFunction, TensorSpec, cond, function, while_loop  # noqa: E402
from eagerflow.graph import onnx as ef_onnx  # noqa: E402
from eagerflow.tensor.execution import execute  # noqa: E402

# --- inputs -------------------------------------------------------------------------------------
# A kind says how to draw an input's values, and so its dtype.
KINDS: dict[str, Any] = {
    "f": ef.float32,  # normal, scale 2
    "pos": ef.float32,  # in [0.5, 3)
    "nzf": ef.float32,  # ±[0.5, 3)
    "i": ef.int32,  # in [-5, 6)
    "i64": ef.int64,
    "nzi": ef.int32,  # nonzero in [-5, 6)
    "p": ef.int32,  # in [0, 4)
    "b": ef.bool_,
}


def draw(kind: str | tuple[str, int], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    if isinstance(kind, tuple):  # ("idx", n): indices in [0, n); ("idxo", n): a few out of range
        name, n = kind
        low, high = (0, n) if name == "idx" else (-1, n + 1)
        return rng.integers(low, high, shape).astype(np.int32)
    if kind == "f":
        return (rng.standard_normal(shape) * 2).astype(np.float32)
    if kind == "pos":
        return rng.uniform(0.5, 3, shape).astype(np.float32)
    if kind == "nzf":
        return (rng.uniform(0.5, 3, shape) * rng.choice([-1, 1], shape)).astype(np.float32)
    if kind in ("i", "i64"):
        return rng.integers(-5, 6, shape).astype(KINDS[kind].np)
    if kind == "nzi":
        return (rng.integers(1, 6, shape) * rng.choice([-1, 1], shape)).astype(np.int32)
    if kind == "p":
        return rng.integers(0, 4, shape).astype(np.int32)
    assert kind == "b"
    return rng.random(shape) < 0.5


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[..., Any]
    inputs: tuple[tuple[tuple[int | None, ...], Any], ...]  # (shape, kind) per argument

    def specs(self) -> list[TensorSpec]:
        # indices, ("idx", n), are int32
        return [TensorSpec(shape, ef.int32 if isinstance(kind, tuple) else KINDS[kind])
                for shape, kind in self.inputs]  # fmt: skip


def case(name: str, *inputs: tuple[tuple[int | None, ...], Any]) -> Callable[..., Case]:
    return lambda fn: Case(name, fn, inputs)


F = ((None, 3), "f")  # a float batch of rows of 3
ROW = ((3,), "f")  # one row, broadcast against the batch
COL = ((None, 1), "f")


def _binary_cases() -> list[Case]:
    cases = []
    for name, op, kinds in [
        ("add", ef.add, ("f", "f")), ("sub", ef.subtract, ("f", "f")),
        ("mul", ef.multiply, ("f", "f")), ("div", ef.divide, ("f", "nzf")),
        ("maximum", ef.maximum, ("f", "f")), ("minimum", ef.minimum, ("f", "f")),
        ("pow", ef.pow, ("pos", "f")), ("less", ef.less, ("i", "i")),
        ("less_equal", ef.less_equal, ("i", "i")), ("greater", ef.greater, ("f", "f")),
        ("greater_equal", ef.greater_equal, ("i", "i")), ("equal", ef.equal, ("i", "i")),
        ("not_equal", ef.not_equal, ("i", "i")), ("floordiv", ef.floordiv, ("f", "nzf")),
        ("floormod", ef.floormod, ("f", "nzf")), ("floordiv_int", ef.floordiv, ("i", "nzi")),
        ("floormod_int", ef.floormod, ("i", "nzi")), ("add_int64", ef.add, ("i64", "i64")),
        ("mul_int", ef.multiply, ("i", "i")), ("pow_int", ef.pow, ("i", "p")),
        ("logical_and", ef.logical_and, ("b", "b")), ("logical_or", ef.logical_or, ("b", "b")),
        ("equal_bool", ef.equal, ("b", "b")), ("maximum_int", ef.maximum, ("i", "i")),
    ]:  # fmt: skip
        a, c = kinds
        cases.append(Case(name, op, (((None, 3), a), ((3,), c))))  # row broadcast
        cases.append(Case(f"{name}_col", op, (((None, 1), a), ((None, 3), c))))  # column
    return cases


def _unary_cases() -> list[Case]:
    ops = {
        "sigmoid": (ef.sigmoid, "f"), "tanh": (ef.tanh, "f"), "exp": (ef.exp, "f"),
        "log": (ef.log, "pos"), "sqrt": (ef.sqrt, "pos"), "neg": (ef.negative, "f"),
        "abs": (ef.abs, "f"), "sign": (ef.sign, "f"), "softplus": (ef.softplus, "f"),
        "elu": (ef.nn.elu, "f"), "square": (ef.square, "f"), "relu": (ef.relu, "f"),
        "relu_int": (ef.relu, "i"), "abs_int": (ef.abs, "i"), "neg_int": (ef.negative, "i"),
        "sign_int": (ef.sign, "i"), "square_int": (ef.square, "i"),
        "logical_not": (ef.logical_not, "b"), "identity": (ef.identity, "f"),
        "stop_gradient": (ef.stop_gradient, "f"),
        "leaky_relu": (lambda x: ef.nn.leaky_relu(x, 0.1), "f"),
        "softmax": (ef.softmax, "f"), "log_softmax": (ef.log_softmax, "f"),
        "softmax_axis0": (lambda x: ef.softmax(x, axis=0), "f"),
        "cast_to_int": (lambda x: ef.cast(x, ef.int32), "f"),
        "cast_to_float": (lambda x: ef.cast(x, ef.float64), "i"),
        "cast_to_bool": (lambda x: ef.cast(x, ef.bool_), "i"),
        "cast_from_bool": (lambda x: ef.cast(x, ef.float32), "b"),
        "zeros_like": (ef.zeros_like, "f"), "ones_like": (ef.ones_like, "f"),
        "ones_like_bool": (ef.ones_like, "b"), "size": (ef.size, "f"),
        "where_coordinates": (ef.where, "b"),
    }  # fmt: skip
    return [Case(name, op, (((None, 3), kind),)) for name, (op, kind) in ops.items()]


def _reduction_cases() -> list[Case]:
    cases = []
    for name, op in [("sum", ef.reduce_sum), ("mean", ef.reduce_mean), ("max", ef.reduce_max),
                     ("min", ef.reduce_min), ("prod", ef.reduce_prod)]:  # fmt: skip
        for axis, keepdims in [(None, False), (1, False), ((0, 2), True), (-1, True)]:
            label = f"{name}_{axis}_{keepdims}".replace(" ", "")
            fn = functools.partial(op, axis=axis, keepdims=keepdims)
            cases.append(Case(label, fn, (((None, 2, 3), "f"),)))
        cases.append(Case(f"{name}_int", functools.partial(op, axis=1), (((None, 3), "i"),)))
    return cases


CASES: list[Case] = [*_binary_cases(), *_unary_cases(), *_reduction_cases()]


def add(c: Case) -> Case:
    CASES.append(c)
    return c


@add
@case("select", ((None, 3), "b"), F, ROW)
def _select(c, x, y):
    return ef.where(c, x, y)


@add
@case("matmul", F, ((3, 4), "f"))
def _matmul(a, b):
    return ef.matmul(a, b)


@add
@case("matmul_transposed", ((None, 3), "f"), ((None, 4), "f"))
def _matmul_t(a, b):
    return ef.matmul(a, b, transpose_a=True), ef.matmul(b, a, transpose_a=True)


@add
@case("matmul_transpose_b", F, ((5, 3), "f"))
def _matmul_tb(a, b):
    return ef.matmul(a, b, transpose_b=True)


@add
@case("matmul_batched", ((None, 2, 3), "f"), ((3, 2), "f"))
def _matmul_batched(a, b):
    return ef.matmul(a, b), ef.matmul(b, a, transpose_a=True, transpose_b=True)


@add
@case("matmul_int", ((None, 3), "i"), ((3, 2), "i"))
def _matmul_int(a, b):
    return ef.matmul(a, b)


@add
@case("argmax_argmin", ((None, 4), "i"))
def _arg(x):
    return ef.argmax(x, axis=1), ef.argmin(x, axis=0, output_type=ef.int32)


@add
@case("sparse_xent", ((None, 4), "f"), ((None,), ("idx", 4)))
def _xent(logits, labels):
    # both outputs: the loss and its gradient (the public function returns only the loss)
    return execute("SparseSoftmaxCrossEntropyWithLogits", (logits, labels), {})


@add
@case("reshape_transpose", ((None, 6), "f"))
def _reshape(x):
    y = ef.reshape(x, (-1, 2, 3))
    return ef.transpose(y, (1, 0, 2)), ef.reshape(x, (-1,))


@add
@case("expand_squeeze", ((None, 3), "f"), ((2, 1, 3), "f"))
def _expand(x, z):
    return (ef.squeeze(ef.expand_dims(x, -1), 2), ef.expand_dims(x, 0), ef.squeeze(z),
            ef.squeeze(z, axis=()))  # fmt: skip


@add
@case("concat_stack_split", ((None, 2), "f"), F)
def _concat(a, b):
    joined = ef.concat([a, b], axis=1)
    first, second = ef.split(joined, (1, 4), axis=1)
    return joined, ef.stack([b, b], axis=1), first, second, ef.stack([a, a], axis=-1)


@add
@case("broadcast_tile", ((1, 3), "f"), ((None, 2), "i"))
def _broadcast(x, y):
    return ef.broadcast_to(x, (4, 3)), ef.tile(y, (2, 3))


@add
@case("gather", F, ((None,), ("idx", 3)), ((5, 2), "f"))
def _gather(x, i, p):
    return ef.gather(x, i, axis=1), ef.gather(p, ef.constant([4, 0, 0]))


@add
@case("one_hot", ((None,), ("idxo", 4)))
def _one_hot(i):
    return ef.one_hot(i, 4), ef.one_hot(i, 3, on_value=5, off_value=-1, axis=0)


@add
@case("constants", F)
def _constants(x):
    return (x + ef.fill((3,), 7.0), x * ef.linspace(0.0, 1.0, 3), ef.range(3) + 1,
            x - ef.ones((1, 3)) + ef.zeros((3,)) + ef.constant([1.0, 2.0, 3.0]))  # fmt: skip


@add
@case("range_of_tensors", ((), "p"), ((), "p"))
def _range(n, m):
    return ef.range(n, n + m + 3, 2), ef.range(1, n + 1)


@add
@case("strided_slice", ((None, 4, 3), "f"))
def _slice(x):
    return x[:, 1:], x[-1], x[..., None, 0], x[::-1, ::2, -2:], x[:, 3:0:-2, 1], x[None, :, -1]


@add
@case("segment_sum", ((None, 3), "f"), ((None,), ("idx", 4)))
def _segment_sum(data, ids):
    return ef.unsorted_segment_sum(data, ids - 1, 4)  # the slices of id -1 are dropped


@custom_gradient
def _log1pexp(x):
    e = ef.exp(x)
    return ef.log(1 + e), lambda dy: dy * (1 - 1 / (1 + e))


@add
@case("custom_gradient_relu_grad", F, F)
def _custom(x, g):
    return _log1pexp(x), ef.relu_grad(g, ef.relu(x))


@add
@case("cond", F)
def _cond(x):
    return cond(ef.reduce_sum(x) > 0, lambda: x * 2.0, lambda: -x)


@add
@case("while", F, ((), "p"))
def _while(x, n):
    def body(i, acc):
        return i + 1, acc + ef.reduce_sum(x, axis=0)

    return while_loop(lambda i, acc: i < n, body, [0, ef.zeros((3,))])


_SCALE = Variable(np.array([1.5, -2.0, 0.5], np.float32), name="scale")


@add
@case("variables", F)
def _variables(x):
    # read in the graph, in a branch and in a loop body: one initializer serves them all
    y = cond(ef.reduce_sum(x) > 0, lambda: x * _SCALE, lambda: x - _SCALE)
    (z,) = while_loop(lambda z: ef.reduce_sum(z) < 100.0, lambda z: [z + ef.abs(_SCALE)], [x])
    return x * _SCALE, y, z


@function(input_signature=[TensorSpec((None, 3))])
def _inner(x):
    return ef.tanh(x) * _SCALE


@add
@case("partitioned_call", F)
def _call(x):
    return _inner(x) + 1.0


IMAGES = ((None, 7, 6, 2), "f")  # a batch of odd-sized NHWC images
FILTERS = ((3, 2, 2, 4), "f")
# SAME with strides 2 pads unevenly here (the odd pixel after): explicit ONNX pads say it
for _strides, _padding, _dilations in [(1, "SAME", 1), (2, "SAME", 1), (2, "VALID", 2),
                                       ([1, 2], "SAME", [2, 1])]:  # fmt: skip
    add(Case(f"conv2d_{_strides}_{_padding}_{_dilations}".replace(" ", ""),
             functools.partial(ef.nn.conv2d, strides=_strides, padding=_padding,
                               dilations=_dilations), (IMAGES, FILTERS)))  # fmt: skip
for _pool in (ef.nn.max_pool2d, ef.nn.avg_pool2d):
    for _ksize, _strides, _padding in [(2, 2, "VALID"), (3, 2, "SAME"), ([3, 2], 1, "SAME")]:
        add(Case(f"{_pool.__name__}_{_ksize}_{_strides}_{_padding}".replace(" ", ""),
                 functools.partial(_pool, ksize=_ksize, strides=_strides, padding=_padding),
                 (IMAGES,)))  # fmt: skip


# --- running a case ------------------------------------------------------------------------------
@functools.cache
def exported(c: Case) -> tuple[ConcreteFunction, Any]:
    concrete = function(c.fn, input_signature=c.specs()).get_concrete_function()
    model = ef_onnx.to_model(concrete)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return concrete, session


def check_outputs(ours: list[Any], theirs: list[Any]) -> None:
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        a = np.asarray(a)
        assert a.shape == b.shape, (a.shape, b.shape)
        assert a.dtype == b.dtype, (a.dtype, b.dtype)
        if a.dtype.kind == "f":
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(b, a)


def run_both(concrete: ConcreteFunction, session: Any, arrays: list[Any]) -> None:
    result = concrete(*arrays)
    ours = [t.numpy() for t in (result if isinstance(result, list | tuple) else [result])]
    feed = {i.name: a for i, a in zip(session.get_inputs(), arrays, strict=True)}
    check_outputs(ours, session.run(None, feed))


@pytest.mark.parametrize("c", CASES, ids=lambda c: c.name)
@settings(max_examples=4, deadline=None)
@given(batch=st.integers(1, 6), seed=st.integers(0, 2**32 - 1))
def test_op_matches_onnx_runtime(c: Case, batch: int, seed: int) -> None:
    concrete, session = exported(c)
    rng = np.random.default_rng(seed)
    arrays = [
        np.asarray(draw(kind, tuple(batch if d is None else d for d in shape), rng))
        for shape, kind in c.inputs
    ]
    run_both(concrete, session, arrays)


@functools.cache
def _fully_dynamic(op: Callable[..., Any]) -> tuple[ConcreteFunction, Any]:
    c = Case(op.__name__, op, (((None, None), "f"), ((None,), "f")))
    return exported(c)


@pytest.mark.parametrize("op", [ef.add, ef.multiply, ef.maximum, ef.greater], ids=repr)
@settings(max_examples=5, deadline=None)
@given(rows=st.integers(1, 4), cols=st.integers(1, 4), one=st.booleans(), seed=st.integers(0, 99))
def test_fully_dynamic_shapes_broadcast(op, rows: int, cols: int, one: bool, seed: int) -> None:
    """Every size unknown when exported: (rows, cols) against (cols,) or (1,)."""
    concrete, session = _fully_dynamic(op)
    rng = np.random.default_rng(seed)
    x = draw("f", (rows, cols), rng)
    y = draw("f", (1 if one else cols,), rng)
    run_both(concrete, session, [x, y])


def _op_types(graph: Any, found: set[str]) -> set[str]:
    for operation in graph.get_operations():
        found.add(operation.type)
        for value in operation.attrs.values():
            if hasattr(value, "graph") and hasattr(value, "outputs"):  # a subgraph
                _op_types(value.graph, found)
    return found


def test_every_rule_has_a_case() -> None:
    covered: set[str] = set()
    for c in CASES:
        _op_types(exported(c)[0].graph, covered)
    ours = set(ef_onnx.RULES) - {"NoOp"}  # translated to nothing: no output to compare
    assert not ours - covered, f"mapped ops without a test case: {sorted(ours - covered)}"


# --- the tutorial's models -----------------------------------------------------------------------
def _compare(fn: Any, *batches: np.ndarray, tmp_path: Any) -> None:
    path = ef_onnx.export(fn, tmp_path / "model.onnx")
    assert os.path.exists(path)
    onnx.checker.check_model(onnx.load(path))
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    concrete = fn.get_concrete_function()
    for batch in batches:
        run_both(concrete, session, [batch])


def test_linear_regression(tmp_path) -> None:
    weight, bias = Variable(3.1, name="W"), Variable(1.9, name="B")

    @function(input_signature=[TensorSpec((None,))])
    def prediction(inputs):
        return inputs * weight + bias

    xs = np.random.default_rng(0).standard_normal(7).astype(np.float32)
    _compare(prediction, xs, xs[:1], tmp_path=tmp_path)
    model = onnx.load(tmp_path / "model.onnx")
    values = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    assert values["W:0"] == np.float32(3.1) and values["B:0"] == np.float32(1.9)
    weight.assign(4.0)  # the model is frozen at export: exporting again sees the new value
    _compare(prediction, xs, tmp_path=tmp_path)


def test_mlp_classifier_and_a_dynamic_batch(tmp_path) -> None:
    model = nn.Sequential([nn.Dense(16, "relu", input_shape=(2,)), nn.Dense(3)])

    @function(input_signature=[TensorSpec((None, 2))])
    def classify(points):
        return ef.softmax(model(points))

    rng = np.random.default_rng(1)
    points = rng.standard_normal((7, 2)).astype(np.float32)
    _compare(classify, points, points[:1], tmp_path=tmp_path)
    (graph_input,) = onnx.load(tmp_path / "model.onnx").graph.input
    dims = graph_input.type.tensor_type.shape.dim
    assert dims[0].dim_param == "points_batch" and dims[1].dim_value == 2


def test_fizzbuzz_network(tmp_path) -> None:
    def encode(numbers, bits=10):
        numbers = np.asarray(numbers)
        return ((numbers[:, None] >> np.arange(bits)) & 1).astype(np.float32)

    model = nn.Sequential([nn.Dense(512, "relu"), nn.Dense(4)])
    model(encode([1]))  # built, as after training

    @function(input_signature=[TensorSpec((None, 10))])
    def fizzbuzz(digits):
        logits = model(digits)
        return logits, ef.argmax(logits, axis=1)

    _compare(fizzbuzz, encode(np.arange(1, 101)), encode([15]), tmp_path=tmp_path)


@pytest.mark.parametrize("opset", [13, 17, 18])
def test_opsets(opset) -> None:
    @function(input_signature=[TensorSpec((None, 3))])
    def f(x):
        return (
            ef.reduce_mean(x, axis=1),
            ef.reduce_max(x, axis=0, keepdims=True),
            ef.squeeze(ef.expand_dims(x, 1), 1),
        )

    model = ef_onnx.to_model(f, opset=opset)
    assert model.opset_import[0].version == opset
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    run_both(f.get_concrete_function(), session, [np.ones((2, 3), np.float32)])


# --- refusals ------------------------------------------------------------------------------------
def test_unsupported_ops_are_all_listed(tmp_path) -> None:
    counter = Variable(0.0, name="counter")

    @function(input_signature=[TensorSpec((None, 3))])
    def f(x):
        ef.print("x is", x)
        counter.assign_add(1.0)
        noise = ef.random_normal((3,))
        return x + noise

    with pytest.raises(ef_onnx.UnsupportedOpError) as caught:
        ef_onnx.export(f, tmp_path / "f.onnx")
    types = sorted(t for t, _, _ in caught.value.ops)
    assert types == ["AssignAddVariableOp", "PrintV2", "RandomNormal"]
    message = str(caught.value)
    assert "3 node(s)" in message
    for t, name, _ in caught.value.ops:
        assert f"{t} '{name}'" in message
    assert os.listdir(tmp_path) == []  # nothing written, not even a temporary file
    assert isinstance(caught.value, NotImplementedError)


def test_rules_that_refuse_are_all_listed_too() -> None:
    @function(input_signature=[TensorSpec((None, 3)), TensorSpec((None,), ef.int32)])
    def f(data, ids):
        return ef.unsorted_segment_sum(data, ids, 2), ef.unsorted_segment_sum(data * 2.0, ids, 3)

    with pytest.raises(ef_onnx.UnsupportedOpError, match="opset 16") as caught:
        ef_onnx.to_model(f, opset=13)  # ScatterND adds with reduction="add" from opset 16
    assert [t for t, _, _ in caught.value.ops] == ["UnsortedSegmentSum"] * 2
    ef_onnx.to_model(f, opset=16)


def test_a_function_needs_an_input_signature() -> None:
    with pytest.raises(ValueError, match="input_signature"):
        ef_onnx.to_model(function(lambda x: x + 1))
    with pytest.raises(TypeError, match="Function or ConcreteFunction"):
        ef_onnx.to_model(lambda x: x)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="opset"):
        ef_onnx.to_model(function(lambda x: x, input_signature=[TensorSpec(())]), opset=11)


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=False
    )


def test_import_and_missing_onnx() -> None:
    result = _run_python(
        """
        import sys
        import eagerflow.graph
        import eagerflow.graph.export.onnx
        assert "onnx" not in sys.modules, "importing eagerflow.graph imported onnx"
        sys.modules["onnx"] = None  # as if it were not installed
        from eagerflow.graph import TensorSpec, function
        from eagerflow.graph.export.onnx import export
        f = function(lambda x: x + 1.0, input_signature=[TensorSpec((None,))])
        try:
            export(f, "never.onnx")
        except ImportError as e:
            print(e)
        """
    )
    assert result.returncode == 0, result.stderr
    assert 'pip install "eagerflow-graph[onnx]"' in result.stdout
