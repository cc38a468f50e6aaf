"""Shared test set-up. This folder is on sys.path (pytest's default import mode puts the root
conftest's folder there), so tests can `import op_cases`."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import settings
from threadpoolctl import threadpool_limits

import eagerflow.tensor as ef
from eagerflow.graph import reset_default_graph
from eagerflow.nn import Layer

# Hypothesis: the same examples on every CI run (a red run means a change broke something, not
# that a new example was drawn), fresh ones on a developer's machine, and many more with
# HYPOTHESIS_PROFILE=explore. Loaded here, before any test module makes its settings.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", max_examples=1000)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default")
)

# One BLAS thread, as the benchmarks and the site's build run: on the suite's small arrays a
# second OpenBLAS thread only spins (the suite took ~10% more CPU with two). The variables
# reach the subprocesses the tests start (exercise runs, notebook kernels, builds).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")
threadpool_limits(1, user_api="blas")

EXERCISE_TESTS = Path(__file__).parent / "exercises"
# `-m ch03`, `-m "ch03 or ch05"`: the command a reader runs for a chapter's exercises
CHAPTERS_ONLY = re.compile(r"ch\d\d(\s+or\s+ch\d\d)*")


def chapters_selected(config: pytest.Config) -> set[str] | None:
    """The chapters a ``-m`` expression selects when it names nothing else, else None."""
    expression = (config.getoption("markexpr", "") or "").strip()
    if not CHAPTERS_ONLY.fullmatch(expression):
        return None
    return set(re.findall(r"ch\d\d", expression))


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """``pytest -m ch03`` collects only chapter 3's test file, not the 3,500 tests it would
    deselect (a few seconds instead of fifteen): whatever else it would find is skipped
    before it is imported."""
    chapters = chapters_selected(config)
    if chapters is None:
        return None
    if collection_path == EXERCISE_TESTS or collection_path in EXERCISE_TESTS.parents:
        return None  # a folder on the way to the chapters' tests
    if collection_path.parent == EXERCISE_TESTS and collection_path.name == "conftest.py":
        return None
    wanted = {f"test_{chapter}.py" for chapter in chapters}
    return not (collection_path.parent == EXERCISE_TESTS and collection_path.name in wanted)


def pytest_configure(config: pytest.Config) -> None:
    """A reader's chapter run shows short tracebacks: a line per frame, not every frame's
    whole function (an exercise's fifty-line docstring with it). ``--tb`` still decides.

    The exercises' summary (``exercises/exercise_summary.py``) is a plugin registered here:
    under pytest-xdist the process that starts the workers collects nothing, so it never loads
    ``exercises/conftest.py``, and it writes the chapters' lines from what the workers'
    reports carry."""
    if chapters_selected(config) is not None and config.option.tbstyle == "auto":
        config.option.tbstyle = "short"
    summary = _exercise_summary()
    if not config.pluginmanager.is_registered(summary):
        config.pluginmanager.register(summary, "eagerflow-exercise-summary")


def _exercise_summary() -> ModuleType:
    """``exercises/exercise_summary.py``, imported once under its own name, so that the
    exercises' conftest (which imports it too) and the plugin share its state."""
    name = "exercise_summary"
    if name in sys.modules:
        return sys.modules[name]
    path = Path(__file__).parent / "exercises" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (dataclasses look their module up there)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def _fresh_global_state() -> None:
    """Every test starts from the same process-wide state, whatever ran before it: random ops
    seeded with 0, an empty default graph, and layer names counted afresh (the first Dense is
    ``dense``). A test that needs another seed sets it itself."""
    ef.set_seed(0)
    reset_default_graph()
    Layer.reset_names()
