"""The TensorFlow lowering of the random ops, with their seeds (``seed``: the graph's,
``seed2``: the op's, as TensorFlow records them; see ``eagerflow.tensor.random_ops``).

TensorFlow's random kernels draw from Philox streams, eagerflow's from NumPy's: the same
seeds give other numbers in each. What the seeds keep is each side's own promise: a GraphDef
written and read back (by eagerflow, or by TensorFlow) draws the same numbers as the graph
it was written from, where TensorFlow would. Only the standard forms have a single TensorFlow
op (``RandomUniform`` on [0, 1), ``RandomStandardNormal``): TensorFlow writes other bounds,
means and deviations as ``Mul`` and ``Add`` nodes after them, which these rules do not.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eagerflow.graph.core.graph import Operation
from eagerflow.graph.export.tf_graph_def.rules import (
    INT32,
    NotTranslated,
    TfAttrs,
    TfNode,
    dtype_of_input,
    tf_rule,
)
from eagerflow.tensor.dtypes import DType


def _seeds(op: Operation) -> dict[str, int]:
    return {"seed": op.attrs.get("seed", 0), "seed2": op.attrs.get("seed2", 0)}


def _read_seeds(attrs: TfAttrs) -> dict[str, int]:
    return {"seed": attrs.get("seed", int, 0), "seed2": attrs.get("seed2", int, 0)}


def _shape_of(attrs: TfAttrs, shape: np.ndarray) -> tuple[int, ...]:
    if shape.ndim != 1 or shape.dtype.kind != "i":
        raise attrs.error("shape", f"input is not a vector of ints: {shape!r:.40}")
    return tuple(int(d) for d in shape)


def _read_uniform(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    shape = _shape_of(attrs, consts[0])
    return {"shape": shape, "minval": 0.0, "maxval": 1.0, "dtype": attrs.get("dtype", DType),
            **_read_seeds(attrs)}  # fmt: skip


@tf_rule("RandomUniform", "RandomUniform", read=_read_uniform, consts=1)
def _uniform(op: Operation) -> TfNode:
    """Uniform on [0, 1) of a float dtype: TensorFlow's ``RandomUniform``, its shape an
    input."""
    dtype = op.attrs["dtype"]
    if not dtype.is_floating or (op.attrs["minval"], op.attrs["maxval"]) != (0, 1):
        raise NotTranslated("only floats on [0, 1) are one TensorFlow op (RandomUniform): "
                            "TensorFlow scales other bounds with Mul and Add")  # fmt: skip
    shape = np.asarray(op.attrs["shape"], np.int32)
    return TfNode("RandomUniform", {"dtype": dtype, "T": INT32, **_seeds(op)}, (shape,))


def _read_normal(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    shape = _shape_of(attrs, consts[0])
    return {"shape": shape, "mean": 0.0, "stddev": 1.0, "dtype": attrs.get("dtype", DType),
            **_read_seeds(attrs)}  # fmt: skip


@tf_rule("RandomNormal", "RandomStandardNormal", read=_read_normal, consts=1)
def _normal(op: Operation) -> TfNode:
    """N(0, 1): TensorFlow's ``RandomStandardNormal``, its shape an input."""
    if (op.attrs["mean"], op.attrs["stddev"]) != (0, 1):
        raise NotTranslated("only N(0, 1) is one TensorFlow op (RandomStandardNormal): "
                            "TensorFlow scales others with Mul and Add")  # fmt: skip
    shape = np.asarray(op.attrs["shape"], np.int32)
    return TfNode("RandomStandardNormal", {"dtype": op.attrs["dtype"], "T": INT32, **_seeds(op)},
                  (shape,))  # fmt: skip


def _read_shuffle(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return _read_seeds(attrs)


@tf_rule("RandomShuffle", "RandomShuffle", read=_read_shuffle)
def _shuffle(op: Operation) -> TfNode:
    """TensorFlow's ``RandomShuffle`` (its first axis)."""
    return TfNode("RandomShuffle", {"T": dtype_of_input(op), **_seeds(op)})


__all__: list[str] = []
