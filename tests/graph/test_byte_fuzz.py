"""Fuzzing the graph loaders with tampered bytes (``tests/byte_mutations.py``), where
``test_import_fuzz.py`` tampers with their JSON: a SavedModel's variables ``.npz`` ends in a
``SavedModelError`` or a model that computes what the original did; a TensorFlow ``.pb``
GraphDef (the ``tf-proto`` extra) in an eagerflow error (``TfGraphDefError``,
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


def _within_memory(load: Callable[[], Any]) -> Any:
    """``load()``, failing the test if it allocated more than ``MAX_ALLOCATED`` at its peak."""
    tracemalloc.start()
    try:
        return load()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < MAX_ALLOCATED, f"the load allocated {peak} bytes"


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


@pytest.mark.skipif(not HAS_TF_PROTO, reason="needs the tf-proto extra (tensorboard)")
@pytest.mark.timeout(60)
@FUZZ
@given(mutation=raw_mutation(PB_BYTES))
def test_a_tampered_tensorflow_graph_def_is_refused_or_runs(mutation: tuple[str, bytes]) -> None:
    from eagerflow.graph.export import tf_graph_def

    graph = Graph()
    try:
        with graph.as_default():
            outputs = _within_memory(lambda: tf_graph_def.import_graph_def(
                mutation[1], return_elements=["output_0:0"]))  # fmt: skip
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
