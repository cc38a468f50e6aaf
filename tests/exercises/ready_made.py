"""Refusing a ready-made answer: the framework's (or NumPy's) own version of an exercise.

Several exercises ask the reader to build by hand something eagerflow already has: a
forward-mode JVP (``ForwardAccumulator`` does it), the compiler's clustering
(``find_clusters``), a Session's plan. Calling the real thing passes every test of values
and teaches nothing, so the tests refuse it::

    with refusing("jvp", "forward mode", (ForwardAccumulator, "__init__")):
        got = chapter.jvp(f, x, v)

Inside the block each refused function fails with a message for the reader: "jvp: this
exercise asks you to build forward mode yourself: calling
eagerflow.autodiff.forward.ForwardAccumulator is not allowed". The name is replaced where it
is defined, in every eagerflow module that imported it, and in the reader's exercise files
(``from numpy import broadcast_shapes`` binds its own name). A call that the code in between
swallows (a broad ``except``) still fails the test when the block ends.

(A module of its own, not conftest.py: test files import it, and several conftest modules
share that name.)
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import pytest


def _label(owner: Any, name: str) -> str:
    """``numpy.broadcast_shapes``; a class's ``__init__`` is the class itself; a function
    held by some other object (a namespace of helpers) is named where it is defined."""
    if isinstance(owner, ModuleType):
        return f"{owner.__name__}.{name}"
    if isinstance(owner, type):
        where = f"{owner.__module__}.{owner.__qualname__}"
        return where if name == "__init__" else f"{where}.{name}"
    function = getattr(owner, name)
    return f"{function.__module__}.{function.__qualname__}"


def refused_message(exercise: str, builds: str, what: str) -> str:
    """What a reader reads when ``exercise`` used ``what`` instead of building ``builds``."""
    return (
        f"{exercise}: this exercise asks you to build {builds} yourself: calling {what} is not "
        "allowed (it is the answer, ready-made)"
    )


def _bindings(original: Any) -> list[tuple[ModuleType, str]]:
    """Every (module, name) of eagerflow and of the exercise files bound to ``original``."""
    found = []
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("eagerflow") or not isinstance(module, ModuleType):
            continue
        for key, value in list(vars(module).items()):
            if value is original:
                found.append((module, key))
    return found


def refuse(
    patch: pytest.MonkeyPatch,
    exercise: str,
    builds: str,
    *ready_made: tuple[Any, str],
    calls: list[str] | None = None,
) -> None:
    """Make each ``(owner, name)`` of ``ready_made`` (a module's function or class, or a
    class's method) fail the test when called, until ``patch`` is undone; note each refused
    call's message in ``calls``."""
    for owner, name in ready_made:
        original = getattr(owner, name)
        message = refused_message(exercise, builds, _label(owner, name))

        def refused(*args: Any, message: str = message, **kwargs: Any) -> Any:
            if calls is not None:
                calls.append(message)
            raise AssertionError(message)

        patch.setattr(owner, name, refused)
        if isinstance(owner, ModuleType):  # a class's method is found through the class
            for module, key in _bindings(original):
                patch.setattr(module, key, refused)


@contextmanager
def refusing(exercise: str, builds: str, *ready_made: tuple[Any, str]) -> Iterator[None]:
    """``refuse`` within the block; and a refused call that the code in between swallowed
    fails the test when the block ends."""
    calls: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        refuse(patch, exercise, builds, *ready_made, calls=calls)
        yield
    if calls:
        raise AssertionError(calls[0])
