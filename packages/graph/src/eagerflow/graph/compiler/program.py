"""Pass 4, memory planning and the program: a whole plan as one generated Python function.

The interpreter (``Plan.run``) loops over steps, looking each one's values up in a list of
slots and calling ``run_kernel``. The compiled program is that loop unrolled: one line per
node or cluster, values in local variables, constants as globals. Python runs it without
any interpreting of ours::

    def program(t0, t1):                        # the fed values
        node = -1
        try:
            node = 0
            t2 = run_kernel(op_0, (), attrs_0, inputs_0)   # ReadVariableOp: as interpreted
            ...
            node = 4
            fused_4(1000, t2[()], t0, t3[()], t1, b0, b1, b2)  # one loop: a whole cluster
            t9 = b0
            ...
        except EagerflowError as error:
            name_node(error, NODES[node])                  # the same error, the same note
            raise
        return [fetched(t9), ...]

Memory planning: a value that a cluster, a ufunc or a matrix product writes gets a
*buffer*, allocated when the program is compiled and written again at every call (``out=``),
instead of a new array per call. Values whose lifetimes do not overlap share one buffer.
A fused loop's scratch arrays (``kernels.scratch_shapes``) are planned the same way, as
values that live only while their loop runs.
Only values that no reader keeps are planned: a reader that stores its input (an
``assign``) or returns a view of it (``Reshape``) would see the buffer overwritten at the
next call, so their inputs get a new array each time, as before. A fetched value is copied
on its way out, as ``Plan.run`` copies it. A name is deleted after its last use, so that a
variable's ``assign_sub`` finds its array unshared and updates it in place.

A compiled plan keeps a program per *input signature* (the fed values' shapes), compiled
on the first call with that signature: ``compile_seconds`` says how long that took. Since a
program writes into its buffers, one program must not run twice at once: a call *checks
out* an idle program, and checks it in when it returns. A call that finds none idle (another
thread runs it, or the call was made from inside a running one) compiles another, with
buffers of its own, which then stays in the pool: a signature has as many programs as it
ever had calls running at once.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import eagerflow.tensor.pictures as pictures
from eagerflow.graph.compiler.fusion import Cluster, Unit, find_clusters, reduced_axes
from eagerflow.graph.compiler.kernels import (
    BACKENDS,
    INTO_BUFFER,
    REDUCTIONS,
    LoopSpec,
    compile_loop,
    default_backend,
    loop_source,
    scratch_shapes,
)
from eagerflow.graph.compiler.specialize import Node, Specialized, specialize
from eagerflow.graph.core.graph import Operation, SymbolicTensor
from eagerflow.graph.core.session import fetched_copy, name_the_node
from eagerflow.graph.core.subgraphs import Subgraph
from eagerflow.graph.core.walks import last_uses
from eagerflow.tensor.errors import EagerflowError, format_shape
from eagerflow.tensor.execution import run_kernel


@dataclass
class Program:
    """The compiled form of a plan for one input signature."""

    function: Callable[..., list[Any]]
    source: str
    kernels: dict[str, str]  # each fused loop's source, by name
    units: list[Unit]
    backend: str
    compile_seconds: float
    stats: dict[str, int] = field(default_factory=dict)

    specialized: Specialized | None = None
    buffer_of: dict[int, str] = field(default_factory=dict)  # value -> its buffer's name
    scratch_of: dict[str, str] = field(default_factory=dict)  # loop -> its scratch's buffer

    @property
    def clusters(self) -> list[Cluster]:
        return [u for u in self.units if isinstance(u, Cluster)]

    def to_mermaid(
        self, clusters: bool = True, buffers: bool = False, direction: str = "TD"
    ) -> str:
        """The program as a Mermaid flowchart: fed values, constants and ops, with edges
        labelled by their exact shapes; each cluster a box (``clusters=False``: without the
        boxes, the program before fusion). ``buffers=True`` names the buffer each value is
        written into (``→ b2``): values that share a name share memory."""
        program = self.specialized
        assert program is not None
        nodes: list[pictures.Node] = []
        edges: list[pictures.Edge] = []
        source: dict[int, str] = {}
        for slot in program.fed:
            source[slot] = pictures.safe_id(f"fed {slot}")
            name = program.names.get(slot, "fed")
            nodes.append(pictures.Node(source[slot], name, describe_value(program, slot), "input"))
        for k, unit in enumerate(self.units):
            members = unit.nodes if isinstance(unit, Cluster) else [unit]
            box = ""
            if clusters and isinstance(unit, Cluster):
                box = f"loop {k} over {format_shape(unit.domain)}/"
            for node in members:
                node_id = pictures.safe_id(node.operation.name)
                detail = node.type + (f": {describe_value(program, node.outputs[0])}"
                                      if node.outputs else "")  # fmt: skip
                if buffers and node.outputs and node.outputs[0] in self.buffer_of:
                    detail += f" → {self.buffer_of[node.outputs[0]]}"
                nodes.append(pictures.Node(node_id, node.operation.name.rpartition("/")[2], detail,
                                  "op", box))  # fmt: skip
                for v in node.inputs:
                    if v not in source and v in program.constants:
                        source[v] = pictures.safe_id(f"constant {v}")
                        nodes.append(
                            pictures.Node(
                                source[v], "constant", describe_value(program, v), "const"
                            )
                        )
                    edges.append(
                        pictures.Edge(source[v], node_id, format_shape(program.shapes.get(v)))
                    )
                for v in node.outputs:
                    source[v] = node_id
        return pictures.to_mermaid(nodes, edges, direction=direction)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter draws the program (see ``mermaid_bundle``)."""
        return pictures.mermaid_bundle(self)


class CompiledPlan:
    """A Session ``Plan``, compiled per input signature; ``run`` takes the same feeds and
    returns the same values as ``Plan.run``."""

    def __init__(self, plan: Any, backend: str | None = None) -> None:
        if backend is not None and backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.plan = plan
        self.backend = backend or default_backend()
        self.fed: list[SymbolicTensor] = list(plan.fed)
        # The first program of each input signature, to look at; the pool may hold more.
        self.programs: dict[tuple[Any, ...], Program] = {}
        self._idle: dict[tuple[Any, ...], list[Program]] = {}  # checked in, by signature
        self._pooled: set[int] = set()  # the programs that belong to a pool (by id)
        self._compiling = threading.Lock()

    def run(self, feeds: dict[SymbolicTensor, Any]) -> list[Any]:
        return self.run_arrays([feeds[t] for t in self.fed])

    def run_arrays(self, arrays: Sequence[Any]) -> list[Any]:
        """``run`` with the fed values as a list, in ``fed``'s order: an idle program of
        their signature runs them (``list.pop`` and ``append`` are atomic: no lock)."""
        key = tuple([a.shape for a in arrays])
        idle = self._idle.get(key)
        try:
            program: Program | None = idle.pop()  # type: ignore[union-attr]
        except (AttributeError, IndexError):  # no pool yet, or every program busy
            program = None
        if program is None:
            program = self._another(key)
            idle = self._idle[key]
        try:
            return program.function(*arrays)
        finally:
            idle.append(program)  # type: ignore[union-attr]

    def _another(self, key: tuple[Any, ...]) -> Program:
        """A program for signature ``key`` that nobody runs: the one ``programs`` holds if
        it has not joined the pool yet (``compiled_source`` may have compiled it), else a
        new one (quick: numba's loops are compiled once per process)."""
        with self._compiling:
            self._idle.setdefault(key, [])
            program = self.programs.get(key)
            if program is None or id(program) in self._pooled:
                program = self.compile(key)
                self.programs.setdefault(key, program)
            self._pooled.add(id(program))
            return program

    def compile(self, shapes: Sequence[tuple[int, ...]]) -> Program:
        """The program for fed values of these shapes (in ``fed``'s order)."""
        start = time.perf_counter()
        fed = {self.plan.slot[t]: tuple(s) for t, s in zip(self.fed, shapes, strict=True)}
        specialized = specialize(self.plan, fed)
        units = find_clusters(specialized)
        program = _Writer(specialized, units, self.backend).write()
        program.compile_seconds = time.perf_counter() - start
        program.stats["folded"] = specialized.folded
        program.specialized = specialized
        return program


def compile_plan(plan: Any, backend: str | None = None) -> CompiledPlan:
    """``plan`` (a Session ``Plan``) compiled: see this package's docstring."""
    return CompiledPlan(plan, backend)


# --- writing the program ----------------------------------------------------------------------
class _Writer:
    """Writes one program: its lines, the globals they use, its buffers."""

    def __init__(self, program: Specialized, units: list[Unit], backend: str) -> None:
        self.program = program
        self.backend = backend
        # the NumPy backend runs a cluster as its ops: clusters stay for the picture only
        self.units = units
        self.steps: list[Unit] = [
            n for u in units for n in (u.nodes if isinstance(u, Cluster) and backend == "numpy"
                                       else [u])
        ]  # fmt: skip
        self.names: dict[str, Any] = {
            "run_kernel": run_kernel,
            "EagerflowError": EagerflowError,
            "name_node": name_the_node,
            "fetched": fetched_copy,
            "np": np,
        }
        self.nodes: list[Operation] = []
        self.kernels: dict[str, str] = {}
        self.buffer_names: dict[int, str] = {}
        self.loops = {step: _loop_spec(step, program) for step in self.steps
                      if isinstance(step, Cluster)}  # fmt: skip
        self.scratch: dict[Cluster, np.ndarray] = {}  # each loop's, from the plan
        self.scratch_of: dict[str, str] = {}

    def write(self) -> Program:
        program = self.program
        for slot, value in program.constants.items():
            self.names[f"t{slot}"] = value
        buffers = self._plan_buffers()
        last_use = self._last_uses()
        params = ", ".join(f"t{s}" for s in program.fed)
        body: list[str] = []
        for index, step in enumerate(self.steps):
            body.extend(self._lines(step, buffers))
            body.extend(f"del t{v}" for v in last_use.get(index, ()))
        fetches = ", ".join("None" if s is None else f"fetched(t{s})" for s in program.fetches)
        source = "\n".join(
            [
                f"def program({params}):",
                "    node = -1",
                "    try:",
                *(f"        {line}" for line in body or ["pass"]),
                "    except EagerflowError as error:",
                "        name_node(error, NODES[node])",
                "        raise",
                f"    return [{fetches}]",
            ]
        )
        self.names["NODES"] = self.nodes
        namespace = dict(self.names)
        exec(compile(source, "<compiled plan>", "exec"), namespace)
        scratch = list(self.scratch.values())
        allocated = {id(b): b for b in [*buffers.values(), *scratch]}.values()
        stats = {
            "nodes": len(program.nodes),
            "clusters": sum(isinstance(u, Cluster) for u in self.units),
            "fused_ops": sum(len(u.nodes) for u in self.units if isinstance(u, Cluster)),
            "buffers": len(allocated),
            "buffer_bytes": sum(b.nbytes for b in allocated),
            # what the plan places, one array per value and per loop's scratch: without
            # sharing, as many bytes would be allocated (with no plan: at every call)
            "planned_bytes": sum(b.nbytes for b in [*buffers.values(), *scratch]),
            "scratch_bytes": sum(a.nbytes for a in scratch),
        }
        buffer_of = {v: self.buffer_names[id(b)] for v, b in buffers.items()
                     if id(b) in self.buffer_names}  # fmt: skip
        return Program(namespace["program"], source, self.kernels, self.units, self.backend,
                       0.0, stats, buffer_of=buffer_of, scratch_of=self.scratch_of)  # fmt: skip

    # --- memory planning -----------------------------------------------------------------------
    def _writes_into_buffer(self, step: Unit) -> list[int]:
        """The values ``step`` can write into a given array (``out=``)."""
        if isinstance(step, Cluster):
            return list(step.outputs)
        if step.type in INTO_BUFFER or isinstance(step.operation.op_def.kernel, np.ufunc):
            return list(step.outputs)
        return []

    def _plan_buffers(self) -> dict[int, np.ndarray]:
        """A buffer for each plannable value; values alive at different times share one.
        A loop's scratch arrays (in ``self.scratch``) live only while it runs: taken from
        the free buffers after its outputs', and freed as soon as it is done."""
        program = self.program
        fetched = {v for v in program.fetches if v is not None}
        plannable = self._plannable()
        last = self._last_uses(include_fetched=True)
        free: dict[tuple[Any, ...], list[np.ndarray]] = {}
        buffers: dict[int, np.ndarray] = {}
        for index, step in enumerate(self.steps):
            for v in self._writes_into_buffer(step):
                if v in plannable:
                    shape = program.shapes[v]
                    assert shape is not None
                    buffers[v] = _take(free, shape, program.dtypes[v].np)
            if isinstance(step, Cluster) and (size := self._scratch_size(step)):
                array = _take(free, (size,), np.float64)
                free[array.shape, array.dtype].append(array)  # free again once the loop ran
                self.scratch[step] = array
            for v in last.get(index, ()):
                if v in buffers and v not in fetched:
                    free[buffers[v].shape, buffers[v].dtype].append(buffers[v])
        return buffers

    def _scratch_size(self, loop: Cluster) -> int:
        """How many float64 the loop's scratch arrays take, one after the other."""
        return sum(map(math.prod, scratch_shapes(self.loops[loop][0], loop.domain).values()))

    def _plannable(self) -> set[int]:
        """The values that can live in a planned buffer: written into one (``out=``), of a
        known shape, not fed, and read only by steps that keep nothing of their inputs."""
        program = self.program
        readers: dict[int, list[Unit]] = {}
        for step in self.steps:
            for v in step.inputs:
                readers.setdefault(v, []).append(step)
        plannable = set()
        for step in self.steps:
            for v in self._writes_into_buffer(step):
                if program.shapes.get(v) is None or v in program.fed:
                    continue
                if all(
                    isinstance(r, Cluster) or not r.operation.op_def.retains_inputs
                    for r in readers.get(v, [])
                ):
                    plannable.add(v)
        return plannable

    def _last_uses(self, include_fetched: bool = False) -> dict[int, list[int]]:
        """For each step index, the computed values no later step reads (fetched values live
        to the end: only with ``include_fetched`` are they listed, at their last reader).
        Values no step computes (fed, constants) are never listed: they are the caller's."""
        made = {v for step in self.steps for v in step.outputs}
        keep = {v for step in self.steps for v in step.inputs} - made
        if not include_fetched:
            keep |= {v for v in self.program.fetches if v is not None}
        return last_uses([(step.inputs, step.outputs) for step in self.steps], keep)

    # --- lines ---------------------------------------------------------------------------------
    def _lines(self, step: Unit, buffers: dict[int, np.ndarray]) -> list[str]:
        if isinstance(step, Cluster):
            return self._cluster_lines(step, buffers)
        return self._node_lines(step, buffers)

    def _node_lines(self, node: Node, buffers: dict[int, np.ndarray]) -> list[str]:
        k = len(self.nodes)
        self.nodes.append(node.operation)
        args = "".join(f"t{v}, " for v in node.inputs)
        outputs = ", ".join(f"t{v}" for v in node.outputs)
        kernel = node.operation.op_def.kernel
        if node.outputs and node.outputs[0] in buffers:
            buffer = self._buffer_name(node.outputs[0], buffers)
            into = INTO_BUFFER.get(node.type)
            if into is not None:
                call = into(node.operation.attrs, [f"t{v}" for v in node.inputs], buffer)
            else:
                self.names[f"ufunc_{k}"] = kernel
                call = f"ufunc_{k}({args}out={buffer})"
            return [f"node = {k}", f"{outputs} = {call}  # {node.type}"]
        self.names[f"op_{k}"] = node.operation.op_def
        self.names[f"attrs_{k}"] = _compiled_subgraphs(node.operation.attrs)
        self.names[f"inputs_{k}"] = node.operation.inputs
        multi = node.operation.op_def.multi_output
        target = outputs + ("," if len(node.outputs) == 1 and multi else "")
        arguments = args.rstrip(", ") + ("," if len(node.inputs) == 1 else "")
        call = f"run_kernel(op_{k}, ({arguments}), attrs_{k}, inputs_{k})"
        assignment = f"{target} = " if node.outputs else ""
        return [f"node = {k}", f"{assignment}{call}  # {node.type}"]

    def _buffer_name(self, value: int, buffers: dict[int, np.ndarray]) -> str:
        """``b0``, ``b1``, ...: one name per buffer, however many values share it."""
        return self._name_of(buffers[value])

    def _name_of(self, buffer: np.ndarray) -> str:
        if id(buffer) not in self.buffer_names:
            self.buffer_names[id(buffer)] = f"b{len(self.buffer_names)}"
            self.names[self.buffer_names[id(buffer)]] = buffer
        return self.buffer_names[id(buffer)]

    def _cluster_lines(self, cluster: Cluster, buffers: dict[int, np.ndarray]) -> list[str]:
        program = self.program
        k = len(self.nodes)
        self.nodes.append(cluster.nodes[0].operation)  # an error names the first op
        name = f"fused_{k}"
        spec, inputs, outputs = self.loops[cluster]
        source = loop_source(spec, name)
        self.kernels[name] = source
        self.names[name] = compile_loop(source, name)
        args = [str(n) for n in cluster.domain]
        for v in inputs:  # a 0-d value goes in as a scalar
            scalar = program.shapes[v] == ()
            if v in program.constants and scalar:
                self.names[f"s{v}"] = np.asarray(program.constants[v])[()]
                args.append(f"s{v}")
            else:
                args.append(f"t{v}[()]" if scalar else f"t{v}")
        lines = [f"node = {k}"]
        assigned = []
        for v in outputs:
            if v in buffers:
                args.append(self._buffer_name(v, buffers))
            else:  # read by something that keeps it: a new array at every call
                shape, dtype = program.shapes[v], program.dtypes[v].np
                self.names[f"d{v}"] = dtype
                lines.append(f"t{v} = np.empty({shape!r}, d{v})")
                args.append(f"t{v}")
                continue
            assigned.append(v)
        if cluster in self.scratch:
            self.scratch_of[name] = self._name_of(self.scratch[cluster])
            args.append(self.scratch_of[name])
        types = ", ".join(n.type for n in cluster.nodes)
        lines.append(f"{name}({', '.join(args)})  # {types}")
        lines.extend(f"t{v} = {self._buffer_name(v, buffers)}" for v in assigned)
        return lines


def _take(
    free: dict[tuple[Any, ...], list[np.ndarray]], shape: tuple[int, ...], dtype: Any
) -> np.ndarray:
    """A free buffer of this shape and dtype, else a new one (``free`` keeps a list for it)."""
    pool = free.setdefault((shape, np.dtype(dtype)), [])
    return pool.pop() if pool else np.empty(shape, dtype)


def _loop_spec(cluster: Cluster, program: Specialized) -> tuple[LoopSpec, list[int], list[int]]:
    """The cluster as a LoopSpec, with the values it reads and writes, in argument order."""
    domain = cluster.domain
    rank = len(domain)
    inputs = list(cluster.inputs)
    position = {v: i for i, v in enumerate(inputs)}
    member_of: dict[int, int] = {}
    members = []
    for j, node in enumerate(cluster.nodes):
        operands = tuple(("v", member_of[v]) if v in member_of else ("in", position[v])
                         for v in node.inputs)  # fmt: skip
        members.append((node.type, program.dtypes[node.outputs[0]], operands))
        member_of[node.outputs[0]] = j
    input_specs = []
    for v in inputs:
        shape = program.shapes[v]
        assert shape is not None
        offset = rank - len(shape)
        along = tuple(size == domain[offset + d] for d, size in enumerate(shape))
        input_specs.append((program.dtypes[v], along))
    stores, reductions = [], []
    outputs = list(cluster.outputs)
    for k, v in enumerate(outputs):
        node = cluster.nodes[member_of[v]]
        if node.type in REDUCTIONS:
            axes = reduced_axes(node, rank)
            reductions.append((member_of[v], k, axes, bool(node.operation.attrs["keepdims"])))
        else:
            stores.append((member_of[v], k))
    return LoopSpec(rank, input_specs, members, stores, reductions), inputs, outputs


def _compiled_subgraphs(attrs: Any) -> Any:
    """``attrs``, with each subgraph (an ``If``'s branches, a ``While``'s body, a called
    function) replaced by a compiled copy: control flow stays the interpreter's, what runs
    inside it is compiled too. (A copy, so that the graph's own op, which an interpreting
    Session runs, is left as it was.)"""
    if not any(isinstance(v, Subgraph) for v in attrs.values()):
        return attrs
    return {k: v.compiled_copy() if isinstance(v, Subgraph) else v for k, v in attrs.items()}


def describe_value(program: Specialized, value: int) -> str:
    """``float32 (1000,)``: a value's dtype and exact shape, for a picture."""
    return f"{program.dtypes[value]} {format_shape(program.shapes.get(value))}"


__all__ = ["CompiledPlan", "Program", "compile_plan"]
