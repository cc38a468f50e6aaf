"""The helpers converted code calls (as ``ag__.if_stmt`` and so on): Python or graph, decided
when the code runs.

The converters cannot tell from the source whether ``x > 0`` will be a Python bool or a
tensor: that depends on what ``x`` is at run time. So they turn each statement into a call
of a helper here, which looks:

- a Python value (or an eager tensor, which has one) runs the blocks as Python would: an
  ``if`` runs one branch, a ``for`` over a list or ``range`` runs once per item (it is
  *unrolled* into the graph being traced);
- a symbolic tensor makes graph control flow: ``if`` becomes ``cond``, ``while`` and
  ``for`` over a tensor become ``while_loop``.

Graph control flow needs the variables a statement changes as values in and out (``cond``
and ``while_loop`` are functions of them). The converted code hands each helper a pair of
functions for that, ``get_state`` and ``set_state``, and the variables' names for messages.
Those messages name the user's variable and line, as TensorFlow's AutoGraph does, because
the mistakes are the user's: a variable assigned in one branch only, a loop variable whose
dtype changes from one iteration to the next, a loop variable with no value before the loop.

The helpers live in three modules, gathered here (the converted code's ``ag__`` holds
``__all__``): ``values.py`` (what they share), ``conditionals.py`` (``if``, ``and``, ``or``,
``not``) and ``loops.py`` (``while``, ``for``).
"""

from eagerflow.graph.autograph.conditionals import and_, if_exp, if_stmt, not_, or_
from eagerflow.graph.autograph.loops import COUNTED, for_stmt, while_stmt
from eagerflow.graph.autograph.values import (
    AutoGraphError,
    Undefined,
    UndefinedReturnValue,
    UndefinedVariableError,
    Where,
    retval,
)

__all__ = [
    "COUNTED",
    "AutoGraphError",
    "Undefined",
    "UndefinedReturnValue",
    "UndefinedVariableError",
    "Where",
    "and_",
    "for_stmt",
    "if_exp",
    "if_stmt",
    "not_",
    "or_",
    "retval",
    "while_stmt",
]
