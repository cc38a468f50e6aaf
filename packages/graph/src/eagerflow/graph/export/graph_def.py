"""Graphs as data: ``Graph.as_graph_def()``, ``import_graph_def``, ``write_graph``,
``read_graph_def``.

A GraphDef is a plain dict that ``json.dumps`` can write, shaped like TensorFlow's
``GraphDef`` protocol buffer::

    {"format": "eagerflow.GraphDef", "version": 1,
     "node": [{"name": "mul", "op": "Mul", "input": ["x:0", "mul/y:0"]}, ...],
     "variables": {"v:0": {"name": "v:0", "shape": [2], "dtype": "float32",
                           "trainable": true, "node": "v", "initializer": "v/Assign"}},
     "library": {"functions": {...}, "graphs": {...}}}

A node has a ``name``, an ``op`` type (a row of the op registry), its ``input`` tensors as
``"name:index"`` strings followed by its control inputs as ``"^name"`` (TensorFlow's
spelling), and its ``attr`` values, written by a small typed encoder (``encode_attr``):

- JSON's own values stand for themselves: ``null``, booleans, integers, strings, finite
  floats (Python writes a float with every digit it needs, so it reads back exactly; ``-0.0``
  included). A JSON *array* is a Python **tuple** (shapes, perms, slicing keys: a shape reads
  ``[2, null]``); every other value is an object with one key naming its type:
- ``{"dtype": "float32"}``; ``{"float": "nan"}`` (also ``"inf"``, ``"-inf"``: JSON has
  none of them); ``{"list": [...]}``; ``{"dict": [[key, value], ...]}``;
  ``{"slice": [start, stop, step]}``; ``{"ellipsis": null}``;
- ``{"tensor": {"dtype": "float32", "shape": [2, 3], "base64": "..."}}``: a NumPy array as
  its raw little-endian bytes, so every bit comes back (NaN payloads, ``-0.0``, int64
  extremes); ``{"scalar": {...}}`` is the same for a NumPy scalar;
- ``{"function": "while/body"}``: a subgraph (the branches of ``If``, ``cond``/``body`` of
  ``While``, the ``function`` of ``PartitionedCall``), by its name in the library;
- ``{"variable": "v:0"}``: a variable, by its key in ``variables``;
- ``{"tensor_slot": null}``: where ``ef.print`` puts a tensor's value in its template;
- ``{"python_function": "name"}``: a Python function (``custom_gradient``'s ``grad_fn``). Its
  code does not travel (loading a GraphDef never runs code of the file): what comes back
  raises an error naming it when called.

Nothing else is accepted: an attribute of another type is a ``TypeError`` when exporting,
naming the op and the attribute. There is no pickle anywhere, so loading a GraphDef cannot
execute code.

**The library.** A subgraph is a ``FunctionGraph`` to run plus which of its tensors are fed,
fetched and run for effect. Several subgraphs may share one graph (the gradient of a
``cond`` branch is built in the branch's own graph, so are the two loops of a ``While``
gradient), so the library has two tables: ``graphs`` (nodes, the capture map, arguments,
results, effects, handles of read variables) and ``functions`` (a ``graph`` name and the
``inputs``, ``outputs``, ``side_effects`` of one subgraph; a ``ConcreteFunction`` also keeps
its ``variables`` and ``kept`` outputs). Names are generated from the first node that uses
them (``"while/body"``). A graph's ``outer`` is ``""`` for the graph the def describes, a
library name, or ``null`` for a graph outside the def (a function traced eagerly).

**Variables** are recorded by name, shape, dtype and trainable, with their ``VariableV2``
node and initializer op; their *values* are not part of a GraphDef (as in TensorFlow they
travel in checkpoints). ``import_graph_def`` makes a new, uninitialized variable for each
(see there).

**Functions alone.** ``functions_as_graph_def({"serve": concrete})`` writes traced functions
as a def with no nodes of its own, everything in the library (and returns the variables they
read, by key); ``import_functions`` rebuilds them, making each variable with a function the
caller gives. ``saved_model.py`` uses the pair to save functions with their variables'
values, which it keeps beside the def.
"""

from __future__ import annotations

import base64
import json
import math
import os
import types
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.graph.core.files import atomic_write
from eagerflow.graph.core.graph import Graph, Operation
from eagerflow.graph.core.names import first_unused
from eagerflow.graph.core.seams import SEAMS
from eagerflow.graph.core.subgraphs import FunctionGraph, Subgraph
from eagerflow.graph.export.limits import MAX_DEPTH, depth, read_json, refuse
from eagerflow.graph.tracing.function import ConcreteFunction, TraceGraph
from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import InvalidArgumentError, InvalidAttrError
from eagerflow.tensor.logging_ops import TENSOR_SLOT

FORMAT = "eagerflow.GraphDef"
VERSION = 1
GraphDef = dict[str, Any]
# makes an imported variable: (key in the def, node name, shape, dtype, trainable)
NewVariable = Callable[[str, str, tuple[int, ...], DType, bool], Variable]

# Array dtypes a GraphDef stores, by NumPy's name (eagerflow's dtypes have the same names);
# "object" and friends are refused: their bytes are pointers, and the way around that is pickle.
_ARRAY_KINDS = "biuf"


# --- attribute values ------------------------------------------------------------------------
def _array_entry(array: np.ndarray) -> dict[str, Any]:
    if array.dtype.kind not in _ARRAY_KINDS:
        raise TypeError(f"a GraphDef stores numeric and bool arrays, not dtype {array.dtype}")
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)  # one byte order on disk
    return {
        "dtype": array.dtype.name,
        "shape": list(array.shape),
        "base64": base64.b64encode(np.ascontiguousarray(little).tobytes()).decode("ascii"),
    }


def _array_from(entry: Any) -> np.ndarray:
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "base64"}:
        raise InvalidArgumentError(f"a tensor is {{dtype, shape, base64}}, got {entry!r:.80}")
    try:
        dtype = np.dtype(entry["dtype"])
    except TypeError:
        raise InvalidArgumentError(f"unknown tensor dtype {entry['dtype']!r}") from None
    if dtype.kind not in _ARRAY_KINDS:
        raise InvalidArgumentError(f"a GraphDef tensor cannot have dtype {dtype}")
    shape = tuple(entry["shape"])
    if not all(isinstance(d, int) and d >= 0 for d in shape):
        raise InvalidArgumentError(f"bad tensor shape {entry['shape']!r}")
    raw = base64.b64decode(entry["base64"], validate=True)
    if len(raw) != math.prod(shape) * dtype.itemsize:
        raise InvalidArgumentError(
            f"a {dtype} tensor of shape {list(shape)} needs {math.prod(shape) * dtype.itemsize} "
            f"bytes, the GraphDef has {len(raw)}"
        )
    little = np.frombuffer(raw, dtype.newbyteorder("<")).reshape(shape)
    return little.astype(dtype)  # native byte order, and a writable copy


class MissingPythonFunction:
    """What an imported GraphDef has in place of a Python function attribute (such as the
    ``grad_fn`` of ``custom_gradient``): Python code does not travel in a GraphDef, so calling
    it is an error that names the function."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"the Python function {self.name!r} was not saved in the GraphDef (code does not "
            "travel in a GraphDef): build the graph from Python to use it"
        )

    def __repr__(self) -> str:
        return f"<MissingPythonFunction {self.name}>"


def encode_attr(
    value: Any,
    function: Callable[[Subgraph], str] | None = None,
    variable: Callable[[Variable], str] | None = None,
) -> Any:
    """``value`` as JSON data (see the module docs); ``function`` and ``variable`` name a
    subgraph or a variable (the exporter's library); without them those are refused."""

    def enc(v: Any) -> Any:
        # bool before int (a bool is an int); an int subclass (IntEnum...) is not JSON's int
        if v is None or isinstance(v, bool | str) or type(v) is int:
            return v
        if isinstance(v, tuple):
            return [enc(x) for x in v]
        if isinstance(v, list):
            return {"list": [enc(x) for x in v]}
        if isinstance(v, dict):
            return {"dict": [[enc(k), enc(x)] for k, x in v.items()]}
        if isinstance(v, slice):
            return {"slice": [enc(v.start), enc(v.stop), enc(v.step)]}
        return _encode_leaf(v, function, variable)

    return enc(value)


def _encode_leaf(
    v: Any,
    function: Callable[[Subgraph], str] | None,
    variable: Callable[[Variable], str] | None,
) -> Any:
    """A value that holds no other values, as JSON data: a number JSON cannot hold as it is,
    a dtype, an array, a marker, or a reference (see ``_encode_reference``)."""
    # NumPy scalars before floats (np.float64 is one)
    if isinstance(v, np.generic):
        return {"scalar": _array_entry(np.asarray(v))}
    if isinstance(v, float):
        return v if math.isfinite(v) else {"float": repr(v)}  # "nan", "inf", "-inf"
    if isinstance(v, int):  # an int subclass (IntEnum...): as the plain int
        return int(v)
    if isinstance(v, DType):
        return {"dtype": v.name}
    if isinstance(v, np.ndarray):
        return {"tensor": _array_entry(v)}
    if v is Ellipsis:
        return {"ellipsis": None}
    if v is TENSOR_SLOT:
        return {"tensor_slot": None}
    return _encode_reference(v, function, variable)


def _encode_reference(
    v: Any,
    function: Callable[[Subgraph], str] | None,
    variable: Callable[[Variable], str] | None,
) -> Any:
    """A subgraph or a variable, by its name in the library; a Python function, by its
    qualified name (a reader without it gets a ``MissingPythonFunction``)."""
    if isinstance(v, Subgraph) and function is not None:
        return {"function": function(v)}
    if isinstance(v, Variable) and variable is not None:
        return {"variable": variable(v)}
    if isinstance(v, MissingPythonFunction):
        return {"python_function": v.name}
    if isinstance(v, types.FunctionType) or (callable(v) and hasattr(v, "__qualname__")):
        return {"python_function": getattr(v, "__qualname__", repr(v))}
    raise TypeError(f"a GraphDef cannot store {type(v).__name__} {v!r:.60}")


# How ``decode_attr`` makes the value of each {kind: payload} that holds no other values.
_DECODE_LEAF: dict[str, Callable[[Any], Any]] = {
    "dtype": dtypes.as_dtype,
    "tensor": lambda payload: _array_from(payload),
    "scalar": lambda payload: _array_from(payload)[()],
    "ellipsis": lambda payload: Ellipsis,
    "tensor_slot": lambda payload: TENSOR_SLOT,
}


def decode_attr(
    data: Any,
    function: Callable[[str], Any] | None = None,
    variable: Callable[[str], Any] | None = None,
) -> Any:
    """The inverse of ``encode_attr``: JSON data back to the attribute's Python value.
    ``function`` and ``variable`` give what a name in the library stands for (a
    ``Subgraph``, a ``Variable``; the first pass of an import, a stand-in)."""

    def dec(d: Any) -> Any:
        if d is None or isinstance(d, bool | str | int | float):
            return d
        if isinstance(d, list):
            return tuple(dec(x) for x in d)
        if not isinstance(d, dict) or len(d) != 1:
            raise InvalidArgumentError(
                f"an attribute value is one {{type: payload}}, got {d!r:.80}"
            )
        ((kind, payload),) = d.items()
        if kind in _DECODE_LEAF:
            return _DECODE_LEAF[kind](payload)
        if kind == "list" and isinstance(payload, list):
            return [dec(x) for x in payload]
        if kind == "dict" and isinstance(payload, list):
            return {dec(k): dec(x) for k, x in payload}
        if kind == "slice" and isinstance(payload, list) and len(payload) == 3:
            return slice(*(dec(x) for x in payload))
        return _decode_other(kind, payload, function, variable)

    return dec(data)


def _decode_other(
    kind: str,
    payload: Any,
    function: Callable[[str], Any] | None,
    variable: Callable[[str], Any] | None,
) -> Any:
    """A float JSON cannot hold, or a reference: a Python function's name (only the name
    can be read back), a subgraph or a variable by its name in the library."""
    if kind == "float" and payload in ("nan", "inf", "-inf"):
        return float(payload)
    if kind == "python_function" and isinstance(payload, str):
        return MissingPythonFunction(payload)
    if kind == "function" and function is not None:
        return function(payload)
    if kind == "variable" and variable is not None:
        return variable(payload)
    raise InvalidArgumentError(f"unknown attribute value { ({kind: payload})!r:.80}")


# --- export ----------------------------------------------------------------------------------
class _Exporter:
    """Walks a graph, and every subgraph its nodes use, into one GraphDef."""

    def __init__(self, graph: Graph) -> None:
        self.root = graph
        self.functions: dict[str, dict[str, Any]] = {}
        self.graphs: dict[str, dict[str, Any]] = {}
        self.variables: dict[str, dict[str, Any]] = {}
        # objects to names (keyed by the objects themselves: all hash by identity)
        self.function_names: dict[Subgraph, str] = {}
        self.graph_names: dict[Graph, str] = {graph: ""}
        self.variable_keys: dict[int, str] = {}  # by id: a Variable's == is elementwise
        self.variable_objects: dict[str, Variable] = {}  # the other way round
        self.variable_nodes = {
            id(o.attrs["variable"]): o for o in graph.get_operations() if o.op_def.defines_variable
        }
        self.hint = "graph"  # the node whose attribute is being written: names new entries

    def graph_def(self) -> GraphDef:
        nodes = self.nodes(self.root)
        return {
            "format": FORMAT,
            "version": VERSION,
            "node": nodes,
            "variables": self.variables,
            "library": {"functions": self.functions, "graphs": self.graphs},
        }

    def nodes(self, graph: Graph) -> list[dict[str, Any]]:
        return [self.node(o) for o in graph.get_operations()]

    def node(self, operation: Operation) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": operation.name, "op": operation.type}
        inputs = [t.name for t in operation.inputs]
        inputs += [f"^{c.name}" for c in operation.control_inputs]
        if inputs:
            entry["input"] = inputs
        if operation.device:
            entry["device"] = operation.device
        attrs = {}
        for key, value in sorted(operation.attrs.items()):
            self.hint = f"{operation.name}/{key}"
            try:
                attrs[key] = encode_attr(value, self.function, self.variable)
            except TypeError as e:
                raise TypeError(
                    f"{operation.type} '{operation.name}': attribute {key!r} cannot be written "
                    f"to a GraphDef: {e}"
                ) from None
        if attrs:
            entry["attr"] = attrs
        return entry

    def function(self, subgraph: Subgraph) -> str:
        name = self.function_names.get(subgraph)
        if name is not None:
            return name
        name = first_unused(self.hint, self.functions)
        self.function_names[subgraph] = name
        self.functions[name] = {}  # reserved while the graph is written
        entry: dict[str, Any] = {
            "type": "ConcreteFunction" if isinstance(subgraph, ConcreteFunction) else "Subgraph",
            "graph": self.graph(subgraph.graph),
            "inputs": [None if t is None else t.name for t in subgraph.inputs],
            "outputs": [t.name for t in subgraph.outputs],
            "side_effects": [o.name for o in subgraph.side_effects],
            "jit_compile": bool(subgraph.jit_compile),
        }
        if isinstance(subgraph, ConcreteFunction):
            entry["variables"] = [self.variable(v) for v in subgraph.variables]
            entry["kept"] = [t.name for t in subgraph.kept]
        self.functions[name] = entry
        return name

    def graph(self, graph: Graph) -> str:
        name = self.graph_names.get(graph)
        if name is not None:
            return name
        if not isinstance(graph, FunctionGraph):
            raise TypeError(f"a subgraph's graph is a FunctionGraph, got {graph!r}")
        name = first_unused(self.hint, self.graphs)
        self.graph_names[graph] = name
        self.graphs[name] = {}  # reserved: a graph inside may name this one its outer
        outer = self.graph_names.get(graph.outer)
        if outer is None and isinstance(graph.outer, FunctionGraph):
            outer = self.graph(graph.outer)
        hint = self.hint
        nodes = self.nodes(graph)
        self.hint = hint
        # (an outer graph outside the def has no names to capture from)
        captures = [] if outer is None else [[o.name, i.name] for o, i in graph.captures.items()]
        entry: dict[str, Any] = {
            "type": "TraceGraph" if isinstance(graph, TraceGraph) else "FunctionGraph",
            "outer": outer,  # None: a graph outside this def
            "node": nodes,
            "captures": captures,
            "arguments": [t.name for t in graph.arguments],
            "results": [t.name for t in graph.results],
            "effects": [o.name for o in graph.effects],
            "variables": [self.variable(v) for v in graph.variables],
            "handles": [[t.name, self.variable(v)] for t, v in graph.handles.items()],
        }
        if isinstance(graph, TraceGraph):
            entry["created"] = [self.variable(v) for v in graph.created]
        self.graphs[name] = entry
        return name

    def variable(self, variable: Variable) -> str:
        key = self.variable_keys.get(id(variable))
        if key is not None:
            return key
        key = first_unused(variable.name, self.variables)
        self.variable_keys[id(variable)] = key
        self.variable_objects[key] = variable
        node = self.variable_nodes.get(id(variable))
        initializer = variable.initializer
        self.variables[key] = {
            "name": variable.name,
            "shape": list(variable.shape),
            "dtype": variable.dtype.name,
            "trainable": variable.trainable,
            "node": None if node is None else node.name,
            "initializer": initializer.name
            if isinstance(initializer, Operation) and initializer.graph is self.root
            else None,
        }
        return key


def as_graph_def(graph: Graph) -> GraphDef:
    """``graph`` as a GraphDef (see the module docs): ``Graph.as_graph_def()``."""
    return _Exporter(graph).graph_def()


def functions_as_graph_def(
    functions: Mapping[str, ConcreteFunction],
) -> tuple[GraphDef, dict[str, str], dict[str, Variable]]:
    """Traced functions as one GraphDef with no nodes of its own: each function (and every
    subgraph it uses) goes into the library, named after its key where it can be (the
    ``SavedModel`` format stores its functions this way, ``saved_model.py``).

    Returns the def, each key's name in the library, and the variables the functions read,
    by their keys in the def's ``variables`` (their values are not in the def)."""
    exporter = _Exporter(Graph())
    names = {}
    for key, concrete in functions.items():
        exporter.hint = key
        names[key] = exporter.function(concrete)
    return exporter.graph_def(), names, dict(exporter.variable_objects)


# --- checking ----------------------------------------------------------------------------------
def check_graph_def(graph_def: Any, source: str = "the GraphDef") -> GraphDef:
    """``graph_def`` if its format, version and top-level layout are ours; else an error saying
    what was expected (``source`` names the file it came from, if any)."""
    if not isinstance(graph_def, dict):
        raise TypeError(f"{source}: a GraphDef is a dict, got {type(graph_def).__name__}")
    found = graph_def.get("format")
    if found != FORMAT:
        raise InvalidArgumentError(
            f"{source}: expected format {FORMAT!r}, got {found!r}"
            + ("" if found else " (no 'format' key: is it a GraphDef?)")
        )
    version = graph_def.get("version")
    if version != VERSION:
        newer = isinstance(version, int) and version > VERSION
        raise InvalidArgumentError(
            f"{source}: expected {FORMAT} version {VERSION}, got version {version!r}"
            + (" (written by a newer eagerflow?)" if newer else "")
        )
    library = graph_def.get("library", {})
    if (
        not isinstance(graph_def.get("node"), list)
        or not isinstance(graph_def.get("variables", {}), dict)
        or not isinstance(library, dict)
        or not isinstance(library.get("functions", {}), dict)
        or not isinstance(library.get("graphs", {}), dict)
    ):
        raise InvalidArgumentError(
            f"{source}: a GraphDef has a 'node' list, a 'variables' dict and a 'library' of "
            "'functions' and 'graphs' dicts"
        )
    if depth(graph_def) > MAX_DEPTH:  # (the decoders recurse)
        raise refuse(source, "nesting", f"deeper than the limit MAX_DEPTH ({MAX_DEPTH})")
    return graph_def


# --- files -------------------------------------------------------------------------------------
def write_graph(graph_or_graph_def: Graph | GraphDef, logdir: str | os.PathLike[str],
                name: str) -> str:  # fmt: skip
    """Write a graph (or a GraphDef) as JSON to ``logdir/name`` and return the path, as
    ``tf.io.write_graph``. ``logdir`` is made if needed. The file is written whole or not at
    all: to a temporary file in the same directory, then renamed over ``name``."""
    if isinstance(graph_or_graph_def, Graph):
        graph_def = as_graph_def(graph_or_graph_def)
    else:
        graph_def = check_graph_def(graph_or_graph_def)
    text = json.dumps(graph_def, indent=1, allow_nan=False)  # strict JSON: no NaN literals
    os.makedirs(logdir, exist_ok=True)
    path = os.path.join(os.fspath(logdir), name)
    with atomic_write(path) as f:
        f.write(text)
        f.write("\n")
    return path


def read_graph_def(path: str | os.PathLike[str]) -> GraphDef:
    """The GraphDef in the JSON file ``path`` (as ``write_graph`` writes it), checked: a file
    that is not JSON (or is cut short) or not a GraphDef of this version is an
    ``InvalidArgumentError`` naming the file."""
    source = os.fspath(path)
    try:
        data = read_json(source)  # within the size and nesting limits
    except InvalidAttrError:
        raise
    except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as e:
        raise InvalidArgumentError(
            f"{source}: not a GraphDef JSON file (truncated, or not JSON): {e}"
        ) from None
    return check_graph_def(data, source)


SEAMS.as_graph_def = as_graph_def  # Graph.as_graph_def calls it

__all__ = [
    "FORMAT",
    "VERSION",
    "GraphDef",
    "MissingPythonFunction",
    "NewVariable",
    "as_graph_def",
    "check_graph_def",
    "decode_attr",
    "encode_attr",
    "functions_as_graph_def",
    "read_graph_def",
    "write_graph",
]
