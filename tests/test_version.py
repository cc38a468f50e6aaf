"""One version for the five packages, written once: the repository's VERSION file.

Each package's build reads it (``[tool.hatch.version]``), and the three packages that depend on
the layer below pin it at that version through their ``hatch_build.py`` hook. What cannot be
shared has copies, kept equal here: the hook (a source distribution must contain it) and the
LICENSE (a package's license files must sit inside its folder).
"""

from __future__ import annotations

import importlib
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
PACKAGES_DIR = REPO / "packages"
# lowest first; each depends on the one before
LAYERS = ("tensor", "autodiff", "graph", "nn", "distribute")
VERSION = (REPO / "VERSION").read_text().strip()
REINSTALL = "an installed package is stale: run `make setup` (or pip install -e packages/<layer>)"


def _project(layer: str) -> dict:
    with open(PACKAGES_DIR / layer / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]


@pytest.mark.parametrize("layer", LAYERS)
def test_dunder_version_is_the_version_file(layer):
    module = importlib.import_module(f"eagerflow.{layer}")
    assert module.__version__ == VERSION, REINSTALL


@pytest.mark.parametrize("layer", LAYERS[1:])
def test_each_package_pins_the_layer_below_at_the_same_version(layer):
    below = LAYERS[LAYERS.index(layer) - 1]
    requires = [Requirement(r) for r in metadata.requires(f"eagerflow-{layer}") or []]
    required = [str(r) for r in requires if r.marker is None]  # not extras, like graph[jit]
    assert required == [f"eagerflow-{below}=={VERSION}"], REINSTALL


@pytest.mark.parametrize("layer", LAYERS)
def test_no_pyproject_writes_a_version(layer):
    project = _project(layer)
    assert "version" in project["dynamic"] and "version" not in project
    pins = [d for d in project.get("dependencies", []) if d.startswith("eagerflow")]
    assert not pins, f"{layer}: eagerflow pins belong to hatch_build.py, not pyproject.toml"


def test_the_hooks_are_identical_copies():
    hooks = {layer: (PACKAGES_DIR / layer / "hatch_build.py").read_text() for layer in LAYERS[1:]}
    assert len(set(hooks.values())) == 1, "packages/*/hatch_build.py differ: copy one to all"


@pytest.mark.parametrize("layer", LAYERS)
def test_each_package_carries_the_repository_license(layer):
    assert (PACKAGES_DIR / layer / "LICENSE").read_text() == (REPO / "LICENSE").read_text()
