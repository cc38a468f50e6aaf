"""``Saver``: TensorFlow 1's saver of a Session's variables, keyed by variable name; numbered
saves kept up to ``max_to_keep`` and listed for ``latest_checkpoint``; all-or-nothing restores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, Session, global_variables_initializer, name_scope
from eagerflow.nn import CheckpointError, Saver, latest_checkpoint


def build(scale: float = 1.0, size: int = 2):
    graph = Graph()
    with graph.as_default():
        with name_scope("layer"):
            w = Variable(np.full(size, scale, np.float32), name="w")
        step = Variable(np.int64(0), name="step", trainable=False)
        bump = [w.assign(w * 2.0, read_value=False), step.assign_add(1, read_value=False)]
        init = global_variables_initializer()
    return graph, w, step, bump, init


def test_save_and_restore_by_name(tmp_path: Path) -> None:
    graph, _, step, bump, init = build()
    with graph.as_default():
        saver = Saver()
    assert sorted(saver.var_list) == ["layer/w", "step"]
    with Session(graph=graph) as session:
        session.run(init)
        session.run(bump)
        path = saver.save(session, tmp_path / "model", global_step=step)
    assert path == str(tmp_path / "model-1") == latest_checkpoint(tmp_path)
    graph2, w2, step2, _, init2 = build(scale=7.0)  # the same code: the same names
    with graph2.as_default():
        saver2 = Saver()
    with Session(graph=graph2) as session:
        session.run(init2)
        saver2.restore(session, latest_checkpoint(tmp_path))
        np.testing.assert_array_equal(session.run(w2), [2.0, 2.0])
        assert session.run(step2) == 1


def test_max_to_keep_deletes_the_oldest(tmp_path: Path) -> None:
    graph, _, _, _, init = build()
    with graph.as_default():
        saver = Saver(max_to_keep=2)
    with Session(graph=graph) as session:
        session.run(init)
        for i in range(4):
            saver.save(session, tmp_path / "m", global_step=i)
    assert saver.last_checkpoints == [str(tmp_path / "m-2"), str(tmp_path / "m-3")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "m-2", "m-3"]
    assert latest_checkpoint(tmp_path) == str(tmp_path / "m-3")


def test_a_file_that_does_not_fit_changes_nothing(tmp_path: Path) -> None:
    graph, _, _, _, init = build()
    with graph.as_default():
        saver = Saver()
    with Session(graph=graph) as session:
        session.run(init)
        path = saver.save(session, tmp_path / "m")
    graph2, w2, _, _, init2 = build(scale=3.0, size=3)
    with graph2.as_default():
        saver2 = Saver()
    with Session(graph=graph2) as session:
        session.run(init2)
        with pytest.raises(CheckpointError, match=r"layer/w.*\(2,\).*\(3,\)"):
            saver2.restore(session, path)
        np.testing.assert_array_equal(session.run(w2), [3.0, 3.0, 3.0])
    with Graph().as_default():
        other = Saver({"else": Variable(1.0)})
    with pytest.raises(CheckpointError, match="no value for"):
        other.restore(None, path)


def test_bad_arguments_are_refused() -> None:
    with Graph().as_default():
        with pytest.raises(ValueError, match="no variables"):
            Saver()
        v = Variable(1.0, name="v")
        with pytest.raises(TypeError, match="not a Variable"):
            Saver({"v": ef.constant(1.0)})  # type: ignore[dict-item]
        with pytest.raises(ValueError, match="same name"):
            Saver([v, v])
        with pytest.raises(ValueError, match="max_to_keep"):
            Saver(max_to_keep=0)
