"""The runtime helpers: Python or graph, decided by the values they get."""

from __future__ import annotations

import pytest

import eagerflow.tensor as ef
from eagerflow.graph import Graph, function, placeholder
from eagerflow.graph.autograph import AutoGraphError, UndefinedVariableError
from eagerflow.graph.autograph import operators as ag


def test_python_conditions_run_the_blocks_as_python_does() -> None:
    ran: list[str] = []
    ag.if_stmt(True, lambda: ran.append("if"), lambda: ran.append("else"))
    ag.if_stmt(ef.constant(False), lambda: ran.append("if"), lambda: ran.append("else"))
    ag.if_stmt(0, lambda: ran.append("if"))
    items: list[int] = []
    ag.for_stmt([1, 2, 3, 4], lambda: len(items) < 2, items.append)  # stops like a break
    count = [0]

    def step() -> None:
        count[0] += 1

    ag.while_stmt(lambda: count[0] < 3, step)
    assert ran == ["if", "else"] and items == [1, 2] and count == [3]


def test_an_extra_test_is_checked_before_the_next_item_is_taken() -> None:
    taken: list[int] = []

    def numbers():
        for n in range(5):
            taken.append(n)
            yield n

    seen: list[int] = []
    ag.for_stmt(numbers(), lambda: not seen or seen[-1] < 1, seen.append)
    assert seen == [0, 1] and taken == [0, 1]  # Python's break would not take 2 either


def test_undefined_raises_on_any_use() -> None:
    y = ag.Undefined("y")
    for use in (lambda: y + 1, lambda: bool(y), lambda: y.shape, lambda: ef.convert_to_tensor(y)):
        with pytest.raises(UndefinedVariableError, match="local variable 'y' is used before"):
            use()
    assert repr(y) == "Undefined('y')"
    assert ag.retval(ag.UndefinedReturnValue()) is None and ag.retval(3) == 3


def test_a_while_test_that_becomes_a_tensor_is_an_error() -> None:
    def loop(x):
        i = 0
        while i < 3:  # Python at first
            i = i + x  # a tensor after one iteration
        return i

    message = r"condition of the while loop in loop .* was a Python value before .* a tensor after"
    with pytest.raises(AutoGraphError, match=message):
        function(loop)(ef.constant(1))


def test_a_loop_variable_that_is_no_tensor_is_an_error_naming_it() -> None:
    def joined(n):
        text = "a"
        for _ in ef.range(n):
            text = text + "b"
        return text

    message = r"'text' is str 'a' before the loop on a tensor in joined"
    with pytest.raises(ef.DTypeError, match=message):
        function(joined)(ef.constant(2))


def test_a_python_value_the_loop_leaves_alone_stays_python() -> None:
    def tagged(n):
        tag = "count"
        total = 0
        for _ in ef.range(n):
            if tag:
                total += 1
            tag = tag  # assigned, but the same object
        return total

    traced = function(tagged)
    assert int(traced(ef.constant(4))) == 4
    (loop,) = [o for o in traced.get_concrete_function(ef.constant(4)).graph.get_operations()
               if o.type == "While"]  # fmt: skip
    assert loop.attrs["num_vars"] == 2  # the index and total; tag is no loop variable


def test_iterating_a_tensor_of_unknown_length() -> None:
    def total(x):
        s = 0.0
        for row in x:
            s += ef.reduce_sum(row)
        return s

    with Graph().as_default():
        unknown_rank = placeholder(ef.float32, None, name="x")
        with pytest.raises(AutoGraphError, match="iterates over a tensor of unknown rank"):
            ag.for_stmt(unknown_rank, None, lambda row: None)
    assert float(function(total)(ef.ones((3, 2)))) == 6.0
