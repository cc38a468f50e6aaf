"""GraphDefs: every registered op survives export -> JSON text -> import into a fresh graph,
giving bit-identical results in a Session; subgraphs, variables, names, input_map,
return_elements, files and the errors."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from op_cases import CASES

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable, apply_gradient_descent, custom_gradient
from eagerflow.graph import (
    Graph,
    Session,
    cond,
    control_dependencies,
    function,
    global_variables,
    global_variables_initializer,
    gradients,
    import_graph_def,
    name_scope,
    no_op,
    placeholder,
    placeholder_with_default,
    read_graph_def,
    while_loop,
    write_graph,
)
from eagerflow.graph.export.graph_def import (
    FORMAT,
    VERSION,
    MissingPythonFunction,
    decode_attr,
    encode_attr,
)
from eagerflow.tensor.errors import InvalidArgumentError, UnknownOpError

Build = Callable[..., Any]


def through_json(graph: Graph) -> dict[str, Any]:
    """The graph's GraphDef as another program would read it: strict JSON text, parsed."""
    return json.loads(json.dumps(graph.as_graph_def(), allow_nan=False))


def run(graph: Graph, fetches: Sequence[Any], feeds: dict[Any, Any], init: Any) -> list[Any]:
    ef.set_seed(1234)  # random ops draw from one generator: the same numbers in both runs
    with Session(graph) as session:
        if init is not None:
            session.run(init)
        return session.run(list(fetches), feeds)


def assert_identical(a: Any, b: Any) -> None:
    if a is None or b is None:
        assert a is None and b is None
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype
    assert a.shape == b.shape
    np.testing.assert_array_equal(a, b)
    # bit for bit: NaN payloads and the sign of zero too
    assert a.tobytes() == b.tobytes()


def round_trip(build: Build, inputs: Sequence[np.ndarray], expect_op: str | None = None) -> Any:
    """Build ``build(*placeholders)`` (its fetches: tensors or ops), export it through JSON,
    import it into a fresh graph, run both on the same feeds and compare."""
    graph = Graph()
    with graph.as_default():
        xs = [
            placeholder(ef.as_dtype(v.dtype), v.shape, name=f"in{i}") for i, v in enumerate(inputs)
        ]
        fetches = [f for f in _flat(build(*xs)) if f is not None]
        init = global_variables_initializer() if global_variables() else None
    graph_def = through_json(graph)
    if expect_op is not None:
        assert expect_op in _op_types(graph_def), f"{expect_op} is not in the exported graph"
    names = [f.name for f in fetches]
    fresh = Graph()
    with fresh.as_default():
        imported = import_graph_def(graph_def, return_elements=names, name="imported")
        assert imported is not None
        # exporting the imported graph gives the same nodes again, under the new names
        again = through_json(fresh)
        new_init = global_variables_initializer() if global_variables() else None
        new_xs = [fresh.get_tensor_by_name(f"imported/in{i}:0") for i in range(len(inputs))]
    before = run(graph, fetches, dict(zip(xs, inputs, strict=True)), init)
    after = run(fresh, imported, dict(zip(new_xs, inputs, strict=True)), new_init)
    for a, b in zip(before, after, strict=True):
        assert_identical(a, b)
    assert sorted(_op_types(again)) == sorted(_op_types(graph_def))
    return graph_def


def _flat(x: Any) -> list[Any]:
    if isinstance(x, list | tuple):
        return [y for item in x for y in _flat(item)]
    return [x]


def _op_types(graph_def: dict[str, Any]) -> list[str]:
    """Every node's op type, the library's graphs included."""
    types = [n["op"] for n in graph_def["node"]]
    for g in graph_def["library"]["graphs"].values():
        types += [n["op"] for n in g["node"]]
    return types


# --- every op --------------------------------------------------------------------------------
# A recipe of op_cases shared by several ops (reshape_like_case draws any of six) may skip an
# op in a few examples: those ops get a fixed graph in EXTRA as well.
SHARED = {op for op, case in CASES.items() if list(CASES.values()).count(case) > 1}
OWN_CASE = set(CASES) - SHARED


@pytest.mark.parametrize("op_name", sorted(CASES))
@settings(max_examples=4, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(data=st.data())
def test_each_op_of_the_gradient_cases_round_trips(op_name: str, data: st.DataObject) -> None:
    fn, inputs = data.draw(st.composite(lambda draw: CASES[op_name](draw))())
    round_trip(fn, inputs, expect_op=op_name if op_name in OWN_CASE else None)


def _variable(value: Any, name: str = "v") -> Variable:
    return Variable(np.asarray(value, np.float32), name=name)


def _assign_case(method: str) -> Build:
    def build(x: Any) -> Any:
        v = _variable([1.0, 2.0])
        return getattr(v, method)(x)

    return build


def _gradient_descent(x: Any) -> Any:
    v = _variable([1.0, 2.0])
    return apply_gradient_descent(v, 0.5, x)


def _custom(x: Any) -> Any:
    @custom_gradient
    def double(t: Any) -> Any:
        return t * 2.0, lambda dy: dy * 2.0

    return double(x)


def _call(x: Any) -> Any:
    @function
    def f(t: Any) -> Any:
        return ef.tanh(t) * 3.0

    return f(x)


def _print(x: Any) -> Any:
    ef.print("x is", x, output_stream="stderr")
    return x * 1.0


_writers: list[Any] = []  # open for the whole module: a summary op names its writer


def _summary(x: Any) -> Any:
    pytest.importorskip("tensorboard.summary.writer.event_file_writer")
    import tempfile

    from eagerflow.graph import summary

    writer = summary.create_file_writer(tempfile.mkdtemp(prefix="eagerflow-summary-"))
    _writers.append(writer)
    with writer.as_default():
        summary.scalar("x", ef.reduce_sum(x), step=0)
    return x * 1.0


def _no_op(x: Any) -> Any:
    v = _variable([0.0, 0.0])
    with control_dependencies([v.assign(x)]):
        done = ef.identity(x)
    return [done, no_op(name="nothing"), v.read_value()]


F32 = np.array([1.5, -2.0, 0.0, 3.25], np.float32)
INTS = np.array([3, -1, 0, 7], np.int64)
BOOLS = np.array([True, False, True, False])

# The ops that tests/op_cases.py has no gradient case for: one small graph each.
EXTRA: dict[str, tuple[Build, list[np.ndarray]]] = {
    "ApplyGradientDescent": (_gradient_descent, [np.array([0.5, 1.0], np.float32)]),
    "ArgMax": (lambda x: ef.argmax(x, axis=0), [F32]),
    "ArgMin": (lambda x: ef.argmin(x, axis=0), [F32]),
    "AssignAddVariableOp": (_assign_case("assign_add"), [np.array([1.0, 2.0], np.float32)]),
    "AssignSubVariableOp": (_assign_case("assign_sub"), [np.array([1.0, 5.0], np.float32)]),
    "AssignVariableOp": (_assign_case("assign"), [np.array([7.0, 8.0], np.float32)]),
    "Const": (lambda x: x + ef.constant([1.0, np.nan, -0.0, np.inf], ef.float32), [F32]),
    "CustomGradient": (_custom, [F32]),
    "Equal": (lambda x, y: ef.equal(x, y), [INTS, INTS[::-1].copy()]),
    "Fill": (lambda x: x + ef.fill((2, 4), 2.5), [F32]),
    "FloorDiv": (lambda x, y: ef.floordiv(x, y), [INTS, np.array([2, 2, 5, -3], np.int64)]),
    "Greater": (lambda x, y: ef.greater(x, y), [F32, F32[::-1].copy()]),
    "GreaterEqual": (lambda x, y: ef.greater_equal(x, y), [F32, F32[::-1].copy()]),
    "If": (lambda x: cond(ef.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0), [F32]),
    "Less": (lambda x, y: ef.less(x, y), [F32, F32[::-1].copy()]),
    "LessEqual": (lambda x, y: ef.less_equal(x, y), [F32, F32[::-1].copy()]),
    "LinSpace": (lambda x: x * ef.linspace(0.0, 1.0, 4), [F32]),
    "LogicalAnd": (lambda x, y: ef.logical_and(x, y), [BOOLS, BOOLS[::-1].copy()]),
    "LogicalNot": (lambda x: ef.logical_not(x), [BOOLS]),
    "LogicalOr": (lambda x, y: ef.logical_or(x, y), [BOOLS, BOOLS[::-1].copy()]),
    "NoOp": (_no_op, [np.array([4.0, 5.0], np.float32)]),
    "NotEqual": (lambda x, y: ef.not_equal(x, y), [INTS, INTS[::-1].copy()]),
    "OneHot": (lambda i: ef.one_hot(i, 5), [np.array([0, 3, 4], np.int32)]),
    "OnesLike": (lambda x: ef.ones_like(x), [INTS]),
    "PartitionedCall": (_call, [F32]),
    "Placeholder": (lambda x: x, [F32]),
    "PlaceholderWithDefault": (
        lambda x: x * placeholder_with_default(ef.constant([1.0, 2.0, 3.0, 4.0]), [None]),
        [F32],
    ),
    "PrintV2": (_print, [F32]),
    "WriteSummary": (_summary, [F32]),
    "RandomNormal": (lambda x: x + ef.random_normal((4,), 1.0, 2.0), [F32]),
    "RandomShuffle": (lambda x: ef.random_shuffle(x), [np.arange(10.0)]),
    "RandomUniform": (lambda x: x + ef.random_uniform((4,), 0, 10, ef.int64), [INTS]),
    "Range": (lambda x: x * ef.cast(ef.range(4), ef.float32), [F32]),
    "ReadVariableOp": (lambda x: x * _variable([1.0, 2.0, 3.0, 4.0]).read_value(), [F32]),
    "Sign": (lambda x: ef.sign(x), [F32]),
    "Size": (lambda x: ef.size(x, ef.int64), [np.zeros((2, 3))]),
    "StopGradient": (lambda x: ef.stop_gradient(x), [F32]),
    "VariableV2": (lambda x: [_variable([9.0, 8.0, 7.0, 6.0]).read_value() + x], [F32]),
    "Where": (lambda x: ef.where(x), [BOOLS]),
    "While": (
        lambda x: while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2.0), [0, x]),
        [F32],
    ),
    "ZerosLike": (lambda x: ef.zeros_like(x), [F32]),
    # (also in a shared recipe of op_cases)
    "BroadcastTo": (lambda x: ef.broadcast_to(x, (3, 4)), [F32]),
    "ConcatV2": (lambda x, y: ef.concat([x, y, x], axis=0), [F32, F32 * 2]),
    "ExpandDims": (lambda x: ef.expand_dims(x, -1), [F32]),
    "Pack": (lambda x, y: ef.stack([x, y], axis=1), [F32, F32 * 2]),
    "Reshape": (lambda x: ef.reshape(x, (2, -1)), [F32]),
    "SplitV": (lambda x: ef.split(x, [1, 3], axis=0), [F32]),
    "Squeeze": (lambda x: ef.squeeze(x, axis=(0, 2)), [F32.reshape(1, 4, 1)]),
    "Tile": (lambda x: ef.tile(x, [2, 3]), [F32.reshape(2, 2)]),
    "Transpose": (lambda x: ef.transpose(x, (1, 0, 2)), [np.arange(24.0).reshape(2, 3, 4)]),
}


@pytest.mark.parametrize("op_name", sorted(EXTRA))
def test_each_other_op_round_trips(op_name: str) -> None:
    build, inputs = EXTRA[op_name]
    round_trip(build, inputs, expect_op=op_name)


def packaged_ops() -> set[str]:
    """The ops the four packages register, asked of a fresh interpreter: in this one, tests
    and exercises (``Softsign``) may have registered ops of their own."""
    code = "import eagerflow.nn, json; from eagerflow.tensor.registry import OPS; "
    code += "print(json.dumps(sorted(OPS)))"
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return set(json.loads(output.stdout))


# Ops whose round trip is tested beside them: a partition's _Send and _Recv need two tasks
# (tests/graph/partition/test_partition.py runs both parts of a graph written and read back).
ROUND_TRIPPED_ELSEWHERE = {"_Send", "_Recv"}


def test_every_registered_op_has_a_round_trip_test() -> None:
    # a new op needs a case in tests/op_cases.py (its gradient check) or in EXTRA here
    assert OWN_CASE | set(EXTRA) | ROUND_TRIPPED_ELSEWHERE == packaged_ops()
    assert set(EXTRA) >= SHARED


# --- constants -------------------------------------------------------------------------------
CONSTANTS = [
    np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-310, np.finfo(np.float64).max]),
    np.array([np.nan, -0.0, np.inf, 1e-40, np.finfo(np.float32).max], np.float32),
    np.array([np.nan, -0.0, np.inf, 6e-8, 65504.0], np.float16),
    np.array([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max], np.int64),
    np.array([np.iinfo(np.int32).min, np.iinfo(np.int32).max], np.int32),
    np.array([[True, False], [False, True]]),
    np.zeros((0, 3), np.float32),
    np.array(np.float32(-0.0)),  # 0-d
    np.frombuffer(np.array(0x7FF8DEADBEEF0001, np.int64).tobytes(), np.float64),  # a payload
]


@pytest.mark.parametrize("value", CONSTANTS, ids=lambda v: f"{v.dtype}{list(v.shape)}")
def test_constants_of_every_dtype_round_trip_bit_for_bit(value: np.ndarray) -> None:
    graph = Graph()
    with graph.as_default():
        c = ef.constant(value, name="c")
    fresh = Graph()
    with fresh.as_default():
        (imported,) = import_graph_def(through_json(graph), return_elements=["c:0"])  # type: ignore[misc]
    assert imported.shape == value.shape and imported.dtype == c.dtype
    assert_identical(run(graph, [c], {}, None)[0], run(fresh, [imported], {}, None)[0])


def test_a_big_endian_array_is_stored_little_endian_and_read_natively() -> None:
    big = np.array([1.0, -2.5], ">f8")
    data = encode_attr(big)
    assert data == encode_attr(big.astype("<f8"))  # one byte order on disk
    back = decode_attr(json.loads(json.dumps(data)))
    assert back.dtype == np.float64 and back.dtype.isnative
    np.testing.assert_array_equal(back, [1.0, -2.5])


def test_the_attribute_encoder_keeps_python_types() -> None:
    values = [
        None, True, 3, -(2**70), 0.1, -0.0, float("inf"), "s", (1, None), [1, (2,)],
        {"a": [1]}, slice(None, -1, 2), Ellipsis, ef.float16, np.float32(1.5), np.int64(-7),
    ]  # fmt: skip
    for value in values:
        back = decode_attr(json.loads(json.dumps(encode_attr(value), allow_nan=False)))
        assert back == value and type(back) is type(value)
    nan = decode_attr(json.loads(json.dumps(encode_attr(float("nan")))))
    assert np.isnan(nan)


# --- subgraphs, gradients, functions ------------------------------------------------------------
def test_cond_and_its_gradient_round_trip() -> None:
    def build(x: Any) -> Any:
        y = cond(ef.reduce_sum(x) > 0, lambda: ef.tanh(x) * x, lambda: x * x * x)
        return [y, *gradients([y], [x]), *gradients(gradients([y], [x]), [x])]

    round_trip(build, [F32.astype(np.float64)])
    round_trip(build, [-np.abs(F32.astype(np.float64))])


def test_while_loop_and_its_gradients_round_trip() -> None:
    def build(x: Any, c: Any) -> Any:
        (_, y) = while_loop(lambda i, a: i < 4, lambda i, a: (i + 1, ef.tanh(a) * c + x), [0, x])
        (dx, dc) = gradients([y], [x, c])
        (ddx,) = gradients([dx], [x])
        return [y, dx, dc, ddx]

    graph_def = round_trip(build, [np.array([0.5, -1.0, 2.0]), np.array(0.75)])
    loops = [n for n in _op_types(graph_def) if n == "While"]
    assert len(loops) >= 5  # the forward loop, its gradient's two, and the second order's


def test_a_traced_function_called_in_a_graph_and_its_gradient_round_trip() -> None:
    v_value = np.array([1.0, -1.0, 2.0, 0.5], np.float32)

    def build(x: Any) -> Any:
        v = Variable(v_value, name="weights")

        @function
        def f(t: Any) -> Any:
            out = ef.tanh(t) * v
            return cond(ef.reduce_sum(out) > 0, lambda: out * 2.0, lambda: out)

        y = f(x) + f(x * 2.0)
        return [y, *gradients([ef.reduce_sum(y)], [x, v])]

    graph_def = round_trip(build, [F32])
    kinds = {f["type"] for f in graph_def["library"]["functions"].values()}
    assert kinds == {"ConcreteFunction", "Subgraph"}


def test_a_training_step_runs_the_same_in_both_graphs() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (None, 2), name="x")
        w = Variable(np.array([[0.5], [-0.25]], np.float32), name="w")
        loss = ef.reduce_mean(ef.square(ef.matmul(x, w) - 1.0), name="loss")
        (dw,) = gradients([loss], [w])
        train = apply_gradient_descent(w, 0.1, dw).op
    fresh = Graph()
    with fresh.as_default():
        train2, loss2 = import_graph_def(
            through_json(graph), return_elements=[train.name, "loss:0"]
        )  # type: ignore[misc]
        (w2,) = global_variables()
        init = global_variables_initializer()
    assert w2.name == "import/w:0" and w2.shape == (2, 1) and w2.trainable
    feed = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    with Session(graph) as s1, Session(fresh) as s2:
        s1.run(global_variables_initializer_of(graph))
        s2.run(init)
        x2 = fresh.get_tensor_by_name("import/x:0")
        for _ in range(3):
            s1.run(train, {x: feed})
            s2.run(train2, {x2: feed})
        assert_identical(s1.run(loss, {x: feed}), s2.run(loss2, {x2: feed}))
        assert_identical(s1.run(w), s2.run(w2))


def global_variables_initializer_of(graph: Graph) -> Any:
    with graph.as_default():
        return global_variables_initializer()


def test_an_eager_variable_read_by_a_function_becomes_a_graph_variable() -> None:
    v = Variable(np.float32(2.0), name="eager_v")

    @function(autograph=False)
    def f(t: Any) -> Any:
        return t * v

    graph = Graph()
    with graph.as_default():
        y = f(placeholder(ef.float32, (), name="x"))
    graph_def = through_json(graph)
    assert graph_def["variables"]["eager_v:0"]["node"] is None  # no node: it lives eagerly
    fresh = Graph()
    with fresh.as_default():
        (y2,) = import_graph_def(graph_def, return_elements=[y.name])  # type: ignore[misc]
        (new,) = global_variables()
        assign = new.assign(5.0)
    assert new.name == "import/eager_v:0" and new.initializer is None
    assert fresh.get_operation_by_name("import/eager_v").type == "VariableV2"
    with Session(fresh) as session:
        session.run(assign)
        assert session.run(y2, {"import/x:0": 3.0}) == 15.0


def test_imported_variables_start_uninitialized() -> None:
    graph = Graph()
    with graph.as_default():
        v = Variable(np.float32(3.0), name="v")
        ef.identity(v, name="read")
    fresh = Graph()
    with fresh.as_default():
        import_graph_def(through_json(graph))
    with Session(fresh) as session, pytest.raises(ef.errors.FailedPreconditionError):
        session.run("import/read:0")
    assert v.name == "v:0"


# --- names, control dependencies, input_map, return_elements -------------------------------------
def test_names_scopes_and_control_dependencies_are_kept() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (2,), name="x")
        with name_scope("layer"):
            first = ef.multiply(x, 2.0, name="first")
            with control_dependencies([first]):
                second = ef.add(x, 1.0, name="second")
    graph_def = through_json(graph)
    node = next(n for n in graph_def["node"] if n["name"] == "layer/second")
    assert node["input"][0] == "x:0" and node["input"][-1] == "^layer/first"
    fresh = Graph()
    with fresh.as_default():
        (op,) = import_graph_def(graph_def, return_elements=["layer/second"])  # type: ignore[misc]
        import_graph_def(graph_def)  # again: a new scope, "import_1"
    assert op.name == "import/layer/second"
    assert [c.name for c in op.control_inputs] == ["import/layer/first"]
    assert fresh.get_operation_by_name("import_1/layer/second").type == "AddV2"
    assert second.name == "layer/second:0"


def test_no_name_imports_under_the_original_names() -> None:
    graph = Graph()
    with graph.as_default():
        ef.constant(1.0, name="one")
    fresh = Graph()
    with fresh.as_default():
        import_graph_def(through_json(graph), name="")
    assert [o.name for o in fresh.get_operations()] == ["one"]


def test_input_map_replaces_tensors_and_shapes_are_inferred_again() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        ef.reduce_sum(ef.square(x), name="y")
    fresh = Graph()
    with fresh.as_default():
        z = ef.constant(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)) * 1.0
        (y,) = import_graph_def(  # type: ignore[misc]
            through_json(graph), input_map={"x:0": ef.reshape(z, (4,))}, return_elements=["y:0"]
        )
    assert y.shape == ()
    with Session(fresh) as session:
        assert session.run(y) == 30.0


def test_input_map_with_another_shape_reruns_the_shape_rules() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (None, 3), name="x")
        ef.matmul(x, np.ones((3, 2), np.float32), name="y")
    fresh = Graph()
    with fresh.as_default():
        good = placeholder(ef.float32, (5, 3))
        (y,) = import_graph_def(through_json(graph), {"x:0": good}, ["y:0"])  # type: ignore[misc]
        assert y.shape == (5, 2)  # the shape rule ran on the new input
        with pytest.raises(ef.errors.ShapeError):
            import_graph_def(through_json(graph), {"x:0": placeholder(ef.float32, (5, 4))})


def test_input_map_and_return_elements_name_what_the_def_lacks() -> None:
    graph = Graph()
    with graph.as_default():
        ef.constant(1.0, name="c")
    graph_def = through_json(graph)
    fresh = Graph()
    with fresh.as_default():
        with pytest.raises(InvalidArgumentError, match=r"no tensor 'nope:0'"):
            import_graph_def(graph_def, input_map={"nope:0": ef.constant(1.0)})
        with pytest.raises(InvalidArgumentError, match=r"no operation or tensor 'nope'"):
            import_graph_def(graph_def, return_elements=["nope"])
        with pytest.raises(TypeError, match=r"tensor of the default graph"):
            import_graph_def(graph_def, input_map={"c:0": 1.0})


# --- errors ----------------------------------------------------------------------------------
def _small_def() -> dict[str, Any]:
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (2,), name="x")
        ef.negative(x, name="y")
    return through_json(graph)


def test_an_unknown_op_type_is_named() -> None:
    graph_def = _small_def()
    graph_def["node"][1]["op"] = "FancyConv"
    with Graph().as_default(), pytest.raises(UnknownOpError, match=r"'y'.*'FancyConv'"):
        import_graph_def(graph_def)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "tf.GraphDef"}, "expected format 'eagerflow.GraphDef', got 'tf.GraphDef'"),
        ({"format": None}, "expected format 'eagerflow.GraphDef'"),
        ({"version": 2}, "expected eagerflow.GraphDef version 1, got version 2"),
        ({"version": None}, "version 1, got version None"),
    ],
)
def test_a_wrong_format_or_version_says_what_was_expected(
    change: dict[str, Any], message: str
) -> None:
    graph_def = {**_small_def(), **change}
    with Graph().as_default(), pytest.raises(InvalidArgumentError, match=message):
        import_graph_def(graph_def)


def test_an_input_naming_a_missing_node_is_an_error() -> None:
    graph_def = _small_def()
    graph_def["node"][1]["input"] = ["ghost:0"]
    with Graph().as_default(), pytest.raises(InvalidArgumentError, match=r"'y'.*'ghost:0'"):
        import_graph_def(graph_def)
    graph_def["node"][1]["input"] = ["x:3"]
    with Graph().as_default(), pytest.raises(InvalidArgumentError, match=r"no output 'x:3'"):
        import_graph_def(graph_def)
    graph_def["node"][1]["input"] = ["x:0", "^ghost"]
    with Graph().as_default(), pytest.raises(InvalidArgumentError, match=r"'\^ghost'"):
        import_graph_def(graph_def)


def test_a_bad_attribute_value_names_the_node() -> None:
    graph_def = _small_def()
    graph_def["node"][0]["attr"]["dtype"] = {"pickle": "gASV..."}
    with Graph().as_default(), pytest.raises(InvalidArgumentError, match=r"'x'.*'dtype'"):
        import_graph_def(graph_def)


def test_an_unwritable_attribute_names_the_op() -> None:
    graph = Graph()
    with graph.as_default():
        ef.print("hello", output_stream=io.StringIO(), name="say")
    with pytest.raises(TypeError, match=r"PrintV2 'say'.*output_stream"):
        graph.as_graph_def()


def test_a_python_function_attribute_does_not_travel() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (2,), name="x")
        _custom(x)
    graph_def = through_json(graph)
    (node,) = [n for n in graph_def["node"] if n["op"] == "CustomGradient"]
    assert list(node["attr"]["grad_fn"]) == ["python_function"]
    fresh = Graph()
    with fresh.as_default():
        import_graph_def(graph_def)
        (op,) = [o for o in fresh.get_operations() if o.type == "CustomGradient"]
        assert isinstance(op.attrs["grad_fn"], MissingPythonFunction)
        with pytest.raises(NotImplementedError, match=r"not saved in the GraphDef"):
            gradients(op.outputs, [fresh.get_tensor_by_name("import/x:0")])


# --- files -----------------------------------------------------------------------------------
def test_write_graph_and_read_graph_def(tmp_path: Any) -> None:
    graph = Graph()
    with graph.as_default():
        ef.constant([np.nan, 1.0], name="c")
    path = write_graph(graph, tmp_path / "logs", "graph.json")
    assert path == os.path.join(tmp_path / "logs", "graph.json")
    assert os.listdir(tmp_path / "logs") == ["graph.json"]  # no temporary file left behind
    graph_def = read_graph_def(path)
    assert graph_def == through_json(graph)
    assert (graph_def["format"], graph_def["version"]) == (FORMAT, VERSION)
    write_graph(graph_def, tmp_path / "logs", "graph.json")  # a GraphDef too, replacing it
    assert read_graph_def(path) == graph_def


def test_reading_a_truncated_or_foreign_file_names_it(tmp_path: Any) -> None:
    graph = Graph()
    with graph.as_default():
        ef.constant(1.0, name="c")
    path = write_graph(graph, tmp_path, "g.json")
    text = Path(path).read_text()
    truncated = tmp_path / "cut.json"
    truncated.write_text(text[: len(text) // 2])
    with pytest.raises(InvalidArgumentError, match=r"cut.json.*truncated, or not JSON"):
        read_graph_def(truncated)
    binary = tmp_path / "model.pb"
    binary.write_bytes(b"\x08\x96\x01\xff\xfe")
    with pytest.raises(InvalidArgumentError, match=r"model.pb"):
        read_graph_def(binary)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "eagerflow.GraphDef", "version": 99, "node": []}))
    with pytest.raises(
        InvalidArgumentError, match=r"other.json: expected .* version 1, got version 99"
    ):
        read_graph_def(other)


def test_a_failed_write_keeps_the_old_file(tmp_path: Any) -> None:
    graph = Graph()
    with graph.as_default():
        ef.constant(1.0, name="c")
    path = write_graph(graph, tmp_path, "g.json")
    before = Path(path).read_text()
    with pytest.raises(InvalidArgumentError):
        write_graph({"format": "nope"}, tmp_path, "g.json")
    assert Path(path).read_text() == before
    assert os.listdir(tmp_path) == ["g.json"]
