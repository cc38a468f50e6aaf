"""ef.print: TensorFlow's tf.print, an op (PrintV2) that prints when it runs. Eagerly that is
at once; in graphs see tests/graph/test_print.py."""

from __future__ import annotations

import io
import sys

import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GRADIENTS, GradientTape, Variable
from eagerflow.tensor.registry import OPS


def test_prints_at_once_to_stderr_by_default(capsys) -> None:
    assert ef.print("x is", ef.constant(3)) is None
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "x is 3\n")


def test_tensors_and_python_values_mix_as_in_tf_print(capsys) -> None:
    ef.print(
        "values:",
        ef.constant([1, 2]),
        2.5,
        ef.constant([[1.5, 2.0]]),
        {"flag": ef.constant(True), "name": "w"},
        [ef.constant(0.25), "a"],
        output_stream=sys.stdout,
    )
    expected = "values: [1 2] 2.5 [[1.5 2]] {'flag': True, 'name': 'w'} [0.25, 'a']\n"
    assert capsys.readouterr().out == expected


def test_summarize_shows_that_many_items_at_each_end(capsys) -> None:
    ef.print(ef.range(10), output_stream=sys.stdout)
    ef.print(ef.range(10), summarize=2, output_stream=sys.stdout)
    ef.print(ef.range(10), summarize=-1, output_stream=sys.stdout)
    assert capsys.readouterr().out.splitlines() == [
        "[0 1 2 ... 7 8 9]",
        "[0 1 ... 8 9]",
        "[0 1 2 3 4 5 6 7 8 9]",
    ]


def test_sep_end_and_any_stream_with_write() -> None:
    stream = io.StringIO()
    ef.print("a", ef.constant(1), "b", sep=", ", end=".", output_stream=stream)
    ef.print(ef.constant(-0.5), output_stream=stream)
    assert stream.getvalue() == "a, 1, b.-0.5\n"


def test_standard_streams_by_name(capsys) -> None:
    ef.print("out", output_stream="stdout")
    ef.print("err", output_stream="stderr")
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("out\n", "err\n")


def test_a_variable_prints_its_value(capsys) -> None:
    v = Variable([1.0, 2.0])
    ef.print("v:", v, output_stream=sys.stdout)
    assert capsys.readouterr().out == "v: [1 2]\n"


def test_bad_stream_is_an_error_naming_the_op() -> None:
    with pytest.raises(ef.InvalidArgumentError, match=r"PrintV2: output_stream must be .*got 3"):
        ef.print("x", output_stream=3)


def test_it_is_a_stateful_op_without_a_gradient() -> None:
    assert OPS["PrintV2"].stateful  # never folded, merged or pruned away
    assert GRADIENTS["PrintV2"] is None  # declared not differentiable
    x = ef.constant(2.0)
    with GradientTape() as tape:
        tape.watch(x)
        ef.print("x:", x, output_stream=io.StringIO())
        y = x * x
    assert float(tape.gradient(y, x)) == 4.0
