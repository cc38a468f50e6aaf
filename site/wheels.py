"""The four eagerflow packages as wheels, for the site to serve (site/hooks.py publishes them
under ``wheels/``, and every chapter notebook's first cell installs them from there).

A wheel is built by pip from the package's folder, with the build backend the package names
(hatchling, installed in the development environment: ``--no-build-isolation`` needs nothing
from the network) and without its dependencies (``--no-deps``: eagerflow's own packages are
built here, NumPy comes from the reader's package index). Building the four costs about 2 s of
CPU, so the wheels are kept in ``build/wheel-cache/<hash>/``, under a hash of everything that
goes into them: the packages' files (but caches) and the repository's ``VERSION``.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The packages, lowest first: a notebook installs them in this order (pip resolves them
# together, but a reader reads the list).
PACKAGES = ("tensor", "autodiff", "graph", "nn")
CACHE_DIR = Path("build/wheel-cache")
# Files and folders that are made by using a package, not part of its source.
IGNORED_PARTS = {"__pycache__", ".pytest_cache", ".mypy_cache", "build", "dist"}
IGNORED_SUFFIXES = {".pyc", ".pyo"}


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
        with tempfile.TemporaryDirectory(dir=_made(cache)) as scratch:
            command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"]
            command += ["--no-build-isolation", "--wheel-dir", scratch]
            command += [str(root / "packages" / name) for name in PACKAGES]
            result = subprocess.run(command, capture_output=True, text=True, timeout=300)
            if result.returncode != 0:
                raise RuntimeError(f"pip wheel failed:\n{result.stdout}{result.stderr}")
            for old in cache.iterdir():  # one entry is enough: the sources have moved on
                if old.is_dir() and old.name != Path(scratch).name:
                    shutil.rmtree(old)
            Path(scratch).replace(folder)  # atomic: a folder is complete or absent
            _made(Path(scratch))  # for TemporaryDirectory's clean-up
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
