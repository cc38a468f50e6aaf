"""Tape pictures with values and gradients: ``to_mermaid(values=True, target=loss)`` writes on
each node its tensor's value and d loss / d that tensor, as micrograd's ``draw_dot`` shows
data and grad. (The pictures without them are tested in tests/graph/test_pictures.py.)"""

from __future__ import annotations

import re

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.tensor.pictures import Node, short_number, short_value, to_dot, to_mermaid


def micrograd_tape(persistent: bool = False) -> tuple[GradientTape, ef.Tensor, ef.Tensor]:
    """a = 2, b = -3; e = a·b; d = e + a; loss = d · -2 (a is used twice)."""
    a, b = ef.constant(2.0), ef.constant(-3.0)
    with GradientTape(persistent=persistent) as tape:
        tape.watch([a, b])
        e = a * b
        d = e + a
        loss = d * -2.0
    return tape, loss, a


def labels(text: str) -> dict[str, str]:
    """node id -> its label, from a mermaid flowchart."""
    return dict(re.findall(r'^  (\w+)\W*"(.*?)"\W*$', text, re.M))


def test_each_node_shows_its_value_and_gradient() -> None:
    tape, loss, _ = micrograd_tape()
    got = labels(tape.to_mermaid(values=True, target=loss))
    assert got == {
        "op0": "Mul<br/><small>float32 ()</small><br/>value -6.0<br/>grad -2.0",
        "in0": "watched<br/><small>float32 ()</small><br/>value 2.0<br/>grad 4.0",  # 6 - 2
        "in1": "watched<br/><small>float32 ()</small><br/>value -3.0<br/>grad -4.0",
        "op1": "AddV2<br/><small>float32 ()</small><br/>value -4.0<br/>grad -2.0",
        "op2": "Mul<br/><small>float32 ()</small><br/>value 8.0<br/>grad 1.0",
        # a constant is not tracked: the tape has no gradient for it
        "in2": "constant<br/><small>float32 ()</small><br/>value -2.0",
    }


def test_values_and_gradients_do_not_change_the_structure() -> None:
    tape, loss, _ = micrograd_tape(persistent=True)
    plain = tape.to_mermaid().splitlines()
    for options in ({"values": True}, {"target": loss}, {"values": True, "target": loss}):
        drawn = tape.to_mermaid(**options).splitlines()
        assert len(drawn) == len(plain)
        for line, plain_line in zip(drawn, plain, strict=True):
            if "-->" in line:
                assert line == plain_line  # the same edges, in the same order
            else:  # the same nodes, shapes and first lines: only more lines at the end
                assert line.startswith(plain_line.rstrip('"])'))
    assert tape.to_mermaid(values=True) == tape.to_mermaid(values=True)


def test_only_values_or_only_gradients() -> None:
    tape, loss, _ = micrograd_tape(persistent=True)
    values = tape.to_mermaid(values=True)
    assert "value -6.0" in values and "grad" not in values
    grads = tape.to_mermaid(target=loss)
    assert "grad 4.0" in grads and "value" not in grads
    assert 'label="Mul\\nfloat32 ()\\nvalue -6.0\\ngrad -2.0"' in tape.to_dot(True, loss)


def test_drawing_gradients_does_not_use_the_tape_up() -> None:
    tape, loss, a = micrograd_tape()  # not persistent
    tape.to_mermaid(values=True, target=loss)
    assert float(tape.gradient(loss, a)) == 4.0  # its one gradient() is still to come
    assert tape.to_mermaid() == "flowchart TD\n"  # which frees the records
    with pytest.raises(RuntimeError, match=r"draw it with target= before calling gradient\(\)"):
        tape.to_mermaid(values=True, target=loss)


def test_drawing_inside_the_block_records_nothing() -> None:
    x = ef.constant(3.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x + x
        before = tape.to_mermaid()
        assert "grad 7.0" in tape.to_mermaid(values=True, target=y)  # 3 + 3 + 1: three paths
        assert tape.to_mermaid() == before
        z = y * 2.0  # and it goes on recording
    assert float(tape.gradient(z, x)) == 14.0


def test_target_must_be_on_the_tape() -> None:
    tape, _, _ = micrograd_tape(persistent=True)
    with pytest.raises(ValueError, match="target= must be a tensor this tape computed"):
        tape.to_mermaid(target=ef.constant(1.0))


def test_variables_show_each_reads_gradient() -> None:
    w = Variable([1.0, 2.0, 3.0, 4.0, 5.0], name="w")
    with GradientTape() as tape:
        loss = ef.reduce_sum(w * w)
    text = tape.to_mermaid(values=True, target=loss)
    assert "value [1.0, 2.0, 3.0, …]<br/>grad [1.0, 2.0, 3.0, …]" in text  # each read: w
    assert "Sum<br/><small>float32 ()</small><br/>value 55.0<br/>grad 1.0" in text


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (3.0, "3.0"),
        (np.float32(0.1), "0.1"),
        (-0.7162978, "-0.7163"),
        (2.0 / 3.0, "0.6667"),
        (-1.23456789, "-1.2346"),
        (123456.0, "123456.0"),
        (0.000123456, "0.0001235"),
        (1e-7, "1e-07"),
        (1.234e10, "1.234e+10"),
        (0.0, "0.0"),
        (float("nan"), "nan"),
        (float("-inf"), "-inf"),
        (7, "7"),
        (True, "True"),
    ],
)
def test_short_numbers(value: object, expected: str) -> None:
    assert short_number(value) == expected


def test_short_values() -> None:
    assert short_value(ef.constant(3.0)) == "3.0"
    assert short_value(ef.constant([1.0, 2.0, 3.0, 4.0])) == "[1.0, 2.0, 3.0, 4.0]"  # all 4
    assert short_value(ef.range(5, dtype="float32")) == "[0.0, 1.0, 2.0, …]"
    assert short_value(ef.constant([[1, 2], [3, 4], [5, 6]])) == "[1, 2, 3, …]"  # flattened
    assert short_value(ef.zeros((0, 3))) == "[]"


def test_notes_are_escaped() -> None:
    nodes = [Node("a", "x", "float32 ()", notes=('<b>"bold"</b>',))]
    assert to_mermaid(nodes, []).splitlines()[1] == (
        '  a["x<br/><small>float32 ()</small><br/>#lt;b#gt;#quot;bold#quot;#lt;/b#gt;"]'
    )
    assert 'label="x\\nfloat32 ()\\n<b>\\"bold\\"</b>"' in to_dot(nodes, [])
    w = Variable(2.0, name='w<"1">')
    with GradientTape() as tape:
        y = w * 3.0
    assert '[("w#lt;#quot;1#quot;#gt;:0<br/>' in tape.to_mermaid(values=True, target=y)
