"""The logical and conditional-expression converters, and the helpers they call."""

from __future__ import annotations

import numpy as np
from autograph_snippets import code, convert_with

import eagerflow.tensor as ef
from eagerflow.graph import Graph, Session, placeholder
from eagerflow.graph.autograph import operators
from eagerflow.graph.autograph.converters import conditional_expressions, logical_expressions


def test_and_or_not_become_helper_calls_with_lazy_right_sides() -> None:
    converted = convert_with(
        logical_expressions.transform,
        "def f(a, b, c):\n    return a and b and c or not a\n",
        with_namer=False,
    )
    assert code(converted.body[0]) == (
        "return ag__.or_(lambda: ag__.and_(lambda: a, lambda: ag__.and_(lambda: b, "
        "lambda: c)), lambda: ag__.not_(a))"
    )


def test_a_chained_comparison_becomes_an_and_of_its_pairs() -> None:
    converted = convert_with(
        logical_expressions.transform,
        "def f(a, b, c, d):\n    return a < b <= c == d\n",
        with_namer=False,
    )
    assert code(converted.body[0]) == (
        "return ag__.and_(lambda: a < b, lambda: ag__.and_(lambda: b <= c, lambda: c == d))"
    )
    single = convert_with(
        logical_expressions.transform, "def f(a, b):\n    return a < b\n", with_namer=False
    )
    assert code(single.body[0]) == "return a < b"


def test_conditional_expressions_become_if_exp() -> None:
    converted = convert_with(
        conditional_expressions.transform,
        "def f(x):\n    return x if x > 0 else -x\n",
        with_namer=False,
    )
    assert code(converted.body[0]) == "return ag__.if_exp(x > 0, lambda: x, lambda: -x)"


def test_python_values_keep_pythons_meaning() -> None:
    calls: list[str] = []

    def right() -> str:
        calls.append("right")
        return "r"

    assert operators.and_(lambda: 0, right) == 0 and calls == []  # never evaluated
    assert operators.and_(lambda: "l", right) == "r"
    assert operators.or_(lambda: "l", right) == "l"
    assert operators.or_(lambda: [], right) == "r"
    assert operators.not_([]) is True
    assert operators.if_exp(False, lambda: 1, lambda: 2) == 2
    assert calls == ["right", "right"]


def test_eager_tensors_keep_pythons_meaning_too() -> None:
    yes, no = ef.constant(True), ef.constant(False)
    assert operators.and_(lambda: no, lambda: 1) is no
    assert operators.not_(yes) is False


def test_symbolic_tensors_become_logical_ops_and_conds() -> None:
    graph = Graph()
    with graph.as_default():
        x = placeholder(ef.float32, (), name="x")
        both = operators.and_(lambda: x > 0, lambda: x < 2)
        either = operators.or_(lambda: x < 0, lambda: True)
        neither = operators.not_(x > 0)
        choice = operators.if_exp(x > 0, lambda: x, lambda: 0.0)
    types = [o.type for o in graph.get_operations()]
    assert types.count("If") == 3 and "LogicalNot" in types
    session = Session(graph)
    for value in (-1.0, 1.0, 3.0):
        got = session.run([both, either, neither, choice], {x: value})
        expected = [0 < value < 2, value < 0 or True, not value > 0, max(value, 0.0)]
        np.testing.assert_array_equal(got, expected)
