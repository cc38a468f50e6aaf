"""The cache of executed code blocks (site/exec_cache.py, EAGERFLOW_SITE_CACHE=1): real
`mkdocs build`s of a one-page site that uses the site's hooks, in a throw-away repository, with
each block writing a line to a log file when it runs (the spy)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sitetools import ROOT

CONFIG = f"""site_name: cache test
docs_dir: docs
hooks:
  - {ROOT / "site" / "hooks.py"}
markdown_extensions:
  - pymdownx.superfences
plugins:
  - markdown-exec
"""

PAGE = """# A chapter

Some prose.

```python exec="on" session="t" result="text"
import os
import demo

def ran(name):
    with open(os.environ["SPY_LOG"], "a") as log:
        log.write(name + "\\n")

ran("first")
print("first says", demo.VALUE)
```

```python exec="on" session="t" result="text"
from pathlib import Path
from tutorial import claim

ran("second")
Path(os.environ["EAGERFLOW_PAGE_DIR"], "made.txt").write_text("a file the block wrote")
print(claim("the second block ran", True))
```
"""


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    (tmp_path / "site" / "docs" / "chapters").mkdir(parents=True)
    (tmp_path / "site" / "mkdocs.yml").write_text(CONFIG)
    (tmp_path / "site" / "docs" / "chapters" / "page.md").write_text(PAGE)
    tutorial = ROOT / "site" / "docs" / "chapters" / "tutorial.py"
    shutil.copy(tutorial, tmp_path / "site" / "docs" / "chapters" / "tutorial.py")
    (tmp_path / "packages" / "demo" / "src").mkdir(parents=True)
    (tmp_path / "packages" / "demo" / "src" / "demo.py").write_text("VALUE = 1\n")
    return tmp_path


def build(repository: Path, cache: bool = True) -> tuple[list[str], Path]:
    """One `mkdocs build` into a fresh folder: the blocks that ran, and the built page's folder."""
    spy = repository / "spy.log"
    spy.write_text("")
    site = repository / f"built-{len(list(repository.glob('built-*')))}"
    env = {**os.environ, "SPY_LOG": str(spy), "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = str(repository / "packages" / "demo" / "src")
    env.pop("EAGERFLOW_SITE_CACHE", None)
    if cache:
        env["EAGERFLOW_SITE_CACHE"] = "1"
    command = [sys.executable, "-m", "mkdocs", "build", "--strict",
               "-f", str(repository / "site" / "mkdocs.yml"), "-d", str(site)]  # fmt: skip
    result = subprocess.run(
        command, capture_output=True, text=True, env=env, cwd=repository, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return spy.read_text().split(), site / "chapters" / "page"


def test_an_unchanged_page_runs_no_block_the_second_time(repository: Path) -> None:
    ran, first = build(repository)
    assert ran == ["first", "second"]
    ran, second = build(repository)
    assert ran == []
    assert (first / "index.html").read_text() == (second / "index.html").read_text()
    assert "first says 1" in (second / "index.html").read_text()
    # what the block wrote next to the page, and its claims, are there again
    assert (second / "made.txt").read_text() == "a file the block wrote"
    assert "the second block ran" in (second / "claims.json").read_text()
    assert (repository / "build" / "exec-cache").is_dir()


def test_a_prose_edit_runs_no_block(repository: Path) -> None:
    build(repository)
    page = repository / "site" / "docs" / "chapters" / "page.md"
    page.write_text(page.read_text().replace("Some prose.", "Some other prose."))
    ran, built = build(repository)
    assert ran == []
    assert "Some other prose." in (built / "index.html").read_text()


def test_an_edited_block_runs_again_with_the_blocks_before_it(repository: Path) -> None:
    build(repository)
    page = repository / "site" / "docs" / "chapters" / "page.md"
    page.write_text(page.read_text().replace('ran("second")', 'ran("second-edited")'))
    ran, _ = build(repository)
    assert ran == ["first", "second-edited"]  # the first block's state is needed, so it runs
    page.write_text(page.read_text().replace('ran("first")', 'ran("first-edited")'))
    ran, _ = build(repository)
    assert ran == ["first-edited", "second-edited"]  # a later block depends on an earlier one


def test_an_edited_package_runs_every_block_again(repository: Path) -> None:
    build(repository)
    (repository / "packages" / "demo" / "src" / "demo.py").write_text("VALUE = 2\n")
    ran, built = build(repository)
    assert ran == ["first", "second"]
    assert "first says 2" in (built / "index.html").read_text()


def test_without_the_variable_every_block_runs(repository: Path) -> None:
    build(repository, cache=False)
    ran, _ = build(repository, cache=False)
    assert ran == ["first", "second"]
    assert not (repository / "build" / "exec-cache").exists()
