"""Fuzzing the checkpoint loaders with tampered bytes (``tests/byte_mutations.py``):
``Checkpoint.restore``, ``Model.load_weights``, ``Saver.restore`` and the list file that
``CheckpointManager`` and ``latest_checkpoint`` read. Each mutation ends in the one
``CheckpointError`` or a correct restore, never another exception, a hang or a huge
allocation; and a refused file changes no variable (every value is checked before any is
assigned). Hypothesis draws the mutations, derandomized on CI (``tests/conftest.py``)."""

from __future__ import annotations

import tempfile
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from byte_mutations import PAYLOADS, examples, npz_mutation, raw_mutation, rewrite
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, Session, global_variables_initializer
from eagerflow.graph.export.limits import read_npz
from eagerflow.nn import Checkpoint, CheckpointError, CheckpointManager, Saver, latest_checkpoint

X = np.ones((2, 3), np.float32)
MAX_ALLOCATED = 1 << 22  # bytes a load of these small files may allocate at its peak (4 MiB)
FUZZ = settings(max_examples=examples(60), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip


def _trained() -> tuple[nn.Sequential, Checkpoint]:
    """A built one-layer model after one Adam step: kernel, bias, their slots, powers."""
    model = nn.Sequential([nn.Dense(2)])
    model(X)
    optimizer = nn.AdamOptimizer(0.01)
    optimizer.minimize(lambda: ef.reduce_sum(ef.square(model(X))),
                       var_list=model.trainable_variables)  # fmt: skip
    return model, Checkpoint(model=model, optimizer=optimizer)


MODEL, CHECKPOINT = _trained()
SAVED = {key: np.array(v.numpy()) for key, v in CHECKPOINT.variables().items()}
with tempfile.TemporaryDirectory() as _folder:
    CHECKPOINT_BYTES = Path(CHECKPOINT.write(Path(_folder) / "ckpt")).read_bytes()
    WEIGHTS_BYTES = Path(MODEL.save_weights(Path(_folder) / "w.npz")).read_bytes()


def _values(variables: dict[str, Any]) -> dict[str, np.ndarray]:
    return {key: np.array(v.numpy()) for key, v in variables.items()}


def _perturbed() -> dict[str, np.ndarray]:
    """Give every variable a value unlike its saved one; returns those values."""
    for key, variable in CHECKPOINT.variables().items():
        variable.assign(SAVED[key] + np.ones_like(SAVED[key]))
    return _values(CHECKPOINT.variables())


def _load(load: Callable[[], Any]) -> bool:
    """Run ``load``: True if it loaded, False if it refused with a ``CheckpointError``;
    anything else fails the test, as does an allocation past ``MAX_ALLOCATED``."""
    tracemalloc.start()
    try:
        load()
    except CheckpointError:
        return False
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < MAX_ALLOCATED, f"the load allocated {peak} bytes"
    return True


def _each_from_file_or_before(before: dict[str, np.ndarray], path: Path | None) -> None:
    """A refused file (``path`` None) changed nothing; a restored one gave each variable the
    file's value for its key, or left it (a key the mutation renamed: ``expect_partial``)."""
    in_file = {} if path is None else read_npz(str(path))
    for key, value in _values(CHECKPOINT.variables()).items():
        if key in in_file and not np.array_equal(value, before[key]):
            assert np.array_equal(value, in_file[key]), key
        else:
            assert np.array_equal(value, before[key]), f"{key} changed by a refused restore"


@pytest.mark.timeout(60)
@FUZZ
@given(mutation=npz_mutation(CHECKPOINT_BYTES))
def test_a_tampered_checkpoint_is_refused_or_restored(
    tmp_path: Path, mutation: tuple[str, bytes]
) -> None:
    path = tmp_path / "ckpt"
    path.write_bytes(mutation[1])
    before = _perturbed()
    loaded = _load(lambda: CHECKPOINT.restore(path).expect_partial())
    _each_from_file_or_before(before, path if loaded else None)


@pytest.mark.timeout(60)
@FUZZ
@given(mutation=npz_mutation(WEIGHTS_BYTES))
def test_tampered_weights_are_refused_or_loaded(
    tmp_path: Path, mutation: tuple[str, bytes]
) -> None:
    path = tmp_path / "w.npz"
    path.write_bytes(mutation[1])
    before = _perturbed()
    loaded = _load(lambda: MODEL.load_weights(path))
    after, in_file = _values(CHECKPOINT.variables()), read_npz(str(path)) if loaded else {}
    for key in MODEL_KEYS:  # load_weights: all of the model's variables, or none
        expected = in_file[key.removeprefix("model/")] if loaded else before[key]
        assert np.array_equal(after[key], expected), key


MODEL_KEYS = [key for key in SAVED if key.startswith("model/")]


def _graph_with_saver() -> tuple[Graph, Saver, list[Variable], Any]:
    graph = Graph()
    with graph.as_default():
        w = Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
        step = Variable(np.int64(7), name="step", trainable=False)
        init = global_variables_initializer()
    return graph, Saver([w, step]), [w, step], init


GRAPH, SAVER, SAVER_VARIABLES, INIT = _graph_with_saver()
with tempfile.TemporaryDirectory() as _folder, Session(graph=GRAPH) as _session:
    _session.run(INIT)
    SAVER_VALUES = _session.run(SAVER_VARIABLES)
    SAVER_BYTES = Path(SAVER.save(_session, Path(_folder) / "model")).read_bytes()


@pytest.mark.timeout(60)
@FUZZ
@given(mutation=npz_mutation(SAVER_BYTES))
def test_a_tampered_saver_file_is_refused_or_restored(
    tmp_path: Path, mutation: tuple[str, bytes]
) -> None:
    path = tmp_path / "model"
    path.write_bytes(mutation[1])
    with Session(graph=GRAPH) as session:
        session.run(INIT)
        with GRAPH.as_default():
            session.run([v.assign(v * 2) for v in SAVER_VARIABLES])
        before = session.run(SAVER_VARIABLES)
        loaded = _load(lambda: SAVER.restore(session, path))
        in_file = read_npz(str(path)) if loaded else {}
        for name, value, old in zip(SAVER.var_list, session.run(SAVER_VARIABLES), before,
                                    strict=True):  # fmt: skip
            assert np.array_equal(value, in_file[name] if loaded else old), name


STATE = b'model_checkpoint_path: "ckpt-2"\nall_model_checkpoint_paths: "ckpt-1"\n' \
        b'all_model_checkpoint_paths: "ckpt-2"\nlast_preserved_timestamp: 1.5e9\n'  # fmt: skip
DOCTORED_STATES = [b'model_checkpoint_path: "../ckpt-1"\n', b'model_checkpoint_path: "/etc/x"\n',
                   b'model_checkpoint_path: "a\x00b"\n', b"\xff\xfe\x00\x00", b"\x00" * 64,
                   b'model_checkpoint_path: "ckpt-1\n', b"all_model_checkpoint_paths: ckpt-1\n",
                   STATE * 20000]  # fmt: skip


@pytest.mark.timeout(60)
@settings(FUZZ, max_examples=examples(40))
@given(state=st.one_of(raw_mutation(STATE), st.sampled_from(DOCTORED_STATES).map(
    lambda s: ("doctored", s))))  # fmt: skip
def test_a_tampered_checkpoint_list_is_refused_or_read(
    tmp_path: Path, state: tuple[str, bytes]
) -> None:
    """The list may name only files in its folder: whatever it says, a manager's ``save``
    deletes nothing outside (``outside`` stays), and a name it gives is in the folder."""
    folder, outside = tmp_path / "run", tmp_path / "ckpt-1"
    folder.mkdir(exist_ok=True)
    outside.write_bytes(CHECKPOINT_BYTES)
    for name in ("ckpt-1", "ckpt-2"):
        (folder / name).write_bytes(CHECKPOINT_BYTES)
    (folder / "checkpoint").write_bytes(state[1])

    def use_the_list() -> None:
        latest = latest_checkpoint(folder)
        assert latest is None or Path(latest).parent == folder
        manager = CheckpointManager(CHECKPOINT, folder, max_to_keep=1)
        manager.save()
        assert all(Path(p).parent == folder for p in manager.checkpoints)

    _load(use_the_list)
    assert outside.is_file()


def test_a_checkpoint_list_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    """What the fuzzing found: a list with a byte that is not UTF-8 escaped as a
    UnicodeDecodeError from ``latest_checkpoint`` and ``CheckpointManager``."""
    (tmp_path / "checkpoint").write_bytes(b'model_checkpoint_path: "ckpt-\xe3"\n')
    with pytest.raises(CheckpointError, match="not a checkpoint list: not UTF-8"):
        latest_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="not a checkpoint list: not UTF-8"):
        CheckpointManager(CHECKPOINT, tmp_path, max_to_keep=1)


@pytest.mark.parametrize("load", ["restore", "load_weights"])
def test_an_unknown_compression_method_is_refused(tmp_path: Path, load: str) -> None:
    """What the fuzzing found: a member compressed by a method zipfile does not know escaped
    as a NotImplementedError, where a CheckpointError belongs."""
    data = CHECKPOINT_BYTES if load == "restore" else WEIGHTS_BYTES
    path = tmp_path / "ckpt"
    path.write_bytes(rewrite(data, lambda i, b: [(i.filename, b)], compress_type=99))
    before = _perturbed()
    with pytest.raises(CheckpointError, match=r"not an \.npz archive.*NotImplementedError"):
        CHECKPOINT.restore(path) if load == "restore" else MODEL.load_weights(path)
    _each_from_file_or_before(before, None)


@pytest.mark.parametrize("load", ["restore", "load_weights"])
def test_an_object_array_is_refused_without_unpickling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, load: str
) -> None:
    """An object array's bytes are a pickle: refused from its header, pickle never called."""
    import pickle

    def no(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("pickle was used")

    monkeypatch.setattr(pickle, "load", no)
    monkeypatch.setattr(pickle, "loads", no)
    data = CHECKPOINT_BYTES if load == "restore" else WEIGHTS_BYTES
    path = tmp_path / "ckpt"
    path.write_bytes(rewrite(data, lambda i, b: [(i.filename, PAYLOADS["object array"]
                                                  if "kernel" in i.filename else b)]))  # fmt: skip
    before = _perturbed()
    with pytest.raises(CheckpointError, match="dtype: an object array"):
        CHECKPOINT.restore(path) if load == "restore" else MODEL.load_weights(path)
    _each_from_file_or_before(before, None)
