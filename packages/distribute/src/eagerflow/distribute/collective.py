"""``CollectiveAllReduce``: the op that sums a tensor over every task of the job.

An all-reduce is an *op*, like ``WriteSummary``, not a Python call around one: eagerly it
runs at once; in a ``function`` (or a Session's graph) it is a node that all-reduces each time
the graph runs, so training code written once works in the three modes. It is *stateful*: its
effect (talking to the other tasks) is the point, so a graph never folds, merges or drops it,
and a traced function runs it in program order, which must be the same order on every task.
It has no attributes: it talks through the communicator of the process (``use_communicator``;
the ``MultiWorkerMirroredStrategy`` installs its own), as a TensorFlow task has one collective
executor.

Its gradient is written with public ops: the gradient of a sum over tasks is the sum over
tasks of the upstream gradient (each task's output depends on every task's input with
derivative 1).

``all_reduce_tensors`` packs many tensors (a model's gradients) into one flat buffer per
dtype, all-reduces it once and cuts it back, as Horovod does: one message instead of one per
variable.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff.registry import register_gradient
from eagerflow.distribute.communicator import Communicator
from eagerflow.tensor.dtypes import NUMBERS
from eagerflow.tensor.execution import execute
from eagerflow.tensor.registry import op
from eagerflow.tensor.rules import same_dtype, same_shape_rule
from eagerflow.tensor.tensor import Tensor, convert_to_tensor

# The communicator the op talks through. A ContextVar rather than a global so that a test
# may run one task per thread, each with its own.
_communicator: ContextVar[Communicator | None] = ContextVar("eagerflow_communicator", default=None)


def current_communicator() -> Communicator:
    """The communicator ``CollectiveAllReduce`` talks through; a RuntimeError if none is set."""
    found = _communicator.get()
    if found is None:
        raise RuntimeError(
            "CollectiveAllReduce: no communicator: create a MultiWorkerMirroredStrategy() "
            "(or use_communicator(...)) before running it"
        )
    return found


def set_communicator(communicator: Communicator) -> None:
    """Make ``communicator`` the one this thread's all-reduces use from now on."""
    _communicator.set(communicator)


@contextmanager
def use_communicator(communicator: Communicator) -> Iterator[Communicator]:
    """``with use_communicator(c):`` all-reduces use ``c`` inside the block."""
    token = _communicator.set(communicator)
    try:
        yield communicator
    finally:
        _communicator.reset(token)


def _all_reduce_kernel(x: np.ndarray) -> np.ndarray:
    # a kernel never writes its input: reduce a copy in place
    return current_communicator().all_reduce(np.array(x, order="C", copy=True), "sum")


@op("CollectiveAllReduce", _all_reduce_kernel, shape=same_shape_rule,
    dtype=same_dtype(NUMBERS), stateful=True)  # fmt: skip
def all_reduce_sum(x: Any, name: str | None = None) -> Tensor:
    """The sum of ``x`` over every task of the job, elementwise: the same tensor on every
    task. Every task must run it, in the same order as its other all-reduces, with ``x`` of
    one shape and dtype."""
    return execute("CollectiveAllReduce", (convert_to_tensor(x),), {}, name)[0]


@register_gradient("CollectiveAllReduce")
def _all_reduce_grad(op: Any, grad: Tensor) -> tuple[Tensor]:
    # d(sum over tasks of x_t)/d(x_t) is 1 on every task, for every task's output
    return (all_reduce_sum(grad),)


def _known_shape(value: Tensor) -> tuple[int, ...]:
    shape = value.shape
    if shape is None or None in shape:
        raise ValueError(f"all_reduce_tensors: every shape must be known, got {shape}")
    return tuple(int(d) for d in shape if d is not None)


def all_reduce_tensors(tensors: Sequence[Any]) -> list[Tensor]:
    """Each tensor summed over every task, with one ``CollectiveAllReduce`` per dtype: the
    tensors of a dtype are flattened and concatenated into one buffer, the buffer is
    all-reduced, then cut back and reshaped. Public ops only, so it works eagerly, in a
    ``function`` and in a Session's graph, and has a gradient."""
    values = [convert_to_tensor(t) for t in tensors]
    shapes = [_known_shape(v) for v in values]
    results: list[Any] = [None] * len(values)
    for dtype in dict.fromkeys(v.dtype for v in values):
        chosen = [i for i, v in enumerate(values) if v.dtype is dtype]
        flat = [ef.reshape(values[i], [-1]) for i in chosen]
        summed = all_reduce_sum(flat[0] if len(flat) == 1 else ef.concat(flat, axis=0))
        sizes = [math.prod(shapes[i]) for i in chosen]
        pieces = [summed] if len(flat) == 1 else ef.split(summed, sizes, axis=0)
        for i, piece in zip(chosen, pieces, strict=True):
            results[i] = ef.reshape(piece, shapes[i])
    return results


__all__ = [
    "all_reduce_sum",
    "all_reduce_tensors",
    "current_communicator",
    "set_communicator",
    "use_communicator",
]
