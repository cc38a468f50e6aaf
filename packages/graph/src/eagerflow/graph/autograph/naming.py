"""New names for the variables and functions the converters generate.

A generated name must not take over a name the user's function already uses: ``break_``
becomes ``break__1`` if the function has a ``break_`` of its own. One ``Namer`` serves the
whole function, so two loops get ``break_`` and ``break__1`` and a reader of the converted
code can tell them apart.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from eagerflow.graph.core.names import UniqueNames


class Namer(UniqueNames):
    """Hands out names unused in one function (and in what the converters made so far)."""

    def __init__(self, function: ast.AST) -> None:
        super().__init__(_names_in(function))

    def new(self, base: str) -> str:
        """``base``, or ``base_1``, ``base_2``, ... : the first not used yet (now used)."""
        return self(base)


def _names_in(function: ast.AST) -> Iterator[str]:
    """Every variable, argument, function and class name ``function``'s code mentions."""
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            yield node.id
        elif isinstance(node, ast.arg):
            yield node.arg
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name


__all__ = ["Namer"]
