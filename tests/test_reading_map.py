"""The maps of the code keep their word: every path and name they cite exists.

``site/docs/reading-the-code.md``, ``ARCHITECTURE.md`` and ``CONTRIBUTING.md`` tell a reader
where each thing lives. A table row names files (full paths, or bare names in the folder of
a path the row gives) and the things to look for in them: each such name must be defined in
one of the row's files, so that a moved function or a renamed file fails here rather than on
a reader. Prose may cite a file by its bare name: it must exist somewhere in the packages.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAPS = ["site/docs/reading-the-code.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
SOURCES = sorted(ROOT.glob("packages/*/src/eagerflow/**/*.py"))
TICKED = re.compile(r"`([^`]+)`")
NAME = re.compile(r"[A-Za-z_][\w.]*")
OP_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")


def existing_maps() -> list[str]:
    return [m for m in MAPS if (ROOT / m).exists()]


@cache
def defined_names(path: Path) -> frozenset[str]:
    """Every name ``path`` defines or imports, at any depth (functions, classes, methods,
    assigned and annotated names, arguments' names) and the strings it registers ops under."""
    tree = ast.parse(path.read_text(encoding="utf8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):  # what it imports is there to look at too
            names.add((node.asname or node.name).split(".")[-1])
        elif isinstance(node, ast.Constant) and OP_NAME.fullmatch(str(node.value)):
            names.add(node.value)  # an op's name, as it is registered: "MatMul"
    return frozenset(names)


def rows(text: str) -> list[str]:
    """The body rows of the Markdown tables in ``text``."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    return [line for line in lines if not re.fullmatch(r"\|[\s|:-]+\|", line)]


def row_files(row: str) -> tuple[list[Path], list[str]]:
    """The files a row cites (a folder stands for its .py files), and the problems found."""
    ticked = TICKED.findall(row)
    folders: list[Path] = []
    files: list[Path] = []
    problems = []
    for token in ticked:
        if token.startswith("packages/"):
            path = ROOT / token
            if not path.exists():
                problems.append(f"{token} does not exist")
            elif path.is_dir():
                folders.append(path)
                files += sorted(path.rglob("*.py"))
            else:
                folders.append(path.parent)
                files.append(path)
    for token in ticked:  # `draw.py`, `export/graph_def.py`: beside a path the row gives
        if re.fullmatch(r"[\w/]+(\.py|/)", token) and not token.startswith("packages/"):
            near = [p for f in folders for p in (f, *f.parents) if p.is_relative_to(ROOT)]
            found = [p / token for p in near if (p / token).exists()]
            if not found:
                problems.append(f"{token} is in none of the row's folders")
            files += [f for f in found[:1] if f.is_file()]
            files += sorted(found[0].rglob("*.py")) if found and found[0].is_dir() else []
    return files, problems


def looked_for(row: str) -> list[str]:
    """The names a row tells the reader to look for: ticked identifiers, calls without their
    arguments (``to_mermaid(values=True)``), not paths, not TensorFlow's own names."""
    names = []
    for token in TICKED.findall(row):
        token = token.split("(")[0].strip()
        if "/" in token or token.endswith(".py") or token.startswith(("tf.", "eagerflow")):
            continue
        if NAME.fullmatch(token) and not token.startswith('"'):
            names.append(token)
    return names


def row_problems(row: str) -> list[str]:
    files, problems = row_files(row)
    if not files:
        return problems
    defined = frozenset().union(*(defined_names(f) for f in files if f.suffix == ".py"))
    for name in looked_for(row):
        if name.split(".")[-1] not in defined:
            problems.append(f"`{name}` is defined in none of the row's files")
    return problems


@pytest.mark.parametrize("page", MAPS)
def test_every_row_of_the_map_names_what_is_there(page: str) -> None:
    if not (ROOT / page).exists():
        pytest.skip(f"{page} is not written yet")
    text = (ROOT / page).read_text(encoding="utf8")
    found = {row[:60]: row_problems(row) for row in rows(text)}
    wrong = {row: problems for row, problems in found.items() if problems}
    assert not wrong, f"{page}: {wrong}"


@pytest.mark.parametrize("page", MAPS)
def test_every_file_the_prose_names_exists(page: str) -> None:
    if not (ROOT / page).exists():
        pytest.skip(f"{page} is not written yet")
    text = (ROOT / page).read_text(encoding="utf8")
    bare = {path.name for path in SOURCES}
    cited = TICKED.findall(text)
    missing = [t for t in cited if t.startswith("packages/") and not (ROOT / t).exists()]
    missing += [t for t in cited if re.fullmatch(r"\w+\.py", t) and t not in bare]
    assert not missing, f"{page} names files that are not there: {missing}"


def test_the_checker_finds_a_moved_name(tmp_path: Path) -> None:
    row = (
        "| x | `packages/tensor/src/eagerflow/tensor/math_ops.py` | `matmul`, `no_such_thing`, "
        "`nope.py` |"
    )
    problems = row_problems(row)
    assert "`no_such_thing` is defined in none of the row's files" in problems
    assert "nope.py is in none of the row's folders" in problems
    assert not any("matmul" in p for p in problems)
