"""Each package builds into a wheel that ships only its own files, and the four wheels install
one on top of the other into a fresh virtual environment, each layer working without the ones
above it.

Slow (a few seconds of wheel building, one fresh venv, numpy from the package index):
``pytest -m "not slow"`` leaves it out.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
PACKAGES_DIR = REPO / "packages"
# lowest first; each depends on the one before
LAYERS = ("tensor", "autodiff", "graph", "nn", "distribute")
NO_VERSION_CHECK = "--disable-pip-version-check"
PIP_QUIET = [NO_VERSION_CHECK, "-q"]  # not for pip list/check: -q silences their output too
VERSION = (REPO / "VERSION").read_text().strip()  # every package's version (tests/test_version.py)
DIGITS_SHA256 = "d34c473237910a22ae422a2e5952e804f2ecffb8316eec3c9a6f3170e7dd8e1a"


# --------------------------------------------------------------------------- helpers


def _text(out: str | bytes | None) -> str:
    if out is None:
        return ""
    return out.decode(errors="replace") if isinstance(out, bytes) else out


def _describe(cmd: list[str], rc: object, stdout: object, stderr: object) -> str:
    return (
        f"$ {shlex.join(str(c) for c in cmd)}\n(exit {rc})\n"
        f"--- stdout ---\n{_text(stdout)}\n--- stderr ---\n{_text(stderr)}"
    )


def _run(
    cmd: list[str | Path],
    what: str,
    *,
    check: bool = True,
    timeout: float = 600,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd``; on a timeout, or a non-zero exit when ``check``, fail showing its output."""
    args = [str(c) for c in cmd]
    try:
        proc = subprocess.run(
            args, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            f"{what}: timed out after {timeout}s\n"
            + _describe(args, "timeout", exc.stdout, exc.stderr),
            pytrace=False,
        )
    if check and proc.returncode != 0:
        pytest.fail(
            f"{what} failed\n" + _describe(args, proc.returncode, proc.stdout, proc.stderr),
            pytrace=False,
        )
    return proc


# --------------------------------------------------------------------------- building


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    """Build the four wheels into one folder; ``{layer: wheel path}``."""
    wheel_dir = tmp_path_factory.mktemp("wheels")
    sources = [PACKAGES_DIR / layer for layer in LAYERS]
    pip_cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"]
    pip_cmd += [*PIP_QUIET, "-w", wheel_dir, *sources]
    proc = _run(pip_cmd, "pip wheel", check=False)
    if proc.returncode != 0:
        # Fall back to pypa/build, one package at a time; fail showing both attempts' output.
        first = _describe(pip_cmd, proc.returncode, proc.stdout, proc.stderr)
        for source in sources:
            build_cmd = [sys.executable, "-m", "build", "--wheel", "--no-isolation"]
            build_cmd += ["--outdir", wheel_dir, source]
            fallback = _run(build_cmd, "python -m build", check=False)
            if fallback.returncode != 0:
                pytest.fail(
                    f"cannot build {source.name}'s wheel.\npip wheel said:\n{first}\n\n"
                    "python -m build said:\n"
                    + _describe(build_cmd, fallback.returncode, fallback.stdout, fallback.stderr),
                    pytrace=False,
                )
    built: dict[str, Path] = {}
    for layer in LAYERS:
        found = sorted(wheel_dir.glob(f"eagerflow_{layer}-*.whl"))
        assert len(found) == 1, (
            f"expected one eagerflow_{layer} wheel in {wheel_dir}, found {[p.name for p in found]}"
            f" (the folder holds {sorted(p.name for p in wheel_dir.iterdir())})"
        )
        built[layer] = found[0]
    return built


@pytest.mark.parametrize("layer", LAYERS)
def test_wheel_ships_only_its_own_package(layer, wheels):
    wheel = wheels[layer]
    version = VERSION
    assert wheel.name == f"eagerflow_{layer}-{version}-py3-none-any.whl", (
        f"expected a pure-Python wheel of version {version}, got {wheel.name}"
    )
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if not n.endswith("/")]
        metadata = Parser().parsestr(
            zf.read(f"eagerflow_{layer}-{version}.dist-info/METADATA").decode()
        )
    listing = "\n  ".join(names)
    own = f"eagerflow/{layer}/"
    dist_info = f"eagerflow_{layer}-{version}.dist-info/"

    for required in (f"{own}__init__.py", f"{own}py.typed", f"{dist_info}licenses/LICENSE"):
        assert required in names, f"{wheel.name} lacks {required}; it holds:\n  {listing}"
    assert "eagerflow/__init__.py" not in names, (
        f"{wheel.name} ships eagerflow/__init__.py, which breaks the PEP 420 namespace package"
    )
    others = [
        n for n in names if any(n.startswith(f"eagerflow/{o}/") for o in LAYERS if o != layer)
    ]
    assert not others, f"{wheel.name} ships other packages' files: {others}"
    stray = [n for n in names if not n.startswith((own, dist_info))]
    assert not stray, f"{wheel.name} ships files outside {own} and {dist_info}: {stray}"

    # Every source file of the package made it into the wheel, and nothing else.
    src = PACKAGES_DIR / layer / "src"
    expected = sorted(
        p.relative_to(src).as_posix()
        for p in (src / "eagerflow" / layer).rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )
    shipped = sorted(n for n in names if n.startswith(own))
    assert shipped == expected, (
        f"{wheel.name}: source files missing from the wheel: "
        f"{sorted(set(expected) - set(shipped))}; in the wheel but not in src: "
        f"{sorted(set(shipped) - set(expected))}"
    )

    # Its metadata names it and depends on exactly the layer below (tensor: on numpy only).
    assert canonicalize_name(metadata["Name"]) == f"eagerflow-{layer}", metadata["Name"]
    assert metadata["Version"] == version
    requires = [Requirement(r) for r in metadata.get_all("Requires-Dist") or []]
    ours = sorted(str(r) for r in requires if canonicalize_name(r.name).startswith("eagerflow"))
    below = LAYERS.index(layer) - 1
    expected_ours = [] if below < 0 else [f"eagerflow-{LAYERS[below]}=={version}"]
    assert ours == expected_ours, f"{wheel.name} Requires-Dist on eagerflow: {ours}"
    if layer == "graph":  # numba only as the [jit] extra, onnx as the [onnx] one: never required
        numba = [r for r in requires if canonicalize_name(r.name) == "numba"]
        assert [str(r.marker) for r in numba] == ['extra == "jit"'], [str(r) for r in numba]
        onnx = [r for r in requires if canonicalize_name(r.name) == "onnx"]
        assert [str(r.marker) for r in onnx] == ['extra == "onnx"'], [str(r) for r in onnx]
    if layer == "distribute":  # MPI only as the [mpi] extra: never required
        mpi = sorted(canonicalize_name(r.name) for r in requires if r.marker)
        assert mpi == ["mpi4py", "mpich"], [str(r) for r in requires]
        assert all(str(r.marker) == 'extra == "mpi"' for r in requires if r.marker)
    if layer == "nn":  # the digits, byte for byte the checked file (tests/nn/test_datasets.py)
        with zipfile.ZipFile(wheel) as zf:
            digits = zf.read("eagerflow/nn/datasets/digits.npz")
        assert hashlib.sha256(digits).hexdigest() == DIGITS_SHA256
    if layer == "tensor":
        assert [canonicalize_name(r.name) for r in requires] == ["numpy"], (
            "eagerflow-tensor must depend on numpy only; Requires-Dist: "
            f"{[str(r) for r in requires]}"
        )


# --------------------------------------------------------------------------- installing

# Runs in the venv: for each layer named in argv, import eagerflow.<layer> and report the result.
_PROBE = """
import importlib, json, sys
out = {}
for layer in sys.argv[1:]:
    name = "eagerflow." + layer
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        out[layer] = {"error": "ModuleNotFoundError", "name": exc.name, "message": str(exc)}
    except BaseException as exc:
        out[layer] = {"error": type(exc).__name__, "name": None, "message": str(exc)}
    else:
        out[layer] = {"file": module.__file__}
print(json.dumps(out))
"""


def _venv_python(venv: Path) -> Path:
    if sys.platform == "win32":
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def _clean_env() -> dict[str, str]:
    """This process's environment without anything that would let the venv see other code."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PIP_USER")
    }
    env["PYTHONNOUSERSITE"] = "1"
    return env


def test_wheels_install_one_layer_at_a_time(wheels, tmp_path_factory):
    root = tmp_path_factory.mktemp("staged")
    venv = root / "venv"
    workdir = root / "cwd"  # an empty working directory, so nothing of the repository is importable
    workdir.mkdir()
    env = _clean_env()
    _run(
        [sys.executable, "-m", "venv", venv],
        "creating a fresh virtual environment",
        timeout=300,
        env=env,
    )
    python = _venv_python(venv)
    assert python.is_file(), f"python -m venv made no interpreter at {python}"
    wheel_dir = next(iter(wheels.values())).parent

    def in_venv(args: list[str | Path], what: str, **kw: object) -> subprocess.CompletedProcess:
        return _run([python, *args], what, cwd=workdir, env=env, **kw)

    def our_distributions(step: str) -> list[str]:
        proc = in_venv(["-m", "pip", "list", "--format=json", NO_VERSION_CHECK], f"pip list {step}")
        try:
            listed = json.loads(proc.stdout)
        except json.JSONDecodeError:
            pytest.fail(f"pip list {step} printed no JSON:\n{proc.stdout}\n{proc.stderr}")
        return sorted(
            canonicalize_name(d["name"])
            for d in listed
            if canonicalize_name(d["name"]).startswith("eagerflow")
        )

    def check_step(installed: tuple[str, ...], step: str) -> None:
        expected = sorted(f"eagerflow-{layer}" for layer in installed)
        assert our_distributions(step) == expected, f"{step}: pip list disagrees"
        proc = in_venv(["-c", _PROBE, *LAYERS], f"import probe {step}")
        probe = json.loads(proc.stdout.strip().splitlines()[-1])
        report = json.dumps(probe, indent=2)
        for layer in installed:
            file = probe[layer].get("file")
            assert file, f"{step}: `import eagerflow.{layer}` failed in the venv:\n{report}"
            assert Path(file).resolve().is_relative_to(venv.resolve()), (
                f"{step}: eagerflow.{layer} was imported from {file}, not from the venv {venv}"
            )
        for layer in LAYERS[len(installed) :]:
            outcome = probe[layer]
            assert outcome.get("error") == "ModuleNotFoundError", (
                f"{step}: eagerflow.{layer} is not installed, yet importing it gave:\n{report}"
            )
            # "eagerflow" while none of ours is installed, "eagerflow.<layer>" afterwards.
            assert outcome["name"] in ("eagerflow", f"eagerflow.{layer}"), (
                f"{step}: importing eagerflow.{layer} failed on another missing module "
                f"({outcome['name']}):\n{report}"
            )

    check_step((), "in the fresh venv")
    for i, layer in enumerate(LAYERS):
        step = f"after installing eagerflow-{layer}"
        # The wheel's own path (not just its name), so no index can supply another build of it;
        # its dependencies come from the wheel folder (ours) or the index (numpy).
        in_venv(
            ["-m", "pip", "install", *PIP_QUIET, "--find-links", wheel_dir, wheels[layer]],
            f"installing eagerflow-{layer} into the venv (if this is a network or index "
            "problem, the environment cannot run this test: fix it, don't skip)",
            timeout=900,
        )
        check_step(LAYERS[: i + 1], step)
        if layer == "tensor":
            proc = in_venv(
                ["-c", "import eagerflow.tensor; print(eagerflow.tensor.matmul([[2.]], [[2.]]))"],
                "matmul in the venv",
            )
            assert proc.stdout.strip() == "Tensor([[4.]], shape=(1, 1), dtype=float32)", (
                f"{step}: unexpected matmul output:\n{proc.stdout}\n{proc.stderr}"
            )
        if layer == "nn":  # the data file ships in the wheel and is found where it is installed
            proc = in_venv(
                ["-c", "from eagerflow.nn.datasets import load_digits\n"
                       "(x, y), (xt, yt) = load_digits(); print(x.shape, xt.shape, y.dtype)"],
                "load_digits in the venv",
            )  # fmt: skip
            assert proc.stdout.strip() == "(1437, 8, 8) (360, 8, 8) int64", (
                f"{step}: unexpected load_digits output:\n{proc.stdout}\n{proc.stderr}"
            )
    in_venv(["-m", "pip", "check", NO_VERSION_CHECK], "pip check with all four packages installed")
