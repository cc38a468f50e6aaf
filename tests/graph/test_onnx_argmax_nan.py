"""ONNX export of ``argmax`` / ``argmin`` with NaN: ONNX Runtime agrees with eagerflow and with
TensorFlow's recorded result (TensorFlow skips NaN; ONNX's ArgMax alone would pick it)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import eagerflow.tensor as ef  # noqa: E402
from eagerflow.graph import TensorSpec, function  # noqa: E402
from eagerflow.graph import onnx as ef_onnx  # noqa: E402

RECORDED = Path(__file__).resolve().parents[1] / "conformance" / "tensorflow_results.json"
NAN = np.nan


@function(input_signature=[TensorSpec((None, 3), ef.float64)])
def _both(x):
    return ef.argmax(x, axis=1), ef.argmin(x, axis=1, output_type=ef.int32)


def _onnx_runs(fn, tmp_path, x: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(
        ef_onnx.export(fn, tmp_path / "arg.onnx"), providers=["CPUExecutionProvider"]
    )
    return session.run(None, {session.get_inputs()[0].name: x})


def test_nan_is_skipped_as_eagerflow_does(tmp_path) -> None:
    x = np.array([[1.0, NAN, 3.0], [NAN, -2.0, 5.0], [NAN, NAN, 4.0], [NAN, NAN, NAN]])
    theirs = _onnx_runs(_both, tmp_path, x)
    ours = [t.numpy() for t in _both(x)]
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(b, a)
        assert a.dtype == b.dtype
    np.testing.assert_array_equal(theirs[0], [2, 2, 2, 0])  # NaN never wins (all NaN: the first)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_agrees_with_tensorflow_recorded(op: str, tmp_path) -> None:
    recorded = json.loads(RECORDED.read_text("utf8"))["cases"][f"reduce/{op}/float32/nan"]

    @function(input_signature=[TensorSpec((3,), ef.float32)])
    def arg(x):
        return getattr(ef, op)(x, axis=0)

    (found,) = _onnx_runs(arg, tmp_path, np.array([1.0, NAN, 3.0], np.float32))
    assert found.item() == recorded["value"] and str(found.dtype) == recorded["dtype"]
