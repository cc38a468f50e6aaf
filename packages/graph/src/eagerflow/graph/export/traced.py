"""What every exporter (ONNX, TensorFlow's GraphDef) asks of the traced function it writes:
the trace itself, and the names its inputs get in the file."""

from __future__ import annotations

import inspect

from eagerflow.graph.tracing.function import ConcreteFunction, Function
from eagerflow.graph.tracing.tensor_spec import TensorSpec


def concrete_of(function: Function | ConcreteFunction) -> ConcreteFunction:
    """The trace an exporter writes: a ConcreteFunction itself, or a Function's single trace
    (which needs its input_signature)."""
    if isinstance(function, ConcreteFunction):
        return function
    if isinstance(function, Function):
        if function.input_signature is None:
            raise ValueError(
                "export needs the function's input shapes: decorate it with "
                "function(input_signature=[TensorSpec(...)]), or pass a ConcreteFunction "
                "(f.get_concrete_function(TensorSpec((None, 3))))"
            )
        return function.get_concrete_function()
    raise TypeError(
        f"export takes an eagerflow.graph Function or ConcreteFunction, got {function!r:.60}"
    )


def input_names_of(function: Function | ConcreteFunction, concrete: ConcreteFunction) -> list[str]:
    """The model's input names: a Function's parameter names when its input_signature is one
    TensorSpec per parameter (a spec's own name first), else the trace's placeholder names."""
    names = [t.op.name for t in concrete.arguments]
    if not isinstance(function, Function):
        return names
    signature = function.input_signature
    if signature is None or not all(isinstance(s, TensorSpec) for s in signature):
        return names
    try:
        parameters = list(inspect.signature(function.python_function).parameters)
    except (TypeError, ValueError):
        return names
    if len(parameters) < len(names):
        return names
    return [s.name or p for s, p in zip(signature, parameters, strict=False)]


__all__ = ["concrete_of", "input_names_of"]
