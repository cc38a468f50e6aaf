"""Eager and graph mode agree, for every differentiable op: on values, on gradients (the
tape versus graph `gradients()`, from the same rules) and on gradients of gradients."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from op_cases import CASES

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape
from eagerflow.graph import Graph, Session, gradients, placeholder
from eagerflow.tensor.nest import flatten


def _sum(terms: list[ef.Tensor]) -> ef.Tensor:
    total = terms[0]
    for t in terms[1:]:
        total = total + t
    return total


SETTINGS = settings(
    max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


def eager(fn, inputs, weights):  # type: ignore[no-untyped-def]
    """y, dy/dx and d/dx(w · dy/dx), each summed over y, with nested tapes."""
    xs = [ef.constant(x) for x in inputs]
    with GradientTape() as outer:
        outer.watch(xs)
        with GradientTape() as inner:
            inner.watch(xs)
            y = fn(*xs)
            total = ef.reduce_sum(y)
        first = inner.gradient(total, xs, unconnected_gradients="zero")
        weighted = _sum([ef.reduce_sum(g * w) for g, w in zip(first, weights, strict=True)])
    second = outer.gradient(weighted, xs, unconnected_gradients="zero")
    return y.numpy(), [g.numpy() for g in first], [g.numpy() for g in second]


def graph(fn, inputs, weights, jit_compile=False):  # type: ignore[no-untyped-def]
    """The same three things, built as a graph with placeholders and run by a Session
    (compiled, with ``jit_compile``)."""
    g = Graph()
    with g.as_default():
        xs = [placeholder(ef.float64, x.shape) for x in inputs]
        y = fn(*xs)
        first = gradients(ef.reduce_sum(y), xs, unconnected_gradients="zero")
        weighted = _sum([ef.reduce_sum(d * w) for d, w in zip(first, weights, strict=True)])
        second = gradients(weighted, xs, unconnected_gradients="zero")
    with Session(g, jit_compile=jit_compile) as session:
        return session.run([y, first, second], dict(zip(xs, inputs, strict=True)))


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_and_graph_agree(name: str) -> None:
    @SETTINGS
    @given(st.data())
    def check(data: st.DataObject) -> None:
        fn, inputs = data.draw(st.composite(lambda draw: CASES[name](draw))())
        rng = np.random.default_rng(0)
        weights = [rng.standard_normal(x.shape) for x in inputs]
        y_e, first_e, second_e = eager(fn, inputs, weights)
        y_g, first_g, second_g = graph(fn, inputs, weights)
        np.testing.assert_allclose(y_g, y_e, rtol=1e-12, atol=1e-12)
        for a, b in zip(first_g, first_e, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        for a, b in zip(second_g, second_e, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)

    check()


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_and_interpreted_sessions_agree(name: str) -> None:
    """The same graphs (values, gradients, gradients of gradients) run by the compiler:
    float64, so a sum added in another order differs only far below these tolerances."""

    @settings(max_examples=2, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
    @given(st.data())
    def check(data: st.DataObject) -> None:
        fn, inputs = data.draw(st.composite(lambda draw: CASES[name](draw))())
        rng = np.random.default_rng(0)
        weights = [rng.standard_normal(x.shape) for x in inputs]
        interpreted = graph(fn, inputs, weights)
        compiled = graph(fn, inputs, weights, jit_compile=True)
        for a, b in zip(flatten(compiled), flatten(interpreted), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)

    check()


# (axis, keepdims, Size ops in the gradient): a known count needs none; the mean of all
# elements is one element, so only the input is counted
MEANS = [(None, False, 1), (None, True, 2), (0, False, 2), (1, True, 0), ((0, 1), False, 1)]


@pytest.mark.parametrize(("axis", "keepdims", "sizes"), MEANS)
def test_mean_gradient_with_an_unknown_batch_size(axis: object, keepdims: bool, sizes: int) -> None:
    value = np.arange(12.0).reshape(4, 3)
    reduced = np.mean(value, axis, keepdims=keepdims)  # type: ignore[call-overload]
    weights = np.random.default_rng(0).standard_normal(reduced.shape)
    x = ef.constant(value)
    with GradientTape() as tape:
        tape.watch(x)
        total = ef.reduce_sum(ef.reduce_mean(x, axis, keepdims) * weights)  # type: ignore[arg-type]
    expected = tape.gradient(total, x).numpy()
    g = Graph()
    with g.as_default():
        xp = placeholder(ef.float64, (None, 3))  # the batch size is not in the graph
        mean = ef.reduce_mean(xp, axis, keepdims)  # type: ignore[arg-type]
        (dx,) = gradients(ef.reduce_sum(mean * weights), [xp])
    with Session(g) as session:
        np.testing.assert_allclose(session.run(dx, {xp: value}), expected, rtol=1e-12)
    assert [o.type for o in g.get_operations()].count("Size") == sizes


# Bad input, one call per kind of check: a rule the eager path skips (it runs the shape rule
# only after a kernel fails) must still fail there, with the same error as the graph.
X = np.arange(6.0).reshape(2, 3)
MISTAKES = {
    "one_hot, negative depth": lambda c: ef.one_hot(c(np.array([1])), -1),
    "one_hot, on and off of two dtypes": lambda c: ef.one_hot(c(np.array([1])), 3, 1, 0.5),
    "where, an int condition to select by": lambda c: ef.where(c(np.array([1, 0])), 1.0, 2.0),
    "linspace, num -1": lambda c: ef.linspace(0.0, 1.0, -1),
    "leaky_relu, bools": lambda c: ef.nn.leaky_relu(c(np.array([True, False]))),
    "tile, negative multiple": lambda c: ef.tile(c(X), [-1, 1]),
    "tile, too few multiples": lambda c: ef.tile(c(X), [2]),
    "expand_dims, axis": lambda c: ef.expand_dims(c(X), 5),
    "squeeze, axis of size 3": lambda c: ef.squeeze(c(X), [1]),
    "split, unequal": lambda c: ef.split(c(X), 4, axis=1),
    "stack, axis": lambda c: ef.stack([c(X), c(X)], axis=4),
    "broadcast_to": lambda c: ef.broadcast_to(c(X), (3, 3)),
    "reshape, two -1s": lambda c: ef.reshape(c(X), (-1, -1)),
    "transpose, short perm": lambda c: ef.transpose(c(X), [0]),
    "reduce_sum, same axis twice": lambda c: ef.reduce_sum(c(X), axis=[0, 0]),
    "concat, axis": lambda c: ef.concat([c(X), c(X)], 2),
    "index past the end": lambda c: c(X)[2],
    "index below the start": lambda c: c(X)[-3],
    "slice step 0": lambda c: c(X)[::0],
    "too many indices": lambda c: c(X)[0, 0, 0],
    "argmax, axis": lambda c: ef.argmax(c(X), axis=3),
    "int to a negative power": lambda c: c(np.array([2])) ** c(np.array([-1])),
    "integer division by 0": lambda c: c(np.array([2])) // c(np.array([0])),
    "gather, index": lambda c: ef.gather(c(X), c(np.array([5]))),
    "segment id": lambda c: ef.unsorted_segment_sum(c(X), c(np.array([0, 5])), 2),
    "matmul of vectors": lambda c: ef.matmul(c(np.ones(3)), c(np.ones(3))),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_bad_input_gets_the_same_error_in_both_modes(mistake: str) -> None:
    build = MISTAKES[mistake]
    with pytest.raises(ef.EagerflowError) as eager_error:
        build(ef.constant)
    g = Graph()
    with pytest.raises(ef.EagerflowError) as graph_error, g.as_default():
        Session(g).run(build(ef.constant))  # an error at build time or at run time
    assert type(graph_error.value) is type(eager_error.value)
    eager_message, graph_message = str(eager_error.value), str(graph_error.value)
    assert graph_message == eager_message
    assert "(" in eager_message.split(":")[0]  # "Op(float64[2,3], ...)": inputs described


def test_the_tape_and_gradients_refuse_a_bad_unconnected_gradients_alike() -> None:
    x = ef.constant(2.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(ValueError, match="'none' or 'zero'") as eager_error:
        tape.gradient(y, x, unconnected_gradients="zeros")
    with Graph().as_default():
        p = placeholder(ef.float32, ())
        with pytest.raises(ValueError) as graph_error:
            gradients(p * p, [p], unconnected_gradients="zeros")
    assert str(graph_error.value) == str(eager_error.value)


# Kernels that fail (no rule objects while building), each run three ways: eagerly; in a
# Session's plan, fed through placeholders of unknown shape; and while a plan is compiled,
# by constant folding, when the inputs are constants. The first kind fails in the kernel's
# own check; the second in NumPy, whose error the op's shape rule explains (with constants a
# rule catches it while building, so it has no folding case).
INT = np.int32
KERNEL_FAILURES = {
    "integer division by 0": (lambda a, b: a // b, [np.array([2], INT), np.array([0], INT)]),
    "int to a negative power": (lambda a, b: a**b, [np.array([2], INT), np.array([-1], INT)]),
    "gather past the end": (ef.gather, [np.ones((2, 3)), np.array([5], INT)]),
    "segment id": (
        lambda x, ids: ef.unsorted_segment_sum(x, ids, 2),
        [np.ones((2, 3)), np.array([0, 5], INT)],
    ),
}
NUMPY_FAILURES = {
    "matmul, inner dimensions": (ef.matmul, [np.ones((2, 3)), np.ones((4, 5))]),
    "add, broadcasting": (lambda a, b: a + b, [np.ones((2, 3)), np.ones((4, 5))]),
    "reshape, element count": (lambda x: ef.reshape(x, (4, 2)), [np.ones((2, 3))]),
}


def _error(run) -> ef.EagerflowError:  # type: ignore[no-untyped-def]
    with pytest.raises(ef.EagerflowError) as caught:
        run()
    return caught.value


def _fed(f, values):  # type: ignore[no-untyped-def]
    g = Graph()
    with g.as_default():
        inputs = [placeholder(ef.as_dtype(v.dtype), None) for v in values]
        out = f(*inputs)
    return lambda: Session(g).run(out, dict(zip(inputs, values, strict=True)))


def _folded(f, values):  # type: ignore[no-untyped-def]
    g = Graph()
    with g.as_default():
        out = f(*map(ef.constant, values))
    session = Session(g)
    return lambda: session.plan(out)  # compiling folds every constant op: the kernel runs


@pytest.mark.parametrize("case", list(KERNEL_FAILURES) + list(NUMPY_FAILURES))
def test_a_failing_kernel_raises_the_same_error_eagerly_in_a_session_and_when_folding(
    case: str,
) -> None:
    f, values = {**KERNEL_FAILURES, **NUMPY_FAILURES}[case]
    eager = _error(lambda: f(*map(ef.constant, values)))
    ways = {"session": _error(_fed(f, values))}
    if case in KERNEL_FAILURES:
        ways["folding"] = _error(_folded(f, values))
    for way, error in ways.items():
        assert (way, type(error), str(error)) == (way, type(eager), str(eager))
        assert error.op is not None and str(error).startswith(error.op + "(")
        # the graph node that failed is named under the traceback, not in the message
        assert any(note.startswith("(in graph node '") for note in error.__notes__)
    assert not hasattr(eager, "__notes__")
