"""Every comparative sentence about time is computed from its measurement or asserted at build.

The chapters time things only through the helpers of ``site/docs/chapters/tutorial.py``:
``race`` (ways of doing the same work, in interleaved rounds, the first call apart) and
``stopwatch`` (one long run). A sentence that compares is printed by the page's code from the
numbers, and ``claim`` asserts the orders the prose relies on, failing the build when they
do not hold; each claim that held is written to the page's ``claims.json``.
"""

from __future__ import annotations

import json
import re
import sys

import pytest
from sitetools import ROOT, BuiltSite

CHAPTERS = ROOT / "site" / "docs" / "chapters"
sys.path.insert(0, str(CHAPTERS))

import tutorial  # noqa: E402

# The pages that time something: each must do it through tutorial.py.
TIMING_CHAPTERS = {
    "02-eager.md": "race",
    "13-compiler.md": "race",
    "15-fizzbuzz.md": "stopwatch",
    "16-digits-cnn.md": "race",
    "17-linear-regression.md": "race",
}
# The claims asserted at build on each page (at least): a rewrite may add, not drop.
ASSERTED_CLAIMS = {
    "02-eager": 1,
    "13-compiler": 7,
    "16-digits-cnn": 1,
    "17-linear-regression": 3,
}
HAND_TIMING = re.compile(r"\b(?:perf_counter|process_time|timeit|time\.time|monotonic)\b")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.DOTALL | re.MULTILINE)
# A number in the prose about speed ("3.2× faster", "34 µs") was typed, not measured.
TYPED_TIMING = re.compile(
    r"\b\d[\d.,]*\s*(?:µs|ms\b|× (?:faster|slower|the time)|times (?:faster|slower|as long))"
)


def chapter_sources() -> dict[str, str]:
    return {path.name: path.read_text(encoding="utf-8") for path in CHAPTERS.glob("[0-9]*.md")}


def test_no_chapter_times_by_hand() -> None:
    offenders = {
        name: sorted(set(HAND_TIMING.findall(text)))
        for name, text in chapter_sources().items()
        if HAND_TIMING.search(text)
    }
    assert not offenders, f"time these with tutorial.race or tutorial.stopwatch: {offenders}"


@pytest.mark.parametrize("name", sorted(TIMING_CHAPTERS))
def test_timing_chapter_uses_the_helper(name: str) -> None:
    text = (CHAPTERS / name).read_text(encoding="utf-8")
    helper = TIMING_CHAPTERS[name]
    assert re.search(rf"^from tutorial import .*\b{helper}\b", text, re.MULTILINE), name
    assert f"{helper}(" in text, name


def test_every_chapter_that_times_is_listed() -> None:
    timing = {name for name, text in chapter_sources().items()
              if re.search(r"\b(?:race|stopwatch)\(", text)}  # fmt: skip
    assert timing == set(TIMING_CHAPTERS)


def test_prose_types_no_timing_numbers() -> None:
    typed = {
        name: TYPED_TIMING.findall(FENCE.sub("", text))
        for name, text in chapter_sources().items()
        if TYPED_TIMING.search(FENCE.sub("", text))
    }
    assert not typed, f"print these from the measurements instead: {typed}"


def test_asserted_claims_are_recorded_on_each_page(built_site: BuiltSite) -> None:
    found = {}
    for path in (built_site.folder / "chapters").glob(f"*/{tutorial.CLAIMS_FILE}"):
        claims = json.loads(path.read_text(encoding="utf-8"))
        assert all(isinstance(c, str) and "asserted" in c for c in claims), claims
        found[path.parent.name] = len(claims)
    for page, least in ASSERTED_CLAIMS.items():
        assert found.get(page, 0) >= least, (page, found)
    assert sum(found.values()) >= sum(ASSERTED_CLAIMS.values())


def test_claim_stops_the_build_when_the_numbers_disagree() -> None:
    before = len(tutorial.CLAIMS)
    assert tutorial.claim("2 > 1 (asserted)", 2 > 1) == "2 > 1 (asserted)"
    assert len(tutorial.CLAIMS) == before + 1
    with pytest.raises(tutorial.ClaimError, match="1 > 2"):
        tutorial.claim("1 > 2", 1 > 2)
    assert len(tutorial.CLAIMS) == before + 1


def test_race_reports_the_first_call_apart_and_compares_with_margins() -> None:
    calls = {"slow": 0, "fast": 0}

    def slow() -> None:
        calls["slow"] += 1
        sum(range(20_000 if calls["slow"] > 1 else 400_000))  # the first call is dearer

    def fast() -> None:
        calls["fast"] += 1

    results = tutorial.race({"slow": slow, "fast": fast}, rounds=5, budget=0.05)
    assert results["slow"].first > results["slow"].median
    assert results["slow"].q1 <= results["slow"].median <= results["slow"].q3
    assert "asserted" in tutorial.claim_faster(results, "fast", "slow", margin=2)
    with pytest.raises(tutorial.ClaimError):
        tutorial.claim_faster(results, "slow", "fast")
    assert "is faster than" in tutorial.compare(results, "fast", "slow")
    same = {"a": results["fast"], "b": results["fast"]}
    assert "are close here" in tutorial.compare(same, "a", "b")
