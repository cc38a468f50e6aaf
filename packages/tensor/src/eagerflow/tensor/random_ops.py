"""Random ops, all drawing from one generator that ``set_seed`` makes reproducible.

Random ops are *stateful*: in a graph, each Session run draws new numbers, and graph
optimizations never fold or merge them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from eagerflow.tensor import dtypes
from eagerflow.tensor.array_ops import ShapeLike, check_dims, static_shape
from eagerflow.tensor.dtypes import ANY, FLOATS, NUMBERS, DType
from eagerflow.tensor.errors import DTypeError, InvalidArgumentError
from eagerflow.tensor.execution import NO_ATTRS, execute
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.rules import names, same_dtype, same_shape_rule
from eagerflow.tensor.schema import DTypeAttr, Float, Ints, Maybe
from eagerflow.tensor.tensor import Tensor, convert_to_tensor

_generator = np.random.default_rng()


def set_seed(seed: int | None) -> None:
    """Restart the generator every random op draws from, so runs are reproducible (None:
    from fresh entropy, so they are not)."""
    global _generator
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise TypeError(f"set_seed: the seed must be an int, got {seed!r}")
        if seed < 0:
            raise InvalidArgumentError(f"set_seed: the seed must be >= 0, got {seed}")
    _generator = np.random.default_rng(seed)


def _attr_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    return [attrs["shape"]]


def _random_dtype(allowed: frozenset[DType]) -> Any:
    def rule(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
        if attrs["dtype"] not in allowed:
            raise DTypeError(f"dtype {attrs['dtype']} is not supported ({names(allowed)})")
        return [attrs["dtype"]]

    return rule


def random_normal_kernel(
    shape: tuple[int, ...], mean: float, stddev: float, dtype: DType
) -> np.ndarray:
    return _generator.normal(mean, stddev, size=shape).astype(dtype.np)


@op("RandomNormal", random_normal_kernel, shape=_attr_shape, dtype=_random_dtype(FLOATS),
    attrs={"shape": Ints(min=0), "mean": Float(), "stddev": Float(min=0),
           "dtype": DTypeAttr(FLOATS)},
    stateful=True)  # fmt: skip
def random_normal(
    shape: ShapeLike,
    mean: float = 0.0,
    stddev: float = 1.0,
    dtype: DType | str = dtypes.float32,
    name: str | None = None,
) -> Tensor:
    """A tensor of ``shape`` drawn from N(mean, stddev²)."""
    if stddev < 0:
        raise InvalidArgumentError(f"RandomNormal: stddev must be >= 0, got {stddev}")
    attrs = {
        "shape": check_dims(static_shape(shape, "random_normal")),
        "mean": float(mean),
        "stddev": float(stddev),
        "dtype": dtypes.as_dtype(dtype),
    }
    return execute("RandomNormal", (), attrs, name)[0]


def random_uniform_kernel(
    shape: tuple[int, ...], minval: Any, maxval: Any, dtype: DType
) -> np.ndarray:
    if dtype.is_integer:
        return _generator.integers(minval, maxval, size=shape, dtype=dtype.np)
    out = _generator.uniform(minval, maxval, size=shape).astype(dtype.np)
    # rounding to a narrower float can land exactly on maxval: keep the interval half-open
    below = np.nextafter(dtype.np.type(maxval), dtype.np.type(minval))
    return np.minimum(out, below)


@op("RandomUniform", random_uniform_kernel, shape=_attr_shape, dtype=_random_dtype(NUMBERS),
    attrs={"shape": Ints(min=0), "minval": Float(), "maxval": Maybe(Float()),
           "dtype": DTypeAttr(NUMBERS)},
    stateful=True)  # fmt: skip
def random_uniform(
    shape: ShapeLike,
    minval: Any = 0,
    maxval: Any = None,
    dtype: DType | str = dtypes.float32,
    name: str | None = None,
) -> Tensor:
    """A tensor of ``shape`` drawn uniformly from [minval, maxval) (maxval defaults to 1 for
    floats; integer dtypes need it)."""
    dt = dtypes.as_dtype(dtype)
    if maxval is None:
        if dt.is_integer:
            raise InvalidArgumentError("RandomUniform: an integer dtype needs maxval")
        maxval = 1.0
    if not minval < maxval:
        raise InvalidArgumentError(f"RandomUniform: needs minval < maxval, got {minval}, {maxval}")
    attrs = {
        "shape": check_dims(static_shape(shape, "random_uniform")),
        "minval": minval,
        "maxval": maxval,
        "dtype": dt,
    }
    return execute("RandomUniform", (), attrs, name)[0]


def random_shuffle_kernel(x: np.ndarray) -> np.ndarray:
    return _generator.permutation(x) if x.ndim else x


@op("RandomShuffle", random_shuffle_kernel, shape=same_shape_rule, dtype=same_dtype(ANY),
    stateful=True)  # fmt: skip
def random_shuffle(value: Any, name: str | None = None) -> Tensor:
    """``value`` with its slices along the first axis in a random order."""
    return execute("RandomShuffle", (convert_to_tensor(value),), NO_ATTRS, name)[0]


__all__ = ["random_normal", "random_shuffle", "random_uniform", "set_seed"]
