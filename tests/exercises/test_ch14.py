"""Chapter 14 exercises: why graphs, a graph is data (`exercises/ch14.py`)."""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ready_made import refusing

import eagerflow.tensor as ef
from eagerflow.graph import Function, Graph, Session, placeholder, saved_model
from eagerflow.graph.export import graph_def as chapter_format
from eagerflow.tensor.dtypes import DType

pytestmark = pytest.mark.ch14


# --- encode_attr / decode_attr --------------------------------------------------------------------
def identical(a: Any, b: Any) -> bool:
    """Same type and same bits, all the way down: -0.0 is not 0.0, a NaN is only its own
    payload, a list is not a tuple, True is not 1."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return np.float64(a).tobytes() == np.float64(b).tobytes()
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(identical(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, DType):
        return a is b
    return bool(a == b)


def strict_json(data: Any, what: str) -> str:
    try:
        return json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise AssertionError(
            f"encode_attr({what}) gave {data!r:.200}, which is not strict JSON "
            f"(json.dumps(..., allow_nan=False) says: {error})"
        ) from None


# the chapter's own encoder and decoder: the answer, ready-made
THE_CHAPTERS_ENCODER = [(chapter_format, "encode_attr"), (chapter_format, "decode_attr")]


def refusing_the_chapters_encoder():  # type: ignore[no-untyped-def]
    return refusing("encode_attr and decode_attr", "the encoder", *THE_CHAPTERS_ENCODER)


def round_trip(chapter: Any, value: Any) -> Any:
    with refusing_the_chapters_encoder():
        text = strict_json(chapter.encode_attr(value), repr(value))
        return chapter.decode_attr(json.loads(text))


def check_round_trip(chapter: Any, value: Any) -> None:
    back = round_trip(chapter, value)
    assert identical(back, value), (
        f"decode_attr(json.loads(json.dumps(encode_attr(v)))) is not v, bit for bit:\n"
        f"  v    = {value!r:.300} ({type(value).__name__})\n"
        f"  back = {back!r:.300} ({type(back).__name__})"
    )
    if isinstance(value, np.ndarray):
        assert back.flags.writeable, "a decoded array must be writable (a copy, not a view)"


def test_a_shape_and_a_dtype(chapter):
    assert chapter.encode_attr((None, 2)) == [None, 2]
    assert chapter.encode_attr(ef.float32) == {"dtype": "float32"}
    check_round_trip(chapter, (None, 2))
    check_round_trip(chapter, ef.int64)


def test_a_constant_of_the_chapter(chapter):
    value = np.array([[3.0], [-1.0]], np.float32)
    encoded = chapter.encode_attr(value)
    assert encoded == {"tensor": {"dtype": "float32", "shape": [2, 1], "base64": "AABAQAAAgL8="}}, (
        f"expected the chapter's encoding of w, got {encoded!r}"
    )
    check_round_trip(chapter, value)


def _nan_with_payload() -> np.ndarray:
    return np.array([0x7FC00001, 0xFFC12345, 0x7F800001], np.uint32).view(np.float32)


HIDDEN = {
    "nan": math.nan,
    "inf": math.inf,
    "-inf": -math.inf,
    "-0.0": -0.0,
    "tiny": 5e-324,
    "digits": 0.1 + 0.2,
    "int64 extremes as ints": (2**63 - 1, -(2**63)),
    "bool is not int": (True, 1, False, 0),
    "list is not tuple": [(None, 3), [1, 2], ()],
    "nested floats": [(math.nan, -0.0), "float", ["nan"]],
    "strings": ("", "x:0", "ünï"),
    "dtypes": [ef.float32, ef.float64, ef.int32, ef.int64, ef.bool],
    "float32 specials": np.array([np.nan, -0.0, np.inf, -np.inf, 1e-45, 3.4028235e38], np.float32),
    "nan payloads": _nan_with_payload(),
    "int64 extremes": np.array([np.iinfo(np.int64).min, -1, 0, np.iinfo(np.int64).max]),
    "uint8": np.arange(0, 256, 51, dtype=np.uint8).reshape(2, 3),
    "bool array": np.array([[True, False], [False, True]]),
    "float64 matrix transposed": np.arange(12.0).reshape(3, 4).T,
    "scalar array": np.array(-0.0),
    "empty": np.zeros((0, 3), np.float32),
    "float16": np.array([65504.0, -np.inf, 6e-8], np.float16),
    "nothing": None,
}


@pytest.mark.parametrize("name", list(HIDDEN))
def test_round_trip_on_hidden_values(chapter, name):
    check_round_trip(chapter, HIDDEN[name])


@pytest.mark.parametrize("name", list(HIDDEN))
def test_the_chapters_format_both_ways(chapter, name):
    value = HIDDEN[name]
    with refusing_the_chapters_encoder():
        mine = json.loads(strict_json(chapter.encode_attr(value), repr(value)))
    try:
        theirs = chapter_format.decode_attr(mine)
    except (ValueError, TypeError, KeyError) as error:
        raise AssertionError(
            f"the chapter's decode_attr cannot read your encoding of {value!r:.100}: "
            f"{mine!r:.200} ({error})"
        ) from None
    assert identical(theirs, value), (
        f"the chapter's decode_attr reads your {mine!r:.200} as {theirs!r:.200}, not {value!r:.200}"
    )
    written = json.loads(json.dumps(chapter_format.encode_attr(value)))
    with refusing_the_chapters_encoder():
        back = chapter.decode_attr(written)
    assert identical(back, value), (
        f"your decode_attr reads the chapter's {written!r:.200} as {back!r:.200}, "
        f"not {value!r:.200}"
    )


@pytest.mark.parametrize("value", [{"a": 1}, object(), b"bytes", {1, 2}])
def test_other_values_are_a_type_error(chapter, value):
    with pytest.raises(TypeError):
        chapter.encode_attr(value)


# --- reporting_square -----------------------------------------------------------------------------
def what_ef_print_prints(values: np.ndarray) -> str:
    with contextlib.redirect_stderr(io.StringIO()) as stderr:
        ef.print("squares:", ef.constant(values))
    return stderr.getvalue()


def call_capturing(fn: Any, x: np.ndarray) -> tuple[np.ndarray, str, str]:
    with (
        contextlib.redirect_stderr(io.StringIO()) as stderr,
        contextlib.redirect_stdout(io.StringIO()) as stdout,
    ):
        result = np.asarray(fn(x))
    return result, stderr.getvalue(), stdout.getvalue()


def saved_and_loaded(chapter: Any, folder: Path) -> Any:
    square = chapter.reporting_square()
    assert isinstance(square, Function), (
        f"reporting_square() must return a function(...), got {type(square).__name__}"
    )
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # a trace-time print goes here
            saved_model.save(square, folder / "square")
    except (TypeError, ValueError) as error:
        raise AssertionError(f"saved_model.save refused your function: {error}") from None
    return saved_model.load(folder / "square")


HIDDEN_VECTORS = [
    np.array([3.0], np.float32),
    np.array([1.5, -2.0, 0.0], np.float32),
    np.array([-0.5, 4.0, 10.0, 0.25], np.float32),
    np.array([], np.float32),
    np.array([7.0, -7.0], np.float32),
]


def test_the_loaded_function_reports_every_call(chapter, tmp_path):
    loaded = saved_and_loaded(chapter, tmp_path)
    for x in HIDDEN_VECTORS:
        result, printed, stdout = call_capturing(loaded, x)
        assert result.tobytes() == (x * x).tobytes(), f"the loaded function gave {result} for {x}"
        expected = what_ef_print_prints(x * x)
        assert printed == expected, (
            f"the loaded function, called on {x}, printed {printed!r} to stderr "
            f"(and {stdout!r} to stdout); expected {expected!r}"
        )


def test_the_original_reports_too(chapter):
    square = chapter.reporting_square()
    x = np.array([2.0, -3.0], np.float32)
    call_capturing(square, x)  # the first call traces
    result, printed, _ = call_capturing(square, x)
    assert printed == what_ef_print_prints(x * x), f"the second call printed {printed!r}"
    assert result.tobytes() == (x * x).tobytes()


# --- numpy_source (stretch) -----------------------------------------------------------------------
def _refuse_imports(name: str, *args: Any, **kwargs: Any) -> Any:
    raise ImportError(f"the source imports {name!r}: it must run with np alone")


def run_function(source: Any) -> Any:
    """The ``run`` that ``source`` defines, executed with ``np`` as its only global and no
    imports."""
    assert isinstance(source, str), f"expected the source as a str, got {type(source).__name__}"
    no_imports = {**vars(builtins), "__import__": _refuse_imports}
    namespace: dict[str, Any] = {"np": np, "__builtins__": no_imports}
    try:
        exec(compile(source, "<numpy source>", "exec"), namespace)
    except ImportError as error:
        raise AssertionError(f"{error}:\n{source}") from None
    assert callable(namespace.get("run")), f"the source defines no function run:\n{source}"
    return namespace["run"]


def check_numpy_source(chapter: Any, graph: Graph, fetches: list[Any], feeds: list[dict]) -> None:
    graph_def = json.loads(json.dumps(graph.as_graph_def()))  # as another program reads it
    source = chapter.numpy_source(graph_def, [t.name for t in fetches])
    run = run_function(source)
    placeholders = {o.name: o.outputs[0] for o in graph.get_operations() if o.type == "Placeholder"}
    for feed in feeds:
        with Session(graph) as session:
            expected = session.run(fetches, {placeholders[n]: v for n, v in feed.items()})
        try:
            got = run({n: v.copy() for n, v in feed.items()})
        except Exception as error:  # NumPy's errors name no node: show the source with them
            raise AssertionError(
                f"run(feeds) raised {type(error).__name__}: {error}\nthe source:\n{source}"
            ) from error
        assert isinstance(got, list | tuple) and len(got) == len(fetches), (
            f"run(feeds) should return one array per fetch ({len(fetches)}), got {got!r:.200}"
        )
        for t, g_value, e_value in zip(fetches, got, expected, strict=True):
            g_value = np.asarray(g_value)
            where = f"{t.name} (from the op {t.op.type}), fed shapes " + str(
                {n: v.shape for n, v in feed.items()}
            )
            assert g_value.shape == e_value.shape and g_value.dtype == e_value.dtype, (
                f"{where}: expected {e_value.dtype} of shape {e_value.shape}, got "
                f"{g_value.dtype} of shape {g_value.shape}"
            )
            np.testing.assert_allclose(g_value, e_value, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{where}\nthe source:\n{source}")  # fmt: skip


def test_numpy_source_of_the_chapters_prediction(chapter):
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, shape=(None, 2), name="x")
        w = ef.constant([[3.0], [-1.0]], name="w")
        b = ef.constant(0.5, name="b")
        y = ef.matmul(x, w) + b
    rows = np.array([[1.0, 2.0], [0.5, -4.0], [2.0, 0.0]], np.float32)
    check_numpy_source(chapter, graph, [y], [{"x": rows}, {"x": rows[:1]}])


def hidden_network(seed: int) -> tuple[Graph, list[Any]]:
    """A small network the reader does not see: dense layers under name scopes (node names
    with a '/'), every op of the exercise's list, several fetches."""
    rng = np.random.default_rng(seed)
    graph = Graph()

    def weights(*shape: int) -> Any:
        return ef.constant(rng.uniform(-1, 1, shape).astype(np.float32))

    with graph.as_default():
        x = placeholder(ef.float32, (None, 4), name="input/x")
        scale = placeholder(ef.float32, (), name="scale")
        h = x
        for i, width in enumerate(rng.integers(3, 6, 2).tolist()):
            with graph.name_scope(f"dense_{i}"):
                if rng.random() < 0.5:
                    h = ef.matmul(h, weights(h.shape[1], width)) + weights(width)
                else:  # the weights stored the other way round
                    h = ef.matmul(h, weights(width, h.shape[1]), transpose_b=True) + weights(width)
                h = [ef.relu, ef.tanh, lambda t: ef.exp(-ef.square(t))][int(rng.integers(3))](h)
        g = ef.log(1.0 + ef.square(h)) / (1.0 + ef.square(scale)) - ef.maximum(h, -0.25) * scale
        g = -g
        width = h.shape[1]
        mixed = ef.transpose(ef.matmul(weights(width, 2), h, transpose_a=True, transpose_b=True))
        totals = ef.reduce_sum(g * h, axis=1, keepdims=True)
        means = ef.reduce_mean(ef.transpose(g), axis=(0,))
        flat = ef.reshape(g, (-1,))
        overall = ef.reduce_mean(flat) + ef.reduce_sum(totals)
    return graph, [g, mixed, totals, means, flat, overall]


@pytest.mark.parametrize("seed", range(4))
def test_numpy_source_on_hidden_networks(chapter, seed):
    graph, fetches = hidden_network(seed)
    rng = np.random.default_rng(seed + 100)
    feeds = [
        {"input/x": rng.uniform(-2, 2, (rows, 4)).astype(np.float32),
         "scale": np.float32(rng.uniform(0.5, 2))}
        for rows in (1, 3, 6)
    ]  # fmt: skip
    check_numpy_source(chapter, graph, fetches, feeds)


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # 0 · inf
def test_numpy_source_of_constants_that_are_not_finite(chapter):
    """inf and nan have no Python literal: repr writes them as names nobody defined."""
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (None, 3), name="x")
        floor = ef.constant([-np.inf, 0.5, np.nan], name="floor")
        y = ef.maximum(x, floor) + ef.constant(np.inf, ef.float32, name="infinity")
        z = ef.reduce_sum(x * ef.constant([[1.0, np.nan, -np.inf]], ef.float32), axis=1)
    rows = np.array([[1.0, -2.0, 0.0], [-1.0, 3.0, 2.0]], np.float32)
    check_numpy_source(chapter, graph, [y, z], [{"x": rows}])
