"""``load``: a SavedModel directory read back, checked entry by entry, as a ``LoadedModel``
whose functions and signatures run without the Python code that made them."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.graph.core.files import readable_path
from eagerflow.graph.export.graph_def import (
    GraphDef,
    NewVariable,
    check_graph_def,
)
from eagerflow.graph.export.graph_def_check import check_variables
from eagerflow.graph.export.graph_def_import import import_functions
from eagerflow.graph.export.limits import read_json, read_npz
from eagerflow.graph.export.saved_model.format import (
    FORMAT,
    SAVED_MODEL_FILENAME,
    VERSION,
    SavedModelError,
    decode_structure,
    spec_from,
)
from eagerflow.graph.tracing.function import ConcreteFunction
from eagerflow.graph.tracing.signatures import bind_to_signature
from eagerflow.graph.tracing.tensor_spec import TensorSpec
from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import EagerflowError, InvalidArgumentError, InvalidAttrError
from eagerflow.tensor.execution import context
from eagerflow.tensor.nest import flatten, pack_sequence_as


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
    def call_name(self) -> str | None:
        """The function that calling the model calls (None: it is not callable)."""
        return self._call

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
    try:
        return read_json(path)
    except InvalidAttrError as e:  # past a limit
        raise SavedModelError(str(e), e.attr) from None
    except ValueError as e:  # not JSON, not UTF-8, NaN or Infinity
        raise SavedModelError(f"{path}: not JSON (truncated, or not a SavedModel): {e}") from None


def _read_values(path: str) -> dict[str, np.ndarray]:
    """Every array of the variables file, read without pickle, once its members' names and
    headers passed the limits (``read_npz``)."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: the SavedModel's variables file is missing")
    try:
        return read_npz(path)
    except InvalidAttrError as e:  # not an archive of .npy files, or a member refused
        raise SavedModelError(str(e), e.attr) from None
    except OSError as e:  # there, but unreadable
        raise SavedModelError(f"{path}: cannot read the variables file: {e}") from None


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
    directory = readable_path(export_dir)  # (the old model, if a save crashed midway)
    path = _document_path(directory)
    document = _check_document(_read_json(path), path)
    check_variables(document["graph_def"], path)  # their shapes within the limit, unread
    values_path = _values_path(directory, document["variables"], path)
    values = _read_values(values_path)
    graph_def: GraphDef = document["graph_def"]
    _check_values(graph_def, values, path, values_path)
    made: dict[str, Variable] = {}  # by key in the def

    def new_variable(
        key: str, name: str, shape: tuple[int, ...], dtype: DType, trainable: bool
    ) -> Variable:
        value = values[key]  # (checked: the def's shape and dtype)
        with context(None):  # an eager variable, whatever graph is being built around load
            made[key] = Variable(value, trainable=trainable, name=name, dtype=dtype)
        return made[key]

    functions, call, signatures = _parse_functions(document, path)
    concretes = _import(graph_def, [f[0] for f in functions.values()], new_variable, path)
    loaded = _loaded_functions(functions, concretes, path)
    attributes = {name: loaded[name] for name, parsed in functions.items() if parsed[4]}
    if call is not None and call not in attributes:
        raise SavedModelError(f"{path}: 'call' names no saved function {call!r}")
    variables = [made[k] for k in graph_def["variables"] if k in made]  # the def's order
    return LoadedModel(attributes, call, _loaded_signatures(signatures, loaded, path), variables)


def _document_path(directory: str) -> str:
    """The path of the SavedModel document in ``directory``, which must have one."""
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"load(): no SavedModel directory at {directory!r}")
    path = os.path.join(directory, SAVED_MODEL_FILENAME)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"load(): {directory!r} is not a SavedModel: it has no {SAVED_MODEL_FILENAME}"
        )
    return _inside(directory, path, path, "saved_model.json")


def _values_path(directory: str, relative: str, path: str) -> str:
    """The variables file the document names: a path inside the directory, never outside
    (no ``..``, not absolute, and no symlink leading out of it)."""
    if os.path.isabs(relative) or ".." in relative.replace("\\", "/").split("/"):
        raise SavedModelError(f"{path}: 'variables' must be a path inside the directory, got "
                              f"{relative!r}", "variables")  # fmt: skip
    return _inside(directory, os.path.join(directory, relative), path, "variables")


def _inside(directory: str, file: str, path: str, attr: str) -> str:
    """``file``, if it really is inside ``directory`` once symlinks are followed."""
    real, root = os.path.realpath(file), os.path.realpath(directory)
    if os.path.commonpath([real, root]) != root:
        raise SavedModelError(f"{path}: {attr}: {file!r} is a symlink (or under one) leading "
                              f"out of the SavedModel directory, to {real!r}", attr)  # fmt: skip
    return file


def _import(
    graph_def: GraphDef,
    names: list[str],
    new_variable: NewVariable,
    path: str,
) -> list[ConcreteFunction]:
    """The library's functions ``names`` imported; an error says which file it is about."""
    try:
        return import_functions(graph_def, names, new_variable)
    except SavedModelError:
        raise
    except InvalidAttrError as e:  # an attribute or a variable its schema refuses
        raise InvalidAttrError(f"{path}: {e}", e.attr) from None
    except InvalidArgumentError as e:  # a malformed def: a node, an input, an attribute...
        raise SavedModelError(f"{path}: {e}") from None
    except EagerflowError as e:  # UnknownOpError, and an op's rules refusing what it got
        raise type(e)(f"{path}: {e}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise SavedModelError(f"{path}: a malformed graph_def: {type(e).__name__}: {e}") from None


def _loaded_functions(
    functions: dict[str, _Parsed], concretes: list[ConcreteFunction], path: str
) -> dict[str, LoadedFunction]:
    """Each imported function with its parameters, input signature and output structure."""
    loaded: dict[str, LoadedFunction] = {}
    for (name, (_, parameters, signature, outputs, _)), concrete in zip(
        functions.items(), concretes, strict=True
    ):
        concrete.structure = _output_structure(outputs, concrete, f"{path}: function {name!r}")
        function = LoadedFunction(name, concrete, parameters, signature)
        _check_inputs(function, f"{path}: function {name!r}")
        loaded[name] = function
    return loaded


def _all_strings(*values: object) -> bool:
    return all(isinstance(value, str) for value in values)


def _loaded_signatures(
    signatures: dict[str, tuple[str, list[str], list[str]]],
    loaded: dict[str, LoadedFunction],
    path: str,
) -> dict[str, LoadedSignature]:
    """Each serving signature over its loaded function, which it must fit."""
    loaded_signatures = {}
    for key, (name, inputs, outputs) in signatures.items():
        lists = isinstance(inputs, list) and isinstance(outputs, list)
        if not (isinstance(name, str) and lists and _all_strings(*inputs, *outputs)):
            raise SavedModelError(
                f"{path}: signature {key!r} must name a function and its inputs and outputs "
                "by strings"
            )
        if name not in loaded:
            raise SavedModelError(f"{path}: signature {key!r} names no saved function {name!r}")
        function = loaded[name]
        concrete = function.concrete_function
        if len(inputs) != len(concrete.arguments) or len(outputs) != len(concrete.outputs):
            raise SavedModelError(f"{path}: signature {key!r} does not fit function {name!r}")
        loaded_signatures[key] = LoadedSignature(key, function, inputs, outputs)
    return loaded_signatures


def _check_values(
    graph_def: GraphDef, values: dict[str, np.ndarray], path: str, values_path: str
) -> None:
    """Each variable of the def has a value of its shape and dtype in the variables file."""
    for key, entry in graph_def.get("variables", {}).items():
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
            return spec_from(payload, where)

        specs = tuple(decode_structure(s, spec_leaf, where) for s in signature)
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

    structure = decode_structure(data, output_leaf, where)
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
        not isinstance(s, TensorSpec) or s.dtype is not a.dtype
        for s, a in zip(specs, arguments, strict=False)
    ):
        raise SavedModelError(f"{where}: its input_signature does not describe its trace's inputs")


__all__ = ["LoadedFunction", "LoadedModel", "LoadedSignature", "load"]
