"""Every call ``f(x, y=2)`` becomes ``ag__.converted_call(f, (x,), {'y': 2})``.

The converted function cannot know, from its source, what ``f`` will be when it runs: a
function of the user's (to be converted in turn, so that its ``if`` on a tensor works
too), one of the framework's (``ef.matmul``: called as it is), a builtin (``print``: the
same). ``converted_call`` decides at run time (``conversion.py``), as TensorFlow's does.

Calls that must see their caller's frame are left alone: ``locals()``, ``globals()``,
``vars()``, ``eval`` and ``exec`` read it. So does ``super()``, which finds its class and
instance there: in a method it is spelled out as ``super(__class__, self)``, since the
converted code may run it from a block function, whose frame has neither.
"""

from __future__ import annotations

import ast
from typing import Any

from eagerflow.graph.autograph.converters import FunctionBodyTransformer
from eagerflow.graph.autograph.templates import locate, replace_as_expression

_FRAME_READERS = frozenset({"super", "locals", "globals", "vars", "eval", "exec", "dir"})


class CallTreeTransformer(FunctionBodyTransformer):
    """Routes every call through ``ag__.converted_call``, so called functions are converted too."""

    def __init__(self, instance: str | None) -> None:
        self.instance = instance  # the method's first parameter (`self`), if any

    def visit_Call(self, node: ast.Call) -> Any:
        self.generic_visit(node)
        if _is_zero_argument_super(node) and self.instance:
            node.args = [ast.Name(id="__class__", ctx=ast.Load()),
                         ast.Name(id=self.instance, ctx=ast.Load())]  # fmt: skip
            locate(node.args, node)
            return node
        if _is_autograph(node.func) or (
            isinstance(node.func, ast.Name) and node.func.id in _FRAME_READERS
        ):
            return node
        arguments = ast.Tuple(elts=node.args, ctx=ast.Load())
        keywords: ast.expr = ast.Constant(value=None)
        if node.keywords:
            keys: list[ast.expr | None] = [
                None if k.arg is None else ast.Constant(value=k.arg) for k in node.keywords
            ]  # None: `**kwargs`
            keywords = ast.Dict(keys=keys, values=[k.value for k in node.keywords])
        call = replace_as_expression(
            "ag__.converted_call(function, arguments, keywords)",
            function=node.func, arguments=arguments, keywords=keywords,
        )  # fmt: skip
        locate([call], node)
        return call

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        outer, self.instance = self.instance, None  # a nested function is no method
        try:
            return self.generic_visit(node)
        finally:
            self.instance = outer


def _is_zero_argument_super(node: ast.Call) -> bool:
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == "super"
        and not node.args
        and not node.keywords
    )


def _is_autograph(function: ast.expr) -> bool:
    """``ag__.something``: a call the converters generated."""
    return (
        isinstance(function, ast.Attribute)
        and isinstance(function.value, ast.Name)
        and function.value.id == "ag__"
    )


def transform(node: ast.FunctionDef) -> ast.FunctionDef:
    """``node`` with every call going through ``ag__.converted_call``."""
    arguments = [*node.args.posonlyargs, *node.args.args]
    transformer = CallTreeTransformer(arguments[0].arg if arguments else None)
    node.body = [transformer.visit(statement) for statement in node.body]
    return node


__all__ = ["CallTreeTransformer", "transform"]
