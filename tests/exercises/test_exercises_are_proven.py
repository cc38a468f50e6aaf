"""Every exercise is solvable and every exercise test can fail.

Runs the exercise tests twice in a subprocess: against the reference solutions (every test
must pass) and against pristine stubs (every test must be reported as not attempted). The
pristine stubs come from git's HEAD when the reader has started editing `exercises/`, so
solving exercises never breaks this test.
"""

from __future__ import annotations

import ast
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
    # one exercise file per chapter page (site/docs/chapters/NN-name.md), and no other
    pages = sorted(f"ch{p.name[:2]}" for p in (ROOT / "site/docs/chapters").glob("[0-9][0-9]-*.md"))
    assert len(CHAPTERS) >= 16 and pages == CHAPTERS, (CHAPTERS, pages)
    for chapter in CHAPTERS:
        assert (EXERCISES / "solutions" / f"{chapter}.py").exists(), chapter
        assert (ROOT / "tests" / "exercises" / f"test_{chapter}.py").exists(), chapter


@pytest.mark.slow
def test_reference_solutions_pass_every_exercise_test() -> None:
    output = run_exercise_tests(EXERCISES / "solutions")
    found = counts(output)
    assert found.get("passed", 0) >= 3 * len(CHAPTERS), output
    assert set(found) == {"passed"}, output
    for chapter in CHAPTERS:  # the summary, one line per chapter
        assert re.search(rf"^{chapter}: (\d+) attempted, \1 passed, 0 remaining$", output, re.M), (
            output
        )


@pytest.mark.slow
def test_untouched_stubs_are_reported_as_not_attempted(tmp_path: Path) -> None:
    output = run_exercise_tests(pristine_stubs(tmp_path))
    found = counts(output)
    assert found.get("skipped", 0) >= 3 * len(CHAPTERS), output
    assert set(found) == {"skipped"}, output
    skipped = [line for line in output.splitlines() if " SKIPPED" in line]
    assert len(skipped) == found["skipped"], output
    assert all(re.search(r"not attempted yet: ch\d\d\.\w", line) for line in skipped), output
    for chapter in CHAPTERS:
        assert re.search(
            rf"^{chapter}: 0 attempted, 0 passed, [1-9]\d* remaining$", output, re.M
        ), output


def _stubs(path: Path) -> dict[str, ast.FunctionDef | ast.ClassDef]:
    """The exercises of a chapter file: its functions and classes with a stub in them."""

    def is_stub(node: ast.AST) -> bool:
        return any(
            isinstance(n, ast.Raise) and isinstance(n.exc, ast.Name)
            and n.exc.id == "NotImplementedError"
            for n in ast.walk(node)
        )  # fmt: skip

    tree = ast.parse(path.read_text())
    return {
        n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef) and is_stub(n)
    }


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_has_a_difficulty_and_hints_in_levels(chapter: str) -> None:
    tree = ast.parse((EXERCISES / f"{chapter}.py").read_text())
    exercises = _stubs(EXERCISES / f"{chapter}.py")
    assert exercises, chapter
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef | ast.ClassDef):
            continue
        doc = ast.get_docstring(node) or ""
        marked = re.match(r"(★{1,3}) \S", doc)
        if node.name not in exercises:
            assert not doc.startswith("★"), f"{chapter}.{node.name} is given, not an exercise"
            continue
        assert marked, f"{chapter}.{node.name}: its docstring should start with ★, ★★ or ★★★"
        docs = [
            ast.get_docstring(n) or ""
            for n in ast.walk(node)
            if isinstance(n, ast.FunctionDef | ast.ClassDef)
        ]
        levels = [int(n) for d in docs for n in re.findall(r"^ *Hint (\d):$", d, re.M)]
        assert levels in ([1, 2], [1, 2, 3]), (
            f"{chapter}.{node.name}: expected hints 'Hint 1:', 'Hint 2:' (and 'Hint 3:'), "
            f"found levels {levels}"
        )
        assert not any(re.search(r"^ *Hint:$", d, re.M) for d in docs), node.name


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_solutions_share_the_stubs_docstrings(chapter: str) -> None:
    solutions = _docstrings(EXERCISES / "solutions" / f"{chapter}.py")
    for name, doc in _docstrings(EXERCISES / f"{chapter}.py").items():
        if name in solutions:  # a solution may keep only the first line
            assert solutions[name] in (doc, doc.split("\n", 1)[0]), (
                f"the docstring of {chapter}.{name} differs between the stub and the solution"
            )


def _docstrings(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            found[node.name] = ast.get_docstring(node) or ""
            for inner in node.body if isinstance(node, ast.ClassDef) else []:
                if isinstance(inner, ast.FunctionDef):
                    found[f"{node.name}.{inner.name}"] = ast.get_docstring(inner) or ""
    return found
