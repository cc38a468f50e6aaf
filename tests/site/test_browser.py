"""The built site in a real browser: every page loads cleanly and offline, navigation and
search work, mermaid diagrams render and images load, and the layout fits a 1280 px screen (no
code or result block, diagram or image wider than its column, no diagram text smaller than
10 px, diagrams open full size on click). Each page is loaded once per session; the tests then
check different things about that one visit."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest
from sitetools import (
    FIGURES,
    LOCAL_MERMAID,
    LOCAL_ONNXRUNTIME_WEB,
    SCREENSHOTS,
    BuiltSite,
    chapter_paths,
    page_paths,
)

TIMEOUT_MS = 30_000  # generous: the machine running the tests may be busy

# Material draws each diagram into a *closed* shadow root, which scripts (and so tests) cannot
# look into. Forcing every shadow root open before the page's scripts run lets us find the SVG.
OPEN_SHADOW_ROOTS = """
const attachShadow = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) {
  return attachShadow.call(this, { ...init, mode: "open" });
};
"""
# Material replaces each <pre class="mermaid"> by a <div class="mermaid"> whose shadow root
# holds the SVG, once mermaid has rendered it.
DIAGRAMS_RENDERED = """
expected => {
  const divs = [...document.querySelectorAll("div.mermaid")];
  return document.querySelectorAll("pre.mermaid").length === 0
    && divs.length >= expected
    && divs.every(d => d.shadowRoot !== null && d.shadowRoot.querySelector("svg") !== null);
}
"""
DIAGRAM_STATE = """
() => ({
  pre: document.querySelectorAll("pre.mermaid").length,
  divs: document.querySelectorAll("div.mermaid").length,
  svgs: [...document.querySelectorAll("div.mermaid")]
    .filter(d => d.shadowRoot && d.shadowRoot.querySelector("svg")).length,
})
"""
# The code blocks (a listing or a printed result: markdown-exec shows both as <pre><code>)
# in the article that are wider than their column, so that part of them hides behind a
# scroll bar: [scrollWidth, clientWidth, first characters] each.
OVERFLOWING_BLOCKS = """
() => [...document.querySelectorAll("article pre, article pre > code")]
  .filter(e => !e.closest(".mermaid") && e.scrollWidth > e.clientWidth + 1)
  .map(e => [e.scrollWidth, e.clientWidth, e.textContent.trim().slice(0, 60)])
"""
# For each diagram in the page (or in `root`): the height in CSS pixels of its smallest text as
# drawn (its font size times the scale the SVG is drawn at) and that text, or null without any.
SMALLEST_DIAGRAM_TEXT = """
root => [...(root || document).querySelectorAll("div.mermaid, .diagram-zoom__figure")]
  .map(host => {
    const svg = host.shadowRoot && host.shadowRoot.querySelector("svg");
    let smallest = null;
    for (const element of svg ? svg.querySelectorAll("*") : []) {
      const text = [...element.childNodes]
        .filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent).join("").trim();
      if (!text) continue;
      // a label is SVG <text>, or HTML inside a <foreignObject>: either way the SVG element's
      // transformation to the screen says how much it was scaled
      const graphic = element instanceof SVGGraphicsElement
        ? element : element.closest("foreignObject");
      const matrix = graphic && graphic.getScreenCTM();
      if (!matrix) continue;
      const px = parseFloat(getComputedStyle(element).fontSize) * Math.hypot(matrix.a, matrix.b);
      if (smallest === null || px < smallest[0]) smallest = [px, text.slice(0, 40)];
    }
    return smallest;
  })
"""
MIN_DIAGRAM_TEXT_PX = 10
# Every diagram and image in the article: [what it is, its natural width, its width as drawn,
# the width of its column]. A mermaid SVG's natural width is its viewBox's (mermaid draws it
# `width="100%"` with that as its `max-width`: useMaxWidth); an image's is its `width`
# attribute (the CSS pixels it is meant for: `show` draws PNGs at 2 pixels per CSS pixel),
# else its pixels.
PICTURE_WIDTHS = """
() => [
  ...[...document.querySelectorAll("article div.mermaid")].map((host, index) => {
    const svg = host.shadowRoot && host.shadowRoot.querySelector("svg");
    const natural = svg && svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 0;
    const drawn = svg ? svg.getBoundingClientRect().width : 0;
    return [`diagram ${index}`, natural, drawn, host.clientWidth];
  }),
  ...[...document.querySelectorAll("article img")].map((image, index) => [
    `image ${index} (${image.alt.slice(0, 50)})`,
    parseFloat(image.getAttribute("width")) || image.naturalWidth,
    image.getBoundingClientRect().width,
    image.parentElement.clientWidth,
  ]),
]
"""
# A picture shrunk below this fraction of its natural width is too wide, however it fits:
# its text would be too small to read.
MIN_PICTURE_SCALE = 0.6
# Every image: made to load now (a lazy image below the fold would never load), then measured.
IMAGES = """
async () => {
  const images = [...document.images];
  images.forEach(i => { i.loading = "eager"; });
  await Promise.all(images.map(i => i.complete ? null : new Promise(done => {
    i.addEventListener("load", done);
    i.addEventListener("error", done);
  })));
  return images.map(i => [i.currentSrc || i.src, i.naturalWidth]);
}
"""


@dataclass
class Visit:
    """What happened when the browser loaded one page."""

    path: str
    heading: str = ""
    console_errors: list[str] = field(default_factory=list)
    http_errors: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)  # requests that tried to leave 127.0.0.1
    requested: list[str] = field(default_factory=list)
    diagrams_expected: int = 0
    diagram_problem: str | None = None
    images: list[tuple[str, int]] = field(default_factory=list)
    # at 1280 px: code blocks wider than their column, and each diagram's smallest text
    overflowing: list[tuple[int, int, str]] = field(default_factory=list)
    diagram_text: list[tuple[float, str] | None] = field(default_factory=list)
    # each diagram and image: (what, natural width, drawn width, column width), in CSS px
    picture_widths: list[tuple[str, float, float, float]] = field(default_factory=list)


def diagrams_in(html: str) -> int:
    """How many mermaid diagrams the built HTML of a page asks for."""
    return len(re.findall(r'<(?:pre|div)\b[^>]*\bclass="(?:[^"]*\s)?mermaid[\s"]', html))


def external_allowed(url: str) -> bool:
    """Only without a local mermaid copy (no npm at set-up) may a page fetch it from unpkg."""
    return not LOCAL_MERMAID.is_file() and urlsplit(url).hostname == "unpkg.com"


def new_page(browser: Any, visit: Visit) -> tuple[Any, Any]:
    """A fresh context and page that record errors and block requests to the internet."""
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(TIMEOUT_MS)
    context.add_init_script(OPEN_SHADOW_ROOTS)

    def route(route: Any) -> None:
        url = route.request.url
        if urlsplit(url).hostname in ("127.0.0.1", None) or external_allowed(url):
            route.continue_()
        else:
            visit.blocked.append(url)
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and visit.console_errors.append(m.text))
    page.on("pageerror", lambda e: visit.console_errors.append(f"uncaught: {e}"))
    page.on("request", lambda r: visit.requested.append(r.url))
    page.on(
        "response",
        lambda r: r.status >= 400 and visit.http_errors.append(f"{r.status} {r.url}"),
    )
    return context, page


@pytest.fixture(scope="module")
def visit(browser: Any, site_url: str, built_site: BuiltSite) -> Callable[[str], Visit]:
    """``visit(path)``: load the page once (and screenshot it if a chapter). With pytest-xdist,
    make test's ``--dist loadfile`` runs this file's tests on one worker, so once per run."""
    visits: dict[str, Visit] = {}

    def load(path: str) -> Visit:
        if path in visits:
            return visits[path]
        result = visits[path] = Visit(path)
        html = (built_site.folder / path / "index.html").read_text(encoding="utf-8")
        result.diagrams_expected = diagrams_in(html)
        context, page = new_page(browser, result)
        try:
            page.goto(site_url + path, wait_until="load")
            result.heading = page.locator("article h1").first.inner_text().strip("¶ \n")
            if result.diagrams_expected:
                try:
                    page.wait_for_function(DIAGRAMS_RENDERED, arg=result.diagrams_expected)
                except Exception:  # a timeout: say what the page looked like instead
                    state = page.evaluate(DIAGRAM_STATE)
                    result.diagram_problem = (
                        f"{result.diagrams_expected} diagram(s) expected; after "
                        f"{TIMEOUT_MS / 1000:.0f} s: {state}"
                    )
            result.images = [(src, width) for src, width in page.evaluate(IMAGES)]
            result.overflowing = [
                (int(scroll), int(client), str(text))
                for scroll, client, text in page.evaluate(OVERFLOWING_BLOCKS)
            ]
            result.diagram_text = [
                None if text is None else (float(text[0]), str(text[1]))
                for text in page.evaluate(SMALLEST_DIAGRAM_TEXT)
            ]
            result.picture_widths = [
                (str(what), float(natural), float(drawn), float(column))
                for what, natural, drawn, column in page.evaluate(PICTURE_WIDTHS)
            ]
            if path.startswith("chapters/"):  # artifacts for a person to look at
                SCREENSHOTS.mkdir(parents=True, exist_ok=True)
                name = path.strip("/").replace("/", "-")
                # JPEG: a whole chapter took Chromium ~1.6 s of CPU as a PNG, ~0.55 s as a JPEG
                page.screenshot(path=str(SCREENSHOTS / f"{name}.jpg"), full_page=True, quality=70)
        finally:
            context.close()
        return result

    return load


@pytest.mark.parametrize("path", page_paths())
def test_page_loads_without_errors(visit: Callable[[str], Visit], path: str) -> None:
    result = visit(path)
    assert result.heading, f"/{path} has no title"
    assert not result.console_errors, f"console errors on /{path}: {result.console_errors}"
    assert not result.http_errors, f"failed requests on /{path}: {result.http_errors}"
    # The site must work offline: nothing may be fetched from anywhere but the site itself.
    assert not result.blocked, f"/{path} tried to load from the internet: {result.blocked}"


@pytest.mark.parametrize("path", page_paths())
def test_mermaid_diagrams_render(visit: Callable[[str], Visit], path: str) -> None:
    result = visit(path)
    assert result.diagram_problem is None, f"/{path}: {result.diagram_problem}"


@pytest.mark.parametrize("path", page_paths())
def test_images_load(visit: Callable[[str], Visit], path: str) -> None:
    broken = [src for src, width in visit(path).images if width == 0]
    assert not broken, f"images on /{path} that did not load: {broken}"


@pytest.mark.parametrize(("path", "expected"), sorted(FIGURES.items()))
def test_build_time_plots_load(visit: Callable[[str], Visit], path: str, expected: int) -> None:
    # these chapters draw with matplotlib at build time, from their own runs (FIGURES says
    # how many figures each shows; test_site checks their alt texts)
    images = visit(path).images
    plots = [(src, width) for src, width in images if src.startswith("data:image/png")]
    assert len(plots) >= expected, f"/{path} shows {len(plots)} plot(s), not {expected}"
    assert all(width > 0 for _, width in plots), [width for _, width in plots]


@pytest.mark.parametrize("path", page_paths())
def test_no_code_block_is_wider_than_its_column(visit: Callable[[str], Visit], path: str) -> None:
    # At 1280 px, every listing and every printed result (error messages above all) wraps
    # instead of hiding its end behind a scroll bar (site/docs/stylesheets/extra.css).
    wide = [
        f"{scroll} px in {client} px: {text!r}" for scroll, client, text in visit(path).overflowing
    ]
    assert not wide, f"code blocks on /{path} wider than their column:\n" + "\n".join(wide)


@pytest.mark.parametrize("path", page_paths())
def test_diagram_text_is_readable(visit: Callable[[str], Visit], path: str) -> None:
    # At 1280 px, no diagram is shrunk to fit its column until its labels are unreadable
    # (javascripts/diagram-zoom.js; a wide graph is better drawn left to right).
    result = visit(path)
    small = [
        f"diagram {index}: {text[0]:.1f} px ({text[1]!r})"
        if text is not None
        else f"diagram {index}: no text found"
        for index, text in enumerate(result.diagram_text)
        if text is None or text[0] < MIN_DIAGRAM_TEXT_PX
    ]
    assert not small, f"diagram text under {MIN_DIAGRAM_TEXT_PX} px high on /{path}: {small}"


@pytest.mark.parametrize("path", page_paths())
def test_no_picture_is_wider_than_its_column(visit: Callable[[str], Visit], path: str) -> None:
    # At 1280 px, every diagram and image fits its column (748 px in a chapter) without a
    # scroll bar, and without being shrunk below MIN_PICTURE_SCALE of its natural width: a
    # wide graph is drawn compact, left to right, or in parts (tutorial.draw's fit=True).
    wide = [
        f"{what}: {natural:.0f} px natural, {drawn:.0f} px drawn, in a {column:.0f} px column"
        for what, natural, drawn, column in visit(path).picture_widths
        if drawn > column + 1 or natural * MIN_PICTURE_SCALE > column + 1
    ]
    assert not wide, f"pictures on /{path} wider than their column:\n" + "\n".join(wide)


def test_a_diagram_opens_full_size_on_click(browser: Any, site_url: str) -> None:
    # Chapter 12's classifier is the widest graph: shrunk in the page, full size on a click.
    path = "chapters/12-training/"
    result = Visit(path)
    context, page = new_page(browser, result)
    try:
        page.goto(site_url + path, wait_until="load")
        page.wait_for_function(DIAGRAMS_RENDERED, arg=1)
        in_page = page.evaluate(SMALLEST_DIAGRAM_TEXT)[0]
        diagram = page.locator("article div.mermaid").first
        assert diagram.get_attribute("title"), "a diagram should say it can be enlarged"
        diagram.click()
        overlay = page.locator(".diagram-zoom")
        overlay.wait_for()
        zoomed = page.evaluate(SMALLEST_DIAGRAM_TEXT, overlay.element_handle())
        assert zoomed and zoomed[0] is not None, "the overlay should show the diagram"
        assert zoomed[0][0] > in_page[0] + 1, f"not larger: {zoomed[0]} vs {in_page} in the page"
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "chapters-12-training-diagram-zoom.png"))
        page.keyboard.press("Escape")
        overlay.wait_for(state="detached")
        diagram.click()  # and a click on the overlay closes it too
        overlay.wait_for()
        overlay.click()
        overlay.wait_for(state="detached")
    finally:
        context.close()
    assert not result.console_errors, result.console_errors


def test_diagrams_are_drawn_with_the_local_mermaid(visit: Callable[[str], Visit]) -> None:
    if not LOCAL_MERMAID.is_file():
        pytest.skip("no local mermaid (`make setup` installs it when npm is available)")
    result = visit("reading-the-code/")
    assert result.diagrams_expected > 0, "reading-the-code.md should draw a graph"
    assert any(url.endswith("/assets/javascripts/mermaid.min.js") for url in result.requested)
    assert not [url for url in result.requested if "unpkg.com" in url]


def test_every_chapter_has_a_screenshot(visit: Callable[[str], Visit]) -> None:
    for path in chapter_paths():
        visit(path)
        name = path.strip("/").replace("/", "-")
        assert (SCREENSHOTS / f"{name}.jpg").stat().st_size > 0


def test_navigation(browser: Any, site_url: str) -> None:
    result = Visit("")
    context, page = new_page(browser, result)
    try:
        page.goto(site_url, wait_until="load")
        sidebar = page.locator("nav.md-nav--primary")
        sidebar.get_by_role("link", name="Reading the code", exact=True).first.click()
        page.wait_for_url(site_url + "reading-the-code/")
        assert page.locator("article h1").first.inner_text().startswith("Reading the code")
        page.locator("a.md-footer__link--next").click()  # the footer's "Next" link
        page.wait_for_url(site_url + "tensorflow-names/")
        assert page.locator("article h1").first.inner_text().startswith("TensorFlow names")
        page.go_back()
        page.wait_for_url(site_url + "reading-the-code/")
    finally:
        context.close()
    assert not result.console_errors, result.console_errors


def test_search_finds_gradienttape(browser: Any, site_url: str) -> None:
    result = Visit("")
    context, page = new_page(browser, result)
    try:
        page.goto(site_url, wait_until="load")
        search = page.locator("input.md-search__input")
        search.click()
        # Typed key by key: Material reads the query on keyup, which fill() does not send.
        search.press_sequentially("GradientTape")
        hits = page.locator(".md-search-result__item")
        hits.first.wait_for()
        assert hits.count() > 0
        assert "GradientTape" in hits.first.inner_text()
    finally:
        context.close()
    assert not result.console_errors, result.console_errors


# --- chapter 15's live demo: the exported FizzBuzz network, run by onnxruntime-web -------------
FIZZBUZZ = "chapters/15-fizzbuzz/"
# eagerflow's answers printed at build time: "  15: FizzBuzz probabilities [...]"
BUILD_TIME_ANSWER = re.compile(r"^\s*(\d+): (\S+)\s+probabilities \[", re.MULTILINE)


def build_time_answers(built_site: BuiltSite) -> dict[int, str]:
    """What eagerflow answered, in Python at build time, for the numbers the page shows."""
    html = (built_site.folder / FIZZBUZZ / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", html)  # the highlighting's spans
    return {int(n): word for n, word in BUILD_TIME_ANSWER.findall(text)}


def test_fizzbuzz_demo_runs_the_exported_model_offline(
    browser: Any, site_url: str, built_site: BuiltSite
) -> None:
    if not LOCAL_ONNXRUNTIME_WEB.is_file():
        pytest.skip("no local onnxruntime-web (`make setup` installs it when npm is available)")
    expected = build_time_answers(built_site)
    assert {15, 7} <= expected.keys(), f"the page should print eagerflow's answers: {expected}"
    result = Visit(FIZZBUZZ)
    context, page = new_page(browser, result)
    shown: dict[int, tuple[str, list[float]]] = {}
    try:
        page.goto(site_url + FIZZBUZZ, wait_until="load")
        demo = page.locator(".fizzbuzz-demo")
        for n in (15, 7, 9, 10):
            if n not in expected:
                continue
            demo.locator("input").fill(str(n))
            page.wait_for_function(
                f"document.querySelector('.fizzbuzz-demo').dataset.answered === '{n}'"
            )
            answer = demo.locator(".fizzbuzz-demo__answer").inner_text().strip()
            cells = demo.locator(".fizzbuzz-demo__probabilities td").all_inner_texts()
            shown[n] = (answer, [float(c) for c in cells[1::2]])
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        demo.screenshot(path=str(SCREENSHOTS / "chapters-13-fizzbuzz-demo.png"))
    finally:
        context.close()
    for n, (answer, probabilities) in shown.items():
        assert answer == expected[n], f"{n}: the page says {answer}, eagerflow said {expected[n]}"
        assert len(probabilities) == 4 and abs(sum(probabilities) - 1) < 1e-3, probabilities
    assert not result.console_errors, result.console_errors
    assert not result.http_errors, result.http_errors
    # Offline: every request went to the local server (the model and ORT's .wasm included).
    assert not result.blocked, f"the demo tried to load from the internet: {result.blocked}"
    outside = [url for url in result.requested if not url.startswith(site_url)]
    assert not outside, outside
    assert any(url.endswith("/fizzbuzz.onnx") for url in result.requested)
    assert any(url.endswith(".wasm") for url in result.requested)
