"""``break`` becomes a flag that the loop tests before each iteration::

    while i < n:                         break_ = False
        if x[i] < 0:                     while not break_ and i < n:
            break               ->           if x[i] < 0:
        i += 1                                   break_ = True
                                             if not break_:
                                                 i += 1

A ``for`` loop cannot take a longer test, so its flag becomes the loop's *extra test*
(noted on the node, see ``analysis.EXTRA_TEST``), checked before each next item. A loop's
``else`` block runs only when no ``break`` ended the loop: it moves after the loop, under
``if not break_``.
"""

from __future__ import annotations

import ast
from typing import Any

from eagerflow.graph.autograph.analysis import EXTRA_TEST
from eagerflow.graph.autograph.anno import setanno
from eagerflow.graph.autograph.converters.jumps import JumpConverter, contains_in, flag_is, not_
from eagerflow.graph.autograph.naming import Namer
from eagerflow.graph.autograph.templates import locate, replace, replace_as_expression


class BreakConverter(JumpConverter):
    """Turns ``break`` into a flag that the loop tests before each iteration."""

    jump = ast.Break

    def visit_Break(self, node: ast.Break) -> Any:
        return self.jump_to_flag(node)

    def loop(self, node: ast.While | ast.For) -> Any:
        if not contains_in(node.body, ast.Break):
            node.body = self.with_flag(None, node.body)  # breaks in there are inner loops'
            node.orelse = self.visit_block(node.orelse)
            return node
        flag = self.namer.new("break_")
        node.body = self.with_flag(flag, node.body)
        orelse = self.visit_block(node.orelse)  # a break there leaves the loop around
        node.orelse = []
        if isinstance(node, ast.While):
            node.test = replace_as_expression("not flag and test", flag=flag, test=node.test)
        else:
            setanno(node, EXTRA_TEST, not_(flag))
        after = replace("if not flag:\n    orelse", flag=flag, orelse=orelse)
        locate(after, node)
        return [*flag_is(flag, False, node), node, *(after if orelse else [])]


def transform(node: ast.FunctionDef, namer: Namer) -> ast.FunctionDef:
    """``node`` with every ``break`` turned into a flag (see the module docs)."""
    converter = BreakConverter(namer)
    node.body = converter.visit_block(node.body)
    return node


__all__ = ["BreakConverter", "transform"]
