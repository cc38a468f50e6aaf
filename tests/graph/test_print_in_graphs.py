"""ef.print in graphs: it prints when the graph runs it, with that run's values (Python's
print prints once, while the function is traced)."""

from __future__ import annotations

import contextlib
import io
import sys

import eagerflow.tensor as ef
from eagerflow.graph import Graph, Session, cond, function, placeholder


def test_in_a_function_it_prints_at_every_call_and_print_only_once(capsys) -> None:
    @function
    def double(x):
        print("tracing with", x)
        ef.print("running with", x, output_stream=sys.stdout)
        return x * 2

    for value in (1, 2, 3):
        double(ef.constant(value))
    assert double.trace_count == 1
    assert capsys.readouterr().out.splitlines() == [
        'tracing with Tensor("arg0:0", shape=(), dtype=int32)',
        "running with 1",
        "running with 2",
        "running with 3",
    ]


def test_prints_run_in_program_order(capsys) -> None:
    @function
    def steps(x):
        ef.print("first", x, output_stream=sys.stdout)
        y = x + 1
        ef.print("then", y, output_stream=sys.stdout)
        ef.print("last", output_stream=sys.stdout)
        return y

    steps(ef.constant(1))
    assert capsys.readouterr().out.splitlines() == ["first 1", "then 2", "last"]


def test_the_stream_is_looked_up_when_the_op_runs() -> None:
    @function
    def show(x):
        ef.print(x, output_stream=sys.stdout)
        return x

    first, second = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(first):
        show(ef.constant(1))  # traced and run here
    with contextlib.redirect_stdout(second):
        show(ef.constant(2))  # the same graph, run with another sys.stdout
    assert (first.getvalue(), second.getvalue()) == ("1\n", "2\n")


def test_in_a_cond_branch_it_prints_only_when_the_branch_runs() -> None:
    stream = io.StringIO()
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (), name="x")

        def positive():
            ef.print("positive:", x, output_stream=stream)
            return x

        def negative():
            ef.print("negative:", x, output_stream=stream)
            return -x

        y = cond(x > 0, positive, negative)
    session = Session(g)
    assert stream.getvalue() == ""  # building printed nothing
    assert [float(session.run(y, {x: v})) for v in (2.0, -3.0)] == [2.0, 3.0]
    assert stream.getvalue() == "positive: 2\nnegative: -3\n"
