"""The call-trees converter: every call goes through ag__.converted_call."""

from __future__ import annotations

import pytest
from autograph_snippets import code, convert_with

import eagerflow.tensor as ef
from eagerflow.graph import Graph, Session, placeholder
from eagerflow.graph.autograph import converted_call
from eagerflow.graph.autograph.converters import call_trees


def test_calls_become_converted_calls_with_their_arguments() -> None:
    converted = convert_with(
        call_trees.transform,
        """
        def f(x, *rest, **options):
            return g(h(x), *rest, scale=2, **options)
        """,
        with_namer=False,
    )
    assert code(converted.body[0]) == (
        "return ag__.converted_call(g, (ag__.converted_call(h, (x,), None), *rest), "
        "{'scale': 2, **options})"
    )


def test_calls_that_read_their_frame_and_helper_calls_are_left_alone() -> None:
    converted = convert_with(
        call_trees.transform,
        """
        def f(self):
            super().__init__()
            locals()
            ag__.retval(1)
        """,
        with_namer=False,
    )
    assert [code(s) for s in converted.body] == [
        # a block function has no `self` of its own: super gets its arguments spelled out
        "ag__.converted_call(super(__class__, self).__init__, (), None)",
        "locals()",
        "ag__.retval(1)",
    ]


def double(x):
    if x > 0:
        return 2 * x
    return 0


def test_converted_call_converts_the_users_functions_only() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (), name="x")
        with pytest.raises(TypeError, match="bool"):
            double(x)  # as written: an if on a symbolic tensor
        doubled = converted_call(double, (x,), None)  # converted: a cond
    assert [o.type for o in graph.get_operations()].count("If") == 1
    assert float(Session(graph).run(doubled, {x: 2.5})) == 5.0
    assert converted_call(max, (1, 5), None) == 5  # a builtin: called as it is
    assert converted_call(sorted, ([1, 3],), {"reverse": True}) == [3, 1]
    assert converted_call(ef.add, (1, 2), None).numpy() == 3  # the framework's: as it is
