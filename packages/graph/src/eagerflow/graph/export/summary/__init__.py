"""``eagerflow.graph.summary``: TensorBoard summaries with TensorFlow's names (``tf.summary``).

::

    writer = summary.create_file_writer("logs/run1")
    with writer.as_default():
        for step in range(100):
            loss = train_step(x, y)
            summary.scalar("loss", loss, step=step)

writes an *event file* in ``logs/run1`` that ``tensorboard --logdir logs`` draws. Each
summary is one ``WriteSummary`` op through the execute seam (``ops.py``): eagerly it writes
now; inside a ``function`` it becomes a stateful node that writes every time the function
runs. ``scalar``, ``histogram``, ``image`` and ``text`` differ only in how the data is kept
(``records.py``: the tensor and plugin name TensorBoard's dashboards read).

``trace_on(graph=True)`` records the graph of the next traced function that runs, and
``trace_export(name, step)`` writes it to the default writer as a ``GraphDef`` for
TensorBoard's graph dashboard: TensorFlow's own GraphDef (``tf_graph_def``), frozen, when
every op has a TensorFlow counterpart; else each node with its eagerflow op name and inputs.

The event files and their protocol buffers come from the ``tensorboard`` package, the
optional extra ``pip install "eagerflow-graph[tf-proto]"``: without it, making a writer is
an ``ImportError`` that says so.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np

from eagerflow.graph.export.summary.graph import trace_export, trace_off, trace_on
from eagerflow.graph.export.summary.ops import PLUGINS
from eagerflow.graph.export.summary.writer import (
    SummaryWriter,
    create_file_writer,
    default_writer,
    get_step,
    set_step,
)
from eagerflow.tensor import dtypes
from eagerflow.tensor.execution import execute
from eagerflow.tensor.tensor import Tensor, convert_to_tensor

DEFAULT_BUCKETS = 30  # tf.summary.histogram's default


def _write(plugin: str, name: str, data: Any, step: Any, description: str | None,
           buckets: int = DEFAULT_BUCKETS, max_outputs: int = 3) -> bool:  # fmt: skip
    """One ``WriteSummary`` op, or ``False`` when there is no default writer (as TF)."""
    assert plugin in PLUGINS
    writer = default_writer()
    if writer is None:
        return False
    step = get_step() if step is None else step
    if step is None:
        raise ValueError(
            f"summary {name!r}: no step: pass step= or call summary.experimental.set_step(step)"
        )
    attrs = {"writer": writer.name, "tag": str(name), "plugin": plugin,
             "description": description or "", "buckets": int(buckets),
             "max_outputs": int(max_outputs)}  # fmt: skip
    execute("WriteSummary", (convert_to_tensor(step, dtypes.int64), data), attrs, None)
    return True


def scalar(name: str, data: Any, step: Any = None, description: str | None = None) -> bool:
    """Write a scalar (a loss, an accuracy) for the scalars dashboard."""
    tensor = convert_to_tensor(data)
    if len(tensor.shape) != 0:
        raise ValueError(
            f"summary.scalar {name!r}: data must be a scalar, got shape {tensor.shape}"
        )
    return _write("scalars", name, tensor, step, description)


def histogram(name: str, data: Any, step: Any = None, buckets: int | None = None,
              description: str | None = None) -> bool:  # fmt: skip
    """Write the distribution of ``data``'s values (``buckets`` equal bins, 30 by default)
    for the histograms and distributions dashboards."""
    return _write("histograms", name, convert_to_tensor(data), step, description,
                  buckets=buckets or DEFAULT_BUCKETS)  # fmt: skip


def image(name: str, data: Any, step: Any = None, max_outputs: int = 3,
          description: str | None = None) -> bool:  # fmt: skip
    """Write up to ``max_outputs`` images of a ``[k, h, w, c]`` batch (floats in [0, 1], or
    uint8), ``c`` 1, 3 or 4, as PNGs for the images dashboard."""
    pixels = np.asarray(data) if not isinstance(data, Tensor) else data
    if isinstance(pixels, np.ndarray) and pixels.dtype == np.uint8:
        pixels = pixels.astype(np.int32)  # eagerflow has no uint8: the kernel turns it back
    return _write("images", name, convert_to_tensor(pixels), step, description,
                  max_outputs=max_outputs)  # fmt: skip


def text(name: str, data: str, step: Any = None, description: str | None = None) -> bool:
    """Write a string (Markdown, as TensorBoard's text dashboard shows it). eagerflow has no
    string tensors, so the text is a Python ``str``, kept as its UTF-8 bytes (an int32 vector
    of them: eagerflow has no uint8 either)."""
    if not isinstance(data, str):
        raise TypeError(f"summary.text {name!r}: data must be a str, got {type(data).__name__}")
    encoded = np.frombuffer(data.encode("utf-8"), dtype=np.uint8).astype(np.int32)
    return _write("text", name, convert_to_tensor(encoded), step, description)


# tf.summary.experimental's names
experimental = SimpleNamespace(get_step=get_step, set_step=set_step)

__all__ = [
    "SummaryWriter",
    "create_file_writer",
    "experimental",
    "histogram",
    "image",
    "scalar",
    "text",
    "trace_export",
    "trace_off",
    "trace_on",
]
