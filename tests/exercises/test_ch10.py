"""Chapter 10 exercises: AutoGraph (`exercises/ch10.py`)."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest
from ready_made import refusing

import eagerflow.tensor as ef
from eagerflow.graph import SymbolicTensor, cond, function
from eagerflow.graph.autograph import conversion, operators
from eagerflow.graph.autograph.converters import conditional_expressions, control_flow

pytestmark = pytest.mark.ch10


# --- bounce_with_cond -----------------------------------------------------------------------------
def eager_bounce(position, velocity, floor):  # type: ignore[no-untyped-def]
    """The chapter's ``bounce``, as given (the reader's copy could be edited)."""
    position = position + velocity
    if position < floor:
        position = 2 * floor - position
        velocity = -velocity * 0.8
        bounces = 1
    else:
        bounces = 0
    return position, velocity, bounces


def traced_without_autograph(fn, *args):  # type: ignore[no-untyped-def]
    """``function(fn, autograph=False)`` and its result for ``args``: an ``if`` on a tensor
    left in ``fn`` fails while tracing, which is reported as a wrong answer."""
    traced = function(fn, autograph=False)
    try:
        return traced, traced(*args)
    except TypeError as error:
        raise AssertionError(
            f"tracing it with autograph=False failed ({error}): is a Python if on a tensor "
            "left in it?"
        ) from error


BOUNCES = [  # (position, velocity, floor): not the docstring's; the edges included
    (5.0, -2.0, 0.0),  # falls, no bounce
    (1.0, -3.0, 0.0),  # through the floor: bounces
    (0.5, -0.5, 0.0),  # lands exactly on it: no bounce
    (-1.0, 0.5, -2.0),  # rising above a floor below zero
    (-1.5, -1.0, -2.0),  # through a floor below zero
    (3.0, 1.0, 10.0),  # below the floor after moving up: bounces up to it
    (2.5, 0.0, 2.5),  # resting on it
]


def test_bounce_with_cond_builds_an_if_node(chapter):
    args = [ef.constant(v) for v in BOUNCES[1]]
    traced, _ = traced_without_autograph(chapter.bounce_with_cond, *args)
    types = [op.type for op in traced.get_concrete_function(*args).graph.get_operations()]
    assert "If" in types, f"expected cond to build an If node; the traced graph has {types}"


def test_bounce_with_cond_gives_bounces_results_in_a_graph(chapter):
    for case in BOUNCES:
        args = [ef.constant(v) for v in case]
        _, got = traced_without_autograph(chapter.bounce_with_cond, *args)
        expected = eager_bounce(*args)
        assert isinstance(got, tuple | list) and len(got) == 3, (
            f"bounce_with_cond{case}: expected (position, velocity, bounces), got {got!r}"
        )
        for what, e, g in zip(("position", "velocity", "bounces"), expected, got, strict=True):
            assert float(g) == pytest.approx(float(e), abs=1e-6), (
                f"bounce_with_cond{case}: expected {what} {float(e)}, got {g!r}"
            )
        assert ef.convert_to_tensor(got[2]).dtype == ef.int32, f"bounces: got {got[2]!r}"


def test_bounce_with_cond_follows_a_ball_with_one_trace(chapter):
    traced = function(chapter.bounce_with_cond, autograph=False)
    position, velocity, floor = ef.constant(4.0), ef.constant(0.0), ef.constant(0.5)
    ball = [ef.constant(4.0), ef.constant(0.0)]
    bounces = 0
    for step in range(40):
        velocity = velocity - 0.3  # gravity, eagerly
        ball[1] = ball[1] - 0.3
        try:
            position, velocity, bounced = traced(position, velocity, floor)
        except TypeError as error:
            raise AssertionError(f"tracing with autograph=False failed: {error}") from error
        ball[0], ball[1], expected_bounced = eager_bounce(ball[0], ball[1], floor)
        bounces += int(bounced)
        assert float(position) == pytest.approx(float(ball[0]), abs=1e-5), (
            f"step {step}: expected the ball at {float(ball[0])}, got {float(position)}"
        )
        assert float(velocity) == pytest.approx(float(ball[1]), abs=1e-5), (
            f"step {step}: expected the velocity {float(ball[1])}, got {float(velocity)}"
        )
        assert int(bounced) == expected_bounced, (
            f"step {step}: expected {expected_bounced} bounces, got {int(bounced)}"
        )
    assert bounces >= 3, "the ball should have bounced a few times"
    assert traced.trace_count == 1, f"one signature, one trace: got {traced.trace_count}"


# --- if_to_ag_if ----------------------------------------------------------------------------------
def ag_if(test, if_true, if_false, names):  # type: ignore[no-untyped-def]
    """The exercise's runtime helper (the test's own copy)."""
    assert isinstance(names, tuple) and all(isinstance(n, str) for n in names), (
        f"ag_if's last argument: expected a tuple of the names, got {names!r}"
    )
    if isinstance(test, SymbolicTensor):
        return cond(test, if_true, if_false)
    return if_true() if test else if_false()


def refusing_autograph():  # type: ignore[no-untyped-def]
    """eagerflow's own AutoGraph: its conversion, its AST transformers, its ``if_stmt``."""
    ready_made = [
        (conversion, "convert"), (conversion, "to_code"), (conversion, "_compile"),
        (control_flow, "transform"), (conditional_expressions, "transform"),
        (operators, "if_stmt"), (conversion.HELPERS, "if_stmt"),
    ]  # fmt: skip
    return refusing("if_to_ag_if", "a mini AutoGraph", *ready_made)


def converted(chapter, fn):  # type: ignore[no-untyped-def]
    """``fn`` rewritten by the reader's ``if_to_ag_if``, compiled, and its new source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    with refusing_autograph():
        result = chapter.if_to_ag_if(tree)
    assert isinstance(result, ast.Module), f"expected the changed tree (a Module), got {result!r}"
    result = ast.fix_missing_locations(result)
    source = ast.unparse(result)
    namespace = {**fn.__globals__, "ag_if": ag_if}
    try:
        exec(compile(result, inspect.getsourcefile(fn) or "<converted>", "exec"), namespace)
    except (TypeError, ValueError, SyntaxError) as error:
        raise AssertionError(f"the changed tree does not compile ({error}):\n{source}") from error
    return namespace[fn.__name__], source


def piecewise(x):  # type: ignore[no-untyped-def]
    slope = 2.0
    offset = 0.0
    if x < 0.0:
        y = x * 0.5
        slope = 0.5
    else:
        y = x * slope + 1.0
        offset = 1.0
    return y, slope, offset


def clip_and_count(x, limit):  # type: ignore[no-untyped-def]
    clipped = 0
    if x > limit:
        x = limit
        clipped = 1
    return x, clipped


def with_python_conditions(x, double, log):  # type: ignore[no-untyped-def]
    if double:
        x = x * 2.0
    if log is not None:
        log.append("called")
    if x > 1.0:
        x = x - 1.0
    return x


def count_above(x):  # type: ignore[no-untyped-def]
    total = x * 0.0
    for k in range(3):
        if x > k:
            total = total + 1.0
    return total


class Box:
    def __init__(self):  # type: ignore[no-untyped-def]
        self.total = 0.0


def branches_to_leave_alone(x, flag, log, box):  # type: ignore[no-untyped-def]
    y = x * 1.0
    z = x * 0.0
    if flag:  # a call among the assignments
        y = y + 1.0
        log.append("flag")
    if flag:  # a tuple target
        z = z - 1.0
        y, z = z, y
    if flag:  # an augmented assignment
        y = y * 2.0
        z += 2.0
    if flag:  # an attribute
        y = y - 0.25
        box.total = y
    if flag:  # a nested if: the inner one is converted, the outer one stays
        z = z + 0.5
        if x > 1.0:
            z = z * 3.0
    if not flag:  # a return
        y = y + 10.0
        return y, z
    return y, z


# what if_to_ag_if must keep of branches_to_leave_alone, as ast.unparse writes it
KEPT = ["log.append('flag')", "y, z = (z, y)", "z += 2.0", "box.total = y", "z = z + 0.5",
        "return (y, z)"]  # fmt: skip


HIDDEN = [  # (function, Python arguments after x, values of x, tensor ifs it runs in a graph)
    (piecewise, (), [-2.0, -0.5, 0.0, 1.5], 1),
    (clip_and_count, (2.0,), [-1.0, 2.0, 2.5, 7.0], 1),
    (with_python_conditions, (True, None), [0.25, 0.5, 3.0], 1),
    (with_python_conditions, (False, None), [0.25, 1.5], 1),
    (count_above, (), [-1.0, 0.5, 1.5, 2.5], 3),
]
HIDDEN_IDS = ["piecewise", "clip_and_count", "python_flag_on", "python_flag_off", "in_a_loop"]


def run(fn, *args):  # type: ignore[no-untyped-def]
    with refusing_autograph():
        try:
            return fn(*args)
        except Exception as error:
            raise AssertionError(f"the converted function raised {error!r}") from error


def as_floats(result):  # type: ignore[no-untyped-def]
    return [float(v) for v in (result if isinstance(result, tuple | list) else [result])]


def test_if_to_ag_if_rewrites_the_ifs_that_only_assign(chapter):
    _, source = converted(chapter, piecewise)
    assert "ag_if(" in source and "if " not in source, (
        f"expected the if to become an ag_if call:\n{source}"
    )
    assert "lambda" in source, f"each branch should become a lambda:\n{source}"
    _, source = converted(chapter, with_python_conditions)
    assert source.count("ag_if(") == 2, f"expected two ifs converted:\n{source}"
    assert "if log is not None:" in source, f"an if with a call in it stays an if:\n{source}"
    _, source = converted(chapter, count_above)
    assert "ag_if(" in source, f"the if in the for loop should be converted too:\n{source}"


@pytest.mark.parametrize(("fn", "extra", "xs", "ifs"), HIDDEN, ids=HIDDEN_IDS)
def test_if_to_ag_if_gives_the_eager_results_in_a_graph(chapter, fn, extra, xs, ifs):
    new, source = converted(chapter, fn)
    traced = function(new, autograph=False)  # only the reader's rewrite makes this traceable
    for x in xs:
        expected = as_floats(fn(ef.constant(x), *extra))
        got = as_floats(run(traced, ef.constant(x), *extra))
        assert got == pytest.approx(expected), (
            f"{fn.__name__}({x}, ...) traced: expected {expected}, got {got}; the code was\n"
            f"{source}"
        )
    graph = traced.get_concrete_function(ef.constant(xs[0]), *extra).graph
    found = [op.type for op in graph.get_operations()].count("If")
    assert found == ifs, f"{fn.__name__}: expected {ifs} If node(s), got {found}:\n{source}"
    assert traced.trace_count == 1, "one signature, one trace"


@pytest.mark.parametrize(("fn", "extra", "xs", "ifs"), HIDDEN, ids=HIDDEN_IDS)
def test_if_to_ag_if_still_runs_eagerly(chapter, fn, extra, xs, ifs):
    new, source = converted(chapter, fn)
    for x in xs:
        for value in (ef.constant(x), x):  # an eager tensor, a Python number: Python's if
            expected = as_floats(fn(value, *extra))
            got = as_floats(run(new, value, *extra))
            assert got == pytest.approx(expected), (
                f"{fn.__name__}({value!r}, ...) eagerly: expected {expected}, got {got}; the "
                f"code was\n{source}"
            )
    if fn is with_python_conditions:
        log: list[str] = []
        run(new, ef.constant(1.0), True, log)
        assert log == ["called"], f"the if with a call in it must still run:\n{source}"


def test_if_to_ag_if_leaves_the_other_ifs_whole(chapter):
    new, source = converted(chapter, branches_to_leave_alone)
    assert source.count("ag_if(") == 1, (
        "only the innermost if of branches_to_leave_alone assigns nothing but names: expected "
        f"one ag_if, the other ifs left as they are:\n{source}"
    )
    for statement in KEPT:
        assert statement in source, (
            f"`{statement}` is gone: an if whose branches hold anything but `name = ...` must "
            f"be left as it is, every statement kept:\n{source}"
        )
    for flag in (True, False):
        for x in (ef.constant(2.0), ef.constant(-0.5), 1.5):
            log, box = [], Box()
            expected = as_floats(branches_to_leave_alone(x, flag, log, box))
            my_log, my_box = [], Box()
            got = as_floats(run(new, x, flag, my_log, my_box))
            assert (got, my_log, float(my_box.total)) == (
                pytest.approx(expected),
                log,
                pytest.approx(float(box.total)),
            ), (
                f"branches_to_leave_alone({x!r}, {flag}): expected {expected}, log {log} and "
                f"box.total {float(box.total)}, got {got}, {my_log} and {float(my_box.total)}; "
                f"the code was\n{source}"
            )
