"""Every exercise is solvable and every exercise test can fail.

Runs the exercise tests twice in a subprocess: against the reference solutions (every test
must pass) and against pristine stubs (every test must be reported as not attempted). The
pristine stubs come from git's HEAD when the reader has started editing `exercises/`, so
solving exercises never breaks this test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXERCISES = ROOT / "exercises"
CHAPTERS = sorted(p.stem for p in EXERCISES.glob("ch[0-9][0-9].py"))


def run_exercise_tests(folder: Path) -> str:
    # wide COLUMNS: pytest -v cuts lines to the terminal width, and with it the skip reason
    env = {**os.environ, "EAGERFLOW_EXERCISES": str(folder), "COLUMNS": "1000"}
    tests = [str(ROOT / "tests" / "exercises" / f"test_{c}.py") for c in CHAPTERS]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", *tests],
        capture_output=True, text=True, env=env, cwd=ROOT, timeout=600,
    )  # fmt: skip
    return result.stdout + result.stderr


def counts(output: str) -> dict[str, int]:
    summary = output.strip().splitlines()[-1]
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", summary)}


def pristine_stubs(tmp_path: Path) -> Path:
    for chapter in CHAPTERS:
        relative = f"exercises/{chapter}.py"
        shown = subprocess.run(["git", "-C", str(ROOT), "show", f"HEAD:{relative}"],
                               capture_output=True, text=True)  # fmt: skip
        text = shown.stdout if shown.returncode == 0 else (ROOT / relative).read_text()
        (tmp_path / f"{chapter}.py").write_text(text)
    return tmp_path


def test_every_chapter_has_exercises_and_tests() -> None:
    assert len(CHAPTERS) == 14, CHAPTERS
    for chapter in CHAPTERS:
        assert (EXERCISES / "solutions" / f"{chapter}.py").exists(), chapter
        assert (ROOT / "tests" / "exercises" / f"test_{chapter}.py").exists(), chapter


@pytest.mark.slow
def test_reference_solutions_pass_every_exercise_test() -> None:
    output = run_exercise_tests(EXERCISES / "solutions")
    found = counts(output)
    assert found.get("passed", 0) >= 3 * len(CHAPTERS), output
    assert set(found) == {"passed"}, output


@pytest.mark.slow
def test_untouched_stubs_are_reported_as_not_attempted(tmp_path: Path) -> None:
    output = run_exercise_tests(pristine_stubs(tmp_path))
    found = counts(output)
    assert found.get("skipped", 0) >= 3 * len(CHAPTERS), output
    assert set(found) == {"skipped"}, output
    skipped = [line for line in output.splitlines() if " SKIPPED" in line]
    assert len(skipped) == found["skipped"], output
    assert all("not attempted yet" in line for line in skipped), output
