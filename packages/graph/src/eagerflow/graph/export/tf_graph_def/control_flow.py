"""The rules of the ops that run subgraphs, written as TensorFlow writes them:

- ``If`` (``cond``) is ``StatelessIf``: input 0 the predicate (``Tcond``), then the captured
  tensors (``Tin``); ``then_branch`` and ``else_branch`` are FunctionDefs that take those
  tensors and return ``Tout``;
- ``While`` (``while_loop``) is ``StatelessWhile``: every input is a loop variable (``T``),
  captured tensors included, so the ``body`` FunctionDef returns them too, unchanged; ``cond``
  returns one bool;
- ``PartitionedCall`` (a call of a traced function) is TensorFlow's ``PartitionedCall`` with
  the function as ``f``, ``Tin`` and ``Tout``.

A frozen graph has no state, so the stateless ops are written (what they run has no
``assign``: those are refused by their own rules); both kinds are read. Reading, each
``func`` attribute names a FunctionDef of the library, which the reader turns into an
eagerflow subgraph (a ``LibraryRef``, see ``reading.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eagerflow.graph.core.graph import Operation
from eagerflow.graph.export.tf_graph_def.functions import FunctionAttr, LibraryRef, shapes_attr
from eagerflow.graph.export.tf_graph_def.protos import TfFunc
from eagerflow.graph.export.tf_graph_def.rules import NotTranslated, TfAttrs, TfNode, tf_rule
from eagerflow.tensor import dtypes

# TensorFlow's default for while_loop: how many iterations may run at once
PARALLEL_ITERATIONS = 10


def _function(attrs: TfAttrs, key: str, kind: str) -> LibraryRef:
    return LibraryRef(attrs.get(key, TfFunc).name, kind)


def _read_if(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {key: _function(attrs, key, "Subgraph") for key in ("then_branch", "else_branch")}


@tf_rule("If", "StatelessIf", "If", read=_read_if)
def _if(op: Operation) -> TfNode:
    types = tuple(t.dtype for t in op.inputs[1:])
    return TfNode("StatelessIf", {
        "Tcond": dtypes.bool_, "Tin": list(types), "Tout": [t.dtype for t in op.outputs],
        "then_branch": FunctionAttr(op.attrs["then_branch"], types, f"{op.name}_true"),
        "else_branch": FunctionAttr(op.attrs["else_branch"], types, f"{op.name}_false"),
        "output_shapes": shapes_attr(op.outputs),
    })  # fmt: skip


def _read_while(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {
        "cond": _function(attrs, "cond", "Subgraph"), "body": _function(attrs, "body", "Subgraph"),
        "num_vars": len(attrs.get("T", list)), "num_sequences": 0, "num_emitted": 0,
        "reverse": False,
    }  # fmt: skip


@tf_rule("While", "StatelessWhile", "While", read=_read_while)
def _while(op: Operation) -> TfNode:
    a = op.attrs
    if a["cond"] is None or a["num_sequences"] or a["num_emitted"]:
        raise NotTranslated("a While over sequences (a gradient's loop) has no TensorFlow While")
    types, n = tuple(t.dtype for t in op.inputs), a["num_vars"]
    return TfNode("StatelessWhile", {
        "T": list(types),
        "cond": FunctionAttr(a["cond"], types, f"{op.name}_cond"),
        "body": FunctionAttr(a["body"], types, f"{op.name}_body", len(types) - n),
        "output_shapes": shapes_attr([*op.outputs, *op.inputs[n:]]),
        "parallel_iterations": PARALLEL_ITERATIONS,
    })  # fmt: skip


def _read_call(attrs: TfAttrs, consts: list[np.ndarray]) -> dict[str, Any]:
    return {"function": _function(attrs, "f", "ConcreteFunction")}


@tf_rule("PartitionedCall", "PartitionedCall", "StatefulPartitionedCall", read=_read_call)
def _call(op: Operation) -> TfNode:
    types = tuple(t.dtype for t in op.inputs)
    return TfNode("PartitionedCall", {
        "Tin": list(types), "Tout": [t.dtype for t in op.outputs],
        "f": FunctionAttr(op.attrs["function"], types, op.name),
        "config": "", "config_proto": "", "executor_type": "",
    })  # fmt: skip


__all__: list[str] = []  # registers its rules in TF_RULES
