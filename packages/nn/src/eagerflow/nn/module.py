"""``Layer`` and ``Model``: Python objects that own variables and compute with ops.

A layer is plain Python. It finds its variables by looking at its own attributes: every
``Variable``, every ``Layer``, and every list, tuple or dict of them assigned to ``self`` is
*tracked*. Nothing is registered anywhere else, which is why the same model object works in
eager mode and in graph mode: its ``call`` just calls ops, and the seam decides whether they
run now or add graph nodes.

Order of ``variables``: depth first, in the order attributes were first assigned (Python
keeps ``__dict__`` in insertion order). ``Dense`` assigns ``kernel`` then ``bias``, so a
``Sequential([Dense(4), Dense(2)])`` lists ``[kernel, bias, kernel_1, bias_1]``.

Building: a layer makes its variables in ``build(input_shape)``, which runs once, on the first
call or earlier if the layer is told its input shape (``Dense(8, input_shape=(4,))``, as in
Keras). A checkpoint restored before that waits in the layer until ``build`` has made the
variables (see ``checkpoint.py``).

Updates: a layer may change its own state while it computes (``BatchNormalization`` moves its
averages), with assignments it hands to ``add_update``. Eagerly they have run already; in a
traced ``function`` the function runs them (automatic control dependencies). Only in a graph
built for a Session can nothing run them on its own: there, as in TensorFlow 1.x, they wait in
``layer.updates`` (a model's lists its layers' too) for you to run them with the train op.
"""

from __future__ import annotations

import functools
import inspect
import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Operation, SymbolicTensor, get_default_graph, name_scope
from eagerflow.graph.core.subgraphs import FunctionGraph
from eagerflow.nn import initializers
from eagerflow.nn.checkpoint_file import (
    CheckpointError,
    assign_values,
    check_value,
    load_arrays,
    read_values,
    write_arrays,
)
from eagerflow.nn.replicas import current_replica_hook
from eagerflow.tensor import DType, Tensor
from eagerflow.tensor.errors import EagerflowError, ShapeError, describe, format_shape
from eagerflow.tensor.rules import compatible

Shape = tuple[int | None, ...]


class Deferred(Protocol):
    """A checkpoint's value waiting for a variable that does not exist yet."""

    def check(self, variable: Variable) -> None:
        """Raise if the value cannot go into ``variable`` (another shape or dtype)."""

    def assign(self, variable: Variable) -> None:
        """Give ``variable`` the value."""


class LayerType(type):
    """The type of every layer class, doing two things Keras also does behind the scenes.

    1. It wraps each class's ``build`` so that it runs at most once: later calls do nothing.
       ``build`` is then safe to call by hand, and ``__call__`` simply calls it.
    2. When a layer is created with an input shape, it builds the layer as soon as the whole
       ``__init__`` has run (a subclass's too: that is why this cannot be done in
       ``Layer.__init__``, which runs before the subclass has set, say, ``units``).
    """

    def __init__(cls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> None:
        super().__init__(name, bases, namespace)
        if "build" in namespace:
            setattr(cls, "build", _build_once(namespace["build"]))  # noqa: B010 (mypy)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        layer = super().__call__(*args, **kwargs)
        if layer.batch_input_shape is not None:
            layer.build(layer.batch_input_shape)
        return layer


def _build_once(build: Callable[[Any, Shape | None], None]) -> Callable[..., None]:
    @functools.wraps(build)
    def build_once(self: Layer, input_shape: Sequence[int | None] | None = None) -> None:
        if self.built:
            return
        build(self, None if input_shape is None else tuple(input_shape))
        self.built = True
        self._restore_deferred()  # checkpoint values that were waiting for these variables

    return build_once


class Layer(metaclass=LayerType):
    """A callable that owns variables: override ``build`` (make variables) and ``call``.

    Give ``input_shape`` (without the batch axis), ``batch_input_shape`` (with it) or
    ``input_dim`` (``input_shape=(input_dim,)``) to build the layer at once, before any call.
    """

    _name_counts: ClassVar[dict[str, int]] = {}
    _accepts_training: ClassVar[dict[type, bool]] = {}
    stop_training: bool = False  # fit's flag: a callback sets it to end training (Keras')
    history: Any = None  # the History of the last fit

    def __init__(
        self,
        name: str | None = None,
        dtype: DType = ef.float32,
        *,
        input_shape: Sequence[int] | None = None,
        batch_input_shape: Sequence[int | None] | None = None,
        input_dim: int | None = None,
    ) -> None:
        self.name = name or _unique_name(_snake_case(type(self).__name__))
        self.dtype = dtype
        self.built = False
        self.output_shape: Shape | None = None  # of the last call, for summary()
        # the input shape given at construction (batch axis first), checked at every call
        self.batch_input_shape = _declared_shape(
            type(self).__name__, input_shape, batch_input_shape, input_dim
        )
        self._deferred: dict[str, Deferred] = {}  # variable path -> checkpoint value
        self._updates: list[Operation] = []  # see add_update

    @classmethod
    def reset_names(cls) -> None:
        """Start layer names afresh (the next Dense is ``dense`` again), e.g. between runs of
        a notebook or a document that builds the same models more than once."""
        Layer._name_counts.clear()

    # --- what subclasses write ---------------------------------------------------------------
    def build(self, input_shape: Shape | None) -> None:
        """Create the variables that depend on the input's shape. Runs once: on the first
        call, at construction if an input shape was given, or when you call it."""

    def compute_output_shape(self, input_shape: Shape | None) -> Shape | None:
        """The shape ``call`` returns for inputs of ``input_shape``, without computing it:
        ``Sequential.build`` passes it on to the next layer. Override it in a layer of your
        own that should build before the first call even when it is not the first layer."""
        raise NotImplementedError(f"{type(self).__name__} does not say its output shape")

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The computation: ``call(self, inputs)``, or ``call(self, inputs, training=False)``
        for a layer that trains differently (``__call__`` passes ``training`` only then)."""
        name = type(self).__name__
        message = (
            f"your Layer {name} has no `call` method (the Keras and eagerflow name; PyTorch's "
            "is `forward`): define call(self, inputs)"
        )
        if callable(getattr(self, "forward", None)):
            message += f"; {name} defines `forward`, rename it to `call`"
        raise NotImplementedError(message)

    def add_weight(
        self,
        name: str,
        shape: Sequence[int],
        initializer: str | initializers.Initializer = "glorot_uniform",
        trainable: bool = True,
    ) -> Variable:
        """A new variable ``<layer>/<name>``, its first value drawn by ``initializer``."""
        init = initializers.get(initializer)
        shape = tuple(int(d) for d in shape)
        hook = current_replica_hook()  # under a distribution strategy: task 0's value

        def first_value() -> Any:
            value = init(shape, self.dtype)
            return value if hook is None else hook.initial_value(value)

        return Variable(first_value, trainable=trainable, name=f"{self.name}/{name}")

    def add_update(self, updates: Sequence[Any]) -> None:
        """Note assignments that ``call`` made to the layer's own state (not by gradients).

        Eagerly they have run already, and in a ``function`` (or a branch of ``cond``) the
        graph runs them itself, in program order: nothing to keep. In a graph built for a
        Session no op runs unless fetched or depended on, so the ops are kept in ``updates``
        for you to run, as TensorFlow 1.x keeps them in ``tf.GraphKeys.UPDATE_OPS``.
        """
        if ef.executing_eagerly() or isinstance(get_default_graph(), FunctionGraph):
            return
        ops = [u.op if isinstance(u, SymbolicTensor) else u for u in updates]
        if self._updates and ops and self._updates[0].graph is not ops[0].graph:
            self._updates = []  # a Session of the new graph could not run the old graph's ops
        self._updates.extend(ops)

    @property
    def updates(self) -> list[Operation]:
        """The update ops of this layer and its sub-layers from their calls in the last graph
        each was called in, for a Session to run with the train op::

            with control_dependencies(model.updates):
                train_op = optimizer.minimize(loss)

        Empty in eager mode and for calls inside a ``function``: there updates run by
        themselves (see ``add_update``).
        """
        inner = (u for _, obj in self.tracked() if isinstance(obj, Layer) for u in obj.updates)
        return list(dict.fromkeys([*self._updates, *inner]))  # a shared layer's ops once

    # --- calling -----------------------------------------------------------------------------
    def __call__(self, inputs: Any, training: bool = False) -> Any:
        try:
            if type(inputs) is not Tensor:  # (tensors, the usual case, need no conversion)
                inputs = self._convert(inputs)
            if self.batch_input_shape is not None:  # told its input shape: hold it to it
                self._check_input_shape(getattr(inputs, "shape", ()))
            if not self.built:  # (build would return at once, but a call costs time per step)
                self.build(getattr(inputs, "shape", ()))  # None: a graph input of unknown rank
            if ef.executing_eagerly():  # names mean nothing to eager ops: skip the scope
                outputs = self._call(inputs, training)
            else:
                with name_scope(self.name):
                    outputs = self._call(inputs, training)
        except EagerflowError as e:  # an op's error, traced back to the layers it came from
            e.add_note(
                f"in layer '{self.name}' ({type(self).__name__}), called on {describe(inputs):.80}"
            )
            raise
        self.output_shape = getattr(outputs, "shape", None)
        return outputs

    def _check_input_shape(self, shape: Shape | None) -> None:
        expected = self.batch_input_shape
        # (an unknown rank may still fit: the ops check it when they run)
        if not compatible(shape, expected):
            raise ShapeError(
                f"layer '{self.name}' ({type(self).__name__}) was built for inputs of shape "
                f"{format_shape(expected)}, but is called on inputs of shape {format_shape(shape)}"
            )

    def _convert(self, inputs: Any) -> Any:
        # NumPy float arrays become the layer's dtype, as in Keras: data is often float64.
        if isinstance(inputs, np.ndarray | float | list) and self.dtype.is_floating:
            array = np.asarray(inputs)
            if array.dtype.kind == "f":
                return ef.convert_to_tensor(array.astype(self.dtype.np))
        return inputs

    def _call(self, inputs: Any, training: bool) -> Any:
        """``self.call``, passing ``training`` only if its signature takes it."""
        accepts = Layer._accepts_training.get(type(self))
        if accepts is None:
            accepts = "training" in inspect.signature(self.call).parameters
            Layer._accepts_training[type(self)] = accepts
        return self.call(inputs, training=training) if accepts else self.call(inputs)

    # --- tracking ----------------------------------------------------------------------------
    def tracked(self) -> Iterator[tuple[str, Variable | Layer]]:
        """``(attribute path, object)`` for each variable and layer assigned to ``self``."""
        for attribute, value in vars(self).items():
            yield from _walk(attribute, value)

    @property
    def variables(self) -> list[Variable]:
        """Every variable of this layer and its sub-layers (see the module's docstring)."""
        return list(dict.fromkeys(variable for _, variable in self.variable_paths()))

    @property
    def trainable_variables(self) -> list[Variable]:
        return [v for v in self.variables if v.trainable]

    @property
    def non_trainable_variables(self) -> list[Variable]:
        return [v for v in self.variables if not v.trainable]

    def variable_paths(self) -> Iterator[tuple[str, Variable]]:
        """``("layers/0/kernel", variable)`` for every variable: the keys of a checkpoint."""
        for path, obj in self.tracked():
            if isinstance(obj, Variable):
                yield path, obj
            else:
                for inner, variable in obj.variable_paths():
                    yield f"{path}/{inner}", variable

    # --- checkpoint values waiting for their variables ----------------------------------------
    def defer(self, path: str, value: Deferred) -> bool:
        """Keep ``value`` until the variable at ``path`` (below this layer) exists, in the
        deepest layer on that path that exists already. Returns False, and keeps nothing, if
        that layer is built: it will make no more variables."""
        for sub_path, obj in self.tracked():
            if isinstance(obj, Layer) and path.startswith(f"{sub_path}/"):
                return obj.defer(path[len(sub_path) + 1 :], value)
        if self.built:
            return False
        self._deferred[path] = value
        return True

    def _restore_deferred(self) -> None:
        """After ``build``: give each waiting value its variable, checking all before any is
        assigned; pass the others on to sub-layers that ``build`` may have made."""
        if not self._deferred:
            return
        variables = dict(self.variable_paths())
        ready = {path: value for path, value in self._deferred.items() if path in variables}
        try:
            for path, value in ready.items():
                value.check(variables[path])
        except EagerflowError as e:
            e.add_note(f"restoring into layer '{self.name}' ({type(self).__name__})")
            raise
        waiting, self._deferred = self._deferred, {}
        for path, value in waiting.items():
            if path in ready:
                value.assign(variables[path])
            elif not self.defer(path, value):
                self._deferred[path] = value  # still reported by the checkpoint's status

    def count_params(self) -> int:
        return sum(math.prod(v.shape) for v in self.variables)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self.name}'>"


class Model(Layer):
    """A layer you subclass to hold your whole network; ``summary()`` prints it,
    ``save_weights(path)`` and ``load_weights(path)`` keep its variables in a file."""

    def save_weights(self, filepath: str | os.PathLike[str], session: Any = None) -> str:
        """Write every variable, keyed by its path (``layers/0/kernel``), to ``filepath``:
        an ``.npz`` checkpoint file, written atomically. Returns the path. Graph variables
        need the ``session`` that holds their values."""
        paths = dict(self.variable_paths())
        values = read_values(list(paths.values()), session)
        write_arrays(Path(filepath), dict(zip(paths, values, strict=True)))
        return str(filepath)

    def load_weights(self, filepath: str | os.PathLike[str], session: Any = None) -> None:
        """Give every variable its value from ``filepath`` (written by ``save_weights``). The
        file must hold exactly this model's variables with their shapes and dtypes, all
        checked before any is assigned: a file that does not fit changes nothing."""
        arrays = load_arrays(Path(filepath))
        paths = dict(self.variable_paths())
        missing, extra = sorted(paths.keys() - arrays.keys()), sorted(arrays.keys() - paths.keys())
        if missing or extra:
            hint = " (build the model, or call it once, first)" if not paths else ""
            raise CheckpointError(f"load_weights: {filepath} does not fit {self.name}{hint}: "
                                  f"variables with no value {missing}, values with no "
                                  f"variable {extra}")  # fmt: skip
        for key, variable in paths.items():
            check_value(filepath, key, arrays[key], variable.shape, variable.dtype.np)
        assign_values(paths, arrays, session)

    def summary(self, print_fn: Callable[[str], None] = print) -> None:
        """A table of this model's direct layers and variables, shapes and parameter counts."""
        rows = [("Layer (type)", "Output shape", "Params")]
        for path, obj in self.tracked():
            if isinstance(obj, Variable):
                rows.append((f"{path} (Variable)", str(obj.shape), str(math.prod(obj.shape))))
            else:
                shape = "not called yet" if obj.output_shape is None else str(obj.output_shape)
                rows.append((f"{obj.name} ({type(obj).__name__})", shape, str(obj.count_params())))
        widths = [max(len(row[i]) for row in rows) for i in range(3)]
        line = "-" * (sum(widths) + 4)
        trainable = sum(math.prod(v.shape) for v in self.trainable_variables)
        total = self.count_params()
        print_fn(f'Model: "{self.name}"')
        print_fn(line)
        for i, row in enumerate(rows):
            print_fn(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:>{widths[2]}}")
            if i == 0:
                print_fn("=" * len(line))
        print_fn(line)
        print_fn(f"Total params: {total:,}")
        print_fn(f"Trainable params: {trainable:,}")
        print_fn(f"Non-trainable params: {total - trainable:,}")


def _walk(path: str, value: Any) -> Iterator[tuple[str, Variable | Layer]]:
    if isinstance(value, Variable | Layer):
        yield path, value
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from _walk(f"{path}/{i}", item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(f"{path}/{key}", item)


def _declared_shape(
    layer: str,
    input_shape: Sequence[int] | None,
    batch_input_shape: Sequence[int | None] | None,
    input_dim: int | None,
) -> Shape | None:
    """The one input shape given, with its batch axis: ``input_shape=(4,)`` -> ``(None, 4)``."""
    given = [input_shape is not None, batch_input_shape is not None, input_dim is not None]
    if sum(given) > 1:
        raise TypeError(f"{layer}: give one of input_shape, batch_input_shape and input_dim")
    if input_dim is not None:
        input_shape = (input_dim,)
    if input_shape is not None:
        return (None, *_dims(layer, "input_shape", input_shape))
    if batch_input_shape is not None:
        batch, *rest = _dims(layer, "batch_input_shape", batch_input_shape, batch=True)
        return (batch, *_dims(layer, "batch_input_shape", rest))
    return None


def _dims(layer: str, argument: str, shape: Any, batch: bool = False) -> Shape:
    """``shape`` as a tuple of sizes >= 1 (the batch size may also be None)."""
    what = f"{layer}: {argument} must be a tuple of ints >= 1"
    if not isinstance(shape, tuple | list):
        raise TypeError(f"{what}, got {shape!r}")
    dims: list[int | None] = []
    for i, d in enumerate(shape):
        if d is None and batch and i == 0:
            dims.append(None)
        elif not isinstance(d, int | np.integer) or isinstance(d, bool):
            raise TypeError(f"{what}, got {tuple(shape)!r}")
        elif d < 1:
            raise ValueError(f"{what}, got {tuple(shape)!r}")
        else:
            dims.append(int(d))
    return tuple(dims)


def _snake_case(name: str) -> str:
    """``Dense`` -> ``dense``, ``MyModel`` -> ``my_model``, ``MLP`` -> ``mlp``, ``Conv2D`` ->
    ``conv2d`` (as Keras: a digit does not start a word, so no ``conv2_d``)."""
    name = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()


def _unique_name(base: str) -> str:
    """``dense``, then ``dense_1``, ``dense_2``, ... (as Keras names layers)."""
    count = Layer._name_counts.get(base, 0)
    Layer._name_counts[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


__all__ = ["Deferred", "Layer", "LayerType", "Model", "Shape"]
