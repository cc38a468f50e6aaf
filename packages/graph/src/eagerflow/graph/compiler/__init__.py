"""The graph compiler behind ``jit_compile=True``: a Session ``Plan`` becomes one generated
Python function, with chains of elementwise ops fused into single loops.

The interpreter (``session.Plan.run``) calls one kernel per step, through Python, each
writing a new array. A compiler sees the whole plan at once and can do better, as XLA
(``tf.function(jit_compile=True)``), JAX's ``jit``, TorchInductor and tinygrad do. Here
it takes four passes, each a small module, read in this order:

1. ``specialize.py``: once the input shapes are known, every tensor's shape is known; ops
   that only look at a shape (``OnesLike``) become constants, and what they feed folds.
2. ``fusion.py`` (clustering): maximal groups of elementwise ops over the same loop, with
   reductions at their end, that can run as one loop over the elements. A cluster never
   crosses a stateful op, control flow, or an op with no fused form.
3. ``kernels.py`` (code generation): one table gives each fusible op's value for one
   element; a cluster becomes the source of one function, a loop that ``numba`` compiles
   (``pip install eagerflow-graph[jit]``), or, without numba, NumPy calls writing into
   preallocated ``out=`` buffers.
4. ``program.py`` (memory planning and the program): each intermediate array, and each fused
   loop's scratch, gets a buffer, allocated once per input signature and shared by values
   whose lifetimes do not overlap; the whole plan becomes one Python function with no
   interpreter loop, cached per input signature.

Control flow (``cond``, ``while_loop``, a called function) stays an op: its kernel decides
what runs, and what runs inside it is a compiled program of its own, but no loop is fused
across it. What it leaves out, and real compilers do: matrix products are NumPy's, and
nothing is fused into them; elementwise values the backward pass needs are stored, not
recomputed; there is no parallel loop, no tiling, no fusion of a reduction into what
uses it.
"""

from eagerflow.graph.compiler.kernels import BACKENDS, default_backend, numba_available
from eagerflow.graph.compiler.program import CompiledPlan, compile_plan
from eagerflow.graph.core.seams import SEAMS

SEAMS.compile_plan = compile_plan  # what Session and Subgraph run with jit_compile=True

__all__ = ["BACKENDS", "CompiledPlan", "compile_plan", "default_backend", "numba_available"]
