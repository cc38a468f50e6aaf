"""Tracing: ``@function`` turns Python functions into graphs (chapter 9).

Read ``tensor_spec.py`` (``TensorSpec``), ``signatures.py`` (when a call can reuse a trace),
then ``function.py`` (``Function``, ``ConcreteFunction``, the ``PartitionedCall`` op). AutoGraph
(``eagerflow.graph.autograph``), the stage below, rewrites the source before it is traced.
"""

__all__: list[str] = []  # a stage: import its modules
