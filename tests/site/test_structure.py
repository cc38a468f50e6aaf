"""The shape of the tutorial: its chapters, their order, and what each one may use.

No build needed: these read the navigation, the chapter pages' sources and the exercise files.
The order of the chapters is a promise to the reader, "nothing is used before it is taught",
and ``TAUGHT`` below keeps it: each public name with the chapter that introduces it. A chapter
whose code uses a name from a later chapter fails here, and so does a table that no longer
says where a name is first used.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib

import pytest
import yaml
from sitetools import DOCS, ROOT

CHAPTERS = DOCS / "chapters"
CODE_BLOCK = re.compile(r'^```python exec="on"[^\n]*\n(.*?)^```$', re.MULTILINE | re.DOTALL)
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen",
                "seventeen", "eighteen", "nineteen", "twenty"]  # fmt: skip

# The chapter that teaches each name, as the chapters' code spells it: a name imported from
# eagerflow, an attribute (``Dense``, or ``nn.fit`` where the bare name would be ambiguous) or
# a keyword argument (``jit_compile=``).
TAUGHT = {
    "GradientTape": 3,
    "check_gradients": 3,
    "register_gradient": 3,
    "ForwardAccumulator": 4,
    "forward_jacobian": 4,
    "jvp_by_double_vjp": 4,
    "Variable": 5,
    "Graph": 6,
    "Session": 6,
    "placeholder": 6,
    "global_variables_initializer": 6,
    "gradients": 7,
    "cond": 8,
    "while_loop": 8,
    "function": 9,
    "TensorSpec": 9,
    "input_signature=": 9,
    "autograph": 10,
    "ef.print": 10,
    "run_functions_eagerly": 10,
    "Dense": 11,
    "Sequential": 11,
    "Model": 11,
    "sparse_softmax_cross_entropy_with_logits": 11,
    "GradientDescentOptimizer": 12,
    "AdamOptimizer": 12,
    "Checkpoint": 12,
    "nn.fit": 12,
    "Plan": 13,
    "jit_compile=": 13,
    "saved_model": 14,
    "write_graph": 14,
    "Conv2D": 16,
    "BatchNormalization": 16,
    "tf_graph_def": 18,
    "device": 19,
    "partition": 19,
}


def nav_chapters() -> list[tuple[int, str, str]]:
    """(number, title, file) of each chapter in the navigation, in order."""
    nav = yaml.load((ROOT / "site" / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)["nav"]
    (chapters,) = [entry["Chapters"] for entry in nav if "Chapters" in entry]
    found = []
    for entry in chapters:
        ((label, path),) = entry.items()
        number, title = label.split(". ", 1)
        found.append((int(number), title, path.removeprefix("chapters/")))
    return found


@functools.cache
def used_names(number: int) -> frozenset[str]:
    """The eagerflow names, attributes (``Dense``, ``nn.Dense``) and keywords (``fit=``) the
    code blocks of chapter ``number`` use."""
    (page,) = CHAPTERS.glob(f"{number:02d}-*.md")
    names: set[str] = set()
    for code in CODE_BLOCK.findall(page.read_text(encoding="utf-8")):
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("eagerflow"):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
                if isinstance(node.value, ast.Name):
                    names.add(f"{node.value.id}.{node.attr}")
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(f"{node.arg}=")
    return frozenset(names)


def test_the_tutorial_has_at_least_sixteen_chapters_numbered_in_order() -> None:
    chapters = nav_chapters()
    assert len(chapters) >= 16, chapters
    pages = sorted(p.name for p in CHAPTERS.glob("[0-9][0-9]-*.md"))
    assert [file for _, _, file in chapters] == pages, "every chapter page in the nav, in order"
    for position, (number, _, file) in enumerate(chapters, 1):
        assert number == position and file.startswith(f"{number:02d}-"), file
        heading = (CHAPTERS / file).read_text(encoding="utf-8").splitlines()[0]
        assert heading.startswith(f"# {number}. "), f"{file} starts with {heading!r}"


def test_every_chapter_has_exercises_a_marker_and_its_command() -> None:
    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]
    markers = pytest_options["ini_options"]["markers"]
    declared = {m.split(":")[0] for m in markers}
    for number, _, file in nav_chapters():
        chapter = f"ch{number:02d}"
        assert chapter in declared, f"no pytest marker {chapter} in pyproject.toml"
        for path in (f"exercises/{chapter}.py", f"exercises/solutions/{chapter}.py",
                     f"tests/exercises/test_{chapter}.py"):  # fmt: skip
            assert (ROOT / path).is_file(), path
        text = (CHAPTERS / file).read_text(encoding="utf-8")
        assert f"pytest -m {chapter}" in text and f"::: {chapter}." in text, file
        assert f"pytestmark = pytest.mark.{chapter}" in (
            ROOT / "tests" / "exercises" / f"test_{chapter}.py"
        ).read_text(encoding="utf-8")


def test_the_readme_and_the_home_page_count_and_list_the_chapters() -> None:
    chapters = nav_chapters()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"in {NUMBER_WORDS[len(chapters)]} chapters" in readme
    home = (DOCS / "index.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\s*(\d+)\. \[([^\]]+)\]\(chapters/([^)#]+)\)", home, re.MULTILINE)
    assert [(int(n), file) for n, _, file in listed] == [(n, f) for n, _, f in chapters]


@pytest.mark.parametrize(("name", "chapter"), sorted(TAUGHT.items()))
def test_nothing_is_used_before_it_is_taught(name: str, chapter: int) -> None:
    used_in = [number for number, _, _ in nav_chapters() if name in used_names(number)]
    assert used_in, f"no chapter uses {name}: drop it from TAUGHT"
    assert used_in[0] == chapter, (
        f"{name} is taught in chapter {chapter} but used first in chapter {used_in[0]}"
        if used_in[0] < chapter
        else f"{name} is first used in chapter {used_in[0]}, not {chapter}: fix TAUGHT"
    )


def test_every_source_path_a_chapter_names_exists() -> None:
    # "Read the code" sections, the recap's table and the pages' asides send the reader to
    # files of the repository: they must exist
    # (a chapter split or a module moved between stages leaves a stale path behind).
    missing = {
        (page.name, path)
        for page in sorted(CHAPTERS.glob("[0-9][0-9]-*.md"))
        for path in re.findall(
            r"`((?:packages|benchmarks|tests|exercises)/[^`\s]+)`", page.read_text(encoding="utf-8")
        )
        if not (ROOT / path).exists()
    }
    assert not missing, sorted(missing)
