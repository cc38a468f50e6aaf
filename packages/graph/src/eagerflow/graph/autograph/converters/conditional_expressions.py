"""``a if condition else b`` becomes ``ag__.if_exp(condition, lambda: a, lambda: b)``.

The expression form of ``if``: on a symbolic tensor it becomes a ``cond`` of two branches
returning one value each, otherwise Python's own. The branches are ``lambda``s so that only
the chosen one runs, as in Python.
"""

from __future__ import annotations

import ast
from typing import Any

from eagerflow.graph.autograph.converters import FunctionBodyTransformer
from eagerflow.graph.autograph.templates import locate, replace_as_expression


class ConditionalExpressionTransformer(FunctionBodyTransformer):
    """Turns ``a if test else b`` into ``ag__.if_exp``, a ``cond`` when ``test`` is a tensor."""

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        self.generic_visit(node)
        result = replace_as_expression(
            "ag__.if_exp(test, lambda: body, lambda: orelse)",
            test=node.test, body=node.body, orelse=node.orelse,
        )  # fmt: skip
        locate([result], node)
        return result


def transform(node: ast.FunctionDef) -> ast.FunctionDef:
    """``node`` with its conditional expressions going through ``ag__.if_exp``."""
    node.body = [ConditionalExpressionTransformer().visit(statement) for statement in node.body]
    return node


__all__ = ["ConditionalExpressionTransformer", "transform"]
