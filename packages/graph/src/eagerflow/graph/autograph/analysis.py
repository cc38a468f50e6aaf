"""What the control-flow converter must know about each ``if``, ``while`` and ``for``.

Turning ``if x > 0: y = 1 else: y = -1`` into ``cond`` means making ``y`` an *output* of
the cond; turning a loop into ``while_loop`` means finding its *loop variables*. Both are
questions about variables, answered here once per function, before any code is rewritten,
and noted on each statement as a ``Scope`` (see ``anno.py``):

- ``modified``: the variables the statement assigns (in this function's scope: a function
  nested in it has variables of its own);
- ``live_out``: those read after the statement, before being assigned again. Only these
  must come out of a ``cond``: a variable the branches use as a scratch value need not;
- ``live_in``: those read in the statement before it assigns them (for a loop: at the start
  of every iteration, so what one iteration leaves for the next is live here);
- ``defined_in``: those that may already have a value when the statement starts.

An attribute the statement assigns (``self.count += 1``) is a *composite* variable, named
``"self.count"``: it is modified like a variable, and always counts as used after, since
whoever holds the object may read it.

Liveness is the classic backward data-flow analysis of compilers: walk the statements
from the last to the first, and a variable is live before a statement if the statement
reads it, or if it is live after the statement and the statement does not assign it. A
loop is walked until what is live at its start stops growing. TensorFlow's AutoGraph runs
the same analyses (its ``static_analysis/liveness.py`` and ``reaching_definitions.py``).

Every answer errs on the safe side: a variable counted as read that is not only costs a
loop variable more; one missed would be lost.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from eagerflow.graph.autograph.anno import getanno, setanno

SCOPE = "scope"  # the annotation key of a statement's Scope
EXTRA_TEST = "extra_test"  # a for loop's extra condition, set by the jump converters

_NESTED_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass(frozen=True)
class Scope:
    """The variables of one ``if``, ``while`` or ``for`` (see the module docs)."""

    modified: frozenset[str]
    live_in: frozenset[str]
    live_out: frozenset[str]
    defined_in: frozenset[str]


def scope_of(statement: ast.stmt) -> Scope:
    """The Scope ``analyze`` noted on ``statement``."""
    scope = getanno(statement, SCOPE)
    if scope is None:
        raise LookupError(f"no scope analysis for the statement at line {statement.lineno}")
    return scope


def analyze(function: ast.FunctionDef) -> None:
    """Note a ``Scope`` on every ``if``, ``while`` and ``for`` of ``function`` and of the
    functions nested in it (each analyzed as a scope of its own)."""
    _FunctionAnalysis(function).run()
    for node in ast.walk(function):
        if isinstance(node, ast.FunctionDef) and node is not function:
            _FunctionAnalysis(node).run()


def declared_global(function: ast.FunctionDef) -> frozenset[str]:
    """The names ``function`` declares ``global`` (its nested functions not included)."""
    return frozenset(
        name
        for node in _own_nodes(function.body)
        if isinstance(node, ast.Global)
        for name in node.names
    )


# --- the names a piece of code binds and reads ------------------------------------------------
def stores(node: ast.AST | None) -> set[str]:
    """The names ``node`` binds in its function's scope: assignment targets, loop targets,
    ``with ... as``, ``except ... as``, imports, and the names of nested functions and
    classes (but nothing bound *inside* those, nor in a comprehension, which has a scope of
    its own except for ``:=``)."""
    found: set[str] = set()
    if node is not None:
        _collect_stores(node, found)
    return found


def _collect_stores(node: ast.AST, found: set[str]) -> None:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        found.add(node.name)
        return
    if isinstance(node, ast.Lambda):
        return
    if isinstance(node, _COMPREHENSIONS):
        found.update(n.target.id for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
        return
    found.update(_names_bound_by(node))
    for child in ast.iter_child_nodes(node):
        _collect_stores(child, found)


def _names_bound_by(node: ast.AST) -> list[str]:
    """The names ``node`` itself binds (not its children): an assigned name or attribute
    chain, an import, an ``except ... as`` or a ``match`` capture."""
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return [node.id]
    if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
        name = dotted_name(node)  # `self.count = ...`: a *composite* variable, see `Scope`
        return [name] if name else []
    if isinstance(node, ast.Import | ast.ImportFrom):
        return [(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"]
    if isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    return []


def dotted_name(node: ast.expr) -> str | None:
    """``"self.layer.count"`` for that attribute chain on a variable; None for anything else
    (``f().x``, ``x[0].y``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def is_composite(name: str) -> bool:
    """Whether a state name is an attribute (``self.count``), not a variable."""
    return "." in name


def loads(node: ast.AST | None) -> set[str]:
    """The names ``node`` reads, also inside nested functions and comprehensions (where a
    name may be a local of its own: counting it anyway is the safe side)."""
    if node is None:
        return set()
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
    found = {n.id for n in names if isinstance(n.ctx, ast.Load)}
    found.update(  # `x += 1` reads x, though its target is a store
        n.target.id
        for n in ast.walk(node)
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)
    )
    return found


def _loads_all(nodes: Iterable[ast.AST | None]) -> set[str]:
    return set().union(*(loads(n) for n in nodes))


def _own_nodes(statements: Sequence[ast.stmt]) -> Iterable[ast.AST]:
    """Every node of ``statements``, not entering nested functions or classes."""
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, _NESTED_SCOPES):
            pending.extend(ast.iter_child_nodes(node))


# --- one function -----------------------------------------------------------------------------
class _FunctionAnalysis:
    def __init__(self, function: ast.FunctionDef) -> None:
        self.function = function
        # Variables a nested function reads are read whenever it is called, which may be
        # anywhere later: they count as live everywhere.
        nested = [n for n in _own_nodes(function.body) if isinstance(n, _NESTED_SCOPES)]
        self.closure_reads = frozenset(_loads_all(nested))
        self.live: dict[ast.stmt, tuple[frozenset[str], frozenset[str]]] = {}  # in, out

    def run(self) -> None:
        self._live_before(self.function.body, frozenset())
        arguments = self.function.args
        parameters = {a.arg for a in [*arguments.posonlyargs, *arguments.args,
                                      *arguments.kwonlyargs]}  # fmt: skip
        parameters.update(a.arg for a in (arguments.vararg, arguments.kwarg) if a)
        self._defined_after(self.function.body, frozenset(parameters))

    # Liveness, backwards: what is live before ``statements`` given what is live after.
    def _live_before(self, statements: Sequence[ast.stmt], after: frozenset[str]) -> frozenset[str]:
        live = after | self.closure_reads
        for statement in reversed(statements):
            live = self._live_before_statement(statement, live) | self.closure_reads
        return live

    def _live_before_statement(self, node: ast.stmt, after: frozenset[str]) -> frozenset[str]:
        if isinstance(node, ast.If):
            live_in = (
                loads(node.test)
                | self._live_before(node.body, after)
                | self._live_before(node.orelse, after)
            )
            self.live[node] = (frozenset(live_in), after)
            return frozenset(live_in)
        if isinstance(node, ast.While):
            exit_live = loads(node.test) | self._live_before(node.orelse, after)
            head = self._loop_head(exit_live, node.body, set())
            self.live[node] = (head, after)
            return head
        if isinstance(node, ast.For):
            exit_live = loads(getanno(node, EXTRA_TEST)) | self._live_before(node.orelse, after)
            head = self._loop_head(exit_live, node.body, stores(node.target))
            self.live[node] = (head, after)
            return frozenset(loads(node.iter) | head)
        if isinstance(node, ast.With | ast.AsyncWith):
            body = self._live_before(node.body, after)
            targets = set().union(*(stores(item.optional_vars) for item in node.items))
            return frozenset((body - targets) | _loads_all(i.context_expr for i in node.items))
        if isinstance(node, ast.Try | ast.TryStar):
            return self._live_before_try(node, after)
        if isinstance(node, ast.Match):
            cases = [self._live_before(c.body, after) | loads(c.guard) | loads(c.pattern)
                     for c in node.cases]  # fmt: skip
            return frozenset(loads(node.subject) | after | set().union(*cases))
        if isinstance(node, ast.Return | ast.Raise):
            return frozenset(loads(node))  # nothing after it runs
        return frozenset((after - stores(node)) | loads(node))

    def _loop_head(
        self, exit_live: set[str], body: Sequence[ast.stmt], assigned_first: set[str]
    ) -> frozenset[str]:
        """What is live at the start of each iteration: what leaving the loop needs, and what
        the body reads before assigning, with the next iteration's needs live at its end.
        Walked until it stops growing (``assigned_first``: the for loop's target)."""
        head = frozenset(exit_live)
        while True:
            grown = head | (self._live_before(body, head) - assigned_first)
            if grown == head:
                return head
            head = grown

    def _live_before_try(
        self, node: ast.Try | ast.TryStar, after: frozenset[str]
    ) -> frozenset[str]:
        # Any statement of the body may raise into a handler: the safe side is that all of
        # them may be followed by any handler, the else block and the finally block.
        final = self._live_before(node.finalbody, after)
        handlers = set().union(*(self._live_before(h.body, final) | loads(h.type)
                                 for h in node.handlers))  # fmt: skip
        orelse = self._live_before(node.orelse, final)
        return self._live_before(node.body, orelse | handlers | final) | handlers

    # Definitions, forwards: which variables may have a value after ``statements``. Only
    # earlier statements count, not a loop's previous iteration: a converted loop body is
    # a function, whose own variables start afresh each iteration.
    def _defined_after(
        self, statements: Sequence[ast.stmt], before: frozenset[str]
    ) -> frozenset[str]:
        defined = before
        for statement in statements:
            defined = self._defined_after_statement(statement, defined)
        return defined

    def _defined_after_statement(self, node: ast.stmt, before: frozenset[str]) -> frozenset[str]:
        if isinstance(node, ast.If | ast.While | ast.For):
            self._note_scope(node, before)
        if isinstance(node, ast.If):
            return self._defined_after(node.body, before) | self._defined_after(node.orelse, before)
        if isinstance(node, ast.While):
            body = self._defined_after(node.body, before)
            return self._defined_after(node.orelse, body)
        if isinstance(node, ast.For):
            body = self._defined_after(node.body, before | stores(node.target))
            return self._defined_after(node.orelse, body)
        if isinstance(node, ast.With | ast.AsyncWith):
            targets = set().union(*(stores(item.optional_vars) for item in node.items))
            return self._defined_after(node.body, before | targets)  # the `as` names first
        blocks = _blocks(node)
        if blocks:  # try, match: any of their blocks may have run
            return before.union(*(self._defined_after(b, before) for b in blocks), stores(node))
        return before | stores(node)

    def _note_scope(self, node: ast.If | ast.While | ast.For, defined: frozenset[str]) -> None:
        live_in, live_out = self.live[node]
        if isinstance(node, ast.If):
            modified = stores(node)
        else:  # a loop's else block runs once, after it: not part of any iteration
            modified = stores(node.target) if isinstance(node, ast.For) else stores(node.test)
            modified |= set().union(*(stores(s) for s in node.body))
        # An attribute may be read anywhere the object is (by a method, after a return):
        # one the statement assigns counts as used after it.
        live_out |= {name for name in modified if is_composite(name)}
        setanno(node, SCOPE, Scope(frozenset(modified), live_in, live_out, defined))


def _blocks(node: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists inside a ``try`` or ``match`` (empty for other statements)."""
    if isinstance(node, ast.Try | ast.TryStar):
        return [node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody]
    if isinstance(node, ast.Match):
        return [c.body for c in node.cases]
    return []


__all__ = [
    "EXTRA_TEST",
    "SCOPE",
    "Scope",
    "analyze",
    "declared_global",
    "dotted_name",
    "is_composite",
    "loads",
    "scope_of",
    "stores",
]
