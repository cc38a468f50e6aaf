"""Pass 2, clustering: which ops run together as one loop over the elements.

An elementwise op computes each element of its output from the same element of its inputs
(broadcasting aside), so a chain of them can run as one loop: each element is loaded once,
goes through the whole chain in registers, and only what is needed outside is stored. Its
*domain* is the shape it loops over: an elementwise op's output shape, a reduction's input
shape. A *cluster* is a group of ops of one domain, built greedily in the plan's order:

- an op joins the open cluster of its domain (there is at most one: an op starts a new
  cluster only when none is open), or else starts one;
- a reduction joins like any op, but what reads its result cannot join: that value exists
  only when the loop is over. The reduction ends the cluster's part of the chain;
- a cluster is *sealed*, and takes no more ops, once anything outside reads one of its
  values: it will run before that reader, so it must be complete by then;
- a stateful op (a variable write, a random draw, control flow, a call) seals every open
  cluster: nothing moves across it, so no cluster reads an array after a write changed it
  in place. A variable read changes nothing: clusters move across reads.

A cluster runs at the place of its last op; none of its values was read before that, so
this changes no result. A cluster of one elementwise op is no cluster: it runs as the op.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eagerflow.graph.compiler.kernels import ELEMENTWISE, FUSIBLE_DTYPES, REDUCTIONS, fusible
from eagerflow.graph.compiler.specialize import Node, Shape, Specialized
from eagerflow.graph.core.auto_control_deps import READS


@dataclass(eq=False)
class Cluster:
    """Ops of one domain that run as one loop (``nodes`` in program order)."""

    domain: Shape
    nodes: list[Node] = field(default_factory=list)
    reduced: set[int] = field(default_factory=set)  # the values its reductions make
    sealed: bool = False
    position: int = 0  # the plan index of its last op: where it runs
    inputs: list[int] = field(default_factory=list)  # values it reads from outside
    outputs: list[int] = field(default_factory=list)  # its values read outside it

    def __repr__(self) -> str:
        types = ", ".join(n.type for n in self.nodes)
        return f"<Cluster over {self.domain}: {types}>"


Unit = Node | Cluster


def domain_of(node: Node, program: Specialized) -> Shape | None:
    """The shape ``node`` loops over, if it can join a cluster (else None)."""
    operation = node.operation
    if operation.op_def.stateful or operation.control_inputs:
        return None
    name = node.type
    if not fusible(name):
        return None
    values = [*node.inputs, *node.outputs]
    if any(program.dtypes[v] not in FUSIBLE_DTYPES for v in values):
        return None
    shapes = [program.shapes.get(v) for v in values]
    if any(s is None for s in shapes):
        return None
    if name in ELEMENTWISE:
        return program.shapes[node.outputs[0]]
    domain = program.shapes[node.inputs[0]]
    assert domain is not None
    if not program.dtypes[node.inputs[0]].is_floating:
        return None  # integer Mean rounds as TensorFlow does: the interpreter's business
    if name in ("Max", "Min") and 0 in domain:
        return None  # NumPy raises for an empty maximum: let the kernel say it
    return domain


def reduced_axes(node: Node, rank: int) -> tuple[int, ...]:
    """The axes a reduction sums over, as non-negative numbers."""
    axis = node.operation.attrs["axis"]
    if axis is None:
        return tuple(range(rank))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(sorted({a % rank for a in axes})) if rank else ()


def find_clusters(program: Specialized) -> list[Unit]:
    """The program's nodes, with fusible ones grouped into clusters, in the order to run."""
    made_by: dict[int, Cluster] = {}
    placed: list[tuple[int, Unit]] = []
    open_clusters: dict[Shape, Cluster] = {}  # at most one per domain
    for index, node in enumerate(program.nodes):
        domain = domain_of(node, program)
        sources = {id(made_by[v]): made_by[v] for v in node.inputs if v in made_by}.values()
        for source in sources:  # a cluster read from outside is complete: sealed
            if domain != source.domain or source.reduced & set(node.inputs):
                source.sealed = True
        if domain is None and node.operation.op_def.stateful and node.type not in READS:
            for other in open_clusters.values():
                other.sealed = True
        open_clusters = {d: c for d, c in open_clusters.items() if not c.sealed}
        if domain is None:
            placed.append((index, node))
            continue
        found = open_clusters.get(domain)
        if found is None:
            cluster = open_clusters[domain] = Cluster(domain)
            placed.append((index, cluster))
        else:
            cluster = found
        cluster.nodes.append(node)
        cluster.position = index
        for v in node.outputs:
            made_by[v] = cluster
        if node.type in REDUCTIONS:
            cluster.reduced.update(node.outputs)
    units = [unit for _, unit in sorted(placed, key=_position)]
    return _finish(units, program)


def _position(placed: tuple[int, Unit]) -> int:
    index, unit = placed
    return unit.position if isinstance(unit, Cluster) else index


def _finish(units: list[Unit], program: Specialized) -> list[Unit]:
    """Each cluster's inputs and outputs; clusters of one elementwise op back to nodes."""
    read_outside: set[int] = {v for v in program.fetches if v is not None}
    for unit in units:
        if isinstance(unit, Node):
            read_outside.update(unit.inputs)
    clusters = [u for u in units if isinstance(u, Cluster) and u.nodes]
    for cluster in clusters:
        mine = {v for n in cluster.nodes for v in n.outputs}
        for other in clusters:
            if other is not cluster:
                read_outside.update(v for n in other.nodes for v in n.inputs if v in mine)
    finished: list[Unit] = []
    for unit in units:
        if isinstance(unit, Node):
            finished.append(unit)
            continue
        if len(unit.nodes) == 1 and not unit.reduced:
            finished.append(unit.nodes[0])
            continue
        made = {v for n in unit.nodes for v in n.outputs}
        unit.inputs = list(dict.fromkeys(v for n in unit.nodes for v in n.inputs if v not in made))
        unit.outputs = [v for n in unit.nodes for v in n.outputs if v in read_outside]
        finished.append(unit)
    return finished


__all__ = ["Cluster", "Unit", "domain_of", "find_clusters", "reduced_axes"]
