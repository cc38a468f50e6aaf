"""An op's attribute schema: which attributes it takes, of what types, within what limits.

Each op's row (``OpDef.attrs``) maps every attribute name to one of the small classes
below, written where the op is defined::

    @op("MatMul", ..., attrs={"transpose_a": Bool(), "transpose_b": Bool()})

A schema's ``check(value)`` returns the value (an int for a NumPy int) or raises
``InvalidAttrError`` saying what was expected and what was got; ``check_attrs`` checks a
whole dict of attributes against an op's row and adds the op's and the attribute's names.

Public functions build their attributes themselves, so ``execute`` never checks them (the
eager hot path stays lean). Checks run where untrusted data comes in: the GraphDef importer
checks every node before building anything, and the tests check what each public function
passes to ``execute``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import ANY, DType
from eagerflow.tensor.errors import InvalidAttrError


class AttrSchema:
    """What one attribute may be. ``expected`` says it in words, for error messages."""

    expected = "a value"

    def check(self, value: Any) -> Any:
        """``value`` (normalized, e.g. a NumPy int to an int) or ``InvalidAttrError``."""
        if not self.accepts(value):
            raise self.refuse(value)
        return value

    def accepts(self, value: Any) -> bool:
        """Whether ``value`` is a valid attribute value (subclasses say)."""
        return True

    def check_in(self, value: Any, attrs: Mapping[str, Any]) -> Any:
        """``check``, for a schema that also needs the op's other attributes (``Fill``'s
        value must fit its dtype): by default, just ``check``."""
        return self.check(value)

    def refuse(self, value: Any, why: str = "") -> InvalidAttrError:
        """The error for ``value``: what was expected, what was got (and ``why``)."""
        got = f"{type(value).__name__} {value!r:.60}"
        return InvalidAttrError(f"expected {self.expected}, got {got}{why}")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.expected}>"


def _is_int(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)


class Bool(AttrSchema):
    """``True`` or ``False`` (not 1, not ``"yes"``)."""

    expected = "a bool"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool)


class Int(AttrSchema):
    """An integer, at least ``min`` if given (a bool is not an integer here)."""

    def __init__(self, min: int | None = None) -> None:
        self.min = min
        self.expected = "an int" if min is None else f"an int >= {min}"

    def check(self, value: Any) -> Any:
        if not _is_int(value) or (self.min is not None and value < self.min):
            raise self.refuse(value)
        return int(value)


class Float(AttrSchema):
    """A real number (an int will do), at least ``min`` if given, finite unless
    ``finite=False``."""

    def __init__(self, min: float | None = None, finite: bool = True) -> None:
        self.min = min
        self.finite = finite
        self.expected = "a finite number" if finite else "a number"
        if min is not None:
            self.expected += f" >= {min}"

    def accepts(self, value: Any) -> bool:
        if not (_is_int(value) or isinstance(value, float | np.floating)):
            return False
        return (not self.finite or math.isfinite(value)) and (self.min is None or value >= self.min)


class OneOf(AttrSchema):
    """One of a few strings: ``OneOf("SAME", "VALID")``."""

    def __init__(self, *choices: str) -> None:
        self.choices = choices
        self.expected = "one of " + ", ".join(repr(c) for c in choices)

    def accepts(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.choices


class Ints(AttrSchema):
    """A tuple of ints (a shape, a permutation, axes), each at least ``min`` if given, of
    ``length`` if given; ``unknown=True`` lets a dimension be ``None`` (a static shape)."""

    def __init__(self, min: int | None = None, length: int | None = None,
                 unknown: bool = False) -> None:  # fmt: skip
        self.element = Int(min)
        self.length = length
        self.unknown = unknown
        size = "" if length is None else f"{length} "
        self.expected = f"a tuple of {size}{'ints or None' if unknown else 'ints'}"
        if min is not None:
            self.expected += f" >= {min}"

    def check(self, value: Any) -> Any:
        if not isinstance(value, tuple) or self.length not in (None, len(value)):
            raise self.refuse(value)
        try:
            return tuple(
                None if d is None and self.unknown else self.element.check(d) for d in value
            )
        except InvalidAttrError:
            raise self.refuse(value) from None


class Maybe(AttrSchema):
    """``None`` or what ``schema`` accepts (an optional axis: ``Maybe(Int())``)."""

    def __init__(self, schema: AttrSchema) -> None:
        self.schema = schema
        self.expected = f"None or {schema.expected}"

    def check(self, value: Any) -> Any:
        return None if value is None else self.schema.check(value)


class Omissible(AttrSchema):
    """What ``schema`` accepts, for an attribute that may also be left out altogether
    (``Range``'s bounds: attributes when known statically, inputs otherwise)."""

    def __init__(self, schema: AttrSchema) -> None:
        self.schema = schema
        self.expected = schema.expected

    def check(self, value: Any) -> Any:
        return self.schema.check(value)

    def check_in(self, value: Any, attrs: Mapping[str, Any]) -> Any:
        return self.schema.check_in(value, attrs)


class Either(AttrSchema):
    """What any of ``schemas`` accepts (an axis that is an int or a tuple of ints)."""

    def __init__(self, *schemas: AttrSchema) -> None:
        self.schemas = schemas
        self.expected = " or ".join(s.expected for s in schemas)

    def check(self, value: Any) -> Any:
        for schema in self.schemas:
            try:
                return schema.check(value)
            except InvalidAttrError:
                pass
        raise self.refuse(value)


class DTypeAttr(AttrSchema):
    """One of our ``DType`` objects, among ``allowed`` (every dtype by default)."""

    def __init__(self, allowed: Iterable[DType] = ANY) -> None:
        self.allowed = frozenset(allowed)
        names = ", ".join(d.name for d in dtypes.ALL if d in self.allowed)
        self.expected = "a dtype" if self.allowed == ANY else f"a dtype among {names}"

    def accepts(self, value: Any) -> bool:
        return isinstance(value, DType) and value in self.allowed


class Array(AttrSchema):
    """A NumPy array of one of our dtypes (``Const``'s value)."""

    expected = "a NumPy array of dtype " + ", ".join(d.name for d in dtypes.ALL)

    def accepts(self, value: Any) -> bool:
        return isinstance(value, np.ndarray) and dtypes.from_numpy(value.dtype) is not None


class Scalar(AttrSchema):
    """A Python bool, int or float that fits the dtype in attribute ``dtype_attr`` (``Fill``'s
    value: 1.5 does not fit int32, nor 2**40)."""

    expected = "a bool, int or float"

    def __init__(self, dtype_attr: str = "dtype") -> None:
        self.dtype_attr = dtype_attr

    def accepts(self, value: Any) -> bool:
        return isinstance(value, bool | int | float | np.generic) and np.ndim(value) == 0

    def check_in(self, value: Any, attrs: Mapping[str, Any]) -> Any:
        value = self.check(value)
        dtype = attrs.get(self.dtype_attr)
        if isinstance(dtype, DType) and not _fits(value, dtype):
            raise self.refuse(value, f", which does not fit {dtype.name}")
        return value


def _fits(value: Any, dtype: DType) -> bool:
    """Whether ``value`` converts to ``dtype`` without changing (nan and inf fit a float)."""
    if dtype.is_floating:
        return True
    if dtype.is_bool:
        return isinstance(value, bool | np.bool_) or value in (0, 1)
    if isinstance(value, float | np.floating) and not float(value).is_integer():
        return False
    return bool(dtype.min <= value <= dtype.max)


class IndexKey(AttrSchema):
    """A basic index, as ``t[key]`` takes it: a tuple of ints, slices of ints (a step is not
    0), ``None`` and at most one ``...``."""

    expected = "a tuple of ints, slices of ints, None and at most one ..."

    def accepts(self, value: Any) -> bool:
        return (
            isinstance(value, tuple)
            and all(_is_index(k) for k in value)
            and sum(k is Ellipsis for k in value) <= 1
        )


def _is_index(k: Any) -> bool:
    if isinstance(k, slice):
        parts = (k.start, k.stop, k.step)
        return all(v is None or _is_int(v) for v in parts) and k.step != 0
    return k is None or k is Ellipsis or _is_int(k)


class Instance(AttrSchema):
    """An object of class ``cls`` (a ``Subgraph``, a ``Variable``), named ``what``; the class
    is given by the layer that defines the op, so this module needs none of them."""

    def __init__(self, cls: type | tuple[type, ...], what: str) -> None:
        self.cls = cls
        self.expected = what

    def accepts(self, value: Any) -> bool:
        return isinstance(value, self.cls)


class Function(AttrSchema):
    """A Python function (``custom_gradient``'s ``grad_fn``; read from a file, a stand-in)."""

    expected = "a function"

    def accepts(self, value: Any) -> bool:
        return callable(value)


AttrsSchema = Mapping[str, AttrSchema]


def check_attrs(op_name: str, schema: AttrsSchema, attrs: Mapping[str, Any]) -> dict[str, Any]:
    """``attrs`` checked against ``schema`` (op ``op_name``'s): the same names, each value
    accepted by its schema. Returns the checked values; raises ``InvalidAttrError`` naming
    the op and the attribute."""
    missing = sorted(k for k in set(schema) - set(attrs) if not isinstance(schema[k], Omissible))
    unknown = sorted(set(attrs) - set(schema))
    if missing or unknown:
        raise InvalidAttrError(
            f"{op_name}: "
            + "; ".join(
                [f"attribute {k!r} is missing" for k in missing]
                + [f"has no attribute {k!r}" for k in unknown]
            )
            + f" (its attributes: {', '.join(schema) or 'none'})",
            attr=(missing or unknown)[0],
        )
    checked = {}
    for key, value in attrs.items():
        try:
            checked[key] = schema[key].check_in(value, attrs)
        except InvalidAttrError as e:
            raise InvalidAttrError(f"{op_name} attribute {key!r}: {e}", attr=key) from None
    return checked


__all__ = [
    "Array",
    "AttrSchema",
    "AttrsSchema",
    "Bool",
    "DTypeAttr",
    "Either",
    "Float",
    "Function",
    "IndexKey",
    "Instance",
    "Int",
    "Ints",
    "Maybe",
    "Omissible",
    "OneOf",
    "Scalar",
    "check_attrs",
]
