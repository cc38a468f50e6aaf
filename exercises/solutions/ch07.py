"""Chapter 7 exercises — run `.venv/bin/pytest -m ch07`.

One op, two modes: a loss written once that runs eagerly and builds a graph, symbolic
gradients (and gradients of gradients) with ``gradients()``, an execution context of
your own plugged into the seam, and a tiny graph mode: a context that builds nodes from
the ops' shape and dtype rules, a function that runs them, and (a stretch) its gradients.

Reference solutions: the same functions as `exercises/ch07.py`, solved.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import OpRecord
from eagerflow.autodiff.registry import GRADIENTS
from eagerflow.graph import Graph, SymbolicTensor, gradients, placeholder
from eagerflow.tensor import Tensor, execution
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.registry import Attrs, OpDef


def cross_entropy(logits: Tensor, labels: Tensor) -> Tensor:
    """★★ The softmax cross-entropy of each row, written once for both modes.

    For a row of logits zⱼ and one-hot (or probability) labels pⱼ the loss is
    ``Σⱼ pⱼ·(log Σₖ exp(zₖ) − zⱼ)``. Compute it for every row of a (batch, classes)
    tensor, giving a (batch,) tensor.

    Two requirements. It must work in both modes: called on eager tensors it returns an
    eager tensor with values; called on symbolic tensors inside ``graph.as_default()`` it
    returns a symbolic tensor of shape ``(batch,)`` (``(None,)`` for an unknown batch).
    And it must be stable: logits such as 1000.0 must not give ``inf`` or ``nan``. Build
    the stability yourself: eagerflow's ``softmax_cross_entropy_with_logits``,
    ``log_softmax`` and ``softmax`` are the answer ready-made, and the tests refuse them.

    Args:
        logits: A float tensor of shape (batch, classes).
        labels: A tensor of the same shape and dtype.

    Returns:
        A tensor of shape (batch,).

    Hint 1:
        Only eagerflow ops: a NumPy function needs values, and a symbolic tensor has none yet.

    Hint 2:
        ``exp`` of 1000 overflows. Subtract each row's maximum ``m`` before ``exp`` and add it
        back after ``log``: same result, and the largest exponent is now ``exp(0)``.

    Hint 3:
        ``m = ef.reduce_max(logits, axis=-1, keepdims=True)``;
        ``lse = m + ef.log(ef.reduce_sum(ef.exp(logits - m), axis=-1, keepdims=True))``; then
        ``ef.reduce_sum(labels * (lse - logits), axis=-1)``.
    """
    m = ef.reduce_max(logits, axis=-1, keepdims=True)
    log_sum_exp = m + ef.log(ef.reduce_sum(ef.exp(logits - m), axis=-1, keepdims=True))
    return ef.reduce_sum(labels * (log_sum_exp - logits), axis=-1)


def gradient_graph(
    f: Callable[[Tensor], Tensor], shape: Sequence[int | None]
) -> tuple[Graph, SymbolicTensor, SymbolicTensor, SymbolicTensor]:
    """★ A new graph computing ``y = f(x)`` and, symbolically, the gradient of ``y`` by ``x``.

    Build a new graph with a ``float64`` placeholder ``x`` of the given shape, ``y = f(x)``
    and ``dy_dx``, the gradient of (the sum of) ``y`` with respect to ``x``, made of graph
    nodes by ``gradients()``. The test runs ``y`` and ``dy_dx`` in a Session and compares
    them with the values a GradientTape gives.

    Args:
        f: A function of one tensor written with eagerflow ops.
        shape: The placeholder's shape (``None`` for an unknown dimension).

    Returns:
        ``(graph, x, y, dy_dx)``.

    Hint 1:
        Build as for any graph: a placeholder, then ``f`` of it, inside ``graph.as_default()``.

    Hint 2:
        ``gradients(ys, xs)`` adds the gradient's nodes to the graph of ``ys``, and returns a
        list with one gradient per source: ``(dy_dx,) = gradients(y, [x])``.
    """
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float64, tuple(shape), name="x")
        y = f(x)
        (dy_dx,) = gradients(y, [x])
    assert dy_dx is not None
    return graph, x, y, dy_dx  # type: ignore[return-value]


def second_derivative_graph(
    f: Callable[[Tensor], Tensor],
) -> tuple[Graph, SymbolicTensor, SymbolicTensor]:
    """★★ A new graph computing f''(x) for a scalar ``x``, by differentiating a gradient.

    Build a new graph with a scalar ``float64`` placeholder ``x`` (shape ``()``), the
    gradient ``dy`` of ``f(x)`` by ``x`` with ``gradients()``, and then the gradient of
    ``dy`` by ``x`` the same way. This works because the gradient is itself a graph of
    ordinary ops, built by the same rules: nothing is special about differentiating it.

    When f is linear, ``dy`` does not depend on ``x`` at all: return zeros then, not None.

    Args:
        f: A function of one scalar tensor written with eagerflow ops.

    Returns:
        ``(graph, x, d2y_dx2)``.

    Hint 1:
        The gradient that ``gradients()`` builds is ordinary graph nodes: it can be
        differentiated in turn.

    Hint 2:
        Call ``gradients`` twice, the second time on the first one's result. When ``f`` is
        linear, that result does not depend on x at all.

    Hint 3:
        ``(dy,) = gradients(f(x), [x])``, then
        ``gradients(dy, [x], unconnected_gradients="zero")``: zeros instead of None.
    """
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float64, (), name="x")
        (dy,) = gradients(f(x), [x], unconnected_gradients="zero")
        (d2y,) = gradients(dy, [x], unconnected_gradients="zero")
    return graph, x, d2y  # type: ignore[return-value]


class LoggingContext:
    """★★★ An execution context that runs every op eagerly and logs its name.

    The seam, ``execute()``, hands each op to the current context's ``run_op``. With no
    context it runs the kernel itself; a Graph builds a node instead. This context does what
    eager mode does (it runs the kernel now and returns eager tensors) and also appends
    ``op.name`` to ``self.log``. Install it with ``eagerflow.tensor.execution.context``:

        ctx = LoggingContext()
        with execution.context(ctx):
            z = ef.matmul(a, b) + 1.0
        ctx.log  # ["MatMul", "AddV2"]

    Tapes keep working under it: the seam tells its recorders about every op whatever the
    context.

    Attributes:
        log: The names of the ops run so far, in order.
    """

    # The rest of the Context protocol, given: variables made or assigned under this context
    # behave as in eager mode.
    assign_returns_variable = True  # `v.assign(x)` returns v, as eagerly

    def create_variable(self, variable: Any) -> None:
        """None: a variable made under this context holds its own value (an eager one)."""
        return None

    def __init__(self) -> None:
        """Start with an empty ``log``."""
        self.log: list[str] = []

    def run_op(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, name: str | None
    ) -> tuple[Tensor, ...]:
        """Run ``op``'s kernel on the inputs' values now, log ``op.name``, return tensors.

        Args:
            op: The op's registry row: ``op.kernel``, ``op.dtype_rule``,
                ``op.multi_output``.
            inputs: Eager tensors.
            attrs: The op's attributes, passed to the kernel as keyword arguments.
            name: A node name; eager execution ignores it.

        Returns:
            A tuple of eager tensors, one per output.

        Hint 1:
            The eager branch of ``execute`` in
            ``packages/tensor/src/eagerflow/tensor/execution.py`` does what ``run_op`` must do;
            you add the log.

        Hint 2:
            Ask ``op.dtype_rule`` for the output dtypes (it raises the usual errors), run
            ``op.kernel`` on the inputs' arrays with the attributes as keyword arguments, and
            wrap each output array in a ``Tensor``.

        Hint 3:
            ``dtypes = op.dtype_rule([t.dtype for t in inputs], attrs)``;
            ``result = op.kernel(*(np.asarray(t) for t in inputs), **attrs)``;
            ``arrays = result if op.multi_output else (result,)``; return
            ``tuple(Tensor(a, d) for a, d in zip(arrays, dtypes))``.
        """
        self.log.append(op.name)
        dtypes = op.dtype_rule([t.dtype for t in inputs], attrs)
        result: Any = op.kernel(*(np.asarray(t) for t in inputs), **attrs)
        results = result if op.multi_output else (result,)
        return tuple(Tensor(r, d) for r, d in zip(results, dtypes, strict=True))


# --- given: the pieces of a tiny graph ------------------------------------------------------------
@dataclass(eq=False)
class Node:
    """One node of a ``MiniGraph``: an op applied to inputs, or a placeholder (``op`` None).

    ``inputs`` are the tensors it reads: symbols of earlier nodes, or eager tensors (a
    constant such as the ``1.0`` of ``x + 1.0``).
    """

    op: OpDef | None
    inputs: tuple[Tensor, ...]
    attrs: Attrs
    outputs: tuple[Symbol, ...] = ()


class Symbol(Tensor):
    """An output of a ``Node``: a static shape and dtype, and no value (like SymbolicTensor).

    It is a ``Tensor``, so ``a + b`` and ``ef.matmul(a, b)`` accept it and send it to the
    seam, which hands it to the current context.
    """

    __slots__ = ("_shape", "index", "node")

    def __init__(self, node: Node, index: int, shape: tuple[int, ...], dtype: DType) -> None:
        """Output ``index`` of ``node``, of this ``shape`` and ``dtype``."""
        super().__init__(None, dtype)  # type: ignore[arg-type]  # no value: that is the point
        self.node = node
        self.index = index
        self._shape = tuple(shape)

    @property
    def shape(self) -> tuple[int, ...]:
        """The static shape."""
        return self._shape

    def __repr__(self) -> str:
        return f"<Symbol shape={self._shape} dtype={self.dtype.name}>"


class MiniGraph:
    """★★★ A context that builds a graph: ``run_op`` makes a node, and no kernel runs.

    A ``Graph`` is a context like ``LoggingContext``, whose ``run_op`` does not compute: it
    adds a node and returns outputs that have a shape and a dtype but no value. Write that
    ``run_op`` for this tiny graph of ``Node``s and ``Symbol``s:

        g = MiniGraph()
        x = g.placeholder((2, 3), ef.float32)
        with execution.context(g):
            y = ef.reduce_sum(ef.tanh(x) * 2.0, axis=1)
        y  # <Symbol shape=(2,) dtype=float32>; len(g.nodes) == 4

    The shape and dtype of the outputs come from the op's static rules, the same ones
    chapter 1's ``infer_output`` asked: a mismatch (a ``matmul`` of (2, 3) by (2, 3)) is
    an error while building, before anything runs. ``run_mini`` (next) computes the values.

    Attributes:
        nodes: The nodes, in the order they were made.
    """

    assign_returns_variable = False  # (part of the Context protocol; no variables here)

    def __init__(self) -> None:
        """An empty graph."""
        self.nodes: list[Node] = []

    def create_variable(self, variable: Any) -> Any:
        """No variables in a MiniGraph."""
        raise TypeError("a MiniGraph has no variables")

    def placeholder(self, shape: tuple[int, ...], dtype: DType) -> Symbol:
        """A node with no op: its one output is fed a value by ``run_mini``."""
        node = Node(None, (), {})
        node.outputs = (Symbol(node, 0, shape, dtype),)
        self.nodes.append(node)
        return node.outputs[0]

    def run_op(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, name: str | None
    ) -> tuple[Symbol, ...]:
        """Add a ``Node`` for ``op`` and return its outputs, as ``Symbol``s; run no kernel.

        Args:
            op: The op's registry row: ``op.shape_rule``, ``op.dtype_rule``.
            inputs: Symbols of this graph, or eager tensors.
            attrs: The op's attributes (keep them on the node: the kernel needs them).
            name: A node name; this graph does not use names.

        Returns:
            A tuple of ``Symbol``s, one per output of the op.

        Hint 1:
            Each rule takes a list with one entry per input (shapes, or dtypes) and the
            attributes, and returns a list with one entry per output.

        Hint 2:
            Make the ``Node`` first, then its outputs (each symbol points back to its node
            and knows its index), set ``node.outputs`` and append the node to ``self.nodes``.

        Hint 3:
            ``shapes = op.shape_rule([t.shape for t in inputs], attrs)``, ``dtypes`` the
            same with ``op.dtype_rule`` and ``t.dtype``; ``node = Node(op, tuple(inputs),
            attrs)``; ``node.outputs = tuple(Symbol(node, i, s, d) for i, (s, d) in
            enumerate(zip(shapes, dtypes)))``.
        """
        shapes = op.shape_rule([t.shape for t in inputs], attrs)
        dtypes = op.dtype_rule([t.dtype for t in inputs], attrs)
        node = Node(op, tuple(inputs), attrs)
        node.outputs = tuple(
            Symbol(node, i, s, d) for i, (s, d) in enumerate(zip(shapes, dtypes, strict=True))
        )
        self.nodes.append(node)
        return node.outputs


def run_mini(fetch: Tensor, feeds: dict[Symbol, Any]) -> np.ndarray:
    """★★ The value of ``fetch``, a symbol of a ``MiniGraph``: a Session in a few lines.

    Work back from ``fetch``: a placeholder's symbol takes its value from ``feeds``, an
    eager tensor is its own value, and any other symbol is an output of its node's kernel,
    run on the values of the node's inputs. Run each node's kernel at most once per call,
    even when several nodes read its outputs (the tests count).

    Args:
        fetch: A ``Symbol`` (or an eager tensor).
        feeds: A value (a NumPy array or number) for each placeholder the fetch needs.

    Returns:
        The value, as a NumPy array.

    Hint 1:
        A recursive function ``value(t)`` and a dictionary of the nodes already computed.

    Hint 2:
        ``op.kernel(*arrays, **attrs)`` returns one array, or a tuple of arrays when
        ``op.multi_output``; ``symbol.index`` picks one.

    Hint 3:
        In ``value(t)``: ``np.asarray(t)`` for an eager tensor; ``np.asarray(feeds[t])`` for a
        placeholder's symbol; otherwise, once per node, ``result = node.op.kernel(*(value(i)
        for i in node.inputs), **node.attrs)``, kept as a tuple; return ``done[node][t.index]``.
    """
    done: dict[int, tuple[Any, ...]] = {}

    def value(t: Tensor) -> Any:
        if not isinstance(t, Symbol):
            return np.asarray(t)
        node = t.node
        if node.op is None:
            return np.asarray(feeds[t])
        if id(node) not in done:
            result = node.op.kernel(*(value(i) for i in node.inputs), **node.attrs)
            done[id(node)] = tuple(result) if node.op.multi_output else (result,)
        return done[id(node)][t.index]

    return np.asarray(value(fetch))


def mini_gradients(
    graph: MiniGraph, y: Tensor, x: Tensor, rules: Mapping[str, Any] = GRADIENTS
) -> Tensor | None:
    """★★★ Stretch: symbolic gradients in your ``MiniGraph``, from your tape's rules.

    ``gradients()`` in a real Graph walks the graph's nodes backwards and calls the same
    gradient rules as a tape; because the rules are written with eagerflow ops, calling them
    while the graph is the current context *adds nodes*, and the gradient is a symbol like
    any other, computed when the graph runs. Do that for your ``MiniGraph``: return the
    symbol of dy/dx, and let ``run_mini`` compute it. Building the gradient runs no kernel
    (the tests check), and no tape.

    Take the rules from ``rules``, a table of gradient rules by op name: by default
    ``GRADIENTS``, the table your ``MiniTape`` of chapter 3 walked with. One table serves
    both modes: the tests hand you a copy in which ``AddV2`` and ``Mul`` are your own
    ``add_gradient`` and ``mul_gradient`` of chapter 3, written for an eager tape, check
    that your graph's gradient called them, and compare it with the gradient your own
    ``MiniTape`` finds reading the same table (until those pieces of chapter 3 are done,
    that test waits, saying "needs ch03.add_gradient first").

    Open-ended: handle what the tests need, the ops of ``run_mini``'s tests (each with one
    output; a node without inputs, a constant made while building, needs no gradient), and
    a ``y`` of any shape (its gradient starts as ones).

    Args:
        graph: The MiniGraph ``y`` was built in.
        y: A symbol of ``graph``.
        x: A placeholder of ``graph``.
        rules: The gradient rule of each op, by ``op.name`` (``None`` or absent: none).

    Returns:
        The symbol of the gradient of ``sum(y)`` with respect to ``x`` (None with no path).

    Hint 1:
        ``graph.nodes`` is already in an order where a node comes after the nodes it reads:
        walk a copy of it backwards (the walk adds nodes to it).

    Hint 2:
        ``rules.get(node.op.name)`` is a node's rule, exactly as ``MiniTape`` looked up
        ``GRADIENTS[record.op.name]``. A rule takes an ``OpRecord(node.op, node.inputs,
        node.attrs, node.outputs)`` and the gradient of the output; sum the gradients of a
        tensor used twice, as a tape does. Make the ones and call the rules inside
        ``with execution.context(graph):``.
    """
    grads: dict[Tensor, Tensor] = {}
    with execution.context(graph):
        grads[y] = ef.ones_like(y)
        for node in reversed(list(graph.nodes)):
            grad = grads.get(node.outputs[0]) if node.inputs else None  # (not a constant)
            rule = rules.get(node.op.name) if node.op is not None else None
            if grad is None or rule is None:
                continue
            record = OpRecord(node.op, node.inputs, node.attrs, node.outputs)
            for t, g in zip(node.inputs, rule(record, grad), strict=True):
                if g is not None:
                    grads[t] = grads[t] + g if t in grads else g
    return grads.get(x)
