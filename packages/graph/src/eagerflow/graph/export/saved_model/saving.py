"""``save``: functions and their variables' values into a SavedModel directory, written whole
or not at all."""

from __future__ import annotations

import contextlib
import json
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from eagerflow.graph.core.files import atomic_directory, make_folder, new_file, recover_directory
from eagerflow.graph.export.graph_def import (
    functions_as_graph_def,
)
from eagerflow.graph.export.limits import check_name
from eagerflow.graph.export.saved_model.format import (
    DEFAULT_SERVING_SIGNATURE,
    FORMAT,
    SAVED_MODEL_FILENAME,
    VARIABLES_FILENAME,
    VERSION,
    encode_outputs,
    encode_structure,
    spec_entry,
    tensor_entry,
)
from eagerflow.graph.export.saved_model.loading import LoadedFunction, LoadedModel
from eagerflow.graph.tracing.function import ConcreteFunction, Function
from eagerflow.graph.tracing.signatures import signature_parameters
from eagerflow.graph.tracing.tensor_spec import TensorSpec
from eagerflow.tensor.errors import FailedPreconditionError
from eagerflow.tensor.nest import flatten

# What save() writes: a traced function, or one loaded from a SavedModel (re-saving it).
Saveable = Function | LoadedFunction


# --- save ------------------------------------------------------------------------------------
def _require_signature(function: Saveable, name: str) -> None:
    if function.input_signature is None:
        raise TypeError(
            f"save(): function {name!r} has no input_signature. A SavedModel runs without the "
            "Python code, so each function is saved as one trace made from its signature: "
            "write @function(input_signature=[TensorSpec((None, 4), ef.float32)]) (one "
            "TensorSpec per argument; None for a size that may vary)"
        )


def _functions_of(obj: Any) -> tuple[dict[str, Saveable], str | None]:
    """The functions to save, by name, and the one that calling the loaded object calls."""
    if isinstance(obj, LoadedModel):  # re-saved as it was loaded (as TensorFlow allows)
        return dict(obj.functions), obj.call_name
    if isinstance(obj, Function):
        name = getattr(obj, "__name__", "")
        name = name if name.isidentifier() else "__call__"
        _require_signature(obj, name)
        return {name: obj}, name
    if isinstance(obj, ConcreteFunction):
        raise TypeError(
            "save() takes a function with an input_signature (or an object holding some), not "
            "a ConcreteFunction: give the function itself"
        )
    names = {n for klass in type(obj).__mro__ for n, v in vars(klass).items()
             if isinstance(v, Function)}  # fmt: skip
    with contextlib.suppress(TypeError):  # no __dict__ (__slots__): the class's only
        names |= {n for n, v in vars(obj).items() if isinstance(v, Function)}
    found: dict[str, Saveable] = {}
    skipped = []
    for name in sorted(names):
        function = getattr(obj, name)  # a method: bound to obj (its own traces)
        if not isinstance(function, Function) or not name.isidentifier():
            continue
        if function.input_signature is None:
            skipped.append(name)
        else:
            found[name] = function
    what = type(obj).__name__
    if not found:
        raise TypeError(
            f"save(): {what} has no attribute that is a function with an input_signature "
            + (f"(its functions {', '.join(skipped)} have none) " if skipped else "")
            + "to save. Give one, e.g. obj.serve = function(lambda x: obj(x), "
            "input_signature=[TensorSpec((None, 4), ef.float32)])"
        )
    if skipped:
        warnings.warn(
            f"save(): {what}'s functions {', '.join(skipped)} have no input_signature and are "
            "not saved (give them one to save them)",
            UserWarning,
            stacklevel=3,
        )
    return found, "__call__" if "__call__" in found else None


def _input_names(function: Saveable, parameters: Sequence[str], signature: str) -> list[str]:
    """The names a serving signature's inputs have: the parameter's (or its TensorSpec's
    name), ``x_0``, ``x_1``, ... for the leaves of a nested argument."""
    assert function.input_signature is not None
    names: list[str] = []
    for parameter, spec in zip(parameters, function.input_signature, strict=True):
        leaves = flatten(spec)
        if isinstance(spec, TensorSpec):
            names.append(spec.name or parameter)
        else:
            names += [leaf.name or f"{parameter}_{i}" for i, leaf in enumerate(leaves)]
    if len(set(names)) != len(names):
        raise ValueError(f"save(): signature {signature!r} has two inputs of one name: {names}")
    return names


def _output_names(structure: Any, count: int) -> list[str]:
    """``output_0``, ... (TensorFlow's names), or the keys of a flat dict of tensors."""
    if (
        isinstance(structure, dict)
        and all(isinstance(k, str) for k in structure)
        and not any(isinstance(v, list | tuple | dict) for v in structure.values())
    ):
        return list(structure)
    return [f"output_{i}" for i in range(count)]


def save(
    obj: Any,
    export_dir: str | os.PathLike[str],
    signatures: Saveable | Mapping[str, Saveable] | None = None,
) -> None:
    """Save ``obj``'s functions, traced from their input signatures, and the values of the
    variables they read, as a SavedModel directory ``export_dir`` (see the module docs).

    ``obj`` is a ``function`` with an ``input_signature``, or an object whose attributes are
    such functions. ``signatures``: a function, or a dict of serving signature names to
    functions (default ``{"serving_default": obj}`` when ``obj`` is a function). The
    directory is written whole or not at all; an existing SavedModel there is replaced."""
    functions, call = _functions_of(obj)
    attributes = set(functions)
    signature_functions = _add_signature_functions(_signatures(obj, signatures), functions)
    concretes = {name: f.get_concrete_function() for name, f in functions.items()}
    graph_def, library, variables = functions_as_graph_def(concretes)
    parameters = {name: _parameters(name, f) for name, f in functions.items()}
    entries = {
        name: _function_entry(
            f, concretes[name], library[name], name in attributes, parameters[name]
        )
        for name, f in functions.items()
    }
    signature_entries = {
        key: _signature_entry(key, name, functions[name], concretes[name], parameters[name])
        for key, name in signature_functions.items()
    }
    document = {
        "format": FORMAT,
        "version": VERSION,
        "call": call,
        "functions": entries,
        "signatures": signature_entries,
        "variables": VARIABLES_FILENAME,
        "graph_def": graph_def,
    }
    text = json.dumps(document, indent=1, allow_nan=False)
    _write_directory(os.fspath(export_dir), text, _variable_arrays(variables))


def _parameters(name: str, function: Saveable) -> list[str]:
    if isinstance(function, LoadedFunction):
        return function.parameters
    return signature_parameters(name, function.python_function, len(function.input_signature or ()))


def _signatures(
    obj: Any, signatures: Saveable | Mapping[str, Saveable] | None
) -> Mapping[str, Saveable]:
    """``save``'s ``signatures`` argument as a dict (see ``save``); a loaded model keeps its
    own unless others are given."""
    if signatures is None and isinstance(obj, LoadedModel):
        return {key: signature.function for key, signature in obj.signatures.items()}
    if signatures is None:
        return {DEFAULT_SERVING_SIGNATURE: obj} if isinstance(obj, Function) else {}
    if isinstance(signatures, Saveable):
        return {DEFAULT_SERVING_SIGNATURE: signatures}
    if not isinstance(signatures, Mapping):
        raise TypeError(
            f"save(): signatures is a function or a dict of them, got {signatures!r:.60}"
        )
    return signatures


def _add_signature_functions(
    signatures: Mapping[str, Saveable], functions: dict[str, Saveable]
) -> dict[str, str]:
    """Each signature's function name in ``functions``; a function that is not an attribute
    is added to ``functions`` under a name of its own (saved for the signature alone)."""
    names: dict[str, str] = {}
    for key, function in signatures.items():
        if not isinstance(key, str) or not isinstance(function, Saveable):
            raise TypeError(
                f"save(): signatures maps names to functions with an input_signature, got "
                f"{key!r}: {function!r:.60}"
            )
        _require_signature(function, f"signatures[{key!r}]")
        name = next((n for n, f in functions.items() if f is function), None)
        if name is None:
            name = f"signature_{key}" if f"signature_{key}".isidentifier() else "signature"
            while name in functions:
                name += "_"
            functions[name] = function
        names[key] = name
    return names


def _function_entry(
    function: Saveable,
    concrete: ConcreteFunction,
    library_name: str,
    attribute: bool,
    parameters: list[str],
) -> dict[str, Any]:
    """The document's entry for one saved function."""
    assert function.input_signature is not None
    return {
        "library": library_name,
        "attribute": attribute,
        "parameters": parameters,
        "input_signature": [
            encode_structure(s, lambda leaf: {"spec": spec_entry(leaf)})
            for s in function.input_signature
        ],
        "outputs": encode_outputs(concrete.structure),
    }


def _signature_entry(
    key: str, name: str, function: Saveable, concrete: ConcreteFunction, parameters: list[str]
) -> dict[str, Any]:
    """The document's entry for one serving signature: its function, named inputs, outputs."""
    inputs = _input_names(function, parameters, key)
    specs = flatten(list(function.input_signature or ()))
    outputs = _output_names(concrete.structure, len(concrete.outputs))
    return {
        "function": name,
        "inputs": [[n, spec_entry(s)] for n, s in zip(inputs, specs, strict=True)],
        "outputs": [[n, tensor_entry(t)] for n, t in zip(outputs, concrete.outputs, strict=True)],
    }


def _variable_arrays(variables: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The values of the variables the functions read, by their key in the document."""
    arrays = {}
    for key, variable in variables.items():
        check_name(f"save(): variable {variable.name!r}", key)  # (a member of the archive)
        try:
            arrays[key] = np.asarray(variable.numpy())
        except FailedPreconditionError:
            raise FailedPreconditionError(
                f"save(): variable {variable.name!r} lives in a graph (its value is per "
                "Session): a SavedModel saves the eager variables its functions read"
            ) from None
    return arrays


def _write_directory(export_dir: str, text: str, arrays: dict[str, np.ndarray]) -> None:
    """Write the two files into a temporary sibling of ``export_dir``, then move it there
    (``atomic_directory``: at every step the path holds the old model or the new one). The
    values go first, so a staging folder with a ``saved_model.json`` is complete."""
    target = os.path.abspath(export_dir)
    recover_directory(target)  # a crashed save's old model goes back first, then is checked
    if os.path.lexists(target):
        if not os.path.isdir(target) or os.path.islink(target):
            raise FileExistsError(f"save(): {export_dir!r} exists and is not a directory")
        if os.listdir(target) and not os.path.isfile(os.path.join(target, SAVED_MODEL_FILENAME)):
            raise FileExistsError(
                f"save(): {export_dir!r} is a directory that is not a SavedModel (it has no "
                f"{SAVED_MODEL_FILENAME}): refusing to replace it"
            )
    with atomic_directory(target) as staging:
        values = os.path.join(staging, VARIABLES_FILENAME)
        make_folder(os.path.dirname(values))
        with new_file(values, "wb") as b:
            np.savez(b, **cast(dict[str, Any], arrays))  # numeric arrays: never pickled
        with new_file(os.path.join(staging, SAVED_MODEL_FILENAME)) as f:
            f.write(text)
            f.write("\n")


__all__ = ["save"]
