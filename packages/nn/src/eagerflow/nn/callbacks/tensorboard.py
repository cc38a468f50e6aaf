"""``TensorBoard``: Keras' callback that writes ``fit``'s numbers for TensorBoard.

It writes with ``eagerflow.graph.summary`` (``tf.summary``'s names) into two runs, as Keras
does: ``log_dir/train`` gets ``epoch_loss``, ``epoch_<metric>``, ``epoch_learning_rate`` (the
optimizer's rate at the end of each epoch), the weights' histograms
(every ``histogram_freq`` epochs) and the model's graph; ``log_dir/validation`` gets the
``val_`` numbers under the same names, so TensorBoard draws the two curves on one chart.
``tensorboard --logdir log_dir`` shows them. It needs the optional ``[tf-proto]`` extra of
``eagerflow-graph`` (the ``tensorboard`` package), as ``summary.create_file_writer`` does.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np

from eagerflow.graph import TensorSpec, function, summary
from eagerflow.nn.callbacks.base import Callback, Logs
from eagerflow.nn.callbacks.monitors import current_rate


class TensorBoard(Callback):
    """``TensorBoard(log_dir="logs", histogram_freq=0, write_graph=True)``, as in Keras.

    ``histogram_freq=n`` writes a histogram of every variable (named as the variable, e.g.
    ``dense/kernel``) every ``n`` epochs; 0 writes none. ``write_graph`` traces the model's
    forward pass once, as a ``function`` over a batch of ``fit``'s input shape, and writes
    its graph for the graph dashboard."""

    def __init__(self, log_dir: str | os.PathLike[str] = "logs", histogram_freq: int = 0,
                 write_graph: bool = True) -> None:  # fmt: skip
        super().__init__()
        if not isinstance(histogram_freq, int) or histogram_freq < 0:
            raise ValueError(f"TensorBoard: histogram_freq must be an int >= 0, got "
                             f"{histogram_freq!r}")  # fmt: skip
        self.log_dir, self.histogram_freq = os.fspath(log_dir), histogram_freq
        self.write_graph = write_graph
        self.writers: dict[str, Any] = {}

    def _writer(self, run: str) -> Any:
        if run not in self.writers:
            self.writers[run] = summary.create_file_writer(os.path.join(self.log_dir, run))
        return self.writers[run]

    def on_train_begin(self, logs: Logs | None = None) -> None:
        self._writer("train")  # made now, so that a missing extra fails before training

    def on_train_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        if self.write_graph and batch == 0 and self.model.built:
            self.write_graph = False  # once: the model is built by its first step
            self._trace_model()

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        logs = logs or {}
        runs = {
            "train": {k: v for k, v in logs.items() if not k.startswith("val_")},
            "validation": {k[4:]: v for k, v in logs.items() if k.startswith("val_")},
        }
        optimizer = self.params.get("optimizer")
        if optimizer is not None:  # as Keras: the optimizer's rate, scheduled or not
            runs["train"]["learning_rate"] = current_rate(optimizer)
        for run, values in runs.items():
            if values:
                with self._writer(run).as_default():
                    for name, value in values.items():
                        summary.scalar(f"epoch_{name}", value, step=epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            with self._writer("train").as_default():
                for variable in self.model.variables:
                    summary.histogram(variable.name.split(":")[0], variable, step=epoch)

    def on_train_end(self, logs: Logs | None = None) -> None:
        for writer in self.writers.values():
            writer.close()
        self.writers = {}

    def _trace_model(self) -> None:
        """Trace ``model(x)`` for a batch of ``fit``'s input shape and write its graph."""
        shape = self.params.get("input_shape")
        if shape is None:
            warnings.warn("TensorBoard: fit gave no single input shape (the inputs are "
                          "nested), so the graph is not written", stacklevel=2)  # fmt: skip
            return
        model = self.model
        spec = TensorSpec((None, *shape), model.dtype)
        forward = function(lambda x: model(x), input_signature=[spec])
        with self._writer("train").as_default():
            summary.trace_on(graph=True)
            forward(np.zeros((1, *shape), model.dtype.np))  # traces, and the trace is kept
            summary.trace_export("model", step=0)


__all__ = ["TensorBoard"]
