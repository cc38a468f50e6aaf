"""The three helpers the tutorial's chapters import: ``show`` a matplotlib figure, ``draw`` a
diagram, print a ``listing`` of real source code.

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
import sys
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


__all__ = ["draw", "in_jupyter", "listing", "show"]
