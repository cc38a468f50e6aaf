"""The exercise harness itself (conftest.py): what counts as "not attempted", the time limit,
and the summary per chapter. Each test runs some exercise tests in a subprocess, against a
folder of solutions with one exercise undone or done wrong."""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOLUTIONS = ROOT / "exercises" / "solutions"


def _replace_body(text: str, qualname: str, body: str) -> str:
    """``text`` with the body of function ``qualname`` (after its docstring) replaced."""
    tree = ast.parse(text)
    *outer, name = qualname.split(".")
    scope: list[ast.stmt] = tree.body
    for part in outer:
        scope = next(n for n in scope if isinstance(n, ast.ClassDef) and n.name == part).body
    node = next(n for n in scope if isinstance(n, ast.FunctionDef) and n.name == name)
    first = node.body[1] if ast.get_docstring(node) else node.body[0]
    lines = text.splitlines(keepends=True)
    indent = " " * first.col_offset
    new = "".join(f"{indent}{line}\n" for line in body.splitlines())
    return "".join(lines[: first.lineno - 1]) + new + "".join(lines[node.end_lineno :])


def exercises(tmp_path: Path, changes: dict[str, list[tuple[str, str]]]) -> Path:
    """A folder of the reference solutions, with each (function, new body) of ``changes``."""
    for path in SOLUTIONS.glob("ch[0-9][0-9].py"):
        text = path.read_text()
        for qualname, body in changes.get(path.stem, []):
            text = _replace_body(text, qualname, body)
        (tmp_path / path.name).write_text(text)
    return tmp_path


def run(folder: Path, *args: str, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", *args],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
        env={**os.environ, "EAGERFLOW_EXERCISES": str(folder), "COLUMNS": "1000", **env},
    )  # fmt: skip
    return result.stdout + result.stderr


STUB = "raise NotImplementedError"


def test_a_stub_is_not_attempted_and_named(tmp_path: Path) -> None:
    folder = exercises(tmp_path, {"ch03": [("second_derivative", STUB)]})
    output = run(folder, "tests/exercises/test_ch03.py")
    assert "not attempted yet: ch03.second_derivative" in output, output
    assert "failed" not in output.splitlines()[-1], output
    assert "ch03: 7 attempted, 7 passed, 1 remaining" in output, output


def test_the_summary_counts_exercises_not_tests(tmp_path: Path) -> None:
    wrong = "return ef.constant(0.0)"  # attempted, and wrong
    changes = [("second_derivative", wrong), ("jacobian_by_rows", STUB)]
    folder = exercises(tmp_path, {"ch03": changes})
    output = run(folder, "tests/exercises/test_ch03.py", "tests/exercises/test_ch17.py")
    assert "ch03: 7 attempted, 6 passed, 2 remaining" in output, output
    assert "ch17: 5 attempted, 5 passed, 0 remaining" in output, output
    assert "ch01:" not in output, "only chapters whose tests ran"


def test_a_framework_not_implemented_error_is_a_failure(tmp_path: Path) -> None:
    # a reader who writes PyTorch's `forward` instead of `call`
    call = '    def call(self, inputs: Any) -> Tensor:\n        """Scale and shift'
    text = (SOLUTIONS / "ch11.py").read_text().replace(call, call.replace("call", "forward"))
    assert "def forward" in text
    folder = exercises(tmp_path, {})
    (folder / "ch11.py").write_text(text)
    output = run(folder, "tests/exercises/test_ch11.py", "-k", "feature_scale")
    assert "not attempted yet" not in output, output
    assert "FeatureScale defines `forward`, rename it to `call`" in output, output
    assert "not by an exercise's stub" in output, output
    assert " failed" in output.splitlines()[-1], output


def test_a_not_implemented_error_of_the_readers_own_is_a_failure(tmp_path: Path) -> None:
    own = 'raise NotImplementedError("only for 2 x 2 matrices")'
    folder = exercises(tmp_path, {"ch02": [("power_iteration", own)]})
    output = run(folder, "tests/exercises/test_ch02.py", "-k", "power_iteration")
    assert "not attempted yet" not in output, output
    assert " failed" in output.splitlines()[-1] and "passed" not in output.splitlines()[-1], output


def test_a_loop_that_never_ends_fails_and_names_the_exercise(tmp_path: Path) -> None:
    pytest.importorskip("pytest_timeout")
    never_converging = """v = ef.ones((a.shape[0], 1), ef.float64)
steps = 0
while True:
    w = ef.matmul(a, v)
    new = w / ef.sqrt(ef.reduce_sum(w * w))
    steps += 1
    change = float(ef.reduce_max(ef.abs(new - v)))  # v is never updated: change stays > 0
    if change < tol:
        return float(ef.sqrt(ef.reduce_sum(w * w))), steps"""
    folder = exercises(tmp_path, {"ch02": [("power_iteration", never_converging)]})
    test = "tests/exercises/test_ch02.py::test_power_iteration"
    output = run(folder, test, EAGERFLOW_EXERCISE_TIMEOUT="1")
    assert "ch02.power_iteration was still running at line" in output, output
    assert "does a loop never end?" in output, output
    assert "1 failed" in output.splitlines()[-1], output


def test_an_error_names_the_exercise_it_came_from(tmp_path: Path) -> None:
    indexing = "return [str(n) for n in np.asarray(logits)[:, :, 0]]"  # too many indices
    folder = exercises(tmp_path, {"ch15": [("decode", indexing)]})
    output = run(folder, "tests/exercises/test_ch15.py", "-k", "decode")
    assert "too many indices for array" in output, output
    assert "(raised while ch15.decode ran, from line" in output, output


# --- the command a reader runs ----------------------------------------------------------------
PRINTED = re.compile(r"\.venv/bin/pytest -m (ch\d\d)")


def printed_commands() -> dict[str, set[str]]:
    """Every chapter command the README, the site and the exercise files print, by file."""
    texts = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "site" / "docs").rglob("*.md")]
    texts += (ROOT / "exercises").glob("ch[0-9][0-9].py")
    found = {str(p.relative_to(ROOT)): set(PRINTED.findall(p.read_text())) for p in texts}
    return {path: chapters for path, chapters in found.items() if chapters}


def test_every_printed_command_names_a_chapter_with_tests() -> None:
    printed = printed_commands()
    assert "README.md" in printed and "site/docs/index.md" in printed, printed
    for path, chapters in printed.items():
        for chapter in chapters:
            assert (ROOT / "tests" / "exercises" / f"test_{chapter}.py").is_file(), (path, chapter)


def test_the_readers_command_runs_as_printed() -> None:
    """`.venv/bin/pytest -m ch01`, as the README and chapter 1 print it, from the root of a
    checkout: it collects only chapter 1's tests and ends with the chapter's summary."""
    pytest_script = ROOT / ".venv" / "bin" / "pytest"
    if not pytest_script.exists() and not os.environ.get("CI"):
        pytest.skip("no .venv here: `make setup` makes the one the command names")
    command = ".venv/bin/pytest -m ch01"
    assert "ch01" in printed_commands()["site/docs/chapters/01-tensors.md"]
    env = {k: v for k, v in os.environ.items() if k != "EAGERFLOW_EXERCISES"}
    result = subprocess.run(
        shlex.split(command), capture_output=True, text=True, cwd=ROOT, timeout=120, env=env
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    ran = set(re.findall(r"^(tests/\S+\.py) ", output, flags=re.MULTILINE))
    assert ran == {"tests/exercises/test_ch01.py"}, output  # nothing else collected
    assert re.search(r"^ch01: \d+ attempted, \d+ passed, \d+ remaining$", output, re.M), output


def test_a_chapter_that_does_not_import_is_one_line_and_still_summed(tmp_path: Path) -> None:
    folder = exercises(tmp_path, {})
    with (folder / "ch03.py").open("a") as file:
        file.write("\ndef unfinished(:\n")
    output = run(folder, "-m", "ch03")
    assert "ch03.py does not import: SyntaxError at line" in output, output
    assert "ch03: 0 attempted, 0 passed, 8 remaining" in output, output
    assert "Traceback" not in output and len(output.splitlines()) < 80, output


def test_exercises_are_counted_from_the_shipped_list_and_tracebacks_are_short(
    tmp_path: Path,
) -> None:
    folder = exercises(tmp_path, {"ch03": [("second_derivative", "return 1 / 0")]})
    text = (folder / "ch03.py").read_text()
    docstring = '    """★★ f\'\'(x), the second derivative of a scalar function'
    assert docstring in text
    start = text.index(docstring)
    end = text.index('"""', start + len(docstring)) + 3
    (folder / "ch03.py").write_text(text[:start] + text[end:])  # the reader deleted it
    output = run(folder, "-m", "ch03")
    assert "ch03: 8 attempted, 7 passed, 1 remaining" in output, output  # not 10 of 10
    assert "ZeroDivisionError" in output, output
    assert "from two nested tapes" not in output, "a failure printed the exercise's docstring"


def test_a_track_exercise_waits_for_the_earlier_piece_it_builds_on(tmp_path: Path) -> None:
    # the capstone takes the reader's MiniGraph: while its run_op is a stub, the capstone's
    # tests are skipped naming it, and chapter 20 counts them as not attempted, not failed
    folder = exercises(tmp_path, {"ch07": [("MiniGraph.run_op", STUB)]})
    output = run(folder, "tests/exercises/test_ch20.py", "-k", "train or export")
    assert "needs ch07.MiniGraph first" in output, output
    assert re.search(r"^ch20: 0 attempted, 0 passed, 3 remaining$", output, re.M), output
    assert "failed" not in output, output
