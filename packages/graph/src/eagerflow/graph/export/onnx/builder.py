"""The ONNX builder: ``OnnxBuilder`` makes the nodes, initializers and subgraphs of a model
while ``emit`` walks a graph and calls each node's rule from ``RULES`` (filled by
``math_rules.py``, ``array_rules.py`` and ``control_flow_rules.py``); what has no rule is
listed by ``unsupported`` before anything is built."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.graph.core.graph import Graph, Operation, SymbolicTensor
from eagerflow.graph.core.names import UniqueNames
from eagerflow.graph.core.subgraphs import Subgraph
from eagerflow.graph.core.walks import needed_in_order
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import EagerflowError

if TYPE_CHECKING:
    import onnx

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
MIN_OPSET = 13  # axes as inputs (ReduceSum, Squeeze, Unsqueeze), Softmax over one axis

Rule = Callable[["OnnxBuilder", Operation, list[str]], list[str]]


class UnsupportedOpError(EagerflowError, NotImplementedError):
    """The graph has nodes with no ONNX translation. ``ops`` lists every one of them as
    ``(op type, node name, reason)``."""

    def __init__(self, ops: Sequence[tuple[str, str, str]]) -> None:
        self.ops = list(ops)
        lines = "\n".join(f"  {t} '{name}': {why}" for t, name, why in self.ops)
        super().__init__(
            f"cannot export to ONNX: {len(self.ops)} node(s) have no ONNX translation\n{lines}"
        )


class Refused(Exception):
    """Raised by a rule for a node it cannot translate (the reason is the message)."""


# --- the builder ---------------------------------------------------------------------------------
class OnnxBuilder:
    """What a rule builds with: ONNX nodes appended to the graph being written (a subgraph's
    own list while a branch or loop body is written), constants as initializers of the main
    graph (visible in every subgraph), and names that are unique in the whole model."""

    def __init__(self, onnx_module: Any, opset: int) -> None:
        self.onnx = onnx_module
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.names = UniqueNames()
        self.values: dict[int, str] = {}  # id(variable) -> its initializer's name
        self.refused: list[tuple[str, str, str]] = []  # nodes a rule could not translate
        self.current = ""  # the name of the eagerflow node being translated

    def name(self, hint: str) -> str:
        """``hint``, or ``hint_1``, ``hint_2``... if it is taken: a name used once."""
        return self.names(hint)

    def node(
        self, op_type: str, inputs: Sequence[str], outputs: int = 1, **attrs: Any
    ) -> list[str]:
        """Add one ONNX node; the names of its ``outputs`` new tensors. The node is named
        after the eagerflow node it translates (``dense/MatMul/Transpose``), its outputs
        after the node (``dense/MatMul/Transpose:0``), so a runtime's error or a picture of
        the model (Netron) points back to the trace."""
        node_name = self.name(f"{self.current}/{op_type}" if self.current else op_type)
        names = [self.name(f"{node_name}:{i}") for i in range(outputs)]
        helper = self.onnx.helper
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=node_name, **attrs))
        return names

    def one(self, op_type: str, inputs: Sequence[str], **attrs: Any) -> str:
        """``node`` of one output: its name."""
        return self.node(op_type, inputs, 1, **attrs)[0]

    def const(self, value: Any, hint: str = "const", dtype: Any = None, scoped: bool = True) -> str:
        """An initializer holding ``value`` (made a NumPy array of ``dtype``), named after
        the node being translated unless not ``scoped``."""
        array = np.asarray(value, dtype=dtype)
        name = self.name(f"{self.current}/{hint}" if scoped and self.current else hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(array, name))
        return name

    def ints(self, values: Sequence[int], hint: str = "ints") -> str:
        """A 1-d int64 initializer: the shapes, axes and sizes that ONNX takes as inputs."""
        return self.const(np.array(list(values), np.int64).reshape(-1), hint)

    def elem_type(self, dtype: DType) -> int:
        """ONNX's ``TensorProto`` element type for an eagerflow dtype."""
        return int(self.onnx.helper.np_dtype_to_tensor_dtype(dtype.np))

    def variable(self, variable: Variable) -> str:
        """The initializer holding the variable's current value (one per variable)."""
        found = self.values.get(id(variable))
        if found is None:
            if not variable.holds_value:
                raise Refused(
                    f"variable {variable.name} belongs to a Session's graph, where each "
                    "Session holds its own value: export a function of eager variables"
                )
            found = self.const(np.asarray(variable.numpy()), variable.name, scoped=False)
            self.values[id(variable)] = found
        return found

    # --- translating graphs ---
    def emit(
        self, graph: Graph, env: dict[SymbolicTensor, str], targets: Sequence[SymbolicTensor]
    ) -> list[str]:
        """Translate the nodes of ``graph`` that ``targets`` need, in graph order, into the
        current node list; ``env`` maps the tensors already known (inputs, the outer scope)
        to ONNX names and is extended. Returns the targets' names."""
        # (data inputs only: a control input orders effects, which ONNX graphs do not have)
        for operation in needed_in_order(graph, targets, stop=env, control=False):
            if all(t in env for t in operation.outputs):
                continue
            inputs = [env[t] for t in operation.inputs]
            rule = RULES.get(operation.type)
            try:
                if rule is None:  # (listed by the check before export already)
                    raise Refused(NOT_EXPORTABLE.get(operation.type, "no ONNX rule for this op"))
                # (inside a branch, loop or inlined call: prefixed by that node's name)
                outer = self.current
                self.current = f"{outer}/{operation.name}" if outer else operation.name
                try:
                    names = rule(self, operation, inputs)
                finally:
                    self.current = outer
            except Refused as e:  # noted, and the rest translated: every refusal is listed
                self.refused.append((operation.type, operation.name, str(e)))
                names = [self.name("refused") for _ in operation.outputs]
            for tensor, name in zip(operation.outputs, names, strict=True):
                env[tensor] = name
        return [env[t] for t in targets]

    def subgraph(
        self,
        graph: Graph,
        env: dict[SymbolicTensor, str],
        targets: Sequence[SymbolicTensor],
        name: str,
        inputs: Sequence[onnx.ValueInfoProto] = (),
        extra: Callable[[], list[str]] | None = None,
    ) -> onnx.GraphProto:
        """An ONNX graph (a branch of ``If``, the body of ``Loop``) computing ``targets``;
        ``extra`` adds more outputs in front (the loop's condition)."""
        outer, self.nodes = self.nodes, []
        try:
            results = self.emit(graph, env, targets)
            first = extra() if extra is not None else []
            outputs = [self.one("Identity", [r]) for r in [*first, *results]]
            nodes = self.nodes
        finally:
            self.nodes = outer
        helper = self.onnx.helper
        dtypes = [self.onnx.TensorProto.BOOL] * len(first) + [
            self.elem_type(t.dtype) for t in targets
        ]
        infos = [
            helper.make_tensor_value_info(o, d, None) for o, d in zip(outputs, dtypes, strict=True)
        ]
        return helper.make_graph(nodes, self.name(name), list(inputs), infos)


# --- the rules -----------------------------------------------------------------------------------
RULES: dict[str, Rule] = {}


def _simple(onnx_type: str, **attrs: Any) -> Rule:
    """The rule of an op that is one ONNX node of the same inputs."""

    def translate(b: OnnxBuilder, node: Operation, x: list[str]) -> list[str]:
        return b.node(onnx_type, x, **attrs)

    translate.__doc__ = f"One ``{onnx_type}`` node."
    return translate


for _ours, _theirs in {
    "AddV2": "Add", "Sub": "Sub", "Mul": "Mul", "RealDiv": "Div", "Pow": "Pow",
    "Maximum": "Max", "Minimum": "Min", "Less": "Less", "LessEqual": "LessOrEqual",
    "Greater": "Greater", "GreaterEqual": "GreaterOrEqual", "Equal": "Equal",
    "LogicalAnd": "And", "LogicalOr": "Or", "LogicalNot": "Not", "SelectV2": "Where",
    "Sigmoid": "Sigmoid", "Tanh": "Tanh", "Exp": "Exp", "Log": "Log", "Sqrt": "Sqrt",
    "Neg": "Neg", "Abs": "Abs", "Sign": "Sign", "Softplus": "Softplus", "Elu": "Elu",
    "Identity": "Identity", "StopGradient": "Identity",
}.items():  # fmt: skip
    RULES[_ours] = _simple(_theirs)


def rule(*names: str) -> Callable[[Rule], Rule]:
    """Decorator: the function is the rule of the op types ``names`` (as
    ``register_gradient`` adds a gradient rule; an op of your own can get one the same way).
    A rule takes the builder, the ``Operation`` and its inputs' ONNX names, and returns the
    ONNX names of the op's outputs; it raises nothing but what the builder raises."""

    def register(function: Rule) -> Rule:
        for name in names:
            RULES[name] = function
        return function

    return register


def rank_of(node: Operation, i: int = 0) -> int:
    """The rank of ``node``'s input ``i``; refused when the graph does not know it."""
    shape = node.inputs[i].shape
    if shape is None:
        raise Refused(f"input {i} has an unknown rank; ONNX needs it here")
    return len(shape)


def zero_like(b: OnnxBuilder, dtype: DType, value: Any = 0) -> str:
    """A scalar constant of ``dtype`` (0 unless ``value`` says otherwise)."""
    return b.const(np.asarray(value, dtype.np), "scalar")


# --- what cannot be exported ---------------------------------------------------------------------
# Every registered op has a rule or its reason here (tests/tensor/test_op_rows.py).
NOT_EXPORTABLE = {
    "PrintV2": "prints when it runs: an ONNX graph has no effects",
    "WriteSummary": "writes a summary file when it runs: an ONNX graph has no effects",
    "_Send": "talks to another task of a job: an ONNX graph runs in one process",
    "_Recv": "talks to another task of a job: an ONNX graph runs in one process",
    "AssignVariableOp": "changes a variable: an ONNX graph has no state",
    "AssignAddVariableOp": "changes a variable: an ONNX graph has no state",
    "AssignSubVariableOp": "changes a variable: an ONNX graph has no state",
    "ApplyGradientDescent": "changes a variable: an ONNX graph has no state",
    "RandomNormal": "draws random numbers from eagerflow's generator, which ONNX has not",
    "RandomUniform": "draws random numbers from eagerflow's generator, which ONNX has not",
    "RandomShuffle": "draws random numbers from eagerflow's generator, which ONNX has not",
    "Placeholder": "a placeholder the function does not take as an input",
    "PlaceholderWithDefault": "not written yet (a graph input whose initializer is its default)",
    "VariableV2": "a graph variable's node (export a function of eager variables)",
    "StridedSliceGrad": "the gradient of indexing: no rule yet (export the forward function)",
    "Conv2DBackpropInput": "a convolution's gradient: no rule yet (export the forward function)",
    "Conv2DBackpropFilter": "a convolution's gradient: no rule yet (export the forward function)",
    "MaxPoolGrad": "a pooling's gradient: no rule yet (export the forward function)",
    "MaxPoolGradGrad": "a pooling's gradient: no rule yet (export the forward function)",
    "AvgPoolGrad": "a pooling's gradient: no rule yet (export the forward function)",
}


def unsupported(
    subgraphs: Sequence[Subgraph], found: list[tuple[str, str, str]], seen: set[Any]
) -> None:
    """Every node the subgraphs run (their outputs, what those need, their side effects and
    control inputs, and the same inside If, While and called functions) that has no rule."""
    for subgraph in subgraphs:
        fed = {t for t in subgraph.inputs if t is not None}
        targets: list[SymbolicTensor | Operation] = [*subgraph.outputs, *subgraph.side_effects]
        for operation in needed_in_order(subgraph.graph, targets, stop=fed):
            if operation in seen:
                continue
            seen.add(operation)
            if operation.type not in RULES:
                why = NOT_EXPORTABLE.get(operation.type, "no ONNX rule for this op")
                found.append((operation.type, operation.name, why))
            nested = [v for v in operation.attrs.values() if isinstance(v, Subgraph)]
            unsupported(nested, found, seen)


__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MIN_OPSET",
    "NOT_EXPORTABLE",
    "RULES",
    "OnnxBuilder",
    "Refused",
    "Rule",
    "UnsupportedOpError",
    "rank_of",
    "rule",
    "unsupported",
    "zero_like",
]
