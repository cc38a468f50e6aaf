"""``CheckpointManager``: numbered checkpoints in one folder, the newest ``max_to_keep`` kept.

As TensorFlow's ``tf.train.CheckpointManager``, each ``save()`` writes ``{directory}/ckpt-{n}``
(through ``Checkpoint.save``) and records the checkpoints kept in a small text file,
``{directory}/checkpoint``, in TensorFlow's own format::

    model_checkpoint_path: "ckpt-3"
    all_model_checkpoint_paths: "ckpt-2"
    all_model_checkpoint_paths: "ckpt-3"

``latest_checkpoint(directory)`` reads that file. A crash at any point never leaves the file
naming a checkpoint that is not whole: the new checkpoint is written (atomically) first, then
the list (atomically), and only then are the checkpoints that fell off it deleted. A crash
between the last two steps leaves a file that no list names, and nothing reads.

The list is read as untrusted: an entry must be a plain file name (``ckpt-3``, no folder, no
``..``), so a doctored list cannot make a manager delete or load files outside its folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from eagerflow.graph.core.files import atomic_write
from eagerflow.nn.checkpoint import Checkpoint
from eagerflow.nn.checkpoint_file import CheckpointError

STATE = "checkpoint"  # the list's file name, as TensorFlow names it
_NAME = r'[^"/\\]+'  # a plain file name: no folder, no quote
_LINE = re.compile(rf'(model_checkpoint_path|all_model_checkpoint_paths): "({_NAME})"')
# TensorFlow's lists also hold times, which a manager here neither writes nor needs
_TIME = re.compile(r"(all_model_checkpoint_timestamps|last_preserved_timestamp): [0-9.e+-]+")
_MAX_STATE_BYTES = 1 << 20  # a list of checkpoint names: anything larger is not one


class CheckpointManager:
    """``CheckpointManager(checkpoint, directory, max_to_keep)``: ``save()`` writes the next
    numbered checkpoint and deletes the oldest beyond ``max_to_keep`` (``None``: keep all);
    ``checkpoints`` lists the kept ones, oldest first, ``latest_checkpoint`` the newest. A new
    manager for a folder that has a list carries on from it."""

    def __init__(
        self,
        checkpoint: Checkpoint,
        directory: str | os.PathLike[str],
        max_to_keep: int | None,
        checkpoint_name: str = "ckpt",
    ) -> None:
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"CheckpointManager: checkpoint must be a Checkpoint, got "
                            f"{type(checkpoint).__name__}")  # fmt: skip
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or max_to_keep < 1):
            raise ValueError(f"CheckpointManager: max_to_keep must be None or an int >= 1, "
                             f"got {max_to_keep!r}")  # fmt: skip
        if not re.fullmatch(_NAME, checkpoint_name) or checkpoint_name in (".", ".."):
            raise ValueError(f"CheckpointManager: checkpoint_name must be a plain file name, "
                             f"got {checkpoint_name!r}")  # fmt: skip
        self.checkpoint, self.max_to_keep = checkpoint, max_to_keep
        self.directory = Path(directory)
        self._prefix = self.directory / checkpoint_name
        self._names = [n for n in read_state(self.directory) if (self.directory / n).is_file()]

    @property
    def checkpoints(self) -> list[str]:
        """The paths of the checkpoints kept, oldest first."""
        return [str(self.directory / name) for name in self._names]

    @property
    def latest_checkpoint(self) -> str | None:
        """The path of the newest checkpoint, or None before the first ``save``."""
        return str(self.directory / self._names[-1]) if self._names else None

    def save(self, session: Any = None) -> str:
        """Write the next checkpoint, record it, delete those beyond ``max_to_keep``; returns
        its path. Its number follows both the checkpoint's ``save_counter`` and the newest in
        the list, so a restarted program never writes over a kept checkpoint."""
        newest = max((_number(n) for n in self._names), default=0)
        self.checkpoint.save_counter = max(self.checkpoint.save_counter, newest)
        path = Path(self.checkpoint.save(self._prefix, session=session))
        names = [n for n in self._names if n != path.name] + [path.name]
        keep = names if self.max_to_keep is None else names[-self.max_to_keep :]
        write_state(self.directory, keep)  # the list first: it never names a deleted file
        self._names = keep
        for name in names[: len(names) - len(keep)]:
            (self.directory / name).unlink(missing_ok=True)
        return str(path)


def latest_checkpoint(checkpoint_dir: str | os.PathLike[str]) -> str | None:
    """The path of the newest checkpoint a ``CheckpointManager`` recorded in
    ``checkpoint_dir``, or None if there is none (as ``tf.train.latest_checkpoint``)."""
    directory = Path(checkpoint_dir)
    names = read_state(directory, latest=True)
    if not names or not (directory / names[-1]).is_file():
        return None
    return str(directory / names[-1])


def _number(name: str) -> int:
    tail = name.rpartition("-")[2]
    return int(tail) if tail.isdigit() else 0


def read_state(directory: Path, latest: bool = False) -> list[str]:
    """The names in ``directory``'s list (oldest first; with ``latest``, the newest last
    whatever the list says of the others); [] when there is no list."""
    path = directory / STATE
    if not path.is_file():
        return []
    if path.stat().st_size > _MAX_STATE_BYTES:
        raise CheckpointError(f"{path} is not a checkpoint list: {path.stat().st_size} bytes")
    try:
        text = path.read_bytes().decode("utf8")
    except UnicodeDecodeError as e:  # a tampered or foreign file: not a list of names
        raise CheckpointError(f"{path} is not a checkpoint list: not UTF-8 text ({e})") from None
    newest, names = None, []
    for number, line in enumerate(text.splitlines(), 1):
        match = _LINE.fullmatch(line.strip())
        if match is None or match[2] in (".", ".."):
            if line.strip() and not _TIME.fullmatch(line.strip()):
                raise CheckpointError(f"{path}, line {number}: not a checkpoint list entry: "
                                      f"{line.strip()[:80]!r}")  # fmt: skip
            continue
        if match[1] == "model_checkpoint_path":
            newest = match[2]
        elif match[2] not in names:
            names.append(match[2])
    if newest is not None:
        names = [n for n in names if n != newest] + [newest]
    return names[-1:] if latest else names


def write_state(directory: Path, names: list[str]) -> None:
    """Write ``directory``'s list (atomically): ``names`` oldest first, the last the newest."""
    lines = [f'model_checkpoint_path: "{names[-1]}"']
    lines += [f'all_model_checkpoint_paths: "{name}"' for name in names]
    with atomic_write(directory / STATE, "w") as file:
        file.write("\n".join(lines) + "\n")


__all__ = ["STATE", "CheckpointManager", "latest_checkpoint", "read_state", "write_state"]
