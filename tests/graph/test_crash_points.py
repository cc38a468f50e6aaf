"""A crash at any file-system step of a save leaves the complete old file or folder at the
path, or the complete new one, never neither; the next save then works and leaves nothing
else behind.

Every step goes through ``_step`` in ``eagerflow.graph.core.files``. A crash is that step
raising ``Crash``, and so does every step after it, as nothing more happens once a process
has died (so clean-up code after the crash does not tidy up for the test)."""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, TensorSpec, function, read_graph_def, saved_model, write_graph
from eagerflow.graph.core import files
from eagerflow.nn import Checkpoint


class Crash(BaseException):
    """The process stopping at a step (not an Exception: no ``except Exception`` sees it)."""


@contextmanager
def crash_at(step: int | None, seen: list[str]) -> Iterator[None]:
    """Steps from number ``step`` on fail (None: none does); ``seen`` gets every step's name."""
    real = files._step

    def stepping(name: str, action: Callable[..., Any], *args: Any) -> Any:
        seen.append(name)
        if step is not None and len(seen) > step:
            raise Crash(name)
        return real(name, action, *args)

    files._step = stepping  # type: ignore[assignment]
    try:
        yield
    finally:
        files._step = real  # type: ignore[assignment]


def each_crash_point(save_new: Callable[[], object]) -> Iterator[tuple[int, str]]:
    """Yield (k, name) for every step of ``save_new``, with step k crashing while the caller
    runs ``save_new`` (which must raise ``Crash``)."""
    names: list[str] = []
    with crash_at(None, names):
        save_new()
    assert names, "the save made no file-system step through files._step"
    yield from enumerate(names)


def _model(value: float) -> Any:
    w = Variable(np.full(3, value, np.float32))

    @function(input_signature=[TensorSpec((3,), ef.float32)])
    def predict(x: ef.Tensor) -> ef.Tensor:
        return x * w

    return predict


def _saved_value(path: Path) -> float | None:
    """The model's w at ``path`` as ``load`` reads it (None: no model there)."""
    try:
        loaded = saved_model.load(path)
    except FileNotFoundError:
        return None
    return float(loaded.predict(np.ones(3, np.float32)).numpy()[0])


def _only(path: Path) -> list[str]:
    return sorted(os.listdir(path.parent))


@pytest.mark.parametrize("had_one", [True, False], ids=["replacing", "first save"])
def test_a_saved_model_survives_a_crash_at_every_step(tmp_path: Path, had_one: bool) -> None:
    old, new, newer = _model(1.0), _model(2.0), _model(3.0)
    counted, probe = 0, tmp_path / "probe" / "m"
    if had_one:
        saved_model.save(old, probe)
    for k, name in each_crash_point(lambda: saved_model.save(new, probe)):
        path = tmp_path / f"crash{k}" / "m"
        if had_one:
            saved_model.save(old, path)
        with crash_at(k, []), pytest.raises(Crash):
            saved_model.save(new, path)
        found = _saved_value(path)
        assert found in ((1.0 if had_one else None), 2.0), f"crash at step {k} ({name})"
        saved_model.save(newer, path)  # recovers, then replaces
        assert _saved_value(path) == 3.0
        assert _only(path) == ["m"], f"litter after a crash at step {k} ({name})"
        counted += 1
    assert counted >= (14 if had_one else 10)  # every step of the save, each a crash point


def test_a_crash_while_recovering_is_recovered_later(tmp_path: Path) -> None:
    probe = tmp_path / "probe"
    saved_model.save(_model(1.0), probe)
    names: list[str] = []
    with crash_at(None, names):
        saved_model.save(_model(2.0), probe)
    rename_in = names.index("rename in")

    def crashed(path: Path) -> Path:
        """A save that stopped with the old model set aside and the new one not in place."""
        saved_model.save(_model(1.0), path)
        with crash_at(rename_in, []), pytest.raises(Crash):
            saved_model.save(_model(2.0), path)
        assert not path.exists() and _saved_value(path) == 1.0  # read from where it is aside
        return path

    steps: list[str] = []
    counted = crashed(tmp_path / "count" / "m")
    with crash_at(None, steps):
        files.recover_directory(counted)
    assert steps[0] == "restore"
    for k in range(len(steps)):  # a crash at each step of the recovery itself
        path = crashed(tmp_path / f"crash{k}" / "m")
        with crash_at(k, []), pytest.raises(Crash):
            files.recover_directory(path)
        assert _saved_value(path) == 1.0
        saved_model.save(_model(3.0), path)
        assert _saved_value(path) == 3.0 and _only(path) == ["m"]


def _checkpoint_value(path: Path) -> float:
    v = Variable(np.zeros(3, np.float32))
    Checkpoint(v=v).restore(path).assert_consumed()
    return float(v.numpy()[0])


def test_a_checkpoint_survives_a_crash_at_every_step(tmp_path: Path) -> None:
    def save(value: float, path: Path) -> object:
        return Checkpoint(v=Variable(np.full(3, value, np.float32))).write(path)

    save(1.0, tmp_path / "probe.ckpt")
    for k, name in each_crash_point(lambda: save(2.0, tmp_path / "probe.ckpt")):
        path = tmp_path / f"crash{k}.ckpt"
        save(1.0, path)
        with crash_at(k, []), pytest.raises(Crash):
            save(2.0, path)
        assert _checkpoint_value(path) in (1.0, 2.0), f"crash at step {k} ({name})"
        save(3.0, path)
        assert _checkpoint_value(path) == 3.0


def test_a_graph_def_file_survives_a_crash_at_every_step(tmp_path: Path) -> None:
    def graph(value: float) -> Graph:
        g = Graph()
        with g.as_default():
            ef.constant(value, name="c")
        return g

    def value_in(path: Path) -> float:
        (node,) = read_graph_def(path)["node"]
        return float(np.frombuffer(base64.b64decode(node["attr"]["value"]["tensor"]["base64"]),
                                   np.float32)[0])  # fmt: skip

    write_graph(graph(1.0), tmp_path, "probe.json")
    for k, name in each_crash_point(lambda: write_graph(graph(2.0), tmp_path, "probe.json")):
        write_graph(graph(1.0), tmp_path, f"crash{k}.json")
        with crash_at(k, []), pytest.raises(Crash):
            write_graph(graph(2.0), tmp_path, f"crash{k}.json")
        assert value_in(tmp_path / f"crash{k}.json") in (1.0, 2.0), f"crash at {k} ({name})"
        write_graph(graph(3.0), tmp_path, f"crash{k}.json")
        assert value_in(tmp_path / f"crash{k}.json") == 3.0
