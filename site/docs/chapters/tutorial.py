"""The helpers the tutorial's chapters import: ``show`` a matplotlib figure, ``draw`` a
diagram, print a ``listing`` of real source code, record a ``pdb_transcript`` of a script,
``race`` a few ways of doing the same work against each other, and ``claim`` what the
measurements show, so that a sentence beside them cannot say more than they do.

A chapter's code runs in two places, and each helper works in both:

* **the site**, built by MkDocs: markdown-exec runs each code block and puts what it prints
  on the page as Markdown (a mermaid fence becomes a diagram) or HTML (an ``<img>``);
* **Jupyter**, in the chapter's notebook: the helpers display rich output instead (a PNG, a
  mermaid diagram in Markdown, which JupyterLab 4.1 and later draw, a code block).

This file sits next to the chapters (``site/docs/chapters/tutorial.py``): the site build puts
that folder on ``sys.path``, publishes the file next to the notebooks, and a notebook run
from that folder (or with the file next to it) imports it. It needs only the standard library
(and matplotlib for the figures ``show`` is given).
"""

from __future__ import annotations

import base64
import gc
import html
import inspect
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any


def in_jupyter() -> bool:
    """True in an IPython kernel (Jupyter), False while the site is built."""
    ipython = sys.modules.get("IPython")
    return ipython is not None and ipython.get_ipython() is not None


def _page_print(text: str) -> None:
    """Print as the page's own code would: markdown-exec collects a code block's output with a
    ``print`` of its own in the block's globals (``sys.stdout`` is left alone), so a helper
    calls the ``print`` its caller sees."""
    caller = sys._getframe(2).f_globals  # 0: here, 1: the helper, 2: the page's code
    caller.get("print", print)(text)


def _display(bundle: dict[str, str], metadata: dict[str, Any] | None = None) -> None:
    """Show a MIME bundle (``{"text/markdown": ..., "text/plain": ...}``) as a cell's output."""
    from IPython.display import display

    display(bundle, raw=True, metadata=metadata)


if not in_jupyter():
    # Building the site: matplotlib draws to memory (no window), whatever machine builds it.
    os.environ.setdefault("MPLBACKEND", "Agg")


# --- figures ---------------------------------------------------------------------------------
FIGURE_DPI = 80  # the size a figure is shown at: 80 CSS pixels per inch of its figsize
PIXEL_RATIO = 2  # ... drawn with 2 pixels per CSS pixel, so that it is sharp on a 2x screen

# One colour per contender on every page: the timing charts (chapters 13 and 17) and the
# learning curves that compare ways of running the same training (14, 15) all take their
# colours from here, through ``colour``, so "@function" is the same orange everywhere. (A test
# of the site, test_site.py, checks that no chapter colours a contender itself.)
CONTENDERS = {
    "eager": "#7f7f7f",  # grey: the baseline
    "Session.run": "#1f77b4",  # blue
    "@function": "#ff7f0e",  # orange
    "compiled": "#d62728",  # red: @function(jit_compile=True)
    "NumPy": "#2ca02c",  # green: NumPy written by hand
    "PyTorch": "#9467bd",  # purple
}
# The words in a chart's label that name each contender, most specific first.
_CONTENDER_WORDS = (
    ("compiled", ("jit_compile", "compiled")),
    ("PyTorch", ("PyTorch",)),
    ("NumPy", ("NumPy",)),
    ("@function", ("@function", "traced")),
    ("Session.run", ("Session",)),
    ("eager", ("eager", "by hand", "Model + optimizer")),
)


def contender(label: str) -> str:
    """Which of ``CONTENDERS`` a chart's label names: ``"graph, @function"`` -> ``"@function"``."""
    for name, words in _CONTENDER_WORDS:
        if any(word in label for word in words):
            return name
    raise KeyError(f"{label!r} names none of the contenders {list(CONTENDERS)}")


def colour(label: str) -> str:
    """The colour of the contender ``label`` names, the same on every page."""
    return CONTENDERS[contender(label)]


def colours(labels: Any) -> list[str]:
    """``colour`` of each label, for a bar chart's ``color=``."""
    return [colour(label) for label in labels]


def show(figure: Any, alt: str) -> None:
    """Put a matplotlib figure on the page as a PNG.

    On the site: an ``<img>`` whose ``src`` is a ``data:`` URI (the PNG itself, base64), so
    the image needs no file of its own, and ``alt`` describes it for those who cannot see it.
    It is drawn at ``PIXEL_RATIO`` times the size it is shown at (its ``width``), so that it
    is sharp on a high-density screen. In Jupyter: the PNG, as the cell's output. The figure
    is closed either way.
    """
    buffer = BytesIO()
    dpi = FIGURE_DPI * PIXEL_RATIO
    figure.savefig(buffer, format="png", dpi=dpi, pil_kwargs={"optimize": True})
    width = round(figure.get_figwidth() * FIGURE_DPI)
    import matplotlib.pyplot as plt

    plt.close(figure)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    if in_jupyter():
        _display({"image/png": data, "text/plain": alt}, {"image/png": {"width": width}})
    else:
        _page_print(
            f'<img src="data:image/png;base64,{data}" width="{width}" alt="{html.escape(alt)}">'
        )


# --- diagrams --------------------------------------------------------------------------------
# Closer nodes and ranks than mermaid's 50 px (and 50 px): a compact diagram fits the page.
_TIGHT = '%%{init: {"flowchart": {"nodeSpacing": 15, "rankSpacing": 30}}}%%\n'


_SHAPED = {"Placeholder", "Const"}  # op types a node's shape shows (an input, a constant)


def compact(mermaid: str, boxes: bool = True) -> str:
    """A denser drawing of a ``to_mermaid()`` flowchart, for a graph too wide for the page.

    The same nodes and edges, with less said twice: an edge no longer repeats the shape its
    source node shows; a node named after its op type (``MatMul``, ``mul_1``), or drawn as
    an input or a constant, no longer repeats the type; a dtype that every node has
    (``float32``) is left out; nodes and ranks sit closer. ``boxes=False`` also draws no box
    per name scope (mermaid lays boxes out side by side, however wide that makes the graph): each
    node's name starts with its scope instead, as in TensorFlow (``dense_6/MatMul``).
    """
    lines: list[str] = []
    scopes: list[str] = []
    dtypes = set(re.findall(r"<small>(?:\w+: )?(\w+) [(\[]", mermaid))  # float32 (2, 3)
    common = dtypes.pop() if len(dtypes) == 1 else None

    def label(match: re.Match[str]) -> str:
        opening, title, kind, rest = match.groups()
        if re.sub(r"_\d+$", "", title).lower() == kind.lower() or kind in _SHAPED:
            kind = ""  # mul_1, of type Mul; x, a Placeholder (drawn as an input)
        if not boxes and scopes:
            title = f"{scopes[-1]}/{title}"
        return f"{opening}{title}<br/><small>{kind and kind + ': '}{rest}</small>"

    for line in mermaid.rstrip("\n").split("\n"):
        body = line.strip()
        if body.startswith("subgraph ") or body == "end":
            if body == "end":
                scopes.pop()
            else:
                scopes.append(body[body.index('["') + 2 : -2])
            if boxes:
                lines.append(line)
            continue
        line = re.sub(r'(-->|-\.->)\|"[^"]*"\|', r"\1", line)  # the edge's shape
        line = re.sub(r'^(\s*\w+\W{1,2}")([^<"]+)<br/><small>(\w+): ([^<]*)</small>', label, line)
        if common is not None:
            line = re.sub(rf"<small>((?:\w+: )?){common} ", r"<small>\1", line)
        lines.append(line)
    # the settings go after the first line (mermaid reads them anywhere): a diagram still
    # starts with its type, ``flowchart TD``
    return "\n".join([lines[0], _TIGHT.rstrip("\n"), *lines[1:]]) + "\n"


def draw(picture: Any, fit: bool = False, boxes: bool = True, **options: Any) -> None:
    """Draw a diagram: mermaid text, or anything with a ``to_mermaid(**options)`` method (a
    ``Graph``, a ``GradientTape``, a compiled ``Program``).

    ``fit=True`` draws it ``compact`` (with ``boxes``), for a graph that would otherwise be
    wider than the page's column. On the site: a mermaid fence, which the page draws. In
    Jupyter: the same fence as Markdown output (``draw(graph)`` with no options is what
    showing ``graph`` does).
    """
    mermaid = picture if isinstance(picture, str) else picture.to_mermaid(**options)
    if fit:
        mermaid = compact(mermaid, boxes)
    fence = f"```mermaid\n{mermaid.rstrip()}\n```"
    if in_jupyter():
        _display({"text/markdown": fence, "text/plain": mermaid})
    else:
        _page_print(fence)


def listing(obj: Any) -> None:
    """The real source of a function or class, as a code block titled with its file (under
    ``packages/``) and numbered from its first line."""
    lines, start = inspect.getsourcelines(obj)
    path = inspect.getsourcefile(obj) or "?"
    if "packages/" in path:
        path = path[path.index("packages/") :]
    elif Path(path).parent == Path(__file__).parent:  # a helper next to the chapters
        path = Path(path).name
    code = "".join(lines)
    if in_jupyter():
        _display({"text/markdown": f"`{path}`, line {start}:\n\n```python\n{code}```",
                  "text/plain": code})  # fmt: skip
    else:
        _page_print(f'```python title="{path}" linenums="{start}"\n{code}```')


def pdb_transcript(script: str, commands: list[str], name: str = "script.py") -> None:
    """Run ``script`` as ``python name`` in a fresh interpreter and show its terminal: each
    ``(Pdb)`` prompt its ``breakpoint()`` opens gets the next of ``commands``, as if typed.

    The script is written to a temporary folder (left out of the paths shown) and run by the
    Python that runs this code, without ``PYTHONBREAKPOINT``, so ``breakpoint()`` starts pdb. pdb
    does not echo a command read from a pipe, so each is put back after its prompt. On the
    site: a text code block; in Jupyter: the same block as Markdown.
    """
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, name)
        with open(path, "w", encoding="utf-8") as file:
            file.write(script)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONBREAKPOINT"}
        run = subprocess.run(
            [sys.executable, path], input="".join(c + "\n" for c in commands),
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
    if run.returncode != 0:
        raise RuntimeError(f"python {name} exited with {run.returncode}:\n{run.stderr}")
    transcript = run.stdout
    for place in {folder + os.sep, os.path.realpath(folder) + os.sep}:
        transcript = transcript.replace(place, "")
    for command in commands:  # a NUL marks a prompt done, so the next replace skips it
        transcript = transcript.replace("(Pdb) ", f"(Pdb)\0{command}\n", 1)
    text = f"$ python {name}\n" + transcript.replace("\0", " ")
    fence = f"```text\n{text}```"
    if in_jupyter():
        _display({"text/markdown": fence, "text/plain": text})
    else:
        _page_print(fence)


# --- timing, and what a page may say about it ----------------------------------------------
def _clock() -> float:
    """Seconds of CPU time used by this process (all its threads): unlike the wall clock, it
    does not count the time a busy machine gives to other programs while a step waits."""
    return time.process_time()


@dataclass
class Stopwatch:
    """The seconds a ``with stopwatch() as clock:`` block took: ``clock.seconds``."""

    seconds: float = 0.0


@contextmanager
def stopwatch() -> Iterator[Stopwatch]:
    """Time one ``with`` block by the wall clock (``time.perf_counter``), for a single long
    run such as a whole training: the time a reader waits. To compare ways of doing the same
    work, use ``race``."""
    clock, start = Stopwatch(), time.perf_counter()
    try:
        yield clock
    finally:
        clock.seconds = time.perf_counter() - start


@dataclass
class Timing:
    """One contender's result in a ``race``, in seconds per call."""

    first: float  # the first call alone: tracing, compiling, warming caches
    median: float  # the steady call: the median over the rounds
    q1: float  # the first and third quartiles over the rounds: half the rounds fall between
    q3: float
    calls: int  # calls per round

    @property
    def spread(self) -> float:
        """The interquartile range, as a fraction of the median: how noisy the rounds were."""
        return (self.q3 - self.q1) / self.median

    @property
    def micros(self) -> float:
        """The steady call in microseconds."""
        return self.median * 1e6


def race(
    contenders: dict[str, Callable[[], object]], rounds: int = 15, budget: float = 0.3
) -> dict[str, Timing]:
    """Time ways of doing the same work against each other, as ``benchmarks/run.py`` does.

    Each contender's first call is timed alone and reported apart (``first``): that is where
    a traced function traces and a compiled one compiles. Then the contenders run in
    *rounds*, round-robin (round 1: A, B, C; round 2: B, C, A; ...), so that a slow moment of
    a busy machine hits all of them alike. In a round each contender runs enough calls to
    fill about ``budget / rounds / len(contenders)`` seconds. The steady time per call is the
    median over the rounds, with its quartiles for the spread.

    Times are the CPU time of this process (``_clock``), not the wall clock: on a machine
    shared with other programs, a round that waited for the CPU would otherwise count the
    wait, and a few such rounds could flip an order between two builds.
    """
    first: dict[str, float] = {}
    calls: dict[str, int] = {}
    share = budget / rounds / len(contenders)
    for name, run in contenders.items():
        start = _clock()
        run()
        first[name] = _clock() - start
        n, elapsed = 1, 0.0  # size a round: double the calls until they fill a quarter of it
        while elapsed < share / 4:
            start = _clock()
            for _ in range(n):
                run()
            elapsed = _clock() - start
            n *= 2
        calls[name] = max(1, round(n / 2 * share / elapsed))
    names = list(contenders)
    per_call: dict[str, list[float]] = {name: [] for name in names}
    gc.collect()
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            run, n = contenders[name], calls[name]
            start = _clock()
            for _ in range(n):
                run()
            per_call[name].append((_clock() - start) / n)
    results = {}
    for name, times in per_call.items():
        q1, median, q3 = statistics.quantiles(times, n=4) if len(times) > 1 else times * 3
        results[name] = Timing(first[name], median, q1, q3, calls[name])
    return results


class ClaimError(AssertionError):
    """A page's sentence that its own measurements do not support: the build stops."""


CLAIMS: list[str] = []  # every claim asserted since this module was loaded, in order
CLAIMS_FILE = "claims.json"  # on the site: each page's asserted claims, next to its index.html
_page_claims: dict[str, list[str]] = {}
_last_page: str | None = None


def claim(sentence: str, holds: bool) -> str:
    """Assert what ``sentence`` says (``holds``, computed from the measurements) and return it.

    When it does not hold, ``ClaimError`` stops the build (``mkdocs build --strict`` fails),
    rather than publishing a sentence the numbers beside it contradict. Each claim that holds
    is counted in ``CLAIMS`` and, during a site build, written to the page's ``claims.json``.
    """
    global _last_page
    if not holds:
        raise ClaimError(f"the page would say {sentence!r}, but its measurements disagree")
    CLAIMS.append(sentence)
    folder = os.environ.get("EAGERFLOW_PAGE_DIR")  # set by site/hooks.py while a page builds
    if folder is not None:
        if folder != _last_page:  # a page built (again): its list starts afresh
            _page_claims[folder] = []
        _last_page = folder
        _page_claims[folder].append(sentence)
        text = json.dumps(_page_claims[folder], ensure_ascii=False, indent=1)
        Path(folder, CLAIMS_FILE).write_text(text + "\n", encoding="utf-8")
    return sentence


def times_as_long(results: dict[str, Timing], a: str, b: str) -> float:
    """How many times as long ``a``'s steady call takes as ``b``'s (below 1: ``a`` is faster)."""
    return results[a].median / results[b].median


def compare(results: dict[str, Timing], a: str, b: str, margin: float = 1.5) -> str:
    """A sentence comparing the steady calls of ``a`` and ``b``, computed from ``results``.

    It says which is faster only when the gap is wider than ``margin``; closer than that, a
    busy machine can flip the order between two builds, and the sentence says they are close.
    It asserts nothing (no fixed prose depends on it): use ``claim_faster`` for that.
    """
    ratio = times_as_long(results, a, b)
    if ratio * margin < 1:
        return f"{a} is faster than {b} here: it takes {ratio:.2f}× the time."
    if ratio > margin:
        return f"{a} is slower than {b} here: it takes {ratio:.1f}× the time."
    return f"{a} and {b} are close here: {a} takes {ratio:.2f}× the time of {b}."


def claim_faster(results: dict[str, Timing], fast: str, slow: str, margin: float = 1.5) -> str:
    """Assert that ``fast``'s steady call takes at most ``1 / margin`` of ``slow``'s, and
    return the sentence that says so, with the measured ratio."""
    ratio = times_as_long(results, fast, slow)
    sentence = f"{fast} takes {ratio:.2f}× the time of {slow}"
    return claim(f"{sentence} (asserted: below {1 / margin:.2f}×).", ratio * margin <= 1)


__all__ = [
    "CLAIMS",
    "CONTENDERS",
    "ClaimError",
    "Stopwatch",
    "Timing",
    "claim",
    "claim_faster",
    "colour",
    "colours",
    "compact",
    "compare",
    "contender",
    "draw",
    "in_jupyter",
    "listing",
    "pdb_transcript",
    "race",
    "show",
    "stopwatch",
    "times_as_long",
]
