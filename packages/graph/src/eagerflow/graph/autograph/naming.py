"""New names for the variables and functions the converters generate.

A generated name must not take over a name the user's function already uses: ``break_``
becomes ``break__1`` if the function has a ``break_`` of its own. One ``Namer`` serves the
whole function, so two loops get ``break_`` and ``break__1`` and a reader of the converted
code can tell them apart.
"""

from __future__ import annotations

import ast


class Namer:
    """Hands out names unused in one function (and in what the converters made so far)."""

    def __init__(self, function: ast.AST) -> None:
        self.used: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Name):
                self.used.add(node.id)
            elif isinstance(node, ast.arg):
                self.used.add(node.arg)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.used.add(node.name)

    def new(self, base: str) -> str:
        """``base``, or ``base_1``, ``base_2``, ... : the first not used yet (now used)."""
        name, count = base, 0
        while name in self.used:
            count += 1
            name = f"{base}_{count}"
        self.used.add(name)
        return name


__all__ = ["Namer"]
