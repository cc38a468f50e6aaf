"""The "Build a mini TensorFlow" track: exercises that take the reader's earlier pieces.

(A module of its own, not conftest.py: test files import it, and several conftest modules
share that name.)
"""

from __future__ import annotations

import inspect
import re
from typing import Any

# a stub's own line: only this means "not attempted" (not a NotImplementedError from elsewhere)
STUB_LINE = re.compile(r"raise NotImplementedError(\(\))?\s*(#.*)?")


def is_stub(piece: Any) -> bool:
    """Whether ``piece`` (a function or class of an exercise file) still has a stub's bare
    ``raise NotImplementedError`` in it: not attempted yet."""
    try:
        lines = inspect.getsource(piece).splitlines()
    except (OSError, TypeError):  # not from a file: nothing to read, so nothing left to do
        return False
    return any(STUB_LINE.fullmatch(line.strip()) for line in lines)
