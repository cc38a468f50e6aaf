"""Conformance cases for the API gaps of issue 27: Keras' loss classes (``ns.losses``).

Imported by ``cases.py``, whose ``CASES`` these join through its ``add``.
"""

from __future__ import annotations

from typing import Any

from cases import add

Y_TRUE = [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
PROBABILITIES = [[0.2, 0.7, 0.1], [0.6, 0.1, 0.3]]
LOGITS = [[-1.5, 2.0, 0.3], [3.0, -0.5, 0.0]]
REGRESSION = ([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]], [[1.5, -0.5, 0.4], [2.5, 3.1, -4.0]])


def _loss(cls: str, y_true: Any, y_pred: Any, dt: str = "float32", **kwargs: Any) -> Any:
    def run(ns: Any) -> Any:
        loss = getattr(ns.losses, cls)(**kwargs)
        return loss(ns.constant(y_true, getattr(ns, dt)), ns.constant(y_pred, getattr(ns, dt)))

    return run


def _gradient(cls: str, y_true: Any, y_pred: Any, **kwargs: Any) -> Any:
    def run(ns: Any) -> Any:
        x = ns.constant(y_pred)
        with ns.GradientTape() as tape:
            tape.watch(x)
            y = getattr(ns.losses, cls)(**kwargs)(ns.constant(y_true), x)
        return tape.gradient(y, x)

    return run


_REDUCTIONS = ("sum_over_batch_size", "sum", "none")
_CLASSES: dict[str, tuple[Any, Any, dict[str, Any]]] = {
    "MeanSquaredError": (*REGRESSION, {}),
    "MeanAbsoluteError": (*REGRESSION, {}),
    "Huber": (*REGRESSION, {"delta": 0.8}),
    "BinaryCrossentropy": (Y_TRUE, PROBABILITIES, {}),
    "BinaryCrossentropy/from_logits": (Y_TRUE, LOGITS, {"from_logits": True}),
    "CategoricalCrossentropy": (Y_TRUE, PROBABILITIES, {}),
    "CategoricalCrossentropy/from_logits": (Y_TRUE, LOGITS, {"from_logits": True}),
    "SparseCategoricalCrossentropy": ([1, 0], PROBABILITIES, {}),
    "SparseCategoricalCrossentropy/from_logits": ([1, 0], LOGITS, {"from_logits": True}),
    "SparseCategoricalCrossentropy/column_labels": ([[1], [0]], LOGITS, {"from_logits": True}),
}

for _name, (_true, _pred, _kwargs) in _CLASSES.items():
    _cls = _name.split("/")[0]
    for _reduction in _REDUCTIONS:
        add(
            f"losses/{_name}/{_reduction}",
            _loss(_cls, _true, _pred, reduction=_reduction, **_kwargs),
        )
    add(f"losses/{_name}/gradient", _gradient(_cls, _true, _pred, **_kwargs))

add(
    "losses/BinaryCrossentropy/edges",
    _loss("BinaryCrossentropy", Y_TRUE, [[0.0, 1.0, 1.0], [1.0, 0.0, 0.5]]),
)
add("losses/Huber/default_delta", _loss("Huber", *REGRESSION))
add("losses/MeanSquaredError/float64", _loss("MeanSquaredError", *REGRESSION, dt="float64"))
add(
    "losses/MeanSquaredError/shape_mismatch",
    _loss("MeanSquaredError", [1.0, 2.0], [[1.0, 2.0, 3.0]]),
)
add("losses/unknown_reduction", _loss("MeanSquaredError", *REGRESSION, reduction="mean_of_nothing"))


# --- the Adagrad optimizer (Keras' formula) -------------------------------------------------
def _adagrad(dt: str, steps: int, **kwargs: Any) -> Any:
    def run(ns: Any) -> Any:
        v = ns.Variable(ns.constant([1.0, -2.0, 0.5], getattr(ns, dt)))
        scale = ns.constant([3.0, 0.5, -1.0], getattr(ns, dt))
        optimizer = ns.Adagrad(**kwargs)
        for _ in range(steps):
            with ns.GradientTape() as tape:
                loss = ns.reduce_sum(scale * v * v)
            optimizer.apply_gradients([(tape.gradient(loss, v), v)])
        return ns.convert_to_tensor(v)

    return run


add("optimizers/Adagrad/defaults", _adagrad("float32", 3))
add("optimizers/Adagrad/float64", _adagrad("float64", 4, learning_rate=0.3))
add(
    "optimizers/Adagrad/options",
    _adagrad("float32", 5, learning_rate=0.5, initial_accumulator_value=0.01, epsilon=1e-3),
)


# --- function(reduce_retracing=True) ------------------------------------------------------------
def _retracing(shapes: list[list[int]], reduce_retracing: bool = True) -> Any:
    """Call a function on ones of each shape: its results, then how many traces it made."""

    def run(ns: Any) -> Any:
        f = ns.function(lambda x: ns.reduce_sum(x) * 2.0, reduce_retracing=reduce_retracing)
        results = [f(ns.ones(shape)) for shape in shapes]
        return [*results, ns.constant(f.experimental_get_tracing_count())]

    return run


add("function/reduce_retracing/vectors", _retracing([[2], [3], [4], [5], [3]]))
add("function/reduce_retracing/one_axis_of_two", _retracing([[2, 3], [4, 3], [5, 3], [5, 1]]))
add("function/reduce_retracing/ranks", _retracing([[2], [3], [2, 2], [3, 3, 1], [4]]))
add("function/reduce_retracing/off", _retracing([[2], [3], [4]], reduce_retracing=False))


# --- TensorArray, eagerly and in a function --------------------------------------------------
def _array(build: Any, in_function: bool = False) -> Any:
    def run(ns: Any) -> Any:
        return ns.function(lambda: build(ns))() if in_function else build(ns)

    return run


def _write_stack(ns: Any) -> Any:
    ta = ns.TensorArray(ns.float32, size=3)
    for i in range(3):
        ta = ta.write(i, ns.constant([1.0, 2.0]) * float(i))
    # one read each: TensorFlow's eager TensorArray clears a slot once read (clear_after_read)
    return [ta.stack(), ta.size(), ta.concat()]


def _read_gather(ns: Any) -> Any:
    ta = ns.TensorArray(ns.float32, size=3).unstack(ns.constant([[1.0], [2.0], [3.0]]))
    return [ta.read(1), ta.gather([2, 0])]


def _dynamic(ns: Any) -> Any:
    ta = ns.TensorArray(ns.int32, size=0, dynamic_size=True)
    for i in range(4):
        ta = ta.write(i, ns.constant(i * i))
    return [ta.stack(), ta.size()]


def _unstack_scatter(ns: Any) -> Any:
    ta = ns.TensorArray(ns.float32, size=3).unstack(
        ns.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    )
    ta = ta.scatter([0, 2], ns.constant([[9.0, 9.0], [7.0, 7.0]]))
    return [ta.stack(), ta.read(1)]


def _unwritten(ns: Any) -> Any:
    ta = ns.TensorArray(ns.float32, size=3, element_shape=[2])
    return ta.write(1, ns.constant([1.0, 2.0])).stack()


def _empty(ns: Any) -> Any:
    return ns.TensorArray(ns.float32, size=0, element_shape=[2]).stack()


def _past_the_end(ns: Any) -> Any:
    return ns.TensorArray(ns.float32, size=2).write(2, 1.0).stack()


def _wrong_shape(ns: Any) -> Any:
    ta = ns.TensorArray(ns.float32, size=2).write(0, ns.constant([1.0, 2.0]))
    return ta.write(1, ns.constant([1.0, 2.0, 3.0])).stack()


def _wrong_dtype(ns: Any) -> Any:
    return ns.TensorArray(ns.float32, size=1).write(0, ns.constant(1)).stack()


def _read_past_the_end(ns: Any) -> Any:
    return ns.TensorArray(ns.float32, size=2).write(0, 1.0).read(5)


_ARRAYS = {
    "write_stack": _write_stack,
    "read_gather": _read_gather,
    "dynamic_size": _dynamic,
    "unstack_scatter": _unstack_scatter,
    "unwritten_slot": _unwritten,
    "empty": _empty,
    "write_past_the_end": _past_the_end,
    "wrong_shape": _wrong_shape,
    "wrong_dtype": _wrong_dtype,
    "read_past_the_end": _read_past_the_end,
}
for _name, _build in _ARRAYS.items():
    add(f"tensor_array/{_name}", _array(_build))
for _name in ("write_stack", "read_gather", "dynamic_size", "unstack_scatter", "unwritten_slot"):
    add(f"tensor_array/{_name}/in_function", _array(_ARRAYS[_name], in_function=True))
