"""The exercise harness itself (conftest.py): what counts as "not attempted", the time limit,
and the summary per chapter. Each test runs some exercise tests in a subprocess, against a
folder of solutions with one exercise undone or done wrong."""

from __future__ import annotations

import ast
import os
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
    assert "ch03: 10 attempted, 10 passed, 1 remaining" in output, output


def test_the_summary_counts_exercises_not_tests(tmp_path: Path) -> None:
    wrong = "return ef.constant(0.0)"  # attempted, and wrong
    changes = [("second_derivative", wrong), ("jacobian_by_rows", STUB)]
    folder = exercises(tmp_path, {"ch03": changes})
    output = run(folder, "tests/exercises/test_ch03.py", "tests/exercises/test_ch15.py")
    assert "ch03: 10 attempted, 9 passed, 2 remaining" in output, output
    assert "ch15: 5 attempted, 5 passed, 0 remaining" in output, output
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
    folder = exercises(tmp_path, {"ch13": [("decode", indexing)]})
    output = run(folder, "tests/exercises/test_ch13.py", "-k", "decode")
    assert "too many indices for array" in output, output
    assert "(raised while ch13.decode ran, from line" in output, output
