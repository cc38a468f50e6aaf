"""Signatures: what a ``function`` looks at to decide whether a call can reuse a trace.

Each leaf of the arguments (after ``flatten``) has a signature. A tensor's is its dtype and
shape, never its values: that is why one graph serves every call with tensors of the same
kind. A Python value's is the value itself, because the trace baked it into the graph (an
``if training:`` was decided while tracing). A ``TensorSpec`` has the signature of the
tensors it describes, with ``None`` for the sizes it leaves open.

Three parts of ``function`` read signatures, and this module holds what each needs:

* the trace cache: ``signature_of`` makes the key, and ``generalizes`` lets a call reuse a
  trace made for a more general shape (a trace for ``(None, 3)`` runs a ``(2, 3)`` call);
* ``input_signature``: ``bind_to_signature`` checks a call against fixed specs and converts
  its arguments to tensors, so that the function is traced once and never again;
* the retracing warning: ``argument_signatures`` names each argument's signature, and
  ``retracing_message`` says which argument kept changing and what to do about it.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph.tracing.tensor_spec import TensorSpec
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import DTypeError, EagerflowError, ShapeError, a_tensor, format_shape
from eagerflow.tensor.nest import flatten
from eagerflow.tensor.rules import compatible

Signature = tuple[Any, ...]  # one leaf's: ("tensor", dtype, shape), ("value", type, value), ...

# TensorFlow warns when a function keeps retracing, counting 5 traces as "frequent".
RETRACING_THRESHOLD = 5


# --- the trace cache ---------------------------------------------------------------------------
def signature_of(leaf: Any) -> Signature:
    """One leaf's signature: what a trace made for it depends on."""
    if isinstance(leaf, Tensor):
        return ("tensor", leaf.dtype, None if leaf.shape is None else tuple(leaf.shape))
    if isinstance(leaf, TensorSpec):  # the tensors it describes share their trace with it
        return ("tensor", leaf.dtype, leaf.static_shape)
    if isinstance(leaf, Variable):  # a trace reads that very variable
        return ("variable", id(leaf))
    try:
        hash(leaf)
    except TypeError:  # a list is flattened, but e.g. a set is a leaf: keyed by its repr
        return ("value", type(leaf), repr(leaf))
    return ("value", type(leaf), leaf)


def generalizes(general: Sequence[Signature], specific: Sequence[Signature]) -> bool:
    """Can the trace made for the signatures ``general`` run a call whose signatures are
    ``specific``? Yes when they are equal, except that a tensor in ``general`` may leave
    sizes open (``None``) that ``specific`` fixes: its graph works for any size there."""
    return len(general) == len(specific) and all(map(_leaf_generalizes, general, specific))


def _leaf_generalizes(general: Signature, specific: Signature) -> bool:
    if general == specific:
        return True
    if general[0] != "tensor" or specific[0] != "tensor" or general[1] is not specific[1]:
        return False
    open_shape, shape = general[2], specific[2]
    if open_shape is None:  # any rank
        return True
    return (
        shape is not None
        and len(open_shape) == len(shape)
        and all(d is None or d == s for d, s in zip(open_shape, shape, strict=True))
    )


def relax(
    key: tuple[Signature, ...], traced: Iterable[tuple[Signature, ...]], leaves: Sequence[Any]
) -> tuple[tuple[Signature, ...], list[Any]]:
    """``function(reduce_retracing=True)``: a call that must retrace because a tensor's shape
    changed is traced for the shapes its signature and an earlier trace's have in common
    (``None`` in the sizes that differ, an unknown rank if the ranks do), as TensorFlow does,
    so that the next such call reuses that trace. Returns the key and the leaves to trace
    (tensors whose shapes were relaxed become TensorSpecs); the first call, or one that
    differs in more than tensor shapes, is traced as it is."""
    for earlier in traced:
        common = _common(earlier, key)
        if common is not None:
            specs = [TensorSpec(c[2], c[1]) if s != c else x
                     for s, c, x in zip(key, common, leaves, strict=True)]  # fmt: skip
            return common, specs
    return key, list(leaves)


def _common(a: tuple[Signature, ...], b: tuple[Signature, ...]) -> tuple[Signature, ...] | None:
    """The most specific signatures both ``a`` and ``b`` fit, if they differ only in shapes."""
    if len(a) != len(b) or a == b:
        return None
    common = []
    for x, y in zip(a, b, strict=True):
        if x == y:
            common.append(x)
        elif x[0] == y[0] == "tensor" and x[1] is y[1]:
            common.append(("tensor", x[1], _common_shape(x[2], y[2])))
        else:
            return None
    return tuple(common)


def _common_shape(a: Any, b: Any) -> Any:
    if a is None or b is None or len(a) != len(b):
        return None  # an unknown rank
    return tuple(i if i == j else None for i, j in zip(a, b, strict=True))


# --- input_signature ---------------------------------------------------------------------------
def check_input_signature(input_signature: Any) -> tuple[Any, ...]:
    """``input_signature`` as a tuple, checked: one TensorSpec (or a list, tuple or dict of
    them) per argument."""
    if not isinstance(input_signature, list | tuple):
        raise TypeError(
            "input_signature must be a list or tuple with one TensorSpec per argument, got "
            f"{input_signature!r}"
        )
    for i, entry in enumerate(input_signature):
        for leaf in flatten(entry):
            if not isinstance(leaf, TensorSpec):
                raise TypeError(
                    f"input_signature must hold TensorSpecs (one per argument, or nested lists, "
                    f"tuples and dicts of them); its entry {i} is {entry!r}, which holds {leaf!r}"
                )
    return tuple(input_signature)


def signature_parameters(
    function_name: str, python_function: Callable[..., Any], count: int
) -> list[str]:
    """The names of the ``count`` parameters an input_signature of ``count`` specs describes:
    the first positional ones (then ``args[0]``, ... of a ``*args``)."""
    try:
        parameters = list(inspect.signature(python_function).parameters.values())
    except (TypeError, ValueError):  # no signature to read (some builtins): by position
        return [f"arg{i}" for i in range(count)]
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    names = [p.name for p in parameters if p.kind in kinds]
    star = [p.name for p in parameters if p.kind is inspect.Parameter.VAR_POSITIONAL]
    if count > len(names):
        if not star:
            raise TypeError(
                f"{function_name}: the input_signature has {count} specs, but the function "
                f"takes only {len(names)} positional argument(s) ({', '.join(names) or 'none'})"
            )
        names += [f"{star[0]}[{i}]" for i in range(count - len(names))]
    return names[:count]


def bind_to_signature(
    function_name: str,
    names: Sequence[str],
    input_signature: Sequence[Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> list[Any]:
    """The arguments of a call in the input_signature's order, each converted to a tensor of
    its spec's dtype and checked against the spec (a TensorSpec passes if it fits).

    Only arguments the signature describes may be passed, by position or by name, as in
    TensorFlow: a trace made for the signature has no other inputs."""
    if len(args) > len(names):
        raise TypeError(
            f"{function_name}() takes {len(names)} argument(s) described by its "
            f"input_signature ({', '.join(names)}), got {len(args)} positional arguments"
        )
    for name in kwargs:
        if name in names[: len(args)]:
            raise TypeError(f"{function_name}() got multiple values for argument '{name}'")
        if name not in names:
            raise TypeError(
                f"{function_name}() got the argument '{name}', which its input_signature does "
                f"not describe (it describes {', '.join(names)})"
            )
    values = list(args)
    for name, spec in zip(names[len(args) :], input_signature[len(args) :], strict=True):
        if name not in kwargs:
            raise TypeError(
                f"{function_name}() missing the argument '{name}' (its input_signature "
                f"describes it as {spec})"
            )
        values.append(kwargs[name])
    return [
        _conform(spec, value, name, function_name)
        for spec, value, name in zip(input_signature, values, names, strict=True)
    ]


def _conform(spec: Any, value: Any, where: str, function_name: str) -> Any:
    """``value`` (an argument, or a part of one at ``where``) made to fit ``spec``, which may
    be a TensorSpec or a list, tuple or dict of them."""
    if isinstance(spec, dict):
        if not isinstance(value, dict) or set(value) != set(spec):
            raise _structure_error(spec, value, where, function_name)
        return {key: _conform(s, value[key], f"{where}[{key!r}]", function_name)
                for key, s in spec.items()}  # fmt: skip
    if isinstance(spec, list | tuple):
        if not isinstance(value, list | tuple) or len(value) != len(spec):
            raise _structure_error(spec, value, where, function_name)
        return type(spec)(_conform(s, v, f"{where}[{i}]", function_name)
                          for i, (s, v) in enumerate(zip(spec, value, strict=True)))  # fmt: skip
    return _conform_leaf(spec, value, where, function_name)


def _structure_error(spec: Any, value: Any, where: str, function_name: str) -> ValueError:
    return ValueError(
        f"{function_name}() argument '{where}': the input_signature describes it as "
        f"{spec!r}, got {_describe(value)}, which is not nested the same way"
    )


def _conform_leaf(spec: TensorSpec, value: Any, where: str, function_name: str) -> Any:
    """``value`` as a tensor fitting ``spec``: a Python number or NumPy array becomes a
    tensor of the spec's dtype (as TensorFlow converts it); a tensor must have that dtype."""
    problem = f"{function_name}() argument '{where}': expected {spec}, got {_describe(value)}"
    if isinstance(value, TensorSpec):  # get_concrete_function(TensorSpec(...))
        if value.dtype is not spec.dtype:
            raise DTypeError(problem)
        if not compatible(spec.static_shape, value.static_shape):
            raise ShapeError(problem)
        return value
    try:
        tensor = ef.convert_to_tensor(value, spec.dtype)
    except EagerflowError as e:  # another dtype, a string, a ragged list: keep its kind
        raise type(e)(f"{problem} ({e})") from None
    if not compatible(spec.static_shape, tensor.shape):
        if not isinstance(value, Tensor):  # say the shape the value has as a tensor
            problem += f", that is {_describe(tensor)}"
        raise ShapeError(f"{problem} (None in a spec's shape fits any size)")
    return tensor


def _describe(value: Any) -> str:
    if isinstance(value, Tensor):
        return f"{a_tensor(value.dtype)} of shape {format_shape(value.shape)}"
    if isinstance(value, TensorSpec):
        return repr(value)
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


# --- the retracing warning ---------------------------------------------------------------------
class RetracingWarning(UserWarning):
    """A ``function`` was traced more than 5 times: each trace runs the Python function again
    and keeps another graph, so something that changes at every call is probably part of the
    signature (a Python number, a tensor's shape). The message names the argument."""


def argument_signatures(
    python_function: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]
) -> dict[str, tuple[Signature, ...]]:
    """The signatures of each argument's leaves, by the parameter's name, defaults included
    (by position when the function has no signature to read or the call does not fit it)."""
    try:
        bound = inspect.signature(python_function).bind(*args, **kwargs)
        bound.apply_defaults()  # ``f(x)`` then ``f(x, n=2)``: n changed from its default
        named = dict(bound.arguments)
    except (TypeError, ValueError):
        named = {f"arg{i}": value for i, value in enumerate(args)} | dict(kwargs)
    return {name: tuple(map(signature_of, flatten(value))) for name, value in named.items()}


def retracing_message(
    function_name: str, traces: Sequence[Mapping[str, tuple[Signature, ...]]]
) -> str:
    """Why ``function_name`` was traced ``len(traces)`` times: which arguments had a new
    signature, and how to keep them from making new traces."""
    message = (
        f"{function_name} has been traced {len(traces)} times (more than "
        f"{RETRACING_THRESHOLD}): each trace runs the Python function again and keeps one "
        "more graph."
    )
    changing = _changing_arguments(traces)
    if not changing:
        return f"{message} Its arguments were passed in different ways (by position, by name)."
    reasons = [f"The argument '{name}' {_describe_change(seen)}" for name, seen in changing.items()]
    return " ".join([message, *reasons])


def _changing_arguments(
    traces: Sequence[Mapping[str, tuple[Signature, ...]]],
) -> dict[str, list[tuple[Signature, ...]]]:
    """Each argument whose signature was not the same in every trace, with the signatures
    it had (in order, each once; ``()`` for a trace that did not pass it)."""
    names = dict.fromkeys(name for trace in traces for name in trace)
    changing = {}
    for name in names:
        seen = list(dict.fromkeys(trace.get(name, ()) for trace in traces))
        if len(seen) > 1:
            changing[name] = seen
    return changing


def _describe_change(seen: list[tuple[Signature, ...]]) -> str:
    """What kept changing about one argument, and the cure, in one sentence."""
    leaves = [s[0] for s in seen if len(s) == 1]
    if len(leaves) < len(seen):  # nested, or not always passed
        return f"changed its signature: {_examples(seen, _render_signatures)}."
    if all(leaf[0] == "value" for leaf in leaves):
        kinds = " or ".join(dict.fromkeys(leaf[1].__name__ for leaf in leaves))
        values = _examples(leaves, lambda leaf: repr(leaf[2]))
        return (
            f"is a Python {kinds} with a new value at each trace ({values}): a Python value "
            "is part of the signature, a tensor's value is not; pass it as a tensor "
            "(ef.constant(...)) and one trace serves every value."
        )
    if all(leaf[0] == "tensor" for leaf in leaves):
        return _describe_tensor_change(leaves)
    if all(leaf[0] == "variable" for leaf in leaves):
        return (
            "is a different Variable at each trace: a trace reads the very variable it was "
            "traced with; pass its value (a tensor), or keep the variable on an object whose "
            "method is the function."
        )
    return f"changed its signature: {_examples(seen, _render_signatures)}."


def _describe_tensor_change(leaves: list[Signature]) -> str:
    dtypes = list(dict.fromkeys(leaf[1] for leaf in leaves))
    shapes = [leaf[2] for leaf in leaves]
    if len(dtypes) > 1:
        return f"is a tensor whose dtype changes ({_examples(dtypes, str)})."
    described = _examples(shapes, format_shape)
    ranks = {None if s is None else len(s) for s in shapes}
    if len(ranks) > 1 or None in ranks:
        return f"is a tensor whose rank changes ({described})."
    general = tuple(
        sizes[0] if len(set(sizes)) == 1 else None
        for sizes in zip(*shapes, strict=True)  # every shape has the same rank here
    )
    return (
        f"is a tensor whose shape changes ({described}): with TensorSpec("
        f"{format_shape(general)}, {dtypes[0]}) for it in an input_signature, one trace "
        "serves all of them (None: any size)."
    )


def _examples(items: Iterable[Any], render: Callable[[Any], str], most: int = 4) -> str:
    """The first few items, rendered, and ``...`` if there are more."""
    items = list(items)
    shown = ", ".join(render(item) for item in items[:most])
    return shown + (", ..." if len(items) > most else "")


def _render_signatures(signatures: tuple[Signature, ...]) -> str:
    if not signatures:
        return "not passed"
    return "[" + ", ".join(map(_render_signature, signatures)) + "]"


def _render_signature(signature: Signature) -> str:
    if signature[0] == "tensor":
        return f"{signature[1]} tensor {format_shape(signature[2])}"
    if signature[0] == "variable":
        return "a variable"
    return repr(signature[2])


_PACKAGE_DIRECTORY = os.path.dirname(__file__) + os.sep


def stacklevel_of_caller() -> int:
    """``warnings.warn``'s stacklevel for the nearest frame outside this package, so that a
    warning names the user's line that called the function (however deep the call came in:
    a method through its class, converted code calling another function)."""
    here = inspect.currentframe()
    frame, level = here and here.f_back, 1  # the frame that calls warnings.warn is level 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIRECTORY):
        frame, level = frame.f_back, level + 1
    return level


__all__ = [
    "RETRACING_THRESHOLD",
    "RetracingWarning",
    "Signature",
    "argument_signatures",
    "bind_to_signature",
    "check_input_signature",
    "generalizes",
    "relax",
    "retracing_message",
    "signature_of",
    "signature_parameters",
    "stacklevel_of_caller",
]
