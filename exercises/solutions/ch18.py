"""Chapter 18 exercises — run `.venv/bin/pytest -m ch18`.

The whole stack: what the layers of the book make of one function, measured from the real
objects (a capstone exercise may join it).

Reference solutions: the same functions as `exercises/ch18.py`, solved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eagerflow.graph import function
from eagerflow.tensor import Tensor
from eagerflow.tensor.execution import recording


class _OpCounter:
    """A recorder that counts the ops it is told about."""

    def __init__(self) -> None:
        self.ops = 0

    def record(self, op: Any, inputs: Any, attrs: Any, outputs: Any) -> None:
        self.ops += 1


def stack_report(fn: Callable[..., Any], *args: Tensor) -> dict[str, int]:
    """★ What two layers of the stack make of one function: its eager ops and its trace.

    Chapter 18 followed one training step down the stack. Do the same for any function
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
    with recording(_OpCounter()) as counter:
        fn(*args)
    operations = function(fn).get_concrete_function(*args).graph.get_operations()
    return {
        "eager_ops": counter.ops,
        "graph_nodes": len(operations),
        "if_nodes": sum(op.type == "If" for op in operations),
    }
