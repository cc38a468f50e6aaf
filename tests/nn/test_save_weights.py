"""``Model.save_weights`` / ``load_weights``: a model's variables keyed by their paths, in an
atomically written checkpoint file; a file that does not fit is refused and changes nothing."""

from __future__ import annotations

import numpy as np
import pytest

from eagerflow import nn
from eagerflow.graph import Graph, Session, global_variables_initializer, placeholder
from eagerflow.nn import CheckpointError

X = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)


def model(units: int = 4) -> nn.Sequential:
    m = nn.Sequential([nn.Dense(units, activation="relu"), nn.Dense(2)])
    m(X)
    return m


def values(m: nn.Model) -> list[np.ndarray]:
    return [np.array(v.numpy()) for v in m.variables]


def test_a_round_trip_restores_every_value(tmp_path) -> None:
    saved, fresh = model(), model()
    path = tmp_path / "w.npz"
    assert saved.save_weights(path) == str(path)
    assert sorted(np.load(path).files)[0] == "__eagerflow_checkpoint__"
    assert not all(np.array_equal(a, b) for a, b in zip(values(fresh), values(saved), strict=True))
    fresh.load_weights(path)
    for a, b in zip(values(fresh), values(saved), strict=True):
        assert np.array_equal(a, b)
    assert np.array_equal(fresh(X).numpy(), saved(X).numpy())


def test_a_mismatched_shape_is_refused_and_changes_nothing(tmp_path) -> None:
    path = tmp_path / "w.npz"
    model(units=4).save_weights(path)
    other = model(units=5)
    before = values(other)
    with pytest.raises(CheckpointError, match=r"layers/0/kernel.*\(3, 4\).*\(3, 5\)"):
        other.load_weights(path)
    for a, b in zip(values(other), before, strict=True):
        assert np.array_equal(a, b)


def test_missing_or_extra_variables_are_refused(tmp_path) -> None:
    path = tmp_path / "w.npz"
    model().save_weights(path)
    deeper = nn.Sequential([nn.Dense(4), nn.Dense(2), nn.Dense(1)])
    deeper(X)
    with pytest.raises(CheckpointError, match="layers/2/kernel"):
        deeper.load_weights(path)
    with pytest.raises(CheckpointError, match="build the model"):
        nn.Sequential([nn.Dense(4), nn.Dense(2)]).load_weights(path)


def test_a_file_that_is_not_a_checkpoint_is_refused(tmp_path) -> None:
    path = tmp_path / "w.npz"
    path.write_bytes(b"not a zip")
    with pytest.raises(CheckpointError, match="not an eagerflow checkpoint"):
        model().load_weights(path)


def test_a_crash_in_the_middle_leaves_the_old_file(tmp_path, monkeypatch) -> None:
    path = tmp_path / "w.npz"
    saved = model()
    saved.save_weights(path)
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        model().save_weights(path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["w.npz"]


def test_graph_variables_go_through_a_session(tmp_path) -> None:
    path = tmp_path / "w.npz"
    eager = model()
    eager.save_weights(path)
    graph = Graph()
    with graph.as_default():
        m = nn.Sequential([nn.Dense(4, activation="relu"), nn.Dense(2)])
        x = placeholder("float32", (None, 3))
        y = m(x)
        init = global_variables_initializer()
    with Session(graph=graph) as session:
        session.run(init)
        m.load_weights(path, session=session)
        assert np.allclose(session.run(y, {x: X}), eager(X).numpy())
        m.save_weights(tmp_path / "again.npz", session=session)
    again = model()
    again.load_weights(tmp_path / "again.npz")
    assert np.array_equal(again(X).numpy(), eager(X).numpy())
