"""packages/distribute/README.md keeps its word: its train.py runs, with the command it prints,
and prints the same weights on every task."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py", reason="the [mpi] extra (mpi4py, mpich) is not installed")
README = Path(__file__).resolve().parents[2] / "packages" / "distribute" / "README.md"


@pytest.mark.timeout(90)
def test_the_readmes_train_py_runs_as_printed(tmp_path):
    text = README.read_text(encoding="utf-8")
    (tmp_path / "train.py").write_text(re.search(r"```python\n(.*?)```", text, re.S)[1])
    printed = "python -m eagerflow.distribute.run -n 2 train.py"
    assert f"```\n{printed}\n```" in text
    command = [sys.executable, *printed.split()[1:]]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    found = re.findall(r"\[worker (\d)\] task \1 of 2: weights (\S+)", done.stdout)
    assert sorted(rank for rank, _ in found) == ["0", "1"], done.stdout
    assert found[0][1] == found[1][1]


def test_the_files_the_readme_names_exist():
    root = README.parents[2]
    named = re.findall(
        r"`((?:tests|packages|site)/[\w/.]+\.py)`", README.read_text(encoding="utf-8")
    )
    assert named and all((root / path).is_file() for path in named), named
