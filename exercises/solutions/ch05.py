"""Chapter 5 exercises — run `.venv/bin/pytest -m ch05`.

Static graphs and Sessions: build a graph for a formula, keep state in a graph variable,
find the operations a fetch needs, and run a graph with a tiny Session of your own.

Reference solutions: the same functions as `exercises/ch05.py`, solved.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import (
    Graph,
    Operation,
    SymbolicTensor,
    global_variables_initializer,
    placeholder,
)


def polynomial_graph(coefficients: Sequence[float]) -> tuple[Graph, SymbolicTensor, SymbolicTensor]:
    """★★ A new graph computing the polynomial c₀ + c₁·x + c₂·x² + … of a fed vector ``x``.

    Build, do not run: inside ``with graph.as_default():`` make ``x`` a ``float32``
    placeholder of shape ``(None,)`` (a vector of any length) and ``y`` the polynomial of
    ``x``, elementwise. Nothing is computed here; the test runs ``y`` in a Session.

    Args:
        coefficients: c₀, c₁, c₂, … (at least two), lowest power first.

    Returns:
        ``(graph, x, y)``: the new graph, its placeholder and the polynomial's symbolic tensor.

    Hint 1:
        Build, do not run: inside ``graph.as_default()``, ops on a placeholder add nodes to the
        graph.

    Hint 2:
        Horner's rule needs only ``*`` and ``+``: start from the highest coefficient and, going
        down, multiply by x and add the next one. The Python loop runs while you build.

    Hint 3:
        ``x = placeholder(ef.float32, (None,))``, ``y = coefficients[-1]``, then
        ``y = y * x + c`` for each ``c`` in ``reversed(coefficients[:-1])``.
    """
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (None,), name="x")
        y: Any = float(coefficients[-1])
        for c in reversed(coefficients[:-1]):
            y = y * x + float(c)
    return graph, x, y


def accumulator_graph() -> tuple[Graph, SymbolicTensor, SymbolicTensor, Operation]:
    """★★ A new graph holding a running total in a variable: each run adds a fed value to it.

    Build, in a new graph: a ``float32`` Variable ``total`` starting at 0, a ``float32``
    scalar placeholder ``value`` (shape ``()``), an ``update`` tensor that adds ``value``
    to ``total`` and is the new total, and the ``init`` op that initializes the variable.

    The test then plays the part of a training loop: it opens a Session, runs ``init``,
    and runs ``update`` once per value it feeds. A second Session must start from 0 again:
    a graph variable's value belongs to a Session, not to the graph.

    Returns:
        ``(graph, value, update, init)``.

    Hint 1:
        A graph variable's value lives in a Session; the graph holds only the nodes that
        initialize, read and assign it.

    Hint 2:
        Make the variable and the placeholder inside ``graph.as_default()``. In graph mode
        ``assign_add`` returns the new value. Build ``global_variables_initializer()`` after the
        variable.

    Hint 3:
        ``total = Variable(0.0, name="total")``, ``value = placeholder(ef.float32, ())``,
        ``update = total.assign_add(value)``, ``init = global_variables_initializer()``.
    """
    graph = Graph()
    with graph.as_default():
        total = Variable(0.0, name="total")
        value = placeholder(ef.float32, (), name="value")
        update = total.assign_add(value)
        init = global_variables_initializer()
    assert init is not None  # graph mode always gives an op
    return graph, value, update, init


def execution_order(
    fetches: Sequence[SymbolicTensor | Operation], fed: Collection[SymbolicTensor] = ()
) -> list[Operation]:
    """★★★ The operations a Session must run to compute ``fetches``, inputs first.

    Walk back from the fetches: an operation is needed if a fetch is one of its outputs (or
    is the operation itself), or if a needed operation takes one of its outputs as an input
    or lists it among its ``control_inputs``. A tensor in ``fed`` gets its value from the
    feed, so the walk stops there: the operation that makes it is not needed for it.

    Return each needed operation once, and each after every operation it depends on. Leave
    out everything else, even operations of the same graph.

    Args:
        fetches: Symbolic tensors and/or operations of one graph.
        fed: Tensors whose values will be fed.

    Returns:
        The needed operations, in an order a Session can run them.

    Hint 1:
        Two steps: find what is needed by walking back from the fetches, then put it in order.

    Hint 2:
        A stack of operations to visit and a set of those seen. For each operation popped, push
        the ``.op`` of each input that is not fed, and its ``control_inputs``.

    Hint 3:
        For the order, reuse the graph's:
        ``[o for o in graph.get_operations() if o in needed]``. An operation can only be added
        after its inputs exist.
    """
    fed_set = set(fed)
    needed: set[Operation] = set()
    stack = [f if isinstance(f, Operation) else f.op for f in fetches if f not in fed_set]
    while stack:
        operation = stack.pop()
        if operation in needed:
            continue
        needed.add(operation)
        stack.extend(t.op for t in operation.inputs if t not in fed_set)
        stack.extend(operation.control_inputs)
    if not needed:
        return []
    graph = next(iter(needed)).graph
    return [o for o in graph.get_operations() if o in needed]


def run_graph(
    fetches: Sequence[SymbolicTensor], feed_dict: Mapping[SymbolicTensor, np.ndarray]
) -> list[np.ndarray]:
    """★★ A tiny Session: compute the values of ``fetches`` given values for some tensors.

    Run the operations of ``execution_order(fetches, feed_dict)`` one by one. Each one's
    kernel is in the op registry's row for it, ``operation.op_def``: call
    ``operation.op_def.kernel(*input_values, **operation.attrs)``. Keep every value in a
    dict keyed by tensor, starting with ``feed_dict``. A kernel returns one NumPy array,
    or, when ``operation.op_def.multi_output`` is true, a tuple with one per output.

    Graphs with variables are out of scope: their kernels read the variable store of a
    real Session.

    Args:
        fetches: Symbolic tensors of one graph.
        feed_dict: NumPy arrays (already of the right dtype) for placeholders, or for any
            other tensor whose computed value you want to replace.

    Returns:
        The fetches' values, as NumPy arrays, in order.

    Hint 1:
        ``execution_order`` (your previous exercise) knows which operations to run, and in which
        order.

    Hint 2:
        Keep a dict from tensor to value, starting with the feed. For each operation, call its
        kernel on its inputs' values and store its outputs.

    Hint 3:
        ``result = operation.op_def.kernel(*(values[t] for t in operation.inputs),
        **operation.attrs)``; a tuple when ``op_def.multi_output``, else one array. ``Plan.run``
        in ``packages/graph/src/eagerflow/graph/session.py`` is the real thing.
    """
    values: dict[SymbolicTensor, Any] = dict(feed_dict)
    for operation in execution_order(fetches, feed_dict.keys()):
        op = operation.op_def
        result = op.kernel(*(values[t] for t in operation.inputs), **operation.attrs)
        results = result if op.multi_output else (result,)
        for t, value in zip(operation.outputs, results, strict=True):
            values.setdefault(t, value)  # a fed value wins over a computed one
    return [np.asarray(values[f]) for f in fetches]
