"""Gradient rules for the ops of ``eagerflow.tensor.array_ops`` and ``indexing_ops``.

Most array ops only move elements around, so each gradient moves the output gradient back
the other way: reshape back, transpose by the inverse permutation, split what was
concatenated, scatter what was gathered.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import eagerflow.tensor as ef
from eagerflow.autodiff.math_grad import Grads, sum_to_shape
from eagerflow.autodiff.registry import OpRecord, not_differentiable, register_gradient
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import format_shape
from eagerflow.tensor.indexing_ops import getitem
from eagerflow.tensor.rules import normalize_axis


def _static_shape(x: Tensor) -> tuple[int, ...]:
    """x's shape, with one unknown dimension (if any) as -1, for ``reshape``."""
    shape = tuple(-1 if d is None else d for d in x.shape)
    if shape.count(-1) > 1:
        raise ValueError(
            f"the gradient needs x's shape, but {format_shape(x.shape)} has several unknowns"
        )
    return shape


@register_gradient("Identity")
def _identity_grad(op: OpRecord, grad: Tensor) -> Grads:
    return (grad,)


@register_gradient("Reshape")
def _reshape_grad(op: OpRecord, grad: Tensor) -> Grads:
    return (ef.reshape(grad, _static_shape(op.inputs[0])),)


register_gradient("ExpandDims")(_reshape_grad)
register_gradient("Squeeze")(_reshape_grad)


@register_gradient("Transpose")
def _transpose_grad(op: OpRecord, grad: Tensor) -> Grads:
    # undo the permutation: axis perm[i] of x became axis i of y
    perm = op.attrs["perm"]
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return (ef.transpose(grad, inverse),)


@register_gradient("BroadcastTo")
def _broadcast_to_grad(op: OpRecord, grad: Tensor) -> Grads:
    return (sum_to_shape(grad, op.inputs[0]),)


@register_gradient("Tile")
def _tile_grad(op: OpRecord, grad: Tensor) -> Grads:
    # y = tile(x, m): view grad as shape (m0, d0, m1, d1, ...) and sum over the copies m_i
    x = op.inputs[0]
    split_shape: list[int] = []
    for m, d in zip(op.attrs["multiples"], _static_shape(x), strict=True):
        split_shape += [m, d]
    summed = ef.reduce_sum(ef.reshape(grad, split_shape), axis=tuple(range(0, 2 * x.ndim, 2)))
    return (summed,)


@register_gradient("ConcatV2")
def _concat_grad(op: OpRecord, grad: Tensor) -> Grads:
    # cut grad back into the pieces that were joined
    axis = normalize_axis(op.attrs["axis"], grad.ndim)
    sizes = [x.shape[axis] for x in op.inputs]
    if None in sizes:
        return _concat_grad_counted(op.inputs, grad, axis)
    return tuple(ef.split(grad, sizes, axis=axis))  # type: ignore[arg-type]


def _concat_grad_counted(inputs: Sequence[Tensor], grad: Tensor, axis: int) -> Grads:
    """The pieces of ``grad`` when some sizes along ``axis`` are known only at run time:
    each counted from its input's element count, and gathered."""
    start: Any = 0
    pieces = []
    for x in inputs:
        size: Any = x.shape[axis]
        if size is None:
            others = [d for i, d in enumerate(x.shape) if i != axis]
            if None in others or 0 in others:
                raise ValueError("the gradient of concat needs the static size of each input")
            size = ef.size(x) // math.prod(d for d in others if d is not None)
        pieces.append(ef.gather(grad, ef.range(start, start + size), axis=axis))
        start = start + size
    return tuple(pieces)


@register_gradient("Pack")
def _stack_grad(op: OpRecord, grad: Tensor) -> Grads:
    # take slice i along the stacking axis back to input i
    axis = normalize_axis(op.attrs["axis"], grad.ndim)
    index = (slice(None),) * axis
    return tuple(grad[(*index, i)] for i in range(len(op.inputs)))


@register_gradient("SplitV")
def _split_grad(op: OpRecord, *grads: Tensor) -> Grads:
    return (ef.concat(list(grads), axis=op.attrs["axis"]),)


@register_gradient("GatherV2")
def _gather_grad(op: OpRecord, grad: Tensor) -> Grads:
    # y = gather(params, idx, axis): each picked slice sends its gradient back to the slice
    # it came from, added up where an index repeats (unsorted_segment_sum: the adjoint)
    params, indices = op.inputs
    axis = normalize_axis(op.attrs["axis"], params.ndim)
    size = params.shape[axis]
    if size is None:
        raise ValueError("the gradient of gather needs the static size of the gathered axis")
    # move the gathered axes to the front, add up per index, move the axis back
    k = indices.ndim
    perm = [*range(axis, axis + k), *range(axis), *range(axis + k, grad.ndim)]
    moved = ef.transpose(grad, perm) if perm != list(range(grad.ndim)) else grad
    summed = ef.unsorted_segment_sum(moved, indices, size)
    back = [*range(1, axis + 1), 0, *range(axis + 1, params.ndim)]
    return (ef.transpose(summed, back) if back != list(range(params.ndim)) else summed, None)


@register_gradient("UnsortedSegmentSum")
def _segment_sum_grad(op: OpRecord, grad: Tensor) -> Grads:
    # each data slice was added into out[segment_id]: it gets that row's gradient back, and
    # a slice with a negative id (dropped) gets zeros
    ids = op.inputs[1]
    back = ef.gather(grad, ef.maximum(ids, 0))
    kept = ids >= 0
    for _ in range(len(back.shape) - len(ids.shape)):  # kept's axes line up with back's first
        kept = ef.expand_dims(kept, -1)
    return (ef.where(kept, back, ef.zeros_like(back)), None)


@register_gradient("StridedSlice")
def _slice_grad(op: OpRecord, grad: Tensor) -> Grads:
    # the picked elements get their gradient back; the others get zero
    # (an unknown size, such as a batch's, is then read from grad where the key keeps it)
    x = op.inputs[0]
    return (ef.strided_slice_grad(grad, x.shape, op.attrs["key"]),)


@register_gradient("StridedSliceGrad")
def _slice_grad_grad(op: OpRecord, grad: Tensor) -> Grads:
    # strided_slice_grad is linear: its adjoint is the slice itself
    return (getitem(grad, op.attrs["key"]),)


@register_gradient("SelectV2")
def _where_grad(op: OpRecord, grad: Tensor) -> Grads:
    # the gradient goes to x where the condition holds, to y elsewhere
    condition, x, y = op.inputs
    zeros = ef.zeros_like(grad)
    return (
        None,
        sum_to_shape(ef.where(condition, grad, zeros), x),
        sum_to_shape(ef.where(condition, zeros, grad), y),
    )


not_differentiable(
    "Const", "Fill", "Size", "ZerosLike", "OnesLike", "Range", "OneHot", "StopGradient", "Where",
    "RandomNormal", "RandomUniform", "RandomShuffle", "LinSpace", "PrintV2",
)  # fmt: skip


__all__ = []
