"""``continue`` becomes a flag that skips the rest of the loop body::

    for x in xs:                         for x in xs:
        if x < 0:                            continue_ = False
            continue            ->           if x < 0:
        total += x                               continue_ = True
                                             if not continue_:
                                                 total += x

The flag is set back to False at the start of every iteration, so the loop itself never
needs to test it.
"""

from __future__ import annotations

import ast
from typing import Any

from eagerflow.graph.autograph.converters.jumps import JumpConverter, contains_in, flag_is
from eagerflow.graph.autograph.naming import Namer


class ContinueConverter(JumpConverter):
    """Turns ``continue`` into a flag that guards the rest of the loop's body."""

    jump = ast.Continue

    def visit_Continue(self, node: ast.Continue) -> Any:
        return self.jump_to_flag(node)

    def loop(self, node: ast.While | ast.For) -> Any:
        if not contains_in(node.body, ast.Continue):
            node.body = self.with_flag(None, node.body)
        else:
            flag = self.namer.new("continue_")
            node.body = [*flag_is(flag, False, node.body[0]), *self.with_flag(flag, node.body)]
        node.orelse = self.visit_block(node.orelse)
        return node


def transform(node: ast.FunctionDef, namer: Namer) -> ast.FunctionDef:
    """``node`` with every ``continue`` turned into a flag (see the module docs)."""
    converter = ContinueConverter(namer)
    node.body = converter.visit_block(node.body)
    return node


__all__ = ["ContinueConverter", "transform"]
