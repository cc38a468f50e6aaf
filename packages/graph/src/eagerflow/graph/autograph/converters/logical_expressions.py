"""``a and b``, ``a or b`` and ``not a`` become ``ag__.and_``, ``ag__.or_`` and ``ag__.not_``.

Python's ``and`` asks ``bool(a)``, which a symbolic tensor cannot answer while the graph is
built. The helpers answer at run time: Python values keep Python's meaning exactly (``a or
b`` is ``a`` if ``a`` is true, else ``b``), tensors get logical ops. ``b`` is passed as a
``lambda`` so that it is evaluated only when Python would evaluate it::

    if x > 0 and y > 0:     ->     if ag__.and_(lambda: x > 0, lambda: y > 0):

(``a and b and c`` nests: ``and_(lambda: a, lambda: and_(lambda: b, lambda: c))``.)

A chained comparison is an ``and`` in disguise, so it becomes one, as in TensorFlow's
AutoGraph: ``a < b < c`` is ``and_(lambda: a < b, lambda: b < c)`` (so ``b`` is evaluated
twice, once per comparison, where Python evaluates it once).
"""

from __future__ import annotations

import ast
from typing import Any

from eagerflow.graph.autograph.converters import FunctionBodyTransformer
from eagerflow.graph.autograph.templates import locate, replace_as_expression


class LogicalTransformer(FunctionBodyTransformer):
    """Turns ``and``/``or`` into ``ag__.and_``/``ag__.or_``, lazy on tensors as on Python values."""

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        self.generic_visit(node)
        helper = "ag__.and_" if isinstance(node.op, ast.And) else "ag__.or_"
        result = node.values[-1]
        for value in reversed(node.values[:-1]):
            result = replace_as_expression(
                f"{helper}(lambda: left, lambda: right)", left=value, right=result
            )
        locate([result], node)
        return result

    def visit_Compare(self, node: ast.Compare) -> Any:
        self.generic_visit(node)
        if len(node.ops) < 2:
            return node
        lefts = [node.left, *node.comparators[:-1]]
        pairs: list[ast.expr] = [
            ast.Compare(left=left, ops=[op], comparators=[right])
            for left, op, right in zip(lefts, node.ops, node.comparators, strict=True)
        ]
        locate(pairs, node)
        return self.visit_BoolOp(ast.BoolOp(op=ast.And(), values=pairs))

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        self.generic_visit(node)
        if not isinstance(node.op, ast.Not):
            return node
        result = replace_as_expression("ag__.not_(operand)", operand=node.operand)
        locate([result], node)
        return result


def transform(node: ast.FunctionDef) -> ast.FunctionDef:
    """``node`` with ``and``, ``or`` and ``not`` going through the helpers."""
    node.body = [LogicalTransformer().visit(statement) for statement in node.body]
    return node


__all__ = ["LogicalTransformer", "transform"]
