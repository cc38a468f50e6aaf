"""Chapter 18 exercises — run `.venv/bin/pytest -m ch18`.

The whole stack: what the layers of the book make of one function, measured from the real
objects (a capstone exercise may join it).

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch18`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch18.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import eagerflow.tensor as ef
from eagerflow.graph import function
from eagerflow.tensor import Tensor
from eagerflow.tensor.execution import recording


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
    raise NotImplementedError
