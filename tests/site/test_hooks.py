"""Unit tests of site/hooks.py: chapter pages to notebooks, the download link, local mermaid,
and the source of code blocks for AutoGraph."""

from __future__ import annotations

import importlib.util
import json
import linecache
import os
import warnings
from pathlib import Path
from types import ModuleType, SimpleNamespace

import markdown_exec
import pytest
from markdown import Markdown
from sitetools import DOCS, ROOT


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

    config = SimpleNamespace(docs_dir=str(DOCS))
    markdown = "# 03. Automatic differentiation\n\nText."
    result = hooks.on_page_markdown(markdown, Page(), config, Files())
    title, rest = result.split("\n", 1)
    assert title == "# 03. Automatic differentiation"
    assert "[Download this chapter as a notebook](03-autodiff.ipynb)" in rest
    assert "(tutorial.py)" in rest and "workloads.py" not in rest
    assert rest.rstrip().endswith("Text.")
    # a page whose code imports another helper module offers it too
    markdown += "\n\n```python\nfrom workloads import race_workloads\n```\n"
    result = hooks.on_page_markdown(markdown, Page(), config, Files())
    assert '[Download workloads.py](workloads.py){ .md-button download="workloads.py" }' in result


def test_no_local_mermaid_means_none(hooks: ModuleType, tmp_path: Path) -> None:
    assert hooks.local_mermaid(tmp_path) is None
    script = tmp_path / "build/npm/node_modules/mermaid/dist/mermaid.min.js"
    script.parent.mkdir(parents=True)
    script.write_text("window.mermaid = {};")
    (script.parent.parent / "package.json").write_text('{"version": "11.0.0"}')
    assert hooks.local_mermaid(tmp_path) == script
    assert hooks.mermaid_version(script) == "11.0.0"


# --- source for AutoGraph ------------------------------------------------------------------------
BLOCK = """
```python exec="on" session="hooks-test" result="text"
import eagerflow.tensor as ef
from eagerflow.graph import autograph, function


def absolute(x):
    if x > 0:
        y = x
    else:
        y = -x
    return y


absolute_graph = function(absolute)
print(float(absolute_graph(ef.constant(-3.0))))
graph = absolute_graph.get_concrete_function(ef.constant(-3.0)).graph
print([op.type for op in graph.get_operations()])
print(autograph.to_code(absolute))
```
"""


def run_with_markdown_exec(page: str) -> str:
    """``page`` rendered by markdown-exec as the site's build does: its Python blocks run."""
    fence = {"name": "python", "class": "python", "validator": markdown_exec.validator,
             "format": markdown_exec.formatter}  # fmt: skip
    converter = Markdown(
        extensions=["pymdownx.superfences"],
        extension_configs={"pymdownx.superfences": {"custom_fences": [fence]}},
    )
    return converter.convert(page)


def test_a_function_defined_in_a_code_block_is_converted(hooks: ModuleType) -> None:
    hooks.register_code_block_sources()
    hooks.register_code_block_sources()  # once is enough: the second call changes nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an AutoGraphWarning would say it ran unconverted
        html = run_with_markdown_exec(BLOCK)
    assert "<code>3.0\n" in html  # it ran, without a warning
    assert "'If'" in html  # the if on a tensor became a cond: an If node
    assert "ag__.if_stmt(x &gt; 0, if_body, else_body" in html  # to_code read the source
    sources = [name for name in linecache.cache if name.startswith(hooks.CODE_BLOCK_FILENAME)]
    assert any("session hooks-test" in name for name in sources)


def test_source_in_linecache_is_enough_as_in_jupyter(hooks: ModuleType) -> None:
    # IPython keeps each cell's text in linecache under a made-up file name; `keep_source`
    # does the same for a code block. That is all inspect, and so AutoGraph, needs.
    import eagerflow.tensor as ef
    from eagerflow.graph import autograph, function

    filename = "<cell: test_source_in_linecache_is_enough_as_in_jupyter>"
    source = "def clip(x):\n    while x > 10:\n        x = x - 10\n    return x\n"
    hooks.keep_source(filename, source)
    namespace: dict[str, object] = {}
    exec(compile(source, filename, "exec"), namespace)
    clip = namespace["clip"]
    assert "ag__.while_stmt" in autograph.to_code(clip)
    traced = function(clip)
    assert int(traced(ef.constant(37))) == 7
    graph = traced.get_concrete_function(ef.constant(37)).graph
    assert "While" in [op.type for op in graph.get_operations()]


def test_no_local_onnxruntime_web_means_none(hooks: ModuleType, tmp_path: Path) -> None:
    assert hooks.local_onnxruntime_web(tmp_path) is None
    dist = tmp_path / "build/npm/node_modules/onnxruntime-web/dist"
    dist.mkdir(parents=True)
    for name in hooks.ONNXRUNTIME_WEB_FILES[:-1]:
        (dist / name).write_text("")
    assert hooks.local_onnxruntime_web(tmp_path) is None  # the .wasm is missing
    (dist / hooks.ONNXRUNTIME_WEB_FILES[-1]).write_bytes(b"\0asm")
    assert hooks.local_onnxruntime_web(tmp_path) == dist


def test_a_page_s_code_is_told_where_its_files_go(
    hooks: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in (hooks.PAGE_DIR_VARIABLE, hooks.ONNXRUNTIME_WEB_VARIABLE):
        monkeypatch.delenv(variable, raising=False)

    class File:
        dest_uri = "chapters/15-fizzbuzz/index.html"

    class Page:
        file = File()
        url = "chapters/15-fizzbuzz/"

    class Config:
        site_dir = str(tmp_path)

    class Files:
        def __init__(self, shipped: bool) -> None:
            self.shipped = shipped

        def get_file_from_path(self, path: str) -> object:
            return object() if self.shipped and path.startswith("assets/onnxruntime/") else None

    hooks.on_pre_page(Page(), Config(), Files(shipped=True))
    assert os.environ[hooks.PAGE_DIR_VARIABLE] == str(tmp_path / "chapters/15-fizzbuzz")
    assert (tmp_path / "chapters/15-fizzbuzz").is_dir()
    assert os.environ[hooks.ONNXRUNTIME_WEB_VARIABLE] == "../../assets/onnxruntime/"
    hooks.on_page_content("<p></p>", Page(), Config(), Files(shipped=True))
    assert hooks.PAGE_DIR_VARIABLE not in os.environ
    hooks.on_pre_page(Page(), Config(), Files(shipped=False))
    assert hooks.ONNXRUNTIME_WEB_VARIABLE not in os.environ  # no local copy: the demo says so
    hooks.on_page_content("<p></p>", Page(), Config(), Files(shipped=False))


# --- notebooks: outputs, install cell, plumbing (site/notebooks.py) ---------------------------
RUN_PAGE = """# 1. A chapter

```python exec="on" session="ch01"
# Not shown: a reset for the next rebuild.
_counter = 0
```

```python exec="on" source="above" result="text" session="ch01"
print("hello")
```

```python exec="on" session="ch01"
draw("flowchart TD\\n  a --> b")
```

```python exec="on" source="above" session="ch01" html="1"
print("<p>before</p>")
show(figure, "a plot")
```
"""
FIGURE_HTML = '<img src="data:image/png;base64,iVBORw0K" width="320" alt="a &lt;plot&gt;">'


def notebook_of(hooks: ModuleType, runs: list[tuple[str, str]]) -> dict:
    import notebooks  # next to hooks.py, which put its folder on sys.path

    install = notebooks.Install(["https://example.org/wheels/a.whl"], "https://example.org/t.py")
    page_runs = [notebooks.Run(code, output) for code, output in runs]
    return json.loads(notebooks.to_notebook(RUN_PAGE, "A", page_runs, install))


def test_notebook_cells_carry_what_the_page_printed(hooks: ModuleType) -> None:
    runs = [
        ("# Not shown: a reset for the next rebuild.\n_counter = 0", ""),
        ('print("hello")', "hello\n"),
        ('draw("flowchart TD\\n  a --> b")', "```mermaid\nflowchart TD\n  a --> b\n```\n"),
        ('print("<p>before</p>")\nshow(figure, "a plot")', f"<p>before</p>\n{FIGURE_HTML}\n"),
    ]
    cells = [c for c in notebook_of(hooks, runs)["cells"] if c["cell_type"] == "code"]
    assert "%pip install https://example.org/wheels/a.whl" in "".join(cells[0]["source"])
    assert "https://example.org/t.py" in "".join(cells[0]["source"])
    # the silent hidden reset is plumbing: gone; the others, with their outputs, in order
    assert ["".join(c["source"]).split("(")[0] for c in cells[1:]] == ["print", "draw", "print"]
    stream, diagram, shown = (c["outputs"] for c in cells[1:])
    assert stream == [{"output_type": "stream", "name": "stdout", "text": ["hello\n"]}]
    assert "```mermaid\nflowchart TD" in "".join(diagram[0]["data"]["text/markdown"])
    assert "".join(shown[0]["data"]["text/html"]).strip() == "<p>before</p>"
    assert shown[1]["data"] == {"image/png": "iVBORw0K", "text/plain": ["a <plot>"]}
    assert shown[1]["metadata"] == {"image/png": {"width": 320}}


def test_the_install_cell_fetches_every_helper_the_page_imports(hooks: ModuleType) -> None:
    import notebooks

    install = notebooks.Install(["https://example.org/wheels/a.whl"], "https://x.org/ch/t.py")
    page = "# A\n\n```python\nfrom workloads import race\n```\n"
    cells = json.loads(notebooks.to_notebook(page, None, [], install, ("workloads.py",)))["cells"]
    first = "".join(next(c for c in cells if c["cell_type"] == "code")["source"])
    assert 'urlretrieve("https://x.org/ch/workloads.py", "workloads.py")' in first
    assert hooks.helpers_imported(page, Path(hooks.__file__).parent / "docs" / "chapters") == (
        "workloads.py",
    )


def test_a_hidden_block_whose_names_are_used_later_stays(hooks: ModuleType) -> None:
    page = RUN_PAGE.replace('print("hello")', "print(_counter)")
    import notebooks

    runs = [notebooks.Run("_counter = 0", ""), notebooks.Run("print(_counter)", "0\n")]
    cells = json.loads(notebooks.to_notebook(page, None, runs))["cells"]
    assert any("_counter = 0" in "".join(c["source"]) for c in cells)


def test_settings_are_filled_from_mkdocs_yml(hooks: ModuleType) -> None:
    class Config:
        repo_url = "https://example.org/someone/thing.git"

    text = "git clone {{ repo_url }}\ncd {{ repo_folder }}\n{{ other }}"
    filled = hooks.fill_settings(text, Config())
    assert filled == "git clone https://example.org/someone/thing.git\ncd thing\n{{ other }}"


def test_wheels_are_rebuilt_only_when_their_source_changes(tmp_path: Path) -> None:
    import wheels  # next to hooks.py

    (tmp_path / "VERSION").write_text("1.0\n")
    for name in wheels.PACKAGES:
        source = tmp_path / "packages" / name / "src" / "eagerflow" / name
        source.mkdir(parents=True)
        (source / "__init__.py").write_text("x = 1\n")
    before = wheels.sources_hash(tmp_path)
    cache = tmp_path / "packages" / "nn" / "src" / "eagerflow" / "nn" / "__pycache__"
    cache.mkdir()
    (cache / "__init__.cpython-311.pyc").write_bytes(b"\0")
    assert wheels.sources_hash(tmp_path) == before  # a cache is not source
    (tmp_path / "packages" / "nn" / "src" / "eagerflow" / "nn" / "__init__.py").write_text("x=2")
    assert wheels.sources_hash(tmp_path) != before
