"""The ops eagerflow.autodiff adds to the registry obey the same contract as the tensor ops:
a docstring, and shape/dtype rules that agree with what the kernel produces."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GRADIENTS, Variable, apply_gradient_descent
from eagerflow.tensor.execution import execute
from eagerflow.tensor.registry import OPS


def _registered_by(module: str) -> set[str]:
    code = f"import {module}; from eagerflow.tensor.registry import OPS; print(*OPS)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return set(result.stdout.split())


AUTODIFF_OPS = sorted(_registered_by("eagerflow.autodiff") - _registered_by("eagerflow.tensor"))


def examples() -> dict[str, tuple[tuple[ef.Tensor, ...], dict]]:
    v = Variable(np.arange(6.0).reshape(2, 3), name="v")
    delta = ef.constant(np.ones((2, 3)))
    return {
        "ReadVariableOp": ((), {"variable": v}),
        "VariableV2": ((), {"variable": v}),
        "AssignVariableOp": ((delta,), {"variable": v}),
        "AssignAddVariableOp": ((delta,), {"variable": v}),
        "AssignSubVariableOp": ((delta,), {"variable": v}),
        "ApplyGradientDescent": ((ef.constant(0.5, ef.float64), delta), {"variable": v}),
        "CustomGradient": (
            (ef.ones(2), ef.zeros((3, 1), ef.float64)),
            {"num_inputs": 1, "grad_fn": lambda dy: dy},
        ),
    }


def test_autodiff_ops_are_known() -> None:
    assert set(AUTODIFF_OPS) == set(examples())
    assert all(name in GRADIENTS for name in AUTODIFF_OPS)  # a rule, or declared without one


@pytest.mark.parametrize("name", AUTODIFF_OPS)
def test_rules_agree_with_kernel(name: str) -> None:
    op = OPS[name]
    inputs, attrs = examples()[name]
    outputs = execute(name, inputs, attrs)
    assert [tuple(s) for s in op.shape_rule([t.shape for t in inputs], attrs)] == [
        t.shape for t in outputs
    ]
    assert list(op.dtype_rule([t.dtype for t in inputs], attrs)) == [t.dtype for t in outputs]


def test_apply_gradient_descent_updates_the_variable_and_keeps_an_earlier_read() -> None:
    v = Variable(np.arange(4.0, dtype=np.float32))
    before = v.read_value()
    apply_gradient_descent(v, 0.5, np.ones(4, np.float32))
    np.testing.assert_array_equal(v.numpy(), np.arange(4.0) - 0.5)
    np.testing.assert_array_equal(before.numpy(), np.arange(4.0))  # an earlier read keeps its value


def test_apply_gradient_descent_errors_name_the_op_and_the_variable() -> None:
    v = Variable(np.zeros((2, 3), np.float32), name="w")
    with pytest.raises(ef.ShapeError, match=r"ApplyGradientDescent\(.*variable 'w:0'"):
        apply_gradient_descent(v, 0.1, np.ones((3, 2), np.float32))
    with pytest.raises(ef.ShapeError, match="learning rate must be a scalar"):
        apply_gradient_descent(v, [0.1, 0.2], np.ones((2, 3), np.float32))
    with pytest.raises(ef.ShapeError, match="learning rate must be a scalar"):
        apply_gradient_descent(v, [0.1, 0.2, 0.3], np.ones((2, 3), np.float32))  # would broadcast
    with pytest.raises(ef.DTypeError, match="w:0"):
        apply_gradient_descent(v, 0.1, ef.constant(np.ones((2, 3)), ef.float64))
    np.testing.assert_array_equal(v.numpy(), np.zeros((2, 3)))  # nothing half-written
