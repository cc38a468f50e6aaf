"""Bad arguments get an error of a specific type naming the argument (issue 28's list):
nothing is truncated (``axis=1.5``), nothing escapes as a bare TypeError or IndexError from
deep inside (``import_graph_def`` of a malformed def), nothing odd is accepted
(``Session(5)``)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.graph import Graph, Session, TensorSpec, function, import_graph_def, placeholder
from eagerflow.tensor.errors import InvalidArgumentError, InvalidAttrError

X = ef.constant([[1.0, 2.0], [3.0, 4.0]])
AXIS_OPS: dict[str, Callable[[Any], Any]] = {
    "Sum": lambda axis: ef.reduce_sum(X, axis=axis),
    "Mean": lambda axis: ef.reduce_mean(X, axis=[0, axis]),
    "concat": lambda axis: ef.concat([X, X], axis=axis),
    "stack": lambda axis: ef.stack([X, X], axis=axis),
    "split": lambda axis: ef.split(X, 2, axis=axis),
    "gather": lambda axis: ef.gather(X, [0], axis=axis),
    "expand_dims": lambda axis: ef.expand_dims(X, axis),
    "squeeze": lambda axis: ef.squeeze(ef.ones([1, 2]), axis=axis),
    "softmax": lambda axis: ef.nn.softmax(X, axis=axis),
    "argmax": lambda axis: ef.argmax(X, axis=axis),
}


@pytest.mark.parametrize("op", list(AXIS_OPS))
@pytest.mark.parametrize("axis", [1.5, "1"], ids=["1.5", "'1'"])
def test_an_axis_that_is_not_an_integer_is_a_type_error_naming_it(op: str, axis: Any) -> None:
    with pytest.raises(TypeError, match=rf"{op}: axis must be an integer.*got (float|str)"):
        AXIS_OPS[op](axis)


def test_numpy_and_tensor_integers_are_axes() -> None:
    assert ef.reduce_sum(X, axis=np.int64(1)).shape == (2,)
    assert ef.concat([X, X], axis=ef.constant(1)).shape == (2, 4)


@pytest.mark.parametrize("bounds", [(0.0, float("nan")), (float("nan"),), (0.0, float("inf")),
                                    (0.0, 5.0, float("nan"))])  # fmt: skip
def test_range_of_a_bound_that_is_not_finite_names_it(bounds: tuple[float, ...]) -> None:
    with pytest.raises(InvalidArgumentError, match=r"range: (start|limit|delta) must be a finite"):
        ef.range(*bounds)


def test_function_of_something_not_callable_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"function\(\) takes a Python function to trace, got int"):
        function(5)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match=r"got list"):
        function([TensorSpec((2,))])  # type: ignore[call-overload]  # input_signature= forgot


def test_a_session_of_something_not_a_graph_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"Session\(graph=...\) takes a Graph .*got int 5"):
        Session(5)  # type: ignore[arg-type]


def test_a_feed_key_that_is_not_a_tensor_is_a_type_error_naming_it() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, ())
        y = x * 2.0
    with Session(g) as session, pytest.raises(TypeError, match=r"feed_dict keys .* got int 5"):
        session.run(y, feed_dict={5: 1.0})


def test_an_opset_that_is_not_an_int_is_a_type_error() -> None:
    pytest.importorskip("onnx")
    from eagerflow.graph.export import onnx

    @function(input_signature=[TensorSpec((2,), ef.float32)])
    def double(x: ef.Tensor) -> ef.Tensor:
        return x * 2.0

    with pytest.raises(TypeError, match=r"opset must be an int .*got str '17'"):
        onnx.to_model(double, opset="17")  # type: ignore[arg-type]


def _graph_def() -> dict[str, Any]:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None, 2), name="x")
        ef.concat([x * 2.0, ef.fill([1, 2], 3.0)], axis=0)
    return g.as_graph_def()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d["node"][-1].update(input=5), r"node 'ConcatV2': 'input' must be names"),
        (lambda d: d["node"][-1].update(input=[]), r"node 'ConcatV2' \(ConcatV2\) has 0 inputs"),
        (lambda d: d["node"][0].update(name=[]), r"node \[\]: 'name' must be name"),
        (lambda d: d["node"][0].update(attr=[]), r"node 'x': 'attr' must be dict"),
        (lambda d: d["node"].append(5), r"node None: must be a dict"),
        (lambda d: d["node"][1]["attr"]["value"]["tensor"].update(base64="!!"), r"'value'"),
        (lambda d: d["node"][1]["attr"]["value"]["tensor"].update(base64=5), r"'value'"),
    ],
)
def test_a_malformed_graph_def_is_refused_naming_the_node(change: Any, match: str) -> None:
    graph_def = copy.deepcopy(_graph_def())
    change(graph_def)
    with Graph().as_default(), pytest.raises(InvalidArgumentError, match=match) as e:
        import_graph_def(graph_def)
    assert isinstance(e.value, InvalidAttrError) or "inputs" in str(e.value)
