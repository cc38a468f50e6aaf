"""Gradient rules for the convolution and pooling ops of ``eagerflow.tensor.conv_ops``.

Each gradient is an op of its own (TensorFlow's), and each of those has a rule here too,
so gradients of gradients work. The derivations rest on one fact: every op here is linear
in the gradient it carries, so its own gradient with respect to that input is its adjoint,
the op that sends values back along the same connections. Writing ⟨a, b⟩ for Σ a·b:

- conv2d(x, w) is bilinear. ⟨g, conv2d(x, w)⟩ = ⟨backprop_input(g, w), x⟩
  = ⟨backprop_filter(x, g), w⟩: these define the two backprops, and read the other way
  round they give the backprops' own gradients (below);
- max_pool2d routes each window's gradient to its arg-max (MaxPoolGrad); the adjoint of
  routing is reading back from the same cells (MaxPoolGradGrad), and its adjoint routing
  again. The arg-max does not move for a small change of the input, so the gradient with
  respect to the pooled input of either op is zero (almost everywhere);
- avg_pool2d spreads each window's gradient evenly (AvgPoolGrad); the adjoint of spreading
  is averaging, avg_pool2d itself.
"""

from __future__ import annotations

from typing import Any

import eagerflow.tensor as ef
from eagerflow.autodiff.math_grad import Grads
from eagerflow.autodiff.registry import OpRecord, register_gradient
from eagerflow.tensor import Tensor


def _conv_attrs(op: OpRecord) -> dict[str, Any]:
    a = op.attrs
    return {"strides": a["strides"], "padding": a["padding"], "dilations": a["dilations"]}


# --- conv2d --------------------------------------------------------------------------------------
@register_gradient("Conv2D")
def _conv2d_grad(op: OpRecord, grad: Tensor) -> Grads:
    # y = conv2d(x, w): dx = backprop_input(x.shape, w, dy), dw = backprop_filter(x, w.shape, dy)
    x, w = op.inputs
    attrs = _conv_attrs(op)
    return (
        ef.nn.conv2d_backprop_input(x.shape, w, grad, **attrs) if op.needs(0) else None,
        ef.nn.conv2d_backprop_filter(x, w.shape, grad, **attrs) if op.needs(1) else None,
    )


@register_gradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(op: OpRecord, grad: Tensor) -> Grads:
    # z = backprop_input(w, g), h = dz (shaped like conv2d's input):
    # ⟨h, backprop_input(w, g)⟩ = ⟨conv2d(h, w), g⟩ = ⟨backprop_filter(h, g), w⟩
    w, g = op.inputs
    attrs = _conv_attrs(op)
    return (
        ef.nn.conv2d_backprop_filter(grad, w.shape, g, **attrs) if op.needs(0) else None,
        ef.nn.conv2d(grad, w, **attrs) if op.needs(1) else None,
    )


@register_gradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter_grad(op: OpRecord, grad: Tensor) -> Grads:
    # z = backprop_filter(x, g), h = dz (shaped like the filters):
    # ⟨h, backprop_filter(x, g)⟩ = ⟨conv2d(x, h), g⟩ = ⟨backprop_input(x.shape, h, g), x⟩
    x, g = op.inputs
    attrs = _conv_attrs(op)
    return (
        ef.nn.conv2d_backprop_input(x.shape, grad, g, **attrs) if op.needs(0) else None,
        ef.nn.conv2d(x, grad, **attrs) if op.needs(1) else None,
    )


# --- pooling -------------------------------------------------------------------------------------
def _pool_attrs(op: OpRecord) -> dict[str, Any]:
    a = op.attrs
    return {"ksize": a["ksize"], "strides": a["strides"], "padding": a["padding"]}


@register_gradient("MaxPool")
def _max_pool_grad(op: OpRecord, grad: Tensor) -> Grads:
    # each window's dy goes to its (first) maximum
    return (ef.nn.max_pool_grad(op.inputs[0], grad, **_pool_attrs(op)),)


@register_gradient("MaxPoolGrad")
def _max_pool_grad_grad(op: OpRecord, grad: Tensor) -> Grads:
    # linear in g: its adjoint reads dz back at each window's maximum; flat in x (the
    # arg-max does not move), so x gets zeros
    x, _ = op.inputs
    return (
        ef.zeros_like(x) if op.needs(0) else None,
        ef.nn.max_pool_grad_grad(x, grad, **_pool_attrs(op)) if op.needs(1) else None,
    )


@register_gradient("MaxPoolGradGrad")
def _max_pool_grad_grad_grad(op: OpRecord, grad: Tensor) -> Grads:
    # linear in g: its adjoint routes dz to the maxima again; flat in x
    x, _ = op.inputs
    return (
        ef.zeros_like(x) if op.needs(0) else None,
        ef.nn.max_pool_grad(x, grad, **_pool_attrs(op)) if op.needs(1) else None,
    )


@register_gradient("AvgPool")
def _avg_pool_grad(op: OpRecord, grad: Tensor) -> Grads:
    # each window's dy, divided by its count, spread over the window
    x = op.inputs[0]
    return (ef.nn.avg_pool_grad(x.shape, grad, **_pool_attrs(op)),)


@register_gradient("AvgPoolGrad")
def _avg_pool_grad_grad(op: OpRecord, grad: Tensor) -> Grads:
    # linear in g; the adjoint of spreading evenly is averaging: avg_pool2d itself
    return (ef.nn.avg_pool2d(grad, **_pool_attrs(op)),)


__all__: list[str] = []  # (importing the module registers the rules)
