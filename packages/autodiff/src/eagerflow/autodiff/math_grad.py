"""Gradient rules for the ops of ``eagerflow.tensor.math_ops`` and ``nn_ops``.

Each rule maps the gradient of an op's output (``grad``, the vector in a vector-Jacobian
product) to gradients of its inputs, using only public ops: eager tensors in, eager tensors
out; symbolic in, symbolic out. The one-line math above each rule is the derivative.
"""

from __future__ import annotations

import math

import eagerflow.tensor as ef
from eagerflow.autodiff.registry import OpRecord, not_differentiable, register_gradient
from eagerflow.tensor import Tensor
from eagerflow.tensor.rules import reduced_axes

Grads = tuple[Tensor | None, ...]


def sum_to_shape(grad: Tensor, like: Tensor) -> Tensor:
    """Undo broadcasting: sum ``grad`` over the axes along which ``like`` was stretched.

    If ``x`` of shape (3, 1) was broadcast to (2, 3, 4), each x[i, 0] was used 2 * 4 times,
    so its gradient is the sum over axis 0 (added) and axis 2 (stretched from 1).
    """
    shape, gshape = like.shape, grad.shape
    if shape == gshape:
        return grad
    lead = len(gshape) - len(shape)
    stretched = tuple(lead + i for i, d in enumerate(shape) if d == 1 and gshape[lead + i] != 1)
    if stretched:
        grad = ef.reduce_sum(grad, axis=stretched, keepdims=True)
    if lead:
        grad = ef.reduce_sum(grad, axis=tuple(range(lead)))
    return grad


# --- arithmetic --------------------------------------------------------------------------------
@register_gradient("AddV2")
def _add_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d(x + y) = dx + dy
    x, y = op.inputs
    return (
        sum_to_shape(grad, x) if op.needs(0) else None,
        sum_to_shape(grad, y) if op.needs(1) else None,
    )


@register_gradient("Sub")
def _sub_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d(x - y) = dx - dy
    x, y = op.inputs
    return (
        sum_to_shape(grad, x) if op.needs(0) else None,
        sum_to_shape(-grad, y) if op.needs(1) else None,
    )


@register_gradient("Mul")
def _mul_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d(x y) = y dx + x dy
    x, y = op.inputs
    if x is y:  # x * x: both terms are grad * x, computed once (their sum is the same)
        term = sum_to_shape(grad * x, x)
        return term, term
    return (
        sum_to_shape(grad * y, x) if op.needs(0) else None,
        sum_to_shape(grad * x, y) if op.needs(1) else None,
    )


@register_gradient("RealDiv")
def _div_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d(x / y) = dx / y - x / y² dy
    x, y = op.inputs
    return (
        sum_to_shape(grad / y, x) if op.needs(0) else None,
        sum_to_shape(-grad * x / (y * y), y) if op.needs(1) else None,
    )


@register_gradient("Pow")
def _pow_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d(xʸ) = y xʸ⁻¹ dx + xʸ ln(x) dy   (the dy term is taken as 0 where x <= 0)
    x, y = op.inputs
    (z,) = op.outputs
    dx = grad * y * ef.pow(x, y - 1)
    positive = x > 0
    safe_x = ef.where(positive, x, ef.ones_like(x))
    dy = grad * ef.where(positive, z * ef.log(safe_x), ef.zeros_like(z))
    return sum_to_shape(dx, x), sum_to_shape(dy, y)


@register_gradient("FloorMod")
def _floormod_grad(op: OpRecord, grad: Tensor) -> Grads:
    # x mod y = x - floor(x / y) y, so d/dx = 1 and d/dy = -floor(x / y)
    x, y = op.inputs
    return sum_to_shape(grad, x), sum_to_shape(-grad * ef.floordiv(x, y), y)


def _select_grad(op: OpRecord, grad: Tensor, x_wins: Tensor) -> Grads:
    x, y = op.inputs
    zeros = ef.zeros_like(grad)
    return (
        sum_to_shape(ef.where(x_wins, grad, zeros), x),
        sum_to_shape(ef.where(x_wins, zeros, grad), y),
    )


@register_gradient("Maximum")
def _maximum_grad(op: OpRecord, grad: Tensor) -> Grads:
    # the gradient goes to the larger input (to x on ties, as in TensorFlow)
    x, y = op.inputs
    return _select_grad(op, grad, x >= y)


@register_gradient("Minimum")
def _minimum_grad(op: OpRecord, grad: Tensor) -> Grads:
    # the gradient goes to the smaller input (to x on ties)
    x, y = op.inputs
    return _select_grad(op, grad, x <= y)


# --- unary ------------------------------------------------------------------------------------
@register_gradient("Neg")
def _neg_grad(op: OpRecord, grad: Tensor) -> Grads:
    return (-grad,)


@register_gradient("Abs")
def _abs_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d|x| = sign(x) dx
    return (grad * ef.sign(op.inputs[0]),)


@register_gradient("Square")
def _square_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d(x²) = 2x dx
    return (grad * (2.0 * op.inputs[0]),)


@register_gradient("Sqrt")
def _sqrt_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d√x = dx / (2√x), and 0 where dx is 0 (as TensorFlow's SqrtGrad kernel): a branch that
    # `where` masked off, √0 or √-1, then adds 0 to x's gradient instead of 0 · inf = nan
    return (ef.where(ef.equal(grad, 0.0), grad, grad * 0.5 / op.outputs[0]),)


@register_gradient("Exp")
def _exp_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d eˣ = eˣ dx
    return (grad * op.outputs[0],)


@register_gradient("Log")
def _log_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d ln x = dx / x
    return (grad / op.inputs[0],)


@register_gradient("Tanh")
def _tanh_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d tanh x = (1 - tanh² x) dx
    y = op.outputs[0]
    return (grad * (1.0 - y * y),)


@register_gradient("Sigmoid")
def _sigmoid_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d σ(x) = σ(x) (1 - σ(x)) dx
    y = op.outputs[0]
    return (grad * y * (1.0 - y),)


@register_gradient("Relu")
def _relu_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d relu(x) = dx where x > 0, else 0
    return (ef.relu_grad(grad, op.outputs[0]),)


@register_gradient("ReluGrad")
def _relu_grad_grad(op: OpRecord, grad: Tensor) -> Grads:
    # relu_grad(g, y) is linear in g with the same mask; the mask is flat in y: zeros there,
    # as in TensorFlow (not None: a second derivative through relu is 0, not unconnected)
    return (ef.relu_grad(grad, op.inputs[1]), ef.zeros_like(op.inputs[1]))


@register_gradient("Sign")
def _sign_grad(op: OpRecord, grad: Tensor) -> Grads:
    # sign is flat wherever it is differentiable: zeros, as in TensorFlow (not None)
    return (ef.zeros_like(op.inputs[0]),)


@register_gradient("Softplus")
def _softplus_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d log(1 + eˣ) = σ(x) dx
    return (grad * ef.sigmoid(op.inputs[0]),)


@register_gradient("Elu")
def _elu_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d elu(x) = dx for x > 0, eˣ dx = (y + 1) dx below (TF fuses this as EluGrad)
    y = op.outputs[0]
    return (ef.where(y > 0, grad, grad * (y + 1.0)),)


@register_gradient("LeakyRelu")
def _leaky_relu_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d leaky_relu(x) = dx for x > 0, alpha dx below
    x = op.inputs[0]
    return (ef.where(x > 0, grad, grad * op.attrs["alpha"]),)


@register_gradient("Softmax")
def _softmax_grad(op: OpRecord, grad: Tensor) -> Grads:
    # with y = softmax(x): dx = y (g - Σ g y), the sum along the softmax axis
    y = op.outputs[0]
    axis = op.attrs["axis"]
    return (y * (grad - ef.reduce_sum(grad * y, axis=axis, keepdims=True)),)


@register_gradient("LogSoftmax")
def _log_softmax_grad(op: OpRecord, grad: Tensor) -> Grads:
    # with y = log_softmax(x): dx = g - softmax(x) Σ g = g - eʸ Σ g
    y = op.outputs[0]
    axis = op.attrs["axis"]
    return (grad - ef.exp(y) * ef.reduce_sum(grad, axis=axis, keepdims=True),)


@register_gradient("SparseSoftmaxCrossEntropyWithLogits", accepts_none=True)
def _sparse_xent_grad(
    op: OpRecord, grad_loss: Tensor | None, grad_backprop: Tensor | None
) -> Grads:
    # loss = log Σ eᶻ - z[label]  =>  dz = dloss · (softmax(z) - onehot(label)), which the
    # kernel already returned as its second output, `backprop`
    logits = op.inputs[0]
    dz = None if grad_loss is None else ef.expand_dims(grad_loss, -1) * op.outputs[1]
    if grad_backprop is not None:  # differentiating a gradient: backprop = softmax(z) - onehot
        p = ef.softmax(logits)
        term = p * (grad_backprop - ef.reduce_sum(grad_backprop * p, axis=-1, keepdims=True))
        dz = term if dz is None else dz + term
    return (dz, None)  # labels are integers: no gradient


@register_gradient("Cast")
def _cast_grad(op: OpRecord, grad: Tensor) -> Grads:
    # a cast between float types passes the gradient back; to or from ints and bools it stops
    x = op.inputs[0]
    if x.dtype.is_floating and grad.dtype.is_floating:
        return (ef.cast(grad, x.dtype),)
    return (None,)


# --- matmul ---------------------------------------------------------------------------------------
@register_gradient("MatMul")
def _matmul_grad(op: OpRecord, grad: Tensor) -> Grads:
    # C = A B  =>  dA = dC Bᵀ,  dB = Aᵀ dC; with A or B stored transposed, the same products
    # come out with the roles and transposes swapped. Each is skipped when not needed: for a
    # layer's x @ W, dx costs as much as the forward product.
    a, b = op.inputs
    ta, tb = op.attrs["transpose_a"], op.attrs["transpose_b"]
    da = db = None
    if op.needs(0):
        if ta:
            da = ef.matmul(b, grad, transpose_a=tb, transpose_b=True)
        else:
            da = ef.matmul(grad, b, transpose_b=not tb)
        da = sum_to_shape(da, a)  # batch dimensions may have broadcast
    if op.needs(1):
        if tb:
            db = ef.matmul(grad, a, transpose_a=True, transpose_b=ta)
        else:
            db = ef.matmul(a, grad, transpose_a=not ta)
        db = sum_to_shape(db, b)
    return (da, db)


# --- reductions ----------------------------------------------------------------------------------
def _unreduce(op: OpRecord, grad: Tensor) -> Tensor:
    """``grad`` (of a reduction's output) reshaped with the reduced axes kept as size 1."""
    x = op.inputs[0]
    if op.attrs["keepdims"] or op.attrs["axis"] is None:  # a scalar broadcasts as it is
        return grad
    for axis in sorted(reduced_axes(op.attrs["axis"], x.ndim)):
        grad = ef.expand_dims(grad, axis)
    return grad


def _broadcast_like(grad: Tensor, x: Tensor) -> Tensor:
    """``grad`` broadcast to x's shape (multiplying by ones where x's shape is not static:
    a size or the rank unknown)."""
    if x.shape is None or None in x.shape:
        return grad * ef.ones_like(x)
    return ef.broadcast_to(grad, x.shape)  # type: ignore[arg-type]


@register_gradient("Sum")
def _sum_grad(op: OpRecord, grad: Tensor) -> Grads:
    # every summed element contributes with weight 1
    return (_broadcast_like(_unreduce(op, grad), op.inputs[0]),)


@register_gradient("Mean")
def _mean_grad(op: OpRecord, grad: Tensor) -> Grads:
    # every averaged element contributes with weight 1/n
    x = op.inputs[0]
    shape = x.shape
    dims = [shape[axis] for axis in reduced_axes(op.attrs["axis"], len(shape))]
    count: Tensor | float
    if None in dims:  # a graph with unknown dimensions: count the elements when it runs
        count = ef.cast(ef.size(x), grad.dtype)
        if op.outputs[0].shape != ():  # (the mean of all elements is one element: no division)
            count = count / ef.cast(ef.size(op.outputs[0]), grad.dtype)
    else:
        count = float(math.prod(dims))  # type: ignore[arg-type]
    # divide before broadcasting: the division touches only the reduced (small) gradient
    return (_broadcast_like(_unreduce(op, grad) / count, x),)


def _extremum_grad(op: OpRecord, grad: Tensor) -> Grads:
    # the gradient goes to the elements equal to the max (min), shared equally among ties
    x = op.inputs[0]
    y = _unreduce(op, op.outputs[0])
    hits = ef.cast(ef.equal(x, y), x.dtype)
    count = ef.reduce_sum(hits, axis=op.attrs["axis"], keepdims=True)
    return (hits * _unreduce(op, grad) / count,)


register_gradient("Max")(_extremum_grad)
register_gradient("Min")(_extremum_grad)


@register_gradient("Prod")
def _prod_grad(op: OpRecord, grad: Tensor) -> Grads:
    # d Πx / dxᵢ = Π_{j≠i} xⱼ, computed without dividing by zero: with no zero among the
    # reduced elements it is y / xᵢ; with one zero it is the product of the others at that
    # zero and 0 elsewhere; with more than one zero it is 0 everywhere.
    x = op.inputs[0]
    axis = op.attrs["axis"]
    is_zero = ef.equal(x, ef.zeros_like(x))
    nonzero_x = ef.where(is_zero, ef.ones_like(x), x)
    nonzero_product = ef.reduce_prod(nonzero_x, axis=axis, keepdims=True)
    zeros = ef.reduce_sum(ef.cast(is_zero, x.dtype), axis=axis, keepdims=True)
    no_zero = ef.equal(zeros, ef.zeros_like(zeros))
    one_zero = ef.logical_and(ef.equal(zeros, ef.ones_like(zeros)), is_zero)
    others = ef.where(
        no_zero,
        nonzero_product / nonzero_x,
        ef.where(one_zero, nonzero_product * ef.ones_like(x), ef.zeros_like(x)),
    )
    return (others * _unreduce(op, grad),)


not_differentiable(
    "Less", "LessEqual", "Greater", "GreaterEqual", "Equal", "NotEqual",
    "LogicalAnd", "LogicalOr", "LogicalNot", "ArgMax", "ArgMin", "FloorDiv",
)  # fmt: skip


__all__ = ["Grads", "sum_to_shape"]
