"""``CheckpointManager`` and ``latest_checkpoint``: numbered checkpoints, the newest
``max_to_keep`` kept, a list in TensorFlow's format that never names a missing file (a crash
at any step included), and a list read as untrusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagerflow.autodiff import Variable
from eagerflow.nn import Checkpoint, CheckpointError, CheckpointManager, latest_checkpoint
from eagerflow.nn import checkpoint_manager as manager_module


def value_of(path: str) -> float:
    v = Variable(0.0)
    Checkpoint(v=v).restore(path).assert_consumed()
    return float(v.numpy())


def test_save_numbers_while_write_overwrites(tmp_path: Path) -> None:
    checkpoint = Checkpoint(v=Variable(1.0))
    assert checkpoint.save(tmp_path / "p") == str(tmp_path / "p-1")
    assert checkpoint.save(tmp_path / "p") == str(tmp_path / "p-2")
    assert checkpoint.save_counter == 2
    assert checkpoint.write(tmp_path / "w") == str(tmp_path / "w")
    assert checkpoint.write(tmp_path / "w") == str(tmp_path / "w")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p-1", "p-2", "w"]


def test_the_manager_keeps_the_newest(tmp_path: Path) -> None:
    v = Variable(0.0)
    manager = CheckpointManager(Checkpoint(v=v), tmp_path, max_to_keep=2)
    assert manager.latest_checkpoint is None and latest_checkpoint(tmp_path) is None
    for i in range(1, 5):
        v.assign(float(i))
        assert manager.save() == str(tmp_path / f"ckpt-{i}")
    assert manager.checkpoints == [str(tmp_path / "ckpt-3"), str(tmp_path / "ckpt-4")]
    assert manager.latest_checkpoint == latest_checkpoint(tmp_path) == str(tmp_path / "ckpt-4")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint", "ckpt-3", "ckpt-4"]
    assert value_of(latest_checkpoint(tmp_path)) == 4.0
    assert (tmp_path / "checkpoint").read_text().splitlines() == [
        'model_checkpoint_path: "ckpt-4"',
        'all_model_checkpoint_paths: "ckpt-3"',
        'all_model_checkpoint_paths: "ckpt-4"',
    ]


def test_a_new_manager_carries_on_and_never_overwrites(tmp_path: Path) -> None:
    CheckpointManager(Checkpoint(v=Variable(1.0)), tmp_path, max_to_keep=None).save()
    again = CheckpointManager(Checkpoint(v=Variable(2.0)), tmp_path, max_to_keep=None)
    assert again.checkpoints == [str(tmp_path / "ckpt-1")]
    assert again.save() == str(tmp_path / "ckpt-2")
    assert value_of(str(tmp_path / "ckpt-1")) == 1.0


@pytest.mark.parametrize("step", ["list", "delete"])
def test_a_crash_never_leaves_the_list_naming_a_missing_file(tmp_path, monkeypatch, step) -> None:
    v = Variable(1.0)
    manager = CheckpointManager(Checkpoint(v=v), tmp_path, max_to_keep=1)
    manager.save()

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    if step == "list":
        monkeypatch.setattr(manager_module, "write_state", crash)
    else:
        monkeypatch.setattr(Path, "unlink", crash)
    v.assign(2.0)
    with pytest.raises(KeyboardInterrupt):
        manager.save()
    monkeypatch.undo()
    latest = latest_checkpoint(tmp_path)
    assert latest is not None and Path(latest).is_file()
    assert value_of(latest) == (1.0 if step == "list" else 2.0)
    fresh = CheckpointManager(Checkpoint(v=Variable(3.0)), tmp_path, max_to_keep=1)
    assert all(Path(p).is_file() for p in fresh.checkpoints)
    # after the newest listed (an unlisted file a crash left is not a kept checkpoint)
    assert fresh.save() == str(tmp_path / ("ckpt-2" if step == "list" else "ckpt-3"))
    assert value_of(fresh.latest_checkpoint) == 3.0


@pytest.mark.parametrize(
    "line", ['model_checkpoint_path: "../outside"', 'model_checkpoint_path: "/etc/passwd"', "junk"]
)
def test_a_list_naming_files_elsewhere_is_refused(tmp_path: Path, line: str) -> None:
    (tmp_path / "checkpoint").write_text(line + "\n")
    with pytest.raises(CheckpointError, match="not a checkpoint list entry"):
        latest_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="line 1"):
        CheckpointManager(Checkpoint(v=Variable(1.0)), tmp_path, max_to_keep=1)


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="must be a Checkpoint"):
        CheckpointManager(Variable(1.0), tmp_path, 1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_to_keep"):
        CheckpointManager(Checkpoint(v=Variable(1.0)), tmp_path, 0)
    with pytest.raises(ValueError, match="checkpoint_name"):
        CheckpointManager(Checkpoint(v=Variable(1.0)), tmp_path, 1, checkpoint_name="a/b")


def test_a_list_tensorflow_wrote_is_read(tmp_path: Path) -> None:
    Checkpoint(v=Variable(5.0)).write(tmp_path / "ckpt-7")
    (tmp_path / "checkpoint").write_text(
        'model_checkpoint_path: "ckpt-7"\n'
        'all_model_checkpoint_paths: "ckpt-7"\n'
        "all_model_checkpoint_timestamps: 1795875220.8700595\n"
        "last_preserved_timestamp: 1795875219.8346605\n"
    )
    assert latest_checkpoint(tmp_path) == str(tmp_path / "ckpt-7")
    manager = CheckpointManager(Checkpoint(v=Variable(1.0)), tmp_path, max_to_keep=3)
    assert manager.save() == str(tmp_path / "ckpt-8")
