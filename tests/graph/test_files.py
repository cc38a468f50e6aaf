"""atomic_write: a file appears whole or not at all, with a plain file's permissions."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eagerflow.graph.core.files import atomic_write


def test_the_file_appears_only_when_the_block_ends(tmp_path: Path) -> None:
    target = tmp_path / "model.json"
    with atomic_write(target) as f:
        f.write("{}")
        assert not target.exists()
    assert target.read_text() == "{}"
    assert [p.name for p in tmp_path.iterdir()] == ["model.json"]


def test_a_failure_midway_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "model.onnx"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(target, "wb") as f:
        f.write(b"new, half")
        raise RuntimeError("crash")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["model.onnx"]


def test_the_file_is_readable_as_a_plain_open_would_make_it(tmp_path: Path) -> None:
    """A temporary file is private to its owner (0600): a site serving an exported model
    must be able to read it."""
    umask = os.umask(0o022)
    try:
        with atomic_write(tmp_path / "a.onnx", "wb") as f:
            f.write(b"x")
    finally:
        os.umask(umask)
    assert (tmp_path / "a.onnx").stat().st_mode & 0o777 == 0o644
