"""eagerflow.graph: static graphs built by the same ops, run by a Session.

A folder per stage, each importing only the stages above it in this list, read in this order:

1. ``core/``      what a graph is and how it runs: ``graph.py`` (``Graph``, ``Operation``,
   ``SymbolicTensor``, the default graph and session), ``ops.py`` (placeholders, groups,
   initializers), ``state.py``, ``session.py`` (``Session`` and its ``Plan``), ``gradients.py``,
   ``subgraphs.py`` and ``control_flow.py`` (``cond``/``while_loop``) with
   ``control_flow_grad.py``, ``auto_control_deps.py``, ``draw.py`` (pictures), ``files.py``
   (``atomic_write``), ``tensor_array.py`` (``TensorArray``) and ``seams.py``: the three
   calls the core makes to the stages above; and graphs across processes: ``device.py``
   (``device("/job:worker/task:1")`` strings), ``send_recv.py`` (the ``_Send``/``_Recv``
   ops and the ``Rendezvous`` they talk through), ``partition.py`` (``partition``: one graph
   per task) and ``job.py`` (``Job``, ``set_job``: a Session runs its task's part), ``messages.py``
   (``MessageRendezvous``: a rendezvous over a communicator's point-to-point messages);
2. ``autograph/`` Python ``if``/``while``/``for`` on tensors turned into ``cond``/``while_loop``
   before ``@function`` traces (its ``__init__`` says where to start);
3. ``tracing/``   ``@function``: ``tensor_spec.py``, ``signatures.py`` (when a call reuses a
   trace), ``function.py``;
4. ``compiler/``  ``jit_compile=True``: a Session ``Plan`` made one fused Python function;
5. ``export/``    graphs as data: ``graph_def.py`` and ``graph_def_import.py``
   (``as_graph_def``, ``import_graph_def``, ``write_graph``/``read_graph_def``),
   ``saved_model/`` (``saved_model.save``/``saved_model.load``), ``onnx/``
   (``onnx.export(f, "model.onnx")``, one translation rule per op; the onnx package is the
   optional ``[onnx]`` extra, imported only by ``export``), ``tf_graph_def/``
   (``tf_graph_def.write(f, "model.pb")`` and ``tf_graph_def.import_graph_def``: TensorFlow's
   own GraphDef files, one rule per op; the optional ``[tf-proto]`` extra), ``summary/``
   (TensorBoard's event files: ``summary.scalar``, ``trace_export``; the same extra).
"""

from importlib import metadata as _metadata

__version__ = _metadata.version("eagerflow-graph")  # from the repository's VERSION file

# compiler, control_flow_grad and draw are imported for what they register (core/seams.py):
# the plan compiler, the gradients of If and While, Graph's pictures (and export/graph_def.py,
# imported below, registers Graph.as_graph_def)
from eagerflow.graph import autograph, compiler  # noqa: F401
from eagerflow.graph.core import control_flow_grad, draw  # noqa: F401
from eagerflow.graph.core.control_flow import cond, while_loop
from eagerflow.graph.core.draw import partition_to_mermaid
from eagerflow.graph.core.gradients import gradients
from eagerflow.graph.core.graph import (
    Graph,
    Operation,
    SymbolicTensor,
    get_default_graph,
    get_default_session,
    reset_default_graph,
)
from eagerflow.graph.core.job import Job, get_job, set_job
from eagerflow.graph.core.messages import MessageRendezvous
from eagerflow.graph.core.ops import (
    control_dependencies,
    device,
    global_variables,
    global_variables_initializer,
    group,
    name_scope,
    no_op,
    placeholder,
    placeholder_with_default,
    set_random_seed,
    trainable_variables,
    variables_initializer,
)
from eagerflow.graph.core.partition import Part, partition
from eagerflow.graph.core.send_recv import Rendezvous, RendezvousKey
from eagerflow.graph.core.session import Session
from eagerflow.graph.core.tensor_array import TensorArray
from eagerflow.graph.export import onnx, saved_model, summary, tf_graph_def
from eagerflow.graph.export.graph_def import read_graph_def, write_graph
from eagerflow.graph.export.graph_def_import import import_graph_def
from eagerflow.graph.tracing.function import (
    ConcreteFunction,
    Function,
    function,
    functions_run_eagerly,
    run_functions_eagerly,
)
from eagerflow.graph.tracing.signatures import RetracingWarning
from eagerflow.graph.tracing.tensor_spec import TensorSpec

__all__ = [
    "ConcreteFunction",
    "Function",
    "Graph",
    "Job",
    "MessageRendezvous",
    "Operation",
    "Part",
    "Rendezvous",
    "RendezvousKey",
    "RetracingWarning",
    "Session",
    "SymbolicTensor",
    "TensorArray",
    "TensorSpec",
    "autograph",
    "cond",
    "control_dependencies",
    "device",
    "function",
    "functions_run_eagerly",
    "get_default_graph",
    "get_default_session",
    "get_job",
    "global_variables",
    "global_variables_initializer",
    "gradients",
    "group",
    "import_graph_def",
    "name_scope",
    "no_op",
    "onnx",
    "partition",
    "partition_to_mermaid",
    "placeholder",
    "placeholder_with_default",
    "read_graph_def",
    "reset_default_graph",
    "run_functions_eagerly",
    "saved_model",
    "set_job",
    "set_random_seed",
    "summary",
    "tf_graph_def",
    "trainable_variables",
    "variables_initializer",
    "while_loop",
    "write_graph",
]
