"""A chapter page as a Jupyter notebook, with the outputs the site build printed (site/hooks.py
part 2 publishes one next to each chapter page).

The notebook is the page: Python fences become code cells, everything else stays markdown.
Three things are added or taken away:

* **An install cell first.** It installs eagerflow's four packages from the wheels the site
  serves (site/wheels.py), unless eagerflow is already importable (as in the repository's
  ``.venv``), and fetches the chapters' helpers, ``tutorial.py``, next to the notebook.
* **The outputs.** markdown-exec ran every ``exec="on"`` block while the page was built;
  ``exec_cache`` kept what each printed, and each code cell gets that output, as Jupyter
  would show it: printed text as a stream, a mermaid or code fence as Markdown, a
  ``show``-n figure as a PNG. The notebook is not run a second time.
* **No build plumbing.** The options a fence carries for markdown-exec (``exec="on"`` ...) and
  its ``# markdown-exec: hide`` markers go. So does a block the page does not show (no
  ``source=`` option) that shows no Markdown either: a reset for the next rebuild, or the HTML
  of a live demo. Such a block stays if a later cell uses a name it defines.
"""

from __future__ import annotations

import ast
import html
import re
from dataclasses import dataclass
from typing import Any

import jupytext
from mkdocs.utils.meta import get_data
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_output

# The opening line of a fenced code block: indentation, fence, language, then options such as
# markdown-exec's exec="on" result="text". Group "options" is what notebooks must not carry.
FENCE_OPENING = re.compile(
    r"^(?P<head>[ \t]*(?:`{3,}|~{3,})[ \t]*[\w.+-]+)(?P<options>[ \t]+[^`\n]*)$", re.MULTILINE
)
# markdown-exec runs lines marked like this but hides them on the page; a notebook keeps the
# code (it is needed to run the cell) and drops only the marker.
HIDE_MARKER = re.compile(r"[ \t]*#[ \t]*markdown-exec:[ \t]*hide[ \t]*$", re.MULTILINE)
# mkdocstrings' "::: identifier" line, with its indented options: rendered API documentation on
# the page, a bare line in a notebook (where jupytext would also take it for a Pandoc div).
AUTODOC = re.compile(r"^:::[ \t]+(?P<identifier>\S+)[^\n]*(?:\n[ \t]+\S[^\n]*)*", re.MULTILINE)
# jupytext turns a fence in another language (```bash) into a code cell with a cell magic.
CELL_MAGIC = re.compile(r"\A%%(?P<language>[\w.+-]+)[^\n]*\n?")
# tutorial.show's figure on the page: a PNG in a data: URI (its own format, nothing else's).
FIGURE = re.compile(
    r'<img src="data:image/png;base64,(?P<data>[A-Za-z0-9+/=]+)" width="(?P<width>\d+)" '
    r'alt="(?P<alt>[^"]*)">'
)
# The install cell's command, as a test finds it.
PIP_LINE = re.compile(r"^[ \t]*%pip install (?P<arguments>.+)$", re.MULTILINE)
TUTORIAL_MODULE = "tutorial.py"


@dataclass(frozen=True)
class Run:
    """One block markdown-exec ran while the page was built: its code and what it printed."""

    code: str
    output: str


@dataclass(frozen=True)
class Install:
    """Where a notebook installs eagerflow from: the wheels' URLs, and ``tutorial.py``'s."""

    wheels: list[str]
    tutorial: str


def install_cell(install: Install, more_helpers: tuple[str, ...] = ()) -> NotebookNode:
    """The notebook's first code cell: eagerflow's wheels from the site, ``tutorial.py``, and
    the other helper modules the page imports (``more_helpers``, served beside it)."""
    folder = install.tutorial.rsplit("/", 1)[0] + "/"
    fetches = [
        line
        for helper in more_helpers
        for line in (
            f'if not pathlib.Path("{helper}").exists():',
            f'    urllib.request.urlretrieve("{folder}{helper}", "{helper}")',
        )
    ]
    return new_code_cell("\n".join([
        "# Run this cell first: it installs eagerflow (four pure-Python packages, and NumPy)",
        "# from the tutorial site, and downloads the chapters' helpers, tutorial.py, next to",
        "# this notebook. In a clone of the repository, run the notebook with the .venv that",
        "# `make setup` makes instead (add Jupyter with `.venv/bin/pip install notebook`):",
        "# eagerflow is installed there, so this cell installs nothing.",
        "import importlib",
        "import pathlib",
        "import urllib.request",
        "",
        "try:",
        "    import eagerflow.nn",
        "except ImportError:",
        "    %pip install " + " ".join(install.wheels),
        "    importlib.invalidate_caches()",
        f'if not pathlib.Path("{TUTORIAL_MODULE}").exists():',
        f'    urllib.request.urlretrieve("{install.tutorial}", "{TUTORIAL_MODULE}")',
        *fetches,
    ]))  # fmt: skip


def to_notebook(
    markdown: str,
    title: str | None = None,
    runs: list[Run] | None = None,
    install: Install | None = None,
    more_helpers: tuple[str, ...] = (),
) -> str:
    """A chapter page's markdown source as the JSON text of a Jupyter notebook: its cells, the
    outputs of ``runs`` (the page's executed blocks, in order), and ``install``'s cell first.

    Fences in other languages (```bash) stay markdown: ``make test`` is not a notebook cell.
    """
    body, _meta = get_data(markdown)  # front matter is for mkdocs, not for readers
    body = AUTODOC.sub(r"*`\g<identifier>` is documented on the tutorial page.*", body)
    # The format is named, not guessed: jupytext guesses Pandoc (and then wants the pandoc
    # program) for any text with a line that starts with ":::". It reads a fence's options
    # into the cell's metadata, where we find them.
    notebook = jupytext.reads(body, fmt="md:markdown")
    cells = _page_cells(notebook.cells, list(runs or []))
    where = f" “{title}”" if title else ""
    first = new_markdown_cell(
        f"*This notebook was generated from the eagerflow tutorial page{where}, with the "
        "outputs its code printed when the site was built. Its first cell installs eagerflow "
        f"and the chapters' helpers (`{TUTORIAL_MODULE}`); then run the cells in order.*"
    )
    installs = [install_cell(install, more_helpers)] if install else []
    notebook.cells = [first, *installs, *cells]
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    return str(jupytext.writes(notebook, fmt="ipynb"))


def _page_cells(cells: list[NotebookNode], runs: list[Run]) -> list[NotebookNode]:
    """The page's cells with their outputs, fences' options gone, plumbing left out."""
    kept: list[NotebookNode] = []
    dropped: list[tuple[int, set[str]]] = []  # (where in ``kept``, the names it defines)
    count = 0
    for cell in cells:
        options: dict[str, Any] = dict(cell.metadata)
        cell.metadata = {}
        if cell.cell_type == "markdown":
            cell.source = FENCE_OPENING.sub(r"\g<head>", cell.source)
        elif magic := CELL_MAGIC.match(cell.source):  # another language: a markdown fence
            code = cell.source[magic.end() :].rstrip("\n")
            cell = new_markdown_cell(f"```{magic['language']}\n{code}\n```")
        else:
            cell.source = HIDE_MARKER.sub("", cell.source)
            run = _take(runs, cell.source) if options.get("exec") == "on" else None
            if run is not None:
                count += 1
                cell.execution_count = count
                cell.outputs = outputs_of(run.output, options)
                names = _defined_names(cell.source)
                hidden = "source" not in options and not _shows_markdown(cell.outputs)
                if hidden and names is not None:
                    dropped.append((len(kept), names))
        kept.append(cell)
    later = [" ".join(c.source for c in kept[i + 1 :] if c.cell_type == "code") for i, _ in dropped]
    plumbing = {
        i for (i, names), text in zip(dropped, later, strict=True)
        if not any(re.search(rf"\b{re.escape(name)}\b", text) for name in names)
    }  # fmt: skip
    return [cell for i, cell in enumerate(kept) if i not in plumbing]


def _normal(code: str) -> str:
    return HIDE_MARKER.sub("", code).strip()


def _take(runs: list[Run], source: str) -> Run | None:
    """The first of ``runs`` whose code is the cell's, and drop it and the ones before it."""
    for i, run in enumerate(runs):
        if _normal(run.code) == _normal(source):
            del runs[: i + 1]
            return run
    return None


def outputs_of(output: str, options: dict[str, Any]) -> list[NotebookNode]:
    """What a block printed on the page, as the outputs of its notebook cell.

    ``result="text"`` (or another language) shows printed text: a stream. ``html="1"``
    prints HTML: a ``show``-n figure becomes a PNG, anything else HTML. Otherwise the page
    renders what was printed as Markdown (``draw``'s mermaid fence, ``listing``'s code).
    """
    if not output.strip():
        return []
    if options.get("result"):
        return [new_output("stream", name="stdout", text=output)]
    if options.get("html"):
        return _html_outputs(output)
    markdown = FENCE_OPENING.sub(r"\g<head>", output)  # listing's title="..." linenums="..."
    return [new_output("display_data", data={"text/markdown": markdown, "text/plain": markdown})]


def _html_outputs(output: str) -> list[NotebookNode]:
    outputs = []
    place = 0
    for figure in [*FIGURE.finditer(output), None]:
        text = output[place : figure.start() if figure else len(output)]
        if text.strip():
            outputs.append(new_output("display_data", data={"text/html": text}))
        if figure is None:
            break
        outputs.append(new_output(
            "display_data",
            data={"image/png": figure["data"], "text/plain": html.unescape(figure["alt"])},
            metadata={"image/png": {"width": int(figure["width"])}},
        ))  # fmt: skip
        place = figure.end()
    return outputs


def _shows_markdown(outputs: list[NotebookNode]) -> bool:
    return any("text/markdown" in o.get("data", {}) for o in outputs)


def _defined_names(code: str) -> set[str] | None:
    """The names a block binds (assignments, imports, definitions); None if it does not parse
    (then nobody can tell, and the block stays)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return names
