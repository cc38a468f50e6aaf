"""TensorBoard summaries (``eagerflow.graph.summary``), read back by TensorBoard's own reader.

Each test writes an event file with our writer and reads it with
``tensorboard.backend.event_processing.event_accumulator.EventAccumulator``, the code
TensorBoard's server uses: scalars, histograms, images, text and the graph, eagerly and from
inside a traced ``function`` (where the write must happen at every call, not at tracing).
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorboard.compat.proto.event_pb2")

from tensorboard.backend.event_processing.event_accumulator import (
    EventAccumulator,
)
from tensorboard.util import tensor_util

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import TensorSpec, function, summary
from eagerflow.graph.export.summary.records import histogram_buckets, png


def read(logdir: Path) -> EventAccumulator:
    accumulator = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    accumulator.Reload()
    return accumulator


def values(accumulator: EventAccumulator, tag: str) -> list[tuple[int, np.ndarray]]:
    return [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in accumulator.Tensors(tag)]


def test_eager_scalars_histograms_images_and_text_read_back(tmp_path: Path) -> None:
    writer = summary.create_file_writer(tmp_path)
    pixels = np.random.default_rng(0).random((2, 4, 5, 3)).astype(np.float32)
    with writer.as_default():
        for step in range(3):
            assert summary.scalar("loss", 1.0 / (step + 1), step=step)
        assert summary.histogram("w", ef.constant([0.0, 1.0, 1.0, 3.0]), step=2, buckets=3)
        assert summary.image("pictures", pixels, step=0, max_outputs=1)
        assert summary.text("note", "héllo *world*", step=1)
    writer.close()
    events = read(tmp_path)
    assert [(s, float(v)) for s, v in values(events, "loss")] == [
        (0, 1.0),
        (1, 0.5),
        (2, float(np.float32(1 / 3))),
    ]
    ((step, buckets),) = values(events, "w")
    assert step == 2 and buckets.tolist() == [[0, 1, 1], [1, 2, 2], [2, 3, 1]]
    ((_, image),) = values(events, "pictures")
    assert image[:2].tolist() == [b"5", b"4"] and len(image) == 3  # width, height, 1 PNG
    ((_, note),) = values(events, "note")
    assert note.item().decode() == "héllo *world*"
    metadata = events.SummaryMetadata("pictures")
    assert metadata.plugin_data.plugin_name == "images"


def test_the_png_decodes_to_the_pixels() -> None:
    image = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    data = png(image)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    idat = data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8]
    rows = zlib.decompress(idat)
    assert rows == b"".join(b"\x00" + image[y].tobytes() for y in range(2))


def test_histogram_buckets_of_equal_and_no_values() -> None:
    assert histogram_buckets(np.array([2.0, 2.0]), 30).tolist() == [[1.5, 2.5, 2.0]]
    assert histogram_buckets(np.array([]), 30).shape == (0, 3)


def test_inside_a_function_the_summary_writes_at_every_call(tmp_path: Path) -> None:
    writer = summary.create_file_writer(tmp_path)
    step = Variable(0, dtype=ef.int64)
    traced = []

    @function(input_signature=[TensorSpec((), ef.float32)])
    def train_step(x):  # type: ignore[no-untyped-def]
        traced.append(1)
        summary.scalar("x", x * 2.0, step=step)
        step.assign_add(1)
        return x

    with writer.as_default():
        for value in (1.0, 2.0, 3.0):
            train_step(ef.constant(value))
    writer.close()
    assert len(traced) == 1  # traced once, written three times with each run's value and step
    assert [(s, float(v)) for s, v in values(read(tmp_path), "x")] == [(0, 2), (1, 4), (2, 6)]


def test_no_default_writer_writes_nothing_and_no_step_is_an_error(tmp_path: Path) -> None:
    assert summary.scalar("loss", 1.0, step=0) is False
    writer = summary.create_file_writer(tmp_path)
    with writer.as_default(), pytest.raises(ValueError, match="'loss': no step"):
        summary.scalar("loss", 1.0)
    with writer.as_default(step=7):
        assert summary.experimental.get_step() == 7
        summary.scalar("loss", 1.0)
    assert summary.experimental.get_step() is None
    writer.close()
    assert [s for s, _ in values(read(tmp_path), "loss")] == [7]
    with pytest.raises(ValueError, match="closed"), writer.as_default():
        summary.scalar("loss", 1.0, step=1)


def test_bad_data_is_a_clear_error(tmp_path: Path) -> None:
    writer = summary.create_file_writer(tmp_path)
    with writer.as_default():
        with pytest.raises(ValueError, match=r"'loss': data must be a scalar, got shape \(2,\)"):
            summary.scalar("loss", [1.0, 2.0], step=0)
        with pytest.raises(ef.errors.InvalidArgumentError, match=r"WriteSummary: image 'im'"):
            summary.image("im", np.zeros((4, 4)), step=0)
        with pytest.raises(TypeError, match="must be a str"):
            summary.text("t", 3, step=0)  # type: ignore[arg-type]
    writer.close()


def test_trace_export_writes_the_graph_tensorboard_draws(tmp_path: Path) -> None:
    w = Variable(np.ones((3, 2), np.float32))

    @function(input_signature=[TensorSpec((None, 3), ef.float32)])
    def model(x):  # type: ignore[no-untyped-def]
        return ef.nn.relu(ef.matmul(x, w))

    writer = summary.create_file_writer(tmp_path)
    summary.trace_on(graph=True)
    model(ef.ones((1, 3)))
    with writer.as_default():
        assert summary.trace_export("model", step=0)
        assert not summary.trace_export("model", step=0)  # tracing stopped: nothing recorded
    writer.close()
    ops = {node.op for node in read(tmp_path).Graph().node}
    assert {"Placeholder", "MatMul", "Relu", "Const", "Identity"} <= ops  # TensorFlow's GraphDef


def test_a_graph_with_ops_tensorflow_lacks_is_drawn_with_our_op_names(tmp_path: Path) -> None:
    v = Variable(1.0)

    @function
    def step(x):  # type: ignore[no-untyped-def]
        v.assign_add(x)
        return v.read_value()

    writer = summary.create_file_writer(tmp_path)
    summary.trace_on()
    step(ef.constant(2.0))
    with writer.as_default():
        summary.trace_export("step", step=0)
    writer.close()
    ops = {node.op for node in read(tmp_path).Graph().node}
    assert {"AssignAddVariableOp", "ReadVariableOp"} <= ops  # the whole trace, effects too


def test_without_tensorboard_the_error_names_the_extra(monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    for module in [m for m in sys.modules if m.startswith("tensorboard")]:
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    with pytest.raises(ImportError, match=r"eagerflow-graph\[tf-proto\]"):
        summary.create_file_writer(tmp_path)
