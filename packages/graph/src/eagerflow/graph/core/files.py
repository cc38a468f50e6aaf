"""Writing a file whole or not at all.

Every file eagerflow writes (a GraphDef, an ONNX model, a checkpoint, a compiled loop's
source) goes through ``atomic_write``: the bytes go to a temporary file in the same folder,
which ``os.replace`` then moves over the target in one step. A reader sees the old file or
the new one, never half of one, and a crash midway leaves the old file as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """``with atomic_write(path) as f: f.write(...)``: ``path`` appears once the block ends
    without an error. ``mode`` is ``"w"`` (text, UTF-8) or ``"wb"``. The file gets the
    permissions a plain ``open`` would give it (a temporary file is private to its owner)."""
    target = os.fspath(path)
    directory = os.path.dirname(target) or "."
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(target)}.",
                                         suffix=".tmp")  # fmt: skip
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(handle, mode, encoding=encoding) as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


__all__ = ["atomic_write"]
