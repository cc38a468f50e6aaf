"""``get_variable`` / ``variable_scope``: what the conformance cases do not reach (they compare
with TensorFlow in tests/conformance/cases_scope.py): the bad arguments and their errors, the
error texts, the ops' names, and that a graph's store is its own."""

from __future__ import annotations

import pytest

import eagerflow.tensor as ef
from eagerflow.graph import Graph, name_scope
from eagerflow.nn import AUTO_REUSE, get_variable, get_variable_scope, variable_scope


def test_each_graph_has_its_own_store() -> None:
    with Graph().as_default():
        first = get_variable("w", [1])
    with Graph().as_default():
        second = get_variable("w", [1])  # not "already exists": another graph
    assert first is not second and first.name == second.name == "w:0"


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda: get_variable("w", 3), TypeError, "shape is a list of ints"),
        (lambda: get_variable("w", [2, -1]), ValueError, "negative size"),
        (lambda: get_variable("w", [None]), ValueError, "every size known"),
        (lambda: get_variable("bad name", [1]), ValueError, "not a valid name"),
        (lambda: get_variable("w", [1], initializer=[1.0, 2.0]), ValueError, "constant"),
    ],
)
def test_bad_arguments(call, error, text) -> None:
    with Graph().as_default(), pytest.raises(error, match=text):
        call()


def test_bad_scope_arguments() -> None:
    bad_reuse = variable_scope("s", reuse="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reuse is True, False, None or AUTO_REUSE"), bad_reuse:
        pass
    with pytest.raises(TypeError, match="give a name, a VariableScope"), variable_scope(None):
        pass


def test_error_texts_are_tensorflows() -> None:
    with Graph().as_default():
        with variable_scope("a"):
            get_variable("w", [2, 3])
        exists = r"^Variable a/w already exists, disallowed"
        with pytest.raises(ValueError, match=exists), variable_scope("a"):
            get_variable("w", [2, 3])
        with variable_scope("a", reuse=True):
            with pytest.raises(ValueError, match=r"^Variable a/x does not exist"):
                get_variable("x", [1])
            shape = r"specified shape \(3,\) and found shape \(2, 3\)"
            with pytest.raises(ValueError, match=shape):
                get_variable("w", [3])


def test_scope_object_reentered_and_initializer_ops_named() -> None:
    graph = Graph()
    with graph.as_default():
        with variable_scope("layer") as scope:
            w = get_variable("w", [2])
        with variable_scope(scope, reuse=AUTO_REUSE):
            assert get_variable("w", [2]) is w
            assert get_variable_scope().name == "layer"
        with name_scope("outer"), variable_scope("v"):
            assert get_variable("u", [1]).name == "v/u:0"
            assert ef.constant(1.0).name == "outer/v/Const:0"
    names = [o.name for o in graph.get_operations()]
    assert "layer/w" in names and any(n.startswith("layer/w/Initializer/") for n in names)
    assert get_variable_scope().name == ""  # every scope closed
