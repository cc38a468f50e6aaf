"""Chapter 10 exercises: why graphs, a graph is data (`exercises/ch10.py`)."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.graph import Function, saved_model
from eagerflow.graph import graph_def as chapter_format
from eagerflow.tensor.dtypes import DType

pytestmark = pytest.mark.ch10


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


def round_trip(chapter: Any, value: Any) -> Any:
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
