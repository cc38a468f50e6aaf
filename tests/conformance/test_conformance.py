"""eagerflow against TensorFlow: every case of ``cases.py`` run here and compared with what
TensorFlow 2.21 gave for it (``tensorflow_results.json``, recorded by ``record.py``, so CI needs
no TensorFlow): the dtype, the shape and the values of each result, and which inputs raise;
where both raise, the error classes, by the mapping of ``error_classes.py`` (TensorFlow's
``InvalidArgumentError`` agrees with eagerflow's, or a subclass: ``ShapeError``, ...).

A case that disagrees is one of two kinds, and each is listed with its reason:

- ``KEPT``: a difference eagerflow keeps on purpose. ``site/docs/tensorflow-names.md`` says so
  (the listed phrase must be on that page) and the case is pinned: it must still differ.
- ``TO_FIX`` (``disagreements.py``): a disagreement not resolved yet, by root cause. Each is an
  expected failure, strictly: a fix makes its case pass, and the run then fails until the
  case is taken off the list.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, ClassVar

import pytest

from eagerflow.tensor.execution import recording

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402
import namespaces  # noqa: E402
from disagreements import _ROOT_CAUSES, KEPT, TO_FIX  # noqa: E402
from error_classes import KEPT_CLASSES, agrees  # noqa: E402
from outcome import differences, outcome  # noqa: E402

RECORDED = json.loads((HERE / "tensorflow_results.json").read_text(encoding="utf8"))
NAMES_PAGE = (HERE.parents[1] / "site" / "docs" / "tensorflow-names.md").read_text("utf8")
EAGERFLOW = namespaces.eagerflow()


class _OpNames:
    """A recorder: the names of the ops the cases run (eagerly, through the seam)."""

    seen: ClassVar[set[str]] = set()
    cases_run: ClassVar[set[str]] = set()

    def record(self, op: Any, inputs: Any, attrs: Any, outputs: Any) -> None:
        self.seen.add(op.name)


def run_here(name: str) -> list[str]:
    """How eagerflow's outcome of case ``name`` differs from TensorFlow's recorded one."""
    with warnings.catch_warnings():  # NumPy's overflow and empty-mean warnings: compared below
        warnings.simplefilter("ignore")
        with recording(_OpNames()):
            ours = outcome(cases.CASES[name], EAGERFLOW)
    _OpNames.cases_run.add(name)
    return differences(ours, RECORDED["cases"][name])


def _param(name: str) -> object:
    if name in TO_FIX:
        return pytest.param(name, marks=pytest.mark.xfail(reason=TO_FIX[name], strict=True))
    return name


@pytest.mark.parametrize("name", [_param(n) for n in sorted(cases.CASES) if n not in KEPT])
def test_agrees_with_tensorflow(name: str) -> None:
    found = run_here(name)
    assert not found, f"{name}: " + "; ".join(found)


@pytest.mark.parametrize("name", sorted(KEPT))
def test_a_kept_difference_is_documented_and_still_there(name: str) -> None:
    phrase = KEPT[name]
    assert phrase in NAMES_PAGE, f"tensorflow-names.md does not say: {phrase!r}"
    assert run_here(name), f"{name} now agrees with TensorFlow: take it off KEPT"


def test_every_case_is_recorded() -> None:
    missing = sorted(set(cases.CASES) - set(RECORDED["cases"]))
    stale = sorted(set(RECORDED["cases"]) - set(cases.CASES))
    assert not missing and not stale, (
        f"re-record with `make conformance-record`: new {missing[:5]}, gone {stale[:5]}"
    )


def test_the_lists_name_cases() -> None:
    assert set(KEPT) <= set(cases.CASES) and set(TO_FIX) <= set(cases.CASES)
    assert not set(KEPT) & set(TO_FIX)
    assert all(_ROOT_CAUSES.values()), "a root cause with no case left: delete it"


RAISING = sorted(n for n in cases.CASES if "raises" in RECORDED["cases"].get(n, {}))


@functools.cache
def raised_here(name: str) -> type[BaseException] | None:
    """The class of what case ``name`` raised here, or None if it gave a value."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            cases.CASES[name](EAGERFLOW)
        except Exception as error:
            return type(error)
    return None


@pytest.mark.parametrize("name", RAISING)
def test_the_error_class_agrees_with_tensorflow(name: str) -> None:
    """Where TensorFlow raises, eagerflow raises the class ``error_classes.AGREEING`` maps
    TensorFlow's to, or one ``KEPT_CLASSES`` keeps (documented in tensorflow-names.md)."""
    theirs, ours = RECORDED["cases"][name]["raises"], raised_here(name)
    if ours is None:  # a value where TensorFlow raises: a disagreement of the value test's
        assert name in TO_FIX or name in KEPT, f"{name}: eagerflow does not raise"
        return
    if not agrees(theirs, ours):
        phrase = KEPT_CLASSES.get((theirs, ours.__name__))
        assert phrase, f"{name}: eagerflow raises {ours.__name__}, TensorFlow {theirs}"
        assert phrase in NAMES_PAGE, f"tensorflow-names.md does not say: {phrase!r}"


def test_each_kept_error_class_is_still_raised() -> None:
    """A kept pair of classes that no case shows any more is taken off ``KEPT_CLASSES``."""
    shown = {(RECORDED["cases"][n]["raises"], ours.__name__)
             for n in RAISING if (ours := raised_here(n)) is not None}  # fmt: skip
    assert set(KEPT_CLASSES) <= shown, f"no case raises {set(KEPT_CLASSES) - shown}"
    cited = "tests/conformance/error_classes.py"  # the page names the mapping's file
    assert f"`{cited}`" in NAMES_PAGE and (HERE.parents[1] / cited).is_file()


# Ops no case runs eagerly, each with where it is compared instead
NOT_RUN_BY_A_CASE = {
    "Placeholder": "graph-only: the graph and function cases feed placeholders",
    "NoOp": "graph-only: control dependencies' group op, in the graph cases",
    "PrintV2": "an effect (printing): tests/graph/test_print_in_graphs.py",
    "WriteSummary": "an effect (an event file): tests/graph/test_summary.py",
    "CollectiveAllReduce": "needs tasks: tests/distribute, against one process",
    "_Send": "needs tasks: tests/graph/partition, against the unsplit graph",
    "_Recv": "needs tasks: tests/graph/partition, against the unsplit graph",
}


def _registered_ops() -> set[str]:
    """The ops eagerflow's packages register, asked of a fresh Python (in this one, other
    tests have registered ops of their own)."""
    code = ("import eagerflow.nn, eagerflow.distribute.collective\n"
            "from eagerflow.tensor.registry import OPS\nprint(' '.join(OPS))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)  # fmt: skip
    return set(done.stdout.split())


def test_every_op_is_run_by_a_case() -> None:
    """Every registered op is run eagerly by some case, or named above with where it is
    compared. (Last in the file: it reads what the value tests above recorded.)"""
    if _OpNames.cases_run != set(cases.CASES):
        pytest.skip("run every case of the file to see which ops they cover")
    uncovered = _registered_ops() - _OpNames.seen
    assert uncovered <= set(NOT_RUN_BY_A_CASE), (
        f"ops no case runs: {sorted(uncovered - set(NOT_RUN_BY_A_CASE))}"
    )
    assert not set(NOT_RUN_BY_A_CASE) & _OpNames.seen, "a case runs it now: take it off the list"
