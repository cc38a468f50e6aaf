"""Writing a file or a folder whole or not at all, whenever the process stops.

Every file eagerflow writes (a GraphDef, an ONNX model, a checkpoint, a compiled loop's
source) goes through ``atomic_write``: the bytes go to a temporary file in the same folder,
are flushed to the disk (``fsync``), and ``os.replace`` then moves the file over the target
in one step. A reader sees the old file or the new one, never half of one, and a crash
midway leaves the old file as it was.

A folder (a SavedModel) goes through ``atomic_directory``: it is written whole into a
temporary sibling. A rename cannot replace a folder that has files, so the old folder is
renamed aside first, the new one renamed in, and the old one deleted. A crash between the
two renames leaves no folder at the path, only the complete old one aside: ``readable_path``
(what a loader opens) then names it, and the next save puts it back before it starts
(``recover_directory``) and deletes what a crash left half written. So at every step the
path, as a loader reads it, holds the complete old folder or the complete new one. Two saves
to the same path at the same time are not supported (as in TensorFlow).

Each file-system step is one call of ``_step``, so that a test can make any step fail, as a
crash there would (``tests/graph/test_crash_points.py`` does it for each step in turn).
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any, TypeVar

_T = TypeVar("_T")
# A folder's copies beside it, ".<name><kind><hex>": the old one set aside (complete), the new
# one being written, and an old one being deleted (never put back)
_OLD, _NEW, _TRASH = ".old-", ".tmp-", ".del-"
_COPY = re.compile(r"\.(.+)(\.old-|\.tmp-|\.del-)[0-9a-f]{12}", re.DOTALL)


def _step(name: str, action: Callable[..., _T], *args: Any) -> _T:
    """One file-system step, ``action(*args)``; ``name`` says which (for tests that inject a
    crash at each step in turn)."""
    return action(*args)


def _undo(name: str, action: Callable[..., Any], *args: Any) -> None:
    """A clean-up step after an error: one that fails too leaves its litter for
    ``recover_directory`` (a crash would), without hiding the first error."""
    with suppress(OSError):
        _step(name, action, *args)


def _fsync_folder(path: str) -> None:
    """Make the renames in a folder durable (where the OS lets a folder be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_file(file: IO[Any]) -> None:
    file.flush()
    os.fsync(file.fileno())


def _default_permissions(path: str) -> None:
    """The permissions a plain ``open`` would give (a temporary file is private)."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


@contextmanager
def atomic_write(path: str | os.PathLike[str], mode: str = "w") -> Iterator[IO[Any]]:
    """``with atomic_write(path) as f: f.write(...)``: ``path`` appears once the block ends
    without an error. ``mode`` is ``"w"`` (text, UTF-8) or ``"wb"``. The file gets the
    permissions a plain ``open`` would give it (a temporary file is private to its owner)."""
    target = os.fspath(path)
    directory = os.path.dirname(target) or "."
    handle, temporary = _step("create", tempfile.mkstemp, ".tmp",
                              f".{os.path.basename(target)}.", directory)  # fmt: skip
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(handle, mode, encoding=encoding) as file:
            yield file
            _step("fsync", _fsync_file, file)
        _step("chmod", _default_permissions, temporary)
        _step("replace", os.replace, temporary, target)
    except BaseException:
        if os.path.exists(temporary):
            _undo("delete temporary", os.unlink, temporary)
        raise
    _step("fsync folder", _fsync_folder, directory)


@contextmanager
def new_file(path: str, mode: str = "w") -> Iterator[IO[Any]]:
    """A file written inside an ``atomic_directory``'s staging folder, flushed to the disk
    when the block ends (the folder is renamed into place only after that)."""
    encoding = None if "b" in mode else "utf-8"
    with _step("create", open, path, mode, -1, encoding) as file:
        yield file
        _step("fsync", _fsync_file, file)


def make_folder(path: str) -> None:
    """``os.makedirs`` as a step (inside a staging folder)."""
    _step("mkdir", os.makedirs, path)


def _siblings(target: str, kind: str) -> list[str]:
    """The folder's copies of one kind beside it (``_OLD``, ``_NEW``, ``_TRASH``), newest
    first."""
    parent, base = os.path.split(target)
    matches = [(n, _COPY.fullmatch(n)) for n in os.listdir(parent)]
    found = [os.path.join(parent, n) for n, m in matches if m and m.groups() == (base, kind)]
    return sorted(found, key=lambda p: os.lstat(p).st_ctime_ns, reverse=True)


def readable_path(path: str | os.PathLike[str]) -> str:
    """What a loader should open for ``path``: the path itself, or, when a save crashed
    between its two renames, the complete old folder it left aside. Changes nothing."""
    target = os.path.abspath(os.fspath(path))
    if os.path.lexists(target) or not os.path.isdir(os.path.dirname(target)):
        return os.fspath(path)
    aside = _siblings(target, _OLD)
    return aside[0] if aside else os.fspath(path)


def recover_directory(path: str | os.PathLike[str]) -> None:
    """Undo what a crashed save left: a folder missing from ``path`` is put back from the
    copy set aside, and half-written or stale copies beside it are deleted."""
    target = os.path.abspath(os.fspath(path))
    if not os.path.isdir(os.path.dirname(target)):
        return
    aside = _siblings(target, _OLD)
    if aside and not os.path.lexists(target):
        _step("restore", os.rename, aside.pop(0), target)
    for stale in aside + _siblings(target, _NEW) + _siblings(target, _TRASH):
        _delete(stale, target)


def _delete(folder: str, target: str) -> None:
    """Delete a copy beside ``target``: renamed to a ``_TRASH`` name first, so that a crash
    while deleting never leaves half a folder under a name that ``readable_path`` opens. (A
    failure leaves it for the next ``recover_directory``.)"""
    trash = folder
    if folder[-12 - len(_TRASH) : -12] != _TRASH:  # (names end in 12 hex digits)
        trash = _new_sibling(target, _TRASH)
        _undo("rename to trash", os.rename, folder, trash)
    _undo("delete", shutil.rmtree, trash)


def _new_sibling(target: str, kind: str) -> str:
    """An unused name ``.<name><kind><hex>`` beside ``target``."""
    parent, base = os.path.split(target)
    while True:
        path = os.path.join(parent, f".{base}{kind}{secrets.token_hex(6)}")
        if not os.path.lexists(path):  # (48 random bits: taken only in theory)
            return path


@contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[str]:
    """``with atomic_directory(path) as staging:`` write the folder's files into ``staging``
    (with ``new_file``); when the block ends without an error the folder replaces ``path``
    (see the module docs). The caller has checked that ``path`` may be replaced."""
    target = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(target)
    _step("mkdir parent", os.makedirs, parent, 0o777, True)
    recover_directory(target)
    staging = _new_sibling(target, _NEW)
    _step("mkdir", os.mkdir, staging)  # the umask's permissions, as a plain folder gets
    try:
        yield staging
        _step("fsync staging", _fsync_folder, staging)
        _rename_into_place(staging, target)
    except BaseException:
        _undo("delete staging", shutil.rmtree, staging)
        raise
    _step("fsync folder", _fsync_folder, parent)


def _rename_into_place(staging: str, target: str) -> None:
    """``staging`` renamed to ``target``; an existing ``target`` is set aside first and
    deleted once the new one is in place."""
    if not os.path.lexists(target):
        _step("rename in", os.rename, staging, target)
        return
    aside = _new_sibling(target, _OLD)
    _step("set aside", os.rename, target, aside)
    try:
        _step("rename in", os.rename, staging, target)
    except BaseException:
        if not os.path.lexists(target):
            _undo("put back", os.rename, aside, target)  # (failing: recovered later)
        raise
    _step("fsync folder", _fsync_folder, os.path.dirname(target))
    _delete(aside, target)


__all__ = ["atomic_directory", "atomic_write", "make_folder", "new_file", "readable_path",
           "recover_directory"]  # fmt: skip
