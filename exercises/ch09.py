"""Chapter 9 exercises — run `.venv/bin/pytest -m ch09`.

Tracing, from eager to graph: the signature that decides when ``@function`` traces again,
a ``@function`` of your own built on it (a trace cache over your MiniGraph of chapter 7),
a training step traced once, and (a stretch) a ``@function`` that relaxes shapes instead of
tracing each one.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch09`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch09.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import (
    Function,
    Graph,
    Session,
    SymbolicTensor,
    autograph,
    cond,
    function,
    placeholder,
)
from eagerflow.tensor import Tensor, execution


def signature(*args: Any) -> tuple[Any, ...]:
    """★★ The key ``@function`` looks its traced graphs up by: equal keys, no new trace.

    A traced graph has a placeholder for each tensor argument, with the tensor's dtype and
    shape: it serves any tensor with that dtype and shape, whatever its values. Any other
    argument (a Python number, a string, ``None``, …) was used as a plain Python value
    while tracing and is baked into the graph: the graph is good for that value only.

    So describe each argument by

    - ``("tensor", dtype, shape)`` for a tensor (``shape`` a tuple). A NumPy array counts
      as the tensor it converts to;
    - ``("value", type(arg), arg)`` for anything else (assume it is hashable);

    and return the tuple of the descriptions, in order. For arguments like these, a call of
    a ``Function`` traces a new graph exactly when its signature differs from the signature
    of every earlier call.

    Args:
        *args: The positional arguments of a call.

    Returns:
        A hashable tuple, one entry per argument.

    Hint 1:
        One description per argument: a tensor by what a placeholder for it needs, anything else
        by its value.

    Hint 2:
        Convert a NumPy array to a tensor first. Keep a value's type in its description:
        ``2 == 2.0 == True`` in Python, but they trace differently.

    Hint 3:
        ``("tensor", t.dtype, tuple(t.shape))`` or ``("value", type(arg), arg)``, all in a
        tuple. Compare with ``_signature_of`` in
        ``packages/graph/src/eagerflow/graph/tracing/function.py``.
    """
    raise NotImplementedError


def mini_function(
    fn: Callable[..., Any], MiniGraph: type, run_mini: Callable[..., Any]
) -> Callable[..., Tensor]:
    """★★★ ``@function`` in a few lines: trace into your ``MiniGraph``, run it with ``run_mini``.

    Chapter 7 gave you a graph mode of your own: ``MiniGraph``, a context whose ``run_op``
    makes nodes, and ``run_mini``, which runs them. ``@function`` is a cache of traces on top
    of a graph mode, and yours is enough. Return a function ``call(*args)`` that computes
    ``fn(*args)`` as ``@function`` would:

    1. it looks the ``signature`` of the arguments (yours, from above) up in a cache of its
       own; on a miss it *traces*: it makes a ``MiniGraph()``, a placeholder
       (``graph.placeholder(shape, dtype)``) for each tensor argument (a NumPy array counts
       as a tensor), and calls ``fn`` inside ``execution.context(graph)`` with those
       placeholders and the other arguments as they are. The graph's placeholders and
       ``fn``'s result (a symbol) go in the cache;
    2. on every call, it runs the cached result with ``run_mini``, feeding each placeholder
       the value of its argument, and returns the value as an eager tensor.

    So ``fn`` runs (traces) once per new signature, never on a cache hit; the tests count
    its calls on hidden sequences of calls, and compare the values (and dtypes) with ``fn``
    run eagerly. They hand you your own ``MiniGraph`` and ``run_mini`` of chapter 7, check
    that ``fn`` was traced on symbols of your graph and that your ``run_mini`` ran each call
    (until those are done, they wait, saying "needs ch07.MiniGraph first"). They also swap
    your ``signature`` for others, to check that the cache's key is what ``signature``
    returns, no more and no less. ``fn`` returns one tensor.

    Args:
        fn: A function of tensors and plain Python values, written with eagerflow ops.
        MiniGraph: Your graph class of chapter 7 (``placeholder``, a context for the seam).
        run_mini: Your ``run_mini(fetch, feeds)`` of chapter 7.

    Returns:
        The traced version of ``fn``.

    Hint 1:
        A dictionary from signatures to what tracing made: the placeholders (in the order of
        the tensor arguments) and the symbolic result. The graph itself is in the symbols.

    Hint 2:
        ``graph.placeholder(tuple(t.shape), t.dtype)`` for each tensor argument; ``fn`` runs
        under ``with execution.context(graph):``; on each call ``run_mini(result, feeds)``
        with ``feeds`` a dictionary from placeholder to ``np.asarray(arg)``.

    Hint 3:
        In ``call``: ``key = signature(*args)``; if it is not in the cache, trace: build
        ``inputs`` (a placeholder or the argument itself), ``result = fn(*inputs)`` in the
        graph's context, and store ``(placeholders, result)``; then feed the tensor
        arguments, in order, and ``return ef.constant(run_mini(result, feeds))``.
    """
    raise NotImplementedError


def train_step_function(w: Variable, b: Variable, learning_rate: float) -> Function:
    """★★ A traced training step for the line ``y ≈ w·x + b``: eager code, graph speed.

    Return a ``Function`` (write the step as a Python function and decorate it with
    ``@function``) ``step(x, y)`` that, for float32 vectors ``x`` and ``y``:

    1. computes the mean squared error ``mean((w·x + b − y)²)`` under a GradientTape;
    2. takes the gradients of the loss by ``w`` and ``b``;
    3. does one step of gradient descent: ``w -= learning_rate·dw`` and the same for ``b``;
    4. returns the loss (computed before the update).

    Called again with vectors of the same length, it must not trace again: the test calls
    it many times and checks ``step.trace_count``.

    Args:
        w: An eager float32 scalar Variable.
        b: An eager float32 scalar Variable.
        learning_rate: The step size.

    Returns:
        The traced step function.

    Hint 1:
        Write the step as plain eager code, then wrap it with ``function``.

    Hint 2:
        Define ``step(x, y)`` inside this function, using ``w``, ``b`` and ``learning_rate``
        from the enclosing scope: the tape, the gradients and the ``assign_sub`` calls all go in
        it, so they become part of the graph.

    Hint 3:
        In ``step``: the loss under ``with GradientTape() as tape:``,
        ``dw, db = tape.gradient(loss, [w, b])``, ``w.assign_sub(learning_rate * dw)`` (and
        ``b``'s), ``return loss``. Then ``return function(step)``.
    """

    raise NotImplementedError


def relaxing_function(fn: Callable[..., Any]) -> Callable[..., Tensor]:
    """★★★ Stretch: a ``mini_function`` that stops retracing for every new length.

    ``mini_function`` traces again for each new shape: a loop over sentences of 40
    different lengths traces 40 graphs. TensorFlow's ``reduce_retracing=True`` relaxes
    instead: a second shape for the same argument gives a trace whose placeholder has
    ``None`` where the shapes differ, and that graph serves every later shape it fits.

    Write it with these rules (the tests predict trace counts from them):

    - calls whose tensors have the same dtypes and ranks, and the same other arguments,
      share one entry: ``("tensor", dtype, rank)`` in the key instead of the shape;
    - an entry's first trace uses the exact shapes;
    - a call whose shapes do not fit the entry's trace (a known dimension differs) traces
      again, replacing it, with each dimension that differs (or was already None) set to
      None. A later call that fits reuses that graph.

    So shapes (2,), (2,), (3,), (5,) trace twice: for (2,), then for (None,).

    Args:
        fn: A function of tensors and Python values, written with eagerflow ops.

    Returns:
        The traced version of ``fn``, which returns an eager tensor like ``mini_function``.

    Hint 1:
        Start from your ``mini_function``, on eagerflow's ``Graph`` and ``Session`` this
        time (the tests count Session runs): ``placeholder(dtype, shape)`` under
        ``graph.as_default()`` takes ``None`` dimensions, and ``Session(graph).run(result,
        feeds)`` runs it. Only the key, and the test for "does this trace fit", change.
        Keep each entry's placeholder shapes with its graph.

    Hint 2:
        A shape fits a placeholder's when every dimension is equal or the placeholder's is
        None; the relaxed shape keeps a dimension only where the two agree.
    """
    raise NotImplementedError
