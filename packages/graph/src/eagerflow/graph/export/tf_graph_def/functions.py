"""A GraphDef's ``FunctionDefLibrary``: the subgraphs of ``If``, ``While`` and
``PartitionedCall`` written as TensorFlow's FunctionDefs.

TensorFlow keeps the branches of a ``cond``, the condition and body of a ``while_loop`` and
every called ``tf.function`` as *functions* of the graph's library: a ``FunctionDef`` has a
signature (``input_arg`` and ``output_arg``, each with a name and a type), a ``node_def``
list and ``ret``, which maps each output argument to the tensor it returns. The node that
runs one names it in a ``func`` attribute (``then_branch``, ``cond``, ``body``, ``f``).

Inside a FunctionDef a tensor is named ``node:arg:index``, where ``arg`` is the *output
argument* of the node's op as TensorFlow's op registry declares it (``MatMul`` returns
``product``, ``AddV2`` returns ``z``): ``OUTPUT_ARG`` holds those names for the ops the rules
write (each has exactly one output argument, a list for ``If``, ``While`` and the calls).

A rule writes a subgraph as a ``FunctionAttr`` (the subgraph and its input dtypes); the
writer's ``FunctionLibrary.resolve`` turns it into a FunctionDef of the library (once per
subgraph) and the attribute into the FunctionDef's name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from eagerflow.graph.core.subgraphs import Subgraph
from eagerflow.graph.core.walks import needed_in_order
from eagerflow.graph.export.tf_graph_def import protos as pb
from eagerflow.graph.export.tf_graph_def.protos import TfFunc
from eagerflow.graph.export.tf_graph_def.rules import TfNode
from eagerflow.tensor.dtypes import DType

# the output argument of each TensorFlow op the rules write, where it is not "output"
# (from TensorFlow's op registry: tensorflow.python.framework.op_def_registry)
OUTPUT_ARG: dict[str, str | tuple[str, ...]] = {
    "Abs": "y", "Cast": "y", "Exp": "y", "Log": "y", "LogicalNot": "y", "Neg": "y",
    "OnesLike": "y", "Sigmoid": "y", "Sign": "y", "Sqrt": "y", "Square": "y", "Tanh": "y",
    "Transpose": "y", "ZerosLike": "y",
    "Add": "z", "AddV2": "z", "Equal": "z", "FloorDiv": "z", "FloorMod": "z", "Greater": "z",
    "GreaterEqual": "z", "Less": "z", "LessEqual": "z", "LogicalAnd": "z", "LogicalOr": "z",
    "Maximum": "z", "Minimum": "z", "Mul": "z", "NotEqual": "z", "Pow": "z", "RealDiv": "z",
    "Sub": "z",
    "Elu": "activations", "LeakyRelu": "activations", "Relu": "activations",
    "Softplus": "activations", "ReluGrad": "backprops", "MatMul": "product",
    "Softmax": "softmax", "LogSoftmax": "logsoftmax", "Where": "index",
    # an op with several output arguments, one tensor each: their names in order
    "SparseSoftmaxCrossEntropyWithLogits": ("loss", "backprop"),
}  # fmt: skip


def output_arg_ref(node: str, tf_op: str, index: int) -> str:
    """How a FunctionDef names output ``index`` of ``node`` of op ``tf_op``."""
    arg = OUTPUT_ARG.get(tf_op, "output")
    if isinstance(arg, tuple):
        return f"{node}:{arg[index]}:0"
    return f"{node}:{arg}:{index}"


def output_index(tf_op: str, arg: str, index: int) -> int | None:
    """Which output of an op of type ``tf_op`` a FunctionDef's ``node:arg:index`` names
    (``None``: the op has no such output argument)."""
    names = OUTPUT_ARG.get(tf_op, "output")
    if isinstance(names, tuple):
        return names.index(arg) if arg in names and index == 0 else None
    return index if arg == names else None


@dataclass(frozen=True, eq=False)
class FunctionAttr:
    """A rule's ``func`` attribute before it is written: ``subgraph`` as a FunctionDef whose
    arguments have ``dtypes`` (one per input of the subgraph, used or not). ``passthrough``:
    the last so many arguments are returned as they are, after the subgraph's outputs (a
    TensorFlow ``While`` body returns every loop input, captured ones included)."""

    subgraph: Subgraph
    dtypes: tuple[DType, ...]
    hint: str
    passthrough: int = 0


class FunctionLibrary:
    """The FunctionDefs written into a GraphDef's ``library`` proto: one per subgraph (and
    ``passthrough``), named after the node that first uses it."""

    def __init__(self, proto: Any, writer: Callable[..., Any]) -> None:
        self.proto, self.writer = proto, writer
        self.names: dict[tuple[int, int], str] = {}
        self.count = 0  # functions named so far

    def resolve(self, value: Any) -> Any:
        """An attribute value as ``protos.attr_proto`` takes it: a ``FunctionAttr`` becomes
        the ``TfFunc`` of its FunctionDef, written now if it is new."""
        if not isinstance(value, FunctionAttr):
            return value
        key = (id(value.subgraph), value.passthrough)
        if key not in self.names:
            self.names[key] = self._write(value)
        return TfFunc(self.names[key])

    def _name(self, hint: str) -> str:
        """A new function name: the hint numbered, as TensorFlow numbers ``cond_true_8``
        (a function is an op of the graph, so it must not be named ``PartitionedCall``)."""
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint)
        self.count += 1
        return f"{base}_{self.count}"

    def _write(self, attr: FunctionAttr) -> str:
        """Write ``attr``'s FunctionDef (its inner functions first) and return its name."""
        subgraph = attr.subgraph
        name = self._name(attr.hint)
        function = self.proto.function.add()  # (here first: its name is taken)
        function.signature.name = name
        writer = self.writer(function.node_def.add, self, in_function=True)
        arguments = []
        for i, (t, dtype) in enumerate(zip(subgraph.inputs, attr.dtypes, strict=True)):
            arguments.append(writer.names(f"arg_{i}"))
            function.signature.input_arg.add(name=arguments[-1], type=pb.dtype_enum(dtype))
            if t is not None:
                writer.arguments[t] = arguments[-1]
        # what the outputs need, from the inputs on (a frozen graph runs no effect of its
        # own: as at the top level, an op run for its effect alone is left out)
        fed = set(writer.arguments)
        writer.write(needed_in_order(subgraph.graph, subgraph.outputs, fed, control=False))
        kept = len(arguments) - attr.passthrough
        returned = [writer.ref(t) for t in subgraph.outputs] + arguments[kept:]
        dtypes = [t.dtype for t in subgraph.outputs] + list(attr.dtypes[kept:])
        for i, (ref, dtype) in enumerate(zip(returned, dtypes, strict=True)):
            if ref in arguments:  # an argument returned as it is: through an Identity
                identity = writer.add(
                    writer.names(f"identity_{i}"), TfNode("Identity", {"T": dtype}), [ref]
                )
                ref = writer.output_ref(identity, "Identity", 0)
            function.signature.output_arg.add(name=f"output_{i}", type=pb.dtype_enum(dtype))
            function.ret[f"output_{i}"] = ref
        return name


def shapes_attr(tensors: Sequence[Any]) -> list[pb.TfShape]:
    """TensorFlow's ``output_shapes``: each tensor's static shape."""
    return [pb.TfShape(None if t.shape is None else tuple(t.shape)) for t in tensors]


class LibraryRef(NamedTuple):
    """What a reading rule gives for a ``func`` attribute: the FunctionDef ``name``, to be
    read as an eagerflow ``kind`` (``"Subgraph"``: a branch or loop body, or
    ``"ConcreteFunction"``: a called function)."""

    name: str
    kind: str


__all__ = [
    "OUTPUT_ARG",
    "FunctionAttr",
    "FunctionLibrary",
    "LibraryRef",
    "output_arg_ref",
    "output_index",
    "shapes_attr",
]
