"""``WriteSummary``: the op that writes one summary when it *runs*.

Like ``print`` (``PrintV2``), a summary is an op, not a Python call, so that inside a traced
``function`` it writes every time the function runs, with that run's values and step, and
not once while Python traces. It is *stateful* (its effect is the point: a graph never
folds, merges or drops it, and a traced function runs it in program order), has no outputs
and no gradient. Its inputs are the step (an int64 scalar) and the data; the writer (by
its name: a graph stays plain data, as TensorFlow's names a writer resource), the tag and
the kind of summary (the TensorBoard plugin that draws it) are attributes, fixed when the
op is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.autodiff.registry import not_differentiable
from eagerflow.graph.export.summary.records import proto_module, summary_value
from eagerflow.graph.export.summary.writer import OPEN_WRITERS
from eagerflow.tensor.errors import InvalidArgumentError
from eagerflow.tensor.registry import Attrs, op
from eagerflow.tensor.schema import Instance, Int, OneOf

PLUGINS = ("scalars", "histograms", "images", "text")

SUMMARY_ATTRS = {
    "writer": Instance(str, "a summary writer's name"),
    "tag": Instance(str, "a string"),
    "plugin": OneOf(*PLUGINS),
    "description": Instance(str, "a string"),
    "buckets": Int(min=1),
    "max_outputs": Int(min=1),
}


def _no_outputs(inputs: Sequence[Any], attrs: Attrs) -> list[Any]:
    return []


@op("WriteSummary", shape=_no_outputs, dtype=_no_outputs, attrs=SUMMARY_ATTRS,
    multi_output=True, stateful=True)  # fmt: skip
def write_summary_kernel(
    step: np.ndarray, data: np.ndarray, *, writer: str, tag: str, plugin: str,
    description: str, buckets: int, max_outputs: int,
) -> tuple[()]:  # fmt: skip
    """Write ``data`` as a ``plugin`` summary named ``tag`` at ``step`` to the writer named
    ``writer`` (one of ``summary.scalar``, ``histogram``, ``image``, ``text``)."""
    target = OPEN_WRITERS.get(writer)
    if target is None:
        raise InvalidArgumentError(f"WriteSummary {tag!r}: the writer {writer!r} is closed")
    if plugin == "images" and (data.ndim != 4 or data.shape[-1] not in (1, 3, 4)):
        raise InvalidArgumentError(
            f"WriteSummary: image {tag!r} must be [k, h, w, c] with c in 1, 3, 4, "
            f"got shape {data.shape}"
        )
    options = {"buckets": buckets, "max_outputs": max_outputs, "description": description}
    value = summary_value(plugin, tag, data, options)
    target.write_event(step=int(step), summary=proto_module("summary_pb2").Summary(value=[value]))
    return ()


not_differentiable("WriteSummary")

__all__ = ["PLUGINS", "SUMMARY_ATTRS", "write_summary_kernel"]
