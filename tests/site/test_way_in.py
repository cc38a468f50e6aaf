"""The way in from the web: the repository link (one setting, mkdocs.yml's ``repo_url``) and
the home page's "Get the code" box that clones it, the packages' wheels the site serves, and
the chapter notebooks: an install cell first, that really installs those wheels, the outputs
the page shows, and none of the build's plumbing."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import nbformat
import pytest
from sitetools import DOCS, ROOT, BuiltSite, chapter_paths

PACKAGES = ("tensor", "autodiff", "graph", "nn")
# Strings only the build uses: a notebook cell carrying one has leaked build plumbing.
PLUMBING = ('exec="on"', "markdown-exec", "# Not shown", "EAGERFLOW_ONNXRUNTIME_WEB")


def setting(name: str) -> str:
    """A top-level setting of site/mkdocs.yml (a plain ``name: value`` line)."""
    text = (ROOT / "site" / "mkdocs.yml").read_text(encoding="utf-8")
    match = re.search(rf"^{name}:[ \t]*(\S+)[ \t]*$", text, re.MULTILINE)
    assert match, f"mkdocs.yml sets no {name}"
    return match[1]


def text_of(fragment: str) -> str:
    """An HTML fragment's text: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def code_blocks(page: str) -> list[str]:
    """The text of each highlighted code block (not mermaid) of a built page."""
    blocks = re.findall(r'<div class="highlight">.*?<pre[^>]*>(.*?)</pre>', page, re.DOTALL)
    return [text_of(block).strip() for block in blocks]


def test_get_the_code_box_clones_the_one_repo_url(built_site: BuiltSite) -> None:
    repo_url = setting("repo_url")
    home = (built_site.folder / "index.html").read_text(encoding="utf-8")
    # Material's header link is that setting
    assert f'<a href="{repo_url}" title="Go to repository" class="md-source"' in home
    # ... without the data-md-component="source" that would fetch its stars from the code host
    assert 'data-md-component="source"' not in home
    box = home[home.index("Get the code") :]
    commands = code_blocks(box)[0].splitlines()
    folder = repo_url.rstrip("/").rpartition("/")[2].removesuffix(".git")
    assert commands[:2] == [f"git clone {repo_url}", f"cd {folder}"], commands
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for line in commands[2:]:
        make = line.split("#")[0].strip()
        assert make in ("make serve", "make test") and make in readme, line


def test_home_page_steps_are_three(built_site: BuiltSite) -> None:
    home = (built_site.folder / "index.html").read_text(encoding="utf-8")
    section = home[home.index('id="how-the-chapters-work"') : home.index('id="other-pages"')]
    steps = re.findall(r"<ol>(.*?)</ol>", section, re.DOTALL)[-1]  # after the chapters' list
    items = re.findall(r"<li>(.*?)</li>", steps, re.DOTALL)
    starts = [text_of(item).split()[:2] for item in items]
    assert starts == [["Pick", "a"], ["Run", "the"], ["Do", "the"]], starts


def test_the_site_serves_a_wheel_per_package(built_site: BuiltSite) -> None:
    wheels = sorted((built_site.folder / "wheels").glob("*.whl"))
    assert [w.name.split("-")[0] for w in wheels] == sorted(f"eagerflow_{p}" for p in PACKAGES)
    for wheel in wheels:
        layer = wheel.name.split("-")[0].removeprefix("eagerflow_")
        with zipfile.ZipFile(wheel) as archive:
            assert f"eagerflow/{layer}/__init__.py" in archive.namelist(), wheel.name


def install_cell(notebook: nbformat.NotebookNode) -> str:
    return next(c for c in notebook.cells if c.cell_type == "code").source


def pip_arguments(cell: str) -> list[str]:
    (line,) = re.findall(r"^[ \t]*%pip install (.+)$", cell, re.MULTILINE)
    return line.split()


@pytest.mark.parametrize("path", chapter_paths())
def test_notebook_installs_first_shows_the_outputs_and_no_plumbing(
    built_site: BuiltSite, path: str
) -> None:
    chapter = path.strip("/").rpartition("/")[2]
    text = (built_site.folder / "chapters" / f"{chapter}.ipynb").read_text(encoding="utf-8")
    notebook = nbformat.reads(text, as_version=4)
    nbformat.validate(notebook)
    wheels = setting("site_url").rstrip("/") + "/wheels/"
    urls = pip_arguments(install_cell(notebook))
    assert [u.rpartition("/")[0] + "/" for u in urls] == [wheels] * len(PACKAGES), urls
    served = sorted(p.name for p in (built_site.folder / "wheels").glob("*.whl"))
    assert sorted(u.rpartition("/")[2] for u in urls) == served, urls

    code = [c for c in notebook.cells if c.cell_type == "code"]
    for cell in notebook.cells:
        leaked = [s for s in PLUMBING if s in cell.source]
        assert not leaked, f"{chapter}: {leaked} in\n{cell.source}"
    printed = []  # what the notebook's cells show
    for cell in code:
        for output in cell.get("outputs", []):
            printed.append(output.get("text", ""))
            printed += [str(v) for k, v in output.get("data", {}).items() if k != "image/png"]
    assert printed, f"{chapter}: a notebook with no outputs"
    everything = "\n".join([*(c.source for c in notebook.cells), *printed])
    page = (built_site.folder / path / "index.html").read_text(encoding="utf-8")
    # the page's own blocks: its article, up to the API documentation of its exercises, which
    # the notebook leaves to the page
    article = page[page.index("<article") :].split('class="doc doc-object', 1)[0]
    blocks = code_blocks(article)
    for block in blocks:  # each code block of the page: a cell's source, or a cell's output
        if any(block in p for p in printed):
            continue
        missing = [line for line in block.splitlines() if line.strip() not in everything]
        assert not missing, f"{chapter}: the page shows\n{block}\nthe notebook does not"
    for output in (o for c in code for o in c.get("outputs", [])):
        if output.output_type == "stream":  # printed text: on the page, word for word
            assert output.text.strip() in blocks, f"{chapter}: not on the page:\n{output.text}"


def test_install_cell_installs_the_served_wheels(
    built_site: BuiltSite, site_url: str, tmp_path: Path
) -> None:
    """The first chapter's install cell, run against the built site served on 127.0.0.1: pip
    installs the four wheels from their URLs (``--no-deps``: NumPy would come from PyPI), and
    the helpers' URL serves tutorial.py."""
    first = sorted((built_site.folder / "chapters").glob("*.ipynb"))[0]
    cell = install_cell(nbformat.read(first, as_version=4))
    published = setting("site_url").rstrip("/") + "/"
    urls = [u.replace(published, site_url, 1) for u in pip_arguments(cell)]
    target = tmp_path / "target"
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
    result = subprocess.run(
        [*command, "--target", str(target), *urls], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    env = {**os.environ, "PYTHONPATH": str(target)}
    probe = "import eagerflow.nn, eagerflow.tensor as ef; print(eagerflow.nn.__file__, ef.__file__)"
    run = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert run.returncode == 0, run.stderr
    assert all(p.startswith(str(target)) for p in run.stdout.split()), run.stdout
    (tutorial,) = re.findall(r'urlretrieve\("([^"]+)"', cell)
    with urllib.request.urlopen(tutorial.replace(published, site_url, 1), timeout=30) as answer:
        assert answer.read() == (DOCS / "chapters" / "tutorial.py").read_bytes()
