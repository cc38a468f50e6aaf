"""Names used once: ``hint``, else ``hint_1``, ``hint_2``... — the rule every writer of
names follows (AutoGraph's generated variables, and the nodes, functions and files of the
GraphDef, TensorFlow GraphDef and ONNX exporters)."""

from __future__ import annotations

from collections.abc import Container, Iterable


def first_unused(hint: str, taken: Container[str]) -> str:
    """``hint``, or ``hint_1``, ``hint_2``, ...: the first that is not in ``taken``."""
    name, count = hint, 0
    while name in taken:
        count += 1
        name = f"{hint}_{count}"
    return name


class UniqueNames:
    """Hands out names, each once: call it with a hint, get ``first_unused(hint, used)``,
    which is then used."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.used: set[str] = set(taken)

    def __call__(self, hint: str) -> str:
        name = first_unused(hint, self.used)
        self.used.add(name)
        return name


__all__ = ["UniqueNames", "first_unused"]
