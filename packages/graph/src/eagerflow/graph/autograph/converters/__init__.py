"""The converters: each rewrites one kind of Python construct, as an ``ast.NodeTransformer``.

They run in this order (``conversion.py``), each on the output of the one before:

1. ``break_statements``: ``break`` becomes a flag the loop tests;
2. ``continue_statements``: ``continue`` becomes a flag that skips the rest of the body;
3. ``return_statements``: ``return`` in a block becomes a flag and a return value;
4. ``call_trees``: every call goes through ``ag__.converted_call``, which converts the
   functions it calls;
5. ``control_flow``: ``if``, ``while`` and ``for`` become calls of ``ag__.if_stmt``,
   ``ag__.while_stmt`` and ``ag__.for_stmt``, with their bodies as functions;
6. ``conditional_expressions``: ``a if test else b`` becomes ``ag__.if_exp``;
7. ``logical_expressions``: ``and``, ``or`` and ``not`` become ``ag__.and_``, ``ag__.or_``
   and ``ag__.not_``.

The first three leave no jumps for the fourth to worry about: a body that is a function
cannot ``break`` out of a loop around it. TensorFlow's AutoGraph has converters of the same
names, run in the same order.
"""

from __future__ import annotations

import ast
from typing import Any


class FunctionBodyTransformer(ast.NodeTransformer):
    """A converter of one function's statements. A class or an async function defined
    inside it runs as written: AutoGraph converts functions, not what they define."""

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> Any:
        return node


__all__ = ["FunctionBodyTransformer"]
