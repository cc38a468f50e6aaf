"""``set_loop_options``: the converter hands a loop's first-statement call to its helper, whose
graph loop then lets the listed variables change shape; and its refusals."""

from __future__ import annotations

import pytest

import eagerflow.tensor as ef
from eagerflow.graph import function
from eagerflow.graph.autograph import to_code
from eagerflow.graph.autograph.experimental import LoopOptions, set_loop_options
from eagerflow.tensor.errors import InvalidArgumentError, ShapeError


def grow(n: ef.Tensor) -> ef.Tensor:
    v = ef.zeros([0])
    for i in ef.range(n):
        set_loop_options(shape_invariants=[(v, ef.TensorShape([None]))])
        v = ef.concat([v, [ef.cast(i, ef.float32)]], 0)
    return v


def grow_unannounced(n: ef.Tensor) -> ef.Tensor:
    v = ef.zeros([0])
    i = ef.constant(0)
    while i < n:
        v = ef.concat([v, [1.0]], 0)
        i += 1
    return v


def test_the_call_leaves_the_body_and_reaches_the_helper() -> None:
    source = to_code(grow)
    body = source[source.index("def loop_body") : source.index("ag__.for_stmt")]
    assert "set_loop_options" not in body
    assert "opts=ag__.converted_call(set_loop_options" in source


def test_a_variable_given_an_invariant_may_change_shape() -> None:
    assert function(grow)(ef.constant(3)).numpy().tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ShapeError, match=r"set_loop_options\(shape_invariants=\[\(v, shape\)\]\)"):
        function(grow_unannounced)(ef.constant(2))


def test_outside_a_loop_it_only_returns_the_options() -> None:
    v = ef.zeros([2])
    options = set_loop_options(parallel_iterations=4, shape_invariants=[(v, [None])])
    assert options == LoopOptions(((v, [None]),))
    assert options.invariant_of(v, (2,)) == (None,)
    assert options.invariant_of(ef.zeros([2]), (2,)) == (2,)  # matched by identity


def test_what_it_refuses() -> None:
    with pytest.raises(InvalidArgumentError, match=r"maximum_iterations is not supported"):
        set_loop_options(maximum_iterations=3)
    with pytest.raises(TypeError, match=r"a list of \(variable, shape\) pairs"):
        set_loop_options(shape_invariants=[ef.zeros([1])])
