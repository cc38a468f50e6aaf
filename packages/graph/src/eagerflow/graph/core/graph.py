"""``Graph``: the other meaning of every op. Inside ``with graph.as_default():`` the very same
public ops (``matmul``, ``+``, ...) add an ``Operation`` to the graph and return symbolic
tensors, whose shape and dtype come from the op's static rules; nothing is computed.

A Graph *is* an execution context of the tensor package's seam: ``execute`` hands it every
op while it is the current context, and its ``run_op`` builds a node instead of running a
kernel. That is the whole switch between eager and graph mode; no op is written twice.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from eagerflow.graph.core.device import merge_device
from eagerflow.graph.core.seams import SEAMS, registered
from eagerflow.graph.core.state import SESSION_STORAGE, SessionStorage
from eagerflow.tensor import Tensor, execution
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import EagerflowError, format_shape
from eagerflow.tensor.pictures import mermaid_bundle, to_dot, to_mermaid
from eagerflow.tensor.registry import OPS, Attrs, OpDef

if TYPE_CHECKING:
    from eagerflow.graph.core.session import Session

Shape = tuple[int | None, ...] | None  # None: not even the rank is known


class SymbolicTensor(Tensor):
    """An output of an ``Operation`` in a graph: a static shape and dtype, no value.

    It behaves like a tensor when building (``a + b`` adds a node); asking it for a value
    raises an error that says to run it in a Session.
    """

    __slots__ = ("_index", "_op", "_shape")

    def __init__(self, op: Operation, index: int, shape: Shape, dtype: DType) -> None:
        super().__init__(None, dtype)  # type: ignore[arg-type]
        self._op = op
        self._index = index
        self._shape = shape

    @property
    def op(self) -> Operation:
        return self._op

    @property
    def graph(self) -> Graph:
        return self._op.graph

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._index}"

    @property
    def shape(self) -> Any:
        return self._shape

    @property
    def ndim(self) -> Any:
        return None if self._shape is None else len(self._shape)

    def __repr__(self) -> str:
        shape = format_shape(self._shape)
        return f'Tensor("{self.name}", shape={shape}, dtype={self.dtype.name})'

    def numpy(self) -> Any:
        raise TypeError(
            f"{self.name} is a symbolic tensor in a graph: it has no value until a Session "
            "runs it; use session.run(tensor)"
        )

    def eval(self, feed_dict: dict[Any, Any] | None = None, session: Session | None = None) -> Any:
        """``session.run(self, feed_dict)`` in ``session``, or else in the default session
        (``with session:`` or ``with session.as_default():``), as in TensorFlow 1.x."""
        return session_for(self, session).run(self, feed_dict)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        self.numpy()
        raise AssertionError  # pragma: no cover - numpy() always raises

    def _item(self, what: str) -> Any:
        hint = "use cond() (or while_loop) instead of a Python if" if what == "bool" else (
            "use session.run(tensor) to get its value")  # fmt: skip
        raise TypeError(f"{what}() of the symbolic tensor {self.name} is not defined: {hint}")

    def __len__(self) -> int:
        if self._shape is None or not self._shape or self._shape[0] is None:
            raise TypeError(f"len() of {self.name} is not known while building the graph")
        return self._shape[0]


class Operation:
    """A node of a graph: one op applied to symbolic inputs, with static outputs.

    A *use* of an op that stays in a graph: its ``op_def`` is the ``OpDef`` applied (as an
    ``OpRecord``'s ``op`` is for a tape's use); a local variable holding one is named
    ``operation`` or ``node``, never ``op``."""

    def __init__(
        self,
        graph: Graph,
        op: OpDef,
        name: str,
        inputs: tuple[SymbolicTensor, ...],
        attrs: Attrs,
        control_inputs: tuple[Operation, ...],
        device: str = "",
    ) -> None:
        self.graph = graph
        self.op_def = op
        self.name = name
        self.inputs = inputs
        self.attrs = dict(attrs)
        self.control_inputs = control_inputs
        self.device = device  # where it runs, e.g. "/job:worker/task:1" ("": not placed)
        self.outputs: tuple[SymbolicTensor, ...] = ()

    @property
    def type(self) -> str:
        return self.op_def.name

    def run(self, feed_dict: dict[Any, Any] | None = None, session: Session | None = None) -> None:
        """Run this operation in ``session``, or else in the default session (see
        ``SymbolicTensor.eval``): ``init.run()`` for ``session.run(init)``."""
        session_for(self, session).run(self, feed_dict)

    def __repr__(self) -> str:
        inputs = ", ".join(t.name for t in self.inputs)
        device = f" device={self.device}" if self.device else ""
        return f"<Operation '{self.name}' type={self.type} inputs=[{inputs}]{device}>"


class _Building(threading.local):
    """Where one thread is while building a graph. TensorFlow's Graph keeps these per thread
    too: a thread's ``name_scope`` must not rename another thread's ops. (A
    ``threading.local`` subclass runs ``__init__`` once in each thread that uses it.)"""

    def __init__(self) -> None:
        self.scope = ""  # the current name_scope prefix, e.g. "layer1/"
        self.control: list[list[Operation]] = []  # the control_dependencies stack
        self.device = ""  # the placement of `device` blocks, merged (see device.py)


class Graph:
    """A dataflow graph: operations in the order they were added (a topological order)."""

    def __init__(self) -> None:
        self._operations: list[Operation] = []
        self._by_name: dict[str, Operation] = {}
        self._name_counts: dict[str, int] = {}
        self._captures: dict[int, tuple[Tensor, SymbolicTensor]] = {}
        self._building = _Building()  # this thread's name scope and control dependencies
        # TF 1's graph-level seed (set_random_seed): with it, random ops made in this graph
        # get seeds of their own (see eagerflow.tensor.random_ops.get_seed)
        self.random_seed: int | None = None

    # --- the seam's context interface -----------------------------------------------------
    assign_returns_variable = False  # TF 1: `v.assign(x)` is a node to fetch or depend on

    def create_variable(self, variable: Any) -> SessionStorage | None:
        """A variable made while this graph is built is a node; its value lives in each
        Session that runs the graph (see ``state.py``)."""
        return SESSION_STORAGE

    def run_op(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, name: str | None
    ) -> tuple[SymbolicTensor, ...]:
        """Add a node for ``op`` (this is what ``execute`` calls in graph mode)."""
        symbolic = tuple(self._as_graph_tensor(t, op) for t in inputs)
        dts, out_shapes = output_types(op, symbolic, attrs)
        return self.create_op(op, symbolic, attrs, out_shapes, dts, name).outputs

    def create_op(
        self,
        op: OpDef,
        inputs: tuple[SymbolicTensor, ...],
        attrs: Attrs,
        shapes: Sequence[Shape],
        dts: Sequence[DType],
        name: str | None = None,
    ) -> Operation:
        """Add an operation with the given static outputs (the graph's one constructor)."""
        control = tuple(dict.fromkeys(o for block in self._building.control for o in block))
        unique = self.unique_name(name or op.default_name or op.name)
        operation = Operation(self, op, unique, inputs, attrs, control, self._building.device)
        operation.outputs = tuple(
            SymbolicTensor(operation, i, None if s is None else tuple(s), d)
            for i, (s, d) in enumerate(zip(shapes, dts, strict=True))
        )
        self._operations.append(operation)
        self._by_name[operation.name] = operation
        return operation

    def _as_graph_tensor(self, t: Tensor, op: OpDef) -> SymbolicTensor:
        if isinstance(t, SymbolicTensor):
            if t.graph is not self:
                raise ValueError(
                    f"{op.name}: tensor {t.name} belongs to another graph; ops can only combine "
                    "tensors of one graph"
                )
            return t
        # An eager tensor used while building: it becomes a constant of the graph (once).
        captured = self._captures.get(id(t))
        if captured is None:
            value = np.asarray(t)
            # Shared by every later use, so it must not inherit the control dependencies of
            # the block where it happened to be used first.
            control, self._building.control = self._building.control, []
            try:
                const = self.create_op(OPS["Const"], (), {"value": value}, [value.shape], [t.dtype])
            finally:
                self._building.control = control
            captured = self._captures[id(t)] = (t, const.outputs[0])  # keep t alive: id stays its
        return captured[1]

    def op_count(self) -> int:
        """How many ops the graph has: a seeded graph's next random op's own seed."""
        return len(self._operations)

    # --- names ----------------------------------------------------------------------------
    def unique_name(self, name: str, mark_used: bool = True) -> str:
        """``name`` inside the current scope, with ``_1``, ``_2``, ... if already taken."""
        full = self._building.scope + name
        count = self._name_counts.get(full, 0)
        unique = full if count == 0 else f"{full}_{count}"
        while unique in self._name_counts and count:
            count += 1
            unique = f"{full}_{count}"
        if mark_used:
            self._name_counts[full] = count + 1
            self._name_counts.setdefault(unique, 1)
        return unique

    @contextmanager
    def name_scope(self, name: str) -> Iterator[str]:
        """Prefix the names of the ops created inside with ``name/`` (scopes nest). As in
        TensorFlow, a name ending in ``/`` is a whole scope re-entered as it is (no ``_1``),
        and ``""`` is the root (no prefix)."""
        if name and not re.fullmatch(r"[A-Za-z0-9_.\-/]+", name):
            raise ValueError(f"invalid name scope {name!r}")
        absolute = name == "" or name.endswith("/")
        scope = name if absolute else self.unique_name(name) + "/"
        outer, self._building.scope = self._building.scope, scope
        try:
            yield scope
        finally:
            self._building.scope = outer

    @contextmanager
    def control_dependencies(self, control_inputs: Sequence[Any] | None) -> Iterator[None]:
        """Ops created inside run only after every op (or tensor's op) in ``control_inputs``;
        ``None`` clears the enclosing blocks' (as in TensorFlow: for a variable's initializer,
        which must not wait for the ops of the block it happens to be made in)."""
        if control_inputs is None:
            outer, self._building.control = self._building.control, []
            try:
                yield
            finally:
                self._building.control = outer
            return
        ops = [c.op if isinstance(c, SymbolicTensor) else c for c in control_inputs]
        for o in ops:
            if not isinstance(o, Operation):
                raise TypeError(f"control_dependencies takes operations or tensors, got {o!r}")
            if o.graph is not self:
                raise ValueError(f"control input {o.name} belongs to another graph")
        self._building.control.append(ops)
        try:
            yield
        finally:
            self._building.control.pop()

    @contextmanager
    def device(self, spec: str | None) -> Iterator[str]:
        """Place the ops created inside on ``spec`` (``"/job:worker/task:1"``), merged with
        the enclosing blocks' placement as TensorFlow merges it (see ``device.py``); ``None``
        clears it. A malformed spec is a ``ValueError``."""
        outer = self._building.device
        self._building.device = merge_device(outer, spec)
        try:
            yield self._building.device
        finally:
            self._building.device = outer

    # --- looking things up ------------------------------------------------------------------
    def get_operations(self) -> list[Operation]:
        return list(self._operations)

    def get_operation_by_name(self, name: str) -> Operation:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"the graph has no operation named {name!r}") from None

    def get_tensor_by_name(self, name: str) -> SymbolicTensor:
        """``"add:0"``: output 0 of the operation named ``add``."""
        op_name, sep, index = name.rpartition(":")
        if not sep or not index.isdigit():
            raise ValueError(f"tensor names look like 'op_name:0', got {name!r}")
        outputs = self.get_operation_by_name(op_name).outputs
        if int(index) >= len(outputs):
            raise KeyError(f"operation {op_name!r} has {len(outputs)} output(s), not {name!r}")
        return outputs[int(index)]

    # --- becoming the default -----------------------------------------------------------------
    @contextmanager
    def as_default(self) -> Iterator[Graph]:
        """Inside the block, ops build nodes of this graph instead of running (in this
        thread: the graph is the thread's current context, see ``get_default_graph``)."""
        with execution.context(self):
            yield self

    # --- as data ---------------------------------------------------------------------------
    def as_graph_def(self) -> dict[str, Any]:
        """The graph as a GraphDef: a plain dict that ``json.dumps`` can write, with every
        node, the subgraphs they run and the variables they use (not the variables' values).
        ``import_graph_def`` builds it back; ``graph_def.py`` describes the format."""
        return registered(SEAMS.as_graph_def, "eagerflow.graph.export.graph_def")(self)

    # --- pictures ---------------------------------------------------------------------------
    def to_mermaid(self, direction: str = "TD", branches: bool = False) -> str:
        """The graph as a Mermaid flowchart (the tutorial draws graphs with it).

        ``branches=True`` also draws the graphs inside ``If`` and ``While`` nodes.
        """
        diagram = registered(SEAMS.graph_diagram, "eagerflow.graph.core.draw")
        return to_mermaid(*diagram(self, branches), direction=direction)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter draws the graph (see ``mermaid_bundle``)."""
        return mermaid_bundle(self)

    def to_dot(self, branches: bool = False) -> str:
        """The graph as Graphviz DOT text (no Graphviz needed to make it)."""
        diagram = registered(SEAMS.graph_diagram, "eagerflow.graph.core.draw")
        return to_dot(*diagram(self, branches), name="graph")

    def __repr__(self) -> str:
        devices = sorted({o.device for o in self._operations if o.device})
        on = f" on {', '.join(devices)}" if devices else ""
        return f"<Graph with {len(self._operations)} operations{on}>"


def output_types(
    op: OpDef, inputs: Sequence[SymbolicTensor], attrs: Attrs
) -> tuple[Sequence[DType], Sequence[Shape]]:
    """A node's output dtypes and static shapes, by its op's rules alone (every shape unknown
    when an input's rank is): what ``Graph.run_op`` and the GraphDef importer both ask."""
    shapes = [t.shape for t in inputs]
    try:
        dts = op.dtype_rule([t.dtype for t in inputs], attrs)
        if any(s is None for s in shapes):
            return dts, [None] * len(dts)
        return dts, op.shape_rule(shapes, attrs)
    except EagerflowError as e:
        raise e.at_op(op.name, inputs) from None


_global_graph = Graph()


def get_default_graph() -> Graph:
    """The graph this thread is building now (the seam's current context), or else the
    process-wide default graph (as in TF 1.x). There is no second record of "the current
    graph": ``as_default`` only makes the graph the current context."""
    ctx = execution.current_context()
    return ctx if isinstance(ctx, Graph) else _global_graph


def reset_default_graph() -> None:
    """Start the process-wide default graph afresh."""
    global _global_graph
    if isinstance(execution.current_context(), Graph):
        raise RuntimeError("reset_default_graph() cannot run while a graph is being built")
    _global_graph = Graph()


# --- the default session (per thread) ------------------------------------------------------
class _DefaultSessions(threading.local):
    """The sessions made default by ``with`` blocks, innermost last: one stack per thread, as
    in TensorFlow, so a thread's default session is never another thread's."""

    def __init__(self) -> None:
        self.stack: list[Session] = []


DEFAULT_SESSIONS = _DefaultSessions()


def get_default_session() -> Session | None:
    """The innermost session of ``with session:`` or ``with session.as_default():`` in this
    thread (None outside every such block). ``Operation.run()`` and ``Tensor.eval()`` use it."""
    stack = DEFAULT_SESSIONS.stack
    return stack[-1] if stack else None


def session_for(fetch: Operation | SymbolicTensor, session: Session | None) -> Session:
    """The session ``fetch.run()`` or ``fetch.eval()`` runs in: the given one, else the
    default one; either must run ``fetch``'s graph. (TensorFlow's messages, with the name.)"""
    is_op = isinstance(fetch, Operation)
    what, method = ("execute operation", "run") if is_op else ("evaluate tensor", "eval")
    which = "given"
    if session is None:
        session, which = get_default_session(), "default"
        if session is None:
            raise ValueError(
                f"Cannot {what} {fetch.name} using `{method}()`: No default session is "
                f"registered. Use `with sess.as_default():` or pass an explicit session to "
                f"`{method}(session=sess)`"
            )
    if fetch.graph is not session.graph:
        raise ValueError(
            f"Cannot use the {which} session to {what} {fetch.name}: its graph is different "
            "from the session's graph"
        )
    return session


__all__ = [
    "DEFAULT_SESSIONS",
    "Graph",
    "Operation",
    "Shape",
    "SymbolicTensor",
    "get_default_graph",
    "get_default_session",
    "output_types",
    "reset_default_graph",
    "session_for",
]
