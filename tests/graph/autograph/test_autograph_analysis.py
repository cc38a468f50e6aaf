"""The analysis: which variables each if/while/for changes, reads first, and leaves for later."""

from __future__ import annotations

import ast

from autograph_snippets import parse

from eagerflow.graph.autograph import analysis


def scopes(source: str) -> list[analysis.Scope]:
    """The Scope of each if, while and for of ``source``'s function, in source order."""
    definition = parse(source)
    analysis.analyze(definition)
    statements = [n for n in ast.walk(definition) if isinstance(n, ast.If | ast.While | ast.For)]
    return [analysis.scope_of(s) for s in sorted(statements, key=lambda s: s.lineno)]


def test_live_out_is_what_is_read_after_before_being_assigned_again() -> None:
    (scope,) = scopes(
        """
        def f(x):
            if x > 0:
                a = 1
                b = 2
                c = 3
            b = 0
            return a + b
        """
    )
    assert scope.modified == {"a", "b", "c"}
    assert scope.live_out == {"a"}  # b is assigned again first; c never read
    assert scope.live_in == {"x", "a"}  # without an else, `a` may come from before the if
    assert scope.defined_in == {"x"}


def test_a_loop_head_sees_what_the_next_iteration_reads() -> None:
    loop, branch = scopes(
        """
        def f(n):
            i = 0
            while i < n:
                if i > 2:
                    last = i
                tmp = i * 2
                i = tmp + 1
            return 0
        """
    )
    assert loop.modified == {"i", "tmp", "last"}
    assert loop.live_in == {"i", "n"}  # not tmp: each iteration assigns it before reading it
    assert loop.live_out == set()
    assert branch.live_out == {"i", "n"}  # i is read by the loop test, after the if
    assert loop.defined_in == {"n", "i"} and "last" not in branch.defined_in


def test_a_for_target_is_assigned_at_each_iteration_start() -> None:
    (loop,) = scopes(
        """
        def f(xs):
            total = 0
            for x in xs:
                total = total + x
            return total
        """
    )
    assert loop.modified == {"x", "total"}
    assert loop.live_in == {"total"} and loop.live_out == {"total"}


def test_variables_a_nested_function_reads_are_live_everywhere() -> None:
    (scope,) = scopes(
        """
        def f(x):
            def show():
                return y
            if x > 0:
                y = 1
            else:
                y = 2
            return show()
        """
    )
    assert "y" in scope.live_out  # show() reads it, though no statement after the if does


def test_stores_and_loads() -> None:
    statement = parse("def f(a):\n    b, c.d = [e for e in a], (g := 1)\n").body[0]
    assert analysis.stores(statement) == {"b", "c.d", "g"}  # not e: the comprehension's own
    assert analysis.loads(statement) == {"a", "c", "e"}
    augmented = parse("def f():\n    n += 1\n").body[0]
    assert analysis.loads(augmented) == {"n"} and analysis.stores(augmented) == {"n"}


def test_a_with_block_defines_its_as_names_first_and_its_body_in_order() -> None:
    """An `if` inside `with` whose variable is first assigned there has none before it (it
    once counted every assignment of the with body as made on entry: a `nonlocal` with no
    binding, a SyntaxError)."""
    (scope,) = scopes(
        """
        def f(x):
            with context() as tape:
                e = x * 2
                if e < 1:
                    loss = e
                else:
                    loss = -e
            return loss
        """
    )
    assert scope.defined_in == {"x", "tape", "e"}
