"""eagerflow.autodiff: Variables, GradientTape, one gradient registry, a gradient checker.

Read it in this order:

1. ``variables.py``  ``Variable``: state read and written through ops on the seam;
2. ``registry.py``   one gradient rule per op name (``register_gradient``);
3. ``tape.py``       ``GradientTape``: a recorder on the seam, and backpropagation;
4. ``math_grad.py``, ``array_grad.py``, ``conv_grad.py``: the rules, with public ops only;
5. ``custom.py``     ``custom_gradient``; ``checker.py``: ``check_gradients``;
6. ``forward.py``    ``ForwardAccumulator``: forward mode, a second recorder on the seam, with
   JVP rules (``register_jvp``) or each gradient rule transposed; ``forward_jacobian``.
"""

from importlib import metadata as _metadata

__version__ = _metadata.version("eagerflow-autodiff")  # from the repository's VERSION file

# Importing the rule modules registers the rules.
from eagerflow.autodiff import array_grad, conv_grad, math_grad  # noqa: F401
from eagerflow.autodiff.checker import GradientCheckError, check_gradients
from eagerflow.autodiff.custom import custom_gradient
from eagerflow.autodiff.forward import ForwardAccumulator, forward_jacobian, register_jvp
from eagerflow.autodiff.registry import (
    GRADIENTS,
    OpRecord,
    get_gradient,
    not_differentiable,
    register_gradient,
)
from eagerflow.autodiff.tape import GradientTape
from eagerflow.autodiff.variables import Storage, Variable, apply_gradient_descent
from eagerflow.tensor import stop_gradient

not_differentiable("VariableV2", "ReadVariableOp", "AssignVariableOp", "AssignAddVariableOp",
                   "AssignSubVariableOp", "ApplyGradientDescent")  # fmt: skip

__all__ = [
    "GRADIENTS",
    "ForwardAccumulator",
    "GradientCheckError",
    "GradientTape",
    "OpRecord",
    "Storage",
    "Variable",
    "apply_gradient_descent",
    "check_gradients",
    "custom_gradient",
    "forward_jacobian",
    "get_gradient",
    "not_differentiable",
    "register_gradient",
    "register_jvp",
    "stop_gradient",
]
