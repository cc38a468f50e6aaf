"""TensorFlow 1's shared variables: ``get_variable`` and ``variable_scope``.

Before Keras layers owned their weights, a TF 1 model asked for its variables by name:
``get_variable("w", shape)`` inside ``variable_scope("layer1")`` makes ``layer1/w`` the first
time and, once the scope says ``reuse=True``, returns that same variable, so two towers of a
model can share weights. The rules, as TensorFlow's:

- a graph keeps one store of these variables, by full name (``layer1/w``); asking again for a
  name it has raises ``ValueError`` unless the scope reuses, and a reusing scope raises for a
  name it has not (``AUTO_REUSE``: make it the first time, share it after);
- a reused variable must have the shape (``None`` sizes fit any) and dtype asked for;
- the initializer is the call's, else the scope's, else ``glorot_uniform`` for floats and
  zeros for integers and bools; a tensor or value as initializer gives the shape itself;
- ``variable_scope`` also opens a ``name_scope`` for the ops made inside, but a ``name_scope``
  does not prefix ``get_variable``'s names;
- eagerly there is no store (as in TensorFlow 2): each call makes a new variable.
"""

from __future__ import annotations

import enum
import re
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, get_default_graph, name_scope
from eagerflow.nn import initializers
from eagerflow.tensor import DType, Tensor
from eagerflow.tensor.execution import executing_eagerly


class _ReuseMode(enum.Enum):
    AUTO_REUSE = 1


AUTO_REUSE = _ReuseMode.AUTO_REUSE
"""``reuse=AUTO_REUSE``: make a variable the first time it is asked for, share it after."""

Reuse = bool | _ReuseMode | None
_VALID_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>-]*")


@dataclass
class VariableScope:
    """What ``get_variable`` reads: the name prefix, whether to reuse, the defaults."""

    name: str = ""
    reuse: bool | _ReuseMode = False
    initializer: Any = None
    dtype: DType | None = None

    def reuse_variables(self) -> None:
        """From now on, this scope shares the variables it has (``reuse=True``)."""
        self.reuse = True


class _Current(threading.local):
    def __init__(self) -> None:
        self.scope = VariableScope()  # the root: no prefix, no reuse


_current = _Current()  # this thread's scope (a graph being built is one thread's, too)
_stores: weakref.WeakKeyDictionary[Graph, dict[str, Variable]] = weakref.WeakKeyDictionary()


def get_variable_scope() -> VariableScope:
    """The current variable scope."""
    return _current.scope


def _check_name(name: Any, what: str) -> str:
    if not isinstance(name, str) or not _VALID_NAME.fullmatch(name):
        raise ValueError(f"{what}: {name!r} is not a valid name (letters, digits, '_./-')")
    return name


@contextmanager
def variable_scope(
    name_or_scope: str | VariableScope | None,
    default_name: str | None = None,
    reuse: Reuse = None,
    initializer: Any = None,
    dtype: DType | str | None = None,
) -> Iterator[VariableScope]:
    """Prefix ``get_variable``'s names with ``name/`` and open ``name_scope(name)`` for the
    ops made inside. ``reuse`` (True, ``AUTO_REUSE``; None: as the outer scope) is inherited
    by inner scopes, and a reusing outer scope cannot be turned back to False. A
    ``VariableScope`` re-enters that scope; ``None`` takes ``default_name``, made unique."""
    outer = _current.scope
    if isinstance(name_or_scope, VariableScope):
        base, full = name_or_scope.name.rpartition("/")[2], name_or_scope.name
        inherited = name_or_scope
    elif name_or_scope is None:
        if default_name is None:
            raise TypeError("variable_scope: give a name, a VariableScope or a default_name")
        base, full, inherited = _check_name(default_name, "variable_scope"), "", outer
    else:
        base, full, inherited = _check_name(name_or_scope, "variable_scope"), "", outer
    with name_scope(base) as opened:
        if not full:  # a default_name is made unique as its name scope is ("lyr", "lyr_1")
            unique = base if name_or_scope is not None else opened.rstrip("/").rpartition("/")[2]
            full = f"{outer.name}/{unique}" if outer.name else unique
        scope = replace(
            inherited,
            name=full,
            reuse=_reuse(outer.reuse, inherited.reuse if reuse is None else reuse),
            initializer=initializer if initializer is not None else inherited.initializer,
            dtype=ef.as_dtype(dtype) if dtype is not None else inherited.dtype,
        )
        _current.scope = scope
        try:
            yield scope
        finally:
            _current.scope = outer


def _reuse(outer: bool | _ReuseMode, asked: bool | _ReuseMode) -> bool | _ReuseMode:
    if not isinstance(asked, bool | _ReuseMode):
        raise TypeError(f"variable_scope: reuse is True, False, None or AUTO_REUSE, not {asked!r}")
    return outer if outer is AUTO_REUSE or outer is True else asked  # reuse is inherited


def get_variable(
    name: str,
    shape: Sequence[int | None] | None = None,
    dtype: DType | str | None = None,
    initializer: Any = None,
    trainable: bool = True,
) -> Variable:
    """The variable ``scope/name``: made (with ``initializer``, the scope's, or the default
    one) or, when the scope reuses, the one already made. Raises ``ValueError`` as TensorFlow
    does: made twice without reuse, reused before it was made, or reused with another shape
    or dtype."""
    scope = _current.scope
    name = _check_name(name, "get_variable")
    full = f"{scope.name}/{name}" if scope.name else name
    wanted = ef.as_dtype(dtype) if dtype is not None else scope.dtype
    shape = _as_shape(full, shape)
    if executing_eagerly():  # TensorFlow 2 keeps no store eagerly: every call makes one
        return _make(full, shape, wanted, initializer, scope, trainable)
    store = _stores.setdefault(get_default_graph(), {})
    found = store.get(full)
    if found is not None:
        if scope.reuse is False:
            raise ValueError(f"Variable {full} already exists, disallowed. Did you mean to set "
                             "reuse=True or reuse=AUTO_REUSE in VarScope?")  # fmt: skip
        return _check_shared(found, shape, wanted)
    if scope.reuse is True:
        raise ValueError(
            f"Variable {full} does not exist, or was not created with get_variable(). Did you "
            "mean to set reuse=AUTO_REUSE in VarScope?"
        )
    store[full] = _make(full, shape, wanted, initializer, scope, trainable)
    return store[full]


def _as_shape(full: str, shape: Any) -> tuple[int | None, ...] | None:
    if shape is None:
        return None
    if isinstance(shape, int) or not all(d is None or isinstance(d, int) for d in shape):
        raise TypeError(f"get_variable {full}: shape is a list of ints, got {shape!r}")
    if any(d is not None and d < 0 for d in shape):
        raise ValueError(f"get_variable {full}: negative size in shape {list(shape)}")
    return tuple(shape)


def _check_shared(found: Variable, shape: Any, dtype: DType | None) -> Variable:
    fits = shape is None or (
        len(shape) == len(found.shape)
        and all(d is None or d == f for d, f in zip(shape, found.shape, strict=True))
    )
    name = found.name.rpartition(":")[0]
    if not fits:
        raise ValueError(f"Trying to share variable {name}, but specified shape {shape} and "
                         f"found shape {found.shape}.")  # fmt: skip
    if dtype is not None and dtype != found.dtype:
        raise ValueError(f"Trying to share variable {name}, but specified dtype {dtype.name} "
                         f"and found dtype {found.dtype.name}.")  # fmt: skip
    return found


def _make(
    full: str,
    shape: tuple[int | None, ...] | None,
    dtype: DType | None,
    initializer: Any,
    scope: VariableScope,
    trainable: bool,
) -> Variable:
    chosen = initializer if initializer is not None else scope.initializer
    if chosen is not None and not callable(chosen):  # a value: it is the shape, too
        if shape is not None:
            raise ValueError(f"get_variable {full}: if initializer is a constant, do not "
                             "specify shape")  # fmt: skip
        value = ef.convert_to_tensor(chosen, dtype)
        return _variable(full, lambda: value, trainable, dtype)
    if shape is None or None in shape:
        raise ValueError(f"Variable {full} did not get an initializer, so its `shape` "
                         "argument must be specified (every size known).")  # fmt: skip
    dtype = dtype or ef.float32
    known = tuple(int(d) for d in shape if d is not None)
    init: Callable[..., Tensor] = chosen or _default_initializer(full, dtype)
    return _variable(full, lambda: init(known, dtype), trainable, dtype)


def _default_initializer(full: str, dtype: DType) -> Callable[..., Tensor]:
    if dtype.is_floating:
        return initializers.glorot_uniform
    if dtype.is_integer or dtype.is_bool:
        return initializers.zeros
    raise ValueError(f"An initializer for variable {full} of {dtype.name} is required")


def _variable(full: str, value: Callable[[], Any], trainable: bool, dtype: Any) -> Variable:
    if executing_eagerly():
        return Variable(value, trainable=trainable, name=full, dtype=dtype)
    with name_scope(f"{full}/Initializer/"):  # TensorFlow's names for the first value's ops
        first = value()
    with name_scope(""):  # the name is the variable scope's alone, not the name scope's
        return Variable(first, trainable=trainable, name=full, dtype=dtype)


__all__ = ["AUTO_REUSE", "VariableScope", "get_variable", "get_variable_scope", "variable_scope"]
