"""nn.callbacks.TensorBoard: fit's numbers, histograms and graph, read back by TensorBoard's
own reader (EventAccumulator), in the train and validation runs Keras writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tensorboard.compat.proto.event_pb2")

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.util import tensor_util

import eagerflow.nn as nn
import eagerflow.tensor as ef
from eagerflow.nn.data import Dataset


def read(logdir: Path) -> EventAccumulator:
    accumulator = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    accumulator.Reload()
    return accumulator


def scalars(run: EventAccumulator, tag: str) -> list[tuple[int, float]]:
    return [(e.step, float(tensor_util.make_ndarray(e.tensor_proto))) for e in run.Tensors(tag)]


def train(log_dir: Path, x: object = None, **options: object) -> tuple[nn.Layer, nn.History]:
    ef.set_seed(0)
    data = np.random.default_rng(0).standard_normal((8, 2)).astype(np.float32)
    labels = data.sum(axis=1, keepdims=True)
    model = nn.Sequential([nn.Dense(3, "relu"), nn.Dense(1)])
    board = nn.callbacks.TensorBoard(log_dir, **options)  # type: ignore[arg-type]
    history = nn.fit(model, data if x is None else x, None if x is not None else labels,
                     loss="mean_squared_error", optimizer=nn.GradientDescentOptimizer(0.05),
                     epochs=3, batch_size=None if x is not None else 4, verbose=0,
                     validation_data=(data[:4], labels[:4]), callbacks=[board])  # fmt: skip
    return model, history


def test_epoch_numbers_go_to_the_train_and_validation_runs(tmp_path: Path) -> None:
    _, history = train(tmp_path, write_graph=False)
    run, validation = read(tmp_path / "train"), read(tmp_path / "validation")
    for reader, name in ((run, "loss"), (validation, "val_loss")):
        expected = [(e, pytest.approx(v, rel=1e-6)) for e, v in enumerate(history[name])]
        assert scalars(reader, "epoch_loss") == expected
    # as Keras: the optimizer's rate, in the train run only, though no callback scheduled it
    assert scalars(run, "epoch_learning_rate") == [(e, pytest.approx(0.05)) for e in range(3)]
    assert "epoch_learning_rate" not in validation.Tags()["tensors"]
    assert "learning_rate" not in history.history  # the TensorBoard callback logs it alone


def test_histograms_every_histogram_freq_epochs_and_the_graph(tmp_path: Path) -> None:
    model, _ = train(tmp_path, histogram_freq=2)
    run = read(tmp_path / "train")
    kernel = model.layers[0].kernel
    name = kernel.name.split(":")[0]
    assert name in run.Tags()["tensors"]
    events = run.Tensors(name)
    assert [e.step for e in events] == [0, 2]
    buckets = tensor_util.make_ndarray(events[-1].tensor_proto)  # [left, right, count] rows
    assert buckets[:, 2].sum() == kernel.numpy().size  # the last epoch's weights
    graph = run.Graph()
    assert any(node.op == "MatMul" for node in graph.node)


def test_a_dataset_gives_the_graph_its_input_shape(tmp_path: Path) -> None:
    data = np.random.default_rng(0).standard_normal((8, 2)).astype(np.float32)
    pairs = Dataset.from_tensor_slices((data, data.sum(axis=1, keepdims=True))).batch(4)
    train(tmp_path, x=pairs)
    assert any(node.op == "MatMul" for node in read(tmp_path / "train").Graph().node)


def test_histogram_freq_must_be_a_count() -> None:
    with pytest.raises(ValueError, match="TensorBoard: histogram_freq must be an int >= 0"):
        nn.callbacks.TensorBoard("logs", histogram_freq=-1)
