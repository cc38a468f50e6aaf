"""Chapter 8 exercises — run `.venv/bin/pytest -m ch08`.

From eager to graph: the signature that decides when ``@function`` traces again, a
``@function`` of your own built on it (a trace cache, a Graph, a Session), a training step
traced once, two of the Session's graph optimizations written by hand
(constant folding and common-subexpression elimination), and what AutoGraph does to an
``if`` on a tensor: once by hand with ``cond``, once as a small ``ast.NodeTransformer``;
and (a stretch) a ``@function`` that relaxes shapes instead of tracing each one.

Reference solutions: the same functions as `exercises/ch08.py`, solved.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import (
    Function,
    Graph,
    Session,
    SymbolicTensor,
    cond,
    function,
    placeholder,
)
from eagerflow.tensor import Tensor


def signature(*args: Any) -> tuple[Any, ...]:
    """★★ The key ``@function`` looks its traced graphs up by: equal keys, no new trace.

    A traced graph has a placeholder for each tensor argument, with the tensor's dtype and
    shape: it serves any tensor with that dtype and shape, whatever its values. Any other
    argument (a Python number, a string, ``None``, …) was used as a plain Python value
    while tracing and is baked into the graph: the graph is good for that value only.

    So describe each argument by

    - ``("tensor", dtype, shape)`` for a tensor (``shape`` a tuple). A NumPy array counts
      as the tensor it converts to;
    - ``("value", type(arg), arg)`` for anything else (assume it is hashable);

    and return the tuple of the descriptions, in order. For arguments like these, a call of
    a ``Function`` traces a new graph exactly when its signature differs from the signature
    of every earlier call.

    Args:
        *args: The positional arguments of a call.

    Returns:
        A hashable tuple, one entry per argument.

    Hint 1:
        One description per argument: a tensor by what a placeholder for it needs, anything else
        by its value.

    Hint 2:
        Convert a NumPy array to a tensor first. Keep a value's type in its description:
        ``2 == 2.0 == True`` in Python, but they trace differently.

    Hint 3:
        ``("tensor", t.dtype, tuple(t.shape))`` or ``("value", type(arg), arg)``, all in a
        tuple. Compare with ``_signature_of`` in
        ``packages/graph/src/eagerflow/graph/tracing/function.py``.
    """
    key = []
    for arg in args:
        if isinstance(arg, np.ndarray):
            arg = ef.convert_to_tensor(arg)
        if isinstance(arg, Tensor):
            key.append(("tensor", arg.dtype, tuple(arg.shape)))
        else:
            key.append(("value", type(arg), arg))
    return tuple(key)


def mini_function(fn: Callable[..., Any]) -> Callable[..., Tensor]:
    """★★★ ``@function`` in a few lines: trace into a Graph once per signature, run a Session.

    Return a function ``call(*args)`` that computes ``fn(*args)`` as ``@function`` would:

    1. it looks the ``signature`` of the arguments (yours, from above) up in a cache of its
       own; on a miss it *traces*: it makes a ``Graph``, and inside ``graph.as_default()``
       calls ``fn`` with a ``placeholder`` of the right dtype and shape for each tensor
       argument (a NumPy array counts as a tensor) and the other arguments as they are.
       The graph, the placeholders and ``fn``'s result go in the cache;
    2. on every call, it runs the cached graph's result with a ``Session``, feeding each
       placeholder the value of its argument, and returns the value as an eager tensor.

    So ``fn`` runs (traces) once per new signature, never on a cache hit; the tests count
    its calls on hidden sequences of calls, and compare the values (and dtypes) with ``fn``
    run eagerly. They also swap your ``signature`` for others, to check that the cache's key
    is what ``signature`` returns, no more and no less. ``fn`` returns one tensor.

    Args:
        fn: A function of tensors and plain Python values, written with eagerflow ops.

    Returns:
        The traced version of ``fn``.

    Hint 1:
        A dictionary from signatures to what tracing made: a graph, its placeholders (in the
        order of the tensor arguments) and the symbolic result.

    Hint 2:
        ``placeholder(t.dtype, tuple(t.shape))`` inside ``with graph.as_default():`` for each
        tensor argument; on each call ``Session(graph).run(result, feeds)`` with ``feeds`` a
        dictionary from placeholder to ``np.asarray(arg)``.

    Hint 3:
        In ``call``: ``key = signature(*args)``; if it is not in the cache, trace: build
        ``inputs`` (a placeholder or the argument itself), ``result = fn(*inputs)`` under
        ``graph.as_default()``, and store ``(graph, placeholders, result)``; then feed the
        tensor arguments, in order, and ``return ef.constant(session.run(result, feeds))``.
    """
    cache: dict[tuple[Any, ...], tuple[Graph, list[SymbolicTensor], Any]] = {}

    def call(*args: Any) -> Tensor:
        args = tuple(ef.convert_to_tensor(a) if isinstance(a, np.ndarray) else a for a in args)
        tensors = [a for a in args if isinstance(a, Tensor)]
        key = signature(*args)
        if key not in cache:
            graph = Graph()
            with graph.as_default():
                placeholders = [placeholder(t.dtype, tuple(t.shape)) for t in tensors]
                fed = iter(placeholders)
                inputs = [next(fed) if isinstance(a, Tensor) else a for a in args]
                result = fn(*inputs)
            cache[key] = (graph, placeholders, result)
        graph, placeholders, result = cache[key]
        feeds = {p: np.asarray(t) for p, t in zip(placeholders, tensors, strict=True)}
        with Session(graph) as session:
            return ef.constant(session.run(result, feeds))

    return call


def train_step_function(w: Variable, b: Variable, learning_rate: float) -> Function:
    """★★ A traced training step for the line ``y ≈ w·x + b``: eager code, graph speed.

    Return a ``Function`` (write the step as a Python function and decorate it with
    ``@function``) ``step(x, y)`` that, for float32 vectors ``x`` and ``y``:

    1. computes the mean squared error ``mean((w·x + b − y)²)`` under a GradientTape;
    2. takes the gradients of the loss by ``w`` and ``b``;
    3. does one step of gradient descent: ``w -= learning_rate·dw`` and the same for ``b``;
    4. returns the loss (computed before the update).

    Called again with vectors of the same length, it must not trace again: the test calls
    it many times and checks ``step.trace_count``.

    Args:
        w: An eager float32 scalar Variable.
        b: An eager float32 scalar Variable.
        learning_rate: The step size.

    Returns:
        The traced step function.

    Hint 1:
        Write the step as plain eager code, then wrap it with ``function``.

    Hint 2:
        Define ``step(x, y)`` inside this function, using ``w``, ``b`` and ``learning_rate``
        from the enclosing scope: the tape, the gradients and the ``assign_sub`` calls all go in
        it, so they become part of the graph.

    Hint 3:
        In ``step``: the loss under ``with GradientTape() as tape:``,
        ``dw, db = tape.gradient(loss, [w, b])``, ``w.assign_sub(learning_rate * dw)`` (and
        ``b``'s), ``return loss``. Then ``return function(step)``.
    """

    @function
    def step(x: Tensor, y: Tensor) -> Tensor:
        with GradientTape() as tape:
            err = w * x + b - y
            loss = ef.reduce_mean(err * err)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(learning_rate * dw)
        b.assign_sub(learning_rate * db)
        return loss

    return step


def fold_constants(graph: Graph) -> dict[str, Any]:
    """★★★ Constant folding: every value of ``graph`` known before anything is fed or run.

    Visit the operations in graph order (``graph.get_operations()``). An operation's
    outputs are known when the operation is *pure* and all its inputs are known:

    - pure: not stateful (``operation.op_def.stateful`` is false: no random numbers, no
      variable reads or writes), not a ``Placeholder`` (its value comes from the feed), and
      without ``control_inputs`` (it must wait for something that runs);
    - a ``Const`` is pure and has no inputs, so it is known: its kernel returns its value.

    Compute a known operation's outputs by calling its kernel on its inputs' known values:
    ``operation.op_def.kernel(*values, **operation.attrs)`` (a tuple of results when
    ``operation.op_def.multi_output``).

    Args:
        graph: A graph.

    Returns:
        ``{tensor name: value}`` for every known tensor, such as ``{"Const:0": 2.0, …}``.

    Hint 1:
        One pass in graph order is enough: every operation comes after the operations that make
        its inputs.

    Hint 2:
        A dict ``known`` from tensor to value. An operation is folded when it is pure (not
        stateful, not a ``Placeholder``, no ``control_inputs``) and all its inputs are in
        ``known``.

    Hint 3:
        ``result = operation.op_def.kernel(*(known[t] for t in operation.inputs),
        **operation.attrs)``; store each output (a tuple of them when ``multi_output``); return
        ``{t.name: v for t, v in known.items()}``. A Session does this in ``_fold_and_merge``
        (``packages/graph/src/eagerflow/graph/core/session.py``).
    """
    known: dict[Any, Any] = {}
    for operation in graph.get_operations():
        pure = not (operation.op_def.stateful or operation.control_inputs)
        if not pure or operation.type == "Placeholder":
            continue
        if not all(t in known for t in operation.inputs):
            continue
        op = operation.op_def
        result = op.kernel(*(known[t] for t in operation.inputs), **operation.attrs)
        results = result if op.multi_output else (result,)
        known.update(zip(operation.outputs, results, strict=True))
    return {t.name: value for t, value in known.items()}


def find_duplicates(graph: Graph) -> dict[str, str]:
    """★★★ Common-subexpression elimination: which operations repeat an earlier one.

    Two pure operations (as in ``fold_constants``) compute the same values when they have
    the same type, the same attributes and the same inputs. Inputs count as the same when
    they are the same tensor, or outputs (at the same index) of operations that are
    themselves duplicates: if ``Tanh_1`` repeats ``Tanh``, then ``Tanh_1:0 * 2`` repeats
    ``Tanh:0 * 2``. Two ``Const`` operations with equal values are duplicates too.

    Visit the operations in graph order and map each duplicate's name to the name of the
    first operation it repeats. Never merge stateful operations, placeholders or operations
    with control inputs: two random draws, for instance, must stay two.

    Args:
        graph: A graph.

    Returns:
        ``{duplicate operation's name: first operation's name}``.

    Hint 1:
        Two pure operations compute the same values when they have the same type, attributes and
        inputs, counting an input as the same once its operation is known to repeat another.

    Hint 2:
        Visit in graph order. Give each pure operation a key, and keep a dict from key to the
        first operation with that key; a second operation with the same key is a duplicate.

    Hint 3:
        The key: ``(operation.type, input names, repr(sorted(operation.attrs.items())))``, where
        an input's name is that of the tensor it repeats (``Tanh:0`` for ``Tanh_1:0`` once
        ``Tanh_1`` repeats ``Tanh``): keep a dict of those renamings too.
    """
    canonical: dict[str, str] = {}  # tensor name -> the name of the tensor it repeats
    first: dict[Any, Any] = {}
    duplicates: dict[str, str] = {}
    for operation in graph.get_operations():
        pure = not (operation.op_def.stateful or operation.control_inputs)
        if not pure or operation.type == "Placeholder":
            continue
        inputs = tuple(canonical.get(t.name, t.name) for t in operation.inputs)
        key = (operation.type, inputs, repr(sorted(operation.attrs.items())))
        original = first.setdefault(key, operation)
        if original is operation:
            continue
        duplicates[operation.name] = original.name
        for mine, theirs in zip(operation.outputs, original.outputs, strict=True):
            canonical[mine.name] = theirs.name
    return duplicates


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


def relaxing_function(fn: Callable[..., Any]) -> Callable[..., Tensor]:
    """★★★ Stretch: a ``mini_function`` that stops retracing for every new length.

    ``mini_function`` traces again for each new shape: a loop over sentences of 40
    different lengths traces 40 graphs. TensorFlow's ``reduce_retracing=True`` relaxes
    instead: a second shape for the same argument gives a trace whose placeholder has
    ``None`` where the shapes differ, and that graph serves every later shape it fits.

    Write it with these rules (the tests predict trace counts from them):

    - calls whose tensors have the same dtypes and ranks, and the same other arguments,
      share one entry: ``("tensor", dtype, rank)`` in the key instead of the shape;
    - an entry's first trace uses the exact shapes;
    - a call whose shapes do not fit the entry's trace (a known dimension differs) traces
      again, replacing it, with each dimension that differs (or was already None) set to
      None. A later call that fits reuses that graph.

    So shapes (2,), (2,), (3,), (5,) trace twice: for (2,), then for (None,).

    Args:
        fn: A function of tensors and Python values, written with eagerflow ops.

    Returns:
        The traced version of ``fn``, which returns an eager tensor like ``mini_function``.

    Hint 1:
        Start from your ``mini_function``: only the key, and the test for "does this trace
        fit", change. Keep each entry's placeholder shapes with its graph.

    Hint 2:
        A shape fits a placeholder's when every dimension is equal or the placeholder's is
        None; the relaxed shape keeps a dimension only where the two agree.
    """
    cache: dict[tuple[Any, ...], tuple[Graph, list[SymbolicTensor], Any]] = {}

    def call(*args: Any) -> Tensor:
        args = tuple(ef.convert_to_tensor(a) if isinstance(a, np.ndarray) else a for a in args)
        tensors = [a for a in args if isinstance(a, Tensor)]
        key = tuple(
            ("tensor", a.dtype, a.ndim) if isinstance(a, Tensor) else ("value", type(a), a)
            for a in args
        )
        shapes = [tuple(t.shape) for t in tensors]
        entry = cache.get(key)
        if entry is not None:
            old = [tuple(p.shape) for p in entry[1]]
            fits = all(
                all(o is None or o == s for o, s in zip(po, ps, strict=True))
                for po, ps in zip(old, shapes, strict=True)
            )
            if not fits:
                shapes = [
                    tuple(o if o == s else None for o, s in zip(po, ps, strict=True))
                    for po, ps in zip(old, shapes, strict=True)
                ]
                entry = None
        if entry is None:
            graph = Graph()
            with graph.as_default():
                placeholders = [
                    placeholder(t.dtype, s) for t, s in zip(tensors, shapes, strict=True)
                ]
                fed = iter(placeholders)
                result = fn(*(next(fed) if isinstance(a, Tensor) else a for a in args))
            entry = cache[key] = (graph, placeholders, result)
        graph, placeholders, result = entry
        feeds = {p: np.asarray(t) for p, t in zip(placeholders, tensors, strict=True)}
        with Session(graph) as session:
            return ef.constant(session.run(result, feeds))

    return call
