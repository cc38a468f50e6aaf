"""What an op does is written once: in the docstring of the public function its ``@op``
decorator sits on (what ``help(ef.matmul)`` shows), and the registry row's ``doc`` is that
docstring. Only an op that no public function stands for is documented on its kernel."""

from __future__ import annotations

import inspect

import pytest

import eagerflow.graph  # noqa: F401  (importing graph registers its ops and autodiff's)
import eagerflow.tensor as ef
from eagerflow.tensor.registry import OPS

# Ops run by methods, by other ops or by ``where(condition)`` alone, not by a function of
# their own: their kernel's docstring is their doc.
DOCUMENTED_ON_THE_KERNEL = {
    "AssignAddVariableOp", "AssignSubVariableOp", "AssignVariableOp", "CustomGradient", "NoOp",
    "PartitionedCall", "ReadVariableOp", "VariableV2", "Where", "WriteSummary", "_Send", "_Recv",
}  # fmt: skip


def _kernel_doc(name: str) -> str | None:
    kernel = OPS[name].kernel
    if not getattr(kernel, "__module__", "").startswith("eagerflow."):
        return None  # NumPy's own function (np.add): its docstring is NumPy's, not ours
    return None if kernel.__doc__ is None else inspect.cleandoc(kernel.__doc__)


@pytest.mark.parametrize("name", sorted(OPS))  # (nn registers none)
def test_an_op_is_documented_once(name: str) -> None:
    doc, kernel_doc = OPS[name].doc, _kernel_doc(name)
    assert len(doc) > 10, f"{name} needs a docstring saying what it computes"
    if name in DOCUMENTED_ON_THE_KERNEL:
        assert kernel_doc == doc
    else:
        assert kernel_doc is None, (
            f"{name}'s kernel has a docstring besides its public function's: say what the op "
            "does once, in the public function's (how the kernel computes it: a comment)"
        )


def test_help_on_a_public_function_is_its_ops_doc() -> None:
    matmul = ef.get_op("MatMul")
    assert inspect.getdoc(ef.matmul) == matmul.doc and "rank >= 2" in matmul.doc
    assert matmul.kernel.__doc__ is None
