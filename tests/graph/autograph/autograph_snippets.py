"""Helpers of the converter tests: a function's source in, one converter applied, code out."""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Callable

from eagerflow.graph.autograph.naming import Namer


def parse(source: str) -> ast.FunctionDef:
    """The one function definition in ``source``."""
    (definition,) = ast.parse(textwrap.dedent(source)).body
    assert isinstance(definition, ast.FunctionDef)
    return definition


def convert_with(
    transform: Callable[..., ast.FunctionDef], source: str, with_namer: bool = True
) -> ast.FunctionDef:
    """``source``'s function after one converter's ``transform``."""
    definition = parse(source)
    if with_namer:
        return transform(definition, Namer(definition))
    return transform(definition)


def code(node: ast.AST) -> str:
    return ast.unparse(node)


def same_code(node: ast.AST, expected: str) -> bool:
    """Whether ``node`` is the code ``expected`` (compared as ASTs, so layout is free)."""
    return ast.dump(ast.parse(code(node))) == ast.dump(ast.parse(textwrap.dedent(expected)))
