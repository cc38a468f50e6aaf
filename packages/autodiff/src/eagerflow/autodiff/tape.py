"""``GradientTape``: reverse-mode automatic differentiation of eager code.

While a tape is active it is a *recorder* on the execution seam: every op that ran is
reported to it, and it keeps an entry (the op, its inputs, attributes and outputs) for those
that touch a tensor it tracks (a watched tensor, a watched variable's value, or an output of
an op it already recorded). ``gradient()`` then walks the entries backwards once, calling
each op's gradient rule on an ``OpRecord`` of it.

Because rules are written with public ops, a tape that is still recording while another
tape computes gradients records that computation too: nesting tapes gives higher
derivatives, with no extra machinery.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any

import eagerflow.tensor as ef
from eagerflow.autodiff.draw import tape_diagram
from eagerflow.autodiff.registry import ACCEPTS_NONE, GRADIENTS, OpRecord, get_gradient
from eagerflow.autodiff.variables import Variable
from eagerflow.tensor import Tensor
from eagerflow.tensor.errors import EagerflowError, ShapeError, format_shape
from eagerflow.tensor.execution import add_recorder, remove_recorder
from eagerflow.tensor.nest import flatten, pack_sequence_as
from eagerflow.tensor.pictures import mermaid_bundle, to_dot, to_mermaid
from eagerflow.tensor.registry import Attrs, OpDef
from eagerflow.tensor.rules import compatible

_new_tuple = tuple.__new__
_MISSING: Any = object()  # no rule registered (as opposed to None: not differentiable)


# --- how the tape stores an op -------------------------------------------------------------
Entry = tuple[Any, ...]  # (op, attrs, number of inputs, *inputs, *outputs): see `pack`
OP, ATTRS, N_INPUTS, INPUTS = range(4)  # an entry's fields; its inputs start at INPUTS


def pack(op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, outputs: tuple[Tensor, ...]) -> Entry:
    """One op application as ``backprop`` reads it: a single flat tuple.

    Why not keep an ``OpRecord`` (which holds two more tuples)? CPython's cycle collector
    walks every live container at each full collection, and a tape keeps one entry alive
    per op: three containers per op instead of one made a long tape's ops cost up to twice
    as much to record as a short one's.
    """
    return (op, attrs, len(inputs), *inputs, *outputs)


def inputs_end(entry: Entry) -> int:
    """Where an entry's inputs end and its outputs begin."""
    return INPUTS + entry[N_INPUTS]


def unpack(entry: Entry) -> OpRecord:
    """An entry as an ``OpRecord``: op, inputs, attrs, outputs."""
    end = inputs_end(entry)
    return OpRecord(entry[OP], entry[INPUTS:end], entry[ATTRS], entry[end:])


# --- backpropagation ------------------------------------------------------------------------
def initial_gradients(targets: Sequence[Tensor], given: Any, what: str) -> list[Tensor]:
    """What the backward pass starts from, one per target: ones (so the targets' sum is
    differentiated), or ``given`` (``what`` names the argument), checked against the targets."""
    if given is None:
        return [ef.ones_like(t) for t in targets]
    given = flatten(given)
    if len(given) != len(targets):
        raise ValueError(f"{len(given)} {what} for {len(targets)} targets: give one per target")
    result = [ef.convert_to_tensor(g, t.dtype) for g, t in zip(given, targets, strict=True)]
    for i, (seed, target) in enumerate(zip(result, targets, strict=True)):
        if not compatible(seed.shape, target.shape):
            raise ShapeError(
                f"{what}[{i}] has shape {format_shape(seed.shape)} but target {i} has shape "
                f"{format_shape(target.shape)}: each must have its target's shape"
            )
    return result


def backprop(
    entries: Sequence[Entry],
    targets: Sequence[Tensor],
    seeds: Sequence[Tensor],
    sources: set[Tensor],
    depends: set[Tensor] | None = None,
) -> dict[Tensor, Tensor]:
    """Gradients of ``sum(seed · target)`` for the tensors in ``sources``, keyed by tensor.

    ``depends``, if known, is the set of tensors that depend on a source (and no others);
    otherwise a forward pass over the entries works it out.

    Iterative and linear in the number of entries: entries are in the order the ops ran, so
    walking them backwards visits every op after all the ops that used its outputs.

    CPython's cyclic garbage collector is paused meanwhile: the pass allocates a gradient per
    entry while every entry is alive, and each automatic full collection would walk them
    all, so a long tape would cost more per op than a short one. The pass makes no garbage
    cycles, so pausing loses nothing.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        if depends is None:
            depends = _dependents(entries, sources)
        return _backprop(entries, targets, seeds, sources, depends)
    finally:
        if was_enabled:
            gc.enable()


def _dependents(entries: Sequence[Entry], sources: set[Tensor]) -> set[Tensor]:
    """The tensors that depend on a source: only their gradients are worth computing."""
    depends = set(sources)
    for entry in entries:  # forward: an op's outputs depend on a source if an input does
        end = inputs_end(entry)
        if not depends.isdisjoint(entry[INPUTS:end]):
            depends.update(entry[end:])
    return depends


# The backward hot path, kept in one function on purpose (over ruff's complexity limit): it
# runs once per recorded op, and each helper it called would add a Python call (~60 ns).
def _backprop(  # noqa: C901
    entries: Sequence[Entry],
    targets: Sequence[Tensor],
    seeds: Sequence[Tensor],
    sources: set[Tensor],
    depends: set[Tensor],
) -> dict[Tensor, Tensor]:
    # Tensors are keys by identity (see eagerflow.tensor.tensor), never compared by value.
    grads: dict[Tensor, Tensor] = {}
    for target, seed in zip(targets, seeds, strict=True):
        previous = grads.get(target)  # the same target twice: its seeds add up
        grads[target] = seed if previous is None else ef.add(previous, seed)

    # (bound once, and no cache lookup when every input needs a gradient: ~150 ns less an op
    # where every input does, as in W2)
    leads_to_source = depends.__contains__
    for entry in reversed(entries):
        op, end = entry[OP], inputs_end(entry)
        outputs = entry[end:]
        # every use of the outputs is behind us: take (and free) their gradients
        if len(outputs) == 1:
            out = outputs[0]
            g = grads.get(out) if out in sources else grads.pop(out, None)
            if g is None:
                continue  # nothing flows back through this op
            out_grads: Sequence[Tensor | None] = (g,)
        else:
            several = _output_gradients(op, outputs, grads, sources)
            if several is None:
                continue
            out_grads = several
        inputs = entry[INPUTS:end]
        needed = tuple(map(leads_to_source, inputs))
        if True not in needed:
            continue  # no input leads to a source (or there is no input)
        skip = _NO_SKIP if False not in needed else _skipped(needed)
        rule = GRADIENTS.get(op.name, _MISSING)
        if rule is None:  # declared not differentiable: the path stops here
            continue
        if rule is _MISSING:
            get_gradient(op.name)  # raises the LookupError that names the op
        # OpRecord(op, inputs, attrs, outputs, skip), made by tuple.__new__: NamedTuple's own
        # constructor is Python code and costs twice as much, once per rule call
        record = _new_tuple(OpRecord, (op, inputs, entry[ATTRS], outputs, skip))
        in_grads = rule(record, *out_grads)
        if in_grads.__class__ not in _SEQUENCES or len(in_grads) != len(inputs):
            raise _bad_gradients(op, rule, in_grads, len(inputs))
        for t, g, need in zip(inputs, in_grads, needed, strict=True):
            if need and g is not None and t._dtype.is_floating:
                previous = grads.get(t)
                grads[t] = g if previous is None else ef.add(previous, g)
    return grads


_SEQUENCES = (tuple, list)  # what a gradient rule may return: one gradient (or None) per input


def _bad_gradients(op: OpDef, rule: Any, got: Any, n: int) -> EagerflowError:
    """The error for a gradient rule that returned something else than ``n`` gradients."""
    name = f"{getattr(rule, '__module__', '?')}.{getattr(rule, '__qualname__', rule)}"
    expected = f"a tuple or list of {n} gradient{'s' if n != 1 else ''} (or None)"
    if got.__class__ in _SEQUENCES:
        what = f"{len(got)} gradient{'s' if len(got) != 1 else ''}"
        why = f": one per input of {op.name}, which has {n}"
    else:
        what = f"a {type(got).__name__}"
        why = " (for one input: `return (grad,)`)" if n == 1 else ""
    return EagerflowError(
        f"the gradient rule of {op.name} ({name}) returned {what}; expected {expected}{why}"
    )


def _output_gradients(
    op: OpDef, outputs: Entry, grads: dict[Tensor, Tensor], sources: set[Tensor]
) -> list[Tensor | None] | None:
    """Take the gradients of an op's several outputs; None if none has one."""
    out_grads = [grads.get(o) for o in outputs]
    for o in outputs:
        if o not in sources:
            grads.pop(o, None)
    if all(g is None for g in out_grads):
        return None
    if op.name in ACCEPTS_NONE:
        return out_grads
    # outputs nobody used get zeros
    return [ef.zeros_like(o) if g is None else g for o, g in zip(outputs, out_grads, strict=True)]


_NO_SKIP: frozenset[int] = frozenset()


@cache
def _skipped(needed: tuple[bool, ...]) -> frozenset[int]:
    """The indices of the inputs that need no gradient (cached: the same few patterns recur)."""
    return frozenset(i for i, need in enumerate(needed) if not need)


def check_unconnected_gradients(unconnected_gradients: str) -> None:
    """Refuse an ``unconnected_gradients`` argument other than ``"none"`` (the gradient of a
    source the target does not depend on is None) or ``"zero"`` (zeros shaped like it).

    Called before any work, by ``GradientTape.gradient``/``jacobian``, the graph package's
    ``gradients()`` and ``backward``; ``collect`` then gives unconnected sources what it asked
    for."""
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError(
            f"unconnected_gradients must be 'none' or 'zero', got {unconnected_gradients!r}"
        )


def collect(
    grads: dict[Tensor, Tensor],
    sources: Sequence[Any],
    keys: Sequence[Sequence[Tensor]],
    unconnected: str,
) -> list[Tensor | None]:
    """Each source's gradient: the sum of the gradients of its tensors (``keys``: a variable
    has one per read). Unconnected: None, or zeros shaped like the source if ``"zero"``."""
    result: list[Tensor | None] = []
    for source, source_keys in zip(sources, keys, strict=True):
        total = None
        for k in source_keys:
            part = grads.get(k)
            if part is not None:
                total = part if total is None else ef.add(total, part)
        if total is None and unconnected == "zero":
            is_tensor = isinstance(source, Tensor)
            total = ef.zeros_like(source) if is_tensor else ef.zeros(source.shape, source.dtype)
        result.append(total)
    return result


def backward(
    entries: Sequence[Entry],
    targets: Sequence[Tensor],
    sources: Sequence[Any],
    keys: Sequence[Sequence[Tensor]],
    seeds: Any = None,
    unconnected_gradients: str = "none",
    *,
    seeds_name: str = "output_gradients",
    depends: set[Tensor] | None = None,
) -> list[Tensor | None]:
    """The backward pass over recorded ``entries``, for the tape and for graph ``gradients()``.

    Returns, for each source, d(sum of seed · target)/d(source): the sum of the gradients of
    its ``keys`` (the tensors that stand for it: a tensor itself, or each read of a variable).
    ``seeds`` defaults to ones (``seeds_name`` names the argument in errors); a source with no
    path from the targets gets None, or zeros with ``unconnected_gradients="zero"``.
    """
    check_unconnected_gradients(unconnected_gradients)
    starts = initial_gradients(targets, seeds, seeds_name)
    grads = backprop(entries, targets, starts, {k for ks in keys for k in ks}, depends)
    return collect(grads, sources, keys, unconnected_gradients)


# --- the tape ----------------------------------------------------------------------------------
class GradientTape:
    """Record eager ops, then compute gradients of a target with respect to sources.

    >>> x = constant(3.0)
    >>> with GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = x * x
    >>> tape.gradient(y, x)   # dy/dx = 2x
    Tensor(6.0, shape=(), dtype=float32)
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = persistent
        self._watch_accessed_variables = watch_accessed_variables
        self._recording = False  # inside the `with` block
        self._listening = False  # registered as a recorder on the seam right now
        self._used = False
        self._clear()

    def _clear(self) -> None:
        self._entries: list[Entry] = []  # the recorded ops, in order (see `pack`)
        self._tracked: set[Tensor] = set()  # tensors whose gradient can be asked for
        self._roots: set[Tensor] = set()  # the tracked ones no recorded op made: watched, reads
        self._variables: dict[Variable, list[Tensor]] = {}  # watched variable -> its reads

    # --- recording ---------------------------------------------------------------------------
    def __enter__(self) -> GradientTape:
        if self._recording:
            raise RuntimeError("this GradientTape is already recording")
        self._recording = True
        self._listen(True)
        return self

    def __exit__(self, *exc: object) -> None:
        self._listen(False)
        self._recording = False

    def _listen(self, on: bool) -> bool:
        """Register (or unregister) as a recorder; returns whether it was registered."""
        was = self._listening
        if on and not was:
            add_recorder(self)
        elif was and not on:
            remove_recorder(self)
        self._listening = on
        return was

    def record(
        self, op: OpDef, inputs: tuple[Tensor, ...], attrs: Attrs, outputs: tuple[Tensor, ...]
    ) -> None:
        """Called by the seam after every op while this tape is active."""
        if op.reads_state:
            self._variable_read(attrs["variable"], outputs[0])
            return
        if self._tracked.isdisjoint(inputs):
            return  # no input is tracked: the op cannot be on a gradient path
        self._entries.append(pack(op, inputs, attrs, outputs))
        self._tracked.update(outputs)

    def _variable_read(self, variable: Variable, value: Tensor) -> None:
        reads = self._variables.get(variable)
        if reads is None:
            if not (self._watch_accessed_variables and variable.trainable):
                return
            reads = self._variables[variable] = []
        reads.append(value)
        self._tracked.add(value)
        self._roots.add(value)

    def watch(self, tensor: Any) -> None:
        """Track a tensor or variable (or a nested list of them) so gradients reach it."""
        for t in flatten(tensor):
            if isinstance(t, Variable):
                self._variables.setdefault(t, [])
            elif isinstance(t, Tensor):
                self._tracked.add(t)
                self._roots.add(t)
            else:
                raise ValueError(
                    f"watch() takes tensors and variables, got {type(t).__name__}: {t!r:.60}"
                )
            if not t.dtype.is_floating:
                warnings.warn(
                    f"watched a {t.dtype} tensor: only floating-point tensors have gradients "
                    "(the gradient will be None)",
                    stacklevel=2,
                )

    def watched_variables(self) -> tuple[Variable, ...]:
        """The variables this tape watches, in the order it first saw them."""
        return tuple(self._variables)

    @contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Ops inside the block are not recorded by this tape."""
        if not self._recording:
            raise RuntimeError("stop_recording() needs a tape that is recording")
        was = self._listen(False)
        try:
            yield
        finally:
            self._listen(was)

    def reset(self) -> None:
        """Forget everything recorded and watched so far (recording goes on if active)."""
        self._clear()
        self._used = False
        self._listen(self._recording)  # a spent tape inside its block records again

    # --- differentiating ---------------------------------------------------------------------
    def gradient(
        self,
        target: Any,
        sources: Any,
        output_gradients: Any = None,
        unconnected_gradients: str = "none",
    ) -> Any:
        """d(target)/d(sources), shaped like ``sources`` (a tensor, variable or nest of them).

        A non-scalar target (or a list of targets) is differentiated as its sum, or as
        ``sum(output_gradients * target)`` when ``output_gradients`` is given. Sources that
        the target does not depend on get None, or zeros with ``unconnected_gradients="zero"``.
        """
        self._check_usable(unconnected_gradients)
        if type(target) is Tensor:
            targets = [target]
        else:
            targets = [self._as_target(t) for t in flatten(target)]
        flat_sources = flatten(sources)
        # The backward pass is not recorded on this tape, except on a persistent one inside
        # its block (as TensorFlow): then its own gradient can be differentiated again
        was_listening = self._listen(self._persistent and self._listening)
        try:
            grads = self._gradients(targets, output_gradients, flat_sources, unconnected_gradients)
        except BaseException:
            self._listen(was_listening)  # a failed call leaves the tape as it was
            raise
        self._done(was_listening)
        return pack_sequence_as(sources, grads)

    def _as_target(self, target: Any) -> Tensor:
        """A target as a tensor. A watched variable's value becomes one of its reads, so that
        d v / d v is ones (TensorFlow's answer), even after the tape stopped recording."""
        if isinstance(target, Variable) and target in self._variables:
            value = target.read_value()
            reads = self._variables[target]
            if not any(r is value for r in reads):  # (a recording tape noted it already)
                reads.append(value)
            self._tracked.add(value)
            return value
        return ef.convert_to_tensor(target)

    def _check_usable(self, unconnected_gradients: str) -> None:
        check_unconnected_gradients(unconnected_gradients)
        if self._used:
            raise RuntimeError(
                "a non-persistent GradientTape can compute gradients only once; create it "
                "with GradientTape(persistent=True) to call gradient() or jacobian() again"
            )

    def _done(self, was_listening: bool) -> None:
        """After a gradient: a persistent tape records again (if it did); any other tape is
        spent: it stops recording and frees what it held. (It still knows which variables it
        watched, but not their reads: a held read would make every update of the variable
        copy its array, see ``_private_value`` in variables.py.)"""
        if self._persistent:
            self._listen(was_listening)
        else:
            self._used = True
            self._entries, self._tracked, self._roots = [], set(), set()
            for reads in self._variables.values():
                reads.clear()

    def _gradients(
        self,
        targets: list[Tensor],
        seeds: Any,
        sources: list[Any],
        unconnected: str,
    ) -> list[Tensor | None]:
        keys = [self._source_keys(s) for s in sources]
        # When every root is a source, every tracked tensor depends on one: backprop need
        # not work that out again (the usual case: the watched things are the sources)
        depends = self._tracked if self._roots <= {k for ks in keys for k in ks} else None
        entries = self._entries
        if self._listening:  # recording this very pass: it reads what was there before it
            entries = list(entries)
            depends = None if depends is None else set(depends)
        return backward(entries, targets, sources, keys, seeds, unconnected, depends=depends)

    def _source_keys(self, source: Any) -> list[Tensor]:
        """The tensors whose gradients make up ``source``'s gradient."""
        if isinstance(source, Variable):
            return list(self._variables.get(source, ()))
        if isinstance(source, Tensor):  # only tensors this tape watched or computed
            tracked = source in self._tracked and source.dtype.is_floating
            return [source] if tracked else []
        raise ValueError(f"sources must be tensors or variables, got {type(source).__name__}")

    def jacobian(self, target: Any, sources: Any, unconnected_gradients: str = "none") -> Any:
        """The full Jacobian: for each source, shape ``target.shape + source.shape``."""
        self._check_usable(unconnected_gradients)
        target = ef.convert_to_tensor(target)
        flat_sources = flatten(sources)
        size = 1
        for d in target.shape:
            size *= d
        rows: list[list[Tensor | None]] = []
        was_listening = self._listen(False)
        try:
            for i in range(size):  # one backward pass per target element
                seed = ef.reshape(ef.one_hot(i, size, dtype=target.dtype), target.shape)
                rows.append(self._gradients([target], [seed], flat_sources, unconnected_gradients))
            jacobians: list[Tensor | None] = []
            for j, source in enumerate(flat_sources):
                column = [row[j] for row in rows]
                if any(g is None for g in column):
                    jacobians.append(None)
                    continue
                stacked = ef.stack(column) if column else ef.zeros((0, *source.shape))
                jacobians.append(ef.reshape(stacked, (*target.shape, *source.shape)))
        except BaseException:
            self._listen(was_listening)
            raise
        self._done(was_listening)
        return pack_sequence_as(sources, jacobians)

    # --- pictures --------------------------------------------------------------------------
    def records(self) -> list[OpRecord]:
        """What the tape holds, in the order the ops ran: an ``OpRecord`` per op."""
        return [unpack(entry) for entry in self._entries]

    def to_mermaid(self, values: bool = False, target: Any = None) -> str:
        """What the tape recorded, as a Mermaid flowchart (before a non-persistent tape's
        ``gradient()`` frees its records).

        ``values=True`` writes each tensor's value on its node, shortened (``3.0``,
        ``[0.5, -1.0, 2.0, …]``). ``target=loss`` writes each recorded tensor's gradient too,
        d loss / d tensor, as micrograd's ``draw_dot`` shows data and grad. Working those out
        does not use the tape up: ``gradient()`` can still be called once afterwards.
        """
        gradients = None if target is None else self._gradients_of_all(target)
        return to_mermaid(*tape_diagram(self, values, gradients))

    def _gradients_of_all(self, target: Any) -> dict[Tensor, Tensor]:
        """d target / d every floating-point tensor this tape recorded or watched, keyed by
        tensor (for pictures). Leaves the tape as it was: not spent, still recording if it
        was."""
        if self._used:
            raise RuntimeError(
                "this non-persistent GradientTape has computed its gradient and freed its "
                "records: draw it with target= before calling gradient(), or create it with "
                "GradientTape(persistent=True)"
            )
        target = ef.convert_to_tensor(target)
        if target not in self._tracked:
            raise ValueError(
                "target= must be a tensor this tape computed from what it watched, got "
                f"{target!r:.60}"
            )
        sources = {t for t in self._tracked if t.dtype.is_floating}
        was_listening = self._listen(False)  # these ops are not recorded on this tape
        try:
            seeds = initial_gradients([target], None, "target")
            return backprop(self._entries, [target], seeds, sources)
        finally:
            self._listen(was_listening)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter draws the tape's records (see ``mermaid_bundle``)."""
        return mermaid_bundle(self)

    def to_dot(self, values: bool = False, target: Any = None) -> str:
        """What the tape recorded, as Graphviz DOT text (``values`` and ``target`` as for
        ``to_mermaid``)."""
        gradients = None if target is None else self._gradients_of_all(target)
        return to_dot(*tape_diagram(self, values, gradients), name="tape")

    def batch_jacobian(self, target: Any, source: Any) -> Tensor | None:
        """Per-example Jacobians: ``target[b]`` by ``source[b]``, shape
        ``(batch,) + target.shape[1:] + source.shape[1:]``; examples must be independent."""
        target = ef.convert_to_tensor(target)
        batch = target.shape[0]
        if source.shape[0] != batch:
            raise ValueError(
                f"batch_jacobian needs the same batch size, got {format_shape(target.shape)} and "
                f"{format_shape(source.shape)}"
            )
        full = self.jacobian(target, source)
        if full is None:
            return None
        between = (slice(None),) * (target.ndim - 1)
        return ef.stack([full[(b, *between, b)] for b in range(batch)])


__all__ = [
    "Entry",
    "GradientTape",
    "backprop",
    "backward",
    "check_unconnected_gradients",
    "collect",
    "initial_gradients",
    "pack",
    "unpack",
]
