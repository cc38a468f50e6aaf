"""The architecture inside the packages: no import cycles, stages of ``eagerflow.graph`` that
import only downward, and modules and functions short enough to read.

Imports are read with ``ast`` as ``../shared/tools/architecture_report.py`` reads them: every
import counts, one inside a function too, except those under ``if TYPE_CHECKING:``; ``from a
import b`` imports ``a`` (and ``a.b`` when that is a module).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES_DIR = REPO / "packages"
# The stages of eagerflow.graph, lowest first: each imports only the ones before it.
GRAPH_STAGES = ("core", "autograph", "tracing", "compiler", "export")
# every package, held to the limits
SIZE_CHECKED = ("tensor", "autodiff", "graph", "nn", "distribute")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


def _modules() -> dict[str, tuple[Path, bool]]:
    """Every module under packages/*/src: dotted name -> (file, is a package)."""
    found = {}
    for path in PACKAGES_DIR.glob("*/src/eagerflow/**/*.py"):
        src = next(p for p in path.parents if p.name == "src")
        parts = path.relative_to(src).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _type_checking_lines(tree: ast.Module) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                skipped.update(n.lineno for n in ast.walk(statement) if hasattr(n, "lineno"))
    return skipped


def _imported(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".")[: None if is_package else -1]
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join([*parts, base] if base else parts)
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def import_graph() -> dict[str, set[str]]:
    """module -> the modules of packages/*/src it imports (not its own package)."""
    modules = _modules()
    edges: dict[str, set[str]] = {m: set() for m in modules}
    for module, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf8"))
        skipped = _type_checking_lines(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom) or node.lineno in skipped:
                continue
            for target in _imported(module, is_package, node):
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target not in (module, module.rpartition(".")[0]):
                    edges[module].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _stage(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] == ["eagerflow", "graph"] and len(parts) > 2 and parts[2] in GRAPH_STAGES:
        return parts[2]
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]


@pytest.mark.parametrize("layer", ["tensor", "autodiff", "graph", "nn", "distribute"])
def test_no_module_is_in_an_import_cycle(layer: str) -> None:
    prefix = f"eagerflow.{layer}."
    found = [c for c in cycles(import_graph()) if any(m.startswith(prefix) for m in c)]
    assert found == []


def test_graph_stages_import_only_downward() -> None:
    upward = []
    for module, targets in import_graph().items():
        stage = _stage(module)
        if stage is None:
            continue
        for target in targets:
            other = _stage(target)
            if other is not None and GRAPH_STAGES.index(other) > GRAPH_STAGES.index(stage):
                upward.append(f"{module} -> {target}")
    assert upward == []


def test_every_graph_module_is_in_a_stage() -> None:
    loose = [m for m in import_graph() if m.startswith("eagerflow.graph.") and _stage(m) is None]
    assert loose == []


@pytest.mark.parametrize("layer", SIZE_CHECKED)
def test_modules_and_functions_are_short(layer: str) -> None:
    too_long = []
    for path in sorted((PACKAGES_DIR / layer / "src").rglob("*.py")):
        source = path.read_text(encoding="utf8")
        name = path.relative_to(REPO)
        if len(source.splitlines()) > MAX_MODULE_LINES:
            too_long.append(f"{name}")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}:{node.name}")
    assert too_long == [], "over the limits"


# --- ARCHITECTURE.md keeps its word -------------------------------------------------------------
ARCHITECTURE = (REPO / "ARCHITECTURE.md").read_text(encoding="utf8")


def test_the_pictured_stages_are_the_stages() -> None:
    """The diagram chains the graph's stages in the order this test enforces, and draws a box
    for every folder of eagerflow.graph."""
    assert "    " + " --> ".join(GRAPH_STAGES) + "\n" in ARCHITECTURE
    folders = {p.name for p in (PACKAGES_DIR / "graph/src/eagerflow/graph").iterdir()}
    assert {f for f in folders if not f.startswith(("_", "py.typed"))} == set(GRAPH_STAGES)
    for stage in GRAPH_STAGES:
        assert f'{stage}["{stage}/<br/>' in ARCHITECTURE, stage


def test_every_process_wide_variable_is_documented() -> None:
    """A module-level variable that a function rebinds (``global x``) is state of the whole
    process: ARCHITECTURE.md's table must name it."""
    section = ARCHITECTURE.split("## Process-wide state", 1)[1].split("\n## ", 1)[0]
    rebound = set()
    for path in PACKAGES_DIR.glob("*/src/eagerflow/**/*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf8"))):
            if isinstance(node, ast.Global):
                rebound.update(f"{path.name}: {name}" for name in node.names)
    missing = sorted(r for r in rebound if f"`{r.split(': ')[1]}`" not in section)
    assert rebound and missing == [], missing
