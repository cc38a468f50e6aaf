"""``eagerflow.tensor.nest``: TensorFlow's ``tf.nest`` names, the one place every package
turns structures of tensors into flat lists and back."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import eagerflow.tensor as ef
from eagerflow.tensor import nest

Pair = namedtuple("Pair", "first second")

structures = st.recursive(
    st.integers(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(st.text("abc", max_size=2), inner, max_size=3)
        | st.tuples(inner, inner).map(lambda t: Pair(*t))
    ),
    max_leaves=12,
)


@given(structures)
def test_pack_sequence_as_undoes_flatten(structure: Any) -> None:
    leaves = nest.flatten(structure)
    assert nest.pack_sequence_as(structure, leaves) == structure
    doubled = nest.pack_sequence_as(structure, [2 * leaf for leaf in leaves])
    assert nest.flatten(doubled) == [2 * leaf for leaf in leaves]
    nest.assert_same_structure(structure, doubled)
    assert nest.map_structure(lambda a, b: a - b, doubled, structure) == structure


def test_the_order_of_the_leaves() -> None:
    a, w, b = ef.constant(1.0), ef.constant(2.0), ef.constant(3.0)
    structure = [a, {"w": w, "b": (b,)}]
    assert nest.flatten(structure) == [a, w, b]  # dicts in insertion order
    assert nest.pack_sequence_as(structure, [1, 2, 3]) == [1, {"w": 2, "b": (3,)}]
    assert nest.flatten(a) == [a] and nest.pack_sequence_as(a, [7]) == 7  # a leaf alone
    assert nest.pack_sequence_as(Pair(1, [2]), "xy") == Pair("x", ["y"])
    assert nest.is_nested([]) and not nest.is_nested(a) and not nest.is_nested("text")


def test_map_structure_applies_an_op_leaf_by_leaf() -> None:
    sums = nest.map_structure(ef.add, {"x": [1.0, 2.0]}, {"x": [10.0, 20.0]})
    assert [float(t) for t in sums["x"]] == [11.0, 22.0]


@pytest.mark.parametrize(
    ("structure", "values", "message"),
    [
        ([1, [2, 3]], [1, 2], r"structure has 3 leaves but 2 values were given"),
        ([1, [2, 3]], [1, 2, 3, 4], r"structure has 3 leaves but 4 values were given"),
        ([1, 2], [1, 2, 3], r"structure has 2 leaves but 3 values were given"),
    ],
)
def test_pack_sequence_as_needs_one_value_per_leaf(
    structure: Any, values: list[int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        nest.pack_sequence_as(structure, values)


def test_structures_that_differ_are_named() -> None:
    with pytest.raises(ValueError, match=r"different structures: \[\., \[\.\]\] and \[\., \.\]"):
        nest.map_structure(ef.add, [1, [2]], [1, 2])
    with pytest.raises(ValueError, match=r"\{'a': \.\} and \{'b': \.\}"):
        nest.assert_same_structure({"a": 1}, {"b": 1})
    with pytest.raises(ValueError, match="at least one structure"):
        nest.map_structure(ef.add)
