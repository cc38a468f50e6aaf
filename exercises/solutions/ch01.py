"""Chapter 1 exercises — run `.venv/bin/pytest -m ch01`.

Tensors and kernels: a broadcasting shape rule, broadcasting at work, asking the op
registry's rules about an op without running it, and an op of your own.

Reference solutions: the same functions as `exercises/ch01.py`, solved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.tensor import DType, OpDef, ShapeError, Tensor
from eagerflow.tensor.dtypes import FLOATS
from eagerflow.tensor.execution import execute
from eagerflow.tensor.registry import OPS, get_op, register_op
from eagerflow.tensor.rules import same_dtype, same_shape_rule

Shape = tuple[int | None, ...]


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """The shape that broadcasting two shapes gives, or a ``ShapeError``.

    Align the shapes on the right and read a missing dimension as 1. In each position the two
    sizes must be equal, or one of them must be 1 (it stretches to the other). So ``(3, 1)``
    and ``(4,)`` give ``(3, 4)``, while ``(3,)`` and ``(4,)`` do not fit.

    Args:
        a: A shape, such as ``(2, 1, 5)``.
        b: Another shape.

    Returns:
        The broadcast shape, as a tuple of ints.

    Raises:
        ShapeError: ``eagerflow.tensor.ShapeError``, when the shapes cannot be broadcast.

    Hint:
        Walk the positions from the right: ``for i in range(1, rank + 1)`` with
        ``rank = max(len(a), len(b))``, reading ``a[-i]`` as 1 when ``i > len(a)``. Build the
        result backwards and reverse it at the end. Once yours works, compare it with
        ``broadcast`` in ``packages/tensor/src/eagerflow/tensor/rules.py``, which also copes
        with unknown (``None``) dimensions.
    """
    rank = max(len(a), len(b))
    out = []
    for i in range(1, rank + 1):
        da = a[-i] if i <= len(a) else 1
        db = b[-i] if i <= len(b) else 1
        if da != db and 1 not in (da, db):
            raise ShapeError(f"shapes {a} and {b} cannot be broadcast: {da} vs {db}")
        out.append(db if da == 1 else da)
    return tuple(reversed(out))


def squared_distances(a: Tensor, b: Tensor) -> Tensor:
    """Every squared distance between a row of ``a`` and a row of ``b``, by broadcasting.

    For ``a`` of shape (n, k) and ``b`` of shape (m, k), return the (n, m) tensor

        d[i, j] = Σₖ (a[i, k] - b[j, k])²

    with no Python loop: a single subtraction of two broadcast shapes computes all n·m·k
    differences at once. The result keeps the inputs' dtype.

    Args:
        a: A float tensor of shape (n, k).
        b: A float tensor of shape (m, k), of the same dtype.

    Returns:
        A tensor of shape (n, m).

    Hint:
        Give ``a`` the shape (n, 1, k) and ``b`` the shape (1, m, k) with ``ef.expand_dims``
        (``import eagerflow.tensor as ef``). Their difference then has shape (n, m, k);
        ``ef.square`` it and ``ef.reduce_sum`` over the last axis (``axis=-1``).
    """
    diff = ef.expand_dims(a, 1) - ef.expand_dims(b, 0)
    return ef.reduce_sum(ef.square(diff), axis=-1)


def infer_output(
    op_name: str, inputs: Sequence[tuple[DType, Shape]], attrs: Mapping[str, Any]
) -> list[tuple[DType, Shape]]:
    """What op ``op_name`` would output for inputs of these dtypes and shapes, without running it.

    Look the op up in the registry and ask its two static rules. No kernel runs and no tensor
    is made, which is why a shape may contain ``None`` (a dimension not known yet). This is
    what the graph package does to every op you add to a graph (chapter 5). For example,
    ``infer_output("MatMul", [(float32, (None, 3)), (float32, (3, 4))],
    {"transpose_a": False, "transpose_b": False})`` is ``[(float32, (None, 4))]``.

    Args:
        op_name: A registered op name, such as ``"MatMul"`` or ``"Sum"``.
        inputs: One ``(dtype, shape)`` pair per input of the op.
        attrs: The op's attributes (``{}`` for ops without any).

    Returns:
        One ``(dtype, shape)`` pair per output; each shape a tuple.

    Raises:
        ShapeError: (or another ``EagerflowError``) when the rules reject the inputs.

    Hint:
        ``get_op(op_name)`` (from ``eagerflow.tensor.registry``) returns the op's ``OpDef``.
        ``op.shape_rule(shapes, attrs)`` and ``op.dtype_rule(dtypes, attrs)`` take a sequence
        with one entry per input and return one entry per output: ``zip`` them together.
    """
    op = get_op(op_name)
    shapes = [shape for _, shape in inputs]
    dtypes = [dtype for dtype, _ in inputs]
    out_shapes = op.shape_rule(shapes, attrs)
    out_dtypes = op.dtype_rule(dtypes, attrs)
    return [(d, tuple(s)) for d, s in zip(out_dtypes, out_shapes, strict=True)]


# solution-only
def _cube_kernel(x: np.ndarray) -> np.ndarray:
    """x³, elementwise."""
    return x * x * x


# end solution-only
def register_cube() -> OpDef:
    """Add the op ``Cube`` (x³, elementwise, floats only) to the registry; return its row.

    An op is one registry row: a NumPy kernel, a shape rule and a dtype rule. ``Cube``'s
    output has its input's shape; its input must be float16, float32 or float64, and the
    output has the same dtype. Calling this a second time must not fail: return the row that
    is already there.

    Returns:
        The ``OpDef`` registered under the name ``"Cube"``.

    Hint:
        ``register_op(name, kernel, shape=..., dtype=..., doc=...)`` is in
        ``eagerflow.tensor.registry``, next to ``OPS``, the table itself (look there first).
        The kernel is a plain NumPy function of one array. ``eagerflow.tensor.rules`` already
        has the two rules you need: ``same_shape_rule`` and ``same_dtype(FLOATS)``, with
        ``FLOATS`` from ``eagerflow.tensor.dtypes``.
    """
    if "Cube" in OPS:
        return OPS["Cube"]
    return register_op(
        "Cube", _cube_kernel, shape=same_shape_rule, dtype=same_dtype(FLOATS), doc="x³."
    )


def cube(x: Any) -> Tensor:
    """x³, elementwise, computed by your ``Cube`` op through the execution seam.

    The public function of an op: convert the argument to a tensor, then hand the op's name
    and inputs to ``execute``. Errors then name the op, as every built-in op's do:
    ``cube([1, 2])`` (int32) fails with a ``DTypeError`` starting ``Cube(int32[2])``.

    Args:
        x: A float tensor, or anything ``convert_to_tensor`` accepts (``[1.0, 2.0]``).

    Returns:
        A tensor of ``x``'s shape and dtype.

    Hint:
        Copy the shape of ``sqrt`` in ``packages/tensor/src/eagerflow/tensor/math_ops.py``:
        ``ef.convert_to_tensor(x)``, make sure the op exists with ``register_cube()``, then
        ``execute("Cube", (x,))`` (from ``eagerflow.tensor.execution``). ``execute`` returns
        a tuple of outputs; ``Cube`` has one.
    """
    x = ef.convert_to_tensor(x)
    register_cube()
    return execute("Cube", (x,))[0]
