"""The chapters' notebooks run in Jupyter, and their pictures come out as pictures.

Each built notebook is executed by nbclient in an IPython kernel (ipykernel), from the built
site's ``chapters/`` folder, where ``tutorial.py`` (the helpers the cells import) is published
next to the notebooks, as a reader who downloads both has them. The cells that draw must
show rich output: ``draw(...)`` a mermaid fence as ``text/markdown`` (JupyterLab 4.1 and
later draw it), ``show(...)`` a PNG.

Running every chapter takes minutes, so by default a few chapters that cover the helpers
run (``DEFAULT``); ``EAGERFLOW_ALL_NOTEBOOKS=1`` runs all of them. Without nbclient and
ipykernel (both in the dev dependency group) the tests skip, saying so.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from sitetools import BuiltSite, chapter_paths

# Cheap chapters that use every helper: listing and draw (a tape) in 3, show in 5, draw of
# graphs with options and of compiled programs, and show, in 13.
DEFAULT = ("03-autodiff", "05-variables", "13-compiler")
ALL = os.environ.get("EAGERFLOW_ALL_NOTEBOOKS", "").strip().lower() in ("1", "true", "yes")
CELL_TIMEOUT = 600  # seconds for one cell: chapter 16 trains a CNN
CHAPTERS = [p.strip("/").rpartition("/")[2] for p in chapter_paths()]

# A call of a helper at the start of a line (not its import, not a `def`).
DRAWS = re.compile(r"^\s*draw\(", re.MULTILINE)
SHOWS = re.compile(r"^\s*show\(", re.MULTILINE)


def kernel_or_skip() -> Any:
    """nbclient's module, once it is sure a kernel can start here; else skip, saying why."""
    nbclient = pytest.importorskip(
        "nbclient", reason="nbclient is not installed (it is in the dev group: `make setup`)"
    )
    pytest.importorskip(
        "ipykernel", reason="ipykernel is not installed (it is in the dev group: `make setup`)"
    )
    return nbclient


def outputs_of(cell: nbformat.NotebookNode, mime: str) -> list[str]:
    return [o["data"][mime] for o in cell.get("outputs", []) if mime in o.get("data", {})]


@pytest.mark.parametrize(
    "chapter",
    [
        c if ALL or c in DEFAULT else pytest.param(c, marks=pytest.mark.skip(
            reason="set EAGERFLOW_ALL_NOTEBOOKS=1 to run every chapter's notebook"))
        for c in CHAPTERS
    ],
)  # fmt: skip
def test_notebook_runs_and_draws(built_site: BuiltSite, chapter: str, tmp_path: Path) -> None:
    nbclient = kernel_or_skip()
    folder = built_site.folder / "chapters"
    # A copy of the reader's download: the notebook and the helper modules its page offers
    # (tutorial.py, and workloads.py for chapter 13), in a folder of their own (so what the
    # chapter's code writes stays out of the built site).
    page = (folder / chapter / "index.html").read_text(encoding="utf-8")
    for helper in set(re.findall(r'download="(\w+\.py)"', page)):
        shutil.copy(folder / helper, tmp_path / helper)
    notebook = nbformat.read(folder / f"{chapter}.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        notebook,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()

    drawn = shown = 0
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        if DRAWS.search(cell.source):
            diagrams = outputs_of(cell, "text/markdown")
            assert any("```mermaid\nflowchart" in d for d in diagrams), (
                f"{chapter}: no mermaid diagram from\n{cell.source}"
            )
            drawn += 1
        if SHOWS.search(cell.source):
            assert outputs_of(cell, "image/png"), f"{chapter}: no PNG from\n{cell.source}"
            shown += 1
    assert drawn + shown > 0 or chapter not in DEFAULT, f"{chapter} drew nothing"
