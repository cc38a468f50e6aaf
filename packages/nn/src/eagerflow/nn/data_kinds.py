"""More kinds of ``Dataset``, as ``tf.data`` has them: ``from_tensors``, ``from_generator``,
``zip``, ``concatenate``, ``skip``, ``enumerate``, ``unbatch``, ``cache`` and
``padded_batch``. ``Dataset``'s methods (in ``data.py``) make them; each class says which
method makes it (``kind=``), so ``data.py`` needs no import of this module.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.graph import SymbolicTensor, TensorSpec
from eagerflow.nn.data import (
    _T,
    AUTOTUNE,
    AUTOTUNE_BUFFER,
    INFINITE_CARDINALITY,
    UNKNOWN_CARDINALITY,
    Dataset,
    _Batch,
    _Reordering,
    _TensorSlices,
    _Transformation,
)
from eagerflow.nn.elements import (
    as_structure,
    call_with,
    checked_function,
    count_argument,
    function_name,
    leaf_paths,
    to_numpy,
)
from eagerflow.nn.prefetch import PrefetchIterator
from eagerflow.tensor import nest
from eagerflow.tensor.errors import DTypeError, InvalidArgumentError, ShapeError, format_shape
from eagerflow.tensor.execution import context, no_recording


class _FromTensors(_TensorSlices, kind="from_tensors"):
    """One element, ``tensors`` itself: the slices of ``tensors`` given a first axis of 1."""

    def __init__(self, tensors: Any) -> None:
        structure = as_structure(tensors, "from_tensors")
        one_row = nest.map_structure(
            lambda t: t if isinstance(t, SymbolicTensor) else np.asarray(t)[np.newaxis],
            structure,
        )
        super().__init__(one_row, "from_tensors")


class _Generator(Dataset, kind="from_generator"):
    """``from_generator``: the values of ``generator(*args)``, checked against the spec."""

    def __init__(self, generator: Any, signature: Any, args: tuple[Any, ...] | None) -> None:
        self._generator = checked_function("from_generator", generator)
        output_types, output_shapes, output_signature = signature
        if output_signature is None and output_types is not None:
            output_signature = _signature_from(output_types, output_shapes)
        if output_signature is None:
            raise TypeError("from_generator: give output_signature (a TensorSpec, or a "
                            "tuple or dict of them): the structure of one element")  # fmt: skip
        for spec in nest.flatten(output_signature):
            if not isinstance(spec, TensorSpec):
                raise TypeError(f"from_generator: output_signature must hold TensorSpecs, "
                                f"got {spec!r:.60}")  # fmt: skip
        self._signature = output_signature
        # As TensorFlow passes them: each argument as a NumPy value (3 as an int32), a str
        # as bytes.
        self._args = tuple(a.encode() if isinstance(a, str) else to_numpy(ef.convert_to_tensor(a))
                           for a in args or ())  # fmt: skip

    def _elements(self) -> Iterator[Any]:
        for value in self._generator(*self._args):
            yield _checked(self._signature, value)

    def _spec(self) -> Any:
        return self._signature

    def _cardinality(self) -> int:
        return UNKNOWN_CARDINALITY

    def _describe(self) -> str:
        return f"from_generator({getattr(self._generator, '__name__', 'generator')})"


def _signature_from(output_types: Any, output_shapes: Any) -> Any:
    """TensorSpecs from ``from_generator``'s older arguments (any shape where none given)."""
    dtypes = nest.flatten(output_types)
    if output_shapes is None:
        shapes: list[Any] = [None] * len(dtypes)
    else:
        shapes = _up_to(output_types, output_shapes, "from_generator: output_shapes")
    specs = [TensorSpec(shape, dtype) for shape, dtype in zip(shapes, dtypes, strict=True)]
    return nest.pack_sequence_as(output_types, specs)


def _checked(signature: Any, value: Any) -> Any:
    """A generator's value as tensors of ``signature``'s dtypes (converted as NumPy converts,
    1.5 to an int32 1, as in TensorFlow), or InvalidArgumentError."""
    try:
        values = _up_to(signature, value, "from_generator: the generator's element")
    except TypeError as e:
        raise InvalidArgumentError(str(e)) from None
    tensors = []
    for spec, v in zip(nest.flatten(signature), values, strict=True):
        try:
            t = ef.convert_to_tensor(np.asarray(v, dtype=spec.dtype.as_numpy_dtype))
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(f"from_generator: the generator yielded {v!r:.40}, "
                                       f"which is not {spec.dtype}: {e}") from None  # fmt: skip
        if not spec.is_compatible_with(t):
            raise InvalidArgumentError(
                f"from_generator: the generator yielded an element of shape "
                f"{format_shape(t.shape)} where output_signature expects "
                f"{format_shape(spec.static_shape)}"
            )
        tensors.append(t)
    return nest.pack_sequence_as(signature, tensors)


def _up_to(structure: Any, value: Any, what: str) -> list[Any]:
    """The parts of ``value`` at the leaves of ``structure`` (``value`` may stop at any
    leaf, there holding a whole shape or value), or TypeError naming ``what``."""
    if isinstance(structure, dict):
        if not isinstance(value, dict) or set(value) != set(structure):
            raise TypeError(f"{what} must be a dict with keys {sorted(structure)}, "
                            f"got {value!r:.60}")  # fmt: skip
        return [p for k in structure for p in _up_to(structure[k], value[k], what)]
    if isinstance(structure, tuple | list):
        if not isinstance(value, tuple | list) or len(value) != len(structure):
            raise TypeError(f"{what} must be a tuple of {len(structure)}, got {value!r:.60}")
        return [p for s, v in zip(structure, value, strict=True) for p in _up_to(s, v, what)]
    return [value]


class _Zip(Dataset, kind="zip"):
    """``zip``: elements of several datasets side by side, until the shortest ends."""

    def __init__(self, datasets: Any) -> None:
        if datasets == ():
            raise TypeError("zip: give at least one Dataset")
        if _holds_a_list(datasets):
            raise TypeError("zip: datasets must be a Dataset, or a tuple or dict of them, "
                            "not a list (TensorFlow's rule too: write a tuple)")  # fmt: skip
        for d in nest.flatten(datasets):
            if not isinstance(d, Dataset):
                raise TypeError(f"zip: datasets must be a structure of Datasets, got "
                                f"{type(d).__name__} {d!r:.40}")  # fmt: skip
        if not nest.flatten(datasets):
            raise TypeError("zip: datasets must hold at least one Dataset")
        self._datasets = datasets

    def _elements(self) -> Iterator[Any]:
        iterators = [iter(d) for d in nest.flatten(self._datasets)]
        while True:
            items = [next(it, _END) for it in iterators]
            if any(item is _END for item in items):
                return
            yield nest.pack_sequence_as(self._datasets, items)

    def _spec(self) -> Any:
        specs = [d._spec() for d in nest.flatten(self._datasets)]
        return nest.pack_sequence_as(self._datasets, specs)

    def _cardinality(self) -> int:
        counts = [d._cardinality() for d in nest.flatten(self._datasets)]
        if UNKNOWN_CARDINALITY in counts:  # TensorFlow's rule: unknown wins
            return UNKNOWN_CARDINALITY
        known = [n for n in counts if n >= 0]
        return min(known) if known else INFINITE_CARDINALITY

    def _describe(self) -> str:
        return f"zip({len(nest.flatten(self._datasets))} datasets)"


def _holds_a_list(structure: Any) -> bool:
    if isinstance(structure, list):
        return True
    if isinstance(structure, dict):
        return any(_holds_a_list(v) for v in structure.values())
    return isinstance(structure, tuple) and any(_holds_a_list(v) for v in structure)


_END: Any = object()  # the end of an iterator, for next(it, _END)


class _Concatenate(_Transformation, kind="concatenate"):
    """``a.concatenate(b)``: the elements of ``a``, then those of ``b``."""

    def __init__(self, input_dataset: Dataset, other: Any) -> None:
        super().__init__(input_dataset)
        if not isinstance(other, Dataset):
            raise TypeError(f"concatenate: dataset must be a Dataset, got {other!r:.60}")
        self._other = other
        mine, theirs = input_dataset._spec(), other._spec()
        try:
            nest.assert_same_structure(mine, theirs)
        except (TypeError, ValueError) as e:
            raise TypeError(
                f"concatenate: the datasets' elements differ in structure: {e}"
            ) from None
        for path, a, b in zip(leaf_paths(mine), nest.flatten(mine), nest.flatten(theirs),
                              strict=True):  # fmt: skip
            if a.dtype is not b.dtype:
                raise TypeError(f"concatenate: {path} is {a.dtype} in one dataset and "
                                f"{b.dtype} in the other")  # fmt: skip
        self._merged = nest.map_structure(_common_spec, mine, theirs)

    def _elements(self) -> Iterator[Any]:
        return itertools.chain(self._input._elements(), self._other._elements())

    def _spec(self) -> Any:
        return self._merged

    def _cardinality(self) -> int:
        a, b = self._input._cardinality(), self._other._cardinality()
        if INFINITE_CARDINALITY in (a, b):
            return INFINITE_CARDINALITY
        return UNKNOWN_CARDINALITY if UNKNOWN_CARDINALITY in (a, b) else a + b

    def _describe(self) -> str:
        return f".concatenate({self._other!r})"


def _common_spec(a: TensorSpec, b: TensorSpec) -> TensorSpec:
    """The spec both fit: a dimension they disagree on is None, as is a rank."""
    sa, sb = a.static_shape, b.static_shape
    if sa is None or sb is None or len(sa) != len(sb):
        return TensorSpec(None, a.dtype)
    return TensorSpec([x if x == y else None for x, y in zip(sa, sb, strict=True)], a.dtype)


class _Skip(_Reordering, kind="skip"):
    def __init__(self, input_dataset: Dataset, count: int) -> None:
        super().__init__(input_dataset)
        # Any negative count skips them all, as in TensorFlow (which documents -1).
        self._count = max(count_argument("skip", "count", count, least=None), -1)

    def _over(self, make: Callable[[], Iterator[_T]]) -> Iterator[_T]:
        if self._count == -1:
            return iter(())
        return itertools.islice(make(), self._count, None)

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        if self._count == -1:
            return 0
        return n if n < 0 else max(n - self._count, 0)

    def _describe(self) -> str:
        return f".skip({self._count})"


class _Enumerate(_Transformation, kind="enumerate"):
    def __init__(self, input_dataset: Dataset, start: int) -> None:
        super().__init__(input_dataset)
        self._start = count_argument("enumerate", "start", start, least=None)

    def _elements(self) -> Iterator[Any]:
        for i, element in enumerate(self._input._elements(), start=self._start):
            yield (ef.constant(i, ef.int64), element)

    def _spec(self) -> Any:
        return (TensorSpec((), ef.int64), self._input._spec())

    def _describe(self) -> str:
        return f".enumerate({self._start})"


class _Unbatch(_Transformation, kind="unbatch"):
    """``unbatch``: each element's rows as elements of their own (``batch``'s inverse)."""

    def __init__(self, input_dataset: Dataset) -> None:
        super().__init__(input_dataset)
        spec = input_dataset._spec()
        for path, s in zip(leaf_paths(spec), nest.flatten(spec), strict=True):
            if s.static_shape == ():
                raise ValueError(f"unbatch: {path} is a scalar, which has no rows: every "
                                 "component needs a first axis")  # fmt: skip

    def _elements(self) -> Iterator[Any]:
        for element in self._input._elements():
            leaves = [np.asarray(t) for t in nest.flatten(element)]
            rows = {a.shape[0] for a in leaves}
            if len(rows) > 1:
                told = ", ".join(f"{p}: {a.shape[0]}" for p, a in
                                 zip(leaf_paths(element), leaves, strict=True))  # fmt: skip
                raise ValueError(f"unbatch: the components of an element must "
                                           f"have as many rows each, got {told}")  # fmt: skip
            for i in range(rows.pop()):
                row = [ef.convert_to_tensor(a[i]) for a in leaves]
                yield nest.pack_sequence_as(element, row)

    def _spec(self) -> Any:
        def row(s: TensorSpec) -> TensorSpec:
            shape = s.static_shape
            return TensorSpec(None if shape is None else shape[1:], s.dtype)

        return nest.map_structure(row, self._input._spec())

    def _cardinality(self) -> int:
        n = self._input._cardinality()
        return n if n in (0, INFINITE_CARDINALITY) else UNKNOWN_CARDINALITY

    def _describe(self) -> str:
        return ".unbatch()"


class _Cache(_Transformation, kind="cache"):
    """``cache()``: the first complete pass is kept in memory and replayed by later ones.
    With a ``filename``, it is also written to ``filename + ".npz"``, and any dataset cached
    under that name later reads the file instead of running its input."""

    def __init__(self, input_dataset: Dataset, filename: str) -> None:
        super().__init__(input_dataset)
        if not isinstance(filename, str | os.PathLike):
            raise TypeError(f"cache: filename must be a string, got {filename!r:.60}")
        self._path = f"{os.fspath(filename)}.npz" if os.fspath(filename) else None
        self._kept: list[Any] | None = None

    def _elements(self) -> Iterator[Any]:
        if self._kept is None and self._path is not None and os.path.exists(self._path):
            self._kept = _read_cache(self._path, self._spec())
        if self._kept is not None:
            return iter(self._kept)
        return self._filling()

    def _filling(self) -> Iterator[Any]:
        seen = []
        for element in self._input._elements():
            seen.append(element)
            yield element
        if self._path is not None:
            _write_cache(self._path, seen)
        self._kept = seen  # only a pass that ended: a broken-off one would cache a part

    def _describe(self) -> str:
        return ".cache()" if self._path is None else f".cache({self._path[:-4]!r})"


def _write_cache(path: str, elements: list[Any]) -> None:
    """The elements' tensors as one ``.npz`` file, written whole or not at all."""
    arrays: dict[str, Any] = {f"{i}_{j}": np.asarray(t) for i, e in enumerate(elements)
                              for j, t in enumerate(nest.flatten(e))}  # fmt: skip
    arrays["count"] = np.int64(len(elements))
    partial = f"{path}.partial"
    with open(partial, "wb") as f:
        np.savez(f, **arrays)
    os.replace(partial, path)


def _read_cache(path: str, spec: Any) -> list[Any]:
    """A cache file's elements, checked against ``spec`` (a file is untrusted: no pickles,
    and every array must have a component's dtype and shape)."""
    specs = nest.flatten(spec)
    try:
        with np.load(path, allow_pickle=False) as z:
            rows = [[z[f"{i}_{j}"] for j in range(len(specs))] for i in range(int(z["count"]))]
    except (OSError, ValueError, KeyError) as e:
        raise InvalidArgumentError(f"cache: {path} is not a cache file: {e}") from None
    elements = []
    for row in rows:
        tensors = [ef.convert_to_tensor(a) for a in row]
        if not all(s.is_compatible_with(t) for s, t in zip(specs, tensors, strict=True)):
            raise InvalidArgumentError(f"cache: {path} holds elements of another dataset "
                                       f"(this one's element_spec is {spec})")  # fmt: skip
        elements.append(nest.pack_sequence_as(spec, tensors))
    return elements


class _PaddedBatch(_Batch, kind="padded_batch"):
    """``padded_batch``: ``batch`` for elements of different shapes, each padded first."""

    def __init__(
        self,
        input_dataset: Dataset,
        batch_size: int,
        padded_shapes: Any,
        padding_values: Any,
        drop_remainder: bool,
    ) -> None:
        super().__init__(input_dataset, batch_size, drop_remainder)
        spec = input_dataset._spec()
        specs, paths = nest.flatten(spec), leaf_paths(spec)
        if padded_shapes is None:
            shapes = [s.static_shape for s in specs]
        else:
            shapes = _up_to(spec, padded_shapes, "padded_batch: padded_shapes")
        self._shapes = [
            _padded_shape(p, s, t) for p, s, t in zip(paths, specs, shapes, strict=True)
        ]
        if padding_values is None:
            values = [None] * len(specs)
        else:
            values = _up_to(spec, padding_values, "padded_batch: padding_values")
        self._pads = [_pad_value(p, s, v) for p, s, v in zip(paths, specs, values, strict=True)]

    def _elements(self) -> Iterator[Any]:
        elements = self._input._elements()
        while True:
            batch = list(itertools.islice(elements, self._size))
            if not batch or (self._drop and len(batch) < self._size):
                return
            columns = zip(*(nest.flatten(e) for e in batch), strict=True)
            paths = leaf_paths(batch[0])
            parts = zip(paths, columns, self._shapes, self._pads, strict=True)
            padded = [_pad(p, [np.asarray(t) for t in c], s, v) for p, c, s, v in parts]
            yield nest.pack_sequence_as(batch[0], padded)

    def _spec(self) -> Any:
        rows = self._size if self._drop else None
        parts = zip(self._shapes, nest.flatten(self._input._spec()), strict=True)
        specs = [TensorSpec((rows, *shape), s.dtype) for shape, s in parts]
        return nest.pack_sequence_as(self._input._spec(), specs)

    def _describe(self) -> str:
        drop = ", drop_remainder=True" if self._drop else ""
        return f".padded_batch({self._size}{drop})"


def _padded_shape(path: str, spec: TensorSpec, shape: Any) -> tuple[int | None, ...]:
    """``padded_shapes``' shape for one component: its sizes, None (or -1) where the batch's
    longest decides; its rank must be the component's."""
    if spec.static_shape is None:
        raise ValueError(f"padded_batch: {path} has an unknown rank, which cannot be padded")
    try:
        dims = [None if d is None or d == -1 else int(d) for d in shape]
    except TypeError:
        raise TypeError(f"padded_batch: padded_shapes for {path} must be a list of sizes, "
                        f"got {shape!r:.40}") from None  # fmt: skip
    if len(dims) != len(spec.static_shape) or any(d is not None and d < 0 for d in dims):
        raise ValueError(f"padded_batch: padded_shapes {shape!r} for {path} does not fit its "
                         f"shape {format_shape(spec.static_shape)}")  # fmt: skip
    for d, n in zip(dims, spec.static_shape, strict=True):
        if d is not None and n is not None and n > d:
            raise ValueError(f"padded_batch: padded_shapes {shape!r} for {path} is smaller "
                             f"than its shape {format_shape(spec.static_shape)}")  # fmt: skip
    return tuple(dims)


def _pad_value(path: str, spec: TensorSpec, value: Any) -> np.ndarray:
    """The scalar that pads one component: 0 unless given. A given
    value must convert to the component's dtype by itself (TensorFlow's rule: -1 pads an
    int32 component, not an int64 one; -1.5 pads neither)."""
    if value is None:
        return np.zeros((), spec.dtype.as_numpy_dtype)
    t = ef.convert_to_tensor(value)
    if t.dtype is not spec.dtype:
        raise TypeError(f"padded_batch: padding_values for {path} is {t.dtype}, but the "
                        f"component is {spec.dtype}")  # fmt: skip
    if t.shape != ():
        raise ValueError(f"padded_batch: padding_values for {path} must be a scalar, got "
                         f"shape {format_shape(t.shape)}")  # fmt: skip
    return np.asarray(t)


def _pad(
    path: str, column: list[np.ndarray], shape: tuple[int | None, ...], pad: np.ndarray
) -> Any:
    """One component's batch: each array padded at the end of every axis to ``shape`` (the
    longest in the batch where ``shape`` has None), then stacked."""
    longest = np.max([a.shape for a in column], axis=0) if shape else np.zeros(0, int)
    target = tuple(int(m) if d is None else d for d, m in zip(shape, longest, strict=True))
    out = np.full((len(column), *target), pad, dtype=column[0].dtype)
    for k, a in enumerate(column):
        if any(n > t for n, t in zip(a.shape, target, strict=True)):
            raise InvalidArgumentError(
                f"padded_batch: {path} of shape {format_shape(a.shape)} does not fit "
                f"padded_shapes {format_shape(target)}"
            )
        where: tuple[int | slice, ...] = (k, *(slice(0, n) for n in a.shape))
        out[where] = a
    return ef.convert_to_tensor(out)


# --- shuffle, filter and prefetch ------------------------------------------------------------
class _Shuffle(_Reordering, kind="shuffle"):
    def __init__(
        self, input_dataset: Dataset, buffer_size: int, seed: int | None, reshuffle: bool
    ) -> None:
        super().__init__(input_dataset)
        self._buffer_size = count_argument("shuffle", "buffer_size", buffer_size, least=1)
        if seed is None:
            seed = _seed_from_global_generator()
        self._seed = count_argument("shuffle", "seed", seed, least=0)
        self._reshuffle = bool(reshuffle)
        # Which pass this is: pass k shuffles with the generator seeded (seed, k), so every
        # epoch has its own order and a dataset made again with the same seed repeats them.
        self._passes = itertools.count()

    def _over(self, make: Callable[[], Iterator[_T]]) -> Iterator[_T]:
        epoch = next(self._passes) if self._reshuffle else 0
        rng = np.random.default_rng([self._seed, epoch])
        return _buffer_shuffle(make(), self._buffer_size, rng)

    def _describe(self) -> str:
        return f".shuffle({self._buffer_size}, seed={self._seed})"


def _buffer_shuffle(
    items: Iterator[_T], buffer_size: int, rng: np.random.Generator
) -> Iterator[_T]:
    """``tf.data``'s shuffle: fill a buffer, then repeatedly give a random element of it and
    put the next input element in its place; when the input ends, empty the buffer the same
    way. Every pick is uniform over the buffer, so a buffer holding the whole input makes a
    uniform permutation (it is then Fisher-Yates' shuffle)."""
    buffer = list(itertools.islice(items, buffer_size))
    picks = _random_ints(rng)
    while buffer:
        # A big random int modulo the buffer's size, as TensorFlow's kernel does (the bias
        # of 2**63 mod n is below 1e-12). Drawn 4096 at a time: one NumPy call per pick
        # would cost more than the rest of the loop.
        i = next(picks) % len(buffer)
        chosen = buffer[i]
        following = next(items, _END)
        if following is _END:  # the input is used up: the buffer shrinks
            buffer[i] = buffer[-1]
            buffer.pop()
        else:
            buffer[i] = following
        yield chosen


def _random_ints(rng: np.random.Generator) -> Iterator[int]:
    while True:
        yield from rng.integers(0, 2**63 - 1, size=4096, dtype=np.int64).tolist()


def _seed_from_global_generator() -> int:
    """A seed drawn by a random op, so ``ef.set_seed`` decides it (eagerly, and unseen by
    any tape: this is bookkeeping, not part of a computation)."""
    with context(None), no_recording():
        return int(ef.random_uniform((), 0, 2**31 - 1, ef.int64))


class _Filter(_Transformation, kind="filter"):
    def __init__(self, input_dataset: Dataset, predicate: Callable[..., Any]) -> None:
        super().__init__(input_dataset)
        self._predicate = checked_function("filter", predicate)

    def _elements(self) -> Iterator[Any]:
        return (element for element in self._input._elements() if self._keep(element))

    def _keep(self, element: Any) -> bool:
        with context(None), no_recording():
            verdict = call_with(self._predicate, element)
        try:
            verdict = ef.convert_to_tensor(verdict)
        except (DTypeError, ShapeError) as e:
            raise TypeError(f"filter: the predicate must return a bool tensor: {e}") from None
        if verdict.dtype is not ef.bool_ or verdict.shape != ():
            raise TypeError(
                "filter: the predicate must return a scalar bool tensor, got "
                f"{verdict.dtype} of shape {format_shape(verdict.shape)}"
            )
        return bool(verdict)

    def _cardinality(self) -> int:
        return 0 if self._input._cardinality() == 0 else UNKNOWN_CARDINALITY

    def _describe(self) -> str:
        return f".filter({function_name(self._predicate)})"


# --- prefetch: a producer thread and a bounded queue ----------------------------------------
class _Prefetch(_Transformation, kind="prefetch"):
    def __init__(self, input_dataset: Dataset, buffer_size: int) -> None:
        super().__init__(input_dataset)
        if buffer_size == AUTOTUNE:
            buffer_size = AUTOTUNE_BUFFER
        self._buffer_size = count_argument("prefetch", "buffer_size", buffer_size, least=1)

    def _elements(self) -> Iterator[Any]:
        return PrefetchIterator(self._input._elements(), self._buffer_size)

    def _describe(self) -> str:
        return f".prefetch({self._buffer_size})"


# Nothing here is for other modules to import: each kind registers itself with Dataset
# (``kind=...``), and Dataset's methods make it.
__all__: list[str] = []
