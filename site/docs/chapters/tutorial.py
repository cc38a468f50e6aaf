"""The helpers the tutorial's chapters import: ``show`` a matplotlib figure, ``draw`` a
diagram, print a ``listing`` of real source code, record a ``pdb_transcript`` of a script.

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
import html
import inspect
import os
import subprocess
import sys
import tempfile
from io import BytesIO
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


def _display(bundle: dict[str, str]) -> None:
    """Show a MIME bundle (``{"text/markdown": ..., "text/plain": ...}``) as a cell's output."""
    from IPython.display import display

    display(bundle, raw=True)


if not in_jupyter():
    # Building the site: matplotlib draws to memory (no window), whatever machine builds it.
    os.environ.setdefault("MPLBACKEND", "Agg")


def show(figure: Any, alt: str) -> None:
    """Put a matplotlib figure on the page as a PNG.

    On the site: an ``<img>`` whose ``src`` is a ``data:`` URI (the PNG itself, base64), so
    the image needs no file of its own, and ``alt`` describes it for those who cannot see it.
    In Jupyter: the PNG, as the cell's output. The figure is closed either way.
    """
    buffer = BytesIO()
    figure.savefig(buffer, format="png", dpi=80)
    import matplotlib.pyplot as plt

    plt.close(figure)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    if in_jupyter():
        _display({"image/png": data, "text/plain": alt})
    else:
        _page_print(f'<img src="data:image/png;base64,{data}" alt="{html.escape(alt)}">')


def draw(picture: Any, **options: Any) -> None:
    """Draw a diagram: mermaid text, or anything with a ``to_mermaid(**options)`` method (a
    ``Graph``, a ``GradientTape``, a compiled ``Program``).

    On the site: a mermaid fence, which the page draws. In Jupyter: the same fence as
    Markdown output (``draw(graph)`` with no options is what showing ``graph`` does).
    """
    mermaid = picture if isinstance(picture, str) else picture.to_mermaid(**options)
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


__all__ = ["draw", "in_jupyter", "listing", "pdb_transcript", "show"]
