"""How chapter exercises are tested.

A reader solves the stubs in `exercises/chNN.py`; `pytest -m chNN` runs that chapter's tests
against them. Set EAGERFLOW_EXERCISES to another folder (CI uses `exercises/solutions`) to test
the functions defined there instead.

A stub raises NotImplementedError. A test that hits one is reported as *skipped, not attempted
yet* rather than as an error: an untouched exercise is not a failure.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOT_ATTEMPTED = "not attempted yet"


def exercise_folder() -> Path:
    """The folder whose chNN.py files are under test."""
    return Path(os.environ.get("EAGERFLOW_EXERCISES", ROOT / "exercises")).resolve()


def load_chapter(chapter: str) -> ModuleType:
    """Import `chapter` (e.g. "ch03") from the exercise folder, once per test session."""
    name = f"eagerflow_exercises_{chapter}"
    if name in sys.modules:
        return sys.modules[name]
    path = exercise_folder() / f"{chapter}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load exercises from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Turn a stub's NotImplementedError into a skip that says what it means."""
    try:
        return (yield)
    except NotImplementedError as error:
        where = f" ({error})" if str(error) else ""
        pytest.skip(f"{NOT_ATTEMPTED}{where}")


@pytest.fixture
def chapter(request: pytest.FixtureRequest) -> ModuleType:
    """The exercise module of the requesting test file: ``test_ch03.py`` gets ``ch03``.

    Loading a chapter only defines its functions; tests call them in their own body, so a
    stub's NotImplementedError is raised (and reported as not attempted) inside the test.
    """
    return load_chapter(request.path.stem.removeprefix("test_"))
