"""Chapter 18 exercises: TensorFlow's ecosystem (`exercises/ch18.py`).

Each answer is checked against TensorBoard's own code: its CRC-32C, its ``RecordWriter`` and
its ``EventAccumulator``, the reader TensorBoard's server uses.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

pytestmark = pytest.mark.ch18

pytest.importorskip("tensorboard.compat.proto.event_pb2")

from tensorboard.backend.event_processing.event_accumulator import (  # noqa: E402
    EventAccumulator,
)
from tensorboard.compat.tensorflow_stub import pywrap_tensorflow  # noqa: E402
from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402


def hidden_bytes(seed: int) -> list[bytes]:
    rng = np.random.default_rng(seed)
    sizes = [0, 1, 7, 8, 9, 255, 256, 1000]
    return [rng.integers(0, 256, size, dtype=np.uint8).tobytes() for size in sizes]


def reference_crc(data: bytes) -> int:
    return int(pywrap_tensorflow.crc32c(data))


# --- crc32c ---------------------------------------------------------------------------------------
def test_crc32c_of_the_check_string(chapter) -> None:  # type: ignore[no-untyped-def]
    assert chapter.crc32c(b"123456789") == 0xE3069283


@pytest.mark.parametrize("seed", [18, 1812])
def test_crc32c_on_hidden_bytes(chapter, seed) -> None:  # type: ignore[no-untyped-def]
    for data in hidden_bytes(seed):
        expected = reference_crc(data)
        assert chapter.crc32c(data) == expected, f"crc32c of {len(data)} bytes: want {expected:#x}"


# --- frame_record ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [4, 40])
def test_frame_record_matches_tensorboards_record_writer(chapter, seed) -> None:  # type: ignore[no-untyped-def]
    for data in hidden_bytes(seed):
        buffer = io.BytesIO()
        RecordWriter(buffer).write(data)
        got = chapter.frame_record(data, reference_crc)
        assert isinstance(got, bytes) and len(got) == len(data) + 16, "8 + 4 + data + 4 bytes"
        assert got[:8] == buffer.getvalue()[:8], "the length: 8 bytes, little-endian"
        assert got[8:12] == buffer.getvalue()[8:12], "the masked CRC-32C of the 8 length bytes"
        assert got == buffer.getvalue(), "the masked CRC-32C of the data comes last"


# --- scalar_event_file ----------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [7, 77])
def test_scalar_event_file_is_read_by_tensorboard(chapter, tmp_path, seed) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    values = [float(v) for v in rng.normal(size=int(rng.integers(3, 9))).astype(np.float32)]
    tag = f"hidden_{seed}"
    path = tmp_path / "events.out.tfevents.0.hand"
    chapter.scalar_event_file(str(path), tag, values)
    events = EventAccumulator(str(path))
    events.Reload()
    assert events.file_version == 2.0, "the first event says file_version='brain.Event:2'"
    assert tag in events.Tags()["scalars"], f"no scalar {tag!r}: {events.Tags()}"
    read = [(e.step, e.value) for e in events.Scalars(tag)]
    assert read == list(enumerate(values)), "value i at step i"
