"""The site's executed code blocks: timed, and (when asked) cached between builds.

site/hooks.py installs ``install()`` in place of markdown-exec's Python runner. Three jobs:

1. **Profile.** Each block's CPU time (this process's, plus the children it ran and waited
   for, such as ``pdb_transcript``'s Python) is recorded with its page and session; with
   ``EAGERFLOW_SITE_PROFILE=1`` the build log ends with a table of pages and of the costliest
   blocks, so a slow build says where its time goes.
2. **Cache** (only with ``EAGERFLOW_SITE_CACHE=1``, which ``make serve`` sets; off for
   ``mkdocs build``, ``make test`` and CI, which always run every block). A block's output is
   stored under ``build/exec-cache/``, keyed by a hash of: the packages' and the chapter
   helpers' source (``packages/*/src/**/*.py``, ``tutorial.py``), the page, the session, and
   the source of *every block of its session up to and including it* (a later block depends
   on what the earlier ones defined). On a hit the stored output is shown without running
   the block; the files the block wrote into the page's folder of the built site (chapter
   15's ``fizzbuzz.onnx``) are written back, and the claims it asserted (``tutorial.claim``)
   are asserted again, so the page's ``claims.json`` is what a full run writes. When a block
   misses after blocks of its session that hit, those are run first (their state is needed),
   then the block itself.
3. **Keep what each block printed** (``printed``, by page): site/hooks.py gives each chapter
   notebook's cells those outputs, so a notebook shows what the page shows without running.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import resource
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CACHE_VARIABLE = "EAGERFLOW_SITE_CACHE"
PROFILE_VARIABLE = "EAGERFLOW_SITE_PROFILE"
CACHE_DIR = Path("build/exec-cache")
# Written by tutorial.claim; restored by asserting the claims again, not as a file.
CLAIMS_FILE = "claims.json"
# The environment variables a page's code may read (site/hooks.py part 4): part of the key.
PAGE_VARIABLES = ("EAGERFLOW_ONNXRUNTIME_WEB",)
FORMAT = 1  # bump when what an entry holds changes


def enabled_by_environment() -> bool:
    return os.environ.get(CACHE_VARIABLE, "").strip().lower() in ("1", "true", "yes", "on")


def _cpu() -> float:
    """CPU seconds of this process and of its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def sources_hash(root: Path, tutorial: Path) -> str:
    """A hash of the packages' Python source and of the chapters' helpers (``tutorial.py`` and
    the modules next to it, such as chapter 13's ``workloads.py``)."""
    digest = hashlib.sha256()
    helpers = {tutorial, *tutorial.parent.glob("*.py")}
    files = [*sorted(root.glob("packages/*/src/**/*.py")), *sorted(helpers)]
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


@dataclass
class BlockRecord:
    page: str
    session: str | None
    number: int  # the block's place in its page (1, 2, ...)
    cpu: float
    hit: bool
    first_line: str


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file under ``folder`` (but claims.json): its modification time and size."""
    if not folder.is_dir():
        return {}
    found = {}
    for path in folder.rglob("*"):
        if path.is_file() and path.name != CLAIMS_FILE:
            stat = path.stat()
            found[path.relative_to(folder).as_posix()] = (stat.st_mtime_ns, stat.st_size)
    return found


@dataclass
class ExecCache:
    """The state of one build process (``mkdocs serve`` keeps it across rebuilds)."""

    root: Path
    tutorial: Path
    enabled: bool = False
    page: str = ""
    page_dir: Path | None = None
    records: list[BlockRecord] = field(default_factory=list)
    executed: int = 0  # blocks actually run (tests count them)
    hits: int = 0
    # each page's blocks, in the order they ran: (code, what it printed)
    printed: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    _sources: str = ""
    _chains: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    # blocks of a session shown from the cache and not run yet: (code, run's keyword arguments)
    _pending: dict[tuple[str, str], list[tuple[str, dict[str, Any]]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    _numbers: dict[str, int] = field(default_factory=lambda: defaultdict(int))

    @property
    def folder(self) -> Path:
        return self.root / CACHE_DIR

    def start_build(self) -> None:
        self.enabled = enabled_by_environment()
        self.records.clear()
        self.executed = self.hits = 0
        self.printed.clear()
        self._sources = sources_hash(self.root, self.tutorial) if self.enabled else ""

    def start_page(self, page: str, page_dir: Path | None) -> None:
        self.page, self.page_dir = page, page_dir
        self._numbers[page] = 0
        self.printed[page] = []
        for key in [k for k in self._chains if k[0] == page]:
            del self._chains[key]
            self._pending.pop(key, None)

    def _key(self, code: str, session: str | None, options: dict[str, Any]) -> str:
        chain_hash = hashlib.sha256(code.encode()).hexdigest()
        if session is not None:
            chain = self._chains.setdefault((self.page, session), [])
            chain.append(
                hashlib.sha256((chain[-1] if chain else "").encode() + code.encode()).hexdigest()
            )
            chain_hash = chain[-1]
        material = {
            "format": FORMAT,
            "sources": self._sources,
            "page": self.page,
            "session": session,
            "chain": chain_hash,
            "options": sorted((k, str(v)) for k, v in options.items()),
            "environment": [os.environ.get(name) for name in PAGE_VARIABLES],
            "python": sys.version,
        }
        return hashlib.sha256(json.dumps(material).encode()).hexdigest()

    def run(self, real: Callable[..., str], code: str, **options: Any) -> str:
        """Run one block through markdown-exec's ``real`` runner, or show it from the cache."""
        session = options.get("session")
        self._numbers[self.page] += 1
        number = self._numbers[self.page]
        first_line = next((line for line in code.splitlines() if line.strip()), "")[:60]
        start = _cpu()
        key = self._key(code, session, options) if self.enabled else ""
        entry_path = self.folder / key[:2] / f"{key}.json"
        if self.enabled and entry_path.is_file():
            try:
                entry = json.loads(entry_path.read_text(encoding="utf-8"))
                output = self._restore(entry)
            except (OSError, ValueError, KeyError):
                pass  # a broken entry: run the block instead
            else:
                self.hits += 1
                self.printed.setdefault(self.page, []).append((code, output))
                if session is not None:
                    self._pending[(self.page, session)].append((code, options))
                self.records.append(
                    BlockRecord(self.page, session, number, _cpu() - start, True, first_line)
                )
                return output
        if session is not None:  # the state the blocks shown from the cache would have made
            for earlier_code, earlier_options in self._pending.pop((self.page, session), []):
                self.executed += 1
                real(earlier_code, **earlier_options)
        before = _snapshot(self.page_dir) if self.enabled and self.page_dir else {}
        claims_before = len(_claims())
        self.executed += 1
        output = real(code, **options)  # an ExecutionError propagates: nothing stored
        self.printed.setdefault(self.page, []).append((code, output))
        if self.enabled:
            self._store(entry_path, output, before, _claims()[claims_before:])
        self.records.append(
            BlockRecord(self.page, session, number, _cpu() - start, False, first_line)
        )
        return output

    def _store(self, path: Path, output: str, before: dict[str, Any], claims: list[str]) -> None:
        files = {}
        if self.page_dir is not None:
            for name, stamp in _snapshot(self.page_dir).items():
                if before.get(name) != stamp:
                    data = (self.page_dir / name).read_bytes()
                    files[name] = base64.b64encode(data).decode("ascii")
        entry = {"output": output, "files": files, "claims": claims}
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(entry), encoding="utf-8")
        temporary.replace(path)

    def _restore(self, entry: dict[str, Any]) -> str:
        output = entry["output"]
        if self.page_dir is not None:
            for name, data in entry["files"].items():
                target = self.page_dir / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(base64.b64decode(data))
        if entry["claims"]:
            import tutorial  # the chapters' helpers (site/hooks.py puts their folder on sys.path)

            for sentence in entry["claims"]:
                tutorial.claim(sentence, True)
        return str(output)

    def report(self) -> str:
        """A table of the CPU seconds of each page's blocks, and of the ten costliest blocks."""
        pages: dict[str, list[BlockRecord]] = defaultdict(list)
        for record in self.records:
            pages[record.page].append(record)
        lines = [f"{'page':<40} {'blocks':>6} {'run':>4} {'CPU s':>7}"]
        ranked = sorted(pages.items(), key=lambda item: -sum(r.cpu for r in item[1]))
        for page, records in ranked:
            run = sum(not r.hit for r in records)
            total = sum(r.cpu for r in records)
            lines.append(f"{page:<40} {len(records):>6} {run:>4} {total:>7.2f}")
        total = sum(r.cpu for r in self.records)
        lines.append(f"{'all blocks':<40} {len(self.records):>6} {self.executed:>4} {total:>7.2f}")
        lines.append("")
        lines.append(f"{'costliest blocks':<52} {'CPU s':>7}")
        for r in sorted(self.records, key=lambda r: -r.cpu)[:15]:
            lines.append(f"{r.page} #{r.number}: {r.first_line[:36]:<36} {r.cpu:>7.2f}")
        return "\n".join(lines)


def _claims() -> list[str]:
    module = sys.modules.get("tutorial")
    return list(getattr(module, "CLAIMS", []))


def install(cache: ExecCache) -> None:
    """Put ``cache.run`` in place of markdown-exec's Python runner (once per process)."""
    from markdown_exec._internal.formatters import python as formatter

    real = getattr(formatter, "_eagerflow_real_run", None)
    if real is None:
        real = formatter._run_python
        formatter._eagerflow_real_run = real  # type: ignore[attr-defined]

    def run(code: str, **options: Any) -> str:
        return cache.run(real, code, **options)

    formatter._run_python = run  # looked up by name at each call of _format_python
