"""The race of chapter 13 ("How much faster?"): three small training steps, each run six ways.

The page shows the chart and the call; this module holds the harness behind them, so that a
reader meets the result first and the machinery after (the page lists the parts worth reading
with ``tutorial.listing``). The steps:

* **regression**: ``w * x + b`` against ``y``, a mean squared error;
* **MLP**: a 100-64-10 network with ReLU and softmax cross-entropy, batch 64;
* **GELU block**: ``x @ W + b``, the tanh approximation of GELU, then layer norm with a scale
  and a shift, and a mean squared error.

Each is run eagerly with a tape, as a graph with ``Session.run``, traced with ``@function``,
traced and compiled with ``@function(jit_compile=True)``, written by hand in NumPy (the
gradients worked out on paper), and in PyTorch's eager mode when it is installed. Every step
ends with a plain gradient-descent update of every parameter.

This file sits next to ``tutorial.py`` (``site/docs/chapters/``), whose ``race`` it uses; a
notebook of chapter 13 needs both next to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits
from tutorial import Timing, race

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import (
    Graph,
    Session,
    function,
    global_variables_initializer,
    gradients,
    group,
    placeholder,
)

try:
    import torch
except ImportError:  # PyTorch is optional: the chart leaves it out
    torch = None

Step = Callable[[], Any]  # one training step, returning its loss
Workload = dict[str, Any]  # loss, x, y, learning_rate, params (NumPy arrays)
GELU_C, GELU_K = float(np.sqrt(2 / np.pi)), 0.044715


def sgd_step(loss_fn: Callable[..., Any], variables: list[Variable], learning_rate: float
             ) -> Callable[[Any, Any], Any]:  # fmt: skip
    """An eagerflow training step: the loss under a tape, then ``v -= lr * grad`` for each."""

    def step(x: Any, y: Any) -> Any:
        with GradientTape() as tape:
            loss = loss_fn(x, y, *variables)
        grads = tape.gradient(loss, variables)
        for variable, grad in zip(variables, grads, strict=True):
            variable.assign_sub(learning_rate * grad)
        return loss

    return step


def regression_loss(x: Any, y: Any, w: Any, b: Any) -> Any:
    """The mean squared error of the line ``w * x + b``."""
    error = w * x + b - y
    return ef.reduce_mean(error * error)


def mlp_loss(x: Any, y: Any, w1: Any, b1: Any, w2: Any, b2: Any) -> Any:
    """Softmax cross-entropy of a two-layer ReLU network."""
    logits = ef.matmul(ef.relu(ef.matmul(x, w1) + b1), w2) + b2
    return ef.reduce_mean(nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))


def block_loss(x: Any, y: Any, w: Any, b: Any, gamma: Any, beta: Any) -> Any:
    """A transformer's feed-forward block, small: GELU, then layer norm, then an MSE."""
    h = ef.matmul(x, w) + b
    g = 0.5 * h * (1.0 + ef.tanh(GELU_C * (h + GELU_K * (h * h * h))))
    centred = g - ef.reduce_mean(g, axis=-1, keepdims=True)
    variance = ef.reduce_mean(ef.square(centred), axis=-1, keepdims=True)
    out = centred / ef.sqrt(variance + 1e-5) * gamma + beta
    return ef.reduce_mean(ef.square(out - y))


def make_workloads(xs: np.ndarray, ys: np.ndarray, rng: np.random.Generator
                   ) -> dict[str, Workload]:  # fmt: skip
    """The three workloads: the regression on ``xs, ys``, the others drawn from ``rng``."""

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (scale * rng.standard_normal(shape)).astype(np.float32)

    return {
        "regression": dict(loss=regression_loss, x=xs, y=ys, learning_rate=0.01,
                           params=[np.float32(5.0), np.float32(10.0)]),
        "MLP": dict(loss=mlp_loss, x=normal(64, 100), y=rng.integers(0, 10, 64),
                    learning_rate=0.1,
                    params=[normal(100, 64, scale=0.1), np.zeros(64, np.float32),
                            normal(64, 10, scale=0.1), np.zeros(10, np.float32)]),
        "GELU block": dict(loss=block_loss, x=normal(256, 64), y=normal(256, 64),
                           learning_rate=0.1,
                           params=[normal(64, 64, scale=0.125), normal(64, scale=0.1),
                                   1 + normal(64, scale=0.1), normal(64, scale=0.1)]),
    }  # fmt: skip


def eagerflow_ways(work: Workload) -> tuple[dict[str, Step], Any]:
    """The four eagerflow contenders for one workload, each with its own variables, and the
    compiled step's concrete function (to read its ``Program`` after the race)."""
    x, y = ef.constant(work["x"]), ef.constant(work["y"])

    def fresh_step() -> Callable[[Any, Any], Any]:
        variables = [Variable(p.copy()) for p in work["params"]]
        return sgd_step(work["loss"], variables, work["learning_rate"])

    eager = fresh_step()
    traced = function(fresh_step())
    jitted = function(fresh_step(), jit_compile=True)
    graph = Graph()
    with graph.as_default():  # the same loss function, called on placeholders
        x_in = placeholder(x.dtype, x.shape, name="x")
        y_in = placeholder(y.dtype, y.shape, name="y")
        variables = [Variable(p.copy()) for p in work["params"]]
        loss = work["loss"](x_in, y_in, *variables)
        grads = gradients(loss, variables)
        updates = [v.assign_sub(work["learning_rate"] * g)
                   for v, g in zip(variables, grads, strict=True)]  # fmt: skip
        train = group(*updates)
        init = global_variables_initializer()
    session = Session(graph)
    session.run(init)
    feed = {x_in: work["x"], y_in: work["y"]}
    return {
        "eager": lambda: eager(x, y),
        "Session.run": lambda: session.run([loss, train], feed)[0],
        "@function": lambda: traced(x, y),
        "jit_compile=True": lambda: jitted(x, y),
    }, jitted.get_concrete_function(x, y)


def numpy_regression(x: np.ndarray, y: np.ndarray, learning_rate: float,
                     params: Sequence[Any]) -> Step:  # fmt: skip
    """The regression step by hand in NumPy."""
    w, b = params

    def step() -> Any:
        nonlocal w, b
        error = w * x + b - y
        w = w - learning_rate * 2 * np.mean(error * x)
        b = b - learning_rate * 2 * np.mean(error)
        return np.mean(error * error)

    return step


def numpy_mlp(x: np.ndarray, y: np.ndarray, learning_rate: float,
              params: Sequence[np.ndarray]) -> Step:  # fmt: skip
    """The MLP step by hand in NumPy, its backward pass written out."""
    params = [p.copy() for p in params]
    rows = np.arange(len(y))

    def step() -> Any:
        w1, b1, w2, b2 = params
        h = x @ w1 + b1
        a = np.maximum(h, 0)
        logits = a @ w2 + b2
        e = np.exp(logits - logits.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        loss = -np.mean(np.log(p[rows, y]))
        p[rows, y] -= 1  # now the gradient of the loss for the logits, times len(y)
        d_logits = p / len(y)
        d_h = (d_logits @ w2.T) * (h > 0)
        grads = [x.T @ d_h, d_h.sum(0), a.T @ d_logits, d_logits.sum(0)]
        for param, grad in zip(params, grads, strict=True):
            param -= learning_rate * grad
        return loss

    return step


def numpy_block(x: np.ndarray, y: np.ndarray, learning_rate: float,
                params: Sequence[np.ndarray]) -> Step:  # fmt: skip
    """The GELU block's step by hand in NumPy, layer norm's gradient included."""
    params = [p.copy() for p in params]

    def step() -> Any:
        w, b, gamma, beta = params
        h = x @ w + b
        t = np.tanh(GELU_C * (h + GELU_K * h * h * h))
        g = 0.5 * h * (1 + t)
        centred = g - g.mean(axis=-1, keepdims=True)
        r = 1 / np.sqrt((centred * centred).mean(axis=-1, keepdims=True) + 1e-5)
        n = centred * r
        out = n * gamma + beta
        loss = np.mean((out - y) ** 2)
        d_out = 2 * (out - y) / out.size
        d_n = d_out * gamma
        d_g = r * (d_n - d_n.mean(axis=-1, keepdims=True)
                   - n * (d_n * n).mean(axis=-1, keepdims=True))  # fmt: skip
        d_h = d_g * (0.5 * (1 + t)
                     + 0.5 * h * (1 - t * t) * GELU_C * (1 + 3 * GELU_K * h * h))  # fmt: skip
        grads = [x.T @ d_h, d_h.sum(0), (d_out * n).sum(0), d_out.sum(0)]
        for param, grad in zip(params, grads, strict=True):
            param -= learning_rate * grad
        return loss

    return step


NUMPY_STEPS = {"regression": numpy_regression, "MLP": numpy_mlp, "GELU block": numpy_block}


def _torch_loss(name: str, x: Any, y: Any, params: list[Any]) -> Any:
    """The workload's loss in torch ops, the same math as its eagerflow loss function."""
    if name == "regression":
        w, b = params
        return ((w * x + b - y) ** 2).mean()
    if name == "MLP":
        w1, b1, w2, b2 = params
        return torch.nn.functional.cross_entropy(torch.relu(x @ w1 + b1) @ w2 + b2, y)
    w, b, gamma, beta = params
    h = x @ w + b
    g = 0.5 * h * (1.0 + torch.tanh(GELU_C * (h + GELU_K * (h * h * h))))
    centred = g - g.mean(dim=-1, keepdim=True)
    variance = (centred * centred).mean(dim=-1, keepdim=True)
    out = centred / torch.sqrt(variance + 1e-5) * gamma + beta
    return ((out - y) ** 2).mean()


def torch_way(name: str, work: Workload) -> Step:
    """The step in PyTorch's eager mode, with its autograd."""
    x, y = torch.from_numpy(work["x"]), torch.from_numpy(work["y"])
    params = [torch.tensor(p, requires_grad=True) for p in work["params"]]

    def step() -> float:
        loss = _torch_loss(name, x, y, params)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for param, grad in zip(params, grads, strict=True):
                param.sub_(work["learning_rate"] * grad)
        return float(loss.item())

    return step


def race_workloads(workloads: dict[str, Workload]
                   ) -> tuple[dict[str, dict[str, Timing]], dict[str, dict[str, float]],
                              dict[str, Any]]:  # fmt: skip
    """Race the six ways of each workload: ``(results, micros, programs)``, by workload, of
    each contender's ``Timing``, its microseconds per step, and the compiled ``Program``.

    Every contender's first loss must agree with eager mode's, so that all compute the same
    thing; that first call (where a traced step traces and a compiled one compiles) is timed
    apart by ``race``. NumPy's matrix products run on one thread, as ``make bench`` has them:
    what is compared is the work around them, not how a library splits a product."""
    if torch is not None:
        torch.set_num_threads(1)
    results, micros, programs = {}, {}, {}
    with threadpool_limits(limits=1, user_api="blas"):
        for name, work in workloads.items():
            ways, concrete_step = eagerflow_ways(work)
            ways["NumPy, by hand"] = NUMPY_STEPS[name](
                work["x"], work["y"], work["learning_rate"], work["params"]
            )
            if torch is not None:
                ways["PyTorch"] = torch_way(name, work)
            first = {label: float(run()) for label, run in ways.items()}
            assert np.allclose(list(first.values()), first["eager"], rtol=1e-4), (name, first)
            results[name] = race(ways)
            micros[name] = {label: timing.micros for label, timing in results[name].items()}
            (programs[name],) = concrete_step.compiled().programs.values()
    return results, micros, programs
