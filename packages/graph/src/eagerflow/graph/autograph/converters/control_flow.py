"""``if``, ``while`` and ``for`` become calls of ``ag__.if_stmt``, ``while_stmt``, ``for_stmt``.

Each block becomes a function, and the statement a call that hands the functions to a
runtime helper (``operators.py``), which looks at the condition *when it runs*: a Python
value runs the functions as Python would; a tensor builds a ``cond`` or ``while_loop``::

    if x > 0:                            y = ag__.Undefined('y')
        y = x                            def get_state():
    else:                                    return (y,)
        y = -x                           def set_state(vars_):
                                             nonlocal y
                            ->               y, = vars_
                                         def if_body():
                                             nonlocal y
                                             y = x
                                         def else_body():
                                             nonlocal y
                                             y = -x
                                         ag__.if_stmt(x > 0, if_body, else_body,
                                                      get_state, set_state, ('y',), 1)

The block functions change the variables of the enclosing function directly (``nonlocal``),
so a Python ``if`` behaves exactly as before. A ``cond`` needs the variables as values:
``get_state`` reads them and ``set_state`` writes them, so the helper can hand ``y`` in
and out of each branch. Which variables those are (the *state*) comes from the analysis
(``analysis.py``): for an ``if``, those it assigns that are used after it (its outputs,
the first ``nouts``) or read in it before being assigned; for a loop, those it assigns
that one iteration leaves for the next or that are used after it. A variable of the state
that has no value yet is first set to ``ag__.Undefined('y')``, so that ``nonlocal`` finds
it and the helper can tell it has none.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any, NamedTuple

from eagerflow.graph.autograph.analysis import (
    EXTRA_TEST,
    Scope,
    declared_global,
    is_composite,
    scope_of,
)
from eagerflow.graph.autograph.anno import getanno
from eagerflow.graph.autograph.naming import Namer
from eagerflow.graph.autograph.templates import locate, replace, replace_as_expression


class ControlFlowTransformer(ast.NodeTransformer):
    """Turns ``if``, ``while`` and ``for`` into calls of ``ag__.if_stmt``, ``ag__.while_stmt``
    and ``ag__.for_stmt``."""

    def __init__(self, namer: Namer) -> None:
        self.namer = namer
        self.globals: list[frozenset[str]] = []  # the `global` names of each function entered
        self._vars_name: str | None = None  # set_state's parameter
        self._item_name: str | None = None  # a for loop body's parameter, when it needs one

    # --- scopes ---------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        self.globals.append(declared_global(node))
        try:
            self.generic_visit(node)  # inner statements first: they end up inside the blocks
        finally:
            self.globals.pop()
        return node

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> Any:
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        return node

    # --- the three statements ----------------------------------------------------------
    # Each names its functions before converting the statements inside, so that an outer
    # statement's are `if_body`, an inner one's `if_body_1`.
    def visit_If(self, node: ast.If) -> Any:
        scope = scope_of(node)
        outputs = sorted(scope.modified & scope.live_out)
        inputs = sorted((scope.modified & scope.live_in) - scope.live_out)
        state = [*outputs, *inputs]
        names = self.new_names("if_body", "else_body" if node.orelse else None, state)
        self.generic_visit(node)
        functions = self.block_function(names.body, [], state, node.body)
        orelse: ast.expr = ast.Constant(value=None)
        if node.orelse:
            functions += self.block_function(names.orelse, [], state, node.orelse)
            orelse = _name(names.orelse)
        arguments = [node.test, _name(names.body), orelse]
        state_functions, state_arguments = self.state(state, names, nouts=len(outputs))
        call = _call("if_stmt", *arguments, *state_arguments)
        return self.replacement(node, scope, state, [*state_functions, *functions, call])

    def visit_While(self, node: ast.While) -> Any:
        options = _take_loop_options(node)
        scope = scope_of(node)
        state = sorted(scope.modified & (scope.live_in | scope.live_out))
        names = self.new_names("loop_body", None, state)
        self.generic_visit(node)
        body = self.block_function(names.body, [], state, node.body)
        state_functions, state_arguments = self.state(state, names)
        call = _call("while_stmt", _lambda(node.test), _name(names.body), *state_arguments)
        _add_options(call, options)
        statements = [*state_functions, *body, call]
        return [*self.replacement(node, scope, state, statements), *node.orelse]

    def visit_For(self, node: ast.For) -> Any:
        options = _take_loop_options(node)
        scope = scope_of(node)
        state = sorted(scope.modified & (scope.live_in | scope.live_out))
        names = self.new_names("loop_body", None, state)
        self.generic_visit(node)
        target, statements = node.target, list(node.body)
        if isinstance(target, ast.Name) and target.id not in state:
            parameter = target.id  # `def loop_body(i):`
        else:  # a tuple target, or one used after the loop: assigned from the item
            parameter = self.item_name()
            statements[:0] = replace("target = item", target=target, item=parameter)
        body = self.block_function(names.body, [parameter], state, statements)
        extra_test = getanno(node, EXTRA_TEST)
        state_functions, state_arguments = self.state(state, names)
        call = _call(
            "for_stmt",
            node.iter,
            ast.Constant(value=None) if extra_test is None else _lambda(extra_test),
            _name(names.body),
            *state_arguments,
        )
        _add_options(call, options)
        statements = [*state_functions, *body, call]
        return [*self.replacement(node, scope, state, statements), *node.orelse]

    # --- the pieces -------------------------------------------------------------------------
    def new_names(self, body: str, orelse: str | None, state: Sequence[str]) -> _Names:
        """Names for a statement's functions (and for its state functions, if it has state)."""
        return _Names(
            self.namer.new(body),
            self.namer.new(orelse) if orelse else "",
            self.namer.new("get_state") if state else "",
            self.namer.new("set_state") if state else "",
        )

    def block_function(
        self, name: str, parameters: list[str], state: Sequence[str], body: list[ast.stmt]
    ) -> list[ast.stmt]:
        """``def name(parameter):`` running ``body`` on the enclosing function's variables."""
        global_names, nonlocal_names = self.declarations(state)
        template = (
            "def name(parameter):\n" if parameters else "def name():\n"
        ) + "    global global_names\n    nonlocal nonlocal_names\n    body"
        return replace(
            template,
            name=name,
            parameter=parameters[0] if parameters else "",
            global_names=global_names,
            nonlocal_names=nonlocal_names,
            body=body,
        )

    def state(
        self, state: Sequence[str], names: _Names, nouts: int | None = None
    ) -> tuple[list[ast.stmt], list[ast.expr]]:
        """``get_state`` and ``set_state`` (the state variables as one tuple, out and in), and
        the helper call's last arguments: ``get_state, set_state, names[, nouts]``. No
        state: nothing at all (the helpers' defaults)."""
        if not state:
            return [], []
        global_names, nonlocal_names = self.declarations(state)
        functions = replace(
            "def get_state():\n"
            "    return values_out\n"
            "def set_state(values):\n"
            "    global global_names\n"
            "    nonlocal nonlocal_names\n"
            "    values_in = values",
            get_state=names.get_state,
            set_state=names.set_state,
            values=self.vars_name(),
            values_out=ast.Tuple(elts=[_read(s) for s in state], ctx=ast.Load()),
            values_in=ast.Tuple(elts=[_variable(s, ast.Store()) for s in state], ctx=ast.Store()),
            global_names=global_names,
            nonlocal_names=nonlocal_names,
        )
        arguments: list[ast.expr] = [
            _name(names.get_state),
            _name(names.set_state),
            ast.Tuple(elts=[ast.Constant(value=s) for s in state], ctx=ast.Load()),
        ]
        if nouts is not None:
            arguments.append(ast.Constant(value=nouts))
        return functions, arguments

    def replacement(
        self, node: ast.stmt, scope: Scope, state: Sequence[str], statements: list[ast.stmt]
    ) -> list[ast.stmt]:
        """What replaces ``node``: its state variables that have no value yet set to
        ``ag__.Undefined``, then ``statements``; all placed at ``node``'s line."""
        undefined = [
            statement
            for name in state
            if name not in scope.defined_in
            and name not in self.current_globals()
            and not is_composite(name)  # an attribute may exist: `_read` checks
            for statement in replace(f"name = ag__.Undefined({name!r})", name=name)
        ]
        result = [*undefined, *statements]
        locate(result, node)
        return result

    def declarations(self, state: Sequence[str]) -> tuple[list[str], list[str]]:
        """The state's variables split into names to declare ``global`` and ``nonlocal``
        (an attribute needs neither: its object is what the block reads)."""
        globals_ = self.current_globals()
        variables = [s for s in state if not is_composite(s)]
        return [s for s in variables if s in globals_], [s for s in variables if s not in globals_]

    def current_globals(self) -> frozenset[str]:
        return self.globals[-1] if self.globals else frozenset()

    def vars_name(self) -> str:
        if self._vars_name is None:
            self._vars_name = self.namer.new("vars_")
        return self._vars_name

    def item_name(self) -> str:
        if self._item_name is None:
            self._item_name = self.namer.new("itr")
        return self._item_name


class _Names(NamedTuple):
    body: str
    orelse: str
    get_state: str
    set_state: str


def _take_loop_options(node: ast.While | ast.For) -> ast.expr | None:
    """The loop's ``set_loop_options(...)`` call (its first statement), taken out of the
    body: the helper gets its result as ``opts=`` (see ``experimental.py``)."""
    first = node.body[0]
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)):
        return None
    call = first.value
    function = call.args[0] if _name_of(call.func) == "converted_call" and call.args else call.func
    if _name_of(function) != "set_loop_options":
        return None
    node.body = node.body[1:] or [ast.Pass()]
    return first.value


def _name_of(function: ast.expr) -> str:
    """``f`` for ``f`` or ``module.f``."""
    return function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")


def _add_options(call: ast.stmt, options: ast.expr | None) -> None:
    if options is not None:
        assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
        call.value.keywords.append(ast.keyword(arg="opts", value=options))


def _call(helper: str, *arguments: ast.expr) -> ast.stmt:
    """The statement ``ag__.helper(arguments)``."""
    function = ast.Attribute(value=_name("ag__"), attr=helper, ctx=ast.Load())
    return ast.Expr(value=ast.Call(func=function, args=list(arguments), keywords=[]))


def _name(identifier: str) -> ast.Name:
    return ast.Name(id=identifier, ctx=ast.Load())


def _variable(name: str, ctx: ast.expr_context) -> ast.expr:
    """``y``, or ``self.count`` for a composite name, as an expression."""
    *bases, last = name.split(".")
    if not bases:
        return ast.Name(id=last, ctx=ctx)
    return ast.Attribute(value=_variable(".".join(bases), ast.Load()), attr=last, ctx=ctx)


def _read(name: str) -> ast.expr:
    """How ``get_state`` reads a state variable: an attribute that may not exist yet reads
    as ``ag__.Undefined``, as a variable without a value does."""
    if not is_composite(name):
        return _name(name)
    base, attribute = name.rsplit(".", 1)
    return replace_as_expression(
        f"getattr(base, {attribute!r}, ag__.Undefined({name!r}))",
        base=_variable(base, ast.Load()),
    )


def _lambda(expression: ast.expr) -> ast.expr:
    return replace_as_expression("lambda: expression", expression=expression)


def transform(node: ast.FunctionDef, namer: Namer) -> ast.FunctionDef:
    """``node`` with its ``if``, ``while`` and ``for`` statements turned into helper calls
    (``analysis.analyze`` must have run on it)."""
    converted = ControlFlowTransformer(namer).visit(node)
    assert isinstance(converted, ast.FunctionDef)
    return converted


__all__ = ["ControlFlowTransformer", "transform"]
