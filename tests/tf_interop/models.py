"""The three models whose TensorFlow GraphDefs TensorFlow runs (``record.py`` records what it
gives, ``test_tf_graph_def.py`` compares): small versions of the site's FizzBuzz MLP (chapter
13), digits CNN (chapter 14, with its batch normalization and dropout) and linear regression
(chapter 15). Each is built with fixed weights, so a build here is the build that was recorded.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import eagerflow.tensor as ef
import eagerflow.tensor.nn  # noqa: F401  (ef.nn)
from eagerflow import nn
from eagerflow.autodiff import GradientTape
from eagerflow.graph import (
    Function,
    TensorSpec,
    cond,
    function,
    placeholder_with_default,
    tf_graph_def,
    while_loop,
)


def _fizzbuzz() -> tuple[Function, np.ndarray]:
    def encode(numbers: np.ndarray, bits: int = 10) -> np.ndarray:
        return ((numbers[:, None] >> np.arange(bits)) & 1).astype(np.float32)

    ef.set_seed(13)
    nn.Layer.reset_names()  # the same node names in every process
    model = nn.Sequential([nn.Dense(64, "relu", input_shape=(10,)), nn.Dense(4)])

    @function(input_signature=[TensorSpec((None, 10))])
    def fizzbuzz(digits: Any) -> Any:
        logits = model(digits)
        return logits, ef.argmax(logits, axis=1)

    return fizzbuzz, encode(np.arange(1, 101))


def _digits_cnn() -> tuple[Function, np.ndarray]:
    ef.set_seed(14)
    nn.Layer.reset_names()
    model = nn.Sequential([
        nn.Conv2D(4, 3, padding="same", activation="relu", input_shape=(8, 8, 1)),
        nn.BatchNormalization(momentum=0.9),
        nn.MaxPool2D(),
        nn.Conv2D(8, 3, padding="same", activation="relu"),
        nn.BatchNormalization(momentum=0.9),
        nn.Flatten(),
        nn.Dropout(0.5),
        nn.Dense(10),
    ])  # fmt: skip

    @function(input_signature=[TensorSpec((None, 8, 8, 1))])
    def digits(images: Any) -> Any:
        return ef.softmax(model(images, training=False))

    images = np.random.default_rng(14).uniform(0, 16, (6, 8, 8, 1)).astype(np.float32)
    return digits, images


def _linear_regression() -> tuple[Function, np.ndarray]:
    from eagerflow.autodiff import Variable

    weight, bias = Variable(3.1, name="W"), Variable(1.9, name="B")

    @function(input_signature=[TensorSpec((None,))])
    def prediction(inputs: Any) -> Any:
        return inputs * weight + bias

    return prediction, np.random.default_rng(15).standard_normal(7).astype(np.float32)


# Every op with a TensorFlow rule, in small functions of x (float32 [2, 3, 4]) and i (int32
# [2]): written and read back by eagerflow, and run by TensorFlow (recorded)
OP_CASES: dict[str, Callable[[Any, Any], Any]] = {
    "elementwise": lambda x, i: ef.stop_gradient(ef.identity(
        ef.pow(ef.abs(x) + 1, 0.5) - x * x / 3 + ef.maximum(x, 0.1) - ef.minimum(x, 0.2)
        + ef.floordiv(x, 0.7) + ef.floormod(x, 0.7) + ef.sigmoid(x) + ef.tanh(x)
        + ef.exp(-ef.square(x)) + ef.log(ef.sqrt(ef.abs(x) + 1)) + ef.sign(-x)
        + ef.nn.softplus(x) + ef.nn.elu(x) + ef.nn.leaky_relu(x, 0.3) + ef.relu(x)
        + ef.zeros_like(x) * ef.ones_like(x))),
    "compare": lambda x, i: ef.where(
        ef.logical_or(ef.logical_and(ef.less(x, 0.5), ef.greater(x, -0.5)),
                      ef.logical_not(ef.equal(x, x) & ef.not_equal(x, 1.0)))
        | (ef.less_equal(x, 0.0) & ef.greater_equal(x, -1.0)), x, -x),
    "reductions": lambda x, i: ef.reduce_sum(x, axis=1) + ef.reduce_mean(x, axis=[1])
        + ef.reduce_max(x, 1) + ef.reduce_min(x, 1) + ef.reduce_prod(x, 1)
        + ef.reduce_sum(x, keepdims=True)[0],
    "indices": lambda x, i: ef.cast(ef.argmax(x, 2), ef.float32)
        + ef.cast(ef.argmin(x, 2), ef.float32),
    "softmax": lambda x, i: ef.softmax(x) + ef.nn.log_softmax(x),
    "matmul": lambda x, i: ef.matmul(x[0], ef.transpose(x[1]), transpose_b=False)
        + ef.matmul(x[0], x[1], transpose_b=True),
    "batch_matmul": lambda x, i: ef.matmul(x, x, transpose_a=True),
    "shapes": lambda x, i: ef.concat([ef.reshape(x, (2, -1)), ef.squeeze(
        ef.expand_dims(ef.reshape(x, (2, 12)), 1), [1])], axis=1),
    "stacks": lambda x, i: ef.stack([ef.tile(x[0], (1, 1)), ef.broadcast_to(x[1], (3, 4))]),
    "gather": lambda x, i: ef.gather(x, i, axis=1) + ef.one_hot(i, 4)[:, None, :],
    "fill": lambda x, i: x + ef.fill((2, 3, 4), 0.5) + ef.zeros((4,)),
    "pools": lambda x, i: ef.nn.avg_pool2d(x[..., None], 2, 1, "VALID")
        + ef.nn.max_pool2d(x[..., None], 2, 1, "VALID"),
    "relu_grad": lambda x, i: _relu_gradient(x),
    "slices": lambda x, i: ef.concat([ef.reshape(x[-1:, None, ::-2, 1:3], (-1,)),
                                      x[..., -1][0], x[1, 1:2, :][0]], axis=0),
    "conv": lambda x, i: ef.nn.conv2d(x[..., None], ef.ones((2, 2, 1, 3)), 1, "SAME"),
    "split_size": lambda x, i: ef.concat(ef.split(x, [1, 3], axis=2)[::-1], axis=2)
        * ef.cast(ef.size(x), ef.float32) + ef.unsorted_segment_sum(x, i, 3)[:2],
    "ranges": lambda x, i: x + ef.range(0.5, 4.0, 1.0) + ef.linspace(-1.0, 1.0, 4)
        + ef.reshape(ef.cast(ef.range(i[1], i[0]), ef.float32), (-1, 1, 1)),
    "with_default": lambda x, i: placeholder_with_default(x, (None, 3, 4)) * 2.0,
    "where": lambda x, i: ef.cast(ef.where(x > 0.5), ef.float32),
    # the loss's gradient is the op's second output, read inside a cond's FunctionDef
    "sparse_xent": lambda x, i: cond(i[0] > 0, lambda: _xent_gradient(x[:, 0, :], i),
                                     lambda: x[:, 0, :]),
    # control flow: FunctionDefs of the GraphDef's library (each branch taken once)
    "cond": lambda x, i: cond(ef.reduce_sum(x) > 0.0, lambda: x * 2.0, lambda: -x)
        + cond(i[0] > 5, lambda: x, lambda: ef.exp(x)),
    "while": lambda x, i: while_loop(
        lambda k, acc: k < i[0] + 1,
        lambda k, acc: (k + 1, cond(k % 2 == 0, lambda: acc * 0.5, lambda: acc + x)),
        [ef.constant(0), x])[1],
    "call": lambda x, i: _scaled(x, ef.cast(i, ef.float32)) + _scaled(-x, ef.ones((2,))),
    # seeded random ops written and run (their numbers differ, so multiplied by 0; a shuffle
    # of two rows summed is the same sum)
    "random": lambda x, i: x + 0.0 * (ef.reduce_sum(ef.random_uniform((4,), seed=3))
        + ef.reduce_sum(ef.random_normal((4,), seed=4)))
        + ef.reduce_sum(ef.random_shuffle(x, seed=5), axis=0),
}  # fmt: skip


@function(input_signature=[TensorSpec((2, 3, 4)), TensorSpec((2,))])
def _scaled(x: Any, scale: Any) -> Any:
    """A traced function the ``call`` case calls (a PartitionedCall), with a cond inside."""
    y = x * scale[0] + scale[1]
    return cond(ef.reduce_max(y) > 100.0, lambda: y - 100.0, lambda: ef.relu(y))


def _xent_gradient(logits, labels):
    with GradientTape() as tape:
        tape.watch(logits)
        loss = ef.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    return tape.gradient(loss, logits) + loss[:, None]


def _relu_gradient(x):
    with GradientTape() as tape:
        tape.watch(x)
        y = ef.relu(x)
    return tape.gradient(y, x)


OP_CASE_SPECS = [TensorSpec((2, 3, 4)), TensorSpec((2,), ef.int32)]


def op_case(name: str) -> tuple[Function, list[np.ndarray]]:
    """The traced function of ``OP_CASES[name]`` and its inputs x and i."""
    f = function(OP_CASES[name], input_signature=OP_CASE_SPECS)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    return f, [x, np.array([2, 0], np.int32)]


MODELS: dict[str, Callable[[], tuple[Function, np.ndarray]]] = {
    "fizzbuzz_mlp": _fizzbuzz,
    "digits_cnn": _digits_cnn,
    "linear_regression": _linear_regression,
}


def export_all(folder: Path) -> dict[str, tuple[Function, list[np.ndarray], str]]:
    """Write each model and op case as ``folder/NAME.pb`` with its inputs (``NAME_x.npy``
    for its placeholder ``x``) and the list of names in ``names.json`` (what ``tf_run.py``
    reads); returns each name's function, inputs and the SHA-256 of its ``.pb``."""
    built = {}
    cases = {name: lambda build=build: _one_input(*build()) for name, build in MODELS.items()}
    cases |= {f"op_{name}": lambda name=name: op_case(name) for name in OP_CASES}
    for name, build in cases.items():
        model, inputs = build()
        pb = Path(tf_graph_def.write(model, folder / f"{name}.pb"))
        nodes = tf_graph_def.read(pb)["node"]
        placeholders = [n["name"] for n in nodes if n["op"] == "Placeholder"]
        for placeholder, value in zip(placeholders, inputs, strict=True):
            np.save(folder / f"{name}_{placeholder}.npy", value)
        built[name] = (model, inputs, hashlib.sha256(pb.read_bytes()).hexdigest())
    (folder / "names.json").write_text(json.dumps(sorted(built)))
    return built


def _one_input(model: Function, inputs: np.ndarray) -> tuple[Function, list[np.ndarray]]:
    return model, [inputs]
