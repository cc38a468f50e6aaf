"""What a summary becomes on disk: TensorFlow's ``Summary`` protocol buffers in an event file.

An *event file* is a sequence of ``Event`` protos, each framed as a TFRecord: the length
(8 bytes, little-endian), a masked CRC32C of the length, the bytes, a masked CRC32C of the
bytes. We do not write that framing ourselves: ``tensorboard`` ships TensorFlow's writer
(``tensorboard.summary.writer.event_file_writer.EventFileWriter``, which names the file
``events.out.tfevents.<time>.<host>...`` and writes from a background thread), and its
classes for the protos, so what TensorBoard reads is what TensorFlow's own code wrote.

Each kind of summary is a tensor with a *plugin name* in its metadata, as TensorFlow 2
writes them: ``scalars`` (a float scalar), ``histograms`` (a ``[k, 3]`` float64 tensor of
bucket ``[left, right, count]`` rows), ``images`` (a string vector: width, height, then one
PNG per image) and ``text`` (a string). TensorBoard's dashboards look for those names.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np

from eagerflow.graph.export.tf_graph_def import protos as pb

# the tensorboard package is the optional extra that ships these classes (protos() says so)
EXTRA = pb.EXTRA


def proto_module(name: str) -> Any:
    """A module of ``tensorboard.compat.proto`` (``summary_pb2``, ``event_pb2``), or an
    ``ImportError`` naming the extra that installs it."""
    try:
        import importlib

        return importlib.import_module(f"tensorboard.compat.proto.{name}")
    except ImportError:
        raise ImportError(
            "summaries are written with the tensorboard package's event writer and protocol "
            f'buffer classes: pip install "eagerflow-graph[{EXTRA}]"'
        ) from None


def _string_tensor(values: list[bytes], shape: tuple[int, ...]) -> Any:
    tensor = proto_module("tensor_pb2").TensorProto(dtype=proto_module("types_pb2").DT_STRING)
    tensor.string_val.extend(values)
    for size in shape:
        tensor.tensor_shape.dim.add(size=size)
    return tensor


def histogram_buckets(values: np.ndarray, buckets: int) -> np.ndarray:
    """``[k, 3]`` rows of ``[left, right, count]`` over ``buckets`` equal bins, as
    TensorBoard's histogram plugin reads them (no rows for no values; one bin of width 1
    around the value when all values are equal)."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    if flat.size == 0:
        return np.zeros((0, 3))
    low, high = float(flat.min()), float(flat.max())
    if low == high:
        return np.array([[low - 0.5, high + 0.5, float(flat.size)]])
    counts, edges = np.histogram(flat, bins=buckets, range=(low, high))
    return np.stack([edges[:-1], edges[1:], counts.astype(np.float64)], axis=1)


def png(image: np.ndarray) -> bytes:
    """The PNG file of an ``[h, w, c]`` uint8 image (c = 1 grey, 3 RGB, 4 RGBA): a signature,
    an ``IHDR`` chunk (size, 8 bits, colour type), the rows zlib-compressed, ``IEND``."""
    height, width, channels = image.shape
    colour = {1: 0, 3: 2, 4: 6}[channels]
    rows = b"".join(b"\x00" + image[y].tobytes() for y in range(height))  # filter 0: none

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, colour, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))  # fmt: skip


def _image_tensor(images: np.ndarray, max_outputs: int) -> Any:
    if images.dtype.kind == "f":  # floats are in [0, 1], as tf.summary.image takes them
        images = (np.clip(images, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)
    else:  # integers are 0..255 (uint8 came in as int32: eagerflow has no uint8)
        images = np.clip(images, 0, 255).astype(np.uint8)
    shown = images[:max_outputs]
    height, width = images.shape[1:3]
    encoded = [str(width).encode(), str(height).encode(), *(png(i) for i in shown)]
    return _string_tensor(encoded, (len(encoded),))


def summary_value(plugin: str, tag: str, data: np.ndarray, options: dict[str, Any]) -> Any:
    """One ``Summary.Value``: ``data`` as the plugin's tensor, its metadata naming the plugin."""
    summary_pb2 = proto_module("summary_pb2")
    if plugin == "scalars":
        tensor = pb.tensor_proto(np.asarray(data, dtype=np.float32))
    elif plugin == "histograms":
        tensor = pb.tensor_proto(histogram_buckets(data, options["buckets"]))
    elif plugin == "images":
        tensor = _image_tensor(data, options["max_outputs"])
    else:  # text: its UTF-8 bytes came in as an int32 vector (eagerflow has no strings)
        tensor = _string_tensor([np.asarray(data).astype(np.uint8).tobytes()], ())
    metadata = summary_pb2.SummaryMetadata(
        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name=plugin),
        summary_description=options.get("description", ""),
    )
    return summary_pb2.Summary.Value(tag=tag, tensor=tensor, metadata=metadata)


__all__ = ["EXTRA", "histogram_buckets", "png", "proto_module", "summary_value"]
