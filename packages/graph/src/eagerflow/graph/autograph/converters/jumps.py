"""What ``break``, ``continue`` and ``return`` have in common: each jumps out of a block.

A graph has no jumps: a loop body turned into a function must run to its end. So each jump
becomes an assignment to a flag (``break_ = True``), and every statement after one that may
have jumped runs only if it did not::

    for x in xs:                       for x in xs:
        if x < 0:                          if x < 0:
            break              ->              break_ = True
        total += x                         if not break_:
                                               total += x

This happens in every enclosing block up to the loop (or, for ``return``, the function).
The loop itself then tests the flag; what that means for each jump is up to its converter.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from eagerflow.graph.autograph.naming import Namer
from eagerflow.graph.autograph.templates import locate, replace, replace_as_expression

NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
LOOPS = (ast.While, ast.For, ast.AsyncFor)


def contains(node: ast.AST, jump: type[ast.stmt]) -> bool:
    """Whether ``node`` holds a ``jump`` that leaves it: not one in a nested function, nor a
    ``break``/``continue`` of a loop nested in it (its ``else`` block does count: a
    ``break`` there belongs to the loop around)."""
    if isinstance(node, jump):
        return True
    if isinstance(node, NESTED_SCOPES):
        return False
    if isinstance(node, LOOPS) and jump is not ast.Return:
        return any(contains(s, jump) for s in node.orelse)
    return any(contains(child, jump) for child in ast.iter_child_nodes(node))


def contains_in(statements: Sequence[ast.stmt], jump: type[ast.stmt]) -> bool:
    """Whether any of ``statements`` holds a ``jump`` that leaves it (see ``contains``)."""
    return any(contains(s, jump) for s in statements)


class JumpConverter(ast.NodeTransformer):
    """Rewrites the blocks of a function so that statements after a possible jump are
    guarded by ``if not <flag>:``. Subclasses say which jump (``jump``), turn it into an
    assignment, and keep ``flag`` set to the flag of the loop or function being converted
    (None outside one)."""

    jump: type[ast.stmt]

    def __init__(self, namer: Namer) -> None:
        self.namer = namer
        self.flag: str | None = None

    def visit_block(self, statements: Sequence[ast.stmt]) -> list[ast.stmt]:
        """The converted statements; after the first that may jump, the rest is guarded."""
        converted: list[ast.stmt] = []
        for i, statement in enumerate(statements):
            may_jump = self.flag is not None and contains(statement, self.jump)
            converted += _as_list(self.visit(statement))
            rest = statements[i + 1 :]
            if may_jump and rest:
                return self.attach_rest(converted, statement, self.visit_block(rest))
        return converted

    def attach_rest(
        self, converted: list[ast.stmt], original: ast.stmt, rest: list[ast.stmt]
    ) -> list[ast.stmt]:
        """Where the statements after ``original`` (which may jump) go: under a guard."""
        guard = replace("if not flag:\n    rest", flag=self.flag, rest=rest)
        locate(guard, rest[0])
        return converted + guard

    def jump_to_flag(self, node: ast.stmt) -> list[ast.stmt]:
        """The jump itself (``break`` or ``continue``) becomes ``flag = True``."""
        assert self.flag is not None  # Python allows a jump only inside a loop
        return flag_is(self.flag, True, node)

    def visit_While(self, node: ast.While) -> Any:
        return self.loop(node)

    def visit_For(self, node: ast.For) -> Any:
        return self.loop(node)

    def loop(self, node: ast.While | ast.For) -> Any:
        """A loop, converted (each jump's own rule)."""
        raise NotImplementedError  # (abstract: BreakConverter and ContinueConverter say)

    def with_flag(self, flag: str | None, statements: Sequence[ast.stmt]) -> list[ast.stmt]:
        """``visit_block(statements)`` with ``flag`` as the flag of the jumps found there."""
        outer, self.flag = self.flag, flag
        try:
            return self.visit_block(statements)
        finally:
            self.flag = outer

    def generic_visit(self, node: ast.AST) -> ast.AST:
        """Every statement list of ``node`` goes through ``visit_block``."""
        for field, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(node, field, self.visit_block(value))
            elif isinstance(value, list):  # handlers, keywords, ... (and names: strings)
                items = [self.visit(v) if isinstance(v, ast.AST) else v for v in value]
                setattr(node, field, items)
            elif isinstance(value, ast.AST):
                setattr(node, field, self.visit(value))
        return node

    # A nested function's jumps are its own; a nested class is left as written.
    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        node.body = self.with_flag(None, node.body)
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> Any:
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        return node


def flag_is(flag: str, value: bool, original: ast.stmt) -> list[ast.stmt]:
    """``flag = value``, located at ``original`` (the statement it replaces)."""
    statements = replace(f"flag = {value}", flag=flag)
    locate(statements, original)
    return statements


def not_(flag: str) -> ast.expr:
    """The expression ``not flag``."""
    return replace_as_expression("not flag", flag=flag)


def _as_list(converted: Any) -> list[ast.stmt]:
    if converted is None:
        return []
    return converted if isinstance(converted, list) else [converted]


__all__ = ["LOOPS", "NESTED_SCOPES", "JumpConverter", "contains", "contains_in", "flag_is", "not_"]
