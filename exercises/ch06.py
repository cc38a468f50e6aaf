"""Chapter 6 exercises — run `.venv/bin/pytest -m ch06`.

Static graphs and Sessions: build a graph for a formula, keep state in a graph variable,
find the operations a fetch needs, run a graph with a tiny Session of your own, and (a
stretch) give that Session a memory, where graph variables keep their values.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch06`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch06.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
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
    raise NotImplementedError


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
    raise NotImplementedError


def execution_order(
    fetches: Sequence[SymbolicTensor | Operation], fed: Collection[SymbolicTensor] = ()
) -> list[Operation]:
    """★★★ The operations a Session must run to compute ``fetches``, inputs first.

    Walk back from the fetches: an operation is needed if a fetch is one of its outputs (or
    is the operation itself), or if a needed operation takes one of its outputs as an input
    or lists it among its ``control_inputs``. A tensor in ``fed`` gets its value from the
    feed, so the walk stops there: the operation that makes it is not needed for it.

    Return each needed operation once, and each after every operation it depends on. Leave
    out everything else, even operations of the same graph. Walk the graph yourself: the
    tests refuse the Session's own ``Plan`` (and its ``_needed_operations``).

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
    raise NotImplementedError


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
    real Session. The tests refuse ``Session.run`` and the Session's own ``Plan``: they are
    the thing to build.

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
        in ``packages/graph/src/eagerflow/graph/core/session.py`` is the real thing.
    """
    raise NotImplementedError


class MiniSession:
    """★★★ Stretch: a Session with a memory of its own, where graph variables keep values.

    ``run_graph`` left variables out: a graph variable's value is not in the graph, it is in
    each Session (``accumulator_graph``'s two Sessions kept two totals). Give your Session
    that memory, ``self.values``, a dict from each ``Variable`` to its value, and run the
    variable ops yourself. Every other op runs its kernel, as in ``run_graph``:

    - ``VariableV2`` and ``ReadVariableOp`` (no inputs) output the value of their variable,
      ``operation.attrs["variable"]``. A variable with no value in this Session is an error,
      ``ef.FailedPreconditionError``: its initializer has not run here;
    - ``AssignVariableOp``, ``AssignAddVariableOp`` and ``AssignSubVariableOp`` make their
      input, or the value plus or minus it, the variable's new value, and output it;
    - ``global_variables_initializer()`` is a ``NoOp`` whose control inputs are the first
      assignments: ``execution_order`` already runs them before it.

    A Session's values are its own. Changing an array that the caller fed, or that ``run``
    returned, must not change a variable, and one ``MiniSession`` never sees another's
    values. The tests run graphs with variables (a training loop among them) in a
    ``MiniSession`` and in a real ``Session`` side by side, compare every fetch, and refuse
    the real Session's ``run``, its ``Plan`` and the variable store the real kernels read.

    ``__init__`` is given: it makes the memory. Write ``run``.

    Attributes:
        graph: The graph this Session runs.
        values: This Session's value of each graph variable that has one, by ``Variable``.
    """

    def __init__(self, graph: Graph) -> None:
        """A Session of ``graph`` whose variables have no values yet."""
        self.graph = graph
        self.values: dict[Variable, np.ndarray] = {}  # this Session's memory

    def run(
        self,
        fetches: Sequence[SymbolicTensor | Operation],
        feed_dict: Mapping[SymbolicTensor, np.ndarray] | None = None,
    ) -> list[np.ndarray | None]:
        """Run what ``fetches`` need, once, keeping the variables' new values in this Session.

        Args:
            fetches: Symbolic tensors and operations of ``self.graph``.
            feed_dict: NumPy arrays (of the right dtype) for placeholders, or for any other
                tensor whose computed value you want to replace.

        Returns:
            One entry per fetch: a tensor's value as a NumPy array, None for an operation.

        Hint 1:
            Start from ``run_graph``: the same walk over ``execution_order(fetches, feed)``,
            the same dict of values by tensor. Only the five variable ops are new, and they
            need no kernel: a lookup in ``self.values``, or an update of it.

        Hint 2:
            Make a new array for every new value (``old + delta``, not ``old += delta``: an
            array ``run`` returned earlier may be that very array), and copy what comes in (a
            fed value assigned) and what goes out (a fetched value).

        Hint 3:
            A table ``{"AssignVariableOp": lambda old, x: np.array(x),
            "AssignAddVariableOp": lambda old, x: old + x, ...}``. For each operation:
            ``variable = operation.attrs.get("variable")``; a read raises if ``variable not
            in self.values``; an update stores ``UPDATES[operation.type](old, input)``.
        """
        raise NotImplementedError
