"""Conformance cases for ``Dataset`` (``tf.data.Dataset``): the elements a pipeline yields
(values, dtypes, shapes), its ``element_spec`` and ``cardinality()``, and which arguments
raise. ``cases.py`` merges ``CASES`` into its own.

A dict element is compared as its values in key order, a spec as a tensor of its dtype
(empty) and its rank and shape (-1 for an unknown size).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

import numpy as np

Case = Callable[[Any], Any]
CASES: dict[str, Case] = {}


def case(name: str) -> Callable[[Case], Case]:
    def register(function: Case) -> Case:
        if f"data/{name}" in CASES:
            raise ValueError(f"two cases named {name}")
        CASES[f"data/{name}"] = function
        return function

    return register


def _plain(x: Any) -> Any:
    if isinstance(x, dict):
        return [_plain(x[k]) for k in sorted(x)]
    if isinstance(x, tuple | list):
        return [_plain(v) for v in x]
    return x


def items(ds: Any) -> list[Any]:
    return [_plain(e) for e in ds]


def count(ns: Any, ds: Any) -> Any:
    return ns.constant(int(ds.cardinality()), ns.int64)


def spec(ns: Any, ds: Any) -> Any:
    def one(s: Any) -> Any:
        dims = [-1 if d is None else d for d in s.shape]  # after the rank: never empty
        return [ns.zeros([0], s.dtype), ns.constant([len(dims), *dims], ns.int64)]

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            return [walk(x[k]) for k in sorted(x)]
        if isinstance(x, tuple | list):
            return [walk(v) for v in x]
        return one(x)

    return walk(ds.element_spec)


def ragged(ns: Any) -> Any:
    """Vectors of lengths 1, 2, 3 (int32), from a generator."""
    rows = [[1], [2, 3], [4, 5, 6]]
    return ns.Dataset.from_generator(
        lambda: iter(rows), output_signature=ns.TensorSpec([None], ns.int32)
    )


# --- skip ------------------------------------------------------------------------------------
for _n in (0, 2, 5, -1, -2):
    CASES[f"data/skip/{_n}"] = lambda ns, n=_n: items(ns.Dataset.range(4).skip(n))
    CASES[f"data/skip/{_n}/cardinality"] = lambda ns, n=_n: count(ns, ns.Dataset.range(4).skip(n))
case("skip/infinite/cardinality")(lambda ns: count(ns, ns.Dataset.range(3).repeat().skip(5)))
case("skip/float_count")(lambda ns: items(ns.Dataset.range(3).skip(1.5)))

# --- zip -------------------------------------------------------------------------------------
case("zip/varargs")(lambda ns: items(ns.Dataset.zip(ns.Dataset.range(2), ns.Dataset.range(3))))
case("zip/tuple")(lambda ns: items(ns.Dataset.zip((ns.Dataset.range(3), ns.Dataset.range(2)))))


@case("zip/nested")
def _(ns: Any) -> Any:
    d = ns.Dataset
    ds = d.zip({"a": d.range(2), "b": (d.range(3), d.from_tensors([1.5, 2.5]).repeat())})
    return [items(ds), spec(ns, ds), count(ns, ds)]


case("zip/list")(lambda ns: items(ns.Dataset.zip([ns.Dataset.range(2), ns.Dataset.range(3)])))
case("zip/nothing")(lambda ns: ns.Dataset.zip())
case("zip/tuple_elements")(
    lambda ns: items(ns.Dataset.zip((ns.Dataset.range(2).enumerate(3), ns.Dataset.range(2))))
)
case("zip/not_a_dataset")(lambda ns: items(ns.Dataset.zip((ns.Dataset.range(2), 3))))


@case("zip/infinite/cardinality")
def _(ns: Any) -> Any:
    forever = ns.Dataset.range(2).repeat()
    both = ns.Dataset.zip((forever, forever))
    return [count(ns, both), count(ns, ns.Dataset.zip((forever, ns.Dataset.range(1))))]


case("zip/unknown/cardinality")(
    lambda ns: count(
        ns, ns.Dataset.zip((ns.Dataset.range(2), ns.Dataset.range(5).filter(lambda x: x > 1)))
    )
)

# --- from_tensors ----------------------------------------------------------------------------
case("from_tensors/scalar")(lambda ns: items(ns.Dataset.from_tensors(1.5)))
case("from_tensors/matrix")(lambda ns: items(ns.Dataset.from_tensors([[1, 2], [3, 4]])))


@case("from_tensors/structure")
def _(ns: Any) -> Any:
    ds = ns.Dataset.from_tensors((ns.constant([1, 2], ns.int64), {"y": 2.5, "x": [True]}))
    return [items(ds), spec(ns, ds), count(ns, ds)]


# --- enumerate -------------------------------------------------------------------------------
case("enumerate/start")(lambda ns: items(ns.Dataset.range(3).enumerate(start=5)))
case("enumerate/spec")(lambda ns: spec(ns, ns.Dataset.from_tensors([1.0]).enumerate()))
case("enumerate/float_start")(lambda ns: items(ns.Dataset.range(2).enumerate(start=0.5)))

# --- concatenate -----------------------------------------------------------------------------


@case("concatenate/values")
def _(ns: Any) -> Any:
    ds = ns.Dataset.range(2).concatenate(ns.Dataset.range(10, 12))
    return [items(ds), count(ns, ds)]


@case("concatenate/shapes_merge")
def _(ns: Any) -> Any:
    d = ns.Dataset
    ds = d.from_tensors([1, 2]).concatenate(d.from_tensors([1, 2, 3]))
    return [items(ds), spec(ns, ds)]


case("concatenate/dtype")(lambda ns: ns.Dataset.range(2).concatenate(ns.Dataset.from_tensors(1)))
case("concatenate/structure")(
    lambda ns: ns.Dataset.range(2).concatenate(ns.Dataset.range(2).enumerate())
)
case("concatenate/infinite/cardinality")(
    lambda ns: count(ns, ns.Dataset.range(2).concatenate(ns.Dataset.range(2).repeat()))
)

# --- unbatch ---------------------------------------------------------------------------------


@case("unbatch/values")
def _(ns: Any) -> Any:
    ds = ns.Dataset.range(5).batch(2).unbatch()
    return [items(ds), spec(ns, ds), count(ns, ds)]


@case("unbatch/tuple")
def _(ns: Any) -> Any:
    ds = ns.Dataset.from_tensors(([1, 2], [[1.0], [2.0]])).unbatch()
    return [items(ds), spec(ns, ds)]


case("unbatch/scalar")(lambda ns: ns.Dataset.range(3).unbatch())
case("unbatch/rows_differ")(
    lambda ns: items(ns.Dataset.from_tensors(([1, 2], [1, 2, 3])).unbatch())
)
case("unbatch/ragged")(lambda ns: items(ragged(ns).unbatch()))

# --- cache -----------------------------------------------------------------------------------


@case("cache/file")
def _(ns: Any) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "cache")
        ds = ns.Dataset.range(3).cache(path)
        return [items(ds), items(ds)]


@case("cache/two_passes")
def _(ns: Any) -> Any:
    ds = ns.Dataset.range(3).map(lambda x: x * 2).cache()
    return [items(ds), items(ds), count(ns, ds)]


@case("cache/keeps_the_first_order")
def _(ns: Any) -> Any:
    ds = ns.Dataset.range(6).shuffle(6, seed=3).cache()
    first, second = items(ds), items(ds)
    return [ns.constant([int(a) == int(b) for a, b in zip(first, second, strict=True)])]


# --- padded_batch ----------------------------------------------------------------------------


@case("padded_batch/longest")
def _(ns: Any) -> Any:
    ds = ragged(ns).padded_batch(2)
    return [items(ds), spec(ns, ds), count(ns, ds)]


@case("padded_batch/shapes_and_values")
def _(ns: Any) -> Any:
    ds = ragged(ns).padded_batch(2, padded_shapes=[4], padding_values=-1)
    return [items(ds), spec(ns, ds)]


@case("padded_batch/drop_remainder")
def _(ns: Any) -> Any:
    ds = ragged(ns).padded_batch(2, padded_shapes=[-1], drop_remainder=True)
    return [items(ds), spec(ns, ds)]


@case("padded_batch/structure")
def _(ns: Any) -> Any:
    ds = ragged(ns).map(lambda x: (x, ns.size(x))).padded_batch(3, padded_shapes=([3], []))
    return [items(ds), spec(ns, ds)]


case("padded_batch/scalars")(lambda ns: items(ns.Dataset.range(3).padded_batch(2)))
case("padded_batch/too_small")(lambda ns: items(ragged(ns).padded_batch(2, padded_shapes=[2])))
case("padded_batch/static_too_small")(
    lambda ns: ns.Dataset.from_tensors([1, 2, 3]).padded_batch(2, padded_shapes=[2])
)
case("padded_batch/rank")(
    lambda ns: ns.Dataset.from_tensors([1, 2]).padded_batch(2, padded_shapes=[2, 3])
)
case("padded_batch/float_padding_for_int")(
    lambda ns: items(ragged(ns).padded_batch(2, padding_values=-1.5))
)
case("padded_batch/int64_padding_for_int32")(
    lambda ns: items(ragged(ns).padded_batch(2, padding_values=ns.constant(-1, ns.int64)))
)
case("padded_batch/batch_size_0")(lambda ns: items(ragged(ns).padded_batch(0)))

# --- from_generator --------------------------------------------------------------------------


@case("from_generator/structure")
def _(ns: Any) -> Any:
    signature = (ns.TensorSpec([], ns.int32), ns.TensorSpec([None], ns.float32))
    ds = ns.Dataset.from_generator(
        lambda: iter([(1, [1.5]), (2, [2.0, 3.0])]), output_signature=signature
    )
    return [items(ds), spec(ns, ds), count(ns, ds)]


def _generated(values: list[Any], shape: list[Any], dtype: str) -> Case:
    return lambda ns: items(
        ns.Dataset.from_generator(
            lambda: iter(values), output_signature=ns.TensorSpec(shape, getattr(ns, dtype))
        )
    )


CASES["data/from_generator/truncates"] = _generated([1.5, -2.5], [], "int32")
CASES["data/from_generator/float64"] = _generated([[0.1, 0.2]], [2], "float64")
CASES["data/from_generator/wrong_shape"] = _generated([[1, 2]], [3], "int32")
CASES["data/from_generator/wrong_rank"] = _generated([1], [1], "int32")
CASES["data/from_generator/not_a_number"] = _generated(["a"], [], "float32")
case("from_generator/not_callable")(
    lambda ns: ns.Dataset.from_generator(iter([1]), output_signature=ns.TensorSpec([], ns.int32))
)
case("from_generator/output_types")(
    lambda ns: items(
        ns.Dataset.from_generator(lambda: iter([(1, [2.5])]), output_types=(ns.int64, ns.float64))
    )
)
case("from_generator/output_shapes")(
    lambda ns: items(
        ns.Dataset.from_generator(lambda: iter([[1, 2]]), output_types=ns.int32, output_shapes=[3])
    )
)
case("from_generator/no_signature")(lambda ns: ns.Dataset.from_generator(lambda: iter([1])))


@case("from_generator/args_and_passes")
def _(ns: Any) -> Any:
    def gen(n: Any) -> Any:
        return iter(range(int(n)))

    ds = ns.Dataset.from_generator(gen, args=(3,), output_signature=ns.TensorSpec([], ns.int64))
    return [items(ds), items(ds)]


@case("from_generator/args_are_numpy")
def _(ns: Any) -> Any:
    seen: list[Any] = []

    def gen(n: Any, s: Any) -> Any:
        seen.extend([str(np.asarray(n).dtype), type(s).__name__])
        return iter([1])

    items(
        ns.Dataset.from_generator(gen, args=(3, "ab"), output_signature=ns.TensorSpec([], ns.int32))
    )
    return ns.constant([seen == ["int32", "bytes"]])


# --- map(num_parallel_calls=) ----------------------------------------------------------------
for _calls in ("AUTOTUNE", 1, 4):
    CASES[f"data/map/num_parallel_calls/{_calls}"] = lambda ns, c=_calls: items(
        ns.Dataset.range(7).map(
            lambda x: x * x, num_parallel_calls=getattr(ns, c) if isinstance(c, str) else c
        )
    )
for _calls in (0, -2, 1.5):
    CASES[f"data/map/num_parallel_calls/{_calls}"] = lambda ns, c=_calls: items(
        ns.Dataset.range(3).map(lambda x: x, num_parallel_calls=c)
    )
case("map/deterministic")(
    lambda ns: items(
        ns.Dataset.range(5).map(lambda x: x + 1, num_parallel_calls=2, deterministic=True)
    )
)
