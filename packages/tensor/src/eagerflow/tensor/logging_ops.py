"""``print``: TensorFlow's ``tf.print``, an op that prints when it *runs*.

Python's ``print`` prints when Python runs it. In eager mode that is when the op runs too,
but in a traced function Python runs only once, while tracing, and shows symbolic tensors.
``ef.print`` is an op instead (TensorFlow's ``PrintV2``): eagerly it prints at once, and in
a graph it prints every time the graph runs it, with the values of that run.

It is *stateful* (its effect is the point, so a graph never folds, merges or drops it, and
a traced function runs it in program order: see the graph package's ``auto_control_deps``),
has no outputs, and is not differentiable.

Like ``tf.print``, it takes tensors and Python values mixed, also nested in lists, tuples
and dicts: the tensors become the op's inputs, everything else is kept in its ``template``
attribute, where a marker holds each tensor's place until the op runs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

import numpy as np

from eagerflow.tensor.errors import InvalidArgumentError
from eagerflow.tensor.execution import execute
from eagerflow.tensor.nest import flatten, pack_sequence_as
from eagerflow.tensor.registry import Attrs, op
from eagerflow.tensor.schema import AttrSchema, Instance, Int
from eagerflow.tensor.tensor import Tensor, convert_to_tensor

# The standard streams by name, found again when the op runs: a test or a tool that swaps
# ``sys.stdout`` for a while (pytest's capsys, markdown-exec) then gets the output.
_STREAMS = {"stdout": "stdout", "stderr": "stderr"}
_DEFAULT_STDERR, _DEFAULT_STDOUT = sys.stderr, sys.stdout  # as they were when imported


class _TensorSlot:
    """Marks where a tensor input goes in a print's template (one object for all slots)."""

    def __repr__(self) -> str:
        return "<tensor>"


TENSOR_SLOT = _TensorSlot()


def _no_outputs(inputs: Sequence[Any], attrs: Attrs) -> list[Any]:
    return []


def print_kernel(
    *arrays: np.ndarray,
    template: list[Any],
    output_stream: str | TextIO,
    summarize: int,
    sep: str,
    end: str,
) -> tuple[()]:
    # writes the template to the stream, each tensor slot filled by the next input
    values = iter(arrays)
    filled = [v if v is not TENSOR_SLOT else next(values) for v in flatten(template)]
    items = pack_sequence_as(template, filled)
    text = sep.join(_format(item, summarize, top=True) for item in items) + end
    stream = getattr(sys, output_stream) if isinstance(output_stream, str) else output_stream
    stream.write(text)
    stream.flush()
    return ()


def _format(value: Any, summarize: int, top: bool = False) -> str:
    """One printed value: arrays as NumPy prints them, at most ``summarize`` items at each
    end of an axis, floats as TensorFlow prints them (``3``, ``1.5``, not ``3.``); a string as
    itself at the top level (as ``print`` does), quoted inside a list or dict (as ``repr``)."""
    if isinstance(value, np.ndarray | np.generic):
        threshold = sys.maxsize if summarize < 0 else 2 * summarize
        return np.array2string(
            np.asarray(value),
            threshold=threshold,
            edgeitems=max(summarize, 1),
            formatter={"float_kind": "{:g}".format},
        )
    if isinstance(value, list | tuple):
        inner = ", ".join(_format(v, summarize) for v in value)
        if isinstance(value, tuple):
            return f"({inner},)" if len(value) == 1 else f"({inner})"
        return f"[{inner}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_format(v, summarize)}" for k, v in value.items()) + "}"
    if isinstance(value, str) and top:
        return value
    return repr(value) if isinstance(value, str) else str(value)


class _Stream(AttrSchema):
    """Where ``print`` writes: a standard stream's name, or an object with a ``write``."""

    expected = "'stdout', 'stderr' or a stream"

    def accepts(self, value: Any) -> bool:
        return (isinstance(value, str) and value in _STREAMS) or callable(
            getattr(value, "write", None)
        )


PRINT_ATTRS = {
    "template": Instance(list, "a list of values and tensor slots"),
    "output_stream": _Stream(),
    "summarize": Int(),
    "sep": Instance(str, "a string"),
    "end": Instance(str, "a string"),
}


@op("PrintV2", print_kernel, shape=_no_outputs, dtype=_no_outputs, attrs=PRINT_ATTRS,
    multi_output=True, stateful=True)  # fmt: skip
def print(  # TensorFlow's name; shadows the builtin in this module
    *inputs: Any,
    output_stream: Any = sys.stderr,
    summarize: int = 3,
    sep: str = " ",
    end: str = "\n",
    name: str | None = None,
) -> None:
    """Print ``inputs`` (tensors and Python values, mixed) when this op runs.

    Eagerly that is now; in a traced function, at every call. ``output_stream`` is
    ``sys.stderr`` (the default, as in TensorFlow), ``sys.stdout``, either's name, or any
    object with a ``write`` method. ``summarize`` items are shown at each end of every axis
    of a tensor (-1: all of them).
    """
    stream = _stream_attr(output_stream)
    leaves = flatten(list(inputs))
    tensors = tuple(convert_to_tensor(leaf) for leaf in leaves if _is_tensor_like(leaf))
    template = pack_sequence_as(
        list(inputs), [TENSOR_SLOT if _is_tensor_like(leaf) else leaf for leaf in leaves]
    )
    attrs = {
        "template": template,
        "output_stream": stream,
        "summarize": int(summarize),
        "sep": sep,
        "end": end,
    }
    execute("PrintV2", tensors, attrs, name)


def _is_tensor_like(value: Any) -> bool:
    """A tensor, or something that converts itself to one (a variable prints its value)."""
    return isinstance(value, Tensor) or hasattr(type(value), "__eagerflow_tensor__")


def _stream_attr(stream: Any) -> str | TextIO:
    """A standard stream by name (looked up again when the op runs), or the stream itself."""
    if isinstance(stream, str) and stream in _STREAMS:
        return stream
    if stream is sys.stderr or stream is sys.__stderr__ or stream is _DEFAULT_STDERR:
        return "stderr"
    if stream is sys.stdout or stream is sys.__stdout__ or stream is _DEFAULT_STDOUT:
        return "stdout"
    if callable(getattr(stream, "write", None)):
        return stream
    raise InvalidArgumentError(
        f"PrintV2: output_stream must be sys.stdout, sys.stderr or have a write() method, "
        f"got {stream!r:.60}"
    )


__all__ = ["TENSOR_SLOT", "print"]
