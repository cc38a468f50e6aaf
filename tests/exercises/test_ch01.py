"""Chapter 1 exercises: tensors and kernels (`exercises/ch01.py`)."""

from __future__ import annotations

import numpy as np
import pytest
from ready_made import refusing

import eagerflow.tensor as ef
from eagerflow.tensor import DTypeError, ShapeError, Tensor, rules
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


def random_shape_pairs(seed, count, fitting):  # type: ignore[no-untyped-def]
    """Pairs of shapes the reader does not see, of ranks 0 to 4, that fit or do not."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        rank = int(rng.integers(0 if fitting else 1, 5))
        full = [int(d) for d in rng.integers(2, 6, rank)]
        a = [1 if rng.random() < 0.3 else d for d in full]
        b = [1 if rng.random() < 0.3 else d for d in full]
        keep = rank  # how many of a's dimensions, from the right
        if not fitting:  # one position where the sizes differ and neither is 1
            i = int(rng.integers(1, rank + 1))
            a[-i], b[-i] = full[-i], full[-i] + 1
            keep = int(rng.integers(i, rank + 1))
        else:
            keep = int(rng.integers(0, rank + 1))
        pairs.append((tuple(a[rank - keep :]), tuple(b)))
    return pairs


def refusing_ready_made_broadcasting():  # type: ignore[no-untyped-def]
    """NumPy's and eagerflow's own broadcasting of shapes: the answer, ready-made."""
    ready_made = [(np, "broadcast_shapes"), (np, "broadcast"), (np, "broadcast_to"),
                  (np, "broadcast_arrays"), (rules, "broadcast")]  # fmt: skip
    return refusing("broadcast_shape", "the broadcasting rule", *ready_made)


# Shapes of more elements than any array can have (2**61 float64s is 2**64 bytes): NumPy
# refuses to make one before it allocates anything, so broadcasting arrays to get the shape
# (`(np.empty(a) + np.empty(b)).shape`) fails here, while the rule, on tuples, does not care.
HUGE = [((2**61, 1), (1, 3)), ((5, 1, 2**62), (2**62,)), ((1, 2**40), (2**40, 1)),
        ((2**63 - 1,), (1,))]  # fmt: skip


def test_broadcast_shape_of_shapes_too_big_to_allocate(chapter):
    with refusing_ready_made_broadcasting():
        for a, b in HUGE:
            padded = zip((1,) * (len(b) - len(a)) + a, (1,) * (len(a) - len(b)) + b, strict=True)
            expected = tuple(max(x, y) for x, y in padded)
            try:
                got = chapter.broadcast_shape(a, b)
            except (ShapeError, ValueError, MemoryError) as error:
                pytest.fail(
                    f"broadcast_shape({a}, {b}) raised {type(error).__name__}: {error}; expected "
                    f"{expected}. The rule is about tuples of ints: did you make arrays of these "
                    "shapes? No array can have that many elements."
                )
            assert got is not None and tuple(got) == expected, (
                f"broadcast_shape({a}, {b}): expected {expected}, got {got}"
            )


@pytest.mark.parametrize(("a", "b"), FITTING)
def test_broadcast_shape_of_shapes_that_fit(chapter, a, b):
    expected = tuple(np.broadcast_shapes(a, b))
    with refusing_ready_made_broadcasting():
        got = chapter.broadcast_shape(a, b)
        got_swapped = chapter.broadcast_shape(b, a)
    assert tuple(got) == expected, f"broadcast_shape({a}, {b}): expected {expected}, got {got}"
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


def test_broadcast_shape_on_hidden_shapes(chapter):
    pairs = random_shape_pairs(101, 20, fitting=True)
    fitting = [(a, b, tuple(np.broadcast_shapes(a, b))) for a, b in pairs]
    with refusing_ready_made_broadcasting():
        for a, b, expected in fitting:
            for x, y in ((a, b), (b, a)):
                got = chapter.broadcast_shape(x, y)
                assert got is not None and tuple(got) == expected, (
                    f"broadcast_shape({x}, {y}): expected {expected}, got {got}"
                )
        for a, b in random_shape_pairs(102, 10, fitting=False):
            try:
                got = chapter.broadcast_shape(a, b)
            except ShapeError:
                continue
            pytest.fail(f"broadcast_shape({a}, {b}) returned {got}; expected a ShapeError")


def dtype_message(got, expected):  # type: ignore[no-untyped-def]
    """Why ``got.dtype`` is not ``expected`` (an eagerflow DType), for a failure message."""
    dtype = getattr(got, "dtype", None)
    if isinstance(dtype, np.dtype):
        return (
            f"expected an eagerflow DType (ef.{expected.name}), not NumPy's dtype {dtype}: "
            f"return an eagerflow Tensor (you returned a {type(got).__name__})"
        )
    return f"expected dtype {expected.name} (the inputs'), got {dtype!r}"


def test_squared_distances(chapter):
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal((4, 3)).astype(np.float32)
    b_np = rng.standard_normal((5, 3)).astype(np.float32)
    got = chapter.squared_distances(ef.constant(a_np), ef.constant(b_np))
    assert isinstance(got, Tensor), f"expected an eagerflow Tensor, got {type(got).__name__}"
    expected = ((a_np[:, None, :] - b_np[None, :, :]) ** 2).sum(axis=-1)
    assert got.shape == (4, 5), f"expected shape (4, 5) (n rows of a, m rows of b), got {got.shape}"
    assert got.dtype is ef.float32, dtype_message(got, ef.float32)
    np.testing.assert_allclose(
        got.numpy(), expected, rtol=1e-5, atol=1e-6,
        err_msg="squared_distances: d[i, j] should be the sum over k of (a[i, k] - b[j, k])²",
    )  # fmt: skip


def test_squared_distances_of_a_point_to_itself_is_zero(chapter):
    a = ef.constant([[1.0, 2.0], [3.0, 5.0]], dtype=ef.float64)
    got = chapter.squared_distances(a, a)
    expected = np.array([[0.0, 13.0], [13.0, 0.0]])
    assert got.dtype is ef.float64, dtype_message(got, ef.float64)
    np.testing.assert_allclose(got.numpy(), expected, err_msg="squared_distances(a, a)")


class Lineage:
    """A recorder that keeps, for each tensor an op made, the op's name and inputs."""

    def __init__(self):
        self.made = {}  # id of an output -> (op name, inputs)
        self.keep = []  # the tensors themselves, so that no id is reused while we look

    def record(self, op, inputs, attrs, outputs):
        for t in outputs:
            self.made[id(t)] = (op.name, inputs)
        self.keep.extend([*inputs, *outputs])

    def ancestors(self, t):
        """The ids of every tensor ``t`` was computed from, through the ops recorded."""
        found, stack = set(), [t]
        while stack:
            for parent in self.made.get(id(stack.pop()), ("", ()))[1]:
                if id(parent) not in found:
                    found.add(id(parent))
                    stack.append(parent)
        return found


def test_squared_distances_on_hidden_points(chapter):
    rng = np.random.default_rng(103)
    for n, m, k in [(1, 6, 2), (7, 3, 5), (2, 2, 1)]:
        a_np, b_np = rng.standard_normal((n, k)), rng.standard_normal((m, k))
        a, b, lineage = ef.constant(a_np), ef.constant(b_np), Lineage()
        with recording(lineage):
            got = chapter.squared_distances(a, b)
        assert isinstance(got, Tensor), f"expected an eagerflow Tensor, got {type(got).__name__}"
        ops = sorted({name for name, _ in lineage.made.values()})
        assert id(got) in lineage.made and {id(a), id(b)} <= lineage.ancestors(got), (
            "squared_distances: this exercise asks you to compute the distances with eagerflow "
            "ops, by broadcasting: the tensor you return must be what ops (ef.expand_dims, "
            "-, ef.square, ef.reduce_sum) made from a and b, and computing it in NumPy (or "
            f"making a constant of NumPy's answer) is not allowed. The seam saw the ops {ops}"
        )
        assert got.dtype is ef.float64, dtype_message(got, ef.float64)
        assert got.shape == (n, m), (
            f"{n} points against {m}: expected shape {(n, m)}, got {got.shape}"
        )
        expected = ((a_np[:, None, :] - b_np[None, :, :]) ** 2).sum(axis=-1)
        np.testing.assert_allclose(
            got.numpy(), expected, rtol=1e-12, atol=1e-12,
            err_msg=f"squared distances of hidden points, ({n}, {k}) and ({m}, {k})",
        )  # fmt: skip


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


def test_infer_output_on_hidden_shapes(chapter):
    rng = np.random.default_rng(104)
    for a, b in random_shape_pairs(105, 6, fitting=True):
        a = tuple(None if rng.random() < 0.2 else d for d in a)  # some not known yet
        expected = ef.float64, tuple(_broadcast_known(a, b))
        got = chapter.infer_output("AddV2", [(ef.float64, a), (ef.float64, b)], {})
        got = [(d, tuple(s)) for d, s in got]
        assert got == [expected], (
            f"infer_output('AddV2', {a}, {b}): expected {[expected]}, got {got}"
        )
    for _ in range(4):
        n, k, m = (int(v) for v in rng.integers(1, 9, 3))
        batch = None if rng.random() < 0.5 else n
        inputs = [(ef.float32, (batch, k)), (ef.float32, (k, m))]
        got = [(d, tuple(s)) for d, s in chapter.infer_output("MatMul", inputs, NO_TRANSPOSE)]
        assert got == [(ef.float32, (batch, m))], f"infer_output('MatMul', {inputs}): got {got}"


def _broadcast_known(a, b):  # type: ignore[no-untyped-def]
    """Broadcasting with None (unknown) dimensions, as the graph's rules do."""
    from eagerflow.tensor.rules import broadcast

    return broadcast(a, b)


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


class Spy:
    def __init__(self):
        self.names = []

    def record(self, op, inputs, attrs, outputs):
        self.names.append(op.name)


def test_cube_on_hidden_values(chapter):
    rng = np.random.default_rng(106)
    for shape, dtype in [((3,), ef.float64), ((2, 4), ef.float32), ((), ef.float16)]:
        values = rng.uniform(-3, 3, shape).astype(dtype.as_numpy_dtype)
        x, spy = ef.constant(values), Spy()
        with recording(spy):
            got = chapter.cube(x)
        seen = spy.names
        assert seen == ["Cube"], f"cube() should run the one op Cube; the seam saw {seen}"
        assert got.dtype is dtype, dtype_message(got, dtype)
        np.testing.assert_allclose(got.numpy(), values**3, rtol=1e-3, err_msg=f"cube of {values}")


def test_cube_of_integers_names_the_op(chapter):
    with pytest.raises(DTypeError) as caught:
        chapter.cube([1, 2])
    assert str(caught.value).startswith("Cube(int32[2])"), (
        f"the seam should prefix the error with the op and its inputs, got: {caught.value}"
    )


# --- stretch: Hypot -------------------------------------------------------------------------------
def fresh_registry(test):  # type: ignore[no-untyped-def]
    """Run ``test`` with no ``Hypot`` in the registry, and take away the one it registers (so
    each test, and each planted mistake, registers its own)."""

    def run(chapter):  # type: ignore[no-untyped-def]
        saved = OPS.pop("Hypot", None)
        try:
            return test(chapter)
        finally:
            OPS.pop("Hypot", None)
            if saved is not None:
                OPS["Hypot"] = saved

    run.__name__ = test.__name__
    return run


def hidden_hypot_inputs(rng):  # type: ignore[no-untyped-def]
    """Pairs of float64 arrays whose shapes broadcast, with magnitudes up to float64's limits."""
    pairs = []
    for a_shape, b_shape in [((4,), (4,)), ((3, 1), (5,)), ((2, 1, 3), (4, 1)), ((), (2, 2))]:
        scale = 10.0 ** rng.choice([-300, -200, 0, 200, 300], a_shape)
        a = rng.uniform(-1, 1, a_shape) * scale
        b = rng.uniform(-1, 1, b_shape) * 10.0 ** rng.choice([-300, -200, 0, 200, 300], b_shape)
        pairs.append((np.asarray(a), np.asarray(b)))
    return pairs


@fresh_registry
def test_hypot_stretch_rules_and_values_on_hidden_inputs(chapter):
    rng = np.random.default_rng(4101)
    for a, b in hidden_hypot_inputs(rng):
        x, y, spy = ef.constant(a), ef.constant(b), Spy()
        with recording(spy):
            got = chapter.hypot(x, y)
        assert spy.names == ["Hypot"], (
            f"hypot() should run the one op Hypot; the seam saw {spy.names}"
        )
        expected = np.hypot(a, b)
        assert isinstance(got, Tensor), f"expected a Tensor, got {type(got).__name__}"
        assert got.shape == expected.shape, (
            f"hypot of shapes {a.shape} and {b.shape}: expected shape {expected.shape}, got "
            f"{got.shape}"
        )
        assert got.dtype is ef.float64, dtype_message(got, ef.float64)
        assert np.all(np.isfinite(got.numpy())) and np.all(got.numpy()[expected > 0] > 0), (
            f"hypot overflowed or underflowed on hidden inputs {a!r}, {b!r}: got {got.numpy()} "
            "(a² + b² is inf for 1e200 and 0 for 1e-200; scale before squaring)"
        )
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12, err_msg="Hypot's values")
    again = chapter.hypot([3.0], [4.0])  # registered already: must not fail
    np.testing.assert_allclose(again.numpy(), [5.0], err_msg="hypot([3.], [4.]) a second time")


@fresh_registry
def test_hypot_stretch_rules_answer_without_running(chapter):
    chapter.hypot([3.0], [4.0])
    row = OPS.get("Hypot")
    assert isinstance(row, OpDef), "hypot() should register the op 'Hypot' in registry.OPS"
    rng = np.random.default_rng(4102)
    for _ in range(6):
        rank = int(rng.integers(1, 4))
        full = [int(d) for d in rng.integers(2, 6, rank)]
        a = tuple(None if rng.random() < 0.3 else (1 if rng.random() < 0.3 else d) for d in full)
        b = tuple(1 if rng.random() < 0.3 else d for d in full)[int(rng.integers(0, rank)) :]
        expected = tuple(
            x if y in (1, None) or x not in (1, None) else y
            for x, y in zip(a, (1,) * (len(a) - len(b)) + b, strict=True)
        )
        got = [tuple(s) for s in row.shape_rule([a, b], {})]
        assert got == [expected], (
            f"Hypot's shape rule for {a} and {b}: expected [{expected}], got {got}"
        )
    with pytest.raises(ShapeError):
        row.shape_rule([(3,), (4,)], {})
    for dtype in (ef.float16, ef.float32, ef.float64):
        got = list(row.dtype_rule([dtype, dtype], {}))
        assert got == [dtype], f"Hypot's dtype rule for two {dtype}: expected [{dtype}], got {got}"
    for dtypes in ([ef.int32, ef.int32], [ef.float32, ef.float64], [ef.float64, ef.float32]):
        try:
            got = row.dtype_rule(dtypes, {})
        except DTypeError:
            continue
        pytest.fail(f"Hypot's dtype rule accepted {dtypes} (returned {got}); expected a DTypeError")
