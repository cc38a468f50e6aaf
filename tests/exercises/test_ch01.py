"""Chapter 1 exercises: tensors and kernels (`exercises/ch01.py`)."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.tensor import DTypeError, ShapeError, Tensor
from eagerflow.tensor.execution import recording
from eagerflow.tensor.registry import OPS, OpDef

pytestmark = pytest.mark.ch01

FITTING = [
    ((3, 1), (4,)),
    ((2, 1, 5), (3, 1)),
    ((), (2, 3)),
    ((4, 3), ()),
    ((1,), (7,)),
    ((5, 1, 1), (1, 6, 2)),
    ((2, 3), (2, 3)),
]
NOT_FITTING = [((3,), (4,)), ((2, 3), (3, 2)), ((4, 2), (2, 4, 3))]


@pytest.mark.parametrize(("a", "b"), FITTING)
def test_broadcast_shape_of_shapes_that_fit(chapter, a, b):
    expected = tuple(np.broadcast_shapes(a, b))
    got = chapter.broadcast_shape(a, b)
    assert tuple(got) == expected, f"broadcast_shape({a}, {b}): expected {expected}, got {got}"
    got_swapped = chapter.broadcast_shape(b, a)
    assert tuple(got_swapped) == expected, (
        f"broadcast_shape({b}, {a}): expected {expected}, got {got_swapped} "
        "(broadcasting is symmetric)"
    )


@pytest.mark.parametrize(("a", "b"), NOT_FITTING)
def test_broadcast_shape_refuses_shapes_that_do_not_fit(chapter, a, b):
    try:
        got = chapter.broadcast_shape(a, b)
    except ShapeError:
        return
    except NotImplementedError:
        raise
    except Exception as e:
        pytest.fail(
            f"broadcast_shape({a}, {b}) raised {type(e).__name__}: {e}; expected "
            "eagerflow.tensor.ShapeError"
        )
    pytest.fail(f"broadcast_shape({a}, {b}) returned {got}; expected a ShapeError")


def test_squared_distances(chapter):
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal((4, 3)).astype(np.float32)
    b_np = rng.standard_normal((5, 3)).astype(np.float32)
    got = chapter.squared_distances(ef.constant(a_np), ef.constant(b_np))
    assert isinstance(got, Tensor), f"expected an eagerflow Tensor, got {type(got).__name__}"
    expected = ((a_np[:, None, :] - b_np[None, :, :]) ** 2).sum(axis=-1)
    assert got.shape == (4, 5), f"expected shape (4, 5) (n rows of a, m rows of b), got {got.shape}"
    assert got.dtype is ef.float32, f"expected dtype float32 (the inputs'), got {got.dtype}"
    np.testing.assert_allclose(
        got.numpy(), expected, rtol=1e-5, atol=1e-6,
        err_msg="squared_distances: d[i, j] should be the sum over k of (a[i, k] - b[j, k])²",
    )  # fmt: skip


def test_squared_distances_of_a_point_to_itself_is_zero(chapter):
    a = ef.constant([[1.0, 2.0], [3.0, 5.0]], dtype=ef.float64)
    got = chapter.squared_distances(a, a)
    expected = np.array([[0.0, 13.0], [13.0, 0.0]])
    assert got.dtype is ef.float64, f"expected dtype float64 (the inputs'), got {got.dtype}"
    np.testing.assert_allclose(got.numpy(), expected, err_msg="squared_distances(a, a)")


NO_TRANSPOSE = {"transpose_a": False, "transpose_b": False}
INFER_CASES = [
    ("MatMul", [(ef.float32, (2, 3)), (ef.float32, (3, 4))], NO_TRANSPOSE, [(ef.float32, (2, 4))]),
    ("MatMul", [(ef.float64, (None, 3)), (ef.float64, (3, 4))], NO_TRANSPOSE,
     [(ef.float64, (None, 4))]),
    ("AddV2", [(ef.int32, (3, 1)), (ef.int32, (4,))], {}, [(ef.int32, (3, 4))]),
    ("Less", [(ef.float32, (None, 2)), (ef.float32, (2,))], {}, [(ef.bool_, (None, 2))]),
    ("Sum", [(ef.float32, (5, None, 7))], {"axis": 1, "keepdims": False}, [(ef.float32, (5, 7))]),
    ("Cast", [(ef.float32, (2, 2))], {"dtype": ef.int64}, [(ef.int64, (2, 2))]),
]  # fmt: skip


@pytest.mark.parametrize(("op_name", "inputs", "attrs", "expected"), INFER_CASES)
def test_infer_output(chapter, op_name, inputs, attrs, expected):
    seen = []

    class Spy:
        def record(self, op, inputs, attrs, outputs):
            seen.append(op.name)

    with recording(Spy()):
        got = chapter.infer_output(op_name, inputs, attrs)
    assert not seen, (
        f"infer_output ran ops {seen}: ask the op's shape and dtype rules instead of running it"
    )
    got = [(d, tuple(s)) for d, s in got]
    assert got == expected, (
        f"infer_output({op_name!r}, {inputs}, {attrs}): expected {expected}, got {got}"
    )


def test_infer_output_lets_the_rules_refuse(chapter):
    with pytest.raises(ShapeError, match="inner dimensions"):
        chapter.infer_output("MatMul", [(ef.float32, (2, 3)), (ef.float32, (4, 5))], NO_TRANSPOSE)


def test_register_cube_adds_one_row(chapter):
    row = chapter.register_cube()
    assert isinstance(row, OpDef), f"register_cube() should return an OpDef, got {row!r}"
    assert row.name == "Cube", f"the op's name should be 'Cube', got {row.name!r}"
    assert OPS.get("Cube") is row, "register_cube() should return the row now in registry.OPS"
    again = chapter.register_cube()
    assert again is row, "a second register_cube() should return the row already registered"


def test_cube_rules(chapter):
    row = chapter.register_cube()
    shapes = list(row.shape_rule([(2, None, 3)], {}))
    assert [tuple(s) for s in shapes] == [(2, None, 3)], (
        f"Cube's shape rule: expected [(2, None, 3)] (the input's shape), got {shapes}"
    )
    for dtype in (ef.float16, ef.float32, ef.float64):
        got = list(row.dtype_rule([dtype], {}))
        assert got == [dtype], f"Cube's dtype rule for {dtype}: expected [{dtype}], got {got}"
    for dtype in (ef.int32, ef.int64, ef.bool_):
        try:
            got = row.dtype_rule([dtype], {})
        except DTypeError:
            continue
        pytest.fail(f"Cube's dtype rule accepted {dtype} (returned {got}); expected a DTypeError")


def test_cube_runs_through_the_seam(chapter):
    seen = []

    class Spy:
        def record(self, op, inputs, attrs, outputs):
            seen.append(op.name)

    with recording(Spy()):
        got = chapter.cube([1.0, 2.0, -3.0])
    assert "Cube" in seen, f"cube() should call execute('Cube', ...); the seam saw {seen}"
    assert isinstance(got, Tensor), f"expected a Tensor, got {type(got).__name__}"
    assert got.dtype is ef.float32, f"expected float32, got {got.dtype}"
    np.testing.assert_array_equal(got.numpy(), [1.0, 8.0, -27.0], err_msg="cube([1., 2., -3.])")
    x = ef.constant([[0.5], [2.0]], dtype=ef.float64)
    got = chapter.cube(x)
    assert got.dtype is ef.float64 and got.shape == (2, 1), f"cube of float64[2,1] gave {got!r}"
    np.testing.assert_array_equal(got.numpy(), [[0.125], [8.0]], err_msg="cube(float64[2,1])")


def test_cube_of_integers_names_the_op(chapter):
    with pytest.raises(DTypeError) as caught:
        chapter.cube([1, 2])
    assert str(caught.value).startswith("Cube(int32[2])"), (
        f"the seam should prefix the error with the op and its inputs, got: {caught.value}"
    )
