"""The op registry: every op is defined exactly once, here, as one ``OpDef`` row.

A row holds what every interpretation of the op needs, and nothing about *how* the op is
run:

- ``kernel``: the NumPy function that computes it (``kernel(*arrays, **attrs)``);
- ``shape_rule``: input shapes to output shapes, without computing anything. A dimension
  may be ``None`` (unknown); bad shapes raise ``ShapeError``/``AxisError`` here;
- ``dtype_rule``: input dtypes to output dtypes; bad dtypes raise ``DTypeError`` here;
- ``attrs``: its attribute schema, each attribute's name and what it may be (``{}``: none),
  in the classes of ``eagerflow.tensor.schema``: ``{"transpose_a": Bool(), ...}``. Public
  functions build valid attributes, so ``execute`` does not check them; the GraphDef importer
  checks every node's with ``check_attrs`` before it builds anything;
- facts that the layers above ask about an op, rather than keeping lists of op names
  (each defaults to what is true of most ops): ``stateful``,
  ``reads_state`` (a variable's value, nothing written), ``fed`` (a placeholder),
  ``defines_variable``, ``constant``, ``needs_only_shapes``, ``expands``,
  ``retains_inputs``, ``transcendental`` (its cost) and ``default_name`` (a graph node's
  name). Code outside an op's definition asks ``operation.op_def.reads_state``, never
  ``operation.type == "ReadVariableOp"``; ``tests/tensor/test_op_rows.py`` checks it.

The eager context calls the kernel; the graph package calls the two rules to build a
symbolic tensor and later the kernel inside a Session.

How an op is *interpreted* in one particular way lives in that layer's one registry,
keyed by the op's ``name`` (as in JAX's Autodidax); ``tests/tensor/test_op_rows.py`` checks
that each names registered ops only, and is complete where every op needs a rule:

- its gradient: ``eagerflow.autodiff.registry.GRADIENTS`` (``None``: declared not
  differentiable); its forward-mode rule: ``eagerflow.autodiff.forward.JVPS`` (optional:
  without one, the gradient rule transposed);
- its compiled loop: ``ELEMENTWISE`` and ``REDUCTIONS`` (its value for one element) and
  ``INTO_BUFFER`` (writing into a planned array) in ``eagerflow.graph.compiler.kernels``
  (an op without one runs its kernel);
- a graph loop over its output, counted without making it:
  ``eagerflow.graph.autograph.operators.COUNTED`` (``Range``);
- its ONNX nodes: ``eagerflow.graph.onnx.RULES``, or the reason it cannot be exported in
  ``eagerflow.graph.onnx.NOT_EXPORTABLE``.

An op is registered by the ``op`` decorator on its public function, which names the kernel
and the rules: ``@op("MatMul", matmul_kernel, shape=matmul_shape, dtype=...,
attrs={"transpose_a": Bool(), "transpose_b": Bool()})`` above ``def matmul``. The
function's docstring is the row's ``doc``: what an op does is written once, where
``help(ef.matmul)`` finds it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar, Unpack

from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import UnknownOpError
from eagerflow.tensor.schema import AttrsSchema

Shape = tuple[int | None, ...]
Attrs = Mapping[str, Any]
Kernel = Callable[..., Any]
ShapeRule = Callable[[Sequence[Shape], Attrs], Sequence[Shape]]
DTypeRule = Callable[[Sequence[DType], Attrs], Sequence[DType]]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class OpDef:
    """One op: its TensorFlow name, NumPy kernel, static shape and dtype rules, attribute
    schema, and facts.

    The *definition* of an op, made once per op and never per use: an ``OpRecord`` (a use
    seen by a gradient rule) and an ``Operation`` (a graph node) each hold one as ``op`` or
    ``op_def``. (The ``@op`` decorator below registers one for an op's public function.)"""

    name: str
    kernel: Kernel
    shape_rule: ShapeRule
    dtype_rule: DTypeRule
    doc: str
    # each attribute's name and schema (``eagerflow.tensor.schema``); {}: it takes none
    attrs: AttrsSchema = field(default_factory=dict)
    multi_output: bool = False  # the kernel returns a tuple of arrays, not one array
    stateful: bool = False  # random or state-reading: never constant-folded or merged
    # reads a variable's current value and writes nothing, so two reads need no order
    # between them (ReadVariableOp, and a graph variable's own node)
    reads_state: bool = False
    # its value is fed when the graph runs; its kernel only raises (a placeholder)
    fed: bool = False
    # the node that stands for a graph variable, one per variable (attrs["variable"])
    defines_variable: bool = False
    # its output is the value in its attributes: a constant already
    constant: bool = False
    # the output depends on the input's shape (and dtype) alone, never on its values
    needs_only_shapes: bool = False
    # the output repeats its input's elements along new or size-1 dimensions, computing
    # nothing: cheaper to redo where it is read than to keep as a (big) folded constant
    expands: bool = False
    # the kernel may keep a reference to an input or return a view of one; False: it reads
    # its inputs and keeps nothing of them, so an input's memory may be reused once it returned
    retains_inputs: bool = True
    # computed by exp, log, tanh and the like: costly one element at a time, without a
    # vectorized math library
    transcendental: bool = False
    # the name of its graph nodes when none is given, if not ``name``: TensorFlow names a
    # Python operator's node after the operator ("add" for ``a + b``), not after the op
    default_name: str | None = None
    # dtype rules are pure: eager execution remembers an attribute-free op's answer for each
    # tuple of input dtypes it has seen, rather than calling the rule for every `a + b`
    # (a lookup costs ~60 ns, the rule ~150)
    known_dtypes: dict[tuple[DType, ...], Sequence[DType]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __repr__(self) -> str:
        return f"<OpDef {self.name}>"


class Facts(TypedDict, total=False):
    """An ``OpDef``'s facts that its ``op`` decorator may set (each has a default)."""

    reads_state: bool
    fed: bool
    defines_variable: bool
    constant: bool
    needs_only_shapes: bool
    expands: bool
    retains_inputs: bool
    transcendental: bool
    default_name: str


OPS: dict[str, OpDef] = {}


def register_op(
    name: str,
    kernel: Kernel,
    *,
    shape: ShapeRule,
    dtype: DTypeRule,
    doc: str | None = None,
    attrs: AttrsSchema | None = None,
    multi_output: bool = False,
    stateful: bool = False,
    **facts: Unpack[Facts],
) -> OpDef:
    """Add op ``name`` to the registry. ``doc`` defaults to the kernel's docstring; ``attrs``
    is its attribute schema (none by default); ``facts`` are the row's other fields
    (``reads_state=True``, ``default_name="add"``)."""
    if name in OPS:
        raise ValueError(f"op {name!r} is already registered")
    text = inspect.cleandoc(kernel.__doc__ or "") if doc is None else doc
    OPS[name] = OpDef(
        name, kernel, shape, dtype, text, dict(attrs or {}), multi_output, stateful, **facts
    )
    return OPS[name]


def op(
    name: str,
    kernel: Kernel | None = None,
    *,
    shape: ShapeRule,
    dtype: DTypeRule,
    attrs: AttrsSchema | None = None,
    multi_output: bool = False,
    stateful: bool = False,
    **facts: Unpack[Facts],
) -> Callable[[F], F]:
    """Decorator form of ``register_op``, on the op's public function: ``kernel`` computes
    the op, and the function's docstring becomes the op's ``doc`` (so the kernel has none of
    its own). The function is returned unchanged.

    ``attrs`` is the op's attribute schema, e.g. ``attrs={"axis": Int()}``; ``facts`` are the
    row's other fields, e.g. ``@op("ReadVariableOp", ..., reads_state=True)``.

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
            attrs=attrs,
            multi_output=multi_output,
            stateful=stateful,
            **facts,
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
    "Facts",
    "Kernel",
    "OpDef",
    "Shape",
    "ShapeRule",
    "get_op",
    "op",
    "register_op",
]
