"""Code templates: converters write the code they generate as readable Python text.

``replace("flag = True", flag="break_")`` parses the text and puts each replacement where
its placeholder name stands: a string renames (a variable, a function, a parameter, the
names of a ``nonlocal``), an AST expression takes the name's place, and a list of
statements takes the place of a line holding only the name. TensorFlow's AutoGraph builds
its output the same way (its ``templates.replace``).

The template's own nodes get no line numbers: the converter gives them those of the user's
statement they replace, so that an error in generated code points at the user's line. The
user's nodes put into a template keep theirs.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Sequence
from typing import Any

_POSITIONS = ("lineno", "col_offset", "end_lineno", "end_col_offset")
_KEYWORDS = {ast.If: "if", ast.While: "while", ast.For: "for", ast.FunctionDef: "def"}


def replace(template: str, **replacements: Any) -> list[ast.stmt]:
    """The statements of ``template`` with the placeholders replaced (see the module docs)."""
    tree = ast.parse(textwrap.dedent(template))
    for node in ast.walk(tree):
        for position in _POSITIONS:
            node.__dict__.pop(position, None)
    module = _Replacer(replacements).visit(tree)
    return list(module.body)


def replace_as_expression(template: str, **replacements: Any) -> ast.expr:
    """Like ``replace``, for a template that is one expression."""
    (statement,) = replace(template, **replacements)
    assert isinstance(statement, ast.Expr)
    return statement.value


def locate(nodes: Sequence[ast.AST], original: ast.AST) -> None:
    """Give every node in ``nodes`` that has no position the first line of ``original`` (the
    user's statement the code stands for). Nodes that have one (the user's) keep it.

    Only the first line: a generated call spanning the user's whole ``while`` block would be
    reported at the block's *last* line (Python places a method call at its name's end). A
    traceback then underlines the statement's keyword."""
    line, column = getattr(original, "lineno", 1), getattr(original, "col_offset", 0)
    one_line = getattr(original, "end_lineno", line) == line
    keyword = _KEYWORDS.get(type(original), "x")
    end = getattr(original, "end_col_offset", column) if one_line else column + len(keyword)
    for root in nodes:
        for node in ast.walk(root):
            has_position = "lineno" in getattr(type(node), "_attributes", ())
            if has_position and not hasattr(node, "lineno"):
                node.lineno, node.col_offset = line, column  # type: ignore[attr-defined]
                node.end_lineno, node.end_col_offset = line, end  # type: ignore[attr-defined]


class _Replacer(ast.NodeTransformer):
    def __init__(self, replacements: dict[str, Any]) -> None:
        self.replacements = replacements

    def visit_Name(self, node: ast.Name) -> Any:
        value = self.replacements.get(node.id)
        if value is None:
            return node
        if isinstance(value, str):
            return ast.Name(id=value, ctx=node.ctx)
        if isinstance(value, ast.expr):
            return _with_context(value, node.ctx)
        raise TypeError(f"cannot put {value!r} in place of the name {node.id!r}")

    def visit_Expr(self, node: ast.Expr) -> Any:
        if isinstance(node.value, ast.Name):
            value = self.replacements.get(node.value.id)
            if isinstance(value, list):  # a block of statements
                return value
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        node.name = self.replacements.get(node.name, node.name)
        return self.generic_visit(node)

    def visit_arg(self, node: ast.arg) -> Any:
        node.arg = self.replacements.get(node.arg, node.arg)
        return node

    def visit_Nonlocal(self, node: ast.Nonlocal) -> Any:
        return self._declaration(node)

    def visit_Global(self, node: ast.Global) -> Any:
        return self._declaration(node)

    def _declaration(self, node: ast.Nonlocal | ast.Global) -> Any:
        names: list[str] = []
        for name in node.names:
            value = self.replacements.get(name, name)
            names += [value] if isinstance(value, str) else list(value)
        if not names:
            return None  # `nonlocal` of nothing: drop the line
        node.names = names
        return node


def _with_context(expression: ast.expr, ctx: ast.expr_context) -> ast.expr:
    """``expression`` in a load or store position (a tuple of names can be either)."""
    if isinstance(expression, ast.Name):
        return ast.Name(id=expression.id, ctx=ctx)
    if isinstance(expression, ast.Tuple | ast.List) and not isinstance(ctx, ast.Load):
        elements = [_with_context(e, ctx) for e in expression.elts]
        return type(expression)(elts=elements, ctx=ctx)
    return expression


__all__ = ["locate", "replace", "replace_as_expression"]
