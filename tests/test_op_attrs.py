"""Every op's row declares its attributes (``OpDef.attrs``), and what its public function
passes to ``execute`` is exactly that: the same names, each value accepted by its schema.

A recorder hears every op a small workload runs, eagerly and in graphs, and checks each
one's attributes against its row (``check_attrs``: the debug check that ``execute`` itself
leaves out, to stay lean)."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pytest

import eagerflow.graph as eg
import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable, apply_gradient_descent, custom_gradient
from eagerflow.tensor.execution import recording
from eagerflow.tensor.registry import OPS, OpDef
from eagerflow.tensor.schema import AttrSchema, check_attrs


class _AttrChecker:
    """A recorder that checks each op's attributes against its row as the op runs."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def record(self, op: OpDef, inputs: Any, attrs: Any, outputs: Any) -> None:
        check_attrs(op.name, op.attrs, attrs)
        self.seen.add(op.name)


def _eager_ops() -> None:
    x = ef.constant([[1.0, -2.0], [3.0, 4.0]])
    i = ef.constant([0, 1])
    ef.matmul(x, x, transpose_a=True)
    ef.cast(x, "int32")
    for reduce in (ef.reduce_sum, ef.reduce_mean, ef.reduce_max, ef.reduce_min, ef.reduce_prod):
        reduce(x, axis=0, keepdims=True)
    ef.argmax(x, axis=1)
    ef.argmin(x, axis=0)
    ef.fill([2], 1.5)
    ef.zeros([2, 3], "int64")
    ef.range(5)
    ef.range(ef.constant(3))  # bounds as inputs: the attributes are only the dtype
    ef.linspace(0.0, 1.0, 3)
    ef.size(x)
    ef.reshape(x, [-1])
    ef.transpose(x)
    ef.expand_dims(x, 0)
    ef.squeeze(ef.zeros([1, 2]), axis=0)
    ef.broadcast_to(i, [3, 2])
    ef.tile(x, [1, 2])
    ef.concat([x, x], axis=0)
    ef.stack([x, x])
    ef.split(x, 2, axis=1)
    ef.gather(x, i)
    ef.unsorted_segment_sum(x, i, 2)
    ef.one_hot(i, 3)
    ef.one_hot(i, 3, on_value=ef.constant(7, ef.int64), off_value=2**33)
    _ = x[0, ::-1]
    ef.strided_slice_grad(ef.constant([1.0, 2.0]), (2, 2), (0, slice(None)))
    ef.nn.leaky_relu(x, 0.1)
    ef.softmax(x)
    ef.log_softmax(x, axis=0)
    ef.random_normal([2], stddev=2.0)
    ef.random_uniform([2], maxval=3, dtype="int32")
    ef.random_uniform([2])
    ef.random_uniform([2], seed=3)
    ef.random_shuffle([1, 2, 3], seed=1)
    ef.print(x, "x", output_stream=io.StringIO())
    ef.print(x, output_stream="stdout")


def _window_ops() -> None:
    images = ef.random_normal([1, 4, 4, 2])
    filters = ef.random_normal([3, 3, 2, 2])
    out = ef.nn.conv2d(images, filters, strides=1, padding="SAME")
    ef.nn.conv2d_backprop_input([1, 4, 4, 2], filters, out, strides=1, padding="SAME")
    ef.nn.conv2d_backprop_filter(images, [3, 3, 2, 2], out, strides=1, padding="SAME")
    pooled = ef.nn.max_pool2d(images, 2, 2, "VALID")
    ef.nn.max_pool_grad(images, pooled, 2, 2, "VALID")
    ef.nn.max_pool_grad_grad(images, images, 2, 2, "VALID")
    averaged = ef.nn.avg_pool2d(images, 2, 2, "VALID")
    ef.nn.avg_pool_grad([1, 4, 4, 2], averaged, 2, 2, "VALID")


def _variable_ops() -> None:
    v = Variable([1.0, 2.0])
    with GradientTape() as tape:
        y = ef.reduce_sum(v * v)
    tape.gradient(y, v)
    v.assign([3.0, 4.0])
    v.assign_add([1.0, 1.0])
    v.assign_sub([1.0, 1.0])
    apply_gradient_descent(v, 0.1, ef.constant([1.0, 1.0]))

    @custom_gradient
    def twice(t: ef.Tensor) -> Any:
        return 2.0 * t, lambda dy: 2.0 * dy

    twice(ef.constant(1.0))


def _graph_ops() -> None:
    graph = eg.Graph()
    with graph.as_default():
        p = eg.placeholder("float32", [None, 2])
        eg.placeholder_with_default(ef.constant([1.0, 2.0]), [None])
        Variable([1.0, 2.0])
        eg.cond(ef.constant(True), lambda: p + 1.0, lambda: p - 1.0)
        eg.while_loop(lambda n: n < 3, lambda n: [n + 1], [ef.constant(0)])
        eg.no_op()
        with eg.device("/task:1"):
            p * 2.0
    eg.partition(graph)  # its _Send and _Recv

    @eg.function
    def double(t: ef.Tensor) -> ef.Tensor:
        return 2.0 * t

    double(ef.constant(1.0))


def _summary_ops(folder: Any) -> None:
    writer = eg.summary.create_file_writer(folder)
    with writer.as_default(step=1):
        eg.summary.scalar("s", 1.0)
        eg.summary.histogram("h", [1.0, 2.0], buckets=2)
        eg.summary.image("i", np.zeros((1, 2, 2, 1), np.float32))
        eg.summary.text("t", "hi")
    writer.close()


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    pytest.importorskip("tensorboard.summary.writer.event_file_writer")
    checker = _AttrChecker()
    with recording(checker):
        _eager_ops()
        _window_ops()
        _variable_ops()
        _graph_ops()
        _summary_ops(tmp_path_factory.mktemp("summaries"))
    return checker.seen


def test_every_op_has_a_schema() -> None:
    for op in OPS.values():
        assert all(isinstance(s, AttrSchema) for s in op.attrs.values()), op.name


def test_every_op_with_attributes_runs_with_what_its_row_declares(seen: set[str]) -> None:
    # (each op the workload runs passed check_attrs: same names, accepted values)
    with_attributes = {name for name, op in OPS.items() if op.attrs}
    assert not with_attributes - seen, "the workload runs no op of these"


def test_a_schema_refuses_a_bad_value_naming_op_and_attribute() -> None:
    with pytest.raises(ef.InvalidArgumentError, match=r"MatMul attribute 'transpose_a': "
                       r"expected a bool, got str 'yes'"):  # fmt: skip
        check_attrs("MatMul", OPS["MatMul"].attrs, {"transpose_a": "yes", "transpose_b": False})
    with pytest.raises(ef.InvalidArgumentError, match="attribute 'transpose_b' is missing"):
        check_attrs("MatMul", OPS["MatMul"].attrs, {"transpose_a": True})
    with pytest.raises(ef.InvalidArgumentError, match="does not fit int32"):
        check_attrs("Fill", OPS["Fill"].attrs, {"shape": (2,), "value": 1.5, "dtype": ef.int32})
    with pytest.raises(ef.InvalidArgumentError, match="expected a tuple of ints >= 0"):
        check_attrs("Fill", OPS["Fill"].attrs, {"shape": (-1,), "value": 1, "dtype": ef.int32})
    with pytest.raises(ef.InvalidArgumentError, match="NumPy array of dtype"):
        check_attrs("Const", OPS["Const"].attrs, {"value": np.zeros(2, np.uint8)})
