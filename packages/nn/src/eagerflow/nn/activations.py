"""Activations by name, so a layer can say ``Dense(10, activation="relu")``.

They are the tensor package's ops themselves (each has its kernel and gradient rule there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import eagerflow.tensor as ef
from eagerflow.tensor import Tensor

Activation = Callable[[Any], Tensor]

relu = ef.relu
sigmoid = ef.sigmoid
tanh = ef.tanh
softmax = ef.softmax

_BY_NAME: dict[str, Activation] = {
    "relu": relu,
    "sigmoid": sigmoid,
    "tanh": tanh,
    "softmax": softmax,
}


def get(activation: str | Activation | None) -> Activation | None:
    """An activation from its name, itself, or None (no activation: the identity)."""
    if activation is None or callable(activation):
        return activation
    if activation not in _BY_NAME:
        raise ValueError(f"unknown activation {activation!r}; known: {sorted(_BY_NAME)}")
    return _BY_NAME[activation]


__all__ = ["Activation", "get", "relu", "sigmoid", "softmax", "tanh"]
