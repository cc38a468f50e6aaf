"""From a Python function to its converted twin: source, AST, converters, code, function.

``convert(f)`` does what TensorFlow's AutoGraph does to a function before ``tf.function``
traces it:

1. read ``f``'s source (``inspect.getsource``) and parse it with ``ast``;
2. run the converters on the tree (``converters/``), in their order;
3. compile the new tree, *keeping the user's file name and line numbers*: every generated
   node stands at the line of the statement it replaces, so a traceback through converted
   code shows the user's own lines, not generated ones;
4. make a function of it with ``f``'s globals and closure cells (the same cells: a variable
   ``f`` closes over is shared, not copied), its defaults and its name.

The converted code calls the helpers as ``ag__.if_stmt(...)``: ``ag__`` is handed to it
as one more variable of its closure, so the user's module never sees it.

Step 1 to 3 happen once per code object (``_Program``, cached); step 4 for each function
object (two closures made by one ``def`` share the program, not the cells).

``converted_call`` is how converted code calls any function: it converts the user's own
functions (recursively: theirs calls are converted calls too), and calls everything else as
it is, as TensorFlow does: the framework's own functions (``eagerflow.*``: ``ef.matmul`` is
an op, not code to convert), builtins, the standard library and installed packages.
"""

from __future__ import annotations

import ast
import inspect
import sysconfig
import textwrap
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import eagerflow.graph.autograph.operators as operators
import eagerflow.tensor as ef
from eagerflow.graph.autograph.analysis import analyze
from eagerflow.graph.autograph.converters import (
    break_statements,
    call_trees,
    conditional_expressions,
    continue_statements,
    control_flow,
    logical_expressions,
    return_statements,
)
from eagerflow.graph.autograph.naming import Namer
from eagerflow.graph.autograph.operators import AutoGraphError
from eagerflow.graph.autograph.templates import locate, replace

_HELPERS = "ag__"  # the name converted code calls the helpers by
_FACTORY = "autograph_factory"
_MAKE = "autograph_make"


class AutoGraphWarning(UserWarning):
    """A function AutoGraph could not convert runs as it is written."""


# --- the helpers' namespace --------------------------------------------------------------------
def converted_call(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
    """``function(*args, **kwargs)``, with ``function`` converted first if it is the user's
    (see the module docs)."""
    return _target_of(function)(*args, **(kwargs or {}))


def _range(*bounds: Any) -> Any:
    """``range`` in converted code: ``ef.range`` when a bound is a tensor (a symbolic one has
    no Python value), so that ``for i in range(n)`` becomes a graph loop, as in TensorFlow."""
    if any(isinstance(b, ef.Tensor) for b in bounds):
        return ef.range(*bounds)
    return range(*bounds)


def _helpers() -> types.SimpleNamespace:
    """What ``ag__`` holds: the runtime helpers, and ``converted_call``."""
    names = {name: getattr(operators, name) for name in operators.__all__}
    return types.SimpleNamespace(**names, converted_call=converted_call)


HELPERS = _helpers()


# --- which functions to convert ----------------------------------------------------------------
def do_not_convert(function: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator: ``function`` runs as it is written when converted code calls it (and in
    a ``@function``)."""
    function.__dict__["autograph_do_not_convert"] = True
    return function


_INSTALLED = tuple(
    {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
)


def _is_users(function: types.FunctionType) -> bool:
    """A function to convert: the user's own code (not the framework's, not a builtin's, not
    the standard library's or an installed package's), with source to convert."""
    module = function.__module__ or ""
    if module == "eagerflow" or module.startswith("eagerflow."):
        return False
    if function.__code__.co_filename.startswith((*_INSTALLED, "<frozen ")):
        return False  # the standard library's, or an installed package's
    if function.__dict__.get("autograph_do_not_convert"):
        return False
    if function.__name__ == "<lambda>" or _is_generator(function):
        return False  # no statements to convert; a generator's run when it is iterated
    return _HELPERS not in function.__code__.co_freevars  # else made by converted code


def _is_generator(function: types.FunctionType) -> bool:
    return inspect.isgeneratorfunction(function) or inspect.iscoroutinefunction(function)


def maybe_convert(function: Any) -> Callable[..., Any]:
    """``function`` converted if it is the user's (see the module docs), else itself. One
    that cannot be converted (no source) runs as written, with a warning; a lambda or a
    generator silently."""
    return _target_of(function)


def _target_of(function: Any) -> Callable[..., Any]:
    """What ``converted_call`` calls for ``function``: its converted twin, or itself (or
    for the builtin ``range``, its graph form)."""
    if function is range:
        return _range
    if isinstance(function, types.MethodType) and isinstance(function.__func__, types.FunctionType):
        target = _target_of(function.__func__)
        if target is function.__func__:
            return function
        return types.MethodType(target, function.__self__)
    if isinstance(function, types.FunctionType):
        if not _is_users(function):
            return function
        try:
            return convert(function)
        except AutoGraphError as e:
            _warn_once(function, e)
            return function
    call = _class_attribute(type(function), "__call__")
    if isinstance(call, types.FunctionType) and _is_users(call):  # an object of a user's class
        return _target_of(types.MethodType(call, function))
    return function


def _class_attribute(cls: type, name: str) -> Any:
    """``name`` as ``cls`` or its first base defining it has it (not bound, not looked up
    on the metaclass)."""
    return next((c.__dict__[name] for c in cls.__mro__ if name in c.__dict__), None)


_warned: set[types.CodeType] = set()


def _warn_once(function: types.FunctionType, error: Exception) -> None:
    if function.__code__ not in _warned:
        _warned.add(function.__code__)
        warnings.warn(
            f"AutoGraph could not convert {function.__qualname__}, so it runs as it is "
            f"written (an if or while on a tensor in it will fail): {error}",
            AutoGraphWarning,
            stacklevel=2,
        )


# --- conversion --------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Program:
    """One function's converted code: the factory that makes functions of it, and its text."""

    make: types.CodeType  # the code of a function `autograph_make(ag__)` returning the twin
    source: str  # the converted function, as Python text


_programs: dict[types.CodeType, _Program] = {}


def convert(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` converted (a bound method stays bound). ``AutoGraphError`` if it cannot
    be: no source, a generator or coroutine, a lambda."""
    if isinstance(function, types.MethodType):
        return types.MethodType(convert(function.__func__), function.__self__)
    if not isinstance(function, types.FunctionType):
        raise AutoGraphError(f"AutoGraph converts Python functions, not {function!r:.60}")
    program = _program(function)
    cells = dict(zip(function.__code__.co_freevars, function.__closure__ or (), strict=True))
    missing = set(program.make.co_freevars) - set(cells)
    if missing:  # e.g. its file was edited since it was imported
        raise AutoGraphError(f"its source uses {sorted(missing)}, which its code does not")
    closure = tuple(cells[name] for name in program.make.co_freevars)
    make = types.FunctionType(program.make, function.__globals__, _MAKE, None, closure)
    converted = make(HELPERS)
    converted.__defaults__ = function.__defaults__
    converted.__kwdefaults__ = function.__kwdefaults__
    converted.__qualname__ = function.__qualname__
    converted.__doc__ = function.__doc__
    converted.__module__ = function.__module__
    converted.__dict__.update(function.__dict__)
    return converted


def to_code(function: Callable[..., Any]) -> str:
    """The source of ``function`` as AutoGraph converts it (of a ``@function``: of the
    Python function it traces)."""
    function = getattr(function, "python_function", function)
    if isinstance(function, types.MethodType):
        function = function.__func__
    if not isinstance(function, types.FunctionType):
        raise AutoGraphError(f"AutoGraph converts Python functions, not {function!r:.60}")
    return _program(function).source


def _program(function: types.FunctionType) -> _Program:
    code = function.__code__
    if code not in _programs:
        _programs[code] = _compile(function)
    return _programs[code]


def _compile(function: types.FunctionType) -> _Program:
    tree = _parse(function)
    namer = Namer(tree)
    tree = break_statements.transform(tree, namer)
    tree = continue_statements.transform(tree, namer)
    tree = return_statements.transform(tree, namer)
    tree = call_trees.transform(tree)
    analyze(tree)
    tree = control_flow.transform(tree, namer)
    tree = conditional_expressions.transform(tree)
    tree = logical_expressions.transform(tree)
    source = ast.unparse(tree)
    module = _factory_module(tree, function.__code__.co_freevars)
    code = compile(module, function.__code__.co_filename, "exec")
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # defines the factory (nothing of the user's runs)
    make = namespace[_FACTORY]()
    return _Program(make.__code__, source)


def _parse(function: types.FunctionType) -> ast.FunctionDef:
    """``function``'s definition as an AST with the positions of its source file."""
    if function.__name__ == "<lambda>":
        raise AutoGraphError("lambdas are not converted (their source is part of a line)")
    if _is_generator(function):
        raise AutoGraphError("generators and coroutines are not converted")
    try:  # of the code object: a decorated function's source would be its wrapped one's
        source = inspect.getsource(function.__code__)
    except (OSError, TypeError) as e:
        raise AutoGraphError(f"its source is not available ({e})") from None
    dedented = textwrap.dedent(source)
    indent = len(source.splitlines()[0]) - len(dedented.splitlines()[0])
    try:
        module = ast.parse(dedented)
    except SyntaxError as e:
        raise AutoGraphError(f"its source does not parse alone ({e})") from None
    definition = module.body[0] if module.body else None
    if not isinstance(definition, ast.FunctionDef) or definition.name != function.__code__.co_name:
        raise AutoGraphError("its source is not the def statement that made it")
    definition.decorator_list = []  # `@function` must not wrap the converted code again
    _move(definition, lines=function.__code__.co_firstlineno - 1, columns=indent)
    return definition


def _move(tree: ast.AST, lines: int, columns: int) -> None:
    """Shift every position in ``tree``: from the parsed snippet to the source file."""
    ast.increment_lineno(tree, lines)
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt | ast.expr | ast.arg | ast.keyword | ast.excepthandler):
            node.col_offset += columns
            if node.end_col_offset is not None:
                node.end_col_offset += columns


def _factory_module(definition: ast.FunctionDef, freevars: tuple[str, ...]) -> ast.Module:
    """A module defining this (``f`` is the converted function)::

    def autograph_factory():
        x = y = None              # the variables the function closes over, so that
        def autograph_make(ag__):  # `autograph_make` closes over them too: its closure
            def f(...): ...        # cells are then given the function's own cells
            return f
        return autograph_make
    """
    placeholders = "\n    ".join(f"{name} = None" for name in freevars)
    template = f"""
def {_FACTORY}():
    {placeholders or "pass"}
    def {_MAKE}({_HELPERS}):
        converted_definition
        return {definition.name}
    return {_MAKE}
"""
    body = replace(template, converted_definition=[definition])
    module = ast.Module(body=body, type_ignores=[])
    locate(module.body, definition)
    return ast.fix_missing_locations(module)


__all__ = [
    "HELPERS",
    "AutoGraphWarning",
    "convert",
    "converted_call",
    "do_not_convert",
    "maybe_convert",
    "to_code",
]
