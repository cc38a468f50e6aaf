"""Benchmarks: eagerflow's overhead against hand-written NumPy (and PyTorch when installed).

Each workload is a set of contenders doing the same work. They are timed interleaved in one
process (round 1: A, B, C; round 2: A, B, C; ...) so that a slow moment of the machine hits
all of them alike, and each contender's time is its best round: on a shared machine, noise
only ever adds time. Only ratios are printed and compared with targets; nothing asserts on
speed (tests must not depend on how busy the machine is).

    python benchmarks/run.py              # every workload
    python benchmarks/run.py W1 --rounds 50
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# One BLAS thread for every contender (set before NumPy loads its BLAS): W4's matmuls then
# compare framework overhead, not how each library splits work across cores.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
from numpy.lib.stride_tricks import sliding_window_view  # noqa: E402

Step = Callable[[], object]


@dataclass
class Workload:
    """One benchmark: contenders that each run ``ops_per_call`` ops per call."""

    key: str
    title: str
    contenders: dict[str, Step]
    target: float | None = None  # at most this many times hand-written NumPy
    ops_per_call: int = 1
    notes: list[str] = field(default_factory=list)
    beat_pytorch: bool = False  # a second target: eagerflow's time at most PyTorch's


def best_times(contenders: dict[str, Step], rounds: int, budget: float) -> dict[str, float]:
    """Seconds per call for each contender: the best of ``rounds`` interleaved rounds."""
    # Calibrate: enough calls per round that one round of the slowest takes ~budget/rounds.
    calls: dict[str, int] = {}
    for name, step in contenders.items():
        step()  # warm up (imports, caches)
        n, elapsed = 1, 0.0
        while elapsed < 0.002:
            start = time.perf_counter()
            for _ in range(n):
                step()
            elapsed = time.perf_counter() - start
            n *= 2
        calls[name] = max(1, int(n / 2 * (budget / rounds) / max(elapsed, 1e-9)))
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(rounds):
        for name, step in contenders.items():
            n = calls[name]
            start = time.perf_counter()
            for _ in range(n):
                step()
            best[name] = min(best[name], (time.perf_counter() - start) / n)
    return best


def beside_eager(work: Workload, step: Step) -> dict[str, Step]:
    """Contenders for another mode of ``work``: its NumPy step, ``step``, and its eager step."""
    numpy, eager = work.contenders["numpy"], work.contenders["eagerflow"]
    return {"numpy": numpy, "eagerflow": step, "eager": eager}


def w1_eager_add() -> Workload:
    from eagerflow import tensor as ef

    a = np.arange(4, dtype=np.float32)
    b = np.ones(4, dtype=np.float32)
    x, y = ef.constant(a), ef.constant(b)
    contenders: dict[str, Step] = {"numpy": lambda: a + b, "eagerflow": lambda: x + y}
    if importlib.util.find_spec("torch") is not None:
        import torch

        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        contenders["pytorch"] = lambda: ta + tb
    return Workload("W1", "eager add of two 4-element float32 tensors", contenders, target=3.0)


def _torch() -> Any:
    """The torch module when it is installed (an optional peer, never a dependency)."""
    return importlib.import_module("torch") if importlib.util.find_spec("torch") else None


def w2_tape_small() -> Workload:
    from eagerflow import tensor as ef
    from eagerflow.autodiff import GradientTape

    a_np = np.arange(1, 5, dtype=np.float32)
    b_np = np.full(4, 0.5, dtype=np.float32)
    a, b = ef.constant(a_np), ef.constant(b_np)

    def numpy_step() -> object:
        y = a_np * b_np + a_np  # forward
        ones = np.ones_like(y)  # backward by hand: dy/da = b + 1, dy/db = a
        return y, ones * b_np + ones, ones * a_np

    def eagerflow_step() -> object:
        with GradientTape() as tape:
            tape.watch([a, b])
            y = a * b + a
        return tape.gradient(y, [a, b])

    contenders: dict[str, Step] = {"numpy": numpy_step, "eagerflow": eagerflow_step}
    if torch := _torch():
        ta = torch.from_numpy(a_np.copy()).requires_grad_()
        tb = torch.from_numpy(b_np.copy()).requires_grad_()

        def torch_step() -> object:
            y = ta * tb + ta
            return torch.autograd.grad(y.sum(), [ta, tb])

        contenders["pytorch"] = torch_step
    return Workload("W2", "y = a*b + a, forward + backward, 4-element float32", contenders, 10.0)


def w5_chain(n: int) -> Callable[[], Workload]:
    def make() -> Workload:
        from eagerflow import tensor as ef
        from eagerflow.autodiff import GradientTape

        x_np = np.linspace(0.5, 1.0, 4, dtype=np.float32)
        c_np = np.float32(1 + 1 / n)  # the product stays near e: no overflow at any n
        x, c = ef.constant(x_np), ef.constant(c_np)

        def numpy_step() -> object:
            y = x_np
            for _ in range(n):  # forward: y = y * c, n times
                y = y * c_np
            g = np.ones_like(y)
            for _ in range(n):  # backward by hand: dy/dx = c at every step
                g = g * c_np
            return g

        def eagerflow_step() -> object:
            with GradientTape() as tape:
                tape.watch(x)
                y = x
                for _ in range(n):
                    y = y * c
            return tape.gradient(y, x)

        def without_gc() -> object:
            # CPython's cyclic GC walks every live tape record at each full collection;
            # backprop pauses it, recording cannot (user code runs there). This row shows
            # what the recording would cost per op without it.
            gc.disable()
            try:
                return eagerflow_step()
            finally:
                gc.enable()

        contenders: dict[str, Step] = {
            "numpy": numpy_step,
            "eagerflow": eagerflow_step,
            "no gc": without_gc,
        }
        if torch := _torch():
            tx = torch.from_numpy(x_np.copy()).requires_grad_()
            tc = torch.tensor(c_np)

            def torch_step() -> object:
                y = tx
                for _ in range(n):
                    y = y * tc
                return torch.autograd.grad(y.sum(), tx)

            contenders["pytorch"] = torch_step
        title = f"chain of {n:.0e} multiplies, forward + backward (per op)"
        return Workload(f"W5[{n:.0e}]", title, contenders, 8.0, ops_per_call=n)

    return make


def w6_regression_step() -> Workload:
    from eagerflow import tensor as ef
    from eagerflow.autodiff import GradientTape, Variable

    rng = np.random.default_rng(0)
    xs_np = rng.standard_normal(1000).astype(np.float32)
    ys_np = (3 * xs_np + 2 + rng.standard_normal(1000)).astype(np.float32)
    lr = np.float32(0.01)
    state = {"w": np.float32(5.0), "b": np.float32(10.0)}

    def numpy_step() -> object:
        err = state["w"] * xs_np + state["b"] - ys_np
        loss = np.mean(err * err)
        dw, db = np.mean(2 * err * xs_np), np.mean(2 * err)
        state["w"] = state["w"] - lr * dw
        state["b"] = state["b"] - lr * db
        return loss

    xs, ys = ef.constant(xs_np), ef.constant(ys_np)
    w, b = Variable(5.0), Variable(10.0)

    def eagerflow_step() -> object:
        with GradientTape() as tape:
            err = w * xs + b - ys
            loss = ef.reduce_mean(err * err)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(lr * dw)
        b.assign_sub(lr * db)
        return loss

    contenders: dict[str, Step] = {"numpy": numpy_step, "eagerflow": eagerflow_step}
    if torch := _torch():
        txs, tys = torch.from_numpy(xs_np), torch.from_numpy(ys_np)
        tw = torch.tensor(5.0, requires_grad=True)
        tb = torch.tensor(10.0, requires_grad=True)

        def torch_step() -> object:
            err = tw * txs + tb - tys
            loss = (err * err).mean()
            gw, gb = torch.autograd.grad(loss, [tw, tb])
            with torch.no_grad():
                tw.sub_(0.01 * gw)
                tb.sub_(0.01 * gb)
            return loss

        contenders["pytorch"] = torch_step
    return Workload("W6", "linear regression step on 1000 points (eager tape)", contenders, 8.0)


def w6_graph_step() -> Workload:
    """W6 in graph mode: placeholders, gradients(), assign_sub, one Session.run per step."""
    from eagerflow import tensor as ef
    from eagerflow.autodiff import Variable
    from eagerflow.graph import (
        Graph,
        Session,
        global_variables_initializer,
        gradients,
        group,
        placeholder,
    )

    work = w6_regression_step()
    rng = np.random.default_rng(0)
    xs_np = rng.standard_normal(1000).astype(np.float32)
    ys_np = (3 * xs_np + 2 + rng.standard_normal(1000)).astype(np.float32)
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        y = placeholder(ef.float32, (None,), name="y")
        w, b = Variable(5.0, name="W"), Variable(10.0, name="B")
        err = w * x + b - y
        loss = ef.reduce_mean(err * err)
        dw, db = gradients(loss, [w, b])
        train = group(w.assign_sub(0.01 * dw), b.assign_sub(0.01 * db))
        init = global_variables_initializer()
    session = Session(g)
    session.run(init)
    feed = {x: xs_np, y: ys_np}
    contenders = beside_eager(work, lambda: session.run(train, feed))
    return Workload("W6g", "linear regression step, graph mode (one Session.run)", contenders, 4.0)


def _w6_traced(jit_compile: bool = False) -> Step:
    """W6's step as a @function (compiled with ``jit_compile``), with its own variables."""
    from eagerflow import tensor as ef
    from eagerflow.autodiff import GradientTape, Variable
    from eagerflow.graph import function

    rng = np.random.default_rng(0)
    xs_np = rng.standard_normal(1000).astype(np.float32)
    xs = ef.constant(xs_np)
    ys = ef.constant((3 * xs_np + 2 + rng.standard_normal(1000)).astype(np.float32))
    w, b = Variable(5.0), Variable(10.0)

    @function(jit_compile=jit_compile)
    def step(x: ef.Tensor, y: ef.Tensor) -> ef.Tensor:
        with GradientTape() as tape:
            err = w * x + b - y
            loss = ef.reduce_mean(err * err)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(0.01 * dw)
        b.assign_sub(0.01 * db)
        return loss

    return lambda: step(xs, ys)


def w6_function_step() -> Workload:
    """W6 as a traced @function: the tape, gradients and assign_sub all inside one graph."""
    contenders = beside_eager(w6_regression_step(), _w6_traced())
    return Workload("W6f", "linear regression step as a traced @function", contenders, 4.0)


def w6_compiled_step() -> Workload:
    """W6 as a @function with jit_compile=True: the whole step's elementwise work one loop."""
    title = "linear regression step, @function(jit_compile=True)"
    return compiled("W6c", title, w6_regression_step(), _w6_traced, 0.5)


def compiled(key: str, title: str, work: Workload, traced: Callable[[bool], Step],
             target: float) -> Workload:  # fmt: skip
    """``work``'s NumPy step beside the same step traced with ``jit_compile=True`` (numba's
    fused loops, when installed), compiled by the NumPy backend (what runs without numba),
    traced plainly, and PyTorch's eager step when installed. Each compiled contender's
    first call, which compiles it, is timed once and noted."""
    contenders: dict[str, Step] = {"numpy": work.contenders["numpy"]}
    notes = []
    for name, backend in (("eagerflow", None), ("jit numpy", "numpy")):
        previous = os.environ.pop("EAGERFLOW_JIT_BACKEND", None)
        if backend is not None:
            os.environ["EAGERFLOW_JIT_BACKEND"] = backend
        try:
            step = traced(True)
            start = time.perf_counter()
            step()  # traces and compiles: the backend is chosen now
            notes.append(
                f"{name}: first call (trace + compile) {time.perf_counter() - start:.2f} s"
            )
        finally:
            os.environ.pop("EAGERFLOW_JIT_BACKEND", None)
            if previous is not None:
                os.environ["EAGERFLOW_JIT_BACKEND"] = previous
        contenders[name] = step
    contenders["function"] = traced(False)
    if "pytorch" in work.contenders:
        contenders["pytorch"] = work.contenders["pytorch"]
    return Workload(key, title, contenders, target, notes=notes)


def w4_mlp_step() -> Workload:
    """A 784-256-10 MLP (ReLU, softmax cross-entropy), batch 128: forward, backward, SGD."""
    from eagerflow import nn
    from eagerflow import tensor as ef
    from eagerflow.autodiff import GradientTape

    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((128, 784)).astype(np.float32)
    y_np = rng.integers(0, 10, 128)
    lr = np.float32(0.01)
    limit1, limit2 = np.sqrt(6 / (784 + 256)), np.sqrt(6 / (256 + 10))
    w1 = rng.uniform(-limit1, limit1, (784, 256)).astype(np.float32)
    w2 = rng.uniform(-limit2, limit2, (256, 10)).astype(np.float32)
    p = {"w1": w1, "b1": np.zeros(256, np.float32), "w2": w2, "b2": np.zeros(10, np.float32)}
    rows = np.arange(128)

    def numpy_step() -> object:
        h_in = x_np @ p["w1"] + p["b1"]
        h = np.maximum(h_in, 0)
        logits = h @ p["w2"] + p["b2"]
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss = -log_probs[rows, y_np].mean()
        d_logits = np.exp(log_probs)  # softmax - one_hot, over the batch size
        d_logits[rows, y_np] -= 1
        d_logits /= 128
        d_h = d_logits @ p["w2"].T
        d_h *= h_in > 0  # (a multiply: faster than d_h[h_in <= 0] = 0)
        grads = {"w2": h.T @ d_logits, "b2": d_logits.sum(0), "w1": x_np.T @ d_h,
                 "b1": d_h.sum(0)}  # fmt: skip
        for name, g in grads.items():
            p[name] -= lr * g
        return loss

    ef.set_seed(0)
    model = nn.Sequential([nn.Dense(256, "relu"), nn.Dense(10)])
    x, y = ef.constant(x_np), ef.constant(y_np)
    model(x)
    optimizer = nn.GradientDescentOptimizer(0.01)
    variables = model.trainable_variables

    def eagerflow_step() -> object:
        with GradientTape() as tape:
            logits = model(x)
            loss = ef.reduce_mean(
                nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables, strict=True))
        return loss

    contenders: dict[str, Step] = {"numpy": numpy_step, "eagerflow": eagerflow_step}
    if torch := _torch():
        torch.set_num_threads(1)
        tm = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                 torch.nn.Linear(256, 10))  # fmt: skip
        tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np)
        topt = torch.optim.SGD(tm.parameters(), lr=0.01)

        def torch_step() -> object:
            topt.zero_grad()
            loss = torch.nn.functional.cross_entropy(tm(tx), ty)
            loss.backward()
            topt.step()
            return loss

        contenders["pytorch"] = torch_step
    return Workload("W4", "784-256-10 MLP step (fwd + bwd + SGD), batch 128, 1 BLAS thread",
                    contenders, 1.10)  # fmt: skip


def w4_graph_step() -> Workload:
    """W4 in graph mode: the same model on a placeholder, minimize(), one Session.run a step."""
    from eagerflow import nn
    from eagerflow import tensor as ef
    from eagerflow.graph import Graph, Session, global_variables_initializer, placeholder

    work = w4_mlp_step()
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal((128, 784)).astype(np.float32)
    y_np = rng.integers(0, 10, 128)
    g = Graph()
    with g.as_default():
        ef.set_seed(0)
        model = nn.Sequential([nn.Dense(256, "relu"), nn.Dense(10)])
        x = placeholder(ef.float32, (None, 784), name="x")
        y = placeholder(ef.int64, (None,), name="y")
        loss = ef.reduce_mean(
            nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x))
        )
        train = nn.GradientDescentOptimizer(0.01).minimize(loss)
        init = global_variables_initializer()
    session = Session(g)
    session.run(init)
    feed = {x: x_np, y: y_np}
    contenders = beside_eager(work, lambda: session.run(train, feed))
    return Workload("W4g", "W4 in graph mode (one Session.run per step)", contenders, 1.10)


def _w4_traced(jit_compile: bool = False) -> Step:
    """W4's step as a @function (compiled with ``jit_compile``), with its own model."""
    from eagerflow import nn
    from eagerflow import tensor as ef
    from eagerflow.autodiff import GradientTape
    from eagerflow.graph import function

    rng = np.random.default_rng(0)
    x = ef.constant(rng.standard_normal((128, 784)).astype(np.float32))
    y = ef.constant(rng.integers(0, 10, 128))
    ef.set_seed(0)
    model = nn.Sequential([nn.Dense(256, "relu"), nn.Dense(10)])
    model(x)
    optimizer = nn.GradientDescentOptimizer(0.01)

    @function(jit_compile=jit_compile)
    def step(x: ef.Tensor, y: ef.Tensor) -> ef.Tensor:
        with GradientTape() as tape:
            loss = ef.reduce_mean(
                nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x))
            )
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    return lambda: step(x, y)


def w4_function_step() -> Workload:
    """W4 as a traced @function: forward, tape gradients and the update in one graph."""
    contenders = beside_eager(w4_mlp_step(), _w4_traced())
    return Workload("W4f", "W4 as a traced @function", contenders, 1.10)


def w4_compiled_step() -> Workload:
    """W4 with jit_compile=True: bias + relu, the gradient's masks and sums fused; the
    matrix products write into planned buffers."""
    return compiled("W4c", "W4 as a @function(jit_compile=True)", w4_mlp_step(), _w4_traced, 1.0)


GELU_C = float(np.sqrt(2 / np.pi))  # GELU's tanh approximation: 0.5 h (1 + tanh(C (h + K h^3)))
GELU_K = 0.044715
LN_EPS = 1e-5


def _w7_arrays() -> dict[str, np.ndarray]:
    """W7's input and parameters (seed 0); b, gamma and beta away from 0 and 1, so that a
    gradient check of the hand-written backward pass sees every term."""
    rng = np.random.default_rng(0)
    limit = np.sqrt(6 / (256 + 256))
    return {
        "x": rng.standard_normal((4096, 256)).astype(np.float32),
        "w": rng.uniform(-limit, limit, (256, 256)).astype(np.float32),
        "b": (0.1 * rng.standard_normal(256)).astype(np.float32),
        "gamma": (1 + 0.1 * rng.standard_normal(256)).astype(np.float32),
        "beta": (0.1 * rng.standard_normal(256)).astype(np.float32),
    }


def _w7_numpy_step(a: dict[str, np.ndarray]) -> Callable[[], tuple[Any, ...]]:
    """W7 by hand: the forward pass keeps what the backward pass reuses (tanh, h^2, the
    normalized values, 1/std), and the backward pass overwrites buffers it no longer needs."""
    x, w, b, gamma, beta = a["x"], a["w"], a["b"], a["gamma"], a["beta"]
    c, k = np.float32(GELU_C), np.float32(GELU_K)

    def step() -> tuple[Any, ...]:
        h = x @ w
        h += b
        h2 = h * h
        t = h2 * k  # tanh(c h (1 + k h^2))
        t += 1
        t *= h
        t *= c
        np.tanh(t, out=t)
        g = t + 1  # gelu(h) = 0.5 h (1 + t)
        g *= h
        g *= 0.5
        g -= g.mean(axis=-1, keepdims=True)  # g - mean: the centred values
        tmp = g * g
        rstd = tmp.mean(axis=-1, keepdims=True)
        rstd += LN_EPS
        np.sqrt(rstd, out=rstd)
        np.divide(1, rstd, out=rstd)
        n = g
        n *= rstd  # normalized
        y = n * gamma
        y += beta
        loss = np.vdot(y, y) / y.size
        # backward: d loss / d y = 2 y / size
        dy = y
        dy *= 2 / y.size
        d_beta = dy.sum(0)
        np.multiply(dy, n, out=tmp)
        d_gamma = tmp.sum(0)
        dn = dy
        dn *= gamma
        # layer norm: dg = rstd (dn - mean(dn) - n mean(dn n))
        np.multiply(dn, n, out=tmp)
        dn_n = tmp.mean(axis=-1, keepdims=True)
        dn -= dn.mean(axis=-1, keepdims=True)
        np.multiply(n, dn_n, out=tmp)
        dg = dn
        dg -= tmp
        dg *= rstd
        # gelu'(h) = 0.5 (1 + t) + 0.5 h (1 - t^2) c (1 + 3 k h^2)
        np.multiply(t, t, out=tmp)
        np.subtract(1, tmp, out=tmp)
        h2 *= 3 * k
        h2 += 1
        h2 *= c
        tmp *= h2
        tmp *= h
        tmp += t
        tmp += 1
        tmp *= 0.5
        dh = dg
        dh *= tmp
        return loss, x.T @ dh, dh.sum(0), d_gamma, d_beta

    return step


def _w7_eager_step(a: dict[str, np.ndarray]) -> tuple[Callable[[Any], Any], Any]:
    """W7 with eagerflow's public ops under a tape, and its input: the math as written."""
    from eagerflow import tensor as ef
    from eagerflow.autodiff import GradientTape, Variable

    w, b = Variable(a["w"], name="W"), Variable(a["b"], name="b")
    gamma, beta = Variable(a["gamma"], name="gamma"), Variable(a["beta"], name="beta")

    def step(x: ef.Tensor) -> Any:
        with GradientTape() as tape:
            h = ef.matmul(x, w) + b
            g = 0.5 * h * (1.0 + ef.tanh(GELU_C * (h + GELU_K * (h * h * h))))
            centred = g - ef.reduce_mean(g, axis=-1, keepdims=True)
            var = ef.reduce_mean(ef.square(centred), axis=-1, keepdims=True)
            y = centred / ef.sqrt(var + LN_EPS) * gamma + beta
            loss = ef.reduce_mean(y * y)
        return loss, *tape.gradient(loss, [w, b, gamma, beta])

    return step, ef.constant(a["x"])


def w7_gelu_layernorm_step() -> Workload:
    """A GELU + layer-norm block, x of 4096x256: long elementwise chains, where fusion matters.

    h = x @ W + b; y = layer_norm(gelu_tanh(h)) * gamma + beta; loss = mean(y * y); the step
    returns the loss and its gradients for W, b, gamma and beta (no update: every call
    computes on the same values, so no contender's time depends on how many steps it ran).
    """
    a = _w7_arrays()
    eager_step, x = _w7_eager_step(a)
    contenders: dict[str, Step] = {
        "numpy": _w7_numpy_step(a),
        "eagerflow": lambda: eager_step(x),
    }
    if torch := _torch():
        torch.set_num_threads(1)
        tx = torch.from_numpy(a["x"])
        tw, tb, tgamma, tbeta = (torch.from_numpy(a[k].copy()).requires_grad_()
                                 for k in ("w", "b", "gamma", "beta"))  # fmt: skip
        params = [tw, tb, tgamma, tbeta]

        def torch_step() -> object:
            # The math written out in torch ops, as in the eagerflow contender
            h = tx @ tw + tb
            g = 0.5 * h * (1.0 + torch.tanh(GELU_C * (h + GELU_K * (h * h * h))))
            centred = g - g.mean(dim=-1, keepdim=True)
            var = (centred * centred).mean(dim=-1, keepdim=True)
            y = centred / torch.sqrt(var + LN_EPS) * tgamma + tbeta
            loss = (y * y).mean()
            return loss, *torch.autograd.grad(loss, params)

        def torch_fused_step() -> object:
            # torch's own kernels: F.gelu(approximate="tanh") and F.layer_norm, each one
            # kernel forward and one backward (biased variance, eps inside the sqrt: the same math)
            f = torch.nn.functional
            g = f.gelu(tx @ tw + tb, approximate="tanh")
            y = f.layer_norm(g, (256,), tgamma, tbeta, eps=LN_EPS)
            loss = (y * y).mean()
            return loss, *torch.autograd.grad(loss, params)

        contenders["pytorch"] = torch_step
        contenders["pytorch F"] = torch_fused_step
    title = "GELU + layer-norm block, fwd + bwd, x 4096x256, 1 BLAS thread"
    return Workload("W7", title, contenders)


def _w7_traced(jit_compile: bool = False) -> Step:
    from eagerflow.graph import function

    eager_step, x = _w7_eager_step(_w7_arrays())
    step = function(eager_step, jit_compile=jit_compile)
    return lambda: step(x)


def w7_function_step() -> Workload:
    """W7 as a traced @function: the tape and its gradients in one graph."""
    work = w7_gelu_layernorm_step()
    return Workload("W7f", "W7 as a traced @function", beside_eager(work, _w7_traced()))


def w7_compiled_step() -> Workload:
    """W7 with jit_compile=True: GELU's chain, and layer norm's between its reductions, fused."""
    title = "W7 as a @function(jit_compile=True)"
    # Not the 0.5x first asked for: the two 4096x256x256 matrix products, the same BLAS calls
    # in every contender, take 11.4 of hand-written NumPy's 19.1 ms, 0.6x on their own. The
    # rest (7.7 ms by hand) is what fusion speeds up: 4.3 ms compiled.
    return compiled("W7c", title, w7_gelu_layernorm_step(), _w7_traced, 0.9)


W8_BATCH = 64
W8_LR = np.float32(0.01)


def _w8_arrays() -> dict[str, np.ndarray]:
    """W8's batch (the first 64 training digits, scaled to [0, 1], one channel) and initial
    weights (Glorot uniform, seed 0; small random biases, so every term of the gradient
    check is non-zero)."""
    from eagerflow.nn.datasets import load_digits

    (x_train, y_train), _ = load_digits()
    rng = np.random.default_rng(0)

    def glorot(shape: tuple[int, ...], fan_in: int, fan_out: int) -> np.ndarray:
        limit = np.sqrt(6 / (fan_in + fan_out))
        return rng.uniform(-limit, limit, shape).astype(np.float32)

    def bias(n: int) -> np.ndarray:
        return (0.01 * rng.standard_normal(n)).astype(np.float32)

    return {
        "x": (x_train[:W8_BATCH, :, :, None] / np.float32(16)).astype(np.float32),
        "y": y_train[:W8_BATCH],
        "w1": glorot((3, 3, 1, 16), 9 * 1, 9 * 16), "b1": bias(16),
        "w2": glorot((3, 3, 16, 32), 9 * 16, 9 * 32), "b2": bias(32),
        "w3": glorot((512, 10), 512, 10), "b3": bias(10),
    }  # fmt: skip


W8_WEIGHTS = ("w1", "b1", "w2", "b2", "w3", "b3")


def _im2col(x: np.ndarray) -> np.ndarray:
    """The 3x3 SAME windows of NHWC ``x`` as a matrix [n*h*w, 3*3*c], columns in the order
    (kh, kw, c) of a [3, 3, c, o] filter reshaped to [9c, o]: one copy, then one matmul."""
    n, h, w, c = x.shape
    padded = np.zeros((n, h + 2, w + 2, c), x.dtype)
    padded[:, 1:-1, 1:-1, :] = x
    windows = sliding_window_view(padded, (3, 3), axis=(1, 2))  # [n, h, w, c, 3, 3], a view
    return windows.transpose(0, 1, 2, 4, 5, 3).reshape(n * h * w, 9 * c)


def _col2im(dy: np.ndarray, w: np.ndarray, shape: tuple[int, int, int, int]) -> np.ndarray:
    """The input gradient of a 3x3 SAME convolution: what each tap of each window read,
    ``dy @ w[a, b].T`` (one batched matmul for the 9 taps), added back where it was read."""
    n, h, wd, c = shape
    back = np.matmul(dy, w.transpose(0, 1, 3, 2))  # [3, 3, n*h*w, c]
    padded = np.zeros((n, h + 2, wd + 2, c), dy.dtype)
    for a in range(3):
        for b in range(3):
            padded[:, a : a + h, b : b + wd, :] += back[a, b].reshape(n, h, wd, c)
    return padded[:, 1:-1, 1:-1, :]


def _w8_numpy_grads(p: dict[str, np.ndarray], x: np.ndarray,
                    y: np.ndarray) -> tuple[np.float32, dict[str, np.ndarray]]:  # fmt: skip
    """The digits CNN's loss and gradients, by hand. Convolutions are im2col matmuls; the
    forward pass keeps what the backward pass reuses (the im2col matrices, the ReLU outputs,
    the pool's masks)."""
    n = len(y)
    # conv 3x3 (1 -> 16) + bias + relu: [n*8*8, 16]
    cols1 = _im2col(x)
    a1 = cols1 @ p["w1"].reshape(9, 16)
    a1 += p["b1"]
    np.maximum(a1, 0, out=a1)
    # max pool 2x2: the four cells of each window are four strided slices
    grid = a1.reshape(n, 8, 8, 16)
    cells = [grid[:, i::2, j::2, :] for i in (0, 1) for j in (0, 1)]
    pooled = np.maximum(np.maximum(cells[0], cells[1]), np.maximum(cells[2], cells[3]))
    # each window's first maximum (TensorFlow's tie rule), as one mask per cell
    free = np.ones(pooled.shape, bool)
    masks = []
    for cell in cells:
        mask = cell == pooled
        mask &= free
        free &= ~mask
        masks.append(mask)
    # conv 3x3 (16 -> 32) + bias + relu: [n*4*4, 32], flattened [n, 512]
    cols2 = _im2col(pooled)
    a2 = cols2 @ p["w2"].reshape(144, 32)
    a2 += p["b2"]
    np.maximum(a2, 0, out=a2)
    flat = a2.reshape(n, 512)
    logits = flat @ p["w3"]
    logits += p["b3"]
    # sparse softmax cross-entropy, mean over the batch
    logits -= logits.max(1, keepdims=True)
    log_probs = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    rows = np.arange(n)
    loss = -log_probs[rows, y].mean()
    d_logits = np.exp(log_probs)
    d_logits[rows, y] -= 1
    d_logits /= n
    # backward
    g = {"w3": flat.T @ d_logits, "b3": d_logits.sum(0)}
    d_a2 = (d_logits @ p["w3"].T).reshape(n * 16, 32)
    d_a2 *= a2 > 0
    g["w2"] = (cols2.T @ d_a2).reshape(3, 3, 16, 32)
    g["b2"] = d_a2.sum(0)
    d_pooled = _col2im(d_a2, p["w2"], (n, 4, 4, 16))
    # max pool backward: each window's gradient to its first maximum
    d_grid = np.empty((n, 8, 8, 16), np.float32)
    for (i, j), mask in zip(((0, 0), (0, 1), (1, 0), (1, 1)), masks, strict=True):
        np.multiply(d_pooled, mask, out=d_grid[:, i::2, j::2, :])
    d_a1 = d_grid.reshape(n * 64, 16)
    d_a1 *= a1 > 0
    g["w1"] = (cols1.T @ d_a1).reshape(3, 3, 1, 16)
    g["b1"] = d_a1.sum(0)
    return loss, g


def _w8_eager(a: dict[str, np.ndarray]) -> tuple[Callable[[Any, Any], Any], list[Any]]:
    """The digits CNN with eagerflow's ops under a tape, on Variables; the step returns the
    loss and the gradients (applying them is the caller's)."""
    from eagerflow import nn
    from eagerflow import tensor as ef
    from eagerflow.autodiff import GradientTape, Variable

    variables = [Variable(a[k], name=k) for k in W8_WEIGHTS]
    w1, b1, w2, b2, w3, b3 = variables

    def grads(x: ef.Tensor, y: ef.Tensor) -> Any:
        with GradientTape() as tape:
            h = ef.nn.relu(ef.nn.conv2d(x, w1, 1, "SAME") + b1)
            h = ef.nn.max_pool2d(h, 2, 2, "VALID")
            h = ef.nn.relu(ef.nn.conv2d(h, w2, 1, "SAME") + b2)
            logits = ef.matmul(ef.reshape(h, (-1, 512)), w3) + b3
            loss = ef.reduce_mean(
                nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
        return loss, tape.gradient(loss, variables)

    return grads, variables


def w8_cnn_step() -> Workload:
    """The tutorial's digits CNN, one SGD step on 64 real 8x8 digits (float32, NHWC):
    conv 3x3 SAME 16 + bias + relu, max pool 2x2, conv 3x3 SAME 32 + bias + relu,
    flatten (512), dense 10, sparse softmax cross-entropy (mean), SGD on all six weights.

    The hand-written NumPy step is checked against eagerflow's gradients when the workload
    is made, so both contenders compute the same thing.
    """
    from eagerflow import nn
    from eagerflow import tensor as ef

    a = _w8_arrays()
    x_np, y_np = a["x"], a["y"]
    p = {k: a[k].copy() for k in W8_WEIGHTS}

    def numpy_step() -> object:
        loss, g = _w8_numpy_grads(p, x_np, y_np)
        for k in W8_WEIGHTS:
            p[k] -= W8_LR * g[k]
        return loss

    grads, variables = _w8_eager(a)
    x, y = ef.constant(x_np), ef.constant(y_np)
    # the same loss and gradients, from the same weights, before any step
    loss, by_hand = _w8_numpy_grads(p, x_np, y_np)
    eager_loss, eager_grads = grads(x, y)
    np.testing.assert_allclose(float(eager_loss), loss, rtol=1e-5)
    for k, g in zip(W8_WEIGHTS, eager_grads, strict=True):
        np.testing.assert_allclose(np.asarray(g), by_hand[k], rtol=1e-4, atol=1e-6, err_msg=k)
    optimizer = nn.GradientDescentOptimizer(float(W8_LR))

    def eagerflow_step() -> object:
        loss, gradients = grads(x, y)
        optimizer.apply_gradients(zip(gradients, variables, strict=True))
        return loss

    contenders: dict[str, Step] = {"numpy": numpy_step, "eagerflow": eagerflow_step}
    if torch := _torch():
        torch.set_num_threads(1)
        f = torch.nn.functional
        tx = torch.from_numpy(x_np.transpose(0, 3, 1, 2).copy())  # NCHW
        ty = torch.from_numpy(y_np)
        # the same weights in torch's layouts: filters [o, c, kh, kw], dense [out, in] over
        # the NCHW flattening (the time does not depend on it; the values only start equal)
        layouts = {"w1": (3, 2, 0, 1), "w2": (3, 2, 0, 1), "w3": (1, 0)}
        tp = [torch.from_numpy(a[k].transpose(layouts.get(k)).copy()).requires_grad_()
              for k in W8_WEIGHTS]  # fmt: skip
        topt = torch.optim.SGD(tp, lr=float(W8_LR))

        def torch_step() -> object:
            topt.zero_grad()
            h = f.relu(f.conv2d(tx, tp[0], tp[1], padding=1))
            h = f.max_pool2d(h, 2)
            h = f.relu(f.conv2d(h, tp[2], tp[3], padding=1))
            loss = f.cross_entropy(f.linear(h.flatten(1), tp[4], tp[5]), ty)
            loss.backward()
            topt.step()
            return loss

        contenders["pytorch"] = torch_step
    title = "digits CNN step (2 convs, pool, dense; fwd + bwd + SGD), batch 64, 1 BLAS thread"
    # Measured when written: NumPy 1.07 ms, eagerflow 1.45-1.48x, PyTorch 1.25-1.30x; then
    # 1.22-1.25x after faster kernels (lazy shape messages, windows by as_strided, the pool's
    # arg-max on a contiguous stack, a stride-1 input gradient as one convolution). What the
    # hand-written step still saves (breakdown.py W8): ~140 us of framework Python, the
    # im2col matrices it keeps for the filters' gradients (the ops build them again), the
    # pool's masks it keeps for the backward pass, and in-place bias + relu.
    return Workload("W8", title, contenders, target=1.5, beat_pytorch=True)


def _w8_traced(jit_compile: bool = False) -> Step:
    """W8's step as a @function (compiled with ``jit_compile``), with its own variables."""
    from eagerflow import nn
    from eagerflow import tensor as ef
    from eagerflow.graph import function

    a = _w8_arrays()
    grads, variables = _w8_eager(a)
    optimizer = nn.GradientDescentOptimizer(float(W8_LR))

    @function(jit_compile=jit_compile)
    def step(x: ef.Tensor, y: ef.Tensor) -> ef.Tensor:
        loss, gradients = grads(x, y)
        optimizer.apply_gradients(zip(gradients, variables, strict=True))
        return loss

    x, y = ef.constant(a["x"]), ef.constant(a["y"])
    return lambda: step(x, y)


def w8_function_step() -> Workload:
    """W8 as a traced @function: forward, tape gradients and the update in one graph."""
    contenders = beside_eager(w8_cnn_step(), _w8_traced())
    return Workload("W8f", "W8 as a traced @function", contenders, 1.5)


def w8_compiled_step() -> Workload:
    """W8 with jit_compile=True: bias + relu and their gradients fused around the
    convolutions, which run as the same kernels."""
    work = compiled("W8c", "W8 as a @function(jit_compile=True)", w8_cnn_step(), _w8_traced, 1.5)
    work.beat_pytorch = True
    return work


WORKLOADS: dict[str, Callable[[], Workload]] = {
    "W1": w1_eager_add,
    "W2": w2_tape_small,
    "W4": w4_mlp_step,
    "W4g": w4_graph_step,
    "W4f": w4_function_step,
    "W4c": w4_compiled_step,
    **{f"W5[{n:.0e}]": w5_chain(n) for n in (10**3, 10**4, 10**5, 10**6)},
    "W6": w6_regression_step,
    "W6g": w6_graph_step,
    "W6f": w6_function_step,
    "W6c": w6_compiled_step,
    "W7": w7_gelu_layernorm_step,
    "W7f": w7_function_step,
    "W7c": w7_compiled_step,
    "W8": w8_cnn_step,
    "W8f": w8_function_step,
    "W8c": w8_compiled_step,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", default=list(WORKLOADS), help="e.g. W1 W5")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=3.0, help="time budget per contender")
    args = parser.parse_args(argv)
    keys = [k for k in WORKLOADS if any(k == w or k.startswith(w + "[") for w in args.workloads)]
    for key in keys:
        work = WORKLOADS[key]()
        # Everything made so far (imports: torch alone brings ~150,000 objects) goes to the
        # permanent generation, so the cyclic GC's full collections during a run walk only
        # what the contenders make: as in a program that imported only the library it uses,
        # not its benchmark peers. (W5 at 1e5 ops: GC 2.3 us/op with torch's objects, 0.7 without.)
        gc.collect()
        gc.freeze()
        times = best_times(work.contenders, args.rounds, args.seconds)
        base = times["numpy"]
        print(f"{work.key}: {work.title}")
        for name, seconds in times.items():
            per_op = seconds / work.ops_per_call
            ratio = seconds / base
            verdict = ""
            if name == "eagerflow" and work.target is not None:
                verdict = (
                    f"  (target <= {work.target:g}x: {'met' if ratio <= work.target else 'MISSED'})"
                )
            print(f"  {name:10s} {per_op * 1e9:10.1f} ns/op  {ratio:6.2f}x numpy{verdict}")
        if work.beat_pytorch and "pytorch" in times:
            ratio = times["eagerflow"] / times["pytorch"]
            print(f"  (eagerflow / pytorch: {ratio:.2f}x; target <= 1x: "
                  f"{'met' if ratio <= 1 else 'MISSED'})")  # fmt: skip
        for note in work.notes:
            print(f"  ({note})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
