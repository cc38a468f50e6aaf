"""The rules of ops whose attributes TensorFlow takes as inputs, or whose outputs are many
(``rules.py`` has the others):

- ``SplitV``: the sizes and the axis are ``Const`` inputs (``size_splits``, ``split_dim``),
  ``num_split`` says how many outputs there are;
- ``Range``: the bounds are attributes here when they are known, inputs otherwise; TensorFlow's
  are always inputs (``Const``s when known). Read back, they stay inputs, so the range's
  length is known when the graph runs;
- ``LinSpace``: ``start``, ``stop`` and ``num`` are ``Const`` inputs;
- ``UnsortedSegmentSum``: ``num_segments`` is a ``Const`` input;
- ``Size``: the result's dtype is ``out_type``;
- ``PlaceholderWithDefault``: the default is the input, ``dtype`` and ``shape`` attributes;
- ``Where`` of one input: the int64 coordinates of the true elements, one row each;
- ``SparseSoftmaxCrossEntropyWithLogits``: the loss and its gradient (``backprop``), two
  outputs as eagerflow's; TensorFlow's kernel takes logits of rank 2 only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eagerflow.graph.core.graph import Operation
from eagerflow.graph.export.tf_graph_def.protos import TfShape
from eagerflow.graph.export.tf_graph_def.rules import (
    INT32,
    NotTranslated,
    TfAttrs,
    TfNode,
    dtype_of_input,
    int_of,
    ints_of,
    rank_of,
    tf_rule,
)
from eagerflow.tensor.dtypes import DType


def _no_attrs(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {}


def _read_split(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    sizes = ints_of(attrs, consts[0])
    if len(sizes) != attrs.get("num_split", int):
        raise attrs.error("num_split", f"is not the number of sizes {list(sizes)}")
    return {"sizes": sizes, "axis": int_of(attrs, consts[1])}


@tf_rule("SplitV", "SplitV", read=_read_split, consts=2)
def _split(op: Operation) -> TfNode:
    sizes = np.asarray(op.attrs["sizes"], np.int32)
    attrs = {"T": dtype_of_input(op), "Tlen": INT32, "num_split": len(sizes)}
    return TfNode("SplitV", attrs, (sizes, np.asarray(op.attrs["axis"], np.int32)))


def _read_size(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"dtype": attrs.get("out_type", DType)}


@tf_rule("Size", "Size", read=_read_size)
def _size(op: Operation) -> TfNode:
    return TfNode("Size", {"T": dtype_of_input(op), "out_type": op.attrs["dtype"]})


def _read_range(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"dtype": attrs.get("Tidx", DType)}


@tf_rule("Range", "Range", read=_read_range)
def _range(op: Operation) -> TfNode:
    """Known bounds (attributes here) are written as ``Const`` inputs of the range's dtype."""
    dtype = op.attrs["dtype"]
    if op.inputs:
        return TfNode("Range", {"Tidx": dtype})
    bounds = (np.asarray(op.attrs[k], dtype.np) for k in ("start", "limit", "delta"))
    return TfNode("Range", {"Tidx": dtype}, tuple(bounds))


def _read_linspace(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    start, stop, num = consts
    for key, value in (("start", start), ("stop", stop)):
        if value.ndim != 0 or value.dtype.kind != "f":
            raise attrs.error(f"<{key} input>", f"must be a float scalar, got {value!r:.40}")
    return {"start": float(start), "stop": float(stop), "num": int_of(attrs, num),
            "dtype": attrs.get("T", DType)}  # fmt: skip


@tf_rule("LinSpace", "LinSpace", read=_read_linspace, consts=3)
def _linspace(op: Operation) -> TfNode:
    a, dtype = op.attrs, op.attrs["dtype"]
    consts = (np.asarray(a["start"], dtype.np), np.asarray(a["stop"], dtype.np),
              np.asarray(a["num"], np.int32))  # fmt: skip
    return TfNode("LinSpace", {"T": dtype, "Tidx": INT32}, consts)


def _read_segment_sum(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"num_segments": int_of(attrs, consts[0])}


@tf_rule("UnsortedSegmentSum", "UnsortedSegmentSum", read=_read_segment_sum, consts=1)
def _segment_sum(op: Operation) -> TfNode:
    attrs = {"T": dtype_of_input(op), "Tindices": dtype_of_input(op, 1), "Tnumsegments": INT32}
    return TfNode("UnsortedSegmentSum", attrs, (np.asarray(op.attrs["num_segments"], np.int32),))


def _read_with_default(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"shape": attrs.get("shape", TfShape).dims}


@tf_rule("PlaceholderWithDefault", "PlaceholderWithDefault", read=_read_with_default)
def _with_default(op: Operation) -> TfNode:
    attrs = {"dtype": dtype_of_input(op), "shape": TfShape(op.attrs["shape"])}
    return TfNode("PlaceholderWithDefault", attrs)


@tf_rule("Where", "Where", read=_no_attrs)
def _where(op: Operation) -> TfNode:
    return TfNode("Where", {"T": dtype_of_input(op)})


@tf_rule("SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
         read=_no_attrs)  # fmt: skip
def _sparse_cross_entropy(op: Operation) -> TfNode:
    if rank_of(op) != 2:
        raise NotTranslated("TensorFlow's kernel takes logits of rank 2 (a batch of rows) only")
    attrs = {"T": dtype_of_input(op), "Tlabels": dtype_of_input(op, 1)}
    return TfNode("SparseSoftmaxCrossEntropyWithLogits", attrs)


__all__: list[str] = []  # registers its rules in TF_RULES
