"""Fuzzing the graph loaders with tampered bytes (``tests/byte_mutations.py``), where
``test_import_fuzz.py`` tampers with their JSON: a SavedModel's variables ``.npz`` ends in a
``SavedModelError`` or a model that computes what the original did; a TensorFlow ``.pb``
GraphDef (the ``tf-proto`` extra), its bytes or one field of a node changed (a splat of a
huge shape, a dtype, a tensor's bytes, an attribute's kind, an input, an op), in an eagerflow
error (``TfGraphDefError``,
``UnknownTfOpError``, or ``import_graph_def``'s own) or a graph that runs. Never another
exception, a hang or a huge allocation. Derandomized on CI (``tests/conftest.py``)."""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from byte_mutations import examples, npz_mutation, raw_mutation, rewrite
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, Session, TensorSpec, function, saved_model
from eagerflow.graph.export.saved_model import SavedModelError
from eagerflow.tensor.errors import EagerflowError

X = np.ones((2, 3), np.float32)
MAX_ALLOCATED = 1 << 22  # bytes a load of these small files may allocate at its peak (4 MiB)
FUZZ = settings(max_examples=examples(60), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
W = Variable(np.array([1.0, -2.0, 3.0], np.float32), name="w")


@function(input_signature=[TensorSpec((None, 3), ef.float32)])
def predict(x: ef.Tensor) -> ef.Tensor:
    return ef.reduce_sum(ef.nn.softmax(x * W, axis=1), axis=0)


EXPECTED = predict(X).numpy()


def _within_memory(load: Callable[[], Any], most: int = MAX_ALLOCATED) -> Any:
    """``load()``, failing the test if it allocated ``most`` bytes or more at its peak."""
    tracemalloc.start()
    try:
        return load()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < most, f"the load allocated {peak} bytes"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bytes") / "m"
    saved_model.save(predict, path)
    return path


def _values_file(export: Path) -> Path:
    (found,) = export.rglob("*.npz")
    return found


with tempfile.TemporaryDirectory() as _folder:
    saved_model.save(predict, Path(_folder) / "m")
    VALUES_BYTES = _values_file(Path(_folder) / "m").read_bytes()


@pytest.mark.timeout(60)
@FUZZ
@given(mutation=npz_mutation(VALUES_BYTES))
def test_tampered_saved_model_variables_are_refused_or_load(
    exported: Path, tmp_path: Path, mutation: tuple[str, bytes]
) -> None:
    target = tmp_path / "m"  # (one copy for all the examples: only its values change)
    if not target.exists():
        shutil.copytree(exported, target)
    _values_file(target).write_bytes(mutation[1])
    try:
        loaded = _within_memory(lambda: saved_model.load(target))
    except SavedModelError:
        return  # the loader's one refusal
    np.testing.assert_array_equal(loaded.predict(X).numpy(), EXPECTED)


HAS_TF_PROTO = importlib.util.find_spec("tensorboard") is not None


def _tf_graph_def_bytes() -> bytes:
    if not HAS_TF_PROTO:
        return b"\x00"
    from eagerflow.graph.export import tf_graph_def

    return bytes(tf_graph_def.to_proto(predict).SerializeToString(deterministic=True))


PB_BYTES = _tf_graph_def_bytes()


SIZES = [0, 1, 3, 2**9, 2**18, 2**31, 2**62]  # a dimension a tampered shape may declare


def _tamper(node: Any, how: str, draw: st.DrawFn) -> str:
    """Change one field of ``node`` (a NodeDef) in place, as ``how`` says; says what it did."""
    tensors = [a.tensor for a in node.attr.values() if a.WhichOneof("value") == "tensor"]
    if how == "sizes" and tensors:  # one value declared for a shape of any size: a splat
        sizes = draw(st.lists(st.sampled_from(SIZES), min_size=1, max_size=3))
        tensors[0].tensor_shape.Clear()
        for size in sizes:
            tensors[0].tensor_shape.dim.add(size=size)
        tensors[0].ClearField("tensor_content")
        tensors[0].double_val.append(1.0)
        tensors[0].float_val.append(1.0)
        return f"{node.name}: a splat of shape {sizes}"
    if how == "dtype":
        enum = draw(st.integers(0, 30))
        for attr in node.attr.values():
            if attr.WhichOneof("value") == "type":
                attr.type = enum
        for tensor in tensors:
            tensor.dtype = enum
        return f"{node.name}: dtype {enum}"
    if how == "content" and tensors:
        cut = draw(st.integers(-3, 3))
        tensors[0].tensor_content = tensors[0].tensor_content[:cut] if cut < 0 else (
            tensors[0].tensor_content + bytes(cut))  # fmt: skip
        return f"{node.name}: content {cut:+d} bytes"
    if how == "attr kind" and node.attr:
        key = draw(st.sampled_from(sorted(node.attr)))
        node.attr[key].s = b"x"  # (a oneof: the old value goes)
        return f"{node.name}: attribute {key} a string"
    if how == "input":
        node.input.append(draw(st.sampled_from([node.name, "nowhere:0", "x:7", "^x"])))
        return f"{node.name}: input {node.input[-1]}"
    node.op = draw(st.sampled_from(["NoSuchOp", "Relu", "Const", "Placeholder", "MatMul"]))
    return f"{node.name}: op {node.op}"


@st.composite
def proto_mutation(draw: st.DrawFn) -> tuple[str, bytes]:
    """One field of one node of the GraphDef changed, as a tool that writes protocol buffers
    (and not bytes at random) would: shapes, dtypes, contents, attributes, inputs, ops."""
    from eagerflow.graph.export.tf_graph_def.protos import protos

    graph_def = protos().GraphDef.FromString(PB_BYTES)
    how = draw(st.sampled_from(["sizes", "sizes", "dtype", "content", "attr kind", "input", "op"]))
    nodes = list(graph_def.node)
    if how in ("sizes", "content"):  # the nodes with a tensor: constants
        nodes = [n for n in nodes if any(a.HasField("tensor") for a in n.attr.values())]
    what = _tamper(draw(st.sampled_from(nodes)), how, draw)
    return what, graph_def.SerializeToString()


@pytest.mark.skipif(not HAS_TF_PROTO, reason="needs the tf-proto extra (tensorboard)")
@pytest.mark.timeout(60)
@FUZZ
@given(mutation=st.one_of(raw_mutation(PB_BYTES), proto_mutation()))
def test_a_tampered_tensorflow_graph_def_is_refused_or_runs(
    monkeypatch: pytest.MonkeyPatch, mutation: tuple[str, bytes]
) -> None:
    from eagerflow.graph.export import limits, tf_graph_def

    monkeypatch.setattr(limits, "MAX_VARIABLE_BYTES", 1 << 16)  # small: a splat must be refused
    graph = Graph()
    try:
        with graph.as_default():
            outputs = _within_memory(lambda: tf_graph_def.import_graph_def(
                mutation[1], return_elements=["output_0:0"]), 1 << 19)  # fmt: skip
    except EagerflowError:
        return  # TfGraphDefError, UnknownTfOpError, or import_graph_def's and the ops' own
    # it loaded: it runs, or an op refuses; a placeholder it reshaped refuses our feed
    feeds = {op.outputs[0]: X for op in graph.get_operations() if op.type == "Placeholder"}
    with Session(graph=graph) as session:  # (a renamed placeholder is fed by its new name)
        try:
            session.run(outputs, feeds)
        except EagerflowError:
            pass
        except ValueError as e:
            assert str(e).startswith("Cannot feed value"), e


def test_a_values_file_compressed_by_an_unknown_method_is_refused(
    exported: Path, tmp_path: Path
) -> None:
    """Pinned with the fuzzing's finding in the checkpoint loaders (the same ``read_npz``): an
    unknown compression method is the loader's refusal, not zipfile's NotImplementedError
    (the SavedModel loader used to catch every exception to get there)."""
    target = tmp_path / "m"
    shutil.copytree(exported, target)
    values = _values_file(target)
    values.write_bytes(rewrite(values.read_bytes(), lambda i, b: [(i.filename, b)], 99))
    with pytest.raises(SavedModelError, match=r"not an \.npz archive.*NotImplementedError"):
        saved_model.load(target)


@pytest.mark.skipif(not HAS_TF_PROTO, reason="needs the tf-proto extra (tensorboard)")
def test_splat_constants_past_the_byte_limit_are_refused_before_they_are_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``Const`` whose one value fills its whole shape is a few bytes in the file, however
    big the tensor: the bytes all constants declare are counted against ``limits.
    MAX_VARIABLE_BYTES`` before any is made (each one alone was under its element limit, and
    so were ten of them, which made 10 x 2 GiB of float64 from a file of 300 bytes)."""
    from eagerflow.graph.export import limits
    from eagerflow.graph.export.tf_graph_def import TfGraphDefError, import_graph_def
    from eagerflow.graph.export.tf_graph_def.protos import protos, tensor_proto

    graph_def = protos().GraphDef()
    for i in range(3):
        node = graph_def.node.add(name=f"c{i}", op="Const")
        value = tensor_proto(np.zeros((), np.float64))
        value.tensor_shape.Clear()  # one value, declared for a [1000, 100] tensor: 800 kB
        value.tensor_shape.dim.add(size=1000)
        value.tensor_shape.dim.add(size=100)
        value.ClearField("tensor_content")
        value.double_val.append(1.0)
        node.attr["value"].tensor.CopyFrom(value)
        node.attr["dtype"].type = value.dtype
    monkeypatch.setattr(limits, "MAX_VARIABLE_BYTES", 2_000_000)
    with Graph().as_default(), pytest.raises(TfGraphDefError, match=r"node 'c2' \(Const\)"):
        _within_memory(lambda: import_graph_def(graph_def.SerializeToString()))
    monkeypatch.setattr(limits, "MAX_VARIABLE_BYTES", 3_000_000)
    with Graph().as_default():
        import_graph_def(graph_def.SerializeToString())  # under the limit: read
