"""Helpers shared by the site tests and their fixtures (importable as `sitetools`, since
pytest puts this folder on sys.path)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "site" / "docs"
SCREENSHOTS = ROOT / "build" / "screenshots"
LOCAL_MERMAID = ROOT / "build" / "npm" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
LOCAL_ONNXRUNTIME_WEB = ROOT / "build" / "npm" / "node_modules" / "onnxruntime-web" / "dist"
LOCAL_ONNXRUNTIME_WEB /= "ort.wasm.min.js"  # the script chapter 15's live demo loads
# The chapters that draw plots with matplotlib while they are built, and how many each shows.
FIGURES = {
    "chapters/05-variables/": 1,  # the loss of the training loop
    # the time of one step, four ways; the buffers' lifetimes; the time of one step, six ways
    "chapters/13-compiler/": 3,
    "chapters/11-models/": 1,  # two losses and their gradients
    "chapters/12-training/": 3,  # optimizers on a bowl; decision boundary; a History
    "chapters/15-fizzbuzz/": 1,  # the learning curve of the learned FizzBuzz
    # digits, an edge filter, im2col, learning curves, confusion, mistakes, filters
    "chapters/16-digits-cnn/": 7,
    "chapters/17-linear-regression/": 2,  # loss curves and the fitted line; step times
    "chapters/18-tensorflow-ecosystem/": 1,  # a loss curve and histograms from an event file
}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def in_ci() -> bool:
    """True on the CI machine (`CI=true`), where a missing browser is a failure, not a skip."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def page_paths() -> list[str]:
    """The URL path of every page of the site, from the markdown files (so tests can be
    parametrized before anything is built): index.md -> "", chapters/01-x.md -> chapters/01-x/."""
    paths = []
    for source in sorted(DOCS.rglob("*.md")):
        relative = source.relative_to(DOCS).with_suffix("").as_posix()
        if relative == "index":
            paths.append("")
        elif relative.endswith("/index"):
            paths.append(relative.removesuffix("index"))
        else:
            paths.append(relative + "/")
    return paths


def chapter_paths() -> list[str]:
    return [p for p in page_paths() if p.startswith("chapters/")]


@dataclass(frozen=True)
class BuiltSite:
    folder: Path
    seconds: float  # wall-clock time of `mkdocs build --strict`
    log: str
    cpu_seconds: float  # the build's own CPU time, whatever else the machine runs


def find_chromium() -> str | None:
    """Debian's chromium (what `.ci/run` installs), or another one named by EAGERFLOW_CHROMIUM."""
    for candidate in (os.environ.get("EAGERFLOW_CHROMIUM"), "chromium", "/usr/bin/chromium"):
        if candidate and (path := shutil.which(candidate)):
            return path
    return None
