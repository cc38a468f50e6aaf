"""Our own dtype objects, each a thin name for one NumPy dtype.

eagerflow has six dtypes, as TensorFlow's core does. Every tensor carries one of these
objects (not a NumPy dtype) so that ops can check dtypes by identity, cheaply:
``x.dtype is float32``.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class DType:
    """A tensor element type: a name, a NumPy dtype and what kind of number it is."""

    __slots__ = ("is_bool", "is_floating", "is_integer", "kind", "name", "np")

    def __init__(self, name: str, np_dtype: type[np.generic]) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.kind = self.np.kind  # 'f' floating, 'i' signed integer, 'b' boolean
        # plain attributes, not properties: backpropagation asks is_floating of every input
        self.is_floating = self.kind == "f"
        self.is_integer = self.kind == "i"
        self.is_bool = self.kind == "b"

    @property
    def as_numpy_dtype(self) -> type[np.generic]:
        return self.np.type

    @property
    def min(self) -> float | int | bool:
        return False if self.is_bool else _limits(self.np).min

    @property
    def max(self) -> float | int | bool:
        return True if self.is_bool else _limits(self.np).max

    def __repr__(self) -> str:
        return self.name

    def __reduce__(self) -> str:
        return self.name  # pickles as the module-level singleton of the same name


def _limits(d: np.dtype) -> Any:
    return np.finfo(d) if d.kind == "f" else np.iinfo(d)


float16 = DType("float16", np.float16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
bool_ = DType("bool", np.bool_)

ALL: tuple[DType, ...] = (float16, float32, float64, int32, int64, bool_)
FLOATS: frozenset[DType] = frozenset({float16, float32, float64})
INTEGERS: frozenset[DType] = frozenset({int32, int64})
NUMBERS: frozenset[DType] = FLOATS | INTEGERS
ANY: frozenset[DType] = frozenset(ALL)

_BY_NUMPY: dict[np.dtype, DType] = {d.np: d for d in ALL}
_BY_NAME: dict[str, DType] = {d.name: d for d in ALL}


def as_dtype(value: Any) -> DType:
    """Our DType for a DType, a name (``"float32"``), a NumPy dtype or a NumPy scalar type."""
    if isinstance(value, DType):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is bool:
        return bool_
    try:
        found = _BY_NUMPY.get(np.dtype(value))
    except TypeError:
        found = None
    if found is None:
        names = ", ".join(_BY_NAME)
        raise TypeError(f"eagerflow has no dtype for {value!r}; the dtypes are: {names}")
    return found


def from_numpy(np_dtype: np.dtype) -> DType | None:
    """Our DType for a NumPy dtype, or None when eagerflow has no such dtype."""
    return _BY_NUMPY.get(np_dtype)


__all__ = [
    "ALL",
    "ANY",
    "FLOATS",
    "INTEGERS",
    "NUMBERS",
    "DType",
    "as_dtype",
    "bool_",
    "float16",
    "float32",
    "float64",
    "from_numpy",
    "int32",
    "int64",
]
