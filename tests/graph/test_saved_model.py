"""SavedModel: functions saved with the values of their variables, loaded (in this process
and in a fresh one that has only eagerflow's tensor, autodiff and graph packages) to give the
same results bit for bit, trainable further; the directory layout, atomic writes, and the
errors for every kind of bad directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import eagerflow.nn as nn
import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable, apply_gradient_descent
from eagerflow.graph import Graph, TensorSpec, function, saved_model
from eagerflow.graph.export.saved_model import (
    FORMAT,
    SAVED_MODEL_FILENAME,
    VARIABLES_FILENAME,
    LoadedModel,
    SavedModelError,
    load,
    save,
)
from eagerflow.tensor.errors import UnknownOpError

REPO = Path(__file__).resolve().parents[2]
X = np.random.default_rng(7).standard_normal((6, 4)).astype(np.float32)
Y = np.random.default_rng(8).standard_normal((6, 1)).astype(np.float32)


def identical(a: Any, b: Any) -> bool:
    """Same dtype, shape and bytes (NaN payloads and -0.0 included)."""
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def linear_regression() -> tuple[Any, Variable, Variable]:
    w = Variable(np.array([[0.5], [-1.25], [2.0], [0.125]], np.float32), name="w")
    b = Variable(np.array([0.1], np.float32), name="b")

    @function(input_signature=[TensorSpec((None, 4), ef.float32)])
    def predict(x: Any) -> Any:
        return ef.matmul(x, w) + b

    return predict, w, b


def mlp() -> tuple[nn.Sequential, Any]:
    ef.set_seed(3)
    model = nn.Sequential([nn.Dense(8, activation="relu"), nn.Dense(1)])
    serve = function(lambda x: model(x), input_signature=[TensorSpec((None, 4), ef.float32)])
    return model, serve


# --- round trips -----------------------------------------------------------------------------
def test_a_function_round_trips_bit_for_bit(tmp_path: Path) -> None:
    predict, w, _ = linear_regression()
    expected = predict(X)
    save(predict, tmp_path / "lr")
    loaded = load(tmp_path / "lr")
    assert isinstance(loaded, LoadedModel)
    assert identical(loaded.predict(X), expected)  # by its name
    assert identical(loaded(X), expected)  # the object saved was the function: callable
    assert identical(loaded.predict(x=ef.constant(X)), expected)  # by parameter name
    out = loaded.signatures["serving_default"](x=X)
    assert list(out) == ["output_0"] and identical(out["output_0"], expected)
    assert [v.name for v in loaded.variables] == ["w:0", "b:0"]
    assert loaded.trainable_variables == loaded.variables
    assert identical(loaded.variables[0].numpy(), w.numpy())
    assert loaded.variables[0] is not w  # new variables, holding the saved values
    # a None size of the signature stays open: any number of rows
    assert identical(loaded.predict(X[:2]), predict(X[:2]))


def test_the_directory_layout(tmp_path: Path) -> None:
    predict, _, _ = linear_regression()
    save(predict, tmp_path / "lr")
    assert sorted(os.listdir(tmp_path)) == ["lr"]  # no temporary directory left behind
    assert sorted(os.listdir(tmp_path / "lr")) == ["saved_model.json", "variables"]
    document = json.loads((tmp_path / "lr" / SAVED_MODEL_FILENAME).read_text())
    assert document["format"] == FORMAT and document["version"] == 1
    assert document["call"] == "predict"
    entry = document["functions"]["predict"]
    assert entry["parameters"] == ["x"]
    assert entry["input_signature"] == [
        {"spec": {"shape": [None, 4], "dtype": "float32", "name": None}}
    ]
    assert entry["outputs"] == {"output": 0}
    signature = document["signatures"]["serving_default"]
    assert signature["function"] == "predict"
    assert signature["inputs"] == [["x", {"shape": [None, 4], "dtype": "float32", "name": None}]]
    assert signature["outputs"] == [["output_0", {"shape": [None, 1], "dtype": "float32"}]]
    assert document["graph_def"]["node"] == []
    assert set(document["graph_def"]["library"]["functions"]) >= {"predict"}
    assert list(document["graph_def"]["variables"]) == ["w:0", "b:0"]
    with np.load(tmp_path / "lr" / VARIABLES_FILENAME, allow_pickle=False) as values:
        assert sorted(values.files) == ["b:0", "w:0"]
        assert values["w:0"].dtype == np.float32 and values["w:0"].shape == (4, 1)


def test_the_package_exports_it() -> None:
    import eagerflow.graph as graph

    assert graph.saved_model is saved_model
    assert "saved_model" in graph.__all__
    assert saved_model.save is save and saved_model.load is load


def test_an_object_saves_its_functions_by_attribute_name(tmp_path: Path) -> None:
    class Regressor:
        def __init__(self) -> None:
            self.w = Variable(np.arange(4.0, dtype=np.float32).reshape(4, 1), name="w")
            self.steps = Variable(np.int64(0), trainable=False, name="steps")
            self.untraced = function(lambda x: x * 2.0)  # no signature: skipped, with a warning
            self.double = function(lambda x: x * 2.0, input_signature=[TensorSpec(None)])

        @function(input_signature=[TensorSpec((None, 4), ef.float32)])
        def __call__(self, x: Any) -> Any:
            return ef.matmul(x, self.w)

        @function(input_signature=[TensorSpec((None, 4), ef.float32),
                                   TensorSpec((None, 1), ef.float32)])  # fmt: skip
        def loss(self, x: Any, y: Any) -> Any:
            return {"loss": ef.reduce_mean(ef.square(self(x) - y)), "predictions": self(x)}

        @function(input_signature=[])
        def count(self) -> Any:
            self.steps.assign_add(1)
            return self.steps.read_value()

    obj = Regressor()
    with pytest.warns(UserWarning, match="untraced have no input_signature"):
        save(obj, tmp_path / "m", signatures={"serving_default": obj.loss})
    loaded = load(tmp_path / "m")
    assert sorted(loaded.functions) == ["__call__", "count", "double", "loss"]
    assert identical(loaded(X), obj(X))
    assert identical(loaded.double(np.float32(3.5)), obj.double(np.float32(3.5)))
    expected = obj.loss(X, Y)
    got = loaded.loss(X, y=Y)
    assert list(got) == ["loss", "predictions"]
    assert all(identical(got[k], expected[k]) for k in expected)
    served = loaded.signatures["serving_default"](x=X, y=Y)  # a dict's keys name the outputs
    assert list(served) == ["loss", "predictions"] and identical(served["loss"], expected["loss"])
    # one variable however many functions read it; state changes persist across calls
    assert [v.name for v in loaded.variables] == ["w:0", "steps:0"]
    assert [v.name for v in loaded.trainable_variables] == ["w:0"]
    assert int(loaded.count()) == 1 and int(loaded.count()) == 2
    assert int(loaded.variables[1].numpy()) == 2 and int(obj.steps.numpy()) == 0
    with pytest.raises(AttributeError, match=r"no function 'untraced'.*it has: __call__"):
        loaded.untraced  # noqa: B018


def test_nested_inputs_and_outputs_keep_their_structure(tmp_path: Path) -> None:
    spec = {"a": TensorSpec((2,), ef.float32), "b": TensorSpec((2,), ef.float64, name="bee")}

    @function(input_signature=[spec, TensorSpec((), ef.int32)])
    def f(d: Any, n: Any) -> Any:
        return (d["a"] * 2.0, [ef.cast(d["b"], ef.float32), n + 1])

    save(f, tmp_path / "f")
    loaded = load(tmp_path / "f")
    args = ({"a": np.array([1.0, -0.0], np.float32), "b": np.array([np.nan, 2.0])}, 4)
    got, expected = loaded.f(*args), f(*args)
    assert isinstance(got, tuple) and isinstance(got[1], list)
    assert all(identical(g, e) for g, e in zip(ef.nest.flatten(got), ef.nest.flatten(expected),
                                                strict=True))  # fmt: skip
    served = loaded.signatures["serving_default"](d_0=args[0]["a"], bee=args[0]["b"], n=4)
    assert list(served) == ["output_0", "output_1", "output_2"]
    assert identical(served["output_2"], expected[1][1])


def test_signature_calls_are_checked(tmp_path: Path) -> None:
    predict, _, _ = linear_regression()
    save(predict, tmp_path / "lr")
    loaded = load(tmp_path / "lr")
    serving = loaded.signatures["serving_default"]
    with pytest.raises(TypeError, match=r"named tensors only: x=\.\.\."):
        serving(X)
    with pytest.raises(TypeError, match=r"missing \['x'\]; unknown \['z'\]"):
        serving(z=X)
    with pytest.raises(ValueError, match="expected TensorSpec"):
        loaded.predict(np.zeros((2, 3), np.float32))  # the signature's shape is checked
    with pytest.raises(TypeError, match="not describe"):
        loaded.predict(X, y=X)


def test_saving_again_replaces_the_saved_model(tmp_path: Path) -> None:
    predict, w, _ = linear_regression()
    save(predict, tmp_path / "lr")
    w.assign(w * 2.0)
    save(predict, tmp_path / "lr")
    assert sorted(os.listdir(tmp_path)) == ["lr"]
    assert identical(load(tmp_path / "lr").predict(X), predict(X))


def test_a_failed_save_leaves_the_old_saved_model(tmp_path: Path, monkeypatch: Any) -> None:
    predict, w, _ = linear_regression()
    save(predict, tmp_path / "lr")
    before = predict(X)
    w.assign(w * 2.0)

    def fail(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", fail)
    with pytest.raises(OSError, match="disk full"):
        save(predict, tmp_path / "lr")
    assert sorted(os.listdir(tmp_path)) == ["lr"]  # the temporary directory is gone
    assert identical(load(tmp_path / "lr").predict(X), before)


def test_a_directory_that_is_not_a_saved_model_is_never_replaced(tmp_path: Path) -> None:
    predict, _, _ = linear_regression()
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "thesis.txt").write_text("years of work")
    with pytest.raises(FileExistsError, match=r"not a SavedModel.*refusing"):
        save(predict, tmp_path / "precious")
    assert (tmp_path / "precious" / "thesis.txt").read_text() == "years of work"
    (tmp_path / "file").write_text("")
    with pytest.raises(FileExistsError, match="not a directory"):
        save(predict, tmp_path / "file")
    (tmp_path / "empty").mkdir()
    save(predict, tmp_path / "empty")  # an empty directory is fine
    assert (tmp_path / "empty" / SAVED_MODEL_FILENAME).is_file()


def test_loading_inside_a_graph_still_makes_eager_variables(tmp_path: Path) -> None:
    predict, _, _ = linear_regression()
    save(predict, tmp_path / "lr")
    with Graph().as_default():
        loaded = load(tmp_path / "lr")
    assert all(v.holds_value for v in loaded.variables)
    assert identical(loaded.predict(X), predict(X))


# --- a real model: training after loading, and a fresh process -------------------------------
def sgd_losses(serve: Any, variables: list[Variable], steps: int) -> list[np.ndarray]:
    losses = []
    for _ in range(steps):
        with GradientTape() as tape:
            loss = ef.reduce_mean(ef.square(serve(X) - Y))
        for v, g in zip(variables, tape.gradient(loss, variables), strict=True):
            apply_gradient_descent(v, 0.05, g)
        losses.append(np.asarray(loss))
    return losses


class Regression(nn.Model):
    """A model whose serving function is a method: saved as an object, by attribute name."""

    def __init__(self) -> None:
        super().__init__()
        self.hidden = nn.Dense(8, activation="relu")
        self.out = nn.Dense(1)

    def call(self, inputs: Any) -> Any:
        return self.out(self.hidden(inputs))

    @function(input_signature=[TensorSpec((None, 4), ef.float32)])
    def serve(self, x: Any) -> Any:
        return self(x)


def test_a_model_with_a_serving_method(tmp_path: Path) -> None:
    ef.set_seed(5)
    model = Regression()
    extra = function(lambda x: model(x) * 2.0, input_signature=[TensorSpec((None, 4))])
    save(model, tmp_path / "model", signatures={"serving_default": extra})
    loaded = load(tmp_path / "model")
    assert list(loaded.functions) == ["serve"]  # the signature's own function is no attribute
    assert identical(loaded.serve(X), model.serve(X))
    assert identical(loaded.signatures["serving_default"](x=X)["output_0"], extra(X))
    assert len(loaded.variables) == len(model.variables) == 4
    with pytest.raises(TypeError, match="not callable"):
        loaded(X)


def test_a_loaded_model_trains_further_as_the_original_does(tmp_path: Path) -> None:
    model, serve = mlp()
    serve(X)  # built (and the trace made) before saving
    save(serve, tmp_path / "mlp")
    loaded = load(tmp_path / "mlp")
    assert len(loaded.trainable_variables) == len(model.trainable_variables) == 4
    original = sgd_losses(serve, model.trainable_variables, 5)
    again = sgd_losses(loaded, loaded.trainable_variables, 5)
    assert original[-1] < original[0]
    assert all(identical(a, b) for a, b in zip(original, again, strict=True))
    for mine, theirs in zip(model.trainable_variables, loaded.trainable_variables, strict=True):
        assert identical(mine.numpy(), theirs.numpy())


def test_a_model_trained_under_a_tape_before_saving_loads_and_trains(tmp_path: Path) -> None:
    model, serve = mlp()
    sgd_losses(serve, model.trainable_variables, 2)  # its trace now has gradient nodes too
    save(serve, tmp_path / "mlp")
    loaded = load(tmp_path / "mlp")
    original = sgd_losses(serve, model.trainable_variables, 3)
    again = sgd_losses(loaded, loaded.trainable_variables, 3)
    assert all(identical(a, b) for a, b in zip(original, again, strict=True))


FRESH_PROCESS = """
import json, sys

class Refuse:  # eagerflow.nn and the tests must not be imported here, even by accident
    def find_spec(self, name, path=None, target=None):
        if name == "eagerflow.nn" or name.startswith(("eagerflow.nn.", "tests")):
            raise ImportError(f"the fresh process may not import {name}")
        return None

sys.meta_path.insert(0, Refuse())
import numpy as np
from eagerflow.graph import saved_model

x = np.load(sys.argv[3], allow_pickle=False)
results = {}
for name in ("mlp", "lr"):
    loaded = saved_model.load(sys.argv[1] + "/" + name)
    results[name] = {
        "call": np.asarray(loaded(x)).tobytes().hex(),
        "signature": np.asarray(
            loaded.signatures["serving_default"](x=x)["output_0"]
        ).tobytes().hex(),
    }
assert not any(m == "eagerflow.nn" or m.startswith(("eagerflow.nn.", "tests")) for m in sys.modules)
results["modules"] = sorted(m for m in sys.modules if m.startswith("eagerflow."))
print(json.dumps(results))
"""


def test_a_fresh_process_without_nn_gives_the_same_bits(tmp_path: Path) -> None:
    _, serve = mlp()
    predict, _, _ = linear_regression()
    save(serve, tmp_path / "mlp")
    save(predict, tmp_path / "lr")
    np.save(tmp_path / "x.npy", X)
    script = tmp_path / "fresh.py"
    script.write_text(textwrap.dedent(FRESH_PROCESS))
    layers = ("tensor", "autodiff", "graph")  # not nn
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(REPO / "packages" / p / "src")
                                                       for p in layers)}  # fmt: skip
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), "unused", str(tmp_path / "x.npy")],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    for name, expected in (("mlp", serve(X)), ("lr", predict(X))):
        bits = np.asarray(expected).tobytes().hex()
        assert results[name] == {"call": bits, "signature": bits}
    assert not any(m.startswith("eagerflow.nn") for m in results["modules"])
    assert "eagerflow.graph.export.saved_model.loading" in results["modules"]


# --- errors ----------------------------------------------------------------------------------
@pytest.fixture
def saved(tmp_path: Path) -> Path:
    predict, _, _ = linear_regression()
    save(predict, tmp_path / "lr")
    return tmp_path / "lr"


def edit_json(directory: Path, change: Any) -> None:
    path = directory / SAVED_MODEL_FILENAME
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def test_a_function_without_an_input_signature_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"'f' has no input_signature.*TensorSpec"):
        save(_unsigned(), tmp_path / "x")
    assert not (tmp_path / "x").exists()

    class Nothing:
        f = function(lambda self, x: x)

    with pytest.raises(TypeError, match=r"Nothing has no attribute.*its functions f have none"):
        save(Nothing(), tmp_path / "x")
    predict, _, _ = linear_regression()
    with pytest.raises(TypeError, match=r"signatures.*has no input_signature"):
        save(predict, tmp_path / "x", signatures={"other": _unsigned()})


def _unsigned() -> Any:
    @function
    def f(x: Any) -> Any:
        return x

    return f


def test_a_missing_or_foreign_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no SavedModel directory at .*nowhere"):
        load(tmp_path / "nowhere")
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "model.pb").write_bytes(b"\x08\x01")
    with pytest.raises(FileNotFoundError, match=r"is not a SavedModel: it has no saved_model.json"):
        load(tmp_path / "foreign")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d.update(format="tf.SavedModel"), "expected format 'eagerflow.SavedModel'"),
        (lambda d: d.update(version=2), "version 2 .written by a newer eagerflow"),
        (lambda d: d.pop("functions"), "'functions' must be a dict"),
        (lambda d: d["graph_def"].update(version=9), r"graph_def.*version 9"),
        (lambda d: d["functions"]["predict"].update(parameters=[]), "function 'predict'"),
        (lambda d: d["functions"]["predict"].update(outputs={"output": 3}), "names outputs"),
        (lambda d: d["signatures"]["serving_default"].update(function="gone"), "no saved"),
        (lambda d: d.update(variables="../elsewhere.npz"), "inside the directory"),
    ],
)
def test_a_tampered_json_is_a_saved_model_error(saved: Path, change: Any, match: str) -> None:
    edit_json(saved, change)
    with pytest.raises(SavedModelError, match=match) as raised:
        load(saved)
    assert SAVED_MODEL_FILENAME in str(raised.value)


def test_an_unknown_op_is_an_unknown_op_error_naming_the_file(saved: Path) -> None:
    def rename_op(document: dict[str, Any]) -> None:
        for graph in document["graph_def"]["library"]["graphs"].values():
            for node in graph["node"]:
                if node["op"] == "MatMul":
                    node["op"] = "Frobnicate"

    edit_json(saved, rename_op)
    with pytest.raises(UnknownOpError, match=r"saved_model.json.*'Frobnicate'"):
        load(saved)


def test_a_truncated_json_file(saved: Path) -> None:
    path = saved / SAVED_MODEL_FILENAME
    path.write_text(path.read_text()[:200])
    with pytest.raises(SavedModelError, match=r"saved_model.json: not JSON"):
        load(saved)


def test_a_missing_variables_file(saved: Path) -> None:
    (saved / VARIABLES_FILENAME).unlink()
    with pytest.raises(FileNotFoundError, match=r"variables.npz: the SavedModel's variables file"):
        load(saved)


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"w:0": np.zeros((4, 2), np.float32)}, r"variable 'w:0' is float32\[4, 1\].*\[4, 2\]"),
        ({"w:0": np.zeros((4, 1), np.float64)}, r"variable 'w:0' is float32\[4, 1\].*float64"),
        ({}, "has no value for variable 'w:0'"),
    ],
)
def test_variable_values_that_do_not_fit(saved: Path, values: dict[str, Any], match: str) -> None:
    path = saved / VARIABLES_FILENAME
    np.savez(path, **{"b:0": np.array([0.1], np.float32), **values})
    with pytest.raises(SavedModelError, match=match) as raised:
        load(saved)
    assert "variables.npz" in str(raised.value)


def test_loading_never_unpickles(saved: Path, monkeypatch: Any) -> None:
    import pickle

    def no(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("pickle was used")

    path = saved / VARIABLES_FILENAME
    np.savez(path, **{"w:0": np.array([object()], dtype=object)})  # savez pickles objects
    monkeypatch.setattr(pickle, "load", no)
    monkeypatch.setattr(pickle, "loads", no)
    with pytest.raises(SavedModelError, match=r"member 'w:0.npy': dtype: an object array"):
        load(saved)
    path.write_bytes(b"not a zip file at all")
    with pytest.raises(SavedModelError, match=r"not an .npz archive of .npy arrays"):
        load(saved)


def test_control_flow_and_captured_tensors_travel(tmp_path: Path) -> None:
    scale = ef.constant(np.float32(1.5))  # an eager tensor the function captures: a constant
    v = Variable(np.float32(0.25), name="v")

    @function(input_signature=[TensorSpec((None,), ef.float32), TensorSpec((), ef.int32)])
    def f(x: Any, n: Any) -> Any:
        total = ef.zeros_like(x)
        for _i in ef.range(n):  # a while_loop (AutoGraph)
            total += x * scale * v
        if ef.reduce_sum(total) > 0:  # a cond
            total = total * 2.0
        return total

    save(f, tmp_path / "f")
    loaded = load(tmp_path / "f")
    x = np.array([1.0, -2.0, 4.0], np.float32)
    for n in (0, 1, 3):
        assert identical(loaded.f(x, n), f(x, n))
    with GradientTape() as tape:
        y = ef.reduce_sum(loaded.f(x, 3))
    (grad,) = tape.gradient(y, loaded.trainable_variables)
    with GradientTape() as tape:
        y = ef.reduce_sum(f(x, 3))
    assert identical(grad, tape.gradient(y, [v])[0])


def test_a_function_that_returns_nothing(tmp_path: Path) -> None:
    v = Variable(np.zeros(2, np.float32), name="v")

    @function(input_signature=[TensorSpec((2,), ef.float32)])
    def add(x: Any) -> None:
        v.assign_add(x)

    save(add, tmp_path / "add")
    loaded = load(tmp_path / "add")
    assert loaded.add(np.ones(2, np.float32)) is None
    assert loaded.signatures["serving_default"](x=np.ones(2, np.float32)) == {}
    assert identical(loaded.variables[0].numpy(), np.full(2, 2.0, np.float32))
    assert identical(v.numpy(), np.zeros(2, np.float32))  # the original is untouched


def test_variables_of_one_name_keep_their_own_values(tmp_path: Path) -> None:
    a = Variable(np.float32(1.0), name="w")
    b = Variable(np.float32(-2.0), name="w")

    @function(input_signature=[TensorSpec((), ef.float32)])
    def f(x: Any) -> Any:
        return a * x + b

    save(f, tmp_path / "f")
    loaded = load(tmp_path / "f")
    with np.load(tmp_path / "f" / VARIABLES_FILENAME, allow_pickle=False) as values:
        assert sorted(values.files) == ["w:0", "w:0_1"]
    assert [float(v.numpy()) for v in loaded.variables] == [1.0, -2.0]
    assert identical(loaded.f(3.0), f(3.0))


def test_the_directory_gets_the_usual_permissions(tmp_path: Path) -> None:
    predict, _, _ = linear_regression()
    (tmp_path / "usual").mkdir()
    save(predict, tmp_path / "lr")
    mode = (tmp_path / "lr").stat().st_mode & 0o777
    assert mode == (tmp_path / "usual").stat().st_mode & 0o777  # not mkdtemp's 0700
