"""Graph-only ops and helpers: placeholders, no-ops and groups, initializers, scopes."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from eagerflow.autodiff import Variable, not_differentiable, register_gradient
from eagerflow.graph.core.device import canonical_device
from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor, get_default_graph
from eagerflow.tensor import convert_to_tensor, dtypes, set_seed
from eagerflow.tensor.dtypes import ANY, DType
from eagerflow.tensor.errors import InvalidArgumentError, ShapeError, format_shape
from eagerflow.tensor.execution import execute, executing_eagerly
from eagerflow.tensor.registry import OPS, Attrs, Shape, op
from eagerflow.tensor.rules import attr_dtype_rule, compatible, same_dtype
from eagerflow.tensor.schema import DTypeAttr, Ints, Maybe


def _placeholder_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    return [attrs["shape"]]


def placeholder_kernel(shape: Any, dtype: DType) -> np.ndarray:
    # a placeholder has no value of its own: running one unfed is an error
    raise InvalidArgumentError("a placeholder must be fed a value (feed_dict)")


PLACEHOLDER_ATTRS = {"shape": Maybe(Ints(min=0, unknown=True)), "dtype": DTypeAttr()}


@op("Placeholder", placeholder_kernel, shape=_placeholder_shape, dtype=attr_dtype_rule,
    attrs=PLACEHOLDER_ATTRS, fed=True)  # fmt: skip
def placeholder(
    dtype: DType | str, shape: Sequence[int | None] | None = None, name: str | None = None
) -> SymbolicTensor:
    """A graph input, fed (``feed_dict``) when a Session runs; running it unfed is an error.
    ``None`` dimensions (or shape) are unknown."""
    if executing_eagerly():
        raise RuntimeError(
            "placeholder() builds a graph input: call it inside `with graph.as_default():` "
            "(in eager mode, just pass values to your ops)"
        )
    attrs = {
        "shape": None if shape is None else tuple(None if d is None else int(d) for d in shape),
        "dtype": dtypes.as_dtype(dtype),
    }
    return execute("Placeholder", (), attrs, name or "Placeholder")[0]  # type: ignore[return-value]


def _with_default_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    # the given shape may be more general than the default's (None sizes), never different
    (default,), given = shapes, attrs["shape"]
    if not compatible(default, given):
        raise ShapeError(f"PlaceholderWithDefault: the default's shape {format_shape(default)} "
                         f"does not fit the given shape {format_shape(given)}")  # fmt: skip
    return [given]


def with_default_kernel(default: np.ndarray, shape: Any) -> np.ndarray:
    return default  # unfed, it is its default


@op("PlaceholderWithDefault", with_default_kernel, shape=_with_default_shape,
    dtype=same_dtype(ANY), attrs={"shape": PLACEHOLDER_ATTRS["shape"]})  # fmt: skip
def placeholder_with_default(
    input: Any,
    shape: Sequence[int | None] | None,
    name: str | None = None,
) -> Any:
    """A graph input that may be fed, and is ``input`` when it is not. ``shape`` (``None``
    sizes, or ``None``: any shape) must fit ``input``'s shape and is the output's static
    shape, so a graph built on it works for any fed size. Eagerly it is ``input``."""
    attrs = {
        "shape": None if shape is None else tuple(None if d is None else int(d) for d in shape)
    }
    default = convert_to_tensor(input)
    return execute("PlaceholderWithDefault", (default,), attrs, name or "PlaceholderWithDefault")[0]


@register_gradient("PlaceholderWithDefault")
def _with_default_grad(op: Any, grad: Any) -> tuple[Any]:
    return (grad,)  # unfed it is an identity (as TensorFlow's gradient says)


def _no_outputs(inputs: Sequence[Any], attrs: Attrs) -> list[Any]:
    return []


@op("NoOp", shape=_no_outputs, dtype=_no_outputs, multi_output=True)
def no_op_kernel(*inputs: np.ndarray) -> tuple[()]:
    """Does nothing; used for its control inputs (``group``, initializers)."""
    return ()


# Neither takes an input, so neither has one to pass a gradient to.
not_differentiable("Placeholder", "NoOp")


def group(*inputs: Any, name: str | None = None) -> Operation | None:
    """One op that runs all of ``inputs`` (ops or tensors); None in eager mode."""
    if executing_eagerly():
        return None
    flat = [x for item in inputs for x in (item if isinstance(item, list | tuple) else [item])]
    with get_default_graph().control_dependencies([x for x in flat if x is not None]):
        return _no_op(name or "group_deps")


def _no_op(name: str) -> Operation:
    return get_default_graph().create_op(OPS["NoOp"], (), {}, [], [], name)


def no_op(name: str | None = None) -> Operation | None:
    """An op that does nothing, to hang control dependencies on (None when eager)."""
    return None if executing_eagerly() else _no_op(name or "NoOp")


def global_variables(graph: Graph | None = None) -> list[Variable]:
    """The variables created in ``graph`` (default: the current one), in creation order."""
    graph = graph or get_default_graph()
    return [o.attrs["variable"] for o in graph.get_operations() if o.op_def.defines_variable]


def trainable_variables(graph: Graph | None = None) -> list[Variable]:
    """The graph's variables that optimizers train (``trainable=True``)."""
    return [v for v in global_variables(graph) if v.trainable]


def variables_initializer(var_list: Sequence[Variable], name: str = "init") -> Operation | None:
    """One op that runs the initializers of ``var_list``."""
    return group(*[v.initializer for v in var_list], name=name)


def global_variables_initializer() -> Operation | None:
    """One op that initializes every variable of the current graph."""
    return variables_initializer(global_variables(), name="init")


def set_random_seed(seed: int | None) -> None:
    """TensorFlow 1's graph-level seed: the random ops made afterwards in the default graph
    get seeds from it (``eagerflow.tensor.random_ops.get_seed``), so each Session, and the
    graph written and read back, draws the same numbers. Eagerly: ``set_seed``."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise TypeError(f"set_random_seed: the seed is an int >= 0 or None, got {seed!r}")
    if executing_eagerly():
        set_seed(seed)
        return
    get_default_graph().random_seed = seed


@contextmanager
def name_scope(name: str) -> Iterator[str]:
    """Prefix the names of ops created inside with ``name/`` (no-op in eager mode)."""
    if executing_eagerly():
        yield name + "/"
        return
    with get_default_graph().name_scope(name) as scope:
        yield scope


@contextmanager
def device(device_name: str | None) -> Iterator[str]:
    """Place the ops created inside on ``device_name``, e.g. ``"/job:worker/task:1"`` (see
    ``Graph.device``): recorded on each node, kept in GraphDefs, and what ``partition`` and a
    Session in a job cut the graph by.

    In eager mode the spec is checked and otherwise ignored: every eager op runs here, on
    the CPU, as TensorFlow runs ops placed on a device it lacks with soft placement (its
    default)."""
    if executing_eagerly():
        yield canonical_device(device_name)
        return
    with get_default_graph().device(device_name) as placed:
        yield placed


@contextmanager
def control_dependencies(control_inputs: Sequence[Any] | None) -> Iterator[None]:
    """Ops created inside run after ``control_inputs`` (eager ops already run in order);
    ``None`` clears the enclosing blocks' control inputs."""
    if executing_eagerly():
        yield
        return
    with get_default_graph().control_dependencies(control_inputs):
        yield


__all__ = [
    "control_dependencies",
    "device",
    "global_variables",
    "global_variables_initializer",
    "group",
    "name_scope",
    "no_op",
    "no_op_kernel",
    "placeholder",
    "placeholder_with_default",
    "set_random_seed",
    "trainable_variables",
    "variables_initializer",
]
