"""AutoGraph under @function: Python control flow on tensors becomes cond and while_loop.

For every construct, the @function result equals the eager one, and the traced graph has
If/While nodes exactly where a condition is a tensor (not where it is a Python value).
The converters' own tests are in tests/graph/autograph/.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import autograph, function
from eagerflow.graph.autograph import AutoGraphError, UndefinedVariableError


# --- helpers -------------------------------------------------------------------------------------
def op_types(graph: Any) -> list[str]:
    """The types of a graph's operations, and of those inside its If and While nodes."""
    types = []
    for operation in graph.get_operations():
        types.append(operation.type)
        for key in ("then_branch", "else_branch", "cond", "body"):
            if key in operation.attrs:
                types += op_types(operation.attrs[key].graph)
    return types


def control_flow(traced: Any, *args: Any) -> list[str]:
    """The If and While nodes of the graph ``traced`` has for ``args``, in order."""
    graph = traced.get_concrete_function(*args).graph
    return [t for t in op_types(graph) if t in ("If", "While")]


def same_as_eager(python_function: Any, *args: Any) -> Any:
    """Run ``python_function`` eagerly and under @function; assert equal results."""
    eager = python_function(*args)
    traced = function(python_function)(*args)
    np.testing.assert_allclose(np.asarray(traced), np.asarray(eager))
    return traced


# --- the TF 2 AutoGraph FizzBuzz, exactly as TensorFlow's tf.function guide writes it ------------
def fizzbuzz(n):
    for i in ef.range(1, n + 1):
        print("Tracing for loop")
        if i % 15 == 0:
            print("Tracing fizzbuzz branch")
            ef.print("fizzbuzz")
        elif i % 3 == 0:
            print("Tracing fizz branch")
            ef.print("fizz")
        elif i % 5 == 0:
            print("Tracing buzz branch")
            ef.print("buzz")
        else:
            print("Tracing default branch")
            ef.print(i)


FIZZBUZZ_15 = ["1", "2", "fizz", "4", "buzz", "fizz", "7", "8", "fizz", "buzz", "11", "fizz",
               "13", "14", "fizzbuzz"]  # fmt: skip


def test_fizzbuzz_prints_at_every_call_from_one_trace(capfd) -> None:
    traced = function(fizzbuzz)
    traced(ef.constant(15))
    first = capfd.readouterr()
    traced(ef.constant(5))
    second = capfd.readouterr()
    assert traced.trace_count == 1  # n is a tensor: one graph serves both calls
    assert first.err.splitlines() == FIZZBUZZ_15  # ef.print: at run time, to stderr
    assert second.err.splitlines() == FIZZBUZZ_15[:5]
    assert first.out.splitlines() == [  # print: once, while tracing, each branch once
        "Tracing for loop",
        "Tracing fizzbuzz branch",
        "Tracing fizz branch",
        "Tracing buzz branch",
        "Tracing default branch",
    ]
    assert second.out == ""
    assert control_flow(traced, ef.constant(1)) == ["While", "If", "If", "If"]


def test_fizzbuzz_runs_eagerly_too(capfd) -> None:
    fizzbuzz(ef.constant(15))
    assert capfd.readouterr().err.splitlines() == FIZZBUZZ_15


# --- if ------------------------------------------------------------------------------------------
def absolute(x):
    if x > 0:  # noqa: SIM108 (an if statement is the point)
        y = x
    else:
        y = -x
    return y


def scaled(x, training=True):
    if training:
        x = x * 2.0
    return x


def test_if_on_a_tensor_is_a_cond() -> None:
    for value in (-3.0, 2.0):
        same_as_eager(absolute, ef.constant(value))
    assert control_flow(function(absolute), ef.constant(1.0)) == ["If"]


def test_if_on_a_python_value_stays_python() -> None:
    traced = function(scaled)
    assert float(traced(ef.constant(3.0))) == 6.0
    assert float(traced(ef.constant(3.0), training=False)) == 3.0
    assert control_flow(traced, ef.constant(3.0)) == []
    assert control_flow(traced, ef.constant(3.0), False) == []
    assert traced.trace_count == 2  # one graph per flag value, neither with a cond


def one_branch(x):
    if x > 0:
        y = x * 2.0
    return y


def scratch_in_one_branch(x):
    if x > 0:
        y = x * 2.0
        ef.print("doubled:", y)
    return x


def test_a_variable_assigned_in_one_branch_and_used_after_is_an_error() -> None:
    message = r"'y' is assigned in the if branch .* but not in its else branch"
    with pytest.raises(UndefinedVariableError, match=message) as raised:
        function(one_branch)(ef.constant(1.0))
    assert "one_branch (test_autograph.py:" in str(raised.value)  # the user's function and line
    assert isinstance(raised.value, UnboundLocalError)  # what Python would raise eagerly
    with pytest.raises(UnboundLocalError):
        one_branch(ef.constant(-1.0))  # eagerly, on the path without y


def test_a_variable_used_only_inside_one_branch_is_fine(capfd) -> None:
    same_as_eager(scratch_in_one_branch, ef.constant(3.0))
    assert capfd.readouterr().err == "doubled: 6\ndoubled: 6\n"


def branches_disagree(x):
    if x > 0:  # noqa: SIM108
        y = ef.constant(1)
    else:
        y = ef.constant(1.0)
    return y


def test_branches_giving_a_variable_two_dtypes_is_an_error_naming_it() -> None:
    with pytest.raises(ef.DTypeError, match=r"'y' is an int32 tensor in the if branch .* float32"):
        function(branches_disagree)(ef.constant(1.0))


def both_positive(x, y):
    if x > 0 and y > 0:
        return 1
    return 0


def not_negative(x):
    return 1.0 if not x < 0 else -1.0


def test_and_or_not_on_tensors_are_logical_ops() -> None:
    for a, b in [(1.0, 2.0), (1.0, -2.0), (-1.0, 2.0)]:
        same_as_eager(both_positive, ef.constant(a), ef.constant(b))
    for value in (-2.0, 2.0):
        same_as_eager(not_negative, ef.constant(value))
    graph = function(not_negative).get_concrete_function(ef.constant(1.0)).graph
    assert "LogicalNot" in op_types(graph) and "If" in op_types(graph)


# --- loops ---------------------------------------------------------------------------------------
def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:  # noqa: SIM108
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
        if steps >= 100:
            break
    return steps


def test_collatz_while_with_break() -> None:
    traced = function(collatz)
    for start, steps in [(1, 0), (6, 8), (7, 16), (27, 100)]:  # 27 needs 111: the break
        assert int(traced(ef.constant(start))) == steps == collatz(ef.constant(start))
    assert traced.trace_count == 1
    # the loop test `not break_ and n != 1` is an If too: `and` evaluates its right side
    # only if the left one is true, as in Python
    assert control_flow(traced, ef.constant(6)) == ["While", "If", "If", "If"]


def sum_to(n):
    total = 0
    for i in ef.range(n):
        total += i
    return total


def sum_rows(m):
    total = ef.zeros((3,))
    for row in m:
        total = total + row
    return total


def powers(x):
    for k in [1.0, 2.0, 3.0]:  # a Python list: unrolled, k is a number
        x = x * k
    return x


def test_for_over_ef_range_and_over_a_tensor_are_while_loops() -> None:
    assert int(same_as_eager(sum_to, ef.constant(5))) == 10
    rows = ef.constant(np.arange(6.0, dtype=np.float32).reshape(2, 3))
    same_as_eager(sum_rows, rows)
    assert control_flow(function(sum_to), ef.constant(5)) == ["While"]
    assert control_flow(function(sum_rows), rows) == ["While"]


def test_for_over_a_python_list_is_unrolled() -> None:
    same_as_eager(powers, ef.constant(1.5))
    graph = function(powers).get_concrete_function(ef.constant(1.5)).graph
    assert "While" not in op_types(graph)
    assert [o.type for o in graph.get_operations()].count("Mul") == 3


def sum_even(items):
    s = 0
    for c in items:
        if c % 2 > 0:
            continue
        s += c
    return s


def test_continue_in_a_loop_over_a_tensor() -> None:
    assert int(same_as_eager(sum_even, ef.constant([10, 12, 15, 20]))) == 42


def nested(n):
    count = 0
    i = 0
    while i < n:
        if i % 2 == 0:
            if i % 3 == 0:
                count += 10
            else:
                count += 1
        i += 1
    return count


def test_nested_ifs_inside_a_loop() -> None:
    for n in (0, 1, 7, 12):
        same_as_eager(nested, ef.constant(n))
    assert control_flow(function(nested), ef.constant(3)) == ["While", "If", "If"]


def first_square_above(x):
    for i in ef.range(10):
        if i * i > x:
            return i
    return -1


def first_above_unrolled(x):
    for k in range(4):  # a Python loop, with a return on a tensor inside
        if x < k:
            return k
    return 99


def test_return_inside_a_loop() -> None:
    traced = function(first_square_above)
    for value, expected in [(3, 2), (50, 8), (200, -1)]:
        assert int(traced(ef.constant(value))) == expected
        assert int(first_square_above(ef.constant(value))) == expected
    assert traced.trace_count == 1
    for value in (0.5, 2.5, 7.0):
        same_as_eager(first_above_unrolled, ef.constant(value))


def last_double(n):
    for i in ef.range(n):
        y = i * 2
    return y


def reads_before_assigning(n):
    for i in ef.range(n):
        y = y + i  # noqa: F821 (no y before the loop: the point)
    return y


def test_a_variable_first_assigned_in_the_loop_needs_no_value_before_it() -> None:
    assert int(same_as_eager(last_double, ef.constant(4))) == 6


def test_a_loop_variable_read_before_any_value_is_an_error_naming_it() -> None:
    message = r"'y' is read in the loop .* before it has a value"
    with pytest.raises(UndefinedVariableError, match=message):
        function(reads_before_assigning)(ef.constant(3))


def one_branch_in_a_loop(n):
    total = 0
    for i in ef.range(n):
        if i > 2:
            last = i
        total += last
    return total


def test_a_one_branch_variable_in_a_loop_names_the_users_function() -> None:
    # eagerly, the first iteration fails (no `last` yet); a graph must say so while tracing
    message = (
        r"'last' is assigned in the if branch of the if on a tensor in "
        r"one_branch_in_a_loop \(test_autograph.py:\d+\)"  # the user's function, not loop_body
    )
    with pytest.raises(UndefinedVariableError, match=message):
        function(one_branch_in_a_loop)(ef.constant(5))
    with pytest.raises(UnboundLocalError):
        one_branch_in_a_loop(ef.constant(5))


def changes_dtype(n):
    x = ef.constant(0)
    for _ in ef.range(n):
        x = ef.cast(x, ef.float32) + 0.5
    return x


def test_a_loop_variable_changing_dtype_is_an_error_naming_it() -> None:
    message = r"'x' is an int32 tensor before the loop .* float32 tensor after an iteration"
    with pytest.raises(ef.DTypeError, match=message):
        function(changes_dtype)(ef.constant(3))


def test_stateful_ops_in_a_loop_run_at_every_iteration() -> None:
    v = Variable(0.0)

    def bump(n):
        for _ in ef.range(n):
            v.assign_add(1.0)
        return v.read_value()

    traced = function(bump)
    assert float(traced(ef.constant(3))) == 3.0
    assert float(traced(ef.constant(2))) == 5.0
    assert traced.trace_count == 1


# --- called functions ----------------------------------------------------------------------------
def sign(x):
    if x > 0:
        return 1.0
    else:
        return -1.0


def uses_sign(x):
    return sign(x) * x


def test_functions_the_user_calls_are_converted_too() -> None:
    for value in (-2.0, 3.0):
        same_as_eager(uses_sign, ef.constant(value))
    assert control_flow(function(uses_sign), ef.constant(1.0)) == ["If"]


def test_conversion_is_cached_per_code_object() -> None:
    first = autograph.convert(sign)
    second = autograph.convert(sign)
    assert first is not second and first.__code__ is second.__code__  # one program, two functions


def factorial(n):
    if n <= 1:
        return 1
    return n * factorial(n - 1)


def test_recursion_on_python_values() -> None:
    assert int(function(factorial)(6)) == 720


def test_framework_functions_and_builtins_are_not_converted() -> None:
    assert autograph.maybe_convert(ef.reduce_sum) is ef.reduce_sum
    assert autograph.maybe_convert(print) is print
    assert autograph.maybe_convert(np.mean) is np.mean
    converted = autograph.maybe_convert(sign)
    assert converted is not sign and converted.__name__ == "sign"


@autograph.do_not_convert
def kept_as_written(x):
    if x > 0:
        x = -x
    return x


def test_do_not_convert_keeps_a_function_as_written() -> None:
    assert autograph.maybe_convert(kept_as_written) is kept_as_written

    def caller(x):
        return kept_as_written(x)

    with pytest.raises(TypeError, match="bool"):
        function(caller)(ef.constant(1.0))  # its if on a tensor is not converted


def test_methods_are_converted_with_their_instance() -> None:
    class Shift:
        def __init__(self, offset):
            self.offset = offset

        @function
        def __call__(self, x):
            if x > 0:
                return x + self.offset
            return x - self.offset

    shift = Shift(1.0)
    assert float(shift(ef.constant(2.0))) == 3.0
    assert float(shift(ef.constant(-2.0))) == -3.0
    assert control_flow(shift.__call__, ef.constant(1.0)) == ["If"]


def test_autograph_false_traces_the_code_as_written() -> None:
    message = r"bool\(\) of the symbolic tensor .* instead of a Python if"
    with pytest.raises(TypeError, match=message):
        function(absolute, autograph=False)(ef.constant(1.0))

    @function(autograph=False)
    def plain(x):
        return x + 1

    assert int(plain(ef.constant(1))) == 2


def test_a_function_without_source_is_traced_as_written_with_a_warning() -> None:
    namespace: dict[str, Any] = {"ef": ef}
    exec("def made(x):\n    return x * 2\n", namespace)  # no file: no source to convert
    with pytest.warns(autograph.AutoGraphWarning, match="could not convert made"):
        assert int(function(namespace["made"])(ef.constant(2))) == 4


# --- errors point at the user's own lines --------------------------------------------------------
def fails_in_a_branch(x):
    if x > 0:
        one = "one"
        y = x + one
    else:
        y = x
    return y


def test_errors_point_at_the_users_line() -> None:
    with pytest.raises(ef.DTypeError) as raised:
        function(fails_in_a_branch)(ef.constant(1.0))
    frames = traceback.extract_tb(raised.value.__traceback__)
    mine = [f for f in frames if f.filename == __file__]
    lines = [f.line for f in mine]
    assert "y = x + one" in lines and "if x > 0:" in lines  # the failing line, the if
    line = fails_in_a_branch.__code__.co_firstlineno + 3
    assert any(f.lineno == line and f.name == "if_body" for f in mine)


# --- to_code -------------------------------------------------------------------------------------
def test_to_code_shows_the_converted_source() -> None:
    code = autograph.to_code(absolute)
    assert code == (
        "def absolute(x):\n"
        "    y = ag__.Undefined('y')\n"
        "\n"
        "    def get_state():\n"
        "        return (y,)\n"
        "\n"
        "    def set_state(vars_):\n"
        "        nonlocal y\n"
        "        y, = vars_\n"
        "\n"
        "    def if_body():\n"
        "        nonlocal y\n"
        "        y = x\n"
        "\n"
        "    def else_body():\n"
        "        nonlocal y\n"
        "        y = -x\n"
        "    ag__.if_stmt(x > 0, if_body, else_body, get_state, set_state, ('y',), 1)\n"
        "    return y"
    )
    assert autograph.to_code(function(absolute)) == code  # of a @function: its Python function
    with pytest.raises(AutoGraphError, match="converts Python functions"):
        autograph.to_code(sys)


# --- objects -------------------------------------------------------------------------------------
class Counter:
    def __init__(self):
        self.count = ef.constant(0)

    def step(self, x):
        if x > 0:
            self.count = self.count + 1
        for i in ef.range(3):
            self.count = self.count + i
        return self.count


class Base:
    def shift(self, x):
        return x + 1.0


class Child(Base):
    def shift(self, x):
        if x > 0:
            return super().shift(x)
        return x


def test_attributes_assigned_in_converted_blocks_are_state_too() -> None:
    eager = Counter().step(ef.constant(1.0))
    traced = function(Counter().step)
    assert int(traced(ef.constant(1.0))) == int(eager) == 4
    assert int(traced(ef.constant(-1.0))) == 3
    assert control_flow(traced, ef.constant(1.0)) == ["If", "While"]


def test_zero_argument_super_works_in_a_converted_method() -> None:
    traced = function(Child().shift)
    assert float(traced(ef.constant(1.0))) == 2.0
    assert float(traced(ef.constant(-1.0))) == -1.0


def test_a_decorated_function_is_converted_from_its_own_source() -> None:
    import functools

    def logged(f):
        @functools.wraps(f)
        def wrapper(*args):
            return f(*args)

        return wrapper

    @logged
    def magnitude(x):
        if x < 0:
            x = -x
        return x

    # the wrapper is converted from the wrapper's source; it calls `f`, converted in turn
    assert float(function(magnitude)(ef.constant(-3.0))) == 3.0


def test_builtin_range_of_a_tensor_is_a_graph_loop() -> None:
    # as TensorFlow's AutoGraph: range() with a tensor bound is ef.range, counted by a loop
    @function
    def odd_sum(n):  # type: ignore[no-untyped-def]
        total = ef.constant(0)
        for i in range(1, n, 2):
            total += i
        return total

    assert int(odd_sum(ef.constant(6))) == 9 and int(odd_sum(ef.constant(9))) == 16
    assert odd_sum.trace_count == 1  # one graph loop for every n
