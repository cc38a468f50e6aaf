"""How chapter exercises are tested.

A reader solves the stubs in `exercises/chNN.py`; `pytest -m chNN` runs that chapter's tests
against them. Set EAGERFLOW_EXERCISES to another folder (CI uses `exercises/solutions`) to test
the functions defined there instead.

A stub raises NotImplementedError. A test that hits one is reported as *skipped, not attempted
yet: chNN.name* rather than as an error: an untouched exercise is not a failure. Only the stub's
own bare ``raise NotImplementedError`` counts: one raised anywhere else (the framework's
``Layer.call`` when a layer defines ``forward`` instead, say) is a failure that says where it
came from.

Each test has a time limit (with pytest-timeout installed, as the dev group does), so a loop
that never ends fails with a message naming the exercise instead of hanging the run. The run
ends with one line per chapter: how many of its exercises were attempted and passed, and how
many remain.
"""

from __future__ import annotations

import importlib.util
import linecache
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType, ModuleType, TracebackType
from typing import Any

import pytest

# (its hooks are a plugin that tests/conftest.py registers: they gather and write the summary)
from exercise_summary import BROKEN, CHAPTERS, OUTCOMES, ROOT, Outcome, reference_exercises
from track import STUB_LINE, is_stub

NOT_ATTEMPTED = "not attempted yet"
# seconds per exercise test (the slowest takes well under one); the variable is for the tests
TIMEOUT = float(os.environ.get("EAGERFLOW_EXERCISE_TIMEOUT", "10"))
CHAPTER_FILE = re.compile(r"ch\d\d")


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
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # (so the next test does not get a half-run module)
        raise
    return module


def why_it_does_not_import(chapter: str, error: BaseException) -> str:
    """One line: "exercises/ch03.py does not import: SyntaxError at line 12: invalid syntax"."""
    path = exercise_folder() / f"{chapter}.py"
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    if isinstance(error, SyntaxError):
        what = f"{type(error).__name__} at line {error.lineno}: {error.msg}"
    else:
        where = _exercise_frame(error.__traceback__)
        at = f" at line {where[2]}" if where is not None else ""
        what = f"{type(error).__name__}{at}: {error}"
    return f"{shown} does not import: {what}"


# --- which exercise a frame belongs to ------------------------------------------------------------
def _exercise_frame(tb: TracebackType | None) -> tuple[str, FrameType, int] | None:
    """The innermost frame of ``tb`` that runs code of an exercise file, with its chapter and
    line number: ("ch08", frame, 42)."""
    folder = exercise_folder()
    found = None
    while tb is not None:
        path = Path(tb.tb_frame.f_code.co_filename)
        if CHAPTER_FILE.fullmatch(path.stem) and path.parent.resolve() == folder:
            found = (path.stem, tb.tb_frame, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _innermost(tb: TracebackType | None) -> TracebackType | None:
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb


def _stub_name(error: BaseException) -> str | None:
    """``"ch03.second_derivative"`` when ``error`` was raised by a stub itself: the innermost
    frame is in an exercise file, at a bare ``raise NotImplementedError``. Else None."""
    last = _innermost(error.__traceback__)
    if last is None:
        return None
    where = _exercise_frame(last)  # (a one-frame traceback: is the innermost frame a chapter's?)
    if where is None:
        return None
    chapter, frame, line = where
    if not STUB_LINE.fullmatch(linecache.getline(frame.f_code.co_filename, line).strip()):
        return None
    return f"{chapter}.{frame.f_code.co_qualname}"


def _not_a_stub(error: NotImplementedError) -> str:
    last = _innermost(error.__traceback__)
    where = ""
    if last is not None:
        code = last.tb_frame.f_code
        where = f" by {code.co_qualname} ({code.co_filename}, line {last.tb_lineno})"
    message = (
        f"NotImplementedError raised{where}, not by an exercise's stub: this is a failure, not "
        "an exercise left for later (only a stub's own `raise NotImplementedError` means "
        "'not attempted')."
    )
    return message


# --- running a test -------------------------------------------------------------------------------
class Chapter:
    """A chapter's exercise module, as a test sees it: every exercise it takes is noted."""

    def __init__(self, module: ModuleType, outcome: Outcome) -> None:
        self._module = module
        self._outcome = outcome

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if name in CHAPTERS[self._outcome.chapter]:
            self._outcome.touched.add(name)
        return value

    def __repr__(self) -> str:
        return f"<exercises {self._module.__file__}>"


def _name_the_exercise(error: Exception, outcome: Outcome | None) -> None:
    """Add a note to ``error`` saying where in the exercises it came from: NumPy's "too many
    indices for array" or Python's "zip() argument 2 is longer than argument 1" say what
    went wrong, not in which exercise."""
    where = _exercise_frame(error.__traceback__)
    if where is not None:
        chapter, frame, line = where
        error.add_note(
            f"(raised while {chapter}.{frame.f_code.co_qualname} ran, from line {line} of "
            f"{frame.f_code.co_filename})"
        )
    elif outcome is not None and outcome.touched:
        names = ", ".join(f"{outcome.chapter}.{n}" for n in sorted(outcome.touched))
        error.add_note(f"(raised while testing {names})")


def _timed_out(failure: BaseException) -> bool:
    return str(failure).startswith("Timeout (>")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Turn a stub's NotImplementedError into a skip that names the exercise; say which
    exercise was running when a test runs out of time."""
    try:
        return (yield)
    except NotImplementedError as error:
        stub = _stub_name(error)
        if stub is None:
            error.add_note(_not_a_stub(error))
            raise
        outcome = OUTCOMES.get(item.nodeid)
        if outcome is not None:
            outcome.not_attempted = stub
        pytest.skip(f"{NOT_ATTEMPTED}: {stub}")
    except (AssertionError, pytest.skip.Exception):
        raise
    except Exception as error:  # an error, not a wrong answer: say which exercise ran into it
        _name_the_exercise(error, OUTCOMES.get(item.nodeid))
        raise
    except pytest.fail.Exception as failure:
        if not _timed_out(failure):
            raise
        where = _exercise_frame(failure.__traceback__)
        outcome = OUTCOMES.get(item.nodeid)
        if where is not None:
            chapter, frame, line = where
            what = f"{chapter}.{frame.f_code.co_qualname} was still running"
            what += f" at line {line} of {frame.f_code.co_filename}"
        elif outcome is not None and outcome.touched:
            names = ", ".join(f"{outcome.chapter}.{n}" for n in sorted(outcome.touched))
            what = f"the test of {names} was still running (in what your code built)"
        else:
            raise
        pytest.fail(
            f"{what} after {TIMEOUT:g} s: does a loop never end? (Every exercise test has this "
            "time limit; the solutions take well under a second.)",
            pytrace=False,
        )


@pytest.fixture
def chapter(request: pytest.FixtureRequest) -> Chapter:
    """The exercise module of the requesting test file: ``test_ch03.py`` gets ``ch03``.

    Loading a chapter only defines its functions; tests call them in their own body, so a
    stub's NotImplementedError is raised (and reported as not attempted) inside the test.
    """
    name = request.path.stem.removeprefix("test_")
    outcome = OUTCOMES.setdefault(request.node.nodeid, Outcome(name))
    if name not in CHAPTERS:
        CHAPTERS[name] = reference_exercises(name)
    if name in BROKEN:
        pytest.fail(BROKEN[name], pytrace=False)
    try:
        module = load_chapter(name)
    except Exception as error:  # a syntax error, a bad import: one line, not a traceback
        BROKEN[name] = why_it_does_not_import(name, error)
        pytest.fail(BROKEN[name], pytrace=False)
    return Chapter(module, outcome)


# --- a track: exercises that build on earlier ones ------------------------------------------------
@pytest.fixture
def earlier_piece() -> Any:
    """``earlier_piece("ch07", "MiniGraph")``: the reader's own piece from an earlier chapter,
    for an exercise that builds on it. While that piece is a stub, or its file does not
    import, the test is skipped saying so ("needs ch07.MiniGraph first"): the exercise under
    test is not wrong, it is waiting. (Loaded as the chapter's own tests load it, but not
    counted as an exercise of the chapter under test.)"""

    def get(chapter: str, name: str) -> Any:
        needs = f"needs {chapter}.{name} first"
        try:
            module = load_chapter(chapter)
        except Exception as error:
            pytest.skip(f"{needs}: {why_it_does_not_import(chapter, error)}")
        piece = getattr(module, name, None)
        if piece is None:
            pytest.skip(f"{needs}: {module.__file__} has no {name}")
        if is_stub(piece):
            pytest.skip(f"{needs} (this exercise builds on it; it is not attempted yet)")
        return piece

    return get


# --- time limits ----------------------------------------------------------------------------------
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Give every test of an exercise a time limit, if pytest-timeout is installed (the dev
    group has it): the chapters' tests, and the planted mistakes run through them."""
    if not config.pluginmanager.hasplugin("timeout"):
        return
    here = Path(__file__).parent
    for item in items:
        limited = CHAPTER_FILE.fullmatch(item.path.stem.removeprefix("test_")) or (
            item.path.stem == "test_planted_mistakes"
        )
        if item.path.parent == here and limited and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(TIMEOUT))


# --- the summary ----------------------------------------------------------------------------------
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[pytest.TestReport]:
    """Send what an exercise test touched along with its report: with pytest-xdist (make
    test), tests run in worker processes, and the summary is written by the one that started
    them (pytest serializes a report's attributes between them)."""
    report = yield
    outcome = OUTCOMES.get(item.nodeid)
    if outcome is not None:
        report.exercise = {
            "chapter": outcome.chapter,
            "touched": sorted(outcome.touched),
            "not_attempted": outcome.not_attempted,
            "broken": BROKEN.get(outcome.chapter),
        }
    return report
