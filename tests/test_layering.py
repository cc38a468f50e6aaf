"""The monorepo's structural rules.

* Each layer imports only the layers below it: tensor < autodiff < graph < nn < distribute.
  Checked twice: at run time (importing a layer in a fresh interpreter loads no higher layer)
  and statically (no ``.py`` file under ``packages/<layer>/src`` names a higher layer in an
  import).
* Packages talk only through names they declare public: every module declares ``__all__``,
  every import from another layer names something in its ``__all__`` (not starting with
  ``_``), and no file reads a private attribute (``x._name``) that its own layer never
  defines, such as ``Variable._array`` from outside autodiff.
* ``eagerflow`` is a PEP 420 namespace package: no ``eagerflow/__init__.py`` anywhere, and every
  package ships its ``py.typed`` marker.
* ``site/`` is source: ``.gitignore`` must not ignore it.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES_DIR = REPO / "packages"
LAYERS = ("tensor", "autodiff", "graph", "nn", "distribute")  # lowest first


def higher_layers(layer: str) -> tuple[str, ...]:
    return LAYERS[LAYERS.index(layer) + 1 :]


# --------------------------------------------------------------------------- the static checker


def _layer_of(module: str | None) -> str | None:
    """``eagerflow.graph.core.session`` -> ``graph``; outside ``eagerflow.<layer>``: None."""
    if not module:
        return None
    parts = module.split(".")
    if parts[0] == "eagerflow" and len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return None


def _resolve_relative(module: str | None, level: int, package: str | None) -> str | None:
    """Absolute name of ``from <level dots><module> import ...`` written inside ``package``."""
    if level == 0:
        return module
    if not package:
        return None
    base = package.split(".")
    if level - 1 > len(base) - 1:
        return None  # beyond the top-level package: Python itself would refuse it
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, module] if module else base)


def find_upward_imports(
    source: str, filename: str, layer: str, package: str | None = None
) -> list[str]:
    """Every import in ``source`` that names a layer above ``layer``, as ``file:line: code``.

    ``package`` is the dotted package the file belongs to (``eagerflow.tensor`` for
    ``eagerflow/tensor/math_ops.py``); it is only needed to resolve relative imports. Understood:
    ``import eagerflow.X[.sub] [as y]``, ``from eagerflow.X[.sub] import ...``,
    ``from eagerflow import X``, their relative spellings, and ``importlib.import_module`` /
    ``__import__`` called with a literal string.
    """
    forbidden = set(higher_layers(layer))
    tree = ast.parse(source, filename=filename)
    lines = source.splitlines()
    found: list[str] = []

    def report(node: ast.AST, named: str) -> None:
        lineno = getattr(node, "lineno", 0)
        code = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ast.unparse(node)
        found.append(f"{filename}:{lineno}: {code}  (imports {named}, above {layer})")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _layer_of(alias.name) in forbidden:
                    report(node, alias.name)
        elif isinstance(node, ast.ImportFrom):
            module = _resolve_relative(node.module, node.level, package)
            if _layer_of(module) in forbidden:
                report(node, str(module))
            elif module == "eagerflow":
                for alias in node.names:
                    if alias.name in forbidden:
                        report(node, f"eagerflow.{alias.name}")
        elif (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in ("import_module", "__import__") and (
                _layer_of(node.args[0].value) in forbidden
            ):
                report(node, node.args[0].value)
    return found


def _python_files(layer: str) -> list[Path]:
    src = PACKAGES_DIR / layer / "src"
    return sorted(p for p in src.rglob("*.py") if "__pycache__" not in p.parts)


def _package_of(path: Path, layer: str) -> str:
    """The package a file belongs to: ``src/eagerflow/tensor/x.py`` -> ``eagerflow.tensor``."""
    return ".".join(path.relative_to(PACKAGES_DIR / layer / "src").parts[:-1])


def test_the_four_layers_are_the_packages_on_disk():
    on_disk = sorted(p.name for p in PACKAGES_DIR.iterdir() if (p / "pyproject.toml").is_file())
    assert on_disk == sorted(LAYERS), (
        f"packages/ holds {on_disk}, the layering tests know {list(LAYERS)}: "
        "add a new package to LAYERS in tests/test_layering.py at its place in the order"
    )


@pytest.mark.parametrize("layer", LAYERS)
def test_no_static_import_of_a_higher_layer(layer):
    files = _python_files(layer)
    assert files, f"no .py files found under {PACKAGES_DIR / layer / 'src'}"
    problems: list[str] = []
    for path in files:
        problems += find_upward_imports(
            path.read_text(encoding="utf-8"),
            str(path.relative_to(REPO)),
            layer,
            package=_package_of(path, layer),
        )
    assert not problems, f"eagerflow.{layer} imports a higher layer:\n" + "\n".join(problems)


# The checker itself must be able to fail.
_FORBIDDEN_IN_TENSOR = [
    # (source, line of the offending import, the module it names)
    ("import eagerflow.graph\n", 1, "eagerflow.graph"),
    ("import numpy as np, eagerflow.nn.layers as L\n", 1, "eagerflow.nn.layers"),
    ("from eagerflow.autodiff import GradientTape\n", 1, "eagerflow.autodiff"),
    ("from eagerflow.graph.core.session import Session\n", 1, "eagerflow.graph.core.session"),
    ("from eagerflow import tensor, nn\n", 1, "eagerflow.nn"),
    ("from .. import autodiff\n", 1, "eagerflow.autodiff"),
    ("from ..graph import Graph\n", 1, "eagerflow.graph"),
    ("def f():\n    from eagerflow.nn import Model\n", 2, "eagerflow.nn"),
    ("import importlib\nimportlib.import_module('eagerflow.autodiff')\n", 2, "eagerflow.autodiff"),
]


@pytest.mark.parametrize(("source", "line", "named"), _FORBIDDEN_IN_TENSOR)
def test_the_static_checker_reports_a_forbidden_import(source, line, named):
    found = find_upward_imports(source, "fake.py", "tensor", package="eagerflow.tensor")
    assert len(found) == 1, found
    assert found[0].startswith(f"fake.py:{line}: "), found
    assert f"(imports {named}, above tensor)" in found[0], found


def test_the_static_checker_accepts_allowed_imports():
    source = textwrap.dedent(
        """
        import eagerflow
        import eagerflow.tensor
        import eagerflow.tensor.math_ops as m
        from eagerflow.tensor import matmul
        from eagerflow import tensor, autodiff
        from . import dtypes
        from .registry import OpDef
        from .. import tensor as t
        import eagerflow_graph_helpers
        from eagerflow.graphics import plot
        importlib.import_module("eagerflow.tensor")
        """
    )
    assert find_upward_imports(source, "ok.py", "autodiff", package="eagerflow.autodiff") == []
    # The top layer may import every other one.
    assert find_upward_imports("import eagerflow.graph\n", "ok.py", "nn") == []


# --------------------------------------------------------------------------- public interfaces


def _module_file(module: str) -> Path | None:
    """``eagerflow.tensor.nest`` -> its file under packages/, or None if it is not a module."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "eagerflow" or parts[1] not in LAYERS:
        return None
    base = PACKAGES_DIR / parts[1] / "src" / Path(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return base.with_suffix(".py") if base.with_suffix(".py").is_file() else None


def declared_all(source: str) -> set[str] | None:
    """The names in a module's ``__all__`` (None if it declares none)."""
    for node in ast.parse(source).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__":
            return set(ast.literal_eval(node.value))  # type: ignore[union-attr]
    return None


def _public_names(module: str) -> set[str] | None:
    path = _module_file(module)
    return None if path is None else declared_all(path.read_text(encoding="utf-8"))


def defined_attributes(sources: list[str]) -> set[str]:
    """Every name a layer's own code defines: attributes it assigns, functions, classes,
    arguments and variables. A private attribute a file reads must be among them."""
    names: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def find_private_uses(
    source: str, filename: str, layer: str, own: set[str], public: Any = _public_names
) -> list[str]:
    """Every place ``source`` (a file of ``layer``) uses another layer's non-public name.

    ``public(module)`` gives a module's ``__all__`` (None: none declared); ``own`` is what
    the layer itself defines (see ``defined_attributes``).
    """
    tree = ast.parse(source, filename=filename)
    found: list[str] = []
    aliases: dict[str, str] = {}  # `import eagerflow.tensor as ef` -> {"ef": "eagerflow.tensor"}

    def report(node: ast.AST, what: str) -> None:
        found.append(f"{filename}:{getattr(node, 'lineno', 0)}: {what}")

    def check(node: ast.AST, module: str, name: str) -> None:
        names = public(module)
        if names is None:
            report(node, f"{module} declares no __all__ (imported: {name})")
        elif name.startswith("_") or name not in names:
            report(node, f"{module}.{name} is not in its __all__")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _layer_of(node.module) not in (None, layer):
            for alias in node.names:
                check(node, str(node.module), alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _layer_of(alias.name) not in (None, layer) and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in aliases:
            check(node, aliases[node.value.id], node.attr)
        elif node.attr.startswith("_") and not node.attr.startswith("__") and node.attr not in own:
            report(node, f"reads .{node.attr}, a private attribute of another layer")
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_every_module_declares_all(layer):
    missing = [
        str(path.relative_to(REPO))
        for path in _python_files(layer)
        if declared_all(path.read_text(encoding="utf-8")) is None
    ]
    assert not missing, "these modules declare no __all__ (what other layers may use):\n" + (
        "\n".join(missing)
    )


@pytest.mark.parametrize("layer", LAYERS[1:])
def test_layers_use_only_public_names_of_the_layers_below(layer):
    files = _python_files(layer)
    sources = [path.read_text(encoding="utf-8") for path in files]
    own = defined_attributes(sources)
    problems: list[str] = []
    for path, source in zip(files, sources, strict=True):
        problems += find_private_uses(source, str(path.relative_to(REPO)), layer, own)
    assert not problems, f"eagerflow.{layer} uses names not declared public:\n" + "\n".join(
        problems
    )


def _fake_public(module: str) -> set[str] | None:
    return {"eagerflow.tensor": {"Tensor"}, "eagerflow.tensor.nest": {"flatten"}}.get(module)


_PRIVATE_USES = [
    ("from eagerflow.tensor.nest import _is_flat\n", "eagerflow.tensor.nest._is_flat is not in"),
    ("from eagerflow.tensor.nest import pack\n", "eagerflow.tensor.nest.pack is not in"),
    ("from eagerflow.tensor.rules import fmt\n", "eagerflow.tensor.rules declares no __all__"),
    ("import eagerflow.tensor as ef\nef.secret\n", "eagerflow.tensor.secret is not in"),
    ("def f(v):\n    return v._array\n", "reads ._array, a private attribute"),
]


@pytest.mark.parametrize(("source", "message"), _PRIVATE_USES)
def test_the_interface_checker_reports_a_private_use(source, message):
    found = find_private_uses(source, "fake.py", "graph", {"_own"}, _fake_public)
    assert len(found) == 1 and message in found[0], found


def test_the_interface_checker_accepts_public_uses():
    source = textwrap.dedent(
        """
        import eagerflow.tensor as ef
        from eagerflow.tensor import Tensor
        from eagerflow.tensor.nest import flatten
        from eagerflow.graph.core.graph import anything  # its own layer
        ef.Tensor
        self._own
        x.__class__
        """
    )
    assert find_private_uses(source, "ok.py", "graph", {"_own"}, _fake_public) == []


# --------------------------------------------------------------------------- the dynamic check


@pytest.mark.parametrize("layer", LAYERS[:-1])
def test_importing_a_layer_loads_no_higher_layer(layer, tmp_path):
    code = textwrap.dedent(
        f"""
        import json, sys
        import eagerflow.{layer}
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("eagerflow"))))
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # keep the repository root off sys.path
        timeout=120,
    )
    assert proc.returncode == 0, (
        f"`import eagerflow.{layer}` failed in {sys.executable}:\n"
        f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    )
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    assert f"eagerflow.{layer}" in loaded, loaded
    higher = [m for m in loaded if _layer_of(m) in higher_layers(layer)]
    assert not higher, f"`import eagerflow.{layer}` also loaded higher layers: {higher}"


# --------------------------------------------------------------------------- namespace package


def test_no_eagerflow_init_anywhere():
    offenders = sorted(
        str(p.relative_to(REPO))
        for p in PACKAGES_DIR.rglob("eagerflow/__init__.py")
        if "__pycache__" not in p.parts
    )
    assert not offenders, (
        "eagerflow is a PEP 420 namespace package; these files break it: " + ", ".join(offenders)
    )


@pytest.mark.parametrize("layer", LAYERS)
def test_package_has_init_and_py_typed(layer):
    pkg = PACKAGES_DIR / layer / "src" / "eagerflow" / layer
    assert (pkg / "__init__.py").is_file(), f"missing {pkg / '__init__.py'}"
    assert (pkg / "py.typed").is_file(), f"missing {pkg / 'py.typed'} (PEP 561 marker)"


# --------------------------------------------------------------------------- .gitignore


@pytest.mark.parametrize("path", ["site/docs/index.md", "site/mkdocs.yml"])
def test_gitignore_does_not_ignore_site(path):
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed: cannot ask git whether site/ is ignored")
    inside = subprocess.run(
        [git, "rev-parse", "--is-inside-work-tree"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        pytest.skip(f"{REPO} is not a git work tree: {inside.stderr.strip()}")
    proc = subprocess.run(
        [git, "check-ignore", "-q", path], capture_output=True, text=True, cwd=REPO
    )
    if proc.returncode == 0:
        why = subprocess.run(
            [git, "check-ignore", "-v", path], capture_output=True, text=True, cwd=REPO
        ).stdout.strip()
        pytest.fail(f"{path} is ignored by git, but site/ is source and must stay tracked: {why}")
    assert proc.returncode == 1, (
        f"git check-ignore failed (exit {proc.returncode}): {proc.stderr.strip()}"
    )
