"""Every differentiable op passes a float64 central-difference check, first and second order,
on hypothesis-drawn shapes including broadcasting, axes and keepdims."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from op_cases import CASES, ELSEWHERE

import eagerflow.tensor as ef
from eagerflow.autodiff import GRADIENTS, check_gradients

SETTINGS = settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


def test_every_differentiable_op_has_a_gradient_check() -> None:
    differentiable = {name for name, rule in GRADIENTS.items() if rule is not None}
    missing = differentiable - set(CASES) - set(ELSEWHERE)
    assert not missing, f"differentiable ops without a gradient check: {sorted(missing)}"


@pytest.mark.parametrize("order", [1, 2])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_matches_finite_differences(name: str, order: int) -> None:
    @SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        fn, inputs = data.draw(st.composite(lambda draw: CASES[name](draw))())
        tolerance = {"rtol": 1e-3, "atol": 1e-4, "eps": 1e-3} if name == "Cast" else {}
        check_gradients(fn, inputs, order=order, **tolerance)

    check()


def test_prod_gradient_with_zeros() -> None:
    """Π with one zero: only the zero's slot has a gradient (the product of the others)."""
    check_gradients(lambda t: ef.reduce_prod(t, axis=1), [[[2.0, 0.0, 3.0], [1.0, 2.0, 4.0]]])
    check_gradients(lambda t: ef.reduce_prod(t), [[0.0, 0.0, 3.0]])  # two zeros: all 0


def test_clip_by_value_composite() -> None:
    check_gradients(lambda t: ef.clip_by_value(t, -0.5, 0.5), [[-1.0, -0.2, 0.3, 0.9]], order=2)


def test_check_gradients_names_its_own_mistakes() -> None:
    with pytest.raises(TypeError, match=r"check_gradients: f must be a function of tensors"):
        check_gradients(3, [[1.0]])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"check_gradients: order must be 1 or 2, got 3"):
        check_gradients(ef.exp, [[1.0]], order=3)
