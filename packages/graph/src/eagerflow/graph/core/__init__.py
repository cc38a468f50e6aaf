"""The graph core: what a graph is and how a Session runs it (chapters 6 to 8).

Read in this order: ``graph.py`` (``Graph``, ``Operation``, ``SymbolicTensor``), ``ops.py``
(placeholders, groups, initializers), ``state.py`` (variables' values per Session),
``walks.py`` (the operations some tensors need, in a topological order; when a value is
used last), ``session.py`` (``Session`` and its ``Plan``), ``gradients.py``, ``control_flow.py``
(``cond``, ``while_loop``), ``auto_control_deps.py``, ``draw.py`` (pictures) and ``files.py``
(``atomic_write``, used by the compiler's cache and by every export format).

The core imports no other stage of ``eagerflow.graph``.
"""

__all__: list[str] = []  # a stage: import its modules
