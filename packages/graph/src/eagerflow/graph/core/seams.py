"""Seams: the places where the core calls code that lives above it.

Each stage imports only the stages below it, yet three things the core offers are written
higher up: a ``Graph`` draws itself with ``draw.py`` (which knows subgraphs) and writes itself as
a GraphDef with ``export/graph_def.py``, and a Session with ``jit_compile=True`` runs plans
compiled by ``eagerflow.graph.compiler``. Each of those modules registers its function here
when it is imported (``import eagerflow.graph`` imports them all), and the core calls it through
``SEAMS``, which imports nothing of theirs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from eagerflow.graph.core.graph import Graph
    from eagerflow.graph.core.session import Plan
    from eagerflow.tensor.pictures import Edge, Node

F = TypeVar("F")


@dataclass
class Seams:
    """The registered functions (None until their module is imported)."""

    graph_diagram: Callable[[Graph, bool], tuple[list[Node], list[Edge]]] | None = None  # draw
    as_graph_def: Callable[[Graph], dict[str, Any]] | None = None  # export/graph_def.py
    compile_plan: Callable[[Plan], Any] | None = None  # eagerflow.graph.compiler


SEAMS = Seams()


def registered(function: F | None, what: str) -> F:
    """``function``, which ``what`` (a module) registers; an error if it has not yet."""
    if function is None:
        raise RuntimeError(f"{what} is not loaded: import eagerflow.graph first")
    return function


__all__ = ["SEAMS", "Seams", "registered"]
