"""cond and while_loop: Python control flow in eager mode, subgraph ops in a graph."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import (
    Graph,
    Session,
    cond,
    global_variables_initializer,
    gradients,
    placeholder,
    while_loop,
)

WORDS = {0: None, 1: "Fizz", 2: "Buzz", 3: "FizzBuzz"}


def fizzbuzz_eager(max_num: int) -> list[str]:
    """The seed notebook's eager FizzBuzz: Python control flow on tensor values."""
    result = []
    for num in range(1, max_num + 1):
        n = ef.constant(num)
        if int(n % 3) == 0 and int(n % 5) == 0:
            result.append("FizzBuzz")
        elif int(n % 3) == 0:
            result.append("Fizz")
        elif int(n % 5) == 0:
            result.append("Buzz")
        else:
            result.append(str(num))
    return result


def fizzbuzz_code(i: ef.Tensor) -> ef.Tensor:
    return cond(
        ef.equal(i % 15, 0),
        lambda: 3,
        lambda: cond(
            ef.equal(i % 5, 0), lambda: 2, lambda: cond(ef.equal(i % 3, 0), lambda: 1, lambda: 0)
        ),
    )


def fizzbuzz_graph(max_num: int) -> list[str]:
    """The same, built entirely as a graph: a while_loop whose body uses cond and floormod."""
    g = Graph()
    with g.as_default():
        n = placeholder(ef.int32, (), name="max_num")

        def body(i: ef.Tensor, codes: ef.Tensor) -> tuple[ef.Tensor, ef.Tensor]:
            return i + 1, ef.concat([codes, ef.reshape(fizzbuzz_code(i), (1,))], axis=0)

        _, codes = while_loop(
            lambda i, codes: i <= n,
            body,
            [ef.constant(1), ef.zeros((0,), ef.int32)],
            shape_invariants=[(), (None,)],
        )
    assert {o.type for o in g.get_operations()} >= {"While", "Placeholder"}
    with Session(g) as session:
        values = session.run(codes, {n: max_num})
    return [WORDS[int(c)] or str(i) for i, c in enumerate(values, start=1)]


def test_fizzbuzz_graph_matches_eager() -> None:
    assert fizzbuzz_graph(100) == fizzbuzz_eager(100)
    assert fizzbuzz_eager(15)[-3:] == ["13", "14", "FizzBuzz"]


def test_eager_mode_is_python_control_flow() -> None:
    x = ef.constant(3.0)
    assert float(cond(x > 0, lambda: x * 2, lambda: -x)) == 6.0
    i, total = while_loop(lambda i, t: i < 4, lambda i, t: (i + 1, t + i), [ef.constant(0), 0])
    assert int(i) == 4 and int(total) == 6


def test_cond_runs_only_the_chosen_branch() -> None:
    g = Graph()
    with g.as_default():
        p = placeholder(ef.bool_, ())
        v = Variable(0.0, name="counter")
        out = cond(p, lambda: v.assign_add(1.0, read_value=False), lambda: ef.constant(-1.0))
        init = global_variables_initializer()
    with Session(g) as s:
        s.run(init)
        assert s.run(out, {p: False}) == -1.0
        assert s.run(v) == 0.0  # the then-branch did not run
        s.run(out, {p: True})
        assert s.run(v) == 1.0


def _exp_times(x: ef.Tensor, w: ef.Tensor) -> ef.Tensor:
    return ef.exp(x) * w


def test_cond_gradients_match_the_tape() -> None:
    def f(x: ef.Tensor, w: ef.Tensor) -> ef.Tensor:
        return cond(
            ef.reduce_sum(x) > 0,
            lambda: ef.reduce_sum(x * x * w),
            lambda: ef.reduce_sum(_exp_times(x, w)),
        )

    for value in ([1.0, 2.0], [-1.0, -3.0]):
        xv, wv = np.array(value), np.array([0.5, -2.0])
        xs = [ef.constant(xv), ef.constant(wv)]
        with GradientTape() as tape:
            tape.watch(xs)
            y = f(*xs)
        eager = [g.numpy() for g in tape.gradient(y, xs)]
        g = Graph()
        with g.as_default():
            ps = [placeholder(ef.float64, (2,)), placeholder(ef.float64, (2,))]
            graph_grads = gradients(f(*ps), ps)
        with Session(g) as s:
            got = s.run(graph_grads, dict(zip(ps, [xv, wv], strict=True)))
        for a, b in zip(got, eager, strict=True):
            np.testing.assert_allclose(a, b)


def test_second_order_through_cond() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, ())
        y = cond(x > 0, lambda: x * x * x, lambda: -x)
        (dy,) = gradients(y, [x])
        (d2y,) = gradients(dy, [x])
    with Session(g) as s:
        assert s.run([y, dy, d2y], {x: 2.0}) == [8.0, 12.0, 12.0]
        assert s.run([y, dy, d2y], {x: -2.0}) == [2.0, -1.0, 0.0]


def test_captures_from_outer_graphs_through_nesting() -> None:
    g = Graph()
    with g.as_default():
        a = placeholder(ef.float32, ())
        b = placeholder(ef.float32, ())
        # the innermost branch uses a and b from two levels out
        out = cond(a > 0, lambda: cond(b > 0, lambda: a + b, lambda: a - b), lambda: a * b)
    with Session(g) as s:
        assert s.run(out, {a: 2.0, b: 3.0}) == 5.0
        assert s.run(out, {a: 2.0, b: -3.0}) == 5.0
        assert s.run(out, {a: -2.0, b: 3.0}) == -6.0


def test_while_loop_with_a_captured_tensor_and_plain_shapes() -> None:
    g = Graph()
    with g.as_default():
        step = placeholder(ef.float32, ())
        i, x = while_loop(lambda i, x: i < 5, lambda i, x: (i + 1, x + step), [0, ef.constant(1.0)])
    with Session(g) as s:
        assert s.run([i, x], {step: 0.5}) == [5, 3.5]


def test_errors() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, ())
        with pytest.raises(ef.DTypeError, match="different dtypes"):
            cond(x > 0, lambda: 1.0, lambda: 1)
        with pytest.raises(ef.DTypeError, match="bool predicate"):
            cond(x, lambda: 1.0, lambda: 2.0)
        with pytest.raises(ef.ShapeError, match="shape_invariants"):
            while_loop(lambda v: ef.reduce_sum(v) < 9, lambda v: ef.concat([v, v], 0), [ef.ones(1)])


def _condition_without_return(i: ef.Tensor) -> None:
    i < 3  # noqa: B015  (the mistake: the comparison is made, then dropped)


MISTAKES = {
    "condition without a return": (
        lambda: while_loop(_condition_without_return, lambda i: i + 1, [ef.constant(0)]),
        ef.DTypeError,
        r"While\(int32\[\]\): the loop condition returned None: is its return missing\?",
    ),
    "body returns too many": (
        lambda: while_loop(lambda i: i < 3, lambda i: (i + 1, i), [ef.constant(0)]),
        ef.ShapeError,
        r"While\(int32\[\]\): the body returns 2 values for 1 loop variables",
    ),
    "body returns too few": (
        lambda: while_loop(lambda i, j: i < 3, lambda i, j: i + 1, [ef.constant(0), 1]),
        ef.ShapeError,
        r"the body returns 1 values for 2 loop variables",
    ),
    "body changes a dtype": (
        lambda: while_loop(lambda i: i < 3, lambda i: ef.cast(i + 1, ef.float32), [ef.constant(0)]),
        ef.DTypeError,
        r"While\(int32\[\]\): loop variable 0 starts as int32 but the body returns float32",
    ),
    "condition is not a bool": (
        lambda: while_loop(lambda i: ef.cast(i, ef.float32), lambda i: i + 1, [ef.constant(0)]),
        ef.DTypeError,
        r"the loop condition must return one bool, got float32",
    ),
    "condition is not a scalar": (
        lambda: while_loop(lambda v: v < 3, lambda v: v + 1, [ef.constant([0, 1])]),
        ef.ShapeError,
        r"While\(int32\[2\]\): the loop condition must be a scalar, got shape \(2,\)",
    ),
    "shape_invariants of another length": (
        lambda: while_loop(lambda i: i < 3, lambda i: i + 1, [ef.constant(0)], [(), ()]),
        ef.ShapeError,
        r"2 shape_invariants for 1 loop variables",
    ),
    "cond's predicate is not a scalar": (
        lambda: cond(ef.constant([True, False]), lambda: 1.0, lambda: 2.0),
        ef.ShapeError,
        r"If\(bool\[2\]\): cond's predicate must be a scalar, got shape \(2,\)",
    ),
    "cond's predicate is not a bool": (
        lambda: cond(ef.constant(1.0), lambda: 1.0, lambda: 2.0),
        ef.DTypeError,
        r"If\(float32\[\]\): cond needs a bool predicate, got float32",
    ),
}


@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_mistakes_get_the_same_error_in_both_modes(mistake: str, mode: str) -> None:
    build, error, message = MISTAKES[mistake]
    if mode == "eager":
        with pytest.raises(error, match=message):
            build()
        return
    g = Graph()
    with g.as_default(), pytest.raises(error, match=message):
        build()
    # the op that failed its rules is not in the graph (only constants from the lambdas are)
    assert not {op.type for op in g.get_operations()} & {"If", "While"}


def test_an_eager_loop_takes_python_and_numpy_values() -> None:
    assert while_loop(lambda i: i < 3, lambda i: i + 1, [0]) == [3]
    (n,) = while_loop(lambda v: v.sum() < 5, lambda v: v * 2, [np.ones(2)])
    np.testing.assert_array_equal(n, [4.0, 4.0])
    assert cond(np.bool_(True), lambda: "then", lambda: "else") == "then"
