"""Chapter 10 exercises — run `.venv/bin/pytest -m ch10`.

AutoGraph: what it does to an ``if`` on a tensor, once by hand with ``cond``, once as a
small ``ast.NodeTransformer``.

Reference solutions: the same functions as `exercises/ch10.py`, solved.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

from eagerflow.graph import (
    SymbolicTensor,
    cond,
)
from eagerflow.tensor import Tensor


# --- AutoGraph by hand ----------------------------------------------------------------------------
def bounce(position: Any, velocity: Any, floor: Any) -> tuple[Any, Any, Any]:
    """Given, not an exercise: one time step of a ball falling onto a floor, written eagerly.

    The ball moves by ``velocity``. If that takes it below ``floor``, it bounces: it is
    mirrored back above the floor and its velocity turns round, losing a fifth of its
    speed. Returns the new position, the new velocity and how many bounces happened (0 or
    1). Its ``if`` decides on a tensor: eagerly that works, in a graph it needs ``cond``
    (``print(autograph.to_code(bounce))`` shows how AutoGraph converts it).
    """
    position = position + velocity
    if position < floor:
        position = 2 * floor - position
        velocity = -velocity * 0.8
        bounces = 1
    else:
        bounces = 0
    return position, velocity, bounces


def bounce_with_cond(position: Tensor, velocity: Tensor, floor: Tensor) -> tuple[Any, Any, Any]:
    """★★ ``bounce``, with its ``if`` turned into ``cond`` by hand, as AutoGraph would.

    ``bounce``, given above in this file, is one time step of a ball falling onto a floor::

        def bounce(position, velocity, floor):
            position = position + velocity
            if position < floor:
                position = 2 * floor - position
                velocity = -velocity * 0.8
                bounces = 1
            else:
                bounces = 0
            return position, velocity, bounces

    Return the same three values, as tensors, for float32 scalar tensors: the test traces
    your function with ``function(bounce_with_cond, autograph=False)``, so no Python ``if``
    on a tensor may remain, and checks that the graph has an ``If`` node and gives
    ``bounce``'s eager results on inputs of its own.

    ``autograph.to_code(bounce)`` shows the recipe. Each branch becomes a function, and
    what the two branches hand on are the variables the ``if`` assigns and the code after
    it uses: ``bounces``, ``position`` and ``velocity``. A branch that does not assign one of
    them (the ``else`` leaves ``velocity`` alone) returns its value from before the ``if``.

    Args:
        position: The ball's height (float32 scalar tensor).
        velocity: Its velocity, negative when it falls (float32 scalar tensor).
        floor: The floor's height (float32 scalar tensor).

    Returns:
        ``(position, velocity, bounces)``: the first two float32, ``bounces`` an int32 0 or 1.

    Hint 1:
        ``print(autograph.to_code(bounce))`` shows the recipe: each branch becomes a function of
        no arguments that returns every variable the ``if`` assigns.

    Hint 2:
        Move the ball before testing where it is. The ``else`` branch hands on ``position`` and
        ``velocity`` unchanged. A lambda can return a tuple, and Python numbers become
        constants.

    Hint 3:
        ``position = position + velocity``, then ``return cond(position < floor, lambda: (2 *
        floor - position, -velocity * 0.8, 1), lambda: (position, velocity, 0))``.
    """
    position = position + velocity
    return cond(
        position < floor,
        lambda: (2 * floor - position, -velocity * 0.8, 1),  # it bounces
        lambda: (position, velocity, 0),  # velocity as it was before the if
    )


def ag_if(test: Any, if_true: Callable[[], Any], if_false: Callable[[], Any], names: Any) -> Any:
    """Given, not an exercise: the runtime helper the ``if`` statements that ``if_to_ag_if``
    converts call (AutoGraph's is ``ag__.if_stmt``).

    On a symbolic tensor it builds an ``If`` node with ``cond``, from both branches. On a
    Python value or an eager tensor it is Python's ``if``: only the chosen branch runs,
    and a ``training=True`` flag does not become a node. ``names`` are the variables the
    ``if`` assigns, in the order of the tuples the branches return; AutoGraph uses them in
    its error messages.
    """
    if isinstance(test, SymbolicTensor):
        return cond(test, if_true, if_false)
    return if_true() if test else if_false()


def if_to_ag_if(tree: ast.AST) -> ast.AST:
    """★★★ A mini AutoGraph: every ``if`` of ``tree`` that only assigns names becomes ``ag_if``.

    Rewrite each ``if`` statement whose branches (the ``if`` and the ``else``, which may be
    missing) hold nothing but assignments of one name each, ``name = expression``, into one
    assignment of all the names it assigns, in sorted order, from a call of ``ag_if``::

        def relu_and_flag(x):
            if x > 0:
                y = x
                active = 1
            else:
                y = x * 0.0
                active = 0
            return y, active

    becomes (as ``ast.unparse`` shows the new tree)::

        def relu_and_flag(x):
            active, y = ag_if(x > 0, lambda: (1, x), lambda: (0, x * 0.0), ('active', 'y'))
            return (y, active)

    Each branch becomes a lambda that returns, for every name in order, the expression the
    branch assigns to it, or the name itself when the branch does not assign it (its value
    from before the ``if``). Leave every other ``if`` as it is, with every statement of its
    branches (one with a call, a ``return``, a nested ``if``, ``a.b = ...``, ``a, b = ...``
    or ``x += ...`` in a branch), and convert the ``if`` statements wherever they are in the
    function: in a ``for`` or ``while`` body too. Build it yourself: the tests refuse
    eagerflow's own AutoGraph (``eagerflow.graph.autograph``: ``convert``, its converters,
    ``if_stmt``).
    A branch assigns each name once, and its expressions read values from before the ``if``
    (a lambda computes them all from those), as in the test's functions.

    ``convert_ifs`` (below in this file) compiles the changed tree into a function, for you
    to try yours. The test does the same with functions of its own, and runs them eagerly
    and traced with ``autograph=False``, so that your ``ag_if`` calls do all the work.

    Args:
        tree: A module holding one function definition, as ``ast.parse`` gives it.

    Returns:
        The changed tree (changing ``tree`` itself is fine).

    Hint 1:
        An ``ast.NodeTransformer`` whose ``visit_If`` returns either the ``if`` unchanged or the
        statement that replaces it.

    Hint 2:
        Call ``self.generic_visit(node)`` first (it converts what is inside, loops included).
        Convert only when every statement of both branches is an ``ast.Assign`` to one
        ``ast.Name``. A branch's lambda returns, for each sorted name, the expression it
        assigns, or ``ast.Name(name, ast.Load())``.

    Hint 3:
        ``print(ast.dump(ast.parse("a, b = f(lambda: (1, x))"), indent=2))`` shows the nodes to
        build. A lambda of no arguments is ``ast.Lambda(args=ast.arguments(posonlyargs=[],
        args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=...)``;
        ``ast.copy_location(new, node)`` gives the new statement the old one's line.
    """

    class IfToAgIf(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> ast.stmt:
            self.generic_visit(node)  # an if in a branch first (this one then stays an if)
            statements = [*node.body, *node.orelse]
            if not all(_assigns_one_name(s) for s in statements):
                return node
            names = sorted({s.targets[0].id for s in statements})  # type: ignore[attr-defined]
            call = ast.Call(
                func=ast.Name("ag_if", ast.Load()),
                args=[
                    node.test,
                    _branch(node.body, names),
                    _branch(node.orelse, names),
                    ast.Tuple([ast.Constant(name) for name in names], ast.Load()),
                ],
                keywords=[],
            )
            targets = ast.Tuple([ast.Name(name, ast.Store()) for name in names], ast.Store())
            return ast.copy_location(ast.Assign(targets=[targets], value=call), node)

    return IfToAgIf().visit(tree)


def _assigns_one_name(statement: ast.stmt) -> bool:
    """``name = expression``: an assignment to a single plain name."""
    return (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    )


def _branch(statements: list[ast.stmt], names: list[str]) -> ast.Lambda:
    """``lambda: (...)``: for each name, what the branch assigns it, or its current value."""
    assigned = {s.targets[0].id: s.value for s in statements}  # type: ignore[attr-defined]
    values = [assigned.get(name, ast.Name(name, ast.Load())) for name in names]
    no_arguments = ast.arguments(
        posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]
    )
    return ast.Lambda(args=no_arguments, body=ast.Tuple(values, ast.Load()))


def convert_ifs(f: Callable[..., Any]) -> Callable[..., Any]:
    """Given, not an exercise: ``f`` with its ``if`` statements converted by ``if_to_ag_if``.

    Reads ``f``'s source, parses it, lets ``if_to_ag_if`` change the tree, and compiles it
    again into a function that can call ``ag_if`` (``f`` must be defined in a file, at the top
    level of a module). Try it: ``print(ast.unparse(...))`` of the tree shows your code, and
    ``function(convert_ifs(f), autograph=False)`` traces it.
    """
    tree = ast.parse(textwrap.dedent(inspect.getsource(f)))
    tree.body[0].decorator_list = []  # type: ignore[attr-defined]
    tree = ast.fix_missing_locations(if_to_ag_if(tree))
    namespace = {**f.__globals__, "ag_if": ag_if}
    exec(compile(tree, inspect.getsourcefile(f) or "<converted>", "exec"), namespace)
    return namespace[f.__name__]  # type: ignore[no-any-return]
