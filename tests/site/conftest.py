"""Fixtures of the site tests: one strict build per test run, served on 127.0.0.1, and a
headless Chromium (Debian's `chromium`, driven by Playwright) to look at it.

The build goes to a temporary folder (never to build/site, which `make serve` users may be
looking at); screenshots, which a person may want to open, go to build/screenshots.
"""

from __future__ import annotations

import fcntl
import functools
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from sitetools import CHROMIUM_ARGS, ROOT, BuiltSite, find_chromium, in_ci

# --- the strict build: one per run, started as soon as the run knows it needs it ------------------
# The build is a subprocess that takes about a minute of CPU. It starts in the background when
# collection ends (so it overlaps the tests that come before the site's), and with pytest-xdist
# only one worker runs it: the others find it in the run's shared temporary folder. A lock file
# there is held by whoever is building, so a worker that needs the site waits until it is done.
BUILD_TIMEOUT = 600  # seconds
_BACKGROUND: list[subprocess.Popen[bytes]] = []  # the build this process started, while it runs


def _shared_folder(config: pytest.Config) -> Path:
    """This run's temporary folder, shared by all its processes: pytest's base temporary folder
    (what the `tmp_path_factory` fixture hands out), or its parent in a pytest-xdist worker
    (the workers' folders are `popen-gw0`, `popen-gw1`... in the controller's)."""
    base: Path = config._tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _lock(shared: Path, wait: bool = True) -> IO[str] | None:
    """The build's lock file, held until it is closed (None if ``wait`` is False and another
    process holds it). A lock file is an open file, not a context manager: the one taken for
    a background build is handed to its thread, which closes it when the build is done."""
    lock = open(shared / "site.lock", "a")  # noqa: SIM115 (handed on, or closed below)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        lock.close()
        return None
    return lock


def _build(shared: Path) -> None:
    """Run `mkdocs build --strict` into ``shared/site``, then record how it went in
    ``shared/site.json``. Its CPU time is its own (os.wait4), whatever else this process runs
    meanwhile."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env.pop("EAGERFLOW_SITE_CACHE", None)  # every code block runs: no output from an old build
    command = [sys.executable, "-m", "mkdocs", "build", "--strict",
               "-f", str(ROOT / "site" / "mkdocs.yml"), "-d", str(shared / "site")]  # fmt: skip
    with open(shared / "site.log", "wb") as log:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        _BACKGROUND.append(process)
        timer = threading.Timer(BUILD_TIMEOUT, process.kill)
        timer.start()
        _, status, usage = os.wait4(process.pid, 0)
        timer.cancel()
        process.returncode = os.waitstatus_to_exitcode(status)  # (reaped by wait4)
        _BACKGROUND.remove(process)
    record = {"seconds": time.perf_counter() - start, "returncode": process.returncode,
              "cpu_seconds": usage.ru_utime + usage.ru_stime}  # fmt: skip
    (shared / "site.json.tmp").write_text(json.dumps(record))
    (shared / "site.json.tmp").replace(shared / "site.json")


def _build_and_release(shared: Path, lock: IO[str]) -> None:
    try:
        _build(shared)
    finally:
        lock.close()


def _start_build(shared: Path) -> None:
    """Start the build in a thread of this process, unless it was started already."""
    lock = _lock(shared, wait=False)
    if lock is None:  # being built by another process
        return
    if (shared / "site.json").exists():  # built
        lock.close()
        return
    threading.Thread(target=_build_and_release, args=(shared, lock), daemon=True).start()


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the build now if a selected test will need it (with pytest-xdist each worker
    collects every test; the first to get here builds)."""
    if any("built_site" in getattr(item, "fixturenames", ()) for item in session.items):
        _start_build(_shared_folder(session.config))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A run that ends before the build does (-x, Ctrl-C) stops it."""
    for process in list(_BACKGROUND):
        process.kill()


@pytest.fixture(scope="session")
def built_site(request: pytest.FixtureRequest) -> BuiltSite:
    """The site, built once per run with `mkdocs build --strict` (any warning fails it)."""
    shared = _shared_folder(request.config)
    _start_build(shared)  # (if collection did not)
    with _lock(shared):  # (a build holds it until it is done)
        if not (shared / "site.json").exists():  # the background build did not get to start
            _build(shared)
        record = json.loads((shared / "site.json").read_text())
    log = (shared / "site.log").read_text(encoding="utf-8", errors="replace")
    if record["returncode"] != 0:
        pytest.fail(f"`mkdocs build --strict` failed:\n{log}", pytrace=False)
    return BuiltSite(shared / "site", record["seconds"], log, record["cpu_seconds"])


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


@pytest.fixture(scope="module")
def browser(site_url: str) -> Iterator[Any]:
    """A headless Chromium. Playwright cannot download its own browser here, so we pass the
    executable of the system's. Missing: a skip on a workstation, a failure in CI. Open only
    while the site is served and the module's tests run: even idle, Chromium takes CPU time."""
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
