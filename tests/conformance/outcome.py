"""What a case gave, as data both sides can be compared on: a value's dtype, shape and
elements, a list of them, None, or the fact that it raised (and what)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

Outcome = dict[str, Any]


def _number(x: Any) -> Any:
    """An element as JSON keeps it: floats' nan and infinities as strings."""
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
    return x


def _elements(array: np.ndarray) -> Any:
    if array.ndim == 0:
        return _number(array.item())
    return [_elements(row) for row in array]


def describe(value: Any) -> Outcome:
    """A result as data: ``{"dtype", "shape", "value"}`` for a tensor (or anything with a
    ``numpy()``), ``{"list": [...]}`` for a tuple or list, ``{"none": True}``, or a Python
    number or bool as itself."""
    if value is None:
        return {"none": True}
    if isinstance(value, list | tuple):
        return {"list": [describe(v) for v in value]}
    if isinstance(value, bool | int | float):
        return {"python": _number(value)}
    if hasattr(value, "numpy") and hasattr(value, "dtype"):
        array = np.asarray(value.numpy())
        dtype = getattr(value.dtype, "name", str(value.dtype))
        return {"dtype": dtype, "shape": list(array.shape), "value": _elements(array)}
    raise TypeError(f"a case returned {type(value).__name__}: return tensors, lists or None")


def outcome(case: Any, ns: Any) -> Outcome:
    """Run ``case(ns)``: what it returned, or ``{"raises": class name}``."""
    try:
        value = case(ns)
    except Exception as error:  # which inputs raise is part of what is compared
        return {"raises": type(error).__name__}
    return describe(value)


def _close(a: Any, b: Any, dtype: str) -> bool:
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(_close(x, y, dtype) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, str) or isinstance(b, str) or isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if dtype.startswith("float"):
        rtol = {"float16": 1e-3, "float32": 1e-5, "float64": 1e-12}[dtype]
        return math.isclose(a, b, rel_tol=rtol, abs_tol=rtol)
    return a == b


def differences(ours: Outcome, theirs: Outcome, where: str = "") -> list[str]:
    """How ``ours`` differs from ``theirs`` (TensorFlow's), one line each; [] if it agrees."""
    if "raises" in theirs or "raises" in ours:
        if ("raises" in theirs) == ("raises" in ours):
            return []  # both refuse (the classes: test_the_error_class_agrees_with_tensorflow)
        if "raises" in theirs:
            return [f"{where}TensorFlow raises {theirs['raises']}; eagerflow gives {ours}"]
        return [f"{where}eagerflow raises {ours['raises']}; TensorFlow gives {theirs}"]
    if set(ours) != set(theirs):
        return [f"{where}eagerflow gives {ours}; TensorFlow gives {theirs}"]
    if "list" in theirs:
        if len(ours["list"]) != len(theirs["list"]):
            return [f"{where}{len(ours['list'])} results; TensorFlow {len(theirs['list'])}"]
        found = []
        for i, (a, b) in enumerate(zip(ours["list"], theirs["list"], strict=True)):
            found += differences(a, b, f"{where}[{i}] ")
        return found
    if "python" in theirs:
        same = _close(ours["python"], theirs["python"], "float64")
        return [] if same else [f"{where}eagerflow {ours['python']}, TensorFlow {theirs['python']}"]
    if "none" in theirs:
        return []
    found = []
    for key in ("dtype", "shape"):
        if ours[key] != theirs[key]:
            found.append(f"{where}{key} {ours[key]}; TensorFlow {theirs[key]}")
    if not found and not _close(ours["value"], theirs["value"], theirs["dtype"]):
        found.append(f"{where}value {ours['value']}; TensorFlow {theirs['value']}")
    return found
