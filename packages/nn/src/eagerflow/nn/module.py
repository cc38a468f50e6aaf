"""``Layer`` and ``Model``: Python objects that own variables and compute with ops.

A layer is plain Python. It finds its variables by looking at its own attributes: every
``Variable``, every ``Layer``, and every list, tuple or dict of them assigned to ``self`` is
*tracked*. Nothing is registered anywhere else, which is why the same model object works in
eager mode and in graph mode: its ``call`` just calls ops, and the seam decides whether they
run now or add graph nodes.

Order of ``variables``: depth first, in the order attributes were first assigned (Python
keeps ``__dict__`` in insertion order). ``Dense`` assigns ``kernel`` then ``bias``, so a
``Sequential([Dense(4), Dense(2)])`` lists ``[kernel, bias, kernel_1, bias_1]``.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ClassVar

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import name_scope
from eagerflow.nn import initializers
from eagerflow.tensor import DType, Tensor
from eagerflow.tensor.errors import EagerflowError, describe

Shape = tuple[int | None, ...]


class Layer:
    """A callable that owns variables: override ``build`` (make variables) and ``call``."""

    _name_counts: ClassVar[dict[str, int]] = {}
    _accepts_training: ClassVar[dict[type, bool]] = {}

    def __init__(self, name: str | None = None, dtype: DType = ef.float32) -> None:
        self.name = name or _unique_name(_snake_case(type(self).__name__))
        self.dtype = dtype
        self.built = False
        self.output_shape: Shape | None = None  # of the last call, for summary()

    @classmethod
    def reset_names(cls) -> None:
        """Start layer names afresh (the next Dense is ``dense`` again), e.g. between runs of
        a notebook or a document that builds the same models more than once."""
        Layer._name_counts.clear()

    # --- what subclasses write ---------------------------------------------------------------
    def build(self, input_shape: Shape | None) -> None:
        """Create the variables that depend on the input's shape (called on first use)."""

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The computation: ``call(self, inputs)``, or ``call(self, inputs, training=False)``
        for a layer that trains differently (``__call__`` passes ``training`` only then)."""
        raise NotImplementedError(f"{type(self).__name__} must define call(inputs)")

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
        return Variable(lambda: init(shape, self.dtype), trainable=trainable,
                        name=f"{self.name}/{name}")  # fmt: skip

    # --- calling -----------------------------------------------------------------------------
    def __call__(self, inputs: Any, training: bool = False) -> Any:
        try:
            if type(inputs) is not Tensor:  # (tensors, the usual case, need no conversion)
                inputs = self._convert(inputs)
            if not self.built:
                self.build(getattr(inputs, "shape", ()))  # None: a graph input of unknown rank
                self.built = True
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

    def count_params(self) -> int:
        return sum(math.prod(v.shape) for v in self.variables)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} '{self.name}'>"


class Model(Layer):
    """A layer you subclass to hold your whole network; ``summary()`` prints it."""

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


def _snake_case(name: str) -> str:
    """``Dense`` -> ``dense``, ``MyModel`` -> ``my_model``, ``MLP`` -> ``mlp`` (as Keras)."""
    name = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def _unique_name(base: str) -> str:
    """``dense``, then ``dense_1``, ``dense_2``, ... (as Keras names layers)."""
    count = Layer._name_counts.get(base, 0)
    Layer._name_counts[base] = count + 1
    return base if count == 0 else f"{base}_{count}"
