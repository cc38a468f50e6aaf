"""The developer tools agree with CI: the pre-commit hooks run exactly `make lint`'s checks."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def lint_commands() -> list[str]:
    """The commands of the Makefile's ``lint`` recipe, ``$(BIN)`` spelled out."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^lint: .*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
    assert recipe is not None, "the Makefile has no lint recipe"
    lines = [line.strip() for line in recipe.group(1).splitlines()]
    return [line.replace("$(BIN)", ".venv/bin").removesuffix(" .") for line in lines]


def hook_entries() -> list[str]:
    text = (ROOT / ".pre-commit-config.yaml").read_text()
    return re.findall(r"^\s+entry: (.+)$", text, re.MULTILINE)


def test_pre_commit_runs_the_lint_recipe() -> None:
    assert hook_entries() == lint_commands()


def test_pre_commit_config_is_valid() -> None:
    tool = shutil.which("pre-commit", path=str(ROOT / ".venv" / "bin"))
    if tool is None:
        pytest.skip("pre-commit is not installed (`make setup` installs it)")
    result = subprocess.run(
        [tool, "validate-config", ".pre-commit-config.yaml"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_pre_commit_install_as_contributing_prints_it(tmp_path: Path) -> None:
    """`.venv/bin/pre-commit install`, run in a checkout, puts the hook in place."""
    command = ".venv/bin/pre-commit install"
    assert command in (ROOT / "CONTRIBUTING.md").read_text()
    tool = ROOT / ".venv" / "bin" / "pre-commit"
    if not tool.exists():
        pytest.skip("pre-commit is not installed (`make setup` installs it)")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)
    shutil.copy(ROOT / ".pre-commit-config.yaml", tmp_path)
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    result = subprocess.run(
        shlex.split(command), cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / ".git" / "hooks" / "pre-commit").exists()
