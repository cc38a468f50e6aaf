"""Chapter 20 exercises — run `.venv/bin/pytest -m ch20`.

The whole stack: what the layers of the book make of one function, measured from the real
objects; then the capstone of the "Build a mini TensorFlow" track, the whole stack built by
you. Your pieces from the earlier chapters meet there and train a model with nothing of
eagerflow's machinery doing the work: your ``MiniGraph`` (chapter 7) holds the model as a
graph, your ``mini_gradients`` adds its gradient nodes from the gradient rules (the table your
``MiniTape`` of chapter 3 used), your ``run_mini`` runs it, your ``Adam`` (chapter 5)
updates the parameters, and your ``encode_attr`` and ``numpy_source`` (chapter 14) export
the trained model as a function that needs only NumPy.

The tests hand you your own pieces, from your earlier chapter files, in a ``Pieces``; they
skip, saying which piece is missing ("needs ch07.MiniGraph first"), until each is done.
They refuse eagerflow's ``GradientTape``, ``gradients()``, ``Session``, ``@function``,
optimizers and ``Graph``: the model trains on your pieces or not at all.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch20`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch20.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import function
from eagerflow.tensor import Tensor, execution
from eagerflow.tensor.execution import recording


def stack_report(fn: Callable[..., Any], *args: Tensor) -> dict[str, int]:
    """★ What two layers of the stack make of one function: its eager ops and its trace.

    Chapter 20 followed one training step down the stack. Do the same for any function
    ``fn`` of tensors, on the arguments ``args``, and report three numbers:

    - ``"eager_ops"``: how many ops run through the execution seam when ``fn(*args)`` is
      called once, eagerly (chapter 2);
    - ``"graph_nodes"``: how many operations the graph has that tracing ``fn`` with these
      arguments makes (chapter 9);
    - ``"if_nodes"``: how many of those operations are ``If`` nodes, AutoGraph's work on the
      ``if`` statements whose condition is a tensor (chapter 10).

    Args:
        fn: A function of tensors, without side effects (it may run twice).
        *args: Its arguments, eager tensors.

    Returns:
        ``{"eager_ops": ..., "graph_nodes": ..., "if_nodes": ...}``, three ints.

    Hint 1:
        A recorder is any object with a ``record(op, inputs, attrs, outputs)`` method;
        ``with recording(recorder):`` makes the seam tell it about every op.

    Hint 2:
        ``function(fn).get_concrete_function(*args).graph.get_operations()`` lists the trace's
        operations; each has a ``type``, such as ``"If"``.
    """
    raise NotImplementedError


# --- the capstone: a model trained with your own pieces -------------------------------------------
PARAMETERS = ("w1", "b1", "w2", "b2")  # the model's parameters, in this order everywhere


@dataclass
class Pieces:
    """Given: your pieces of the earlier chapters, as the tests hand them to you."""

    MiniGraph: type  # chapter 7: a context that builds nodes (``placeholder``, ``nodes``)
    run_mini: Callable[..., np.ndarray]  # chapter 7: run_mini(fetch, feeds)
    mini_gradients: Callable[..., Any]  # chapter 7: mini_gradients(graph, y, x)
    Adam: type  # chapter 5: Adam(learning_rate).apply(variables, grads)
    encode_attr: Callable[[Any], Any]  # chapter 14: an attribute as JSON data
    numpy_source: Callable[..., str]  # chapter 14: numpy_source(graph_def, fetches)


def predict(x: Tensor, params: dict[str, Tensor]) -> Tensor:
    """Given: the model, a two-layer perceptron ``tanh(x·w1 + b1)·w2 + b2``, written with
    eagerflow ops: in a ``MiniGraph``'s context it builds nodes."""
    hidden = ef.tanh(ef.matmul(x, params["w1"]) + params["b1"])
    return ef.matmul(hidden, params["w2"]) + params["b2"]


def mean_squared_error(prediction: Tensor, y: Tensor) -> Tensor:
    """Given: the loss, the mean of the squared errors."""
    return ef.reduce_mean(ef.square(prediction - y))


def train(
    pieces: Pieces,
    x: np.ndarray,
    y: np.ndarray,
    params: dict[str, np.ndarray],
    steps: int,
    learning_rate: float,
) -> tuple[dict[str, np.ndarray], list[float]]:
    """★★★ Capstone: train ``predict`` on ``(x, y)`` with your own pieces, and only those.

    Build the graph once: in a ``pieces.MiniGraph``, a placeholder for ``x``, for ``y`` and
    for each parameter (with their shapes and float32), the loss
    ``mean_squared_error(predict(x, params), y)`` built in the graph's context, and the
    gradient of the loss with respect to each parameter, by ``pieces.mini_gradients``.

    Then train: keep each parameter's value in a ``Variable`` (starting from ``params``) and
    make one ``pieces.Adam(learning_rate)``. At each of the ``steps`` steps, run the loss and
    the four gradients with ``pieces.run_mini``, feeding ``x``, ``y`` and the parameters'
    current values, and let the Adam ``apply`` the gradients (as tensors) to the variables:
    full-batch Adam, the same every time. The tests replay that with eagerflow's own tape
    and formulas and compare the parameters after training.

    Args:
        pieces: Your pieces (``Pieces``).
        x: The inputs, float32 of shape (examples, inputs).
        y: The targets, float32 of shape (examples, outputs).
        params: The starting parameters, float32 arrays by name (``PARAMETERS``).
        steps: How many Adam steps to take.
        learning_rate: Adam's learning rate.

    Returns:
        ``(trained, losses)``: the trained parameters as NumPy arrays by name, and the loss
        before each step, as floats.

    Hint 1:
        Two phases: building (everything symbolic, no values: no kernel runs) and running
        (``run_mini`` on the symbols, as many times as you like). The gradient symbols are
        built once, before the loop.

    Hint 2:
        ``graph.placeholder(value.shape, ef.float32)`` for each; build inside ``with
        execution.context(graph):``; the feeds are a dict from each placeholder to a NumPy
        array: ``variable.numpy()`` for a parameter, read anew at each step.

    Hint 3:
        ``adam.apply(variables, [ef.constant(pieces.run_mini(g, feeds)) for g in grads])``
        with ``variables`` and ``grads`` in the order of ``PARAMETERS``.
    """
    raise NotImplementedError


def export(pieces: Pieces, params: dict[str, np.ndarray]) -> str:
    """★★ The trained model as the source of a NumPy function, through your exporter.

    Build ``predict`` in a ``pieces.MiniGraph``, then write that graph as a GraphDef (the
    chapter 14 format, as ``json.loads`` would give it) and hand it to your
    ``pieces.numpy_source``: the source it returns defines ``run(feeds)``, whose
    ``feeds["x"]`` are inputs of any number of rows and whose one result is the model's
    predictions. The trained parameters are constants of the def.

    A GraphDef is ``{"node": [...]}``, a list of nodes in an order where each comes after
    the nodes it reads: each ``{"name": ..., "op": ..., "input": ["name:0", ...], "attr":
    {...}}``, attributes written by ``pieces.encode_attr``. The placeholder of ``x`` is
    ``{"name": "x", "op": "Placeholder", "attr": {}}``; every other input without a node of
    its own (a parameter, an eager tensor such as a constant) is a ``Const`` node whose
    ``value`` attribute is the array. Name the node that gives the prediction
    ``"prediction"``: the source is ``numpy_source(graph_def, ["prediction:0"])``.

    Args:
        pieces: Your pieces (``Pieces``).
        params: Trained parameters, float32 arrays by name.

    Returns:
        The source from your ``numpy_source``.

    Hint 1:
        The placeholder for ``x`` may have any number of rows: its shape while building is
        only for the shape rules. Parameters can be eager tensors in the graph (constants)
        rather than placeholders: ``predict(x, {n: ef.constant(v) ...})``.

    Hint 2:
        Walk ``graph.nodes`` in order, naming node ``i`` ``f"n{i}"`` (the last one
        ``"prediction"``); keep a dict from each symbol to its tensor name. An input that is
        not in that dict is an eager tensor: add a ``Const`` node for it first.
    """
    raise NotImplementedError
