"""``trace_on`` / ``trace_export``: a traced function's graph for TensorBoard's graph dashboard.

``trace_on(graph=True)`` listens to the calls of traced functions (``CALL_WATCHERS`` in
``tracing/function.py``) and keeps the first one that runs; ``trace_export`` writes its graph
to the default writer as an ``Event`` whose ``graph_def`` is a serialized ``GraphDef``, and
stops tracing, as TensorFlow's does.
"""

from __future__ import annotations

from typing import Any

from eagerflow.graph.export import tf_graph_def
from eagerflow.graph.export.summary.records import proto_module
from eagerflow.graph.export.summary.writer import default_writer, get_step
from eagerflow.graph.tracing.function import CALL_WATCHERS, ConcreteFunction

_traced: list[ConcreteFunction] = []  # what the current trace_on has seen (at most one)


def _watch(function: ConcreteFunction) -> None:
    if not _traced:
        _traced.append(function)


def trace_on(graph: bool = True, profiler: bool = False) -> None:
    """Start recording the graph of the next traced function that runs (``profiler`` is
    accepted for TensorFlow's signature; eagerflow has no profiler to start)."""
    if not graph:
        return
    trace_off()
    CALL_WATCHERS.append(_watch)


def trace_off() -> None:
    """Stop recording and forget what was recorded."""
    if _watch in CALL_WATCHERS:
        CALL_WATCHERS.remove(_watch)
    _traced.clear()


def graph_def_proto(function: ConcreteFunction) -> Any:
    """The function's graph as TensorFlow's ``GraphDef``: written by ``tf_graph_def`` (frozen,
    TensorFlow's op names and attributes) when it can be; else every node of the trace with
    its eagerflow op name and its inputs, which is all the graph dashboard draws. (A node
    without a rule, an ``AssignVariableOp``, would be left out of the frozen GraphDef, which
    keeps only what the outputs need: the dashboard shows the whole trace instead.)"""
    operations = function.graph.get_operations()
    try:
        if all(operation.type in tf_graph_def.TF_RULES for operation in operations):
            return tf_graph_def.to_proto(function)
    except tf_graph_def.NoTfCounterpartError:
        pass  # a rule refused one node's attributes: draw the trace as it is
    graph_def = proto_module("graph_pb2").GraphDef()
    for operation in operations:
        inputs = [_ref(t) for t in operation.inputs]
        inputs += [f"^{c.name}" for c in operation.control_inputs]
        graph_def.node.add(name=operation.name, op=operation.type, input=inputs)
    return graph_def


def _ref(t: Any) -> str:
    index = t.op.outputs.index(t)
    return t.op.name if index == 0 else f"{t.op.name}:{index}"


def trace_export(name: str, step: Any = None, profiler_outdir: str | None = None) -> bool:
    """Write the recorded graph to the default writer (``False`` when there is no writer or
    nothing was recorded) and stop recording. ``name`` is kept for TensorFlow's signature:
    TensorBoard shows one graph per run."""
    recorded, writer = list(_traced), default_writer()
    trace_off()
    if writer is None or not recorded:
        return False
    step = get_step() if step is None else step
    proto = graph_def_proto(recorded[0])
    writer.write_event(step=int(step or 0), graph_def=proto.SerializeToString())
    return True


__all__ = ["graph_def_proto", "trace_export", "trace_off", "trace_on"]
