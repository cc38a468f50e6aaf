"""Random ops, drawing from one generator that ``set_seed`` makes reproducible, or, given a
seed, from a stream of their own.

Random ops are *stateful*: in a graph, each Session run draws new numbers, and graph
optimizations never fold or merge them.

Seeds, as TensorFlow records them: each op has two attributes, ``seed`` (the graph's seed)
and ``seed2`` (the op's). Both 0 means "unseeded": the shared generator. Otherwise the op
draws from the stream of that pair, which starts afresh in each Session (a Session holds its
streams, ``random_streams``), so a graph, or the same graph written and read back, gives the
same numbers run after run where TensorFlow would. The pair comes from ``get_seed``, with
TensorFlow's rules: a graph seed (``set_random_seed``) and no op seed takes the number of ops
made so far as the op's; an op seed and no graph seed takes ``DEFAULT_GRAPH_SEED``.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

import numpy as np

from eagerflow.tensor import dtypes
from eagerflow.tensor.array_ops import ShapeLike, check_dims, static_shape
from eagerflow.tensor.dtypes import ANY, FLOATS, NUMBERS, DType
from eagerflow.tensor.errors import DTypeError, InvalidArgumentError
from eagerflow.tensor.execution import current_context, execute
from eagerflow.tensor.registry import Attrs, Shape, op
from eagerflow.tensor.rules import names, same_dtype, same_shape_rule
from eagerflow.tensor.schema import DTypeAttr, Float, Int, Ints, Maybe, Omissible
from eagerflow.tensor.tensor import Tensor, convert_to_tensor

_generator = np.random.default_rng()
DEFAULT_GRAPH_SEED = 87654321  # TensorFlow's, for an op seed without a graph seed
Streams = dict[tuple[int, int], np.random.Generator]
_eager_streams: Streams = {}  # the seeded ops' streams eagerly (set_seed restarts them)
_streams: ContextVar[Streams | None] = ContextVar("eagerflow_random_streams", default=None)
# a seeded random op's two attributes (left out of a graph written before they existed: 0)
SEED_ATTRS = {"seed": Omissible(Int(min=0)), "seed2": Omissible(Int(min=0))}


class random_streams:
    """Inside the block, seeded random ops draw from ``streams`` (a Session's own, so each
    Session starts every stream afresh, as TensorFlow's kernels do). A class, not a
    generator: every ``Session.run`` enters it, and this costs a quarter as much."""

    __slots__ = ("_streams", "_token")

    def __init__(self, streams: Streams) -> None:
        self._streams = streams

    def __enter__(self) -> None:
        self._token = _streams.set(self._streams)

    def __exit__(self, *exc: object) -> None:
        _streams.reset(self._token)


def _draw_from(seed: int, seed2: int) -> np.random.Generator:
    if seed == 0 and seed2 == 0:
        return _generator
    streams = _streams.get()
    streams = _eager_streams if streams is None else streams
    if (seed, seed2) not in streams:
        streams[seed, seed2] = np.random.default_rng([seed, seed2])
    return streams[seed, seed2]


def get_seed(op_seed: int | None) -> dict[str, int]:
    """The ``seed`` and ``seed2`` attributes of a random op given ``op_seed``, by TensorFlow's
    rules (see the module's docstring); the graph's seed is the context's ``random_seed``."""
    if op_seed is not None and (isinstance(op_seed, bool) or not isinstance(op_seed, int)
                                or not 0 <= op_seed < 2**63):  # fmt: skip
        raise TypeError(f"a random op's seed must be an int >= 0, got {op_seed!r}")
    context = current_context()
    graph_seed = getattr(context, "random_seed", None)
    if graph_seed is not None:
        seeds = (graph_seed, op_seed if op_seed is not None else context.op_count())  # type: ignore[union-attr]
    elif op_seed is not None:
        seeds = (DEFAULT_GRAPH_SEED, op_seed)
    else:
        return {"seed": 0, "seed2": 0}
    return {"seed": seeds[0], "seed2": 2**31 - 1 if seeds == (0, 0) else seeds[1]}


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
    _eager_streams.clear()  # seeded ops start their streams again, as in TensorFlow


def _attr_shape(shapes: Sequence[Shape], attrs: Attrs) -> list[Shape]:
    return [attrs["shape"]]


def _random_dtype(allowed: frozenset[DType]) -> Any:
    def rule(dts: Sequence[DType], attrs: Attrs) -> list[DType]:
        if attrs["dtype"] not in allowed:
            raise DTypeError(f"dtype {attrs['dtype']} is not supported ({names(allowed)})")
        return [attrs["dtype"]]

    return rule


def random_normal_kernel(
    shape: tuple[int, ...], mean: float, stddev: float, dtype: DType, seed: int = 0, seed2: int = 0
) -> np.ndarray:
    return _draw_from(seed, seed2).normal(mean, stddev, size=shape).astype(dtype.np)


@op("RandomNormal", random_normal_kernel, shape=_attr_shape, dtype=_random_dtype(FLOATS),
    attrs={"shape": Ints(min=0), "mean": Float(), "stddev": Float(min=0),
           "dtype": DTypeAttr(FLOATS), **SEED_ATTRS},
    stateful=True)  # fmt: skip
def random_normal(
    shape: ShapeLike,
    mean: float = 0.0,
    stddev: float = 1.0,
    dtype: DType | str = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """A tensor of ``shape`` drawn from N(mean, stddev²) (``seed``: see ``get_seed``)."""
    if stddev < 0:
        raise InvalidArgumentError(f"RandomNormal: stddev must be >= 0, got {stddev}")
    attrs = {
        "shape": check_dims(static_shape(shape, "random_normal")),
        "mean": float(mean),
        "stddev": float(stddev),
        "dtype": dtypes.as_dtype(dtype),
        **get_seed(seed),
    }
    return execute("RandomNormal", (), attrs, name)[0]


def random_uniform_kernel(
    shape: tuple[int, ...], minval: Any, maxval: Any, dtype: DType, seed: int = 0, seed2: int = 0
) -> np.ndarray:
    generator = _draw_from(seed, seed2)
    if dtype.is_integer:
        return generator.integers(minval, maxval, size=shape, dtype=dtype.np)
    out = generator.uniform(minval, maxval, size=shape).astype(dtype.np)
    # rounding to a narrower float can land exactly on maxval: keep the interval half-open
    below = np.nextafter(dtype.np.type(maxval), dtype.np.type(minval))
    return np.minimum(out, below)


@op("RandomUniform", random_uniform_kernel, shape=_attr_shape, dtype=_random_dtype(NUMBERS),
    attrs={"shape": Ints(min=0), "minval": Float(), "maxval": Maybe(Float()),
           "dtype": DTypeAttr(NUMBERS), **SEED_ATTRS},
    stateful=True)  # fmt: skip
def random_uniform(
    shape: ShapeLike,
    minval: Any = 0,
    maxval: Any = None,
    dtype: DType | str = dtypes.float32,
    seed: int | None = None,
    name: str | None = None,
) -> Tensor:
    """A tensor of ``shape`` drawn uniformly from [minval, maxval) (maxval defaults to 1 for
    floats; integer dtypes need it; ``seed``: see ``get_seed``)."""
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
        **get_seed(seed),
    }
    return execute("RandomUniform", (), attrs, name)[0]


def random_shuffle_kernel(x: np.ndarray, seed: int = 0, seed2: int = 0) -> np.ndarray:
    return _draw_from(seed, seed2).permutation(x) if x.ndim else x


@op("RandomShuffle", random_shuffle_kernel, shape=same_shape_rule, dtype=same_dtype(ANY),
    attrs=SEED_ATTRS, stateful=True)  # fmt: skip
def random_shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """``value`` with its slices along the first axis in a random order (``seed``: see
    ``get_seed``)."""
    return execute("RandomShuffle", (convert_to_tensor(value),), get_seed(seed), name)[0]


__all__ = [
    "DEFAULT_GRAPH_SEED",
    "Streams",
    "get_seed",
    "random_normal",
    "random_shuffle",
    "random_streams",
    "random_uniform",
    "set_seed",
]
