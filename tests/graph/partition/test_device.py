"""``device()``: placement recorded on every node, merged as TensorFlow merges nested blocks,
printed, and kept in both GraphDefs."""

from __future__ import annotations

import json

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.graph import Graph, device, import_graph_def, placeholder, tf_graph_def
from eagerflow.graph.core.device import DeviceSpec, canonical_device, merge_device
from eagerflow.tensor.errors import InvalidArgumentError


@pytest.mark.parametrize(
    ("spec", "canonical"),
    [
        ("/job:worker/task:1", "/job:worker/task:1"),
        ("/job:worker/replica:0/task:1/device:CPU:0", "/job:worker/replica:0/task:1/device:CPU:0"),
        ("/cpu:0", "/device:CPU:0"),
        ("/device:GPU:1", "/device:GPU:1"),
        ("/job:ps/device:CPU:*", "/job:ps/device:CPU:*"),
        ("", ""),
    ],
)
def test_specs_parse_to_tensorflows_canonical_strings(spec: str, canonical: str) -> None:
    assert canonical_device(spec) == canonical


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("/job:worker/task:x", "task must be a number"),
        ("/job:worker/tsk:1", "unknown part 'tsk:1'"),
        ("/job:9w", "unknown part 'job:9w'"),
        ("/device:CPU:one", "a device index must be a number"),
    ],
)
def test_a_malformed_spec_is_a_clear_value_error(spec: str, words: str) -> None:
    with pytest.raises(ValueError, match=f"malformed device '{spec}'.*{words}"):
        DeviceSpec.from_string(spec)
    g = Graph()
    with g.as_default(), pytest.raises(ValueError, match="malformed device"), device(spec):
        pass  # pragma: no cover - refused on entry


def test_nested_blocks_merge_field_by_field_as_tensorflow_does() -> None:
    assert merge_device("/job:worker", "/task:1") == "/job:worker/task:1"
    assert merge_device("/job:worker/task:1", "/task:0") == "/job:worker/task:0"
    assert merge_device("/job:worker/task:1/device:GPU:0", "/cpu:0") == (
        "/job:worker/task:1/device:CPU:0"
    )
    assert merge_device("/job:worker/task:1", "") == "/job:worker/task:1"
    assert merge_device("/job:worker/task:1", None) == ""


def test_every_node_made_inside_records_its_device() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (2,), name="x")
        with device("/job:worker"):
            with device("/task:1") as placed:
                y = x * 2.0  # the captured constant 2.0 is placed too
                with device(None):
                    z = y + 1.0
            w = y - 1.0
    assert placed == "/job:worker/task:1"
    assert x.op.device == "" and z.op.device == ""
    assert y.op.device == "/job:worker/task:1"
    assert y.op.inputs[1].op.device == "/job:worker/task:1"
    assert w.op.device == "/job:worker"
    assert "device=/job:worker/task:1" in repr(y.op)
    assert "device" not in repr(x.op)
    assert repr(g) == "<Graph with 7 operations on /job:worker, /job:worker/task:1>"


def test_eager_mode_checks_the_spec_and_runs_here() -> None:
    with device("/job:worker/task:1") as placed:
        result = ef.constant([1.0, 2.0]) * 3.0
    assert placed == "/job:worker/task:1"
    np.testing.assert_array_equal(result.numpy(), [3.0, 6.0])
    with pytest.raises(ValueError, match="malformed device"), device("/task:-1"):
        pass  # pragma: no cover


def _placed_graph() -> tuple[Graph, ef.Tensor]:
    g = Graph()
    with g.as_default():
        with device("/job:worker/task:0"):
            x = placeholder(ef.float32, (2,), name="x")
        with device("/job:worker/replica:0/task:1/device:CPU:0"):
            y = ef.multiply(x, 2.0, name="y")
    return g, y


def test_devices_round_trip_through_eagerflows_graph_def() -> None:
    g, _ = _placed_graph()
    graph_def = json.loads(json.dumps(g.as_graph_def()))
    assert {n["name"]: n.get("device") for n in graph_def["node"]} == {
        "x": "/job:worker/task:0",
        "Const": "/job:worker/replica:0/task:1/device:CPU:0",
        "y": "/job:worker/replica:0/task:1/device:CPU:0",
    }
    h = Graph()
    with h.as_default():
        import_graph_def(graph_def, name="")
    assert [o.device for o in h.get_operations()] == [o.device for o in g.get_operations()]


def test_an_imported_malformed_device_names_the_node() -> None:
    g, _ = _placed_graph()
    graph_def = g.as_graph_def()
    graph_def["node"][0]["device"] = "/job:worker/task:zero"
    with Graph().as_default(), pytest.raises(InvalidArgumentError, match=r"node 'x'.*task:zero"):
        import_graph_def(graph_def)
    graph_def["node"][0]["device"] = 3
    with Graph().as_default(), pytest.raises(InvalidArgumentError, match="'device' must be"):
        import_graph_def(graph_def)


def test_devices_round_trip_through_tensorflows_node_def() -> None:
    pytest.importorskip("tensorboard.compat.proto.graph_pb2")
    g, y = _placed_graph()
    proto = tf_graph_def.to_proto(g, [y])
    devices = {n.name: n.device for n in proto.node}
    assert devices["x"] == "/job:worker/task:0"
    assert devices["y"] == "/job:worker/replica:0/task:1/device:CPU:0"
    h = Graph()
    with h.as_default():
        tf_graph_def.import_graph_def(proto, name="")
    assert h.get_operation_by_name("y").device == "/job:worker/replica:0/task:1/device:CPU:0"
