"""The compiler's tests run on both backends: numba's fused loops (when numba is installed,
as in the dev group) and the NumPy calls used without it. Compiled loops are cached where
users' are (``~/.cache/eagerflow/jit``): keyed by their source, so a cached loop is the
same loop, and a second run of the suite skips numba's compiling."""

from __future__ import annotations

import pytest

from eagerflow.graph.compiler import numba_available

BACKENDS = [
    pytest.param("numba", marks=pytest.mark.skipif(not numba_available(), reason="no numba")),
    "numpy",
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test using it runs once per backend (``EAGERFLOW_JIT_BACKEND``)."""
    monkeypatch.setenv("EAGERFLOW_JIT_BACKEND", request.param)
    return str(request.param)
