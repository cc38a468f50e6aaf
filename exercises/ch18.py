"""Chapter 18 exercises — run `.venv/bin/pytest -m ch18`.

TensorFlow's ecosystem: the bytes of a TensorBoard event file. The CRC-32C checksum that
guards each record, the TFRecord frame around each event, and (a stretch) a whole event file
written by hand that TensorBoard's own reader accepts.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch18`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch18.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

import struct
import time
from collections.abc import Callable, Sequence


def crc32c(data: bytes) -> int:
    """★★ The CRC-32C checksum of ``data`` (Castagnoli's polynomial), as TFRecords use it.

    A CRC is the remainder of a polynomial division over bits. Computed one bit at a time,
    with the *reflected* polynomial ``0x82F63B78``: start with ``crc = 0xFFFFFFFF``; for each
    byte, ``crc ^= byte``, then 8 times: if the lowest bit of ``crc`` is 1, ``crc = (crc >>
    1) ^ 0x82F63B78``, else ``crc >>= 1``; at the end return ``crc ^ 0xFFFFFFFF``. (zlib's
    ``crc32`` is the same with another polynomial, ``0xEDB88320``: it gives other numbers.)

    The test checks your checksum against TensorBoard's on hidden byte strings; ``b"123456789"``
    gives ``0xE3069283``.

    Args:
        data: The bytes.

    Returns:
        The checksum, an int in ``[0, 2**32)``.

    Hint 1:
        Two loops: one over the bytes, one of 8 steps over the bits of the running ``crc``.

    Hint 2:
        ``crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1``.
    """
    raise NotImplementedError


def frame_record(data: bytes, crc: Callable[[bytes], int]) -> bytes:
    """★★ One TFRecord: ``data`` framed as TensorFlow writes every event of an event file.

    The frame is, all little-endian: the length of ``data`` as 8 bytes (``uint64``), the
    *masked* CRC-32C of those 8 bytes (4 bytes), ``data`` itself, the masked CRC-32C of
    ``data`` (4 bytes). Masking rotates the checksum right by 15 bits and adds a constant,
    modulo 2**32: ``((c >> 15) | (c << 17)) + 0xA282EAD8``, so that a CRC of bytes that hold
    a CRC is not a special value.

    ``crc`` is a CRC-32C function (the test passes a correct one, so this exercise does not
    depend on the first). The test frames hidden data and compares your bytes with what
    TensorBoard's own ``RecordWriter`` writes.

    Args:
        data: The record's bytes (an ``Event`` protocol buffer, serialized).
        crc: The CRC-32C of some bytes, an int.

    Returns:
        ``len(data) + 16`` bytes.

    Hint 1:
        ``struct.pack("<Q", n)`` is 8 little-endian bytes; ``struct.pack("<I", m)`` is 4.

    Hint 2:
        Keep the masked value within 32 bits: ``& 0xFFFFFFFF`` after the shift left and after
        the addition.
    """
    raise NotImplementedError


def scalar_event_file(path: str, tag: str, values: Sequence[float]) -> None:
    """★★★ Write, by hand, an event file that TensorBoard reads: ``values[i]`` as the scalar
    ``tag`` at step ``i``.

    An event file is TFRecords (``frame_record``), each holding one ``Event`` protocol
    buffer (``tensorboard.compat.proto.event_pb2.Event``; its ``SerializeToString()`` is the
    record's data):

    1. first an event with ``file_version="brain.Event:2"`` (the reader checks the format);
    2. then one event per value, with ``wall_time`` (seconds, ``time.time()``), ``step`` and a
       ``summary`` holding one value: ``Summary(value=[Summary.Value(tag=tag,
       simple_value=v)])`` (``summary_pb2``; ``simple_value`` is the older form of a scalar,
       which TensorBoard still reads).

    Use your ``frame_record`` and ``crc32c``. The test reads your file with TensorBoard's
    ``EventAccumulator`` and finds the hidden values at steps 0, 1, 2...

    Args:
        path: The file to write (its name must contain ``tfevents`` for TensorBoard to find
            it in a folder; the test picks it).
        tag: The scalar's name, e.g. ``"loss"``.
        values: One float per step.

    Hint 1:
        ``from tensorboard.compat.proto import event_pb2, summary_pb2``.

    Hint 2:
        ``event_pb2.Event(wall_time=time.time(), step=i, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag=tag, simple_value=v)]))``.

    Hint 3:
        Open the file with ``open(path, "wb")`` and write ``frame_record(event.
        SerializeToString(), crc32c)`` for the version event and then for each value.
    """
    raise NotImplementedError
