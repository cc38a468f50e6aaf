"""``function(reduce_retracing=True)``: after a retrace caused by a shape change, the trace is
made for ``None`` in the sizes that differed (an unknown rank when the ranks did), and later
calls of that kind reuse it. TensorFlow's trace counts are in tests/conformance/cases_gaps.py.
"""

from __future__ import annotations

from typing import Any

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape
from eagerflow.graph import function
from eagerflow.graph.tracing.signatures import relax


def test_the_second_shape_is_traced_with_none_where_sizes_differ() -> None:
    seen: list[Any] = []

    @function(reduce_retracing=True)
    def f(x: Any, scale: float) -> Any:
        seen.append(x.shape)
        return ef.reduce_sum(x, axis=0) * scale

    assert f(ef.ones([2, 3]), 2.0).numpy().tolist() == [4.0] * 3
    assert f(ef.ones([4, 3]), 2.0).numpy().tolist() == [8.0] * 3
    assert f(ef.ones([7, 3]), 2.0).numpy().tolist() == [14.0] * 3
    assert seen == [(2, 3), (None, 3)]  # the shape is kept where it stayed, as TensorFlow
    f(ef.ones([7, 3]), 3.0)  # a Python value that changes is not relaxed: a trace of its own
    assert seen[-1] == (7, 3)
    assert f.experimental_get_tracing_count() == 3


def test_without_it_every_shape_is_a_trace() -> None:
    f = function(lambda x: x * 2.0)
    for n in (1, 2, 3):
        f(ef.ones([n]))
    assert f.experimental_get_tracing_count() == 3


def test_on_a_method_and_under_a_tape() -> None:
    class Model:
        @function(reduce_retracing=True)
        def square(self, x: Any) -> Any:
            return x * x

    model = Model()
    for n in (2, 3, 4):
        x = ef.ones([n]) * 3.0
        with GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(model.square(x))
        assert tape.gradient(y, x).numpy().tolist() == [6.0] * n
    assert model.square.experimental_get_tracing_count() == 2


def test_relax_leaves_unrelated_keys_alone() -> None:
    key = (("tensor", ef.float32, (3,)),)
    assert relax(key, [], ["x"]) == (key, ["x"])  # the first trace: as it is
    other = (("tensor", ef.int32, (2,)),)
    assert relax(key, [other], ["x"]) == (key, ["x"])  # another dtype: no common shape
    (common,), (spec,) = relax(key, [(("tensor", ef.float32, (2, 2)),)], ["x"])
    assert common == ("tensor", ef.float32, None) and spec.static_shape is None
