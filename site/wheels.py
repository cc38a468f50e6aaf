"""The four eagerflow packages as wheels, for the site to serve (site/hooks.py publishes them
under ``wheels/``, and every chapter notebook's first cell installs them from there).

Each wheel is built by the build backend its package names, hatchling (in the development
environment, so nothing comes from the network), called in this process: what ``pip wheel
--no-deps --no-build-isolation packages/<name>`` does through hatchling's PEP 517 hook, for
0.3 s of CPU instead of 2.3 s (pip and a backend process per package start in 2 s). The wheels
are kept in ``build/wheel-cache/<hash>/``, under a hash of everything that goes into them: the
packages' files (but caches) and the repository's ``VERSION``.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

# The packages, lowest first: a notebook installs them in this order (pip resolves them
# together, but a reader reads the list).
PACKAGES = ("tensor", "autodiff", "graph", "nn")
CACHE_DIR = Path("build/wheel-cache")
SCRATCH = "building-"  # a folder of the cache whose wheels are being built
# Files and folders that are made by using a package, not part of its source.
IGNORED_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", "build", "dist"}
IGNORED_SUFFIXES = {".pyc", ".pyo"}


def present(root: Path) -> bool:
    """True if ``root`` holds the four packages (a test's throw-away site holds none)."""
    return all((root / "packages" / name / "pyproject.toml").is_file() for name in PACKAGES)


def source_files(root: Path) -> list[Path]:
    """What the wheels are built from: every file of ``packages/<name>/`` and ``VERSION``."""
    files = [root / "VERSION"]
    for name in PACKAGES:
        for path in sorted((root / "packages" / name).rglob("*")):
            relative = path.relative_to(root).parts
            if not path.is_file() or path.suffix in IGNORED_SUFFIXES:
                continue
            if any(part in IGNORED_PARTS or part.endswith(".egg-info") for part in relative):
                continue
            files.append(path)
    return files


def sources_hash(root: Path) -> str:
    """A hash of the names and contents of ``source_files``."""
    digest = hashlib.sha256()
    for path in source_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_wheels(root: Path) -> list[Path]:
    """The four wheels of the packages under ``root``, lowest first: from the cache when their
    source is unchanged, else built now (and the cache's older entries removed)."""
    cache = root / CACHE_DIR
    folder = cache / sources_hash(root)
    if not _complete(folder):
        from hatchling.builders.wheel import WheelBuilder  # only when there is work

        scratch = Path(tempfile.mkdtemp(prefix=SCRATCH, dir=_made(cache)))
        try:
            for name in PACKAGES:
                builder = WheelBuilder(str(root / "packages" / name))
                list(builder.build(directory=str(scratch), versions=["standard"]))
            for old in cache.iterdir():  # one entry is enough: the sources have moved on
                if old.is_dir() and not old.name.startswith(SCRATCH):  # another build's
                    shutil.rmtree(old, ignore_errors=True)
            try:
                scratch.replace(folder)  # atomic: a folder is complete or absent
            except OSError:
                if not _complete(folder):  # else a build running beside this one made it
                    raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return [_wheel(folder, name) for name in PACKAGES]


def _made(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _complete(folder: Path) -> bool:
    return folder.is_dir() and all(
        len(list(folder.glob(f"eagerflow_{name}-*.whl"))) == 1 for name in PACKAGES
    )


def _wheel(folder: Path, name: str) -> Path:
    (path,) = folder.glob(f"eagerflow_{name}-*.whl")
    return path
