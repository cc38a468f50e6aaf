"""Annotations: facts about an AST node that one pass finds and a later pass reads.

An analysis pass (``analysis.py``) notes, on each ``if``, ``while`` and ``for``, which
variables it changes and which are used after it; a converter notes the extra test a loop
must check (``not break_``). They travel with the node object itself, as TensorFlow's
AutoGraph keeps them (its ``anno`` module), in one dictionary attribute per node.
"""

from __future__ import annotations

import ast
from typing import Any

_KEY = "_autograph_annotations"


def setanno(node: ast.AST, key: str, value: Any) -> None:
    """Note ``value`` under ``key`` on ``node``."""
    notes = node.__dict__.setdefault(_KEY, {})
    notes[key] = value


def getanno(node: ast.AST, key: str, default: Any = None) -> Any:
    """The value noted under ``key`` on ``node`` (``default`` if none)."""
    return node.__dict__.get(_KEY, {}).get(key, default)


def hasanno(node: ast.AST, key: str) -> bool:
    """Whether ``node`` carries an annotation under ``key``."""
    return key in node.__dict__.get(_KEY, {})


__all__ = ["getanno", "hasanno", "setanno"]
