"""Limits on what an import reads, checked before anything is parsed deeper or allocated.

A file we load is untrusted, so its size is not: a GraphDef or SavedModel JSON file of more
than ``MAX_FILE_BYTES`` is refused before it is read; JSON nested deeper than ``MAX_DEPTH``
is refused (and so never reaches a recursive decoder); the variables of one def, the
arrays of one ``.npz`` values file or checkpoint, and the tensors of a TensorFlow GraphDef's
attributes may hold at most ``MAX_VARIABLE_BYTES`` together, counted from the shapes they
declare before any array is made (a variable of shape [1e6, 1e6] is refused, not
allocated); and a library function may not call itself, or
nest calls deeper than ``MAX_DEPTH`` (``import_graph_def`` checks this as it builds).

An ``.npz`` archive is read member by member after its headers were checked: each member's
name must be a plain key (no ``..`` part, no absolute path: a zip-slip for whoever unpacks
it), its ``.npy`` header a shape and dtype whose bytes fit the member's size and the limit.

Every refusal is an ``InvalidAttrError`` (an ``InvalidArgumentError``, so a ``ValueError``)
naming the file, the node or variable, and the attribute. The limits are module attributes:
set one (``limits.MAX_VARIABLE_BYTES = 2**34``) to trust bigger files.
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import zipfile
import zlib
from typing import Any

import numpy as np

from eagerflow.tensor.errors import InvalidAttrError

MAX_FILE_BYTES = 1 << 30  # a GraphDef or saved_model.json file: 1 GiB
MAX_DEPTH = 64  # JSON nesting, and library functions calling library functions
MAX_VARIABLE_BYTES = 1 << 32  # all variables of one def, values file or checkpoint: 4 GiB


def refuse(where: str, attr: str, why: str) -> InvalidAttrError:
    """The one error of a refused import: ``where`` names the file and the node."""
    return InvalidAttrError(f"{where}: {attr}: {why}", attr)


def read_json(path: str) -> Any:
    """The JSON document in ``path``, within ``MAX_FILE_BYTES`` and ``MAX_DEPTH``. NaN and
    Infinity are not JSON (ours never has them); a file that is not JSON is a ValueError for
    the caller to name (``json.JSONDecodeError`` or ``UnicodeDecodeError``)."""
    size = os.path.getsize(path)
    if size > MAX_FILE_BYTES:
        raise refuse(path, "size", f"{size} bytes, more than the limit MAX_FILE_BYTES "
                                   f"({MAX_FILE_BYTES})")  # fmt: skip

    def refuse_constant(word: str) -> Any:
        raise ValueError(f"{word} is not JSON")

    with open(path, encoding="utf-8") as f:
        try:
            data = json.load(f, parse_constant=refuse_constant)
        except RecursionError:  # the decoder recurses per level: stopped at Python's limit
            data = None
            deep = True
        else:
            deep = depth(data) > MAX_DEPTH
    if deep:
        raise refuse(path, "nesting", f"JSON nested deeper than the limit MAX_DEPTH ({MAX_DEPTH})")
    return data


def depth(data: Any) -> int:
    """How deeply lists and dicts nest in ``data`` (without recursion)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list) and item:
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:  # (deeper is refused anyway: stop counting)
                stack.extend((child, level + 1) for child in
                             (item.values() if isinstance(item, dict) else item))  # fmt: skip
    return deepest


def check_bytes(where: str, shape: tuple[int, ...], dtype: Any, total: int = 0) -> int:
    """``total`` plus the bytes of an array of ``shape`` and ``dtype``, within
    ``MAX_VARIABLE_BYTES`` (computed with Python integers: no overflow)."""
    total += math.prod(shape) * np.dtype(dtype).itemsize
    if total > MAX_VARIABLE_BYTES:
        raise refuse(where, "shape", f"{list(shape)} of {np.dtype(dtype)} takes the variables "
                     f"past the limit MAX_VARIABLE_BYTES ({MAX_VARIABLE_BYTES} bytes)")  # fmt: skip
    return total


def check_name(where: str, name: Any) -> str:
    """A key of a variable or archive member: a string with no ``..`` part and not absolute."""
    if not isinstance(name, str) or not name:
        raise refuse(where, "name", f"must be a non-empty string, got {name!r:.60}")
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or ".." in parts or re.match(r"[A-Za-z]:[\\/]", name):
        raise refuse(where, "name", f"{name!r} leaves its folder ('..' or an absolute path)")
    return name


def read_npz(path: str) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` archive ``path``, by key, read without pickle once every
    member's name and header passed (see the module docs). Every refusal is an
    ``InvalidAttrError``: a refused member, and a file that is not a readable archive of
    ``.npy`` arrays (a bad zip, an unknown compression method, an encrypted or corrupt
    member, a bad ``.npy`` header), whatever the zip or ``.npy`` reader raised for it. An
    ``OSError`` (a missing or unreadable file) is left to the caller."""
    try:
        _check_npz(path)
        with np.load(path, allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}
    except (InvalidAttrError, OSError):
        raise
    # what zipfile, zlib and numpy's .npy reader raise for bytes they cannot read
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, NotImplementedError,
            RuntimeError, zlib.error, struct.error) as e:  # fmt: skip
        raise refuse(path, "archive", f"not an .npz archive of .npy arrays: "
                     f"{type(e).__name__}: {e}") from None  # fmt: skip


def _check_npz(path: str) -> None:
    """Refuse a member whose name, ``.npy`` header or declared size is bad, before any array
    is made (``zipfile.BadZipFile`` and the like escape, for ``read_npz`` to name)."""
    with zipfile.ZipFile(path) as archive:
        total = 0
        for info in archive.infolist():
            where = f"{path}: member {info.filename!r}"
            key = check_name(where, info.filename.removesuffix(".npy"))
            with archive.open(info) as member:
                shape, dtype = _npy_header(member, where)
                total = check_bytes(f"{path}: variable {key!r}", shape, dtype, total)
                if math.prod(shape) * dtype.itemsize > info.file_size:
                    raise refuse(where, "shape", f"{list(shape)} of {dtype} is more than the "
                                 f"member's {info.file_size} bytes")  # fmt: skip


def _npy_header(member: Any, where: str) -> tuple[tuple[int, ...], np.dtype[Any]]:
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, _, dtype = np.lib.format.read_array_header_2_0(member)
    else:
        raise refuse(where, "header", f".npy format version {version} is not read")
    if dtype.hasobject:
        raise refuse(where, "dtype", "an object array (its bytes would be a pickle)")
    return tuple(shape), dtype


__all__ = ["MAX_DEPTH", "MAX_FILE_BYTES", "MAX_VARIABLE_BYTES", "check_bytes", "check_name",
           "depth", "read_json", "read_npz", "refuse"]  # fmt: skip
