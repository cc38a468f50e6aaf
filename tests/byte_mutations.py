"""Byte-level mutations of the files eagerflow loads, drawn by Hypothesis: the fuzz tests of
the ``.npz`` archives (SavedModel variables, checkpoints) and of TensorFlow ``.pb`` files
share them (``tests/graph/test_byte_fuzz.py``, ``tests/nn/test_checkpoint_fuzz.py``).

A mutation is ``(what, new_bytes)``; ``what`` says what was done, for the failure report.
Raw ones flip one bit, truncate, or insert bytes anywhere (most land in a zip's headers or a
protocol buffer's tags and lengths). Structural ones rewrite an ``.npz`` archive member by
member: a member renamed (``../``, another name, no ``.npy``), dropped or doubled, or its
``.npy`` replaced by an object array (a pickle), an array of another shape or dtype, a header
declaring a huge or negative shape with no data behind it, a header that is not one, or an
unknown compression method. No mutation ever needs ``allow_pickle``: the loaders must refuse
the object array without unpickling it.
"""

from __future__ import annotations

import io
import warnings
import zipfile
from collections.abc import Callable

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st


def examples(n: int) -> int:
    """``n`` examples, or the loaded profile's count when it asks for more (``explore``,
    tests/conftest.py): a test's own ``max_examples`` would otherwise always win."""
    return max(n, settings.default.max_examples if settings.default.max_examples > 100 else n)


def npy(array: np.ndarray) -> bytes:
    """The ``.npy`` bytes of ``array`` (an object array is written as NumPy does: a pickle)."""
    out = io.BytesIO()
    np.lib.format.write_array(out, array, allow_pickle=array.dtype.hasobject)
    return out.getvalue()


def header_only(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    """A ``.npy`` header declaring ``shape`` with 16 bytes of data behind it."""
    out = io.BytesIO()
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(out, header)
    return out.getvalue() + bytes(16)


def raw_header(text: bytes) -> bytes:
    """A ``.npy`` version 1.0 file whose header is ``text`` as it is (not a valid dict)."""
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text


# what a member's .npy bytes are replaced by
PAYLOADS: dict[str, bytes] = {
    "object array": npy(np.array([1, "a"], dtype=object)),
    "another shape": npy(np.zeros((7, 1), np.float32)),
    "a scalar": npy(np.float32(1.5)),
    "int64": npy(np.zeros(3, np.int64)),
    "strings": npy(np.array(["ab", "c"])),
    "a record": npy(np.zeros(2, [("a", "<f4")])),
    "big-endian": npy(np.zeros(2, ">f4")),
    "complex": npy(np.zeros(2, np.complex64)),
    "huge shape": header_only((10**6, 10**6)),
    "huger shape": header_only((2**62, 2**62, 2**62)),
    "negative shape": header_only((-1, 5)),
    "more than its bytes": header_only((8, 8)),
    "object header": header_only((2,), "|O"),
    "float shape": raw_header(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,)}\n"),
    "not a dict": raw_header(b"[1, 2, 3]\n"),
    "not python": raw_header(b"{'descr': <f4}\n"),
    "version 3": b"\x93NUMPY\x03\x00" + npy(np.zeros(2, np.float32))[8:],
    "not npy": b"junk",
    "empty": b"",
}


def rewrite(data: bytes, change: Callable[[zipfile.ZipInfo, bytes], list[tuple[str, bytes]]],
            compress_type: int | None = None) -> bytes:  # fmt: skip
    """The archive ``data`` rewritten member by member: ``change(info, body)`` gives the
    members (name, body) that replace it."""
    out = io.BytesIO()
    with (
        warnings.catch_warnings(),  # zipfile warns of a doubled name: the point here
        zipfile.ZipFile(io.BytesIO(data)) as old,
        zipfile.ZipFile(out, "w") as new,
    ):
        warnings.simplefilter("ignore", UserWarning)
        for info in old.infolist():
            for name, body in change(info, old.read(info)):
                new.writestr(name, body)
    if compress_type is not None:  # an unknown method: patched in the headers' bytes
        patched = bytearray(out.getvalue())
        for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
            start = patched.find(signature)
            patched[start + offset : start + offset + 2] = compress_type.to_bytes(2, "little")
        return bytes(patched)
    return out.getvalue()


@st.composite
def raw_mutation(draw: st.DrawFn, data: bytes) -> tuple[str, bytes]:
    """One bit flipped, the bytes cut short, or a few bytes inserted, anywhere."""
    kind = draw(st.sampled_from(["flip", "truncate", "insert"]))
    at = draw(st.integers(0, len(data) - 1))
    if kind == "flip":
        bit = draw(st.integers(0, 7))
        flipped = bytes([data[at] ^ 1 << bit])
        return f"flip bit {bit} of byte {at}", data[:at] + flipped + data[at + 1 :]
    if kind == "truncate":
        return f"truncate to {at} bytes", data[:at]
    extra = draw(st.binary(min_size=1, max_size=8))
    return f"insert {extra!r} at {at}", data[:at] + extra + data[at:]


@st.composite
def npz_mutation(draw: st.DrawFn, data: bytes) -> tuple[str, bytes]:
    """A raw mutation, a member renamed, dropped, doubled or replaced, or the whole file not
    an archive."""
    kind = draw(st.sampled_from(["raw", "raw", "member", "name", "file"]))
    if kind == "raw":
        return draw(raw_mutation(data))
    if kind == "file":
        return draw(st.sampled_from([("empty file", b""), ("text", b"not a zip file"),
                                     ("lone .npy", npy(np.zeros(2, np.float32)))]))  # fmt: skip
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    target = draw(st.sampled_from(names))
    if kind == "member":
        label = draw(st.sampled_from(sorted(PAYLOADS)))
        payload = PAYLOADS[label]
        return f"{target} is {label}", rewrite(
            data, lambda i, b: [(i.filename, payload if i.filename == target else b)]
        )
    how = draw(st.sampled_from(["../", "renamed", "no .npy", "dropped", "doubled", "compressed",
                                "folder"]))  # fmt: skip
    mine: dict[str, Callable[[str, bytes], list[tuple[str, bytes]]]] = {
        "../": lambda n, b: [("../" + n, b)],
        "renamed": lambda n, b: [(n.replace(".npy", "_x.npy"), b)],
        "no .npy": lambda n, b: [(n.removesuffix(".npy"), b)],
        "dropped": lambda n, b: [],
        "doubled": lambda n, b: [(n, b), (n, PAYLOADS["another shape"])],
        "compressed": lambda n, b: [(n, b)],
        "folder": lambda n, b: [(n, b), ("sub/", b"")],
    }
    method = 99 if how == "compressed" else None  # a compression method zipfile has not
    return f"{target} {how}", rewrite(
        data, lambda i, b: mine[how](i.filename, b) if i.filename == target else
        [(i.filename, b)], method)  # fmt: skip


__all__ = ["PAYLOADS", "examples", "header_only", "npy", "npz_mutation", "raw_mutation", "rewrite"]
