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
