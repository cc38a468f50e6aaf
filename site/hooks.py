"""MkDocs hooks of the eagerflow tutorial site (registered under ``hooks:`` in mkdocs.yml).

Nine jobs:

1. **Local mermaid.** Material for MkDocs draws ```` ```mermaid ```` fences with mermaid.js,
   which its bundle fetches from unpkg.com *only if* ``window.mermaid`` is undefined. When
   ``make setup`` has installed the npm ``mermaid`` package into ``build/npm``, we ship that
   copy with the site and load it as an extra script, so the diagrams render offline and in
   the browser tests. Without a local copy the site still builds and falls back to the CDN.
2. **Notebooks.** Every chapter page is also converted (``notebooks.py``, with jupytext) into
   a Jupyter notebook written next to it (``chapters/03-autodiff.md`` ->
   ``chapters/03-autodiff.ipynb``), and the page gets a download link at its top. The notebook
   starts with a cell that installs eagerflow from the site's wheels (part 8), and its cells
   carry the outputs the page's code printed at build time (kept by ``exec_cache.py``).
3. **Source for AutoGraph.** ``@function`` converts a function from its source, which it
   reads with ``inspect.getsource``. markdown-exec compiles each code block it runs under a
   made-up file name (``<code block: session ch09; n3>``) and keeps the text to itself, so
   a function defined on a page would have no source, and run unconverted (with an
   ``AutoGraphWarning``). We put each block's text in ``linecache`` under that name, as
   IPython and Jupyter do for their cells, and ``inspect`` finds it there.
4. **Files made by a page, and onnxruntime-web.** While a page's code runs at build time, the
   environment variable ``EAGERFLOW_PAGE_DIR`` names the page's own folder in the built site
   (``<site>/chapters/15-fizzbuzz/``): a file the code writes there is published next to the
   page, at a URL relative to it (chapter 15 writes its trained model as ``fizzbuzz.onnx``).
   When ``make setup`` has installed the npm ``onnxruntime-web`` package into ``build/npm``,
   its WebAssembly build is shipped under ``assets/onnxruntime/`` and, while a page's code
   runs, ``EAGERFLOW_ONNXRUNTIME_WEB`` holds that folder's URL relative to the page; without
   it the variable is unset, and a page should say its live demo cannot run.
5. **The chapters' helpers.** ``docs/chapters/tutorial.py`` (``show`` a figure, ``draw`` a
   diagram, ``listing`` of source, ``pdb_transcript`` of a script) is imported by the
   chapters' code: its folder goes on ``sys.path`` for the build, and MkDocs publishes the
   file next to the notebooks, where a downloaded notebook finds it. Another module beside it
   (``workloads.py``, chapter 13's race) gets a download button of its own on the pages whose
   code imports it.
6. **Timing and caching the code blocks** (``exec_cache.py``, next to this file): every block's
   CPU time is recorded (``EAGERFLOW_SITE_PROFILE=1`` prints a table at the end of the build),
   and with ``EAGERFLOW_SITE_CACHE=1`` (``make serve``) a block whose session's source, and
   the packages' source, are unchanged shows its stored output without running.
7. **One BLAS thread.** The pages' code runs with NumPy's matrix products on one thread, as
   chapter 13's race and ``make bench`` already do. The chapters' arrays are small: a second
   OpenBLAS thread makes no product faster, but it spins while it waits for work, and on 2
   cores that doubled the CPU time of chapter 16's trainings (27 s instead of 8 s).
8. **Wheels.** The four packages are built into wheels (``wheels.py``, cached by their
   source's hash) and published under ``wheels/``, for the notebooks' install cell: pip
   installs them from ``site_url`` + ``wheels/`` (under ``mkdocs serve``, the local server).
9. **Settings in the text.** ``{{ repo_url }}`` in a page becomes mkdocs.yml's ``repo_url``
   (which Material also shows as the link in the header), and ``{{ repo_folder }}`` the folder
   ``git clone`` makes of it: the home page's "Get the code" box names the one setting.
"""

from __future__ import annotations

import json
import linecache
import logging
import os
import re
import sys
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page
from mkdocs.utils import get_relative_url
from mkdocs.utils.meta import get_data

if str(Path(__file__).resolve().parent) not in sys.path:  # for the modules next to this file
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import exec_cache
import wheels
from notebooks import TUTORIAL_MODULE, Install, Run, to_notebook

log = logging.getLogger("mkdocs.hooks.eagerflow")

# Where the Makefile's set-up step installs the npm package (relative to the repository).
NPM_MERMAID = Path("build/npm/node_modules/mermaid")
# Where the copy is published in the built site; the page template loads it from there.
MERMAID_URI = "assets/javascripts/mermaid.min.js"
# Where the Makefile installs onnxruntime-web, the files of its WebAssembly build that a page
# needs (the script, the Emscripten module it imports, the .wasm binary that module loads), and
# where they are published. ORT 1.19+ ships only the SIMD+threads binary; with one thread it
# needs no SharedArrayBuffer, so no cross-origin isolation.
NPM_ONNXRUNTIME_WEB = Path("build/npm/node_modules/onnxruntime-web/dist")
ONNXRUNTIME_WEB_FILES = (
    "ort.wasm.min.js",
    "ort-wasm-simd-threaded.mjs",
    "ort-wasm-simd-threaded.wasm",
)
ONNXRUNTIME_WEB_URI = "assets/onnxruntime/"
# The environment variables a page's code reads while it runs at build time (part 4).
PAGE_DIR_VARIABLE = "EAGERFLOW_PAGE_DIR"
ONNXRUNTIME_WEB_VARIABLE = "EAGERFLOW_ONNXRUNTIME_WEB"
# Pages under this folder of docs/ are chapters: each gets a notebook and a download link.
CHAPTERS = "chapters/"

# How the file names markdown-exec compiles its code blocks under begin.
CODE_BLOCK_FILENAME = "<code block: "
# Where the packages' wheels are published in the built site (part 8).
WHEELS_URI = "wheels/"
# Each chapter page's notebook, by the page's source, and where it installs eagerflow from.
NOTEBOOKS: dict[str, tuple[File, Install | None]] = {}
# The settings a page may name in its text, as ``{{ repo_url }}`` (part 9).
SETTINGS = re.compile(r"\{\{ (?P<name>repo_url|repo_folder) \}\}")


# --- 1. local mermaid ---------------------------------------------------------------------------
def repository_root(config: MkDocsConfig) -> Path:
    """The repository the site belongs to: mkdocs.yml lives in its ``site/`` folder."""
    return Path(config.config_file_path).resolve().parent.parent


def local_mermaid(root: Path) -> Path | None:
    """The ``mermaid.min.js`` installed under ``root`` by ``make setup``, or None."""
    script = root / NPM_MERMAID / "dist" / "mermaid.min.js"
    return script if script.is_file() else None


def mermaid_version(script: Path) -> str:
    """The npm package version of a local ``mermaid.min.js`` (for the build log)."""
    try:
        package = json.loads((script.parent.parent / "package.json").read_text())
    except (OSError, ValueError):
        return "of unknown version"
    return str(package.get("version", "of unknown version"))


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Load the local mermaid copy, if any, as an extra script of every page (and keep
    the source of every code block run from now on: part 3).

    Material's page template puts ``extra_javascript`` after its own bundle, but the bundle
    looks for ``window.mermaid`` only on ``DOMContentLoaded``, after every (synchronous)
    script of the page has run: by then our copy is defined and the CDN is never asked.
    """
    register_code_block_sources()
    use_tutorial_module(config)
    start_exec_cache(config)
    one_blas_thread()
    script = local_mermaid(repository_root(config))
    if script is None:
        log.info(
            "no local mermaid.js (run `make setup` with npm installed): diagrams will load "
            "mermaid from its CDN"
        )
    elif MERMAID_URI not in [str(s) for s in config.extra_javascript]:
        config.extra_javascript.append(MERMAID_URI)
    return config


# --- 2. notebooks ------------------------------------------------------------------------------
def is_chapter(src_uri: str) -> bool:
    """True for a chapter page's source, such as ``chapters/03-autodiff.md``."""
    return src_uri.startswith(CHAPTERS) and src_uri.endswith(".md")


def notebook_uri(page_uri: str) -> str:
    """Where a chapter's notebook goes: next to its page, ``.md`` replaced by ``.ipynb``."""
    return str(PurePosixPath(page_uri).with_suffix(".ipynb"))


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the local mermaid copy and one generated notebook per chapter page to the site."""
    script = local_mermaid(repository_root(config))
    if script is not None and MERMAID_URI in [str(s) for s in config.extra_javascript]:
        files.append(File.generated(config, MERMAID_URI, abs_src_path=str(script)))
        log.info("using the local mermaid %s from %s", mermaid_version(script), script)
    runtime = local_onnxruntime_web(repository_root(config))
    if runtime is None:
        log.info(
            "no local onnxruntime-web (run `make setup` with npm installed): live demos that "
            "run a model in the page will say they cannot run"
        )
    else:
        for name in ONNXRUNTIME_WEB_FILES:
            uri = ONNXRUNTIME_WEB_URI + name
            files.append(File.generated(config, uri, abs_src_path=str(runtime / name)))
    install = publish_wheels(files, config)
    NOTEBOOKS.clear()
    for file in list(files.documentation_pages()):
        if is_chapter(file.src_uri):
            add_notebook(file, files, config, install)
    return files


def add_notebook(page: File, files: Files, config: MkDocsConfig, install: Install | None) -> None:
    """Publish an empty notebook for the chapter ``page`` now, so that the page can link to it;
    ``on_env`` writes its cells and outputs once every page's code has run (converting each
    page once per build: a rebuild after an edit is the writer's loop)."""
    notebook = File.generated(config, notebook_uri(page.src_uri), content="")
    files.append(notebook)
    NOTEBOOKS[page.src_uri] = (notebook, install)


def on_env(env: Any, config: MkDocsConfig, files: Files) -> Any:
    """Every page's code has run (and nothing is written yet): write each chapter's notebook,
    its cells with the outputs its page's blocks printed."""
    cache = getattr(exec_cache, "CURRENT", None)
    printed = cache.printed if cache is not None else {}
    for src_uri, (notebook, install) in NOTEBOOKS.items():
        page = files.get_file_from_path(src_uri)
        if page is None:
            continue
        try:
            markdown = page.content_string
            runs = [Run(code, output) for code, output in printed.get(src_uri, [])]
            helpers = helpers_imported(markdown, Path(config.docs_dir, CHAPTERS))
            title = _title(markdown)
            notebook.content_string = to_notebook(markdown, title, runs, install, helpers)
        except Exception as error:  # e.g. a page half-written: say which, keep building
            # A warning, so `mkdocs build --strict` (and the tests) still fail, while
            # `mkdocs serve` goes on serving the page (its download link finds no notebook).
            log.warning("no notebook for %s: %s: %s", src_uri, type(error).__name__, error)
            files.remove(notebook)
    return env


def _title(markdown: str) -> str | None:
    """The page's title, if its text starts (after any front matter) with a level-1 heading."""
    first_line = get_data(markdown)[0].lstrip("\n").partition("\n")[0]
    if not first_line.startswith("# "):
        return None
    return first_line[2:].strip(" #") or None


def download_note(page_uri: str, more_helpers: tuple[str, ...] = ()) -> str:
    """The admonition with the notebook download link that opens every chapter page, with a
    button for each other helper module the page imports (``more_helpers``, file names)."""
    name = PurePosixPath(notebook_uri(page_uri)).name
    buttons = "".join(
        f'    [Download {helper}]({helper}){{ .md-button download="{helper}" }}\n'
        for helper in more_helpers
    )
    return (
        '!!! tip "Run this chapter yourself"\n\n'
        "    This page is also a Jupyter notebook, whose cells are its Python code blocks, with "
        "the outputs shown here (made by running them when the site was built). Its first cell "
        f"installs eagerflow from this site and fetches the chapters' helpers, `{TUTORIAL_MODULE}`"
        + "".join(f" and `{helper}`" for helper in more_helpers)
        + ", unless they are there already.\n\n"
        f'    [Download this chapter as a notebook]({name}){{ .md-button download="{name}" }}\n'
        f"    [Download its helpers, {TUTORIAL_MODULE}]({TUTORIAL_MODULE})"
        f'{{ .md-button download="{TUTORIAL_MODULE}" }}\n' + buttons
    )


def helpers_imported(markdown: str, chapters_folder: Path) -> tuple[str, ...]:
    """The chapters' helper modules besides tutorial.py (``workloads.py``, next to it) that a
    page's code imports, as file names."""
    imported = set(re.findall(r"^\s*(?:from|import) (\w+)", markdown, re.MULTILINE))
    return tuple(
        path.name
        for path in sorted(chapters_folder.glob("*.py"))
        if path.name != TUTORIAL_MODULE and path.stem in imported
    )


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Fill in the settings a page names (part 9), and put the notebook download link at the
    top of a chapter page, under its title."""
    markdown = fill_settings(markdown, config)
    uri = page.file.src_uri
    if not is_chapter(uri) or files.get_file_from_path(notebook_uri(uri)) is None:
        return markdown
    note = download_note(uri, helpers_imported(markdown, Path(config.docs_dir, CHAPTERS)))
    # Under the first line if that is the page's title, so the title still comes first.
    lines = markdown.split("\n", 1)
    if lines[0].startswith("# "):
        rest = lines[1] if len(lines) > 1 else ""
        return f"{lines[0]}\n\n{note}\n{rest}"
    return f"{note}\n{markdown}"


# --- 3. source for AutoGraph -------------------------------------------------------------------
def keep_source(filename: str, source: str) -> None:
    """Put ``source`` in ``linecache`` as the text of ``filename``, where ``inspect`` looks.

    The entry is what IPython makes for a cell: no modification time, so that
    ``linecache.checkcache`` leaves it alone (there is no file to compare it with).
    """
    lines = source.splitlines(keepends=True)
    linecache.cache[filename] = (len(source), None, lines, filename)


def _on_audit_event(event: str, args: tuple[Any, ...]) -> None:
    """Python's audit hook: at each ``compile`` of a markdown-exec code block, keep its text.

    Audit events are how Python tells tools what a program does; ``compile`` comes with the
    source (bytes of UTF-8 text, or a string) and the file name, before the code runs.
    """
    if event != "compile" or len(args) != 2:
        return
    source, filename = args
    if not isinstance(filename, str) or not filename.startswith(CODE_BLOCK_FILENAME):
        return
    if isinstance(source, bytes):
        source = source.decode("utf-8", errors="replace")
    if isinstance(source, str):  # not an AST: that has no text to show
        keep_source(filename, source)


_REGISTERED = "eagerflow_site_keeps_code_block_sources"


def register_code_block_sources() -> None:
    """From now on, keep the text of every code block markdown-exec compiles (once per
    process: an audit hook cannot be removed, and ``mkdocs serve`` loads these hooks again)."""
    if getattr(sys, _REGISTERED, False):
        return
    sys.addaudithook(_on_audit_event)
    setattr(sys, _REGISTERED, True)


# --- 4. files made by a page, and onnxruntime-web ----------------------------------------------
def local_onnxruntime_web(root: Path) -> Path | None:
    """The ``dist`` folder of the onnxruntime-web installed under ``root``, if it has every
    file a page needs, or None."""
    dist = root / NPM_ONNXRUNTIME_WEB
    return dist if all((dist / name).is_file() for name in ONNXRUNTIME_WEB_FILES) else None


def page_dir(page: Page, config: MkDocsConfig) -> Path:
    """The folder of ``page``'s ``index.html`` in the built site (created if need be)."""
    folder = Path(config.site_dir, page.file.dest_uri).parent
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def on_pre_page(page: Page, config: MkDocsConfig, files: Files) -> Page:
    """Set the variables the page's code reads while markdown-exec runs it, when the page is
    rendered (after this hook, before ``on_page_content``; pages are built one at a time)."""
    os.environ[PAGE_DIR_VARIABLE] = str(page_dir(page, config))
    if files.get_file_from_path(ONNXRUNTIME_WEB_URI + ONNXRUNTIME_WEB_FILES[0]) is None:
        os.environ.pop(ONNXRUNTIME_WEB_VARIABLE, None)
    else:
        os.environ[ONNXRUNTIME_WEB_VARIABLE] = get_relative_url(ONNXRUNTIME_WEB_URI, page.url)
    cache = getattr(exec_cache, "CURRENT", None)  # None when on_config has not run (tests)
    if cache is not None:
        cache.start_page(page.file.src_uri, page_dir(page, config))
    return page


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """The page's code has run: its variables no longer apply."""
    os.environ.pop(PAGE_DIR_VARIABLE, None)
    os.environ.pop(ONNXRUNTIME_WEB_VARIABLE, None)
    return html


# --- 5. the chapters' helpers -----------------------------------------------------------------
def use_tutorial_module(config: MkDocsConfig) -> None:
    """Let the chapters' code ``import tutorial``: put its folder first on ``sys.path``."""
    folder = str(Path(config.docs_dir, CHAPTERS))
    if folder not in sys.path:
        sys.path.insert(0, folder)


# --- 6. timing and caching the code blocks -----------------------------------------------------
def exec_cache_of_process() -> exec_cache.ExecCache:
    """The one cache of this process: ``mkdocs serve`` reloads these hooks at each rebuild, but
    ``exec_cache`` stays imported, and so does the cache made on it."""
    cache = getattr(exec_cache, "CURRENT", None)
    if cache is None:
        raise RuntimeError("on_config has not started the code blocks' cache")
    return cache  # type: ignore[no-any-return]


def start_exec_cache(config: MkDocsConfig) -> None:
    """Time (and, with EAGERFLOW_SITE_CACHE=1, cache) markdown-exec's Python blocks."""
    root = repository_root(config)
    tutorial = Path(config.docs_dir, CHAPTERS, TUTORIAL_MODULE)
    cache = getattr(exec_cache, "CURRENT", None)
    if cache is None or cache.root != root:
        cache = exec_cache.ExecCache(root=root, tutorial=tutorial)
        exec_cache.CURRENT = cache  # type: ignore[attr-defined]
    cache.start_build()
    exec_cache.install(cache)


def on_post_build(config: MkDocsConfig) -> None:
    """Say how the code blocks went: from the cache or run, and (when asked) where the CPU went."""
    cache = exec_cache_of_process()
    if cache.enabled:
        log.info(
            "code blocks: %d shown from %s, %d run",
            cache.hits, exec_cache.CACHE_DIR, cache.executed,
        )  # fmt: skip
    if os.environ.get(exec_cache.PROFILE_VARIABLE):
        log.info("CPU time of the code blocks:\n%s", cache.report())


# --- 7. one BLAS thread ------------------------------------------------------------------------
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> None:
    """NumPy's BLAS on one thread: for a NumPy loaded later (the variables, also inherited by
    the programs a page runs) and for one loaded already (threadpoolctl)."""
    for name in BLAS_THREAD_VARIABLES:
        os.environ.setdefault(name, "1")
    if "numpy" in sys.modules:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")


# --- 8. wheels ---------------------------------------------------------------------------------
def publish_wheels(files: Files, config: MkDocsConfig) -> Install | None:
    """Add the packages' wheels to the site under ``wheels/``; where a notebook installs them
    (and ``tutorial.py``) from, or None, with a warning, when either cannot be had."""
    if not wheels.present(repository_root(config)):
        log.info("no eagerflow packages next to the site: its notebooks get no install cell")
        return None
    try:
        built = wheels.build_wheels(repository_root(config))
    except Exception as error:  # hatchling's errors have no common type: say which, go on
        log.warning("no wheels for the notebooks: %s: %s", type(error).__name__, error)
        return None
    uris = [WHEELS_URI + path.name for path in built]
    for uri, path in zip(uris, built, strict=True):
        files.append(File.generated(config, uri, abs_src_path=str(path)))
    if not config.site_url:
        log.warning("no site_url in mkdocs.yml: the notebooks cannot say where to install from")
        return None
    base = config.site_url.rstrip("/") + "/"
    return Install([base + uri for uri in uris], base + CHAPTERS + TUTORIAL_MODULE)


# --- 9. settings in the text -------------------------------------------------------------------
def repo_folder(repo_url: str) -> str:
    """The folder ``git clone repo_url`` makes: the URL's last part, less any ``.git``."""
    return PurePosixPath(urlsplit(repo_url).path).name.removesuffix(".git")


def fill_settings(markdown: str, config: MkDocsConfig) -> str:
    """``markdown`` with each ``{{ repo_url }}`` and ``{{ repo_folder }}`` filled in from
    mkdocs.yml (a warning, so the strict build fails, if ``repo_url`` is not set)."""
    if not SETTINGS.search(markdown):
        return markdown
    if not config.repo_url:
        log.warning("a page names {{ repo_url }}, and mkdocs.yml sets no repo_url")
        return markdown
    values = {"repo_url": config.repo_url, "repo_folder": repo_folder(config.repo_url)}
    return SETTINGS.sub(lambda match: values[match["name"]], markdown)
