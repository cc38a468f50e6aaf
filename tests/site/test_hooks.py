"""Unit tests of site/hooks.py: chapter pages to notebooks, the download link, local mermaid."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from sitetools import ROOT


@pytest.fixture(scope="module")
def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("eagerflow_site_hooks", ROOT / "site/hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PAGE = """---
title: Front matter is for mkdocs
---
# 03. Automatic differentiation

Some prose.

```python exec="on" result="text" source="above" session="ch03"
import eagerflow.tensor as ef  # markdown-exec: hide
print(ef.constant(1.0))
```

```mermaid
flowchart TD
  a --> b
```

```bash
make test
```

```pycon
>>> 1 + 1
2
```
"""


def cells(hooks: ModuleType, markdown: str) -> list[dict]:
    return json.loads(hooks.to_notebook(markdown, "A title"))["cells"]


def test_python_blocks_become_plain_code_cells(hooks: ModuleType) -> None:
    code = [c for c in cells(hooks, PAGE) if c["cell_type"] == "code"]
    assert len(code) == 1
    assert "".join(code[0]["source"]) == "import eagerflow.tensor as ef\nprint(ef.constant(1.0))"
    assert code[0]["metadata"] == {}  # no exec="on" or other markdown-exec options


def test_other_blocks_stay_markdown(hooks: ModuleType) -> None:
    text = ["".join(c["source"]) for c in cells(hooks, PAGE) if c["cell_type"] == "markdown"]
    joined = "\n".join(text)
    assert "```mermaid\nflowchart TD\n  a --> b\n```" in joined
    assert "```bash\nmake test\n```" in joined
    assert ">>> 1 + 1" in joined
    assert "Front matter" not in joined and "title:" not in joined
    assert text[0].startswith("*This notebook was generated")


def test_an_unfinished_page_still_makes_a_notebook(hooks: ModuleType) -> None:
    for markdown in ("", "# 07. Control flow\n\n(being written)", "```python\nx = (\n"):
        json.loads(hooks.to_notebook(markdown, None))


def test_notebook_next_to_its_page(hooks: ModuleType) -> None:
    assert hooks.is_chapter("chapters/03-autodiff.md")
    assert not hooks.is_chapter("index.md") and not hooks.is_chapter("reference/tensor.md")
    assert hooks.notebook_uri("chapters/03-autodiff.md") == "chapters/03-autodiff.ipynb"


def test_download_link_goes_under_the_title(hooks: ModuleType) -> None:
    class File:
        src_uri = "chapters/03-autodiff.md"

    class Page:
        file = File()

    class Files:
        def get_file_from_path(self, path: str) -> object:
            return object() if path == "chapters/03-autodiff.ipynb" else None

    markdown = "# 03. Automatic differentiation\n\nText."
    result = hooks.on_page_markdown(markdown, Page(), None, Files())
    title, rest = result.split("\n", 1)
    assert title == "# 03. Automatic differentiation"
    assert "[Download this chapter as a notebook](03-autodiff.ipynb)" in rest
    assert rest.rstrip().endswith("Text.")


def test_no_local_mermaid_means_none(hooks: ModuleType, tmp_path: Path) -> None:
    assert hooks.local_mermaid(tmp_path) is None
    script = tmp_path / "build/npm/node_modules/mermaid/dist/mermaid.min.js"
    script.parent.mkdir(parents=True)
    script.write_text("window.mermaid = {};")
    (script.parent.parent / "package.json").write_text('{"version": "11.0.0"}')
    assert hooks.local_mermaid(tmp_path) == script
    assert hooks.mermaid_version(script) == "11.0.0"
