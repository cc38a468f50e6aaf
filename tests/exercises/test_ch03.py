"""Chapter 3 exercises: automatic differentiation with a tape (`exercises/ch03.py`)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import numpy.polynomial.polynomial as P
import pytest
from ready_made import refusing

import eagerflow.tensor as ef
from eagerflow.autodiff import (
    GradientCheckError,
    GradientTape,
    check_gradients,
)
from eagerflow.autodiff import tape as tape_module
from eagerflow.autodiff.registry import GRADIENTS
from eagerflow.tensor.dtypes import FLOATS
from eagerflow.tensor.execution import active_recorders, execute, recording
from eagerflow.tensor.registry import OPS, register_op
from eagerflow.tensor.rules import broadcast_rule, same_dtype

pytestmark = pytest.mark.ch03

_rng = np.random.default_rng(33)
_hidden = _rng.uniform(0.05, 3.0, 6) * _rng.choice([-1.0, 1.0], 6)  # away from 0, where |x| kinks
POINTS = [[-2.5, -0.7, 0.3, 1.0, 4.0, *np.round(_hidden, 3).tolist()]]


def checked(chapter, order, advice=""):
    """check_gradients of softsign (order 1 or 2), its message made part of the failure."""
    try:
        return check_gradients(chapter.softsign, POINTS, order=order)
    except GradientCheckError as e:
        pytest.fail(
            f"check_gradients(softsign, order={order}) disagrees with your rule:\n{e}{advice}"
        )
    except LookupError as e:
        pytest.fail(f"no gradient for Softsign once register_softsign_gradient() ran: {e}")


def test_softsign_gradient_is_registered_once(chapter):
    chapter.register_softsign_gradient()
    assert GRADIENTS.get("Softsign") is not None, "no rule is registered under 'Softsign'"
    rule = GRADIENTS["Softsign"]
    chapter.register_softsign_gradient()
    assert GRADIENTS["Softsign"] is rule, "a second call should leave the registered rule alone"


def test_softsign_gradient_values(chapter):
    chapter.register_softsign_gradient()
    x = ef.constant([-3.0, -0.5, 0.5, 2.0])
    with GradientTape() as tape:
        tape.watch(x)
        y = chapter.softsign(x)
    got = tape.gradient(y, x)
    checked(chapter, order=1)
    expected = 1 / (1 + np.abs(x.numpy())) ** 2
    assert got is not None, "the tape found no gradient for x"
    np.testing.assert_allclose(
        got.numpy(), expected, rtol=1e-6,
        err_msg="d softsign(x)/dx should be 1 / (1 + |x|)²",
    )  # fmt: skip


def test_softsign_gradient_is_written_with_ops(chapter):
    chapter.register_softsign_gradient()
    advice = (
        "\nIf order 1 passes, the rule probably computes with NumPy: write it with eagerflow "
        "ops (ef.abs, ef.square, /) so that a tape can differentiate the rule itself."
    )
    try:
        checked(chapter, order=2, advice=advice)
    except (TypeError, AttributeError) as e:
        pytest.fail(f"the second derivative failed with {e!r}.{advice}")


CURVES = [
    (lambda x: x**3, 1.0, 6.0, "x**3 at 1: 6x"),
    (lambda x: x * x * x - 2.0 * x, -1.0, -6.0, "x**3 - 2x at -1: 6x"),
    (
        ef.tanh,
        0.5,
        -2 * np.tanh(0.5) * (1 - np.tanh(0.5) ** 2),
        "tanh at 0.5: -2 tanh(1 - tanh**2)",
    ),
    (lambda x: ef.exp(2.0 * x), 0.25, 4 * np.exp(0.5), "exp(2x) at 0.25: 4 exp(2x)"),
    (lambda x: 3.0 * x + 1.0, 1.0, 0.0, "3x + 1, a line: 0"),
]


@pytest.mark.parametrize(("f", "x", "expected", "what"), CURVES, ids=[c[3] for c in CURVES])
def test_second_derivative(chapter, f, x, expected, what):
    got = chapter.second_derivative(f, x)
    value = 0.0 if got is None else float(got)
    assert value == pytest.approx(expected, rel=1e-5, abs=1e-6), (
        f"second derivative of {what}: expected {expected:.6g}, got {got!r}"
    )


def _hidden_curves():
    """Curves and points the reader does not see: random polynomials and compositions."""
    rng = np.random.default_rng(303)
    cases = []
    for i in range(4):
        c = np.round(rng.uniform(-2, 2, size=int(rng.integers(3, 6))), 2)  # c0, c1, ...

        def poly(t, c=c):
            y = float(c[-1])
            for coefficient in c[-2::-1]:
                y = y * t + float(coefficient)
            return y

        x = round(float(rng.uniform(-1.5, 1.5)), 3)
        second = P.polyval(x, P.polyder(c, 2))
        cases.append((poly, x, second, f"polynomial {i}"))
    a, b = np.round(rng.uniform(0.5, 1.5, size=2), 2)
    x = round(float(rng.uniform(-1, 1)), 3)
    th = np.tanh(b * x)
    cases += [
        (lambda t: a * ef.exp(b * t), x, a * b * b * np.exp(b * x), "a exp(bx)"),
        (lambda t: a * ef.tanh(b * t), x, a * b * b * -2 * th * (1 - th**2), "a tanh(bx)"),
        (lambda t: t * ef.exp(b * t), x, (b * b * x + 2 * b) * np.exp(b * x), "x exp(bx)"),
    ]
    return cases


HIDDEN_CURVES = _hidden_curves()


def tapes_recording():
    return sum(isinstance(r, GradientTape) for r in active_recorders())


def test_second_derivative_on_hidden_curves_comes_from_tapes(chapter, monkeypatch):
    asked = []
    gradient = GradientTape.gradient

    def counted(self, *args, **kwargs):
        asked.append(self)
        return gradient(self, *args, **kwargs)

    monkeypatch.setattr(GradientTape, "gradient", counted)
    for f, x, expected, what in HIDDEN_CURVES:
        calls = []

        def watched(t, f=f, calls=calls):
            calls.append(tapes_recording())
            return f(t)

        asked.clear()
        got = chapter.second_derivative(watched, x)
        value = 0.0 if got is None else float(got)
        assert value == pytest.approx(expected, rel=1e-4, abs=1e-4), (
            f"second derivative of a hidden curve ({what}) at {x}: expected {expected:.6g}, "
            f"got {got!r}"
        )
        assert len(calls) == 1, (
            f"second_derivative called f {len(calls)} times: run it once, under the tapes "
            "(finite differences are not the exercise: the tapes are)"
        )
        assert calls[0] >= 1, "f ran while no GradientTape was recording"
        assert len(asked) >= 2, (
            f"the tapes were asked for {len(asked)} gradient(s): f'' takes two, f' from the "
            "inner tape and its derivative from the outer one"
        )


def mixing(x):
    a = ef.constant([[1.0, -2.0, 0.5], [0.0, 3.0, 1.0]])
    return ef.tanh(ef.reshape(a @ ef.reshape(x, (3, 1)), (2,))) * ef.reduce_sum(x)


def test_jacobian_by_rows(chapter):
    x = ef.constant([0.3, -0.2, 0.8])
    with GradientTape() as tape:
        tape.watch(x)
        y = mixing(x)
    expected = tape.jacobian(y, x).numpy()
    got = chapter.jacobian_by_rows(mixing, x)
    assert got is not None and tuple(got.shape) == (2, 3), (
        f"expected shape (2, 3): one row per output, one column per input; got {got!r}"
    )
    np.testing.assert_allclose(
        got.numpy(), expected, rtol=1e-5, atol=1e-6,
        err_msg="row i should be the gradient of y[i] with respect to x",
    )  # fmt: skip


def test_jacobian_by_rows_on_hidden_functions_runs_f_once(chapter):
    rng = np.random.default_rng(313)
    for m, n in [(3, 2), (1, 4), (4, 4)]:
        a = ef.constant(rng.uniform(-1, 1, (m, n)))
        calls = []

        def f(t, a=a, calls=calls):
            calls.append(tapes_recording())
            return ef.tanh(ef.reshape(a @ ef.reshape(t, (-1, 1)), (-1,))) * ef.reduce_sum(t * t)

        x = rng.uniform(-1, 1, n)
        with refusing("jacobian_by_rows", "the Jacobian's rows", (GradientTape, "jacobian")):
            got = chapter.jacobian_by_rows(f, ef.constant(x))
        assert len(calls) == 1 and calls[0] >= 1, (
            f"f ran {len(calls)} times: run it once, on one persistent tape, and ask that tape "
            "for every row"
        )
        z = a.numpy() @ x
        s = np.sum(x * x)
        expected = (1 - np.tanh(z) ** 2)[:, None] * a.numpy() * s + np.outer(np.tanh(z), 2 * x)
        assert got is not None and tuple(got.shape) == (m, n), (
            f"f from {n} inputs to {m} outputs: expected a ({m}, {n}) Jacobian, got {got!r}"
        )
        np.testing.assert_allclose(
            got.numpy(), expected, rtol=1e-6, atol=1e-9,
            err_msg=f"the Jacobian of a hidden ({m}, {n}) function",
        )  # fmt: skip


def test_jacobian_by_rows_of_an_elementwise_function_is_diagonal(chapter):
    x = ef.constant([1.0, 2.0, 3.0, 4.0])
    got = chapter.jacobian_by_rows(lambda t: t * t, x)
    np.testing.assert_allclose(got.numpy(), np.diag([2.0, 4.0, 6.0, 8.0]), err_msg="J of x²")


FUNCTIONS = [
    (lambda t: ef.reduce_sum(t**3), lambda x: 3 * x**2, "sum(x**3): 3x**2"),
    (lambda t: ef.reduce_sum(ef.exp(t) * t), lambda x: np.exp(x) * (x + 1), "sum(exp(x) x)"),
    (lambda t: ef.reduce_max(t) * 2.0, lambda x: 2.0 * (x == x.max()), "2 max(x)"),
]


@pytest.mark.parametrize(("f", "exact", "what"), FUNCTIONS, ids=[f[2] for f in FUNCTIONS])
def test_numerical_gradient(chapter, f, exact, what):
    x = np.array([0.5, -1.25, 2.0, 0.1])
    got = chapter.numerical_gradient(f, x)
    assert np.shape(got) == x.shape, f"expected one entry per input (shape {x.shape}), got {got!r}"
    np.testing.assert_allclose(
        got, exact(x), rtol=1e-6, atol=1e-7, err_msg=f"numerical gradient of {what}"
    )
    np.testing.assert_array_equal(x, [0.5, -1.25, 2.0, 0.1], err_msg="do not change x in place")


def test_numerical_gradient_on_hidden_functions_without_a_tape(chapter, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("numerical_gradient used a GradientTape: differences only")

    monkeypatch.setattr(GradientTape, "gradient", refuse)
    rng = np.random.default_rng(323)
    for n in (1, 3, 6):
        w = rng.uniform(-1, 1, n)
        x = rng.uniform(-1, 1, n)
        before = x.copy()
        got = chapter.numerical_gradient(lambda t, w=w: ef.reduce_sum(ef.constant(w) * t**3), x)
        assert np.shape(got) == (n,), f"expected one entry per input (shape ({n},)), got {got!r}"
        np.testing.assert_allclose(
            got, 3 * w * x**2, rtol=1e-5, atol=1e-7,
            err_msg=f"numerical gradient of sum(w x**3), n = {n}",
        )  # fmt: skip
        np.testing.assert_array_equal(x, before, err_msg="do not change x in place")


def test_numerical_gradient_uses_eps(chapter):
    x = np.array([1.0])
    got = chapter.numerical_gradient(lambda t: ef.reduce_sum(t**3), x, eps=0.5)
    # ((1.5)³ - (0.5)³) / 1 = 3.25, not the exact 3: the central difference with eps = 0.5
    np.testing.assert_allclose(got, [3.25], err_msg="the central difference with eps=0.5")


# --- MiniTape -------------------------------------------------------------------------------------
def mini_tape(chapter, program, x):
    """Run ``program(x)`` under a MiniTape of the chapter; return the tape and the result."""
    mini = chapter.MiniTape(x)
    with recording(mini):
        y = program(x)
    return mini, y


def tape_gradient(program, x):
    with GradientTape() as tape:
        tape.watch(x)
        y = program(x)
    return tape.gradient(y, x)


class RuleCalls:
    """Counts the calls of the gradient rules of ``names``, per record (by its output)."""

    def __init__(self, monkeypatch, names):
        self.calls = Counter()
        for name in names:
            rule = GRADIENTS[name]

            def counted(op, *grads, rule=rule):
                self.calls[id(op.outputs[0])] += 1
                return rule(op, *grads)

            monkeypatch.setitem(GRADIENTS, name, counted)


def refuse_tapes(monkeypatch, who="MiniTape.gradient", instead="walk the records yourself"):
    def refuse(*args, **kwargs):
        raise AssertionError(f"{who} used eagerflow's tape: {instead}")

    monkeypatch.setattr(GradientTape, "gradient", refuse)
    monkeypatch.setattr(tape_module, "backprop", refuse)
    monkeypatch.setattr(tape_module, "_backprop", refuse)  # for a backprop imported earlier


def check_mini(chapter, monkeypatch, program, x, what, shuffle=None):
    expected = tape_gradient(program, x)
    mini, y = mini_tape(chapter, program, x)
    if shuffle is not None:
        shuffle(mini.records)
    with monkeypatch.context() as patch:
        refuse_tapes(patch)
        rules = RuleCalls(patch, {r.op.name for r in mini.records})
        got = mini.gradient(y, x)
    assert got is not None, f"{what}: MiniTape.gradient found no gradient"
    np.testing.assert_allclose(
        np.asarray(got.numpy()), expected.numpy(), rtol=1e-9, atol=1e-12,
        err_msg=f"{what}: MiniTape.gradient disagrees with GradientTape",
    )  # fmt: skip
    twice = [n for n in rules.calls.values() if n > 1]
    assert not twice, (
        f"{what}: a rule ran {max(twice)} times for one record: sum the gradients of its "
        "output first (walk in topological order), then call its rule once"
    )


def test_mini_tape_adds_the_gradients_of_a_tensor_used_twice(chapter, monkeypatch):
    x = ef.constant([0.5, -1.0, 2.0], ef.float64)
    check_mini(chapter, monkeypatch, lambda t: ef.tanh(t) * t + t, x, "tanh(x)·x + x")
    check_mini(chapter, monkeypatch, lambda t: (t * t) * ef.exp(t * t), x, "x²·exp(x²)")


def test_mini_tape_does_not_rely_on_the_order_of_the_records(chapter, monkeypatch):
    x = ef.constant([0.3, 1.5], ef.float64)

    def program(t):
        a = ef.tanh(t)
        b = a * t
        return ef.reduce_sum(b * a + ef.exp(b))

    check_mini(chapter, monkeypatch, program, x, "records in reverse", shuffle=list.reverse)


def test_mini_tape_returns_none_without_a_path(chapter):
    x, c = ef.constant(2.0, ef.float64), ef.constant(3.0, ef.float64)
    mini, _ = mini_tape(chapter, lambda t: t * t, x)
    assert mini.gradient(c * c, x) is None, "a target that does not depend on x: expected None"


UNARY = [ef.tanh, ef.sigmoid, lambda t: t * 0.5, ef.square]
BINARY = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - b]


def hidden_program(rng):
    """A random program over vectors: each step reads one or two earlier values, so values
    are used several times and by ops far apart."""
    steps = []
    for i in range(int(rng.integers(6, 14))):
        if rng.random() < 0.4:
            steps.append((UNARY[rng.integers(len(UNARY))], (int(rng.integers(0, i + 1)),)))
        else:
            picks = (int(rng.integers(0, i + 1)), int(rng.integers(0, i + 1)))
            steps.append((BINARY[rng.integers(len(BINARY))], picks))

    def program(t):
        values = [t]
        for fn, picks in steps:
            values.append(fn(*(values[p] for p in picks)))
        return ef.reduce_sum(values[-1] * values[len(values) // 2])

    return program


def test_mini_tape_on_hidden_programs_with_shuffled_records(chapter, monkeypatch):
    rng = np.random.default_rng(343)
    for i in range(8):
        program = hidden_program(rng)
        x = ef.constant(rng.uniform(-1, 1, 3))
        check_mini(chapter, monkeypatch, program, x, f"hidden program {i}", shuffle=rng.shuffle)


# --- broadcasting gradients -----------------------------------------------------------------------
if "Ch03Plus" not in OPS:  # copies of AddV2 and Mul, for the reader's rules
    register_op("Ch03Plus", np.add, shape=broadcast_rule, dtype=same_dtype(FLOATS))
    register_op("Ch03Times", np.multiply, shape=broadcast_rule, dtype=same_dtype(FLOATS))


def plus(x, y):
    return execute("Ch03Plus", (x, y))[0]


def times(x, y):
    return execute("Ch03Times", (x, y))[0]


def broadcasting_pairs(seed, n):
    """``n`` random pairs of shapes that broadcast together, and never the same shape."""
    rng = np.random.default_rng(seed)
    pairs = []
    while len(pairs) < n:
        full = tuple(int(d) for d in rng.integers(2, 5, int(rng.integers(1, 4))))
        pair = []
        for _ in range(2):
            shape = list(full[int(rng.integers(0, len(full) + 1)) :])
            for i in range(len(shape)):
                if rng.random() < 0.35:
                    shape[i] = 1
            pair.append(tuple(shape))
        if pair[0] != pair[1]:
            pairs.append(tuple(pair))
    return pairs


def numpy_unbroadcast(grad, shape):
    lead = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, d in enumerate(shape) if d == 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


class Ops:
    """The names of the ops the seam ran."""

    def __init__(self):
        self.names = []

    def record(self, op, inputs, attrs, outputs):
        self.names.append(op.name)


def test_unbroadcast_sums_over_the_stretched_axes(chapter):
    grad = ef.constant(np.arange(24.0).reshape(2, 3, 4))
    for shape in [(3, 1), (4,), (1, 3, 1), (2, 1, 4), ()]:
        got = chapter.unbroadcast(grad, shape)
        assert got is not None and tuple(got.shape) == shape, (
            f"unbroadcast to {shape}: expected that shape, got {got!r}"
        )
        np.testing.assert_allclose(
            got.numpy(), numpy_unbroadcast(grad.numpy(), shape),
            err_msg=f"unbroadcast of a (2, 3, 4) gradient to {shape}",
        )  # fmt: skip
    assert chapter.unbroadcast(grad, (2, 3, 4)) is grad, "the same shape: return grad itself"


def test_unbroadcast_on_hidden_shapes_with_eagerflow_ops(chapter):
    rng = np.random.default_rng(353)
    for x_shape, y_shape in broadcasting_pairs(354, 10):
        full = np.broadcast_shapes(x_shape, y_shape)
        grad = ef.constant(rng.uniform(-1, 1, full))
        for shape in (x_shape, y_shape):
            ops = Ops()
            with recording(ops):
                got = chapter.unbroadcast(grad, shape)
            assert got is not None and tuple(got.shape) == shape, (
                f"unbroadcast of a {full} gradient to {shape}: expected that shape, got {got!r}"
            )
            np.testing.assert_allclose(
                got.numpy(), numpy_unbroadcast(grad.numpy(), shape), rtol=1e-12,
                err_msg=f"unbroadcast of a hidden {full} gradient to {shape}",
            )  # fmt: skip
            if shape != full:
                assert "Sum" in ops.names, (
                    f"unbroadcast to {shape} ran no reduce_sum through the seam (it ran "
                    f"{ops.names}): sum with eagerflow ops, so that a tape can record it"
                )


def test_broadcasting_rules_match_the_real_ops_on_hidden_shapes(chapter, monkeypatch):
    monkeypatch.setitem(GRADIENTS, "Ch03Plus", chapter.add_gradient)
    monkeypatch.setitem(GRADIENTS, "Ch03Times", chapter.mul_gradient)
    rng = np.random.default_rng(363)
    for x_shape, y_shape in broadcasting_pairs(364, 10):
        x = ef.constant(rng.uniform(-1, 1, x_shape))
        y = ef.constant(rng.uniform(-1, 1, y_shape))
        w = ef.constant(rng.uniform(-1, 1, np.broadcast_shapes(x_shape, y_shape)))
        for mine, real, what in [(plus, ef.add, "x + y"), (times, ef.multiply, "x * y")]:
            expected = []
            for fn in (real, mine):
                with GradientTape() as tape:
                    tape.watch([x, y])
                    loss = ef.reduce_sum(w * fn(x, y))
                expected.append(tape.gradient(loss, [x, y]))
            pairs = zip(expected[1], expected[0], (x_shape, y_shape), "xy", strict=True)
            for got, want, shape, name in pairs:
                assert got is not None and tuple(got.shape) == shape, (
                    f"{what} with x {x_shape}, y {y_shape}: d/d{name} should have shape {shape}, "
                    f"got {got!r}"
                )
                np.testing.assert_allclose(
                    got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12,
                    err_msg=f"{what} with x {x_shape}, y {y_shape}: d/d{name}",
                )  # fmt: skip


def test_mul_gradient_has_a_second_derivative(chapter, monkeypatch):
    monkeypatch.setitem(GRADIENTS, "Ch03Times", chapter.mul_gradient)
    for x_shape, y_shape in broadcasting_pairs(374, 3):
        try:
            check_gradients(times, [np.ones(x_shape) * 0.5, np.ones(y_shape) * -1.5], order=2)
        except GradientCheckError as e:
            pytest.fail(
                f"the second derivative of x * y (x {x_shape}, y {y_shape}) through your rule "
                f"is wrong; write mul_gradient and unbroadcast with eagerflow ops:\n{e}"
            )


def numpy_unbroadcast_tensor(grad, shape):
    """``numpy_unbroadcast`` of a tensor, as a tensor (for the planted mistakes)."""
    return ef.constant(numpy_unbroadcast(grad.numpy(), shape), grad.dtype)
