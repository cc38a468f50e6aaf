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
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.graph.core.files import atomic_write
from eagerflow.graph.core.graph import Graph, Operation, Shape, SymbolicTensor, get_default_graph
from eagerflow.graph.core.seams import SEAMS
from eagerflow.graph.core.subgraphs import FunctionGraph, Subgraph
from eagerflow.graph.tracing.function import ConcreteFunction, TraceGraph
from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import EagerflowError, InvalidArgumentError, UnknownOpError
from eagerflow.tensor.logging_ops import TENSOR_SLOT
from eagerflow.tensor.registry import OPS

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
        # bool before int (a bool is an int), NumPy scalars before floats (np.float64 is one)
        if v is None or isinstance(v, bool | str) or type(v) is int:
            return v
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
        if isinstance(v, tuple):
            return [enc(x) for x in v]
        if isinstance(v, list):
            return {"list": [enc(x) for x in v]}
        if isinstance(v, dict):
            return {"dict": [[enc(k), enc(x)] for k, x in v.items()]}
        if isinstance(v, slice):
            return {"slice": [enc(v.start), enc(v.stop), enc(v.step)]}
        if v is Ellipsis:
            return {"ellipsis": None}
        if v is TENSOR_SLOT:
            return {"tensor_slot": None}
        if isinstance(v, Subgraph) and function is not None:
            return {"function": function(v)}
        if isinstance(v, Variable) and variable is not None:
            return {"variable": variable(v)}
        if isinstance(v, MissingPythonFunction):
            return {"python_function": v.name}
        if isinstance(v, type(enc)) or (callable(v) and hasattr(v, "__qualname__")):
            return {"python_function": getattr(v, "__qualname__", repr(v))}
        raise TypeError(f"a GraphDef cannot store {type(v).__name__} {v!r:.60}")

    return enc(value)


def decode_attr(
    data: Any,
    function: Callable[[str], Subgraph] | None = None,
    variable: Callable[[str], Variable] | None = None,
) -> Any:
    """The inverse of ``encode_attr``: JSON data back to the attribute's Python value."""

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
        if kind == "dtype":
            return dtypes.as_dtype(payload)
        if kind == "float" and payload in ("nan", "inf", "-inf"):
            return float(payload)
        if kind == "tensor":
            return _array_from(payload)
        if kind == "scalar":
            return _array_from(payload)[()]
        if kind == "list" and isinstance(payload, list):
            return [dec(x) for x in payload]
        if kind == "dict" and isinstance(payload, list):
            return {dec(k): dec(x) for k, x in payload}
        if kind == "slice" and isinstance(payload, list) and len(payload) == 3:
            return slice(*(dec(x) for x in payload))
        if kind == "ellipsis":
            return Ellipsis
        if kind == "tensor_slot":
            return TENSOR_SLOT
        if kind == "python_function" and isinstance(payload, str):
            return MissingPythonFunction(payload)
        if kind == "function" and function is not None:
            return function(payload)
        if kind == "variable" and variable is not None:
            return variable(payload)
        raise InvalidArgumentError(f"unknown attribute value {d!r:.80}")

    return dec(data)


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
            id(o.attrs["variable"]): o for o in graph.get_operations() if o.type == "VariableV2"
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

    def unique(self, table: Mapping[str, Any], name: str) -> str:
        candidate, n = name, 0
        while candidate in table:
            n += 1
            candidate = f"{name}_{n}"
        return candidate

    def function(self, subgraph: Subgraph) -> str:
        name = self.function_names.get(subgraph)
        if name is not None:
            return name
        name = self.unique(self.functions, self.hint)
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
        name = self.unique(self.graphs, self.hint)
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
        key = self.unique(self.variables, variable.name)
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
    return graph_def


# --- import ------------------------------------------------------------------------------------
class _Importer:
    """Rebuilds a GraphDef's nodes in ``graph``, each through its op's shape and dtype rules."""

    def __init__(
        self,
        graph_def: GraphDef,
        graph: Graph,
        input_map: Mapping[str, Any],
        scope: str,
        new_variable: NewVariable | None = None,
    ) -> None:
        self.root = graph
        self.new_variable = new_variable  # None: uninitialized graph variables
        self.scope = scope  # the name scope the nodes go under ("import/"), or ""
        self.input_map = dict(input_map)
        library = graph_def.get("library", {})
        self.function_defs: dict[str, Any] = library.get("functions", {})
        self.graph_defs: dict[str, Any] = library.get("graphs", {})
        self.variable_defs: dict[str, Any] = graph_def.get("variables", {})
        self.variables: dict[str, Variable] = {}
        self.functions: dict[str, Subgraph] = {}
        self.graphs: dict[str, FunctionGraph] = {}  # made (maybe still filling)
        self.done: set[str] = set()  # graphs whose nodes are all built
        # per graph: the def's names to what was built for them
        self.tensors: dict[Graph, dict[str, SymbolicTensor]] = {graph: {}}
        self.operations: dict[Graph, dict[str, Operation]] = {graph: {}}
        self.captures: list[tuple[FunctionGraph, str, Any]] = []  # filled in at the end

    # --- nodes ---
    def build(self, graph: Graph, nodes: Any, where: str) -> None:
        if not isinstance(nodes, list):
            raise InvalidArgumentError(f"{where}: 'node' must be a list")
        for node in nodes:
            self.add_node(graph, node, where)

    def add_node(self, graph: Graph, node: Any, where: str) -> None:
        if not isinstance(node, dict) or not isinstance(node.get("name"), str):
            raise InvalidArgumentError(f"{where}: a node is a dict with a 'name', got {node!r:.80}")
        name = node["name"]
        if name in self.operations[graph]:
            raise InvalidArgumentError(f"{where}: two nodes are named {name!r}")
        op_type = node.get("op")
        op_def = OPS.get(op_type) if isinstance(op_type, str) else None
        if op_def is None:
            raise UnknownOpError(
                f"{where}: node {name!r} has op type {op_type!r}, which no registered op has "
                "(is the package that defines it imported?)"
            )
        inputs, control = [], []
        for entry in node.get("input", []):
            if not isinstance(entry, str):
                raise InvalidArgumentError(f"{where}: node {name!r} has input {entry!r}")
            if entry.startswith("^"):
                control.append(self.operation(graph, entry[1:], name, where))
            elif control:
                raise InvalidArgumentError(
                    f"{where}: node {name!r} lists input {entry!r} after a control input "
                    "('^name' inputs come last)"
                )
            else:
                inputs.append(self.tensor(graph, entry, name, where))
        attr_defs = node.get("attr", {})
        if not isinstance(attr_defs, dict):
            raise InvalidArgumentError(f"{where}: node {name!r} has 'attr' {attr_defs!r:.60}")
        attrs = {}
        for key, data in attr_defs.items():
            try:
                attrs[key] = decode_attr(data, self.function, self.variable)
            except InvalidArgumentError as e:
                raise InvalidArgumentError(
                    f"{where}: node {name!r} ({op_type}) attribute {key!r}: {e}"
                ) from None
        dts = [t.dtype for t in inputs]
        shapes = [t.shape for t in inputs]
        try:  # the op's own rules, as Graph.run_op calls them: nothing stored is trusted
            out_dtypes = op_def.dtype_rule(dts, attrs)
            out_shapes: Sequence[Shape] = (
                [None] * len(out_dtypes)
                if any(s is None for s in shapes)
                else op_def.shape_rule(shapes, attrs)
            )
        except EagerflowError as e:
            raise e.at_op(op_def.name, inputs) from None
        except (KeyError, TypeError, AttributeError) as e:  # an attribute missing or mistyped
            raise InvalidArgumentError(
                f"{where}: node {name!r} ({op_type}) has attributes its op cannot use: "
                f"{type(e).__name__}: {e}"
            ) from None
        block = graph.control_dependencies(control) if control else nullcontext()
        with block:
            operation = graph.create_op(op_def, tuple(inputs), attrs, out_shapes, out_dtypes, name)
        self.operations[graph][name] = operation
        for t in operation.outputs:
            self.tensors[graph][f"{name}:{t.name.rpartition(':')[2]}"] = t

    def operation(self, graph: Graph, name: str, user: str, where: str) -> Operation:
        found = self.operations[graph].get(name)
        if found is None:
            raise InvalidArgumentError(
                f"{where}: node {user!r} has control input '^{name}', but no node named "
                f"{name!r} comes before it"
            )
        return found

    def tensor(self, graph: Graph, name: str, user: str, where: str) -> Any:
        if graph is self.root and name in self.input_map:
            return self.input_map[name]
        found = self.tensors[graph].get(name)
        if found is None:
            node = name.rpartition(":")[0]
            missing = (
                f"node {node!r} has no output {name!r}" if node in self.operations[graph]
                else f"no node named {node!r} comes before it"
            )  # fmt: skip
            if ":" not in name:
                missing = "inputs are written 'name:index'"
            raise InvalidArgumentError(f"{where}: node {user!r} has input {name!r}, but {missing}")
        return found

    # --- the library ---
    def function(self, name: str) -> Subgraph:
        if name in self.functions:
            return self.functions[name]
        entry = self.function_defs.get(name)
        if not isinstance(entry, dict):
            raise InvalidArgumentError(f"the library has no function {name!r}")
        where = f"function {name!r}"
        graph = self.graph(entry.get("graph"), complete=True)
        tensors = self.tensors[graph]

        def tensor(n: Any) -> SymbolicTensor:
            if n not in tensors:
                raise InvalidArgumentError(f"{where}: its graph has no tensor {n!r}")
            return tensors[n]

        def operation(n: Any) -> Operation:
            if n not in self.operations[graph]:
                raise InvalidArgumentError(f"{where}: its graph has no node {n!r}")
            return self.operations[graph][n]

        inputs = [None if n is None else tensor(n) for n in entry.get("inputs", [])]
        outputs = [tensor(n) for n in entry.get("outputs", [])]
        effects = [operation(n) for n in entry.get("side_effects", [])]
        subgraph: Subgraph
        if entry.get("type") == "ConcreteFunction":
            if None in inputs:
                raise InvalidArgumentError(f"{where}: a ConcreteFunction uses every input")
            function = ConcreteFunction(
                graph, inputs, outputs,  # type: ignore[arg-type]
                [self.variable(k) for k in entry.get("variables", [])], effects,
                structure=list(outputs) or None, jit_compile=bool(entry.get("jit_compile")),
            )  # fmt: skip
            function.kept = [tensor(n) for n in entry.get("kept", [])]
            subgraph = function
        else:
            subgraph = Subgraph(graph, inputs, outputs, effects)
            subgraph.jit_compile = bool(entry.get("jit_compile"))
        self.functions[name] = subgraph
        return subgraph

    def graph(self, name: Any, complete: bool) -> FunctionGraph:
        """The library graph ``name``: made on first use, its nodes built if ``complete``."""
        entry = self.graph_defs.get(name) if isinstance(name, str) else None
        if not isinstance(entry, dict):
            raise InvalidArgumentError(f"the library has no graph {name!r}")
        graph = self.graphs.get(name)
        if graph is None:
            outer_name = entry.get("outer")
            outer: Graph | None
            if outer_name == "":
                outer = self.root
            elif outer_name is None:
                outer = None  # outside the def: a graph of its own
            else:
                outer = self.graph(outer_name, complete=False)
            if entry.get("type") == "TraceGraph":
                graph = TraceGraph(outer)
            else:
                graph = FunctionGraph(outer or Graph())
            self.graphs[name] = graph
            self.tensors[graph], self.operations[graph] = {}, {}
        if complete and name not in self.done:
            self.fill(graph, name, entry)
        return graph

    def fill(self, graph: FunctionGraph, name: str, entry: dict[str, Any]) -> None:
        where = f"graph {name!r}"
        self.done.add(name)  # (a graph that uses itself is caught by the missing tensors)
        self.build(graph, entry.get("node", []), where)
        tensors, operations = self.tensors[graph], self.operations[graph]
        try:
            graph.arguments = [tensors[n] for n in entry.get("arguments", [])]
            graph.results = [tensors[n] for n in entry.get("results", [])]
            graph.effects = [operations[n] for n in entry.get("effects", [])]
            graph.variables = dict.fromkeys(self.variable(k) for k in entry.get("variables", []))
            graph.handles = {tensors[t]: self.variable(k) for t, k in entry.get("handles", [])}
        except (KeyError, ValueError, TypeError) as e:
            raise InvalidArgumentError(f"{where}: names a tensor or node it lacks: {e}") from None
        if isinstance(graph, TraceGraph):
            graph.created = [self.variable(k) for k in entry.get("created", [])]
        for pair in entry.get("captures", []):
            self.captures.append((graph, name, pair))

    def finish(self) -> None:
        """What needs every graph built: each library graph (even one only named as an
        outer), then the capture maps (outer tensor -> the placeholder standing for it)."""
        for name in self.graph_defs:
            self.graph(name, complete=True)
        for graph, name, pair in self.captures:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise InvalidArgumentError(f"graph {name!r}: a capture is [outer, inner]")
            outer_name, inner_name = pair
            outer = graph.outer
            where = f"graph {name!r}"
            outer_tensor = self.tensor(outer, outer_name, "(capture)", where)
            graph.captures[outer_tensor] = self.tensor(graph, inner_name, "(capture)", where)

    # --- variables ---
    def variable(self, key: Any) -> Variable:
        if key in self.variables:
            return self.variables[key]
        entry = self.variable_defs.get(key) if isinstance(key, str) else None
        if not isinstance(entry, dict):
            raise InvalidArgumentError(f"the GraphDef has no variable {key!r} in 'variables'")
        try:
            dtype = dtypes.as_dtype(entry["dtype"])
            shape = tuple(int(d) for d in entry["shape"])
            trainable = bool(entry.get("trainable", True))
        except (KeyError, TypeError, ValueError) as e:
            raise InvalidArgumentError(
                f"variable {key!r}: needs a shape and a dtype ({e})"
            ) from None
        node = entry.get("node") or str(entry.get("name", key)).rpartition(":")[0] or "Variable"
        if self.new_variable is not None:
            self.variables[key] = self.new_variable(key, node, shape, dtype, trainable)
        else:
            self.variables[key] = _new_variable(self.scope, node, shape, dtype, trainable)
        return self.variables[key]

    def connect_variables(self) -> None:
        """Each new variable's initializer is the def's initializer op, as imported; a
        variable whose node is not in the def gets one (so a Session can fetch it)."""
        operations = self.operations[self.root]
        for key, variable in self.variables.items():
            entry = self.variable_defs[key]
            initializer = entry.get("initializer")
            variable.initializer = operations.get(initializer) if initializer else None
            if entry.get("node") not in operations:
                node = variable.name.rpartition(":")[0].removeprefix(self.scope)  # (in scope)
                attrs = {"variable": variable}
                self.root.create_op(
                    OPS["VariableV2"], (), attrs, [variable.shape], [variable.dtype], node
                )


def _new_variable(
    scope: str, node: str, shape: tuple[int, ...], dtype: DType, trainable: bool
) -> Variable:
    """A new graph variable, without a value (as TensorFlow imports one: its value comes from
    running an initializer or restoring a checkpoint).

    A Variable is only ever made by its constructor, which also builds a ``VariableV2`` node
    and an initializer for its initial value; here those are built in a scratch graph and
    thrown away, and the GraphDef's own ``VariableV2`` node and initializer stand for the
    variable in the target graph. That works because a graph variable's values live in each
    Session, keyed by the Variable, not in any graph (``state.py``). The scratch graph uses
    the import's name ``scope``, so the variable's name is its node's (``import/v:0``)."""
    scratch = Graph()
    named = scratch.name_scope(scope.rstrip("/")) if scope else nullcontext()
    with scratch.as_default(), named:
        return Variable(np.zeros(shape, dtype.np), trainable=trainable, name=node, dtype=dtype)


def import_graph_def(
    graph_def: GraphDef,
    input_map: Mapping[str, Any] | None = None,
    return_elements: Sequence[str] | None = None,
    name: str | None = None,
) -> list[Any] | None:
    """Add the nodes of ``graph_def`` to the default graph, as TensorFlow's
    ``tf.compat.v1.import_graph_def``; returns the ``return_elements`` (or None).

    - Names go under the name scope ``name`` (default ``"import"``, made unique like any name
      scope: ``"import_1"`` the second time; ``""`` for none): node ``mul`` becomes
      ``import/mul``. Each node is rebuilt through its op's shape and dtype rules, so the
      shapes are the target graph's own (and an ``input_map`` of another shape is checked).
    - ``input_map`` maps tensor names of the def (``"x:0"``) to tensors of the default graph,
      which its consumers then use instead (the mapped node itself is still imported).
    - ``return_elements``: names of the def, ``"y:0"`` for a tensor and ``"train"`` for an
      operation; the imported ones are returned in that order.
    - Each variable of the def becomes a **new variable** of the default graph, uninitialized,
      with the def's ``VariableV2`` node and its initializer op (so
      ``global_variables_initializer()`` runs the imported initializers, and ``Session.run``
      fetches it by the Variable). This is TensorFlow's behaviour without a checkpoint; the
      values themselves will travel in checkpoints. Variables are not matched by name to
      existing ones: importing twice gives two sets of variables, as two imports of a
      TensorFlow graph give two sets of variable nodes.

    Nodes must come in an order where each one's inputs come before it (as
    ``as_graph_def`` writes them). Errors: ``UnknownOpError`` for an op type no registered op
    has, ``InvalidArgumentError`` (a ``ValueError``) for a wrong format or version, an input
    naming a missing node, an unknown ``input_map`` or ``return_elements`` name.
    """
    graph_def = check_graph_def(graph_def)
    input_map = dict(input_map or {})
    graph = get_default_graph()
    names = _node_outputs(graph_def)
    for key, value in input_map.items():
        if not isinstance(key, str) or key.rpartition(":")[0] not in names:
            raise InvalidArgumentError(
                f"input_map: the GraphDef has no tensor {key!r} (names look like 'x:0')"
            )
        if not isinstance(value, SymbolicTensor) or value.graph is not graph:
            raise TypeError(
                f"input_map[{key!r}] must be a tensor of the default graph, got {value!r:.60}"
            )
    for element in return_elements or ():
        node = element.rpartition(":")[0] if ":" in str(element) else element
        if not isinstance(element, str) or node not in names:
            raise InvalidArgumentError(
                f"return_elements: the GraphDef has no operation or tensor {element!r}"
            )
    scope = "import" if name is None else name
    named = graph.name_scope(scope) if scope else nullcontext()
    with named as prefix:
        importer = _Importer(graph_def, graph, input_map, prefix or "")
        importer.build(graph, graph_def["node"], "GraphDef")
        importer.finish()
        importer.connect_variables()
    if return_elements is None:
        return None
    result: list[Any] = []
    for element in return_elements:
        if ":" in element:
            result.append(importer.tensor(graph, element, "return_elements", "GraphDef"))
        else:
            result.append(importer.operations[graph][element])
    return result


def import_functions(
    graph_def: GraphDef, names: Sequence[str], new_variable: NewVariable
) -> list[ConcreteFunction]:
    """The library functions ``names`` of ``graph_def`` (as ``functions_as_graph_def`` writes
    it), rebuilt: each a ``ConcreteFunction`` with graphs of its own, every node through its
    op's shape and dtype rules. Each variable of the def is made by
    ``new_variable(key, name, shape, dtype, trainable)`` (``saved_model.load`` makes eager
    variables holding the saved values), once, whichever functions read it.

    Errors as ``import_graph_def``'s, and an ``InvalidArgumentError`` for a name that is not
    a ``ConcreteFunction`` of the library."""
    graph_def = check_graph_def(graph_def)
    importer = _Importer(graph_def, Graph(), {}, "", new_variable)
    importer.build(importer.root, graph_def["node"], "GraphDef")
    importer.finish()
    functions = []
    for name in names:
        function = importer.function(name)
        if not isinstance(function, ConcreteFunction):
            raise InvalidArgumentError(f"the library's function {name!r} is not a ConcreteFunction")
        functions.append(function)
    return functions


def _node_outputs(graph_def: GraphDef) -> set[str]:
    return {n["name"] for n in graph_def["node"] if isinstance(n, dict) and "name" in n}


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

    def refuse_constant(word: str) -> Any:  # NaN / Infinity are not JSON; ours never has them
        raise ValueError(f"{word} is not JSON")

    try:
        with open(source, encoding="utf-8") as f:
            data = json.load(f, parse_constant=refuse_constant)
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
    "import_functions",
    "import_graph_def",
    "read_graph_def",
    "write_graph",
]
