"""Chapter 13 exercises — run `.venv/bin/pytest -m ch13`.

Why graphs: a compiler sees everything. Two of the Session's graph optimizations written
by hand (constant folding and common-subexpression elimination); then three pieces of the
graph compiler: the code generation that turns a chain of elementwise ops into one loop, the
clustering rules that decide which ops may share a loop, and (a stretch) the memory planner
that lets values share buffers.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch13`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch13.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Sequence
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
from eagerflow.graph.compiler.fusion import domain_of
from eagerflow.graph.compiler.kernels import ELEMENTWISE, REDUCTIONS
from eagerflow.graph.compiler.specialize import Specialized, specialize
from eagerflow.graph.core.session import Plan
from eagerflow.tensor import Tensor

# The unary ops of the compiler's ELEMENTWISE table: each one's value for one element {0}.
UNARY = ("Neg", "Abs", "Sign", "Square", "Sqrt", "Exp", "Log", "Tanh", "Relu", "Identity")


def fold_constants(graph: Graph) -> dict[str, Any]:
    """★★★ Constant folding: every value of ``graph`` known before anything is fed or run.

    Visit the operations in graph order (``graph.get_operations()``). An operation's
    outputs are known when the operation is *pure* and all its inputs are known:

    - pure: not stateful (``operation.op_def.stateful`` is false: no random numbers, no
      variable reads or writes), not a ``Placeholder`` (its value comes from the feed), and
      without ``control_inputs`` (it must wait for something that runs);
    - a ``Const`` is pure and has no inputs, so it is known: its kernel returns its value.

    Compute a known operation's outputs by calling its kernel on its inputs' known values:
    ``operation.op_def.kernel(*values, **operation.attrs)`` (a tuple of results when
    ``operation.op_def.multi_output``).

    Args:
        graph: A graph.

    Returns:
        ``{tensor name: value}`` for every known tensor, such as ``{"Const:0": 2.0, …}``.

    Hint 1:
        One pass in graph order is enough: every operation comes after the operations that make
        its inputs.

    Hint 2:
        A dict ``known`` from tensor to value. An operation is folded when it is pure (not
        stateful, not a ``Placeholder``, no ``control_inputs``) and all its inputs are in
        ``known``.

    Hint 3:
        ``result = operation.op_def.kernel(*(known[t] for t in operation.inputs),
        **operation.attrs)``; store each output (a tuple of them when ``multi_output``); return
        ``{t.name: v for t, v in known.items()}``. A Session does this in ``_fold_and_merge``
        (``packages/graph/src/eagerflow/graph/core/session.py``).
    """
    raise NotImplementedError


def find_duplicates(graph: Graph) -> dict[str, str]:
    """★★★ Common-subexpression elimination: which operations repeat an earlier one.

    Two pure operations (as in ``fold_constants``) compute the same values when they have
    the same type, the same attributes and the same inputs. Inputs count as the same when
    they are the same tensor, or outputs (at the same index) of operations that are
    themselves duplicates: if ``Tanh_1`` repeats ``Tanh``, then ``Tanh_1:0 * 2`` repeats
    ``Tanh:0 * 2``. Two ``Const`` operations with equal values are duplicates too.

    Visit the operations in graph order and map each duplicate's name to the name of the
    first operation it repeats. Never merge stateful operations, placeholders or operations
    with control inputs: two random draws, for instance, must stay two.

    Args:
        graph: A graph.

    Returns:
        ``{duplicate operation's name: first operation's name}``.

    Hint 1:
        Two pure operations compute the same values when they have the same type, attributes and
        inputs, counting an input as the same once its operation is known to repeat another.

    Hint 2:
        Visit in graph order. Give each pure operation a key, and keep a dict from key to the
        first operation with that key; a second operation with the same key is a duplicate.

    Hint 3:
        The key: ``(operation.type, input names, repr(sorted(operation.attrs.items())))``, where
        an input's name is that of the tensor it repeats (``Tanh:0`` for ``Tanh_1:0`` once
        ``Tanh_1`` repeats ``Tanh``): keep a dict of those renamings too.
    """
    raise NotImplementedError


def fuse_unary_chain(ops: Sequence[str]) -> str:
    """★★ The source of one loop that applies a chain of unary elementwise ops.

    ``ops`` names ops of ``UNARY``, in the order they apply: ``["Square", "Neg", "Exp"]``
    means ``exp(-(x * x))``. Run one at a time, as the interpreter runs them, each op is a
    NumPy call that reads a whole array and writes a new one. Fused, the chain is one loop:
    each element is loaded once, goes through every op, and is stored once.

    Return the source of a function ``fused(x, out)`` for 1-d float64 arrays ``x`` and
    ``out`` of the same length, that writes ``out[i]`` = the chain applied to ``x[i]`` for
    every ``i``, with **one** ``for`` loop and no NumPy call on a whole array. An empty chain
    copies ``x``. The test runs your source with ``np`` as its only global, on chains and
    inputs of its own, and compares with the ops run one at a time.

    Build each op's expression from the compiler's own table, ``ELEMENTWISE`` (from
    ``eagerflow.graph.compiler.kernels``): ``ELEMENTWISE["Square"]`` is ``"{0} * {0}"``, and
    ``ELEMENTWISE["Square"].format("e")`` is ``"e * e"``.

    Args:
        ops: Op names from ``UNARY``, first applied first.

    Returns:
        Python source defining ``fused(x, out)``.

    Hint 1:
        One ``for i in range(len(x)):`` loop whose body applies every op to one element.

    Hint 2:
        Pasting one op's expression into the next one's as text goes wrong: ``Relu`` then
        ``Square`` reads ``... else 0 * e if ...``, and ``*`` binds tighter than ``if``. Give
        each op's result its own name, one line each.

    Hint 3:
        The body: ``v0 = x[i]``, then ``v{k + 1} = ELEMENTWISE[op].format(f"v{k}")`` for the
        k-th op, then ``out[i] = v{n}``. ``loop_source`` in
        ``packages/graph/src/eagerflow/graph/compiler/kernels.py`` does the same.
    """
    raise NotImplementedError


def compile_chain(source: str) -> Callable[[np.ndarray, np.ndarray], None]:
    """Given, not an exercise: the function ``fused`` that ``source`` defines, with ``np`` as
    its only global (as the test runs it). Try yours::

        fused = compile_chain(fuse_unary_chain(["Square", "Neg", "Exp"]))
        x = np.linspace(-2, 2, 5)
        out = np.empty_like(x)
        fused(x, out)  # out is now np.exp(-np.square(x))
    """
    namespace: dict[str, Any] = {"np": np}
    exec(compile(source, "<fused chain>", "exec"), namespace)
    return namespace["fused"]  # type: ignore[no-any-return]


def predict_clusters(program: Specialized) -> list[list[str]]:
    """★★★ Which ops of a program the compiler fuses into one loop: its clustering, by hand.

    ``program`` is a plan specialized to its input shapes (``program_for`` below makes one):
    ``program.nodes`` lists its nodes in the order they run; a node has ``.operation``
    (with ``.name``), ``.type``, and the numbered values it reads and writes,
    ``.inputs`` and ``.outputs``. ``domain_of(node, program)`` (given, from
    ``eagerflow.graph.compiler.fusion``) is the shape the node would loop over: an
    elementwise op's output shape, a reduction's input shape, or ``None`` if the node can
    join no cluster (a matrix product, a variable read or write, an op numba cannot compute
    fast).

    Walk the nodes in order, with the chapter's rules:

    - a node of domain ``None`` joins nothing. If it reads a value of a cluster, that
      cluster is *sealed*: it takes no more nodes. If it is stateful
      (``node.operation.op_def.stateful``) and not a variable read (not
      ``node.operation.op_def.reads_state``), it seals every cluster;
    - any other node reads, perhaps, values of clusters. A cluster it reads from is sealed
      if it is of another domain, or if the value read is the result of one of its
      reductions (``node.type in REDUCTIONS``: that value exists only when its loop is
      over). Then the node joins the open (not sealed) cluster of its domain, if there is
      one, or starts a new cluster. There is never more than one open cluster per domain.

    Return each cluster's op names (``node.operation.name``) in program order, the
    clusters in the order they started, but leave out a cluster of a single elementwise op
    (it runs as the op: no cluster). A single reduction is a cluster. The test compares your
    answer with the compiler's ``find_clusters`` on graphs of its own, and refuses calls of
    it (and of the rest of the compiler's pass): the clustering is the thing to build.

    Args:
        program: A specialized plan.

    Returns:
        The clusters, each as a list of op names.

    Hint 1:
        One walk over the nodes, keeping for each cluster its domain, its names, the values its
        reductions made, and whether it is sealed.

    Hint 2:
        A dict from each value a cluster made (``node.outputs``) to that cluster tells you which
        clusters a node reads from. For each node, first seal what the rules seal, then add the
        node to the open cluster of its domain, or start one.

    Hint 3:
        At the end drop the clusters of a single op that is not a reduction. ``find_clusters``
        in ``packages/graph/src/eagerflow/graph/compiler/fusion.py`` is the real thing; try
        yours on the chapter's training step first.
    """
    raise NotImplementedError


def program_for(
    fetches: Sequence[Any], feeds: dict[SymbolicTensor, tuple[int, ...]]
) -> Specialized:
    """Given, not an exercise: the specialized program the compiler would cluster, for
    ``fetches`` (tensors or operations of one graph) with placeholders of the given shapes
    fed. ``[op.operation.name for op in program_for(...).nodes]`` lists its nodes."""
    plan = Plan(list(fetches), list(feeds))
    return specialize(plan, {plan.slot[t]: tuple(shape) for t, shape in feeds.items()})


def plan_buffers(program: Specialized) -> dict[int, int]:
    """★★★ Stretch: the memory planner. A buffer for every value; values that are never
    alive at the same time share one.

    A compiled program writes each value into a buffer allocated once, when it is compiled,
    and two values may use the same buffer if they have the same shape and dtype and are
    never needed at the same time (the chapter's *Memory* section). Plan that, for every
    value the program's nodes make.

    Number the nodes of ``program.nodes`` 0, 1, 2, … in order. A value (an ``int``) is
    made by one node (it is in its ``node.outputs``) and read by later ones (in their
    ``node.inputs``). It is *alive* from the step of the node that makes it to the step of
    the last node that reads it; a value no node reads is alive at its own step only, and a
    fetched value (in ``program.fetches``) to the end of the program. Two values may share
    a buffer when their shapes (``program.shapes[v]``) and dtypes (``program.dtypes[v]``)
    are equal and no step has both alive. So a node's outputs never take the buffer of a
    value it reads: both are alive at its step.

    Use as few buffers as you can: for each shape and dtype, as many as the most values of
    it alive at one step. The test runs the program with your plan, copying each node's
    result into its value's buffer, compares the fetches with a Session's, and counts the
    buffers. Fed values and constants (``program.constants``) get no buffer.

    Args:
        program: A specialized plan (``program_for`` above makes one).

    Returns:
        ``{value: buffer}`` for every value a node of ``program`` makes, each buffer an int.

    Hint 1:
        One walk over the nodes, in order, keeping the buffers that are free, by shape and
        dtype: a new value takes a free buffer of its kind, or a new buffer.

    Hint 2:
        First find each value's last step: the index of the last node that reads it, or
        ``len(program.nodes)`` if it is fetched. At step i, give the node's outputs their
        buffers first; then free the buffers of the values whose last step is i.

    Hint 3:
        ``free: dict[tuple[shape, dtype], list[int]]``; a value takes ``free[key].pop()``
        if that list is not empty, else the next new number. ``_plan_buffers`` in
        ``packages/graph/src/eagerflow/graph/compiler/program.py`` plans the same way, for
        the values the compiler can write into a buffer: read it, but do not call it (nor
        its liveness, ``last_uses``): the tests refuse them.
    """
    raise NotImplementedError
