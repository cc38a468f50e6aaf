"""A GraphDef built back into a graph: ``import_graph_def`` (into the default graph, or a new
``Graph``) and ``import_functions`` (the traced functions a SavedModel keeps). Every node's
attributes and every variable are checked against the op registry before anything is built
(``graph_def_check.py``), and every node again as it is read, so a damaged file is an error
naming the node, never a wrong graph. ``graph_def.py`` describes the format."""

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.graph.core.device import canonical_device
from eagerflow.graph.core.graph import (
    Graph,
    Operation,
    Shape,
    SymbolicTensor,
    get_default_graph,
    output_types,
)
from eagerflow.graph.core.subgraphs import FunctionGraph, Subgraph
from eagerflow.graph.export.graph_def import GraphDef, NewVariable, check_graph_def, decode_attr
from eagerflow.graph.export.graph_def_check import check_nodes, checked_attrs, variable_entry
from eagerflow.graph.export.limits import MAX_DEPTH, refuse
from eagerflow.graph.tracing.function import ConcreteFunction, TraceGraph
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import (
    EagerflowError,
    InvalidArgumentError,
    InvalidAttrError,
    UnknownOpError,
)
from eagerflow.tensor.registry import OPS, OpDef


# --- import ------------------------------------------------------------------------------------
def _op_def_of(node: dict[str, Any], where: str) -> OpDef:
    """The registered op a node names by its ``op`` type."""
    op_type = node.get("op")
    op_def = OPS.get(op_type) if isinstance(op_type, str) else None
    if op_def is None:
        raise UnknownOpError(
            f"{where}: node {node['name']!r} has op type {op_type!r}, which no registered op "
            "has (is the package that defines it imported?)"
        )
    return op_def


def _device_of(node: dict[str, Any], where: str) -> str:
    """A node's ``device`` (``""`` if it has none), canonical; a malformed one is refused."""
    try:
        return canonical_device(node.get("device", ""))
    except ValueError as e:
        raise InvalidArgumentError(f"{where}: node {node['name']!r}: {e}") from None


def _output_types(
    op_def: OpDef, inputs: list[Any], attrs: dict[str, Any], node: dict[str, Any], where: str
) -> tuple[Sequence[DType], Sequence[Shape]]:
    """The output dtypes and shapes by the op's own rules, as ``Graph.run_op`` calls them:
    nothing stored in the def is trusted."""
    try:
        return output_types(op_def, inputs, attrs)
    except EagerflowError:  # the op's rules refusing what they got: said as they said it
        raise
    except (KeyError, TypeError, AttributeError, IndexError, ValueError) as e:
        # an attribute missing or mistyped, or fewer inputs than the op's rules read
        raise InvalidArgumentError(
            f"{where}: node {node['name']!r} ({node['op']}) has {len(inputs)} inputs or "
            f"attributes its op cannot use: {type(e).__name__}: {e}"
        ) from None


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
        self.building: list[tuple[str, str]] = []  # the functions and graphs being built
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
        """One node of the def, built in ``graph`` through its op's rules."""
        if not isinstance(node, dict) or not isinstance(node.get("name"), str):
            raise InvalidArgumentError(f"{where}: a node is a dict with a 'name', got {node!r:.80}")
        name = node["name"]
        if name in self.operations[graph]:
            raise InvalidArgumentError(f"{where}: two nodes are named {name!r}")
        op_def = _op_def_of(node, where)
        inputs, control = self.inputs(graph, node, where)
        attrs = checked_attrs(op_def, self.attrs(node, where), where, node)
        out_dtypes, out_shapes = _output_types(op_def, inputs, attrs, node, where)
        device = _device_of(node, where)
        block = graph.control_dependencies(control) if control else nullcontext()
        with block:
            operation = graph.create_op(op_def, tuple(inputs), attrs, out_shapes, out_dtypes, name)
        operation.device = device
        self.operations[graph][name] = operation
        for t in operation.outputs:
            self.tensors[graph][f"{name}:{t.name.rpartition(':')[2]}"] = t

    def inputs(
        self, graph: Graph, node: dict[str, Any], where: str
    ) -> tuple[list[Any], list[Operation]]:
        """A node's data inputs (``name:index``) and control inputs (``^name``, listed last)."""
        name = node["name"]
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
        return inputs, control

    def attrs(self, node: dict[str, Any], where: str) -> dict[str, Any]:
        """A node's attributes, decoded (functions and variables they name are built here)."""
        attr_defs = node.get("attr", {})
        if not isinstance(attr_defs, dict):
            raise InvalidArgumentError(
                f"{where}: node {node['name']!r} has 'attr' {attr_defs!r:.60}"
            )
        attrs = {}
        for key, data in attr_defs.items():
            try:
                attrs[key] = decode_attr(data, self.function, self.variable)
            except InvalidArgumentError as e:  # (what a function it names refused, too)
                raise InvalidAttrError(
                    f"{where}: node {node['name']!r} ({node['op']}) attribute {key!r}: {e}", key
                ) from None
        return attrs

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
    def cycle(self, kind: str, name: str) -> InvalidAttrError:
        chain = " -> ".join([n for _, n in self.building] + [name])
        too_deep = len(self.building) >= MAX_DEPTH
        why = f"nests deeper than the limit MAX_DEPTH ({MAX_DEPTH})" if too_deep else "uses itself"
        return refuse(f"GraphDef: {kind} {name!r}", "library", f"{why}: {chain}")

    @contextmanager
    def nesting(self, kind: str, name: str) -> Iterator[None]:
        """Inside the block, the library's ``name`` is being built: using it again there is
        a cycle, and the chain may be at most ``MAX_DEPTH`` long (no RecursionError)."""
        if (kind, name) in self.building or len(self.building) >= MAX_DEPTH:
            raise self.cycle(kind, name)
        self.building.append((kind, name))
        try:
            yield
        finally:
            self.building.pop()

    def function(self, name: str) -> Subgraph:
        if name in self.functions:
            return self.functions[name]
        entry = self.function_defs.get(name)
        if not isinstance(entry, dict):
            raise InvalidArgumentError(f"the library has no function {name!r}")
        where = f"function {name!r}"
        if ("graph", entry.get("graph")) in self.building:  # called from its own graph
            raise self.cycle("function", name)
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
                with self.nesting("outer", name):
                    outer = self.graph(outer_name, complete=False)
            if entry.get("type") == "TraceGraph":
                graph = TraceGraph(outer)
            else:
                graph = FunctionGraph(outer or Graph())
            self.graphs[name] = graph
            self.tensors[graph], self.operations[graph] = {}, {}
        if complete and name not in self.done:
            with self.nesting("graph", name):
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
        shape, dtype = variable_entry(key, entry)
        trainable = bool(entry.get("trainable", True))
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
    has, ``InvalidAttrError`` (an ``InvalidArgumentError``) for a node's attribute its op's
    schema refuses or a variable's bad shape or dtype, found before anything is built, and
    ``InvalidArgumentError`` (a ``ValueError``) for a wrong format or version, an input
    naming a missing node, an unknown ``input_map`` or ``return_elements`` name.
    """
    graph_def = check_graph_def(graph_def)
    check_nodes(graph_def)
    input_map = dict(input_map or {})
    graph = get_default_graph()
    names = _node_outputs(graph_def)
    _check_input_map(input_map, names, graph)
    _check_return_elements(return_elements or (), names)
    scope = "import" if name is None else name
    named = graph.name_scope(scope) if scope else nullcontext()
    with named as prefix:
        importer = _Importer(graph_def, graph, input_map, prefix or "")
        importer.build(graph, graph_def["node"], "GraphDef")
        importer.finish()
        importer.connect_variables()
    if return_elements is None:
        return None
    return [
        importer.tensor(graph, element, "return_elements", "GraphDef")
        if ":" in element
        else importer.operations[graph][element]
        for element in return_elements
    ]


def _check_input_map(input_map: dict[str, Any], names: set[str], graph: Graph) -> None:
    """Each key names a tensor of the def; each value is a tensor of the default graph."""
    for key, value in input_map.items():
        if not isinstance(key, str) or key.rpartition(":")[0] not in names:
            raise InvalidArgumentError(
                f"input_map: the GraphDef has no tensor {key!r} (names look like 'x:0')"
            )
        if not isinstance(value, SymbolicTensor) or value.graph is not graph:
            raise TypeError(
                f"input_map[{key!r}] must be a tensor of the default graph, got {value!r:.60}"
            )


def _check_return_elements(return_elements: Sequence[str], names: set[str]) -> None:
    """Each element names an operation (``train``) or a tensor (``y:0``) of the def."""
    for element in return_elements:
        node = element.rpartition(":")[0] if ":" in str(element) else element
        if not isinstance(element, str) or node not in names:
            raise InvalidArgumentError(
                f"return_elements: the GraphDef has no operation or tensor {element!r}"
            )


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
    check_nodes(graph_def)
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


__all__ = ["import_functions", "import_graph_def"]
