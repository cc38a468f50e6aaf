"""Chapter 8 exercises — run `pytest -m ch08`.

From eager to graph: the signature that decides when ``@function`` traces again, a
training step traced once, and two of the Session's graph optimizations written by hand:
constant folding and common-subexpression elimination.

Reference solutions: the same functions as `exercises/ch08.py`, solved.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import Function, Graph, function
from eagerflow.tensor import Tensor


def signature(*args: Any) -> tuple[Any, ...]:
    """The key ``@function`` looks its traced graphs up by: equal keys, no new trace.

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

    Hint:
        ``ef.convert_to_tensor(array)`` turns a NumPy array into a tensor. The type is part
        of a value's description because ``2 == 2.0 == True`` in Python, but tracing with
        an ``int`` and with a ``float`` can build different graphs. Compare yours with
        ``_signature_of`` in ``packages/graph/src/eagerflow/graph/function.py``.
    """
    key = []
    for arg in args:
        if isinstance(arg, np.ndarray):
            arg = ef.convert_to_tensor(arg)
        if isinstance(arg, Tensor):
            key.append(("tensor", arg.dtype, tuple(arg.shape)))
        else:
            key.append(("value", type(arg), arg))
    return tuple(key)


def train_step_function(w: Variable, b: Variable, learning_rate: float) -> Function:
    """A traced training step for the line ``y ≈ w·x + b``: eager code, graph speed.

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

    Hint:
        Define ``def step(x, y): ...`` inside this function, using ``w``, ``b`` and
        ``learning_rate`` from the enclosing scope, and return ``function(step)``. The
        variables are read inside the trace, so each call sees their current values, and
        ``w.assign_sub(...)`` inside is part of the graph, so it runs at each call.
    """

    @function
    def step(x: Tensor, y: Tensor) -> Tensor:
        with GradientTape() as tape:
            err = w * x + b - y
            loss = ef.reduce_mean(err * err)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(learning_rate * dw)
        b.assign_sub(learning_rate * db)
        return loss

    return step


def fold_constants(graph: Graph) -> dict[str, Any]:
    """Constant folding: every value of ``graph`` known before anything is fed or run.

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

    Hint:
        A dict ``known`` from tensor to value, filled in one pass: graph order puts every
        operation after the operations that make its inputs. A Session does this when it
        compiles a plan (``_fold_and_merge`` in
        ``packages/graph/src/eagerflow/graph/session.py``), so at run time the folded
        operations cost nothing.
    """
    known: dict[Any, Any] = {}
    for operation in graph.get_operations():
        pure = not (operation.op_def.stateful or operation.control_inputs)
        if not pure or operation.type == "Placeholder":
            continue
        if not all(t in known for t in operation.inputs):
            continue
        op = operation.op_def
        result = op.kernel(*(known[t] for t in operation.inputs), **operation.attrs)
        results = result if op.multi_output else (result,)
        known.update(zip(operation.outputs, results, strict=True))
    return {t.name: value for t, value in known.items()}


def find_duplicates(graph: Graph) -> dict[str, str]:
    """Common-subexpression elimination: which operations repeat an earlier one.

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

    Hint:
        Give each pure operation a key, ``(operation.type, input names, attributes)``, where
        an input's name is that of the tensor it stands for (``Tanh:0`` for ``Tanh_1:0``
        once ``Tanh_1`` is known to repeat ``Tanh``), and keep a dict from key to the
        first operation. ``repr(sorted(operation.attrs.items()))`` turns the attributes
        into something hashable (arrays included) for the graphs of this exercise.
    """
    canonical: dict[str, str] = {}  # tensor name -> the name of the tensor it repeats
    first: dict[Any, Any] = {}
    duplicates: dict[str, str] = {}
    for operation in graph.get_operations():
        pure = not (operation.op_def.stateful or operation.control_inputs)
        if not pure or operation.type == "Placeholder":
            continue
        inputs = tuple(canonical.get(t.name, t.name) for t in operation.inputs)
        key = (operation.type, inputs, repr(sorted(operation.attrs.items())))
        original = first.setdefault(key, operation)
        if original is operation:
            continue
        duplicates[operation.name] = original.name
        for mine, theirs in zip(operation.outputs, original.outputs, strict=True):
            canonical[mine.name] = theirs.name
    return duplicates
