"""TensorBoard's own server and dashboards on the event files chapter 18 writes.

The chapter's code blocks run here (as the site build runs them) and leave their event file in
the chapter's ``logdir``. A real ``tensorboard`` server is started on it, and headless
Chromium opens its scalars and graph dashboards: they must load without a script error and
draw the chapter's loss curve and ``train_step``'s graph (its nodes and summary ops). The
screenshots go to ``build/screenshots``; with ``EAGERFLOW_UPDATE_SCREENSHOTS=1`` they also
replace the ones chapter 18 shows (``site/docs/chapters/tensorboard/``).
"""

from __future__ import annotations

import linecache
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sitetools import DOCS, SCREENSHOTS

pytest.importorskip("tensorboard")

CHAPTER = DOCS / "chapters" / "18-tensorflow-ecosystem.md"
SHOWN = DOCS / "chapters" / "tensorboard"
CODE_BLOCK = re.compile(r'^```python exec="on"[^\n]*\n(.*?)^```$', re.MULTILINE | re.DOTALL)
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def chapter_logdir() -> Path:
    """Run chapter 18's code blocks (figures not drawn) and return its ``logdir``."""
    sys.path.insert(0, str(CHAPTER.parent))
    import tutorial

    namespace: dict[str, Any] = {}
    show, tutorial.show = tutorial.show, lambda figure, alt: None
    try:
        for i, block in enumerate(CODE_BLOCK.findall(CHAPTER.read_text(encoding="utf-8"))):
            # each block under a name of its own, its source where inspect looks for it (as
            # markdown-exec does), so that AutoGraph can read a function the page defines
            name = f"<{CHAPTER.name}, block {i}>"
            linecache.cache[name] = (len(block), None, block.splitlines(keepends=True), name)
            exec(compile(block, name, "exec"), namespace)  # our own page
    finally:
        tutorial.show = show
    logdir = Path(namespace["logdir"])
    namespace["_keep"] = namespace["scratch"]  # the temporary folder lives with the fixture
    assert list(logdir.iterdir()), "the chapter wrote no event file"
    return logdir.parent  # TensorBoard's logdir: one run per subfolder


@pytest.fixture(scope="module")
def tensorboard_url(chapter_logdir: Path) -> Iterator[str]:
    """A real TensorBoard server on the chapter's logs, on a free port of 127.0.0.1."""
    command = [sys.executable, "-m", "tensorboard.main", "--logdir", str(chapter_logdir),
               "--port", "0", "--host", "127.0.0.1"]  # fmt: skip
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        assert server.stderr is not None
        for line in server.stderr:  # it says where it listens, on stderr
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            if found:
                yield f"http://127.0.0.1:{found.group(1)}/"
                break
        else:
            pytest.fail("tensorboard exited without serving")
    finally:
        server.terminate()
        server.wait(timeout=30)


def _screenshot(page: Any, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    page.screenshot(path=str(path), clip={"x": 300, "y": 64, "width": 900, "height": 560})
    if os.environ.get("EAGERFLOW_UPDATE_SCREENSHOTS"):
        SHOWN.mkdir(exist_ok=True)
        shutil.copyfile(path, SHOWN / name)


@pytest.mark.timeout(300)
def test_tensorboard_draws_the_chapters_scalars_and_graph(
    browser: Any, tensorboard_url: str
) -> None:
    page = browser.new_page(viewport={"width": 1200, "height": 700})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(tensorboard_url + "#scalars", timeout=TIMEOUT_MS)
        page.get_by_text("tag: loss").first.wait_for(timeout=TIMEOUT_MS)
        page.wait_for_timeout(2000)  # the line is drawn after the data arrives
        _screenshot(page, "scalars.png")
        page.goto(tensorboard_url + "#graphs", timeout=TIMEOUT_MS)
        page.get_by_text("Main Graph").first.wait_for(timeout=TIMEOUT_MS)
        # a summary node of train_step, drawn (Playwright's text search sees into the
        # dashboard's shadow roots)
        node = page.get_by_text("WriteSummary", exact=True).first
        node.wait_for(state="attached", timeout=TIMEOUT_MS)
        page.wait_for_timeout(2000)
        _screenshot(page, "graph.png")
    finally:
        page.close()
    assert not errors, errors


def test_the_chapter_shows_the_screenshots_this_test_takes() -> None:
    text = CHAPTER.read_text(encoding="utf-8")
    for name in ("scalars.png", "graph.png"):
        assert f"(tensorboard/{name})" in text
        assert (SHOWN / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
