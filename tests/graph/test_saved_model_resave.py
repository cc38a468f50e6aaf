"""A loaded SavedModel saved again (as TensorFlow allows): its functions, its signatures
(with their input and output names), the function calling it calls, and its variables' values
go along; loaded again, it gives the same outputs."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import TensorSpec, function, saved_model


class _Model:
    def __init__(self) -> None:
        self.w = Variable([[1.0], [2.0]], name="w")

    @function(input_signature=[TensorSpec((None, 2), name="features")])
    def __call__(self, x):
        return ef.matmul(x, self.w)


def test_resaved_model_keeps_functions_signatures_and_values(tmp_path) -> None:
    model = _Model()
    only_for_serving = function(lambda x: {"scores": model(x) * 2.0},
                                input_signature=[TensorSpec((None, 2))])  # fmt: skip
    saved_model.save(model, tmp_path / "a", signatures={"double": only_for_serving})
    loaded = saved_model.load(tmp_path / "a")
    saved_model.save(loaded, tmp_path / "b")
    again = saved_model.load(tmp_path / "b")
    x = np.array([[1.0, 1.0], [0.5, 2.0]], np.float32)
    np.testing.assert_array_equal(again(x).numpy(), model(x).numpy())
    assert list(again.signatures) == ["double"]
    assert again.signatures["double"].inputs == loaded.signatures["double"].inputs
    scores = again.signatures["double"](x=x)["scores"]
    np.testing.assert_array_equal(scores.numpy(), 2.0 * model(x).numpy())
    assert [v.numpy().tolist() for v in again.variables] == [[[1.0], [2.0]]]


def test_resave_over_its_own_folder_and_other_signatures(tmp_path) -> None:
    saved_model.save(_Model(), tmp_path / "m")
    loaded = saved_model.load(tmp_path / "m")
    saved_model.save(loaded, tmp_path / "m", signatures={"serve": loaded.functions["__call__"]})
    again = saved_model.load(tmp_path / "m")
    assert list(again.signatures) == ["serve"]
    assert again.signatures["serve"].inputs == ["features"]
    np.testing.assert_array_equal(again(np.ones((1, 2), np.float32)).numpy(), [[3.0]])


def test_a_signature_must_be_a_function() -> None:
    loaded_like = function(lambda x: x, input_signature=[TensorSpec(())])
    with pytest.raises(TypeError, match="signatures maps names to functions"):
        saved_model.save(loaded_like, "unused", signatures={"s": "not a function"})  # type: ignore[dict-item]
