"""What a TensorFlow user reaches for first, spelled and behaving as in TensorFlow: format
specs on tensors, ``tf.nn``, ``tf.linspace``, ``get_shape()``, ``one_hot``'s dtype from its
values, and ``tf.where`` with one argument."""

from __future__ import annotations

import pytest

import eagerflow.tensor as ef


# --- format specs -------------------------------------------------------------------------------
def test_a_one_element_tensor_formats_like_its_python_number() -> None:
    loss = ef.constant(0.123456)
    assert f"{loss:.3f}" == "0.123"
    assert "{:.3f}".format(loss) == "0.123"  # noqa: UP032 (the spelling users write)
    assert f"{ef.constant([[7]]):>4}" == "   7"  # one element, whatever the shape
    assert f"{ef.constant(2**40):,}" == "1,099,511,627,776"
    assert f"{ef.constant(True):d}" == "1"


def test_an_empty_format_spec_keeps_str() -> None:
    t = ef.constant([1.0, 2.0])
    assert f"{t}" == format(t, "") == str(t)


def test_a_format_spec_on_several_elements_is_a_shape_error() -> None:
    with pytest.raises(ef.ShapeError, match=r"format\(\) needs .* one element, got float32\[2\]"):
        f"{ef.constant([1.0, 2.0]):.3f}"
