"""The break converter: `break` becomes a flag the loop tests; what follows is guarded."""

from __future__ import annotations

import ast

from autograph_snippets import code, convert_with, parse, same_code

from eagerflow.graph.autograph import convert
from eagerflow.graph.autograph.analysis import EXTRA_TEST
from eagerflow.graph.autograph.anno import getanno
from eagerflow.graph.autograph.converters import break_statements


def test_while_tests_the_flag_and_the_rest_of_the_body_is_guarded() -> None:
    converted = convert_with(
        break_statements.transform,
        """
        def f(x, n):
            i = 0
            while i < n:
                if x[i] < 0:
                    break
                i += 1
            return i
        """,
    )
    assert same_code(
        converted,
        """
        def f(x, n):
            i = 0
            break_ = False
            while not break_ and i < n:
                if x[i] < 0:
                    break_ = True
                if not break_:
                    i += 1
            return i
        """,
    )


def test_a_for_loop_gets_the_flag_as_its_extra_test() -> None:
    converted = convert_with(
        break_statements.transform,
        """
        def f(xs):
            for x in xs:
                if x:
                    break
        """,
    )
    loop = converted.body[1]
    assert isinstance(loop, ast.For)
    assert code(getanno(loop, EXTRA_TEST)) == "not break_"
    assert code(converted.body[0]) == "break_ = False"


def test_a_break_belongs_to_its_own_loop() -> None:
    converted = convert_with(
        break_statements.transform,
        """
        def f(rows):
            for row in rows:
                for x in row:
                    break
                print(row)
        """,
    )
    outer = converted.body[0]
    assert isinstance(outer, ast.For) and getanno(outer, EXTRA_TEST) is None
    assert code(outer.body[-1]) == "print(row)"  # not guarded: the break left the inner loop
    assert code(getanno(outer.body[1], EXTRA_TEST)) == "not break_"


def test_the_else_block_runs_only_if_no_break_ended_the_loop() -> None:
    converted = convert_with(
        break_statements.transform,
        """
        def f(n):
            while n > 0:
                if n == 3:
                    break
                n -= 1
            else:
                n = -1
            return n
        """,
    )
    assert code(converted.body[-2]) == "if not break_:\n    n = -1"

    def f(n):
        while n > 0:
            if n == 3:
                break
            n -= 1
        else:
            n = -1
        return n

    assert [convert(f)(n) for n in (5, 2, 0)] == [f(n) for n in (5, 2, 0)] == [3, -1, -1]


def test_a_function_without_break_is_unchanged() -> None:
    source = """
        def f(xs):
            for x in xs:
                print(x)
        """
    assert ast.dump(convert_with(break_statements.transform, source)) == ast.dump(parse(source))
