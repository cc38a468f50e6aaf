"""``return`` inside a block becomes a flag and a return value, returned at the end::

    def f(x):                            def f(x):
        for i in ef.range(5):                do_return = False
            if i * i > x:                    retval_ = ag__.UndefinedReturnValue()
                return i        ->           for i in ef.range(5):    # extra test: not do_return
        return -1                                if i * i > x:
                                                     do_return = True
                                                     retval_ = i
                                             if not do_return:
                                                 do_return = True
                                                 retval_ = -1
                                             return ag__.retval(retval_)

Loops stop once the flag is set (a ``while`` tests it, a ``for`` gets it as extra test).
``UndefinedReturnValue`` stands for "no return ran yet": ``ag__.retval`` turns it into the
``None`` a Python function returns when it falls off its end.

One special case keeps the code simple, as TensorFlow's converter does: after an ``if``
whose body always returns, the statements that follow go into its ``else`` block (they run
exactly when it did not return), and the other way round. Then both branches of the ``if``
return, and an ``if`` on a tensor gets a return value from each. A function whose returns
are all at its top level is left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

from eagerflow.graph.autograph.analysis import EXTRA_TEST
from eagerflow.graph.autograph.anno import getanno, setanno
from eagerflow.graph.autograph.converters.jumps import JumpConverter, contains, flag_is, not_
from eagerflow.graph.autograph.naming import Namer
from eagerflow.graph.autograph.templates import locate, replace, replace_as_expression

_BODY_RETURNS, _ORELSE_RETURNS = "body_returns", "orelse_returns"


class ReturnConverter(JumpConverter):
    """Turns ``return`` inside a loop or branch into a flag and a value returned at the end."""

    jump = ast.Return

    def __init__(self, namer: Namer) -> None:
        super().__init__(namer)
        self.retval: str | None = None

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        if not any(contains(s, ast.Return) for s in node.body if not isinstance(s, ast.Return)):
            return super().visit_FunctionDef(node)  # returns only at the top level
        outer = self.flag, self.retval
        self.flag, self.retval = self.namer.new("do_return"), self.namer.new("retval_")
        try:
            docstring = node.body[:1] if ast.get_docstring(node, clean=False) else []
            start = replace(
                "flag = False\nretval = ag__.UndefinedReturnValue()",
                flag=self.flag, retval=self.retval,
            )  # fmt: skip
            end = replace("return ag__.retval(retval)", retval=self.retval)
            locate(start, node)
            locate(end, node.body[-1])
            body = self.visit_block(node.body[len(docstring) :])
            node.body = [*docstring, *start, *body, *end]
        finally:
            self.flag, self.retval = outer
        return node

    def visit_Return(self, node: ast.Return) -> Any:
        if self.flag is None or self.retval is None:
            return node  # a function whose returns are all at its top level
        value = node.value or ast.Constant(value=None)
        statements = [
            *flag_is(self.flag, True, node),
            *replace("retval = value", retval=self.retval, value=value),
        ]
        locate(statements, node)
        return statements

    def visit_If(self, node: ast.If) -> Any:
        # noted before the returns in there are converted: `attach_rest` needs to know
        setanno(node, _BODY_RETURNS, always_returns(node.body))
        setanno(node, _ORELSE_RETURNS, always_returns(node.orelse))
        return self.generic_visit(node)

    def visit_While(self, node: ast.While) -> Any:
        returns = self.flag is not None and any(contains(s, ast.Return) for s in node.body)
        self.generic_visit(node)
        if returns:
            node.test = replace_as_expression("not flag and test", flag=self.flag, test=node.test)
        return node

    def visit_For(self, node: ast.For) -> Any:
        returns = self.flag is not None and any(contains(s, ast.Return) for s in node.body)
        self.generic_visit(node)
        if returns:
            assert self.flag is not None
            extra = getanno(node, EXTRA_TEST)
            test = not_(self.flag)
            if extra is not None:  # `not break_`, from the break converter
                test = ast.BoolOp(op=ast.And(), values=[test, extra])
            setanno(node, EXTRA_TEST, test)
        return node

    def attach_rest(
        self, converted: list[ast.stmt], original: ast.stmt, rest: list[ast.stmt]
    ) -> list[ast.stmt]:
        """After an ``if`` one of whose branches always returns, the rest joins the other
        branch; otherwise it goes under ``if not do_return:``."""
        if isinstance(original, ast.If):
            if getanno(original, _BODY_RETURNS):
                original.orelse = [*original.orelse, *rest]
                return converted
            if getanno(original, _ORELSE_RETURNS):
                original.body = [*original.body, *rest]
                return converted
        return super().attach_rest(converted, original, rest)


def always_returns(statements: Sequence[ast.stmt]) -> bool:
    """Whether running ``statements`` always ends in a ``return``."""
    return any(
        isinstance(s, ast.Return)
        or (isinstance(s, ast.If) and always_returns(s.body) and always_returns(s.orelse))
        for s in statements
    )


def transform(node: ast.FunctionDef, namer: Namer) -> ast.FunctionDef:
    """``node`` with its returns in blocks turned into a flag and a value (module docs)."""
    converted = ReturnConverter(namer).visit_FunctionDef(node)
    assert isinstance(converted, ast.FunctionDef)
    return converted


__all__ = ["ReturnConverter", "always_returns", "transform"]
