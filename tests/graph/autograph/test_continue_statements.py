"""The continue converter: `continue` becomes a flag that skips the rest of the body."""

from __future__ import annotations

from autograph_snippets import convert_with, same_code

from eagerflow.graph.autograph import convert
from eagerflow.graph.autograph.converters import continue_statements


def test_the_flag_is_reset_every_iteration_and_guards_the_rest() -> None:
    converted = convert_with(
        continue_statements.transform,
        """
        def f(xs):
            total = 0
            for x in xs:
                if x < 0:
                    continue
                total += x
            return total
        """,
    )
    assert same_code(
        converted,
        """
        def f(xs):
            total = 0
            for x in xs:
                continue_ = False
                if x < 0:
                    continue_ = True
                if not continue_:
                    total += x
            return total
        """,
    )


def test_a_continue_belongs_to_its_own_loop() -> None:
    converted = convert_with(
        continue_statements.transform,
        """
        def f(rows):
            while rows:
                for x in rows.pop():
                    continue
                print(rows)
        """,
    )
    assert same_code(
        converted,
        """
        def f(rows):
            while rows:
                for x in rows.pop():
                    continue_ = False
                    continue_ = True
                print(rows)
        """,
    )


def test_behaviour_on_python_values_is_unchanged() -> None:
    def odd_squares(xs):
        squares = []
        for x in xs:
            if x % 2 == 0:
                continue
            squares.append(x * x)
        return squares

    assert convert(odd_squares)(range(7)) == odd_squares(range(7)) == [1, 9, 25]
