"""The vocabulary the conformance cases are written in, for TensorFlow and for eagerflow.

A case is written once, against a namespace ``ns`` holding TensorFlow's names (``ns.constant``,
``ns.reduce_sum``, ``ns.GradientTape``...). ``tensorflow()`` fills it from TensorFlow (only
``record.py`` calls it, in a virtual environment of its own), ``eagerflow()`` from eagerflow.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

# our name -> (where TensorFlow has it, where eagerflow has it)
NAMES: dict[str, tuple[str, str]] = {
    **{d: (f"tf.{d}", f"ef.{d}") for d in ("float16", "float32", "float64", "int32", "int64")},
    "bool": ("tf.bool", "ef.bool_"),
    **{
        name: (f"tf.{name}", f"ef.{name}")
        for name in [
            "constant",
            "convert_to_tensor",
            "cast",
            "identity",
            "abs",
            "negative",
            "sign",
            "square",
            "sqrt",
            "exp",
            "tanh",
            "sigmoid",
            "add",
            "subtract",
            "multiply",
            "divide",
            "maximum",
            "minimum",
            "pow",
            "equal",
            "not_equal",
            "less",
            "less_equal",
            "greater",
            "greater_equal",
            "logical_and",
            "logical_or",
            "logical_not",
            "matmul",
            "reduce_sum",
            "reduce_mean",
            "reduce_max",
            "reduce_min",
            "reduce_prod",
            "argmax",
            "argmin",
            "reshape",
            "transpose",
            "concat",
            "stack",
            "split",
            "gather",
            "one_hot",
            "where",
            "range",
            "linspace",
            "fill",
            "zeros",
            "ones",
            "zeros_like",
            "ones_like",
            "expand_dims",
            "squeeze",
            "tile",
            "broadcast_to",
            "clip_by_value",
            "size",
            "stop_gradient",
        ]
    },
    "log": ("tf.math.log", "ef.log"),
    "floordiv": ("tf.math.floordiv", "ef.floordiv"),
    "floormod": ("tf.math.floormod", "ef.floormod"),
    "unsorted_segment_sum": ("tf.math.unsorted_segment_sum", "ef.unsorted_segment_sum"),
    **{
        name: (f"tf.nn.{name}", f"ef.nn.{name}")
        for name in ["relu", "softplus", "elu", "leaky_relu", "softmax", "log_softmax"]
    },
    **{name: (f"tf.nn.{name}", f"ef.nn.{name}") for name in ["conv2d", "max_pool2d", "avg_pool2d"]},
    "custom_gradient": ("tf.custom_gradient", "autodiff.custom_gradient"),
    "random_shuffle": ("tf.random.shuffle", "ef.random_shuffle"),
    "GradientTape": ("tf.GradientTape", "autodiff.GradientTape"),
    "Variable": ("tf.Variable", "autodiff.Variable"),
    "function": ("tf.function", "graph.function"),
    "TensorSpec": ("tf.TensorSpec", "graph.TensorSpec"),
    "Dataset": ("tf.data.Dataset", "nn.data.Dataset"),
    "AUTOTUNE": ("tf.data.AUTOTUNE", "nn.data.AUTOTUNE"),
    "losses": ("tf.keras.losses", "nn.losses"),
    "Adagrad": ("tf.keras.optimizers.Adagrad", "nn.Adagrad"),
    "schedules": ("tf.keras.optimizers.schedules", "nn.schedules"),
    "TensorArray": ("tf.TensorArray", "graph.TensorArray"),
    "TensorShape": ("tf.TensorShape", "ef.TensorShape"),
    "while_loop": ("tf.while_loop", "graph.while_loop"),
    "cond": ("tf.cond", "graph.cond"),
    "set_loop_options": (
        "tf.autograph.experimental.set_loop_options",
        "graph.autograph.experimental.set_loop_options",
    ),
    # TensorFlow 1's graph names (cases_tf1.py), as eagerflow.graph spells them
    **{
        name: (f"tf.compat.v1.{name}", f"graph.{name}")
        for name in [
            "Graph",
            "Session",
            "gradients",
            "global_variables_initializer",
            "placeholder_with_default",
        ]
    },
    **{
        name: (f"tf.compat.v1.{name}", f"graph.{name}")
        for name in ["name_scope", "trainable_variables", "set_random_seed", "import_graph_def"]
    },
    "random_uniform": ("tf.random.uniform", "ef.random_uniform"),
    "random_normal": ("tf.random.normal", "ef.random_normal"),
    "set_seed": ("tf.random.set_seed", "ef.set_seed"),
    **{
        name: (f"tf.compat.v1.{name}", f"nn.{name}")
        for name in ["get_variable", "variable_scope", "get_variable_scope", "AUTO_REUSE"]
    },
    "constant_initializer": ("tf.compat.v1.constant_initializer", "nn.initializers.constant"),
    "saved_model": ("tf.saved_model", "graph.saved_model"),
    "Module": ("tf.Module", "nn.Layer"),  # an object to hang functions and variables on
    "Saver": ("tf.compat.v1.train.Saver", "nn.Saver"),
    "GradientDescentOptimizer": (
        "tf.compat.v1.train.GradientDescentOptimizer",
        "nn.GradientDescentOptimizer",
    ),
    **{
        name: (f"tf.train.{name}", f"nn.{name}")
        for name in ["Checkpoint", "CheckpointManager", "latest_checkpoint"]
    },
}


def _resolve(path: str, roots: dict[str, Any]) -> Any:
    root, *rest = path.split(".")
    value = roots[root]
    for part in rest:
        value = getattr(value, part)
    return value


def tensorflow() -> SimpleNamespace:
    """TensorFlow's side (imports TensorFlow: only for recording)."""
    tf = importlib.import_module("tensorflow")
    return SimpleNamespace(**{k: _resolve(t, {"tf": tf}) for k, (t, _) in NAMES.items()})


def eagerflow() -> SimpleNamespace:
    """eagerflow's side."""
    roots = {
        "ef": importlib.import_module("eagerflow.tensor"),
        "autodiff": importlib.import_module("eagerflow.autodiff"),
        "graph": importlib.import_module("eagerflow.graph"),
        "nn": importlib.import_module("eagerflow.nn"),
    }
    return SimpleNamespace(**{k: _resolve(e, roots) for k, (_, e) in NAMES.items()})
