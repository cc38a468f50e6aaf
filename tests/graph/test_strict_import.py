"""A tampered GraphDef or SavedModel is refused before anything is built: every node's
attributes are checked against its op's row (``OpDef.attrs``) and every variable's shape and
dtype, and the one error, ``InvalidAttrError``, names the file (when known), the node and
the attribute. (The reliability issue's examples.)"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, TensorSpec, function, import_graph_def, saved_model
from eagerflow.graph.export.graph_def import encode_attr
from eagerflow.tensor.errors import InvalidArgumentError, InvalidAttrError


def _graph_def() -> dict[str, Any]:
    graph = Graph()
    with graph.as_default():
        x = ef.constant(np.ones((2, 2), np.float32), name="x")
        ef.matmul(x, x, name="mm")
        ef.fill([2, 3], 7, name="seven")
        Variable(np.zeros((2, 3), np.float32), name="v")
    return graph.as_graph_def()


def _node(graph_def: dict[str, Any], name: str) -> dict[str, Any]:
    return next(n for n in graph_def["node"] if n["name"] == name)


def _refused(tamper: Callable[[dict[str, Any]], None]) -> InvalidAttrError:
    """The error importing the def after ``tamper``; the target graph is left empty."""
    graph_def = copy.deepcopy(_graph_def())
    tamper(graph_def)
    target = Graph()
    with target.as_default(), pytest.raises(InvalidAttrError) as caught:
        import_graph_def(graph_def)
    assert target.get_operations() == [], "nothing is built before the check"
    return caught.value


def test_the_untampered_def_imports() -> None:
    with Graph().as_default():
        import_graph_def(_graph_def())


def test_a_const_of_a_dtype_not_ours() -> None:
    def tamper(graph_def: dict[str, Any]) -> None:
        _node(graph_def, "x")["attr"]["value"] = encode_attr(np.ones((2, 2), np.uint8))

    error = _refused(tamper)
    assert "node 'x': Const attribute 'value': expected a NumPy array of dtype" in str(error)
    assert "got ndarray" in str(error) and error.attr == "value"


def test_a_dtype_attribute_not_ours() -> None:
    def tamper(graph_def: dict[str, Any]) -> None:
        _node(graph_def, "seven")["attr"]["dtype"] = {"dtype": "uint8"}

    error = _refused(tamper)
    assert "node 'seven': Fill attribute 'dtype': eagerflow has no dtype for 'uint8'" in str(error)


def test_a_bool_that_is_a_string() -> None:
    def tamper(graph_def: dict[str, Any]) -> None:
        _node(graph_def, "mm")["attr"]["transpose_a"] = "yes"

    error = _refused(tamper)
    assert str(error) == (
        "GraphDef: node 'mm': MatMul attribute 'transpose_a': expected a bool, got str 'yes'"
    )
    assert isinstance(error, InvalidArgumentError)  # (and so a ValueError)


def test_a_fill_value_that_does_not_fit_its_dtype() -> None:
    def tamper(graph_def: dict[str, Any]) -> None:
        _node(graph_def, "seven")["attr"]["value"] = 1.5

    assert str(_refused(tamper)) == (
        "GraphDef: node 'seven': Fill attribute 'value': expected a bool, int or float, got "
        "float 1.5, which does not fit int32"
    )


@pytest.mark.parametrize(
    ("shape", "expected"),
    [([2.7, 3], "(2.7, 3)"), ([-2, 3], "(-2, 3)"), ("2x3", "'2x3'"), ([True, 3], "(True, 3)")],
)
def test_a_variable_shape_of_sizes_that_are_not_integers_or_are_negative(
    shape: Any, expected: str
) -> None:
    def tamper(graph_def: dict[str, Any]) -> None:
        graph_def["variables"]["v:0"]["shape"] = shape

    error = _refused(tamper)
    assert "variable 'v:0': shape: expected a tuple of ints >= 0" in str(error)
    assert expected in str(error) and error.attr == "shape"


def test_negative_dims_of_a_fill() -> None:
    def tamper(graph_def: dict[str, Any]) -> None:
        _node(graph_def, "seven")["attr"]["shape"] = [-2, 3]

    assert "Fill attribute 'shape': expected a tuple of ints >= 0" in str(_refused(tamper))


def test_a_variable_dtype_not_ours() -> None:
    def tamper(graph_def: dict[str, Any]) -> None:
        graph_def["variables"]["v:0"]["dtype"] = "uint8"

    assert "variable 'v:0': dtype: eagerflow has no dtype for 'uint8'" in str(_refused(tamper))


def test_a_missing_or_unknown_attribute() -> None:
    def drop(graph_def: dict[str, Any]) -> None:
        del _node(graph_def, "mm")["attr"]["transpose_b"]

    def add(graph_def: dict[str, Any]) -> None:
        _node(graph_def, "mm")["attr"]["adjoint"] = True

    assert "MatMul: attribute 'transpose_b' is missing" in str(_refused(drop))
    assert "MatMul: has no attribute 'adjoint'" in str(_refused(add))


def test_a_reference_to_nothing() -> None:
    def tamper(graph_def: dict[str, Any]) -> None:
        _node(graph_def, "mm")["attr"]["transpose_a"] = {"variable": "nowhere:0"}

    assert "the GraphDef has no variable 'nowhere:0'" in str(_refused(tamper))


def test_a_tampered_saved_model_names_its_file(tmp_path: Path) -> None:
    w = Variable(np.ones((3, 1), np.float32), name="w")

    @function(input_signature=[TensorSpec((None, 3), ef.float32)])
    def predict(x: Any) -> Any:
        return ef.matmul(x, w)

    saved_model.save(predict, tmp_path / "m")
    path = tmp_path / "m" / "saved_model.json"
    document = json.loads(path.read_text())
    graphs = document["graph_def"]["library"]["graphs"].values()
    node = next(n for g in graphs for n in g["node"] if n["op"] == "MatMul")
    node["attr"]["transpose_b"] = 1
    path.write_text(json.dumps(document))
    with pytest.raises(InvalidAttrError) as caught:
        saved_model.load(tmp_path / "m")
    assert str(caught.value).startswith(str(path))
    assert "MatMul attribute 'transpose_b': expected a bool, got int 1" in str(caught.value)
