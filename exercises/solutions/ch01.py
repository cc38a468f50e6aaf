"""Chapter 1 exercises — run `.venv/bin/pytest -m ch01`.

Tensors and kernels: a broadcasting shape rule, broadcasting at work, asking the op
registry's rules about an op without running it, an op of your own, and (a
stretch) a two-input op that broadcasts and never overflows.

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
from eagerflow.tensor.rules import broadcast_rule, same_dtype, same_shape_rule

Shape = tuple[int | None, ...]


def broadcast_shape(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    """★★ The shape that broadcasting two shapes gives, or a ``ShapeError``.

    Align the shapes on the right and read a missing dimension as 1. In each position the two
    sizes must be equal, or one of them must be 1 (it stretches to the other). So ``(3, 1)``
    and ``(4,)`` give ``(3, 4)``, while ``(3,)`` and ``(4,)`` do not fit.

    Write the rule yourself: NumPy's ``np.broadcast_shapes`` and ``np.broadcast``, and
    eagerflow's own ``broadcast`` (``eagerflow.tensor.rules``), are the answer ready-made, and
    the tests refuse them. Making arrays of the two shapes and broadcasting those fails too:
    the tests ask about shapes of more elements than any array can hold.

    Args:
        a: A shape, such as ``(2, 1, 5)``.
        b: Another shape.

    Returns:
        The broadcast shape, as a tuple of ints.

    Raises:
        ShapeError: ``eagerflow.tensor.ShapeError``, when the shapes cannot be broadcast.

    Hint 1:
        Compare the shapes from the right: the last dimensions first. A shape that runs out
        reads as 1 there.

    Hint 2:
        In each position the two sizes are equal (keep it), or one is 1 (keep the other);
        anything else is a ``ShapeError``.

    Hint 3:
        ``for i in range(1, max(len(a), len(b)) + 1)``, with ``x = a[-i] if i <= len(a) else 1``
        (and ``y`` the same from ``b``): append ``max(x, y)`` when they fit, and reverse the
        list at the end. Then read ``broadcast`` in
        ``packages/tensor/src/eagerflow/tensor/rules.py``, which also copes with ``None``.
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
    """★★ Every squared distance between a row of ``a`` and a row of ``b``, by broadcasting.

    For ``a`` of shape (n, k) and ``b`` of shape (m, k), return the (n, m) tensor

        d[i, j] = Σₖ (a[i, k] - b[j, k])²

    with no Python loop: a single subtraction of two broadcast shapes computes all n·m·k
    differences at once. The result keeps the inputs' dtype. Compute it with eagerflow ops:
    the tests check that the tensor you return is what ops made from ``a`` and ``b`` (NumPy's
    answer wrapped in ``ef.constant`` is refused).

    Args:
        a: A float tensor of shape (n, k).
        b: A float tensor of shape (m, k), of the same dtype.

    Returns:
        A tensor of shape (n, m).

    Hint 1:
        One subtraction can make all n·m·k differences, if the two shapes broadcast to (n, m,
        k).

    Hint 2:
        Give ``a`` an axis of size 1 in the middle, (n, 1, k), and ``b`` one in front, (1, m,
        k).

    Hint 3:
        ``ef.expand_dims(a, 1) - ef.expand_dims(b, 0)``, then ``ef.square`` and
        ``ef.reduce_sum(..., axis=-1)``.
    """
    diff = ef.expand_dims(a, 1) - ef.expand_dims(b, 0)
    return ef.reduce_sum(ef.square(diff), axis=-1)


def infer_output(
    op_name: str, inputs: Sequence[tuple[DType, Shape]], attrs: Mapping[str, Any]
) -> list[tuple[DType, Shape]]:
    """★ What op ``op_name`` would output for inputs of these dtypes and shapes, without running it.

    Look the op up in the registry and ask its two static rules. No kernel runs and no tensor
    is made, which is why a shape may contain ``None`` (a dimension not known yet). This is
    what the graph package does to every op you add to a graph (chapter 6). For example,
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

    Hint 1:
        The registry knows an op's rules without running it: look at what an ``OpDef`` holds.

    Hint 2:
        ``get_op(op_name)`` gives the ``OpDef``. Its ``shape_rule`` and ``dtype_rule`` each take
        one entry per input (and ``attrs``) and return one entry per output.

    Hint 3:
        ``op.dtype_rule([d for d, _ in inputs], attrs)`` and
        ``op.shape_rule([s for _, s in inputs], attrs)``, then ``zip`` the two answers into
        pairs (shapes as tuples).
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
    """★ Add the op ``Cube`` (x³, elementwise, floats only) to the registry; return its row.

    An op is one registry row: a NumPy kernel, a shape rule and a dtype rule. ``Cube``'s
    output has its input's shape; its input must be float16, float32 or float64, and the
    output has the same dtype. Calling this a second time must not fail: return the row that
    is already there.

    Returns:
        The ``OpDef`` registered under the name ``"Cube"``.

    Hint 1:
        An op is one row of the table ``OPS`` in ``eagerflow.tensor.registry``; that module also
        has the function that adds a row.

    Hint 2:
        ``register_op(name, kernel, shape=..., dtype=...)``. The kernel is a NumPy function of
        one array; ``eagerflow.tensor.rules`` already has both rules you need.

    Hint 3:
        Return ``OPS["Cube"]`` if it is there; else
        ``register_op("Cube", kernel, shape=same_shape_rule, dtype=same_dtype(FLOATS))`` with
        ``FLOATS`` from ``eagerflow.tensor.dtypes``.
    """
    if "Cube" in OPS:
        return OPS["Cube"]
    return register_op(
        "Cube", _cube_kernel, shape=same_shape_rule, dtype=same_dtype(FLOATS), doc="x³."
    )


def cube(x: Any) -> Tensor:
    """★ x³, elementwise, computed by your ``Cube`` op through the execution seam.

    The public function of an op: convert the argument to a tensor, then hand the op's name
    and inputs to ``execute``. Errors then name the op, as every built-in op's do:
    ``cube([1, 2])`` (int32) fails with a ``DTypeError`` starting ``Cube(int32[2])``.

    Args:
        x: A float tensor, or anything ``convert_to_tensor`` accepts (``[1.0, 2.0]``).

    Returns:
        A tensor of ``x``'s shape and dtype.

    Hint 1:
        Every public op is the same few lines: read ``sqrt`` in
        ``packages/tensor/src/eagerflow/tensor/math_ops.py``.

    Hint 2:
        Convert the argument to a tensor, make sure ``Cube`` is registered, and give the op's
        name and inputs to ``execute``.

    Hint 3:
        ``register_cube()``, then ``execute("Cube", (ef.convert_to_tensor(x),))[0]``:
        ``execute`` returns a tuple of outputs.
    """
    x = ef.convert_to_tensor(x)
    register_cube()
    return execute("Cube", (x,))[0]


def _hypot_kernel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """√(a² + b²), elementwise, scaled so that it neither overflows nor underflows."""
    return np.hypot(a, b)


def hypot(a: Any, b: Any) -> Tensor:
    """★★★ Stretch: the op ``Hypot``, √(a² + b²) with broadcasting, that never overflows.

    ``Cube`` had one input; ``Hypot`` has two, and every part of its registry row has more to
    do. Its kernel must be careful: ``a² + b²`` overflows to ``inf`` for ``a = b = 1e200``
    (float64) and underflows to 0 for ``1e-200``, while the answer, about ``1.41e200`` or
    ``1.41e-200``, is a fine float. Its shape rule broadcasts the two inputs' shapes, ``None``
    dimensions included (a graph asks it with unknown sizes). Its dtype rule wants one float
    dtype for both inputs, and gives it to the output.

    Open-ended: register ``Hypot`` once (a second call must not fail), then run it through
    the seam as one op. The tests ask the row's rules without running it, run ``hypot`` on
    hidden inputs near float64's limits, and spy on the seam.

    Args:
        a: A float tensor, or anything ``convert_to_tensor`` accepts.
        b: Another, of the same dtype; the two shapes broadcast.

    Returns:
        A tensor of the broadcast shape and the inputs' dtype.

    Hint 1:
        Scale before squaring: with ``m = max(|a|, |b|)``, √(a² + b²) = m·√(1 + (n/m)²) where
        ``n`` is the smaller magnitude, and ``n/m ≤ 1`` cannot overflow (mind ``m = 0``).
        NumPy's ``np.hypot`` does exactly this.

    Hint 2:
        ``eagerflow.tensor.rules`` has the rules: ``broadcast_rule`` copes with None, and
        ``same_dtype(FLOATS)`` checks both inputs. Then it is ``cube``'s few lines, with two
        inputs: ``execute("Hypot", (a, b))[0]``.
    """
    if "Hypot" not in OPS:
        register_op("Hypot", _hypot_kernel, shape=broadcast_rule, dtype=same_dtype(FLOATS))
    return execute("Hypot", (ef.convert_to_tensor(a), ef.convert_to_tensor(b)))[0]
