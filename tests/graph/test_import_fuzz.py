"""Fuzzing the loaders: a valid small export with one field changed (retyped, dropped, resized
or given a neighbouring value) is refused with an eagerflow error, or loads; never another
exception, a hang or a huge allocation. Hypothesis draws the changes (derandomized on CI,
see tests/conftest.py's profiles)."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, TensorSpec, function, import_graph_def, placeholder, saved_model
from eagerflow.tensor.errors import EagerflowError

REPLACEMENTS = [5, -1, 2.5, 1e300, True, None, "x", "../x", "", [], [5], {}, {"a": 1},
                [[[[1]]]], "drop", "grow"]  # fmt: skip


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside ``data`` (dict keys and list indices)."""
    if prefix:
        yield prefix
    if isinstance(data, dict | list):
        for key, child in data.items() if isinstance(data, dict) else enumerate(data):
            yield from _paths(child, (*prefix, key))


def _mutated(data: Any, path: tuple[Any, ...], replacement: Any) -> Any:
    data = copy.deepcopy(data)
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    if replacement == "drop":
        del parent[path[-1]]
    elif replacement == "grow":  # a list twice as long, a number 1000 times bigger
        value = parent[path[-1]]
        parent[path[-1]] = value * 2 if isinstance(value, list | str) else (
            value * 1000 if type(value) in (int, float) else value)  # fmt: skip
    else:
        parent[path[-1]] = replacement
    return data


def _graph_def() -> dict[str, Any]:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (None, 2), name="x")
        v = Variable(np.ones(2, np.float32), name="v")
        y = ef.concat([x * v, ef.fill([1, 2], 3.0)], axis=0)
        ef.reduce_sum(ef.matmul(y, ef.ones([2, 2]), transpose_a=False), axis=1)
    return g.as_graph_def()


GRAPH_DEF = _graph_def()
GRAPH_PATHS = list(_paths(GRAPH_DEF))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(GRAPH_PATHS), st.sampled_from(REPLACEMENTS))
def test_a_mutated_graph_def_is_refused_or_imported(path: tuple[Any, ...], new: Any) -> None:
    mutated = _mutated(GRAPH_DEF, path, new)
    try:
        with Graph().as_default():
            import_graph_def(mutated)
    except EagerflowError:
        pass  # a clear refusal (InvalidArgumentError, InvalidAttrError, ShapeError, ...)


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    w = Variable(np.array([1.0, -2.0, 3.0], np.float32), name="w")

    @function(input_signature=[TensorSpec((None, 3), ef.float32)])
    def predict(x: ef.Tensor) -> ef.Tensor:
        return ef.reduce_sum(ef.nn.softmax(x * w, axis=1), axis=0)

    path = tmp_path_factory.mktemp("fuzz") / "m"
    saved_model.save(predict, path)
    return path, predict(np.ones((2, 3), np.float32)).numpy()


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.data())
def test_a_mutated_saved_model_is_refused_or_loads(
    exported: tuple[Path, np.ndarray], tmp_path: Path, data: st.DataObject
) -> None:
    original, expected = exported
    document = json.loads((original / "saved_model.json").read_text())
    path_in = data.draw(st.sampled_from(list(_paths(document))), label="field")
    new = data.draw(st.sampled_from(REPLACEMENTS), label="value")
    target = tmp_path / f"m{abs(hash((path_in, repr(new))))}"
    shutil.copytree(original, target)
    (target / "saved_model.json").write_text(json.dumps(_mutated(document, path_in, new)))
    try:
        loaded = saved_model.load(target)
        result = loaded.predict(np.ones((2, 3), np.float32)).numpy()
    except (EagerflowError, FileNotFoundError):
        return  # a clear refusal
    finally:
        shutil.rmtree(target)
    if path_in[0] in ("variables", "graph_def") and "node" not in path_in:
        np.testing.assert_array_equal(result, expected)  # names and layout: the same model


@pytest.mark.parametrize("field", ["function", "inputs", "outputs"])
@pytest.mark.parametrize("value", [[], 5, {"a": 1}, ["x", 3]])
def test_a_signature_named_by_other_than_strings_is_refused(
    exported: tuple[Path, np.ndarray], tmp_path: Path, field: str, value: Any
) -> None:
    """What the fuzzing found: a list as a signature's function name escaped as a TypeError
    (unhashable) instead of the loader's own refusal."""
    original, _ = exported
    document = json.loads((original / "saved_model.json").read_text())
    target = tmp_path / "model"
    shutil.copytree(original, target)
    (target / "saved_model.json").write_text(
        json.dumps(_mutated(document, ("signatures", "serving_default", field), value))
    )
    with pytest.raises(saved_model.SavedModelError, match="serving_default"):
        saved_model.load(target)


@pytest.mark.parametrize(
    ("field", "value"),
    [(("graph_def", "variables"), "drop"), (("functions", "predict", "input_signature", 0), None)],
)
def test_a_saved_model_missing_its_variables_or_a_spec_is_refused(
    exported: tuple[Path, np.ndarray], tmp_path: Path, field: tuple[Any, ...], value: Any
) -> None:
    """What the fuzzing found: no ``variables`` entry escaped as a KeyError, and a None where
    an input spec goes as an AttributeError, instead of the loader's own refusal."""
    original, _ = exported
    document = json.loads((original / "saved_model.json").read_text())
    target = tmp_path / "model"
    shutil.copytree(original, target)
    (target / "saved_model.json").write_text(json.dumps(_mutated(document, field, value)))
    with pytest.raises(EagerflowError):
        saved_model.load(target).predict(np.ones((2, 3), np.float32))
