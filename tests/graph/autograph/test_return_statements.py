"""The return converter: a return in a block becomes a flag and a value returned at the end."""

from __future__ import annotations

import ast

from autograph_snippets import code, convert_with, parse, same_code

from eagerflow.graph.autograph import convert
from eagerflow.graph.autograph.analysis import EXTRA_TEST
from eagerflow.graph.autograph.anno import getanno
from eagerflow.graph.autograph.converters import return_statements


def test_returns_at_the_top_level_only_are_left_alone() -> None:
    source = """
        def f(x):
            y = x + 1
            return y
        """
    assert ast.dump(convert_with(return_statements.transform, source)) == ast.dump(parse(source))


def test_after_an_if_that_returns_the_rest_joins_its_else_branch() -> None:
    converted = convert_with(
        return_statements.transform,
        '''
        def f(x):
            """Docs."""
            if x > 0:
                return x
            y = -x
            return y
        ''',
    )
    assert same_code(
        converted,
        '''
        def f(x):
            """Docs."""
            do_return = False
            retval_ = ag__.UndefinedReturnValue()
            if x > 0:
                do_return = True
                retval_ = x
            else:
                y = -x
                do_return = True
                retval_ = y
            return ag__.retval(retval_)
        ''',
    )


def test_a_return_in_a_loop_stops_the_loop_and_guards_what_follows() -> None:
    converted = convert_with(
        return_statements.transform,
        """
        def f(xs, n):
            for x in xs:
                if x > n:
                    return x
                n += 1
            while n > 0:
                return n
            return None
        """,
    )
    loop = converted.body[2]
    assert isinstance(loop, ast.For)
    assert code(getanno(loop, EXTRA_TEST)) == "not do_return"
    assert "n += 1" in code(loop.body[0].orelse[0])  # joined the if's else branch
    guard = converted.body[3]
    assert isinstance(guard, ast.If) and code(guard.test) == "not do_return"
    assert code(guard.body[0]).startswith("while not do_return and n > 0:")


def test_behaviour_on_python_values_is_unchanged() -> None:
    def classify(values):
        for v in values:
            if v < 0:
                return "negative"
            if v == 0:
                return
        return "positive"

    for values in ([1, -1], [2, 0, -1], [3, 4], []):
        assert convert(classify)(values) == classify(values)


def test_always_returns() -> None:
    returns = parse("def f(x):\n    if x:\n        return 1\n    else:\n        return 2\n").body
    assert return_statements.always_returns(returns)
    sometimes = parse("def f(x):\n    if x:\n        return 1\n").body
    assert not return_statements.always_returns(sometimes)
