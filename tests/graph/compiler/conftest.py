"""The compiler's tests run on both backends: numba's fused loops (when numba is installed,
as in the dev group) and the NumPy calls used without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from eagerflow.graph.compiler import numba_available

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def _jit_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """numba's compiled loops are cached in the repository's (git-ignored) build folder."""
    monkeypatch.setenv("EAGERFLOW_CACHE_DIR", str(ROOT / "build" / "jit-cache"))


BACKENDS = [
    pytest.param("numba", marks=pytest.mark.skipif(not numba_available(), reason="no numba")),
    "numpy",
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test using it runs once per backend (``EAGERFLOW_JIT_BACKEND``)."""
    monkeypatch.setenv("EAGERFLOW_JIT_BACKEND", request.param)
    return str(request.param)
