"""Walk the op registry: every op has a kernel, a docstring, and static rules that agree with
what its kernel actually produces (also when some input dimensions are unknown)."""

from __future__ import annotations

import io
import itertools
import subprocess
import sys
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.tensor.execution import execute
from eagerflow.tensor.logging_ops import TENSOR_SLOT
from eagerflow.tensor.registry import OPS, OpDef

rng = np.random.default_rng(0)

# The ops eagerflow.tensor registers by itself (upper layers add theirs, e.g. ReadVariableOp,
# to the same registry when they are imported; they test those themselves).
TENSOR_OPS = sorted(
    subprocess.run(
        [sys.executable, "-c", "from eagerflow.tensor.registry import OPS; print(*OPS)"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
)  # fmt: skip


def f32(*shape: int) -> ef.Tensor:
    return ef.constant(rng.standard_normal(shape).astype(np.float32))


def i32(*shape: int, high: int = 3) -> ef.Tensor:
    return ef.constant(rng.integers(0, high, shape).astype(np.int32))


def b(*shape: int) -> ef.Tensor:
    return ef.constant(rng.random(shape) > 0.5)


def pos(*shape: int) -> ef.Tensor:
    return ef.constant(rng.random(shape).astype(np.float32) + 0.5)


RED = {"axis": (1,), "keepdims": False}
CONV = {"strides": (2, 2), "padding": "SAME", "dilations": (1, 1)}
POOL = {"ksize": (3, 2), "strides": (2, 2), "padding": "SAME"}
# op name -> list of (inputs, attrs): at least one example per registered op.
EXAMPLES: dict[str, list[tuple[tuple[ef.Tensor, ...], dict[str, Any]]]] = {
    **{
        name: [((f32(2, 3), f32(3)), {}), ((f32(4, 1, 2), f32(3, 1)), {})]
        for name in ["AddV2", "Sub", "Mul", "Maximum", "Minimum", "RealDiv"]
    },
    **{name: [((i32(2, 3), i32(3, high=5) + 1), {})] for name in ["FloorDiv", "FloorMod"]},
    "Pow": [((pos(2, 3), f32(3)), {})],
    **{
        name: [((f32(2, 3), f32(1, 3)), {})]
        for name in ["Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual"]
    },
    **{name: [((b(2, 1), b(3)), {})] for name in ["LogicalAnd", "LogicalOr"]},
    "LogicalNot": [((b(2, 3),), {})],
    **{name: [((f32(2, 3),), {})] for name in ["Neg", "Abs", "Sign", "Square", "Exp", "Tanh"]},
    **{name: [((f32(4),), {})] for name in ["Sigmoid", "Relu", "Softplus", "Elu"]},
    "LeakyRelu": [
        ((f32(2, 3),), {"alpha": 0.2}),
        ((ef.cast(f32(4), ef.float16),), {"alpha": -1.5}),
    ],
    **{name: [((pos(2, 3),), {})] for name in ["Sqrt", "Log"]},
    "Cast": [((f32(2, 3),), {"dtype": ef.int64}), ((i32(3),), {"dtype": ef.bool_})],
    "MatMul": [
        ((f32(2, 3), f32(3, 4)), {"transpose_a": False, "transpose_b": False}),
        ((f32(5, 3, 2), f32(1, 4, 3)), {"transpose_a": True, "transpose_b": True}),
    ],
    **{
        name: [((f32(2, 3, 4),), RED), ((f32(2, 3),), {"axis": None, "keepdims": True})]
        for name in ["Sum", "Mean", "Max", "Min", "Prod"]
    },
    **{
        name: [((f32(2, 3, 4),), {"axis": -1, "output_type": ef.int64})]
        for name in ["ArgMax", "ArgMin"]
    },
    **{
        name: [((f32(2, 5),), {"axis": 0}), ((f32(3),), {"axis": -1})]
        for name in ["Softmax", "LogSoftmax"]
    },
    "Const": [((), {"value": np.zeros((2, 3), np.int64)})],
    "Fill": [((), {"shape": (2, 0, 3), "value": 1.5, "dtype": ef.float64})],
    "ZerosLike": [((i32(2, 3),), {})],
    "OnesLike": [((b(4),), {})],
    "Range": [
        ((), {"start": 1, "limit": 10, "delta": 3, "dtype": ef.int32}),
        ((ef.constant(9.0), ef.constant(1.0), ef.constant(-2.5)), {"dtype": ef.float32}),
    ],
    "LinSpace": [((), {"start": -1.0, "stop": 1.0, "num": 5, "dtype": ef.float16})],
    "Identity": [((f32(2),), {})],
    "StopGradient": [((f32(2, 1),), {})],
    "Size": [((f32(2, 3),), {"dtype": ef.int32}), ((f32(),), {"dtype": ef.int64})],
    "Reshape": [((f32(2, 3, 4),), {"shape": (4, -1)}), ((f32(6),), {"shape": (2, 3, 1)})],
    "Transpose": [((f32(2, 3, 4),), {"perm": (2, 0, 1)})],
    "ExpandDims": [((f32(2, 3),), {"axis": -1}), ((f32(2, 3),), {"axis": 0})],
    "Squeeze": [((f32(1, 3, 1),), {"axis": None}), ((f32(1, 3, 1),), {"axis": (2,)})],
    "BroadcastTo": [((f32(3, 1),), {"shape": (2, 3, 4)})],
    "Tile": [((f32(2, 3),), {"multiples": (2, 1)})],
    "ConcatV2": [
        ((f32(2, 3), f32(4, 3)), {"axis": 0}),
        ((f32(2, 1), f32(2, 2), f32(2, 3)), {"axis": -1}),
    ],
    "Pack": [((f32(2, 3), f32(2, 3)), {"axis": 1})],
    "SplitV": [((f32(2, 6),), {"sizes": (1, 2, 3), "axis": 1})],
    "ReluGrad": [((f32(2, 3), f32(2, 3)), {}), ((i32(4), i32(4)), {})],
    "SparseSoftmaxCrossEntropyWithLogits": [
        ((f32(5, 4), i32(5, high=4)), {}),
        ((f32(2, 3, 4), ef.cast(i32(2, 3, high=4), ef.int64)), {}),
        ((f32(0, 3), i32(0)), {}),
    ],
    "GatherV2": [((f32(5, 3), i32(2, 2, high=5)), {"axis": 0}), ((f32(2, 3), i32(4)), {"axis": 1})],
    "OneHot": [
        (
            (i32(2, 3, high=4),),
            {"depth": 4, "on_value": 1.0, "off_value": 0.0, "axis": -1, "dtype": ef.float32},
        ),
        (
            (i32(3, high=4),),
            {"depth": 4, "on_value": 5, "off_value": -1, "axis": 0, "dtype": ef.int32},
        ),
    ],
    "SelectV2": [((b(2, 1), f32(3), f32(2, 3)), {})],
    "Where": [((b(2, 3, 4),), {}), ((b(0, 2),), {})],
    "StridedSlice": [
        ((f32(4, 5, 6),), {"key": (1, slice(None, None, -2), None, Ellipsis)}),
        ((f32(4, 5),), {"key": (slice(1, 3), 2)}),
    ],
    "UnsortedSegmentSum": [
        ((f32(4, 3), i32(4, high=5)), {"num_segments": 5}),
        ((f32(2, 3, 2), i32(2, 3, high=2)), {"num_segments": 2}),
    ],
    "StridedSliceGrad": [
        ((f32(2, 1, 5),), {"shape": (4, 5, 6), "key": (slice(None, None, -2), None, Ellipsis, 3)}),
    ],
    "Conv2D": [
        ((f32(2, 5, 4, 3), f32(3, 2, 3, 4)), {**CONV, "padding": "VALID"}),
        ((f32(1, 5, 5, 2), f32(2, 2, 2, 1)), {**CONV, "strides": (1, 1), "dilations": (2, 2)}),
    ],
    "Conv2DBackpropInput": [
        ((f32(3, 2, 3, 4), f32(2, 3, 2, 4)), {**CONV, "input_sizes": (2, 5, 4, 3)}),
        ((f32(3, 2, 3, 4), f32(2, 3, 2, 4)), {**CONV, "input_sizes": (None, 6, 4, None)}),
    ],
    "Conv2DBackpropFilter": [
        ((f32(2, 5, 4, 3), f32(2, 3, 2, 4)), {**CONV, "filter_sizes": (3, 2, 3, 4)}),
        ((f32(2, 6, 4, 3), f32(2, 3, 2, 4)), {**CONV, "filter_sizes": (3, 2, None, None)}),
    ],
    **{name: [((f32(2, 5, 4, 3),), POOL)] for name in ["MaxPool", "AvgPool"]},
    "MaxPoolGrad": [((f32(2, 5, 4, 3), f32(2, 3, 2, 3)), POOL)],
    "MaxPoolGradGrad": [((f32(2, 5, 4, 3), f32(2, 5, 4, 3)), POOL)],
    "AvgPoolGrad": [((f32(2, 3, 2, 3),), {**POOL, "orig_input_shape": (2, 5, 4, 3)})],
    "RandomNormal": [((), {"shape": (2, 3), "mean": 0.0, "stddev": 1.0, "dtype": ef.float64})],
    "RandomUniform": [((), {"shape": (4,), "minval": 0, "maxval": 5, "dtype": ef.int32})],
    "RandomShuffle": [((f32(5, 2),), {})],
    "PrintV2": [
        (
            (f32(2, 3), i32()),
            {
                "template": ["x:", TENSOR_SLOT, {"n": TENSOR_SLOT}],
                "output_stream": io.StringIO(),
                "summarize": 3,
                "sep": " ",
                "end": "\n",
            },
        )
    ],
}


# Ops whose output shape depends on the input's values, not only on its shape.
DATA_DEPENDENT = {"Where"}


def data_dependent(name: str, inputs: tuple[ef.Tensor, ...]) -> bool:
    """Where, and Range given its bounds as tensors (as attributes, its length is known)."""
    return name in DATA_DEPENDENT or (name == "Range" and bool(inputs))


def test_every_registered_op_has_examples() -> None:
    missing = sorted(set(TENSOR_OPS) - set(EXAMPLES))
    assert not missing, f"ops without registry examples in this file: {missing}"
    unknown = sorted(set(EXAMPLES) - set(TENSOR_OPS))
    assert not unknown, f"examples for ops that are not registered: {unknown}"


@pytest.mark.parametrize("name", TENSOR_OPS)
def test_op_has_kernel_and_rules(name: str) -> None:  # (and a doc: tests/test_op_docs.py)
    op = OPS[name]
    assert isinstance(op, OpDef) and op.name == name
    assert callable(op.kernel) and callable(op.shape_rule) and callable(op.dtype_rule)


def _cases() -> list[Any]:
    return [
        pytest.param(name, inputs, attrs, id=f"{name}-{i}")
        for name, cases in sorted(EXAMPLES.items())
        for i, (inputs, attrs) in enumerate(cases)
    ]


@pytest.mark.parametrize(("name", "inputs", "attrs"), _cases())
def test_rules_agree_with_kernel(name: str, inputs: tuple[ef.Tensor, ...], attrs: dict) -> None:
    op = OPS[name]
    outputs = execute(name, inputs, attrs)
    shapes = op.shape_rule([t.shape for t in inputs], attrs)
    dts = op.dtype_rule([t.dtype for t in inputs], attrs)
    # a rule may leave a dimension only the data decides unknown (Where's first), no other
    known = [tuple(None if d is None else n for d, n in zip(s, t.shape, strict=True))
             for s, t in zip(shapes, outputs, strict=True)]  # fmt: skip
    assert [tuple(s) for s in shapes] == known
    assert None not in itertools.chain(*shapes) or data_dependent(name, inputs)
    assert list(dts) == [t.dtype for t in outputs]
    for t in outputs:  # the wrapped array really has the dtype the tensor claims
        assert np.asarray(t).dtype == t.dtype.np


@pytest.mark.parametrize(("name", "inputs", "attrs"), _cases())
def test_rules_with_unknown_dims_stay_compatible(
    name: str, inputs: tuple[ef.Tensor, ...], attrs: dict
) -> None:
    """Hiding input dimensions (None) never makes a rule wrong: each output dimension it
    still claims to know is the true one, and ranks never change."""
    op = OPS[name]
    true_shapes = op.shape_rule([t.shape for t in inputs], attrs)
    positions = [(i, d) for i, t in enumerate(inputs) for d in range(t.ndim)]
    for hidden in itertools.chain.from_iterable(
        itertools.combinations(positions, k) for k in (1, len(positions))
    ):
        shapes = [
            tuple(None if (i, d) in hidden else n for d, n in enumerate(t.shape))
            for i, t in enumerate(inputs)
        ]
        try:
            partial = op.shape_rule(shapes, attrs)
        except ef.ShapeError:
            # Allowed only where unknown dims make the op ambiguous (squeeze without axis).
            assert name == "Squeeze" and attrs["axis"] is None
            continue
        for got, true in zip(partial, true_shapes, strict=True):
            assert len(got) == len(true)
            assert all(g is None or g == t for g, t in zip(got, true, strict=True)), (
                f"{name}: rule gave {got} for inputs {shapes}, true output {true}"
            )


def test_relu_grad_refuses_shapes_that_would_broadcast() -> None:
    with pytest.raises(ef.ShapeError, match=r"ReluGrad\(float32\[3,1\], float32\[3\]\)"):
        ef.relu_grad(f32(3, 1), f32(3))
