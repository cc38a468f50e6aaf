"""AutoGraph: Python's ``if``, ``while`` and ``for`` on tensors become ``cond`` and ``while_loop``.

``@function`` traces a Python function: it runs it once with symbolic tensors. An ``if x >
0:`` then has no answer, since ``x`` has no value yet. TensorFlow's solution, kept here, is
to rewrite the function's *source* before tracing it, so that every ``if``, ``while`` and
``for`` becomes a call of a small helper that decides when it runs: on a Python value it
does what Python does, on a tensor it builds graph control flow. ``function`` does that by
default (``function(f, autograph=False)`` traces ``f`` as written); ``to_code(f)`` shows the
converted source.

Read it in this order:

1. ``conversion.py``  source -> AST -> converters -> a function again, line numbers kept;
   ``converted_call``, which converts the functions converted code calls;
2. ``converters/``    one ``ast.NodeTransformer`` per construct (its ``__init__`` lists them);
3. ``analysis.py``    which variables each statement changes and which are used after it;
4. ``operators.py``   the helpers the converted code calls: Python or graph, decided at run
   time, with messages that name the user's variables and lines (``values.py`` what they
   share, ``conditionals.py`` for ``if``, ``and``, ``or``, ``not``, ``loops.py`` for loops);
5. ``templates.py``, ``naming.py``, ``anno.py``: small tools of the converters;
6. ``experimental.py`` ``set_loop_options``, a loop's shape invariants.
"""

from eagerflow.graph.autograph import experimental  # tf.autograph.experimental's name
from eagerflow.graph.autograph.conversion import (
    AutoGraphWarning,
    convert,
    converted_call,
    do_not_convert,
    maybe_convert,
    to_code,
)
from eagerflow.graph.autograph.operators import AutoGraphError, UndefinedVariableError

__all__ = [
    "AutoGraphError",
    "AutoGraphWarning",
    "UndefinedVariableError",
    "convert",
    "converted_call",
    "do_not_convert",
    "experimental",
    "maybe_convert",
    "to_code",
]
