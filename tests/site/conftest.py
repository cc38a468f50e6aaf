"""Fixtures of the site tests: one strict build per test session, served on 127.0.0.1, and a
headless Chromium (Debian's `chromium`, driven by Playwright) to look at it.

The build goes to a temporary folder (never to build/site, which `make serve` users may be
looking at); screenshots, which a person may want to open, go to build/screenshots.
"""

from __future__ import annotations

import functools
import http.server
import os
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sitetools import CHROMIUM_ARGS, ROOT, BuiltSite, find_chromium, in_ci


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> BuiltSite:
    """The site, built once per session with `mkdocs build --strict` (any warning fails it)."""
    folder = tmp_path_factory.mktemp("site") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env.pop("EAGERFLOW_SITE_CACHE", None)  # every code block runs: no output from an old build
    command = [sys.executable, "-m", "mkdocs", "build", "--strict",
               "-f", str(ROOT / "site" / "mkdocs.yml"), "-d", str(folder)]  # fmt: skip
    start, cpu_start = time.perf_counter(), _children_cpu_seconds()
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    seconds = time.perf_counter() - start
    cpu_seconds = _children_cpu_seconds() - cpu_start
    log = result.stdout + result.stderr
    if result.returncode != 0:
        pytest.fail(f"`mkdocs build --strict` failed:\n{log}", pytrace=False)
    return BuiltSite(folder, seconds, log, cpu_seconds)


def _children_cpu_seconds() -> float:
    """The CPU time (user + system) used so far by this process's finished children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # one line per request is noise
        pass


@pytest.fixture(scope="session")
def site_url(built_site: BuiltSite) -> Iterator[str]:
    """The built site served by http.server on 127.0.0.1 (a free port), in a thread."""
    handler = functools.partial(_QuietHandler, directory=str(built_site.folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """A headless Chromium. Playwright cannot download its own browser here, so we pass the
    executable of the system's. Missing: a skip on a workstation, a failure in CI."""
    executable = find_chromium()
    if executable is None:
        reason = (
            "no chromium found for the browser tests: install it with `apt-get install "
            "chromium` (or name one in EAGERFLOW_CHROMIUM)"
        )
        if in_ci():
            pytest.fail(reason + "; CI must run them (.ci/run installs it)", pytrace=False)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield chromium
        finally:
            chromium.close()
