"""SavedModel: traced functions and the values of their variables, in a directory that another
program loads without the Python code that built them. TensorFlow 2's ``tf.saved_model``.

A GraphDef (``graph_def.py``) is a graph without values; a checkpoint is values without a
graph. A SavedModel is both, for *functions*: ``save(obj, export_dir)`` traces each function
once, from its ``input_signature``, writes the traces as a GraphDef library and the variables
they read with their current values. ``load(export_dir)`` rebuilds the traces over new eager
variables holding those values. The loading program needs eagerflow's tensor, autodiff and
graph packages, nothing else: not the model's classes, not ``eagerflow.nn``, not the script
that saved it. (This is why a function must have a signature: without the Python code, only
the traces saved can run, so they must be traced for every call the loaded model will get.)

What is saved::

    save(serve, "export")        # serve = function(f, input_signature=[TensorSpec(...)])
    save(model, "export")        # its attributes that are such functions, each by name
    save(model, "export", signatures={"serving_default": model.serve})

``obj`` is a ``function`` with an ``input_signature``, or any object: then its attributes (and
its class's: ``@function`` methods) that are functions with an ``input_signature`` are saved
under their attribute names (functions without one are skipped, with a warning: they cannot
be traced without example arguments). Only the object's own attributes are looked at, not
those of objects it holds.

``signatures`` (TensorFlow's serving signatures) name functions that take and return *named*
tensors: the inputs are named after the parameters (or their ``TensorSpec``'s name), the
outputs are ``output_0``, ``output_1``, ... unless the function returns a dict of tensors,
whose keys name them. When ``obj`` is a function, it is ``{"serving_default": obj}`` unless
given; for an object it is empty unless given. A signature's function that is not among the
functions saved is saved too (as ``signature_<name>``), for the signature alone.

The directory::

    export/
      saved_model.json          the format, the functions, the signatures, the GraphDef
      variables/variables.npz   each variable's value, keyed by its name in the GraphDef

and ``saved_model.json``, abridged::

    {"format": "eagerflow.SavedModel", "version": 1,
     "call": "serve",                       # what loaded(x) calls, if anything
     "functions": {"serve": {"library": "serve", "attribute": true, "parameters": ["x"],
                             "input_signature": [{"spec": {"shape": [null, 4],
                                                           "dtype": "float32", "name": null}}],
                             "outputs": {"output": 0}}},
     "signatures": {"serving_default": {"function": "serve",
                                        "inputs": [["x", {"shape": [null, 4], ...}]],
                                        "outputs": [["output_0", {"shape": [null, 1], ...}]]}},
     "variables": "variables/variables.npz",
     "graph_def": {"format": "eagerflow.GraphDef", "version": 1, "node": [],
                   "variables": {"dense/kernel:0": {"shape": [4, 8], "dtype": "float32", ...}},
                   "library": {"functions": {"serve": ...}, "graphs": {...}}}}

A structure (the arguments a signature describes, what a function returns) is written as
JSON: ``{"list": [...]}``, ``{"tuple": [...]}``, ``{"dict": [[key, value], ...]}``, ``null``
for ``None``, and the leaves ``{"spec": ...}`` or ``{"output": i}`` (the function's i-th
output tensor). A named tuple comes back as a plain tuple.

Safety. The directory is data: JSON, and ``.npz`` arrays read with
``np.load(..., allow_pickle=False)``, so loading never runs code from the files (an object
array is refused; Python functions in the graph, such as a ``custom_gradient``'s, do not
travel, see ``graph_def``). Everything read is checked, and a problem is an error naming the
file: ``FileNotFoundError`` for a missing directory, ``saved_model.json`` or variables file;
``SavedModelError`` (an ``InvalidArgumentError``, so a ``ValueError``) for a file that is not
JSON or cut short, another format or version, a malformed entry, a variable missing from the
values file or of the wrong shape or dtype; ``UnknownOpError`` for an op type that no
registered op has.

Writing is atomic: everything is written into a temporary directory next to ``export_dir``,
then renamed to it. An existing SavedModel at ``export_dir`` is replaced only once the new one
is complete (it is renamed aside, the new one renamed in, the old one deleted); a crash
leaves the old one or the new one, never half of either. A directory that is not a SavedModel
(nor empty) is never replaced: that is a ``FileExistsError``.

What ``load`` returns (a ``LoadedModel``): one ``LoadedFunction`` attribute per saved
function, called as the original (positionally or by parameter name; arrays and numbers are
converted, as an ``input_signature`` converts them), giving bit-identical results, since it
runs the very same graph with the very same values; ``signatures["serving_default"](x=...)``,
a dict of tensors; ``variables`` and ``trainable_variables``. The loaded functions are traces
over the loaded (eager) variables, so a ``GradientTape`` through them gives those variables'
gradients, and they train further like any variables.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import shutil
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.graph.export.graph_def import (
    GraphDef,
    check_graph_def,
    functions_as_graph_def,
    import_functions,
)
from eagerflow.graph.tracing.function import ConcreteFunction, Function
from eagerflow.graph.tracing.signatures import bind_to_signature, signature_parameters
from eagerflow.graph.tracing.tensor_spec import TensorSpec
from eagerflow.tensor import Tensor, dtypes
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import EagerflowError, FailedPreconditionError, InvalidArgumentError
from eagerflow.tensor.execution import context
from eagerflow.tensor.nest import flatten, pack_sequence_as

FORMAT = "eagerflow.SavedModel"
VERSION = 1
SAVED_MODEL_FILENAME = "saved_model.json"
VARIABLES_FILENAME = "variables/variables.npz"  # relative to the export directory
DEFAULT_SERVING_SIGNATURE = "serving_default"


class SavedModelError(InvalidArgumentError):
    """A SavedModel directory whose files are not what ``save`` writes: not JSON, cut short,
    another format or version, a malformed entry, or variable values that do not fit."""


# --- structures as JSON ----------------------------------------------------------------------
def _encode_structure(structure: Any, leaf: Callable[[Any], dict[str, Any]]) -> Any:
    """``structure`` as JSON data: lists, tuples and dicts spelled out, leaves by ``leaf``."""
    if structure is None:
        return None
    if isinstance(structure, dict):
        for key in structure:
            if not (key is None or isinstance(key, bool | int | str)):
                raise TypeError(f"a SavedModel stores dicts keyed by str or int, got key {key!r}")
        return {"dict": [[k, _encode_structure(v, leaf)] for k, v in structure.items()]}
    if isinstance(structure, tuple):
        return {"tuple": [_encode_structure(x, leaf) for x in structure]}
    if isinstance(structure, list):
        return {"list": [_encode_structure(x, leaf) for x in structure]}
    return leaf(structure)


def _decode_structure(data: Any, leaf: Callable[[str, Any], Any], where: str) -> Any:
    """The inverse of ``_encode_structure``; ``leaf(kind, payload)`` makes each leaf."""
    if data is None:
        return None
    if not isinstance(data, dict) or len(data) != 1:
        raise SavedModelError(
            f"{where}: a structure entry is one {{kind: payload}}, got {data!r:.80}"
        )
    ((kind, payload),) = data.items()
    if kind in ("list", "tuple", "dict") and not isinstance(payload, list):
        raise SavedModelError(f"{where}: {kind!r} holds a list, got {payload!r:.80}")
    if kind == "list":
        return [_decode_structure(x, leaf, where) for x in payload]
    if kind == "tuple":
        return tuple(_decode_structure(x, leaf, where) for x in payload)
    if kind == "dict":
        if not all(isinstance(p, list) and len(p) == 2 for p in payload):
            raise SavedModelError(f"{where}: a dict is a list of [key, value] pairs")
        return {k: _decode_structure(v, leaf, where) for k, v in payload}
    return leaf(kind, payload)


def _spec_entry(spec: TensorSpec) -> dict[str, Any]:
    shape = spec.static_shape
    return {
        "shape": None if shape is None else list(shape),
        "dtype": spec.dtype.name,
        "name": spec.name,
    }


def _spec_from(entry: Any, where: str) -> TensorSpec:
    if not isinstance(entry, dict) or not {"shape", "dtype"} <= set(entry):
        raise SavedModelError(f"{where}: a TensorSpec is {{shape, dtype, name}}, got {entry!r:.80}")
    try:
        return TensorSpec(entry["shape"], dtypes.as_dtype(entry["dtype"]), entry.get("name"))
    except (TypeError, ValueError, KeyError) as e:
        raise SavedModelError(f"{where}: bad TensorSpec {entry!r:.80}: {e}") from None


def _encode_outputs(structure: Any) -> Any:
    """What a function returns, each tensor as ``{"output": i}`` (its place in the trace's
    outputs, which are the flattened structure)."""
    counter = itertools.count()
    return _encode_structure(structure, lambda _: {"output": next(counter)})


def _tensor_entry(t: Tensor) -> dict[str, Any]:
    shape = t.shape
    return {"shape": None if shape is None else list(shape), "dtype": t.dtype.name}


# --- save ------------------------------------------------------------------------------------
def _require_signature(function: Function, name: str) -> None:
    if function.input_signature is None:
        raise TypeError(
            f"save(): function {name!r} has no input_signature. A SavedModel runs without the "
            "Python code, so each function is saved as one trace made from its signature: "
            "write @function(input_signature=[TensorSpec((None, 4), ef.float32)]) (one "
            "TensorSpec per argument; None for a size that may vary)"
        )


def _functions_of(obj: Any) -> tuple[dict[str, Function], str | None]:
    """The functions to save, by name, and the one that calling the loaded object calls."""
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
    found: dict[str, Function] = {}
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


def _input_names(function: Function, parameters: Sequence[str], signature: str) -> list[str]:
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
    signatures: Function | Mapping[str, Function] | None = None,
) -> None:
    """Save ``obj``'s functions, traced from their input signatures, and the values of the
    variables they read, as a SavedModel directory ``export_dir`` (see the module docs).

    ``obj`` is a ``function`` with an ``input_signature``, or an object whose attributes are
    such functions. ``signatures``: a function, or a dict of serving signature names to
    functions (default ``{"serving_default": obj}`` when ``obj`` is a function). The
    directory is written whole or not at all; an existing SavedModel there is replaced."""
    functions, call = _functions_of(obj)
    if signatures is None:
        signatures = {DEFAULT_SERVING_SIGNATURE: obj} if isinstance(obj, Function) else {}
    elif isinstance(signatures, Function):
        signatures = {DEFAULT_SERVING_SIGNATURE: signatures}
    if not isinstance(signatures, Mapping):
        raise TypeError(
            f"save(): signatures is a function or a dict of them, got {signatures!r:.60}"
        )
    attributes = set(functions)
    signature_functions: dict[str, str] = {}
    for key, function in signatures.items():
        if not isinstance(key, str) or not isinstance(function, Function):
            raise TypeError(
                f"save(): signatures maps names to functions with an input_signature, got "
                f"{key!r}: {function!r:.60}"
            )
        _require_signature(function, f"signatures[{key!r}]")
        name = next((n for n, f in functions.items() if f is function), None)
        if name is None:  # a function that is not an attribute: saved for the signature alone
            name = f"signature_{key}" if f"signature_{key}".isidentifier() else "signature"
            while name in functions:
                name += "_"
            functions[name] = function
        signature_functions[key] = name

    concretes = {name: f.get_concrete_function() for name, f in functions.items()}
    graph_def, library, variables = functions_as_graph_def(concretes)
    entries: dict[str, Any] = {}
    parameters: dict[str, list[str]] = {}
    for name, function in functions.items():
        concrete = concretes[name]
        assert function.input_signature is not None
        parameters[name] = signature_parameters(
            name, function.python_function, len(function.input_signature)
        )
        entries[name] = {
            "library": library[name],
            "attribute": name in attributes,
            "parameters": parameters[name],
            "input_signature": [
                _encode_structure(s, lambda leaf: {"spec": _spec_entry(leaf)})
                for s in function.input_signature
            ],
            "outputs": _encode_outputs(concrete.structure),
        }
    signature_entries = {}
    for key, name in signature_functions.items():
        function, concrete = functions[name], concretes[name]
        inputs = _input_names(function, parameters[name], key)
        specs = flatten(list(function.input_signature or ()))
        outputs = _output_names(concrete.structure, len(concrete.outputs))
        signature_entries[key] = {
            "function": name,
            "inputs": [[n, _spec_entry(s)] for n, s in zip(inputs, specs, strict=True)],
            "outputs": [
                [n, _tensor_entry(t)] for n, t in zip(outputs, concrete.outputs, strict=True)
            ],
        }
    arrays = {}
    for key, variable in variables.items():
        try:
            arrays[key] = np.asarray(variable.numpy())
        except FailedPreconditionError:
            raise FailedPreconditionError(
                f"save(): variable {variable.name!r} lives in a graph (its value is per "
                "Session): a SavedModel saves the eager variables its functions read"
            ) from None
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
    _write_directory(os.fspath(export_dir), text, arrays)


def _write_directory(export_dir: str, text: str, arrays: dict[str, np.ndarray]) -> None:
    """Write the two files into a temporary sibling of ``export_dir``, then rename it there."""
    target = os.path.abspath(export_dir)
    parent, base = os.path.split(target)
    os.makedirs(parent, exist_ok=True)
    if os.path.lexists(target):
        if not os.path.isdir(target) or os.path.islink(target):
            raise FileExistsError(f"save(): {export_dir!r} exists and is not a directory")
        if os.listdir(target) and not os.path.isfile(os.path.join(target, SAVED_MODEL_FILENAME)):
            raise FileExistsError(
                f"save(): {export_dir!r} is a directory that is not a SavedModel (it has no "
                f"{SAVED_MODEL_FILENAME}): refusing to replace it"
            )
    staging = _new_sibling(parent, f".{base}.tmp-")
    try:
        with open(os.path.join(staging, SAVED_MODEL_FILENAME), "w", encoding="utf-8") as f:
            f.write(text)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        values = os.path.join(staging, VARIABLES_FILENAME)
        os.makedirs(os.path.dirname(values))
        with open(values, "wb") as b:
            np.savez(b, **cast(dict[str, Any], arrays))  # numeric arrays: never pickled
            b.flush()
            os.fsync(b.fileno())
        _rename_into_place(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _fsync_directory(parent)


def _new_sibling(parent: str, prefix: str) -> str:
    """A new empty directory ``parent/prefix<random>``, made with ``os.mkdir`` so that it gets
    the umask's permissions, as ``export_dir`` would (``tempfile.mkdtemp`` makes it 0700)."""
    while True:
        path = os.path.join(parent, prefix + secrets.token_hex(6))
        try:
            os.mkdir(path)
        except FileExistsError:  # (48 random bits: not in practice)
            continue
        return path


def _rename_into_place(staging: str, target: str) -> None:
    """``staging`` renamed to ``target``; an existing ``target`` is set aside first (a rename
    cannot replace a non-empty directory) and deleted once the new one is in place."""
    if not os.path.lexists(target):
        os.rename(staging, target)
        return
    parent, base = os.path.split(target)
    aside = _new_sibling(parent, f".{base}.old-")
    old = os.path.join(aside, base)
    os.rename(target, old)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(old, target)  # put the old one back
        shutil.rmtree(aside, ignore_errors=True)
        raise
    shutil.rmtree(aside, ignore_errors=True)


def _fsync_directory(path: str) -> None:
    """Make the renames durable (where the OS lets a directory be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# --- the loaded model ------------------------------------------------------------------------
class LoadedFunction:
    """A saved function, loaded: called like the original (its input_signature's arguments,
    by position or name), it runs the saved trace over the loaded variables."""

    def __init__(
        self,
        name: str,
        concrete: ConcreteFunction,
        parameters: list[str],
        input_signature: tuple[Any, ...],
    ) -> None:
        self.__name__ = name
        self.concrete_function = concrete
        self.parameters = parameters
        self.input_signature = input_signature

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        bound = bind_to_signature(self.__name__, self.parameters, self.input_signature, args,
                                  kwargs)  # fmt: skip
        return self.concrete_function(*flatten(bound))

    def get_concrete_function(self) -> ConcreteFunction:
        """The loaded trace itself (``.graph`` to inspect it)."""
        return self.concrete_function

    def __repr__(self) -> str:
        return f"<LoadedFunction {self.__name__}{self.input_signature}>"


class LoadedSignature:
    """A serving signature, loaded: ``signature(x=...)`` takes named tensors (keywords only)
    and returns a dict of named tensors (``{"output_0": ...}``)."""

    def __init__(
        self, name: str, function: LoadedFunction, inputs: list[str], outputs: list[str]
    ) -> None:
        self.name = name
        self.function = function
        self.inputs = inputs
        self.outputs = outputs

    def __call__(self, *args: Any, **named: Any) -> dict[str, Any]:
        if args:
            raise TypeError(
                f"signature {self.name!r} takes named tensors only: "
                + ", ".join(f"{n}=..." for n in self.inputs)
            )
        if set(named) != set(self.inputs):
            missing = [n for n in self.inputs if n not in named]
            extra = [n for n in named if n not in self.inputs]
            raise TypeError(
                f"signature {self.name!r} takes the inputs {self.inputs}"
                + (f"; missing {missing}" if missing else "")
                + (f"; unknown {extra}" if extra else "")
            )
        flat = [named[n] for n in self.inputs]
        args = pack_sequence_as(list(self.function.input_signature), flat)
        result = self.function(*args)
        return dict(zip(self.outputs, [] if result is None else flatten(result), strict=True))

    def __repr__(self) -> str:
        return f"<LoadedSignature {self.name}({', '.join(self.inputs)}) -> {self.outputs}>"


class LoadedModel:
    """What ``load`` returns: the saved functions as attributes (``loaded.serve(x)``), the
    serving ``signatures``, and the loaded ``variables``."""

    def __init__(
        self,
        functions: dict[str, LoadedFunction],
        call: str | None,
        signatures: dict[str, LoadedSignature],
        variables: list[Variable],
    ) -> None:
        self.functions = functions
        self.signatures = signatures
        self.variables = variables
        self._call = call

    @property
    def trainable_variables(self) -> list[Variable]:
        return [v for v in self.variables if v.trainable]

    def __getattr__(self, name: str) -> LoadedFunction:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(
            f"the loaded SavedModel has no function {name!r} (it has: "
            f"{', '.join(functions) or 'none'})"
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._call is None:
            raise TypeError(
                "the loaded SavedModel is not callable (the object saved was not a function and "
                f"had no __call__ function); call one of {', '.join(self.functions)}"
            )
        return self.functions[self._call](*args, **kwargs)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self.functions})

    def __repr__(self) -> str:
        return f"<LoadedModel functions={list(self.functions)} signatures={list(self.signatures)}>"


# --- load ------------------------------------------------------------------------------------
def _read_json(path: str) -> Any:
    def refuse_constant(word: str) -> Any:  # NaN / Infinity are not JSON; ours never has them
        raise ValueError(f"{word} is not JSON")

    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f, parse_constant=refuse_constant)
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as e:
        raise SavedModelError(f"{path}: not JSON (truncated, or not a SavedModel): {e}") from None


def _read_values(path: str) -> dict[str, np.ndarray]:
    """Every array of the variables file, read without pickle."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: the SavedModel's variables file is missing")
    values = {}
    try:
        with np.load(path, allow_pickle=False) as npz:
            for key in npz.files:
                try:
                    values[key] = npz[key]
                except ValueError as e:  # an object array: its bytes are a pickle
                    raise SavedModelError(f"{path}: variable {key!r} cannot be read: {e}") from None
    except SavedModelError:
        raise
    except Exception as e:  # not a zip of .npy files: BadZipFile, a bad header, ...
        raise SavedModelError(
            f"{path}: not a variables .npz file: {type(e).__name__}: {e}"
        ) from None
    return values


def _check_document(document: Any, path: str) -> dict[str, Any]:
    if not isinstance(document, dict):
        raise SavedModelError(f"{path}: a SavedModel is a JSON object")
    found = document.get("format")
    if found != FORMAT:
        raise SavedModelError(f"{path}: expected format {FORMAT!r}, got {found!r}")
    version = document.get("version")
    if version != VERSION:
        newer = isinstance(version, int) and version > VERSION
        raise SavedModelError(
            f"{path}: expected {FORMAT} version {VERSION}, got version {version!r}"
            + (" (written by a newer eagerflow?)" if newer else "")
        )
    for key, kind in (("functions", dict), ("signatures", dict), ("graph_def", dict),
                      ("variables", str)):  # fmt: skip
        if not isinstance(document.get(key), kind):
            raise SavedModelError(f"{path}: {key!r} must be a {kind.__name__}")
    try:
        check_graph_def(document["graph_def"], f"{path} (graph_def)")
    except (TypeError, InvalidArgumentError) as e:
        raise SavedModelError(str(e)) from None
    return document


def load(export_dir: str | os.PathLike[str]) -> LoadedModel:
    """The SavedModel in ``export_dir`` (as ``save`` wrote it), loaded: its functions over new
    eager variables holding the saved values (see the module docs for what is checked)."""
    directory = os.fspath(export_dir)
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"load(): no SavedModel directory at {directory!r}")
    path = os.path.join(directory, SAVED_MODEL_FILENAME)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"load(): {directory!r} is not a SavedModel: it has no {SAVED_MODEL_FILENAME}"
        )
    document = _check_document(_read_json(path), path)
    relative = document["variables"]
    if os.path.isabs(relative) or ".." in relative.replace("\\", "/").split("/"):
        raise SavedModelError(f"{path}: 'variables' must be a path inside the directory")
    values_path = os.path.join(directory, relative)
    values = _read_values(values_path)
    graph_def: GraphDef = document["graph_def"]
    made: dict[str, Variable] = {}  # by key in the def

    _check_values(graph_def, values, path, values_path)

    def new_variable(
        key: str, name: str, shape: tuple[int, ...], dtype: DType, trainable: bool
    ) -> Variable:
        value = values[key]  # (checked: the def's shape and dtype)
        with context(None):  # an eager variable, whatever graph is being built around load
            made[key] = Variable(value, trainable=trainable, name=name, dtype=dtype)
        return made[key]

    functions, call, signatures = _parse_functions(document, path)
    try:
        concretes = import_functions(graph_def, [f[0] for f in functions.values()], new_variable)
    except SavedModelError:
        raise
    except InvalidArgumentError as e:  # a malformed def: a node, an input, an attribute...
        raise SavedModelError(f"{path}: {e}") from None
    except EagerflowError as e:  # UnknownOpError, and an op's rules refusing what it got
        raise type(e)(f"{path}: {e}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise SavedModelError(f"{path}: a malformed graph_def: {type(e).__name__}: {e}") from None
    loaded: dict[str, LoadedFunction] = {}
    attributes: dict[str, LoadedFunction] = {}
    for (name, (_, parameters, signature, outputs, attribute)), concrete in zip(
        functions.items(), concretes, strict=True
    ):
        concrete.structure = _output_structure(outputs, concrete, f"{path}: function {name!r}")
        function = LoadedFunction(name, concrete, parameters, signature)
        _check_inputs(function, f"{path}: function {name!r}")
        loaded[name] = function
        if attribute:
            attributes[name] = function
    loaded_signatures = {}
    for key, (name, inputs, outputs) in signatures.items():
        if name not in loaded:
            raise SavedModelError(f"{path}: signature {key!r} names no saved function {name!r}")
        function = loaded[name]
        concrete = function.concrete_function
        if len(inputs) != len(concrete.arguments) or len(outputs) != len(concrete.outputs):
            raise SavedModelError(f"{path}: signature {key!r} does not fit function {name!r}")
        loaded_signatures[key] = LoadedSignature(key, function, inputs, outputs)
    if call is not None and call not in attributes:
        raise SavedModelError(f"{path}: 'call' names no saved function {call!r}")
    variables = [made[k] for k in graph_def["variables"] if k in made]  # the def's order
    return LoadedModel(attributes, call, loaded_signatures, variables)


def _check_values(
    graph_def: GraphDef, values: dict[str, np.ndarray], path: str, values_path: str
) -> None:
    """Each variable of the def has a value of its shape and dtype in the variables file."""
    for key, entry in graph_def["variables"].items():
        try:
            dtype = dtypes.as_dtype(entry["dtype"])
            shape = tuple(entry["shape"])
        except (KeyError, TypeError, ValueError) as e:
            raise SavedModelError(
                f"{path}: variable {key!r} needs a shape and a dtype ({type(e).__name__}: {e})"
            ) from None
        value = values.get(key)
        if value is None:
            raise SavedModelError(f"{values_path}: has no value for variable {key!r}")
        if value.dtype != dtype.np or value.shape != shape:
            raise SavedModelError(
                f"{values_path}: variable {key!r} is {dtype.name}{list(shape)} in "
                f"{SAVED_MODEL_FILENAME}, but its value is {value.dtype}{list(value.shape)}"
            )


_Parsed = tuple[str, list[str], tuple[Any, ...], Any, bool]


def _parse_functions(
    document: dict[str, Any], path: str
) -> tuple[dict[str, _Parsed], str | None, dict[str, tuple[str, list[str], list[str]]]]:
    """The ``functions``, ``call`` and ``signatures`` entries, checked."""
    functions: dict[str, _Parsed] = {}
    for name, entry in document["functions"].items():
        where = f"{path}: function {name!r}"
        if not isinstance(entry, dict) or not isinstance(entry.get("library"), str):
            raise SavedModelError(f"{where}: an entry has a 'library' name")
        parameters = entry.get("parameters")
        signature = entry.get("input_signature")
        if not (
            isinstance(parameters, list)
            and all(isinstance(p, str) for p in parameters)
            and isinstance(signature, list)
            and len(signature) == len(parameters)
        ):
            raise SavedModelError(f"{where}: needs 'parameters' and an 'input_signature' of one "
                                  "entry each")  # fmt: skip

        def spec_leaf(kind: str, payload: Any, where: str = where) -> TensorSpec:
            if kind != "spec":
                raise SavedModelError(f"{where}: an input_signature leaf is a 'spec', got {kind!r}")
            return _spec_from(payload, where)

        specs = tuple(_decode_structure(s, spec_leaf, where) for s in signature)
        functions[name] = (entry["library"], parameters, specs, entry.get("outputs"),
                           bool(entry.get("attribute", True)))  # fmt: skip
    call = document.get("call")
    if call is not None and not isinstance(call, str):
        raise SavedModelError(f"{path}: 'call' is a function's name or null")
    signatures = {}
    for key, entry in document["signatures"].items():
        where = f"{path}: signature {key!r}"
        try:
            name = entry["function"]
            inputs = [str(n) for n, _ in entry["inputs"]]
            outputs = [str(n) for n, _ in entry["outputs"]]
        except (KeyError, TypeError, ValueError) as e:
            raise SavedModelError(f"{where}: needs 'function', 'inputs', 'outputs' ({e})") from None
        signatures[key] = (name, inputs, outputs)
    return functions, call, signatures


def _output_structure(data: Any, concrete: ConcreteFunction, where: str) -> Any:
    """What the function returns, its leaves the trace's output tensors (what
    ``ConcreteFunction`` packs its results into)."""
    outputs = concrete.outputs

    def output_leaf(kind: str, payload: Any) -> int:
        if kind != "output" or type(payload) is not int:
            raise SavedModelError(f"{where}: an output leaf is {{'output': index}}, got {kind!r}")
        return payload

    structure = _decode_structure(data, output_leaf, where)
    indices = flatten(structure) if structure is not None else []
    if indices != list(range(len(outputs))):
        raise SavedModelError(
            f"{where}: its outputs structure names outputs {indices}, the trace has {len(outputs)}"
        )
    if structure is None:
        return None
    if isinstance(structure, int):  # one tensor returned
        return outputs[0]
    return pack_sequence_as(structure, outputs)


def _check_inputs(function: LoadedFunction, where: str) -> None:
    """The input_signature must describe the trace's inputs, one spec each, of its dtypes."""
    specs = flatten(list(function.input_signature))
    arguments = function.concrete_function.arguments
    if len(specs) != len(arguments) or any(
        s.dtype is not a.dtype for s, a in zip(specs, arguments, strict=False)
    ):
        raise SavedModelError(f"{where}: its input_signature does not describe its trace's inputs")


__all__ = [
    "DEFAULT_SERVING_SIGNATURE",
    "FORMAT",
    "SAVED_MODEL_FILENAME",
    "VARIABLES_FILENAME",
    "VERSION",
    "LoadedFunction",
    "LoadedModel",
    "LoadedSignature",
    "SavedModelError",
    "load",
    "save",
]
