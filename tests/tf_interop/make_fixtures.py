"""Make the TensorFlow-frozen GraphDefs that eagerflow imports in ``test_tf_graph_def.py``.

Run with a Python that has TensorFlow (never a dependency: CI reads the committed files)::

    .venv-tf/bin/python tests/tf_interop/make_fixtures.py

It builds small models from ``tf.nn`` ops: an MLP and a CNN of ``tf.Variable``s (with
``Conv2D``, ``BiasAdd``, ``Relu``, ``MaxPool``, ``Reshape``, ``MatMul`` and ``Softmax``), each
frozen with ``convert_variables_to_constants_v2`` (variables become ``Const`` nodes, their
reads ``Identity`` nodes), and ``control``, whose ``tf.cond``, ``tf.while_loop`` and call of
another ``tf.function`` are functions of the GraphDef's library. It writes into
``fixtures/``: ``NAME.pb`` (the GraphDef),
``NAME.pbtxt`` (the same as text, for a reader), ``NAME_input.npy`` and ``NAME_output.npy``
(TensorFlow's output for that input), and ``frozen.json`` (the TensorFlow version, the input
and output tensor names, and the op types each graph uses).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # no start-up chatter
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # the reference results, not oneDNN's

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _mlp(tf, rng):
    w1 = tf.Variable(rng.standard_normal((6, 16)).astype(np.float32) * 0.5, name="dense/kernel")
    b1 = tf.Variable(rng.standard_normal(16).astype(np.float32) * 0.1, name="dense/bias")
    w2 = tf.Variable(rng.standard_normal((16, 3)).astype(np.float32) * 0.5, name="logits/kernel")
    b2 = tf.Variable(rng.standard_normal(3).astype(np.float32) * 0.1, name="logits/bias")

    @tf.function(input_signature=[tf.TensorSpec((None, 6), tf.float32, name="features")])
    def mlp(features):
        hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(features, w1), b1))
        return tf.nn.softmax(tf.nn.bias_add(tf.matmul(hidden, w2), b2))

    return mlp, rng.standard_normal((5, 6)).astype(np.float32)


def _cnn(tf, rng):
    def var(shape, name, scale):
        return tf.Variable(rng.standard_normal(shape).astype(np.float32) * scale, name=name)

    k1, c1 = var((3, 3, 1, 4), "conv1/kernel", 0.4), var((4,), "conv1/bias", 0.1)
    k2, c2 = var((3, 3, 4, 8), "conv2/kernel", 0.3), var((8,), "conv2/bias", 0.1)
    w, b = var((2 * 2 * 8, 10), "dense/kernel", 0.3), var((10,), "dense/bias", 0.1)

    @tf.function(input_signature=[tf.TensorSpec((None, 8, 8, 1), tf.float32, name="images")])
    def cnn(images):
        x = tf.nn.conv2d(images, k1, strides=1, padding="SAME")
        x = tf.nn.max_pool2d(tf.nn.relu(tf.nn.bias_add(x, c1)), 2, 2, "VALID")
        x = tf.nn.conv2d(x, k2, strides=[1, 2, 2, 1], padding="SAME")
        x = tf.reshape(tf.nn.relu(tf.nn.bias_add(x, c2)), [-1, 2 * 2 * 8])
        return tf.nn.softmax(tf.nn.bias_add(tf.matmul(x, w), b))

    return cnn, rng.standard_normal((3, 8, 8, 1)).astype(np.float32)


def _control(tf, rng):
    """A graph with TensorFlow's functional control flow: ``tf.cond`` (``StatelessIf``),
    ``tf.while_loop`` (``StatelessWhile``, a ``cond`` inside its body) and a call of another
    ``tf.function`` (``PartitionedCall``, with a ``cond`` of its own): its weights are
    constants, so the graph needs no freezing, which would inline the call."""
    w = tf.constant(rng.standard_normal((3, 2)).astype(np.float32) * 0.5)

    @tf.function
    def head(a):
        h = tf.matmul(a, w)
        return tf.cond(tf.reduce_max(h) > 1.0, lambda: tf.nn.relu(h), lambda: h * 0.5)

    def body(i, acc):
        step = tf.cond(i % 2 == 0, lambda: acc * 0.5, lambda: acc + 1.0)
        return i + 1, step

    @tf.function(input_signature=[tf.TensorSpec((None, 3), tf.float32, name="x")])
    def control(x):
        y = tf.cond(tf.reduce_sum(x) > 0.0, lambda: x * 2.0, lambda: x - 1.0)
        _, acc = tf.while_loop(lambda i, acc: i < 3, body, (tf.constant(0), y))
        return head(acc)

    return control, rng.standard_normal((4, 3)).astype(np.float32)


def _write_unfrozen(name, function, inputs, tf):
    """``_write`` for a function without variables: its graph as TensorFlow traced it."""
    from google.protobuf import text_format

    concrete = function.get_concrete_function()
    graph_def = concrete.graph.as_graph_def()
    (FIXTURES / f"{name}.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    (FIXTURES / f"{name}.pbtxt").write_text(text_format.MessageToString(graph_def))
    np.save(FIXTURES / f"{name}_input.npy", inputs)
    np.save(FIXTURES / f"{name}_output.npy", concrete(tf.constant(inputs)).numpy())
    used = [n.op for n in graph_def.node] + [
        n.op for f in graph_def.library.function for n in f.node_def
    ]
    return {
        "input": concrete.inputs[0].name,
        "output": concrete.outputs[0].name,
        "ops": sorted(set(used)),
    }


def _write(name, function, inputs, tf):
    from google.protobuf import text_format
    from tensorflow.python.framework.convert_to_constants import (
        convert_variables_to_constants_v2,
    )

    frozen = convert_variables_to_constants_v2(function.get_concrete_function())
    graph_def = frozen.graph.as_graph_def()
    (FIXTURES / f"{name}.pb").write_bytes(graph_def.SerializeToString(deterministic=True))
    (FIXTURES / f"{name}.pbtxt").write_text(text_format.MessageToString(graph_def))
    np.save(FIXTURES / f"{name}_input.npy", inputs)
    np.save(FIXTURES / f"{name}_output.npy", frozen(tf.constant(inputs))[0].numpy())
    return {
        "input": frozen.inputs[0].name,
        "output": frozen.outputs[0].name,
        "ops": sorted({node.op for node in graph_def.node}),
    }


def main() -> int:
    import tensorflow as tf

    FIXTURES.mkdir(exist_ok=True)
    rng = np.random.default_rng(29)
    made = {name: _write(name, *build(tf, rng), tf) for name, build in
            [("mlp", _mlp), ("cnn", _cnn)]}  # fmt: skip
    made["control"] = _write_unfrozen("control", *_control(tf, rng), tf)
    summary = {"tensorflow": tf.__version__, "models": made}
    (FIXTURES / "frozen.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    print(f"{len(made)} frozen models written by TensorFlow {tf.__version__} into {FIXTURES}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
