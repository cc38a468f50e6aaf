"""The line per chapter that ends an exercises run: "ch03: 4 attempted, 3 passed, 2 remaining".

What each exercise test touched is gathered here. Under pytest-xdist (``make test``) the tests
run in worker processes, which send it along with each report (``conftest.py``). This module
is a plugin that ``tests/conftest.py`` registers in every process, so the one that started the
workers gathers it there and writes the summary: that process never collects this folder, so it
never loads this folder's ``conftest.py``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DIFFICULTY = "★"  # an exercise's docstring starts with its difficulty: ★, ★★ or ★★★
BROKEN: dict[str, str] = {}  # chapter -> why its file does not import, said once per chapter


def reference_exercises(chapter: str) -> set[str]:
    """The exercises of ``chapter`` as shipped: the names the reference solutions define with
    a difficulty mark, read without running them. A reader who deletes a docstring or a
    whole exercise from their file still sees it counted as remaining."""
    path = ROOT / "exercises" / "solutions" / f"{chapter}.py"
    tree = ast.parse(path.read_text(encoding="utf8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.ClassDef)
        and (ast.get_docstring(node) or "").startswith(DIFFICULTY)
    }


@dataclass
class Outcome:
    """What one exercise test touched and how it ended."""

    chapter: str
    touched: set[str] = field(default_factory=set)  # exercises it took from the chapter
    not_attempted: str | None = None  # the stub it hit ("ch03.second_derivative")
    passed: bool = False
    ran: bool = False


OUTCOMES: dict[str, Outcome] = {}  # test id -> outcome, for the chapters' summary lines
CHAPTERS: dict[str, set[str]] = {}  # chapter -> its exercises, for the summary lines


def _outcome_from_a_worker(report: pytest.TestReport) -> Outcome | None:
    sent = getattr(report, "exercise", None)
    if sent is None:
        return None
    chapter = sent["chapter"]
    if chapter not in CHAPTERS:
        CHAPTERS[chapter] = reference_exercises(chapter)
    if sent["broken"]:
        BROKEN[chapter] = sent["broken"]
    outcome = OUTCOMES.setdefault(report.nodeid, Outcome(chapter))
    outcome.touched.update(sent["touched"])
    outcome.not_attempted = sent["not_attempted"] or outcome.not_attempted
    return outcome


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # (in the process that ran the test, merging what it sent changes nothing)
    outcome = _outcome_from_a_worker(report) or OUTCOMES.get(report.nodeid)
    if outcome is None:
        return
    if report.when == "call":
        outcome.ran = not report.skipped
        outcome.passed = report.passed
    elif report.failed:  # an error in setup or teardown
        outcome.ran, outcome.passed = True, False


def chapter_summaries(
    outcomes: list[Outcome], chapters: dict[str, set[str]] | None = None
) -> list[str]:
    """One line per chapter: "ch03: 4 attempted, 3 passed, 2 remaining", counting exercises.

    An exercise is attempted unless its stub was hit or none of its tests could run (they all
    hit another exercise's stub, or none ran); it has passed when every test that took it
    passed. ``chapters`` lists each chapter's exercises, so that one no test reached still
    counts as remaining.
    """
    lines = []
    for chapter in sorted({o.chapter for o in outcomes}):
        mine = [o for o in outcomes if o.chapter == chapter]
        stubs = {o.not_attempted.split(".", 1)[1].split(".")[0] for o in mine if o.not_attempted}
        exercises = set().union(*(o.touched for o in mine)) | stubs
        exercises |= (chapters or {}).get(chapter, set())
        if not exercises:
            continue
        attempted = passed = 0
        for name in exercises:
            tests = [o for o in mine if name in o.touched]
            if name in stubs or not any(o.ran for o in tests):
                continue
            attempted += 1
            passed += all(o.passed for o in tests)
        remaining = len(exercises) - passed
        lines.append(f"{chapter}: {attempted} attempted, {passed} passed, {remaining} remaining")
    return lines


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    lines = chapter_summaries(list(OUTCOMES.values()), CHAPTERS)
    if not lines:
        return
    terminalreporter.section("exercises")
    for chapter in sorted(BROKEN):
        terminalreporter.write_line(f"{chapter}: {BROKEN[chapter]}")
    for line in lines:
        terminalreporter.write_line(line)
    if not config.pluginmanager.hasplugin("timeout"):
        terminalreporter.write_line(
            "(pytest-timeout is not installed: an exercise whose loop never ends hangs the run; "
            "`make setup` installs it)"
        )
