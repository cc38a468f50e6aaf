"""The op registry: every op is defined exactly once, here, as one ``OpDef`` row.

A row holds what every interpretation of the op needs, and nothing about *how* the op is
run:

- ``kernel``: the NumPy function that computes it (``kernel(*arrays, **attrs)``);
- ``shape_rule``: input shapes to output shapes, without computing anything. A dimension
  may be ``None`` (unknown); bad shapes raise ``ShapeError``/``AxisError`` here;
- ``dtype_rule``: input dtypes to output dtypes; bad dtypes raise ``DTypeError`` here.

The eager context calls the kernel; the graph package calls the two rules to build a
symbolic tensor and later the kernel inside a Session; the autodiff package looks gradient
rules up by the same ``name``.

An op is registered by the ``op`` decorator on its public function, which names the kernel
and the rules: ``@op("MatMul", matmul_kernel, shape=matmul_shape, dtype=...)`` above
``def matmul``. The function's docstring is the row's ``doc``: what an op does is written
once, where ``help(ef.matmul)`` finds it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import UnknownOpError

Shape = tuple[int | None, ...]
Attrs = Mapping[str, Any]
Kernel = Callable[..., Any]
ShapeRule = Callable[[Sequence[Shape], Attrs], Sequence[Shape]]
DTypeRule = Callable[[Sequence[DType], Attrs], Sequence[DType]]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class OpDef:
    """One op: its TensorFlow name, NumPy kernel and static shape and dtype rules."""

    name: str
    kernel: Kernel
    shape_rule: ShapeRule
    dtype_rule: DTypeRule
    doc: str
    multi_output: bool = False  # the kernel returns a tuple of arrays, not one array
    stateful: bool = False  # random or state-reading: never constant-folded or merged
    # dtype rules are pure: eager execution remembers an attribute-free op's answer for each
    # tuple of input dtypes it has seen, rather than calling the rule for every `a + b`
    # (a lookup costs ~60 ns, the rule ~150)
    known_dtypes: dict[tuple[DType, ...], Sequence[DType]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __repr__(self) -> str:
        return f"<OpDef {self.name}>"


OPS: dict[str, OpDef] = {}


def register_op(
    name: str,
    kernel: Kernel,
    *,
    shape: ShapeRule,
    dtype: DTypeRule,
    doc: str | None = None,
    multi_output: bool = False,
    stateful: bool = False,
) -> OpDef:
    """Add op ``name`` to the registry. ``doc`` defaults to the kernel's docstring."""
    if name in OPS:
        raise ValueError(f"op {name!r} is already registered")
    text = inspect.cleandoc(kernel.__doc__ or "") if doc is None else doc
    OPS[name] = OpDef(name, kernel, shape, dtype, text, multi_output, stateful)
    return OPS[name]


def op(
    name: str,
    kernel: Kernel | None = None,
    *,
    shape: ShapeRule,
    dtype: DTypeRule,
    multi_output: bool = False,
    stateful: bool = False,
) -> Callable[[F], F]:
    """Decorator form of ``register_op``, on the op's public function: ``kernel`` computes
    the op, and the function's docstring becomes the op's ``doc`` (so the kernel has none of
    its own). The function is returned unchanged.

    An op that no public function stands for (a graph's ``NoOp``, a variable's
    ``AssignVariableOp``) decorates its kernel instead, leaving ``kernel`` out.
    """

    def register(function: F) -> F:
        register_op(
            name,
            function if kernel is None else kernel,
            shape=shape,
            dtype=dtype,
            doc=inspect.cleandoc(function.__doc__ or ""),
            multi_output=multi_output,
            stateful=stateful,
        )
        return function

    return register


def get_op(name: str) -> OpDef:
    """The definition of op ``name``; ``UnknownOpError`` if there is none."""
    try:
        return OPS[name]
    except KeyError:
        raise UnknownOpError(f"no op named {name!r} is registered") from None


__all__ = [
    "OPS",
    "Attrs",
    "DTypeRule",
    "Kernel",
    "OpDef",
    "Shape",
    "ShapeRule",
    "get_op",
    "op",
    "register_op",
]
