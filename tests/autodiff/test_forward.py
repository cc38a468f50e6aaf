"""Forward mode: ``ForwardAccumulator``'s JVPs against central differences for every
differentiable op (explicit rules and the double-VJP fallback), against the tape's Jacobian,
and agreeing with each other; nesting, errors, and ``forward_jacobian``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from op_cases import CASES

import eagerflow.tensor as ef
from eagerflow.autodiff import (
    ForwardAccumulator,
    GradientTape,
    Variable,
    forward_jacobian,
    register_jvp,
)
from eagerflow.autodiff.forward import JVPS
from eagerflow.tensor.errors import EagerflowError
from eagerflow.tensor.execution import active_recorders

SETTINGS = settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
EPS = 1e-6


def draw_case(data: st.DataObject, name: str) -> tuple[Callable[..., ef.Tensor], list[np.ndarray]]:
    return data.draw(st.composite(lambda draw: CASES[name](draw))())


def directions(inputs: list[np.ndarray], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(size=np.shape(a)) for a in inputs]


def accumulated(fn: Callable[..., ef.Tensor], xs: list[np.ndarray], vs: list[np.ndarray]):
    primals = [ef.constant(x, dtype=ef.float64) for x in xs]
    with ForwardAccumulator(primals, [ef.constant(v) for v in vs]) as acc:
        y = fn(*primals)
    return y, acc.jvp(y, unconnected_gradients="zero")


def central_difference(
    fn: Callable[..., ef.Tensor], xs: list[np.ndarray], vs: list[np.ndarray], eps: float = EPS
) -> np.ndarray:
    def at(sign: float) -> np.ndarray:
        return fn(*[ef.constant(x + sign * eps * v) for x, v in zip(xs, vs, strict=True)]).numpy()

    return (at(1.0) - at(-1.0)) / (2 * eps)


@pytest.mark.parametrize("name", sorted(CASES))
def test_jvp_matches_central_differences(name: str) -> None:
    """Every differentiable op, whichever rule serves it (explicit, or the fallback)."""

    @SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        fn, xs = draw_case(data, name)
        vs = directions(xs)
        y, tangent = accumulated(fn, xs, vs)
        assert tangent.shape == y.shape and tangent.dtype == y.dtype
        eps, tol = (1e-3, 1e-3) if name == "Cast" else (EPS, 1e-6)  # a float32 round trip
        numeric = central_difference(fn, xs, vs, eps)
        np.testing.assert_allclose(tangent.numpy(), numeric, rtol=tol, atol=tol)

    check()


@pytest.mark.parametrize("name", sorted(JVPS))
def test_explicit_rule_agrees_with_the_double_vjp(name: str, monkeypatch) -> None:
    """An explicit JVP rule and its gradient rule transposed compute the same J·v."""
    if name not in CASES:
        pytest.skip(f"no op case for {name}")

    @SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        fn, xs = draw_case(data, name)
        vs = directions(xs, seed=1)
        _, explicit = accumulated(fn, xs, vs)
        with monkeypatch.context() as m:
            m.delitem(JVPS, name)
            _, transposed = accumulated(fn, xs, vs)
        np.testing.assert_allclose(explicit.numpy(), transposed.numpy(), rtol=1e-10, atol=1e-12)

    check()


def test_the_core_ops_have_explicit_rules() -> None:
    core = {"AddV2", "Sub", "Mul", "RealDiv", "Neg", "MatMul", "Exp", "Log", "Tanh", "Sigmoid"}
    core |= {"Relu", "Sum", "Mean", "Reshape", "Transpose", "Square", "Sqrt"}
    assert core <= set(JVPS)


def f(x: ef.Tensor) -> ef.Tensor:
    w = ef.constant(np.arange(12.0).reshape(3, 4) / 10)
    h = ef.tanh(ef.matmul(ef.reshape(x, (1, 3)), w))
    return ef.concat([ef.sigmoid(h) * ef.exp(h), ef.softmax(h) / 3.0], axis=1)


def test_jvp_is_the_jacobian_times_the_direction() -> None:
    x = ef.constant([0.3, -0.2, 0.5], dtype=ef.float64)
    v = ef.constant([1.0, 2.0, -1.0], dtype=ef.float64)
    with GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    jacobian = tape.jacobian(y, x).numpy()  # (1, 8, 3)
    with ForwardAccumulator(x, v) as acc:
        y = f(x)
    np.testing.assert_allclose(acc.jvp(y).numpy(), jacobian @ v.numpy(), rtol=1e-12)


def test_forward_jacobian_matches_the_tapes() -> None:
    x = ef.constant([0.3, -0.2, 0.5], dtype=ef.float64)
    with GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    expected = tape.jacobian(y, x).numpy()
    got = forward_jacobian(f, x)
    assert got.shape == expected.shape == (1, 8, 3)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    matrix = ef.constant(np.ones((2, 2)))  # a matrix input: shape y.shape + x.shape
    assert forward_jacobian(lambda m: ef.reduce_sum(m * m, axis=0), matrix).shape == (2, 2, 2)


def test_unconnected_tensors_have_no_tangent() -> None:
    x, c = ef.constant([1.0, 2.0]), ef.constant([3.0, 4.0])
    with ForwardAccumulator(x, ef.ones_like(x)) as acc:
        y = c * 2.0
        m = ef.argmax(x)  # not differentiable: no tangent either
    assert acc.jvp(y) is None and acc.jvp(m) is None
    assert acc.jvp(x) is not None  # a primal's tangent is its direction
    np.testing.assert_array_equal(acc.jvp(y, unconnected_gradients="zero").numpy(), [0.0, 0.0])
    assert acc.jvp([x, y])[1] is None  # nests in, nests out
    with pytest.raises(ValueError, match="unconnected_gradients"):
        acc.jvp(y, unconnected_gradients="zeros")


def test_tangents_are_checked() -> None:
    x = ef.constant([1.0, 2.0])
    with pytest.raises(
        ValueError, match=r"tangent of primal 0 is float32\(3,\), its primal float32\(2,\)"
    ):
        ForwardAccumulator(x, ef.constant([1.0, 2.0, 3.0]))
    with pytest.raises(
        ValueError, match=r"tangent of primal 0 is float64\(2,\), its primal float32\(2,\)"
    ):
        ForwardAccumulator(x, ef.constant([1.0, 2.0], dtype=ef.float64))
    with pytest.raises(ValueError, match="1 tangents for 2 primals"):
        ForwardAccumulator([x, x * 2.0], [x])
    with pytest.raises(ValueError, match="only floating-point"):
        ForwardAccumulator(ef.constant([1, 2]), ef.constant([1, 2]))
    with pytest.raises(ValueError, match="primal 1 was given twice"):
        ForwardAccumulator([x, x], [x, x])  # TF's rule: give it once, tangents summed
    acc = ForwardAccumulator(x, [0.5, 0.5])  # a list: made in the primal's dtype
    assert acc.jvp(x).dtype == ef.float32


def test_a_rule_that_returns_a_wrong_tangent_is_named(monkeypatch) -> None:
    monkeypatch.setitem(JVPS, "Exp", lambda op, ta: (ef.reduce_sum(ta),))
    x = ef.constant([1.0, 2.0])
    acc = ForwardAccumulator(x, x)
    wrong = r"JVP rule of Exp gave a float32\(\) tangent for a float32\(2,\) output"
    with pytest.raises(EagerflowError, match=wrong), acc:
        ef.exp(x)
    assert acc not in active_recorders()
    with pytest.raises(ValueError, match="already registered"):
        register_jvp("Mul")(lambda op, ta, tb: (ta,))


def test_the_recorder_leaves_on_exit_even_on_error() -> None:
    x = ef.constant([1.0])
    acc = ForwardAccumulator(x, x)
    with pytest.raises(ZeroDivisionError), acc:
        assert acc in active_recorders()
        raise ZeroDivisionError
    assert acc not in active_recorders()


def test_nested_accumulators_give_second_derivatives() -> None:
    """outer.jvp(inner.jvp(y)) = uᵀ H v: the outer one hears the inner one's tangent ops."""
    x = ef.constant([0.5, -1.0], dtype=ef.float64)
    u, v = ef.constant([1.0, 0.0], dtype=ef.float64), ef.constant([0.0, 1.0], dtype=ef.float64)

    def g(t: ef.Tensor) -> ef.Tensor:
        return t[0] * t[0] * t[1] + t[1] * t[1] * t[0]

    with ForwardAccumulator(x, u) as outer:
        with ForwardAccumulator(x, v) as inner:
            y = g(x)
        mixed = outer.jvp(inner.jvp(y))
    # d²/dx0 dx1 of x0² x1 + x1² x0 = 2 x0 + 2 x1
    np.testing.assert_allclose(mixed.numpy(), 2 * 0.5 + 2 * -1.0)
    assert inner.jvp(outer.jvp(y)) is None  # the inner one never heard the outer's ops


def test_forward_over_reverse_and_reverse_over_forward_hessian_vector_products() -> None:
    x = ef.constant([0.5, -1.0, 2.0], dtype=ef.float64)
    v = ef.constant([1.0, 2.0, 3.0], dtype=ef.float64)
    expected = 6 * x.numpy() * v.numpy()  # y = Σ x³: H = diag(6x)
    with ForwardAccumulator(x, v) as acc:
        with GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(x * x * x)
        grad = tape.gradient(y, x)
    np.testing.assert_allclose(acc.jvp(grad).numpy(), expected)  # forward over reverse
    with GradientTape() as tape:
        tape.watch(x)
        with ForwardAccumulator(x, v) as acc:
            y = ef.reduce_sum(ef.pow(x, 3.0))  # Pow: the double-VJP fallback, differentiated
        directional = acc.jvp(y)
    np.testing.assert_allclose(tape.gradient(directional, x).numpy(), expected)


def test_variables_can_be_primals() -> None:
    w = Variable([1.0, 2.0])
    with ForwardAccumulator(w, [1.0, 0.0]) as acc:
        y = ef.reduce_sum(w * w)  # reads w through the seam
    np.testing.assert_allclose(acc.jvp(y).numpy(), 2.0)
    np.testing.assert_allclose(acc.jvp(w).numpy(), [1.0, 0.0])
