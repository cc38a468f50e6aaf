"""eagerflow.nn.data: Dataset sources, shuffle, batch, map, repeat, take, filter, prefetch,
element_spec and cardinality, feeding a Session and a function, and fit on a Dataset."""

from __future__ import annotations

import collections
import gc
import re
import threading
import time

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape
from eagerflow.graph import (
    Graph,
    Session,
    TensorSpec,
    function,
    global_variables_initializer,
    placeholder,
)
from eagerflow.nn import data
from eagerflow.nn.data import Dataset
from eagerflow.tensor import Tensor


def values(dataset: Dataset) -> list[int]:
    """A dataset of int scalars as a list of Python ints (one pass)."""
    return [int(v) for v in dataset.as_numpy_iterator()]


# --- from_tensor_slices ---------------------------------------------------------------------
def test_slices_of_one_array_are_tensors_of_its_rows() -> None:
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    ds = Dataset.from_tensor_slices(x)
    elements = list(ds)
    assert len(elements) == 4 and all(type(e) is Tensor for e in elements)
    for row, element in zip(x, elements, strict=True):
        assert element.dtype is ef.float32 and element.shape == (3,)
        np.testing.assert_array_equal(element.numpy(), row)
    assert ds.element_spec == TensorSpec((3,), ef.float32)
    assert len(ds) == ds.cardinality() == 4


def test_slices_of_a_tuple_and_a_nested_dict() -> None:
    x = np.arange(6).reshape(3, 2)
    ds = Dataset.from_tensor_slices(({"image": x, "extra": (x * 10, np.ones(3))}, np.arange(3)))
    first = next(iter(ds))
    assert isinstance(first, tuple) and list(first[0]) == ["image", "extra"]
    np.testing.assert_array_equal(first[0]["image"].numpy(), [0, 1])
    np.testing.assert_array_equal(first[0]["extra"][0].numpy(), [0, 10])
    assert first[0]["extra"][1].dtype is ef.float64  # NumPy arrays keep their dtype
    assert int(first[1]) == 0
    spec = ds.element_spec
    assert spec[0]["image"] == TensorSpec((2,), ef.int64)
    assert spec[0]["extra"] == (TensorSpec((2,), ef.int64), TensorSpec((), ef.float64))


def test_a_python_list_is_one_tensor_not_a_structure() -> None:
    """As in tf.data: a list is converted (stacked) into one tensor; a tuple is a structure."""
    assert values(Dataset.from_tensor_slices([1, 2, 3])) == [1, 2, 3]
    rows = list(Dataset.from_tensor_slices([[1.0, 2.0], [3.0, 4.0]]).as_numpy_iterator())
    np.testing.assert_array_equal(rows, [[1.0, 2.0], [3.0, 4.0]])
    assert Dataset.from_tensor_slices(([1, 2], [3, 4])).element_spec == (
        TensorSpec((), ef.int32), TensorSpec((), ef.int32))  # fmt: skip


def test_named_tuples_stay_named_tuples() -> None:
    Pair = collections.namedtuple("Pair", ["x", "y"])
    ds = Dataset.from_tensor_slices(Pair(np.arange(3), np.arange(3) * 2))
    element = next(iter(ds))
    assert isinstance(element, Pair) and int(element.y) == 0
    # a named tuple is one argument to map, as in tf.data (only a plain tuple is spread)
    assert values(ds.map(lambda pair: pair.x + pair.y)) == [0, 3, 6]


def test_range() -> None:
    assert values(Dataset.range(4)) == [0, 1, 2, 3]
    assert values(Dataset.range(2, 9, 3)) == [2, 5, 8]
    assert Dataset.range(5).element_spec == TensorSpec((), ef.int64)
    with pytest.raises(ValueError, match="step must not be 0"):
        Dataset.range(0, 5, 0)
    with pytest.raises(TypeError, match=r"Dataset.range: stop must be an int, got 2\.5"):
        Dataset.range(0, 2.5)  # type: ignore[arg-type]


def test_ragged_components_name_each_length() -> None:
    message = (
        "from_tensor_slices: every component needs the same length along axis 0 "
        "(one row per element), but component ['x'] has 10, component ['y'] has 9"
    )
    with pytest.raises(ValueError, match=re.escape(message)):
        Dataset.from_tensor_slices({"x": np.zeros((10, 2)), "y": np.zeros(9)})
    with pytest.raises(ValueError, match=re.escape("component [0] has 3, component [1] has 2")):
        Dataset.from_tensor_slices((np.zeros(3), np.zeros(2)))


def test_a_scalar_component_has_no_rows() -> None:
    with pytest.raises(ValueError, match=re.escape("component [1] is a scalar (np.float32(")):
        Dataset.from_tensor_slices((np.zeros(3), 5.0))
    with pytest.raises(ValueError, match="the tensor is a scalar"):
        Dataset.from_tensor_slices(np.int64(4))


def test_other_bad_sources() -> None:
    with pytest.raises(ValueError, match="at least one tensor"):
        Dataset.from_tensor_slices({})
    with pytest.raises(TypeError, match=r"component \[0\] is not a tensor"):
        Dataset.from_tensor_slices((["a", "b"], np.zeros(2)))
    with Graph().as_default():
        x = placeholder(ef.float32, (None, 2))
    with pytest.raises(TypeError, match="is the graph tensor 'Placeholder:0'"):
        Dataset.from_tensor_slices(x)


def test_the_dataset_copies_its_input() -> None:
    x = np.arange(3)
    ds = Dataset.from_tensor_slices(x)
    x[0] = 100
    assert values(ds) == [0, 1, 2]


# --- shuffle --------------------------------------------------------------------------------
def epochs(dataset: Dataset, n: int) -> list[list[int]]:
    return [values(dataset) for _ in range(n)]


def test_shuffle_with_a_seed_is_reproducible_and_reshuffles_each_epoch() -> None:
    def make(seed: int) -> Dataset:
        return Dataset.range(20).shuffle(20, seed=seed)

    first = epochs(make(1), 3)
    assert first == epochs(make(1), 3)  # the same sequence of epochs for the same seed
    assert len({tuple(e) for e in first}) == 3  # each epoch its own order
    assert all(sorted(e) == list(range(20)) for e in first)
    assert first[0] != list(range(20))
    assert epochs(make(2), 3) != first  # another seed, other orders


def test_shuffle_without_reshuffling_repeats_the_first_order() -> None:
    ds = Dataset.range(20).shuffle(20, seed=3, reshuffle_each_iteration=False)
    orders = epochs(ds, 3)
    assert orders[0] == orders[1] == orders[2] != list(range(20))
    assert orders[0] == values(Dataset.range(20).shuffle(20, seed=3))  # its first epoch


def test_shuffle_without_a_seed_follows_the_global_seed() -> None:
    ef.set_seed(7)
    first = epochs(Dataset.range(30).shuffle(30), 2)
    ef.set_seed(7)
    assert epochs(Dataset.range(30).shuffle(30), 2) == first
    assert epochs(Dataset.range(30).shuffle(30), 2) != first  # the generator has moved on


def test_shuffle_buffer_of_one_keeps_the_order() -> None:
    assert values(Dataset.range(10).shuffle(1, seed=0)) == list(range(10))


def test_a_full_buffer_gives_every_element_exactly_once() -> None:
    for buffer_size in (50, 51, 1000):
        out = values(Dataset.range(50).shuffle(buffer_size, seed=buffer_size))
        assert sorted(out) == list(range(50)) and out != list(range(50))


def test_a_full_buffer_draws_uniform_permutations() -> None:
    """All 6 orders of 3 elements, each about 1/6 of 1,200 epochs (seeded: not flaky; the
    bounds are 5 standard deviations wide)."""
    ds = Dataset.range(3).shuffle(3, seed=0)
    counts = collections.Counter(tuple(values(ds)) for _ in range(1200))
    assert len(counts) == 6
    assert all(130 < c < 270 for c in counts.values()), counts


def test_a_small_buffer_only_moves_elements_a_little_earlier() -> None:
    """With a buffer of k, output position i holds one of the first i + k inputs: that is
    the buffer's whole promise (and its cost: it is no uniform shuffle)."""
    for seed in range(5):
        out = values(Dataset.range(100).shuffle(4, seed=seed))
        assert sorted(out) == list(range(100))
        assert all(v < i + 4 for i, v in enumerate(out))
        assert out != list(range(100))


def test_shuffle_of_elements_and_of_rows_agree() -> None:
    """After from_tensor_slices, shuffle works on row numbers (batch's fast path); after a
    map, on elements. The same seed gives the same order either way."""
    rows = values(Dataset.range(40).shuffle(8, seed=5))
    mapped = values(Dataset.range(40).map(lambda v: v).shuffle(8, seed=5))
    assert rows == mapped


# --- batch ----------------------------------------------------------------------------------
def test_batch_sizes_with_and_without_drop_remainder() -> None:
    ds = Dataset.from_tensor_slices((np.arange(10), np.arange(20).reshape(10, 2)))
    kept = list(ds.batch(4))
    assert [len(xb) for xb, _ in kept] == [4, 4, 2]
    np.testing.assert_array_equal(kept[2][0].numpy(), [8, 9])
    np.testing.assert_array_equal(kept[2][1].numpy(), [[16, 17], [18, 19]])
    assert ds.batch(4).cardinality() == 3
    dropped = list(ds.batch(4, drop_remainder=True))
    assert [len(xb) for xb, _ in dropped] == [4, 4]
    assert len(ds.batch(4, drop_remainder=True)) == 2
    assert ds.batch(4).element_spec == (TensorSpec((None,), ef.int64),
                                        TensorSpec((None, 2), ef.int64))  # fmt: skip
    assert ds.batch(4, drop_remainder=True).element_spec[1] == TensorSpec((4, 2), ef.int64)
    assert [len(b) for b in Dataset.range(8).batch(4, drop_remainder=True)] == [4, 4]


def test_batch_of_a_nested_structure() -> None:
    ds = Dataset.from_tensor_slices({"a": (np.arange(5), np.ones((5, 2))), "b": np.arange(5)})
    batch = next(iter(ds.batch(3)))
    assert list(batch) == ["a", "b"]
    assert batch["a"][1].shape == (3, 2) and batch["a"][1].dtype is ef.float64
    np.testing.assert_array_equal(batch["b"].numpy(), [0, 1, 2])


def test_gathered_and_stacked_batches_agree() -> None:
    """batch right after shuffle gathers rows by number; after a map it stacks elements.
    The results are the same batches."""
    x = np.random.default_rng(0).standard_normal((23, 3)).astype(np.float32)
    source = Dataset.from_tensor_slices((x, np.arange(23)))
    gathered = list(source.shuffle(10, seed=1).repeat(2).batch(5).as_numpy_iterator())
    stacked = list(source.map(lambda a, b: (a, b)).shuffle(10, seed=1).repeat(2).batch(5)
                   .as_numpy_iterator())  # fmt: skip
    assert len(gathered) == len(stacked) == 10  # 46 rows: the batches run across epochs
    for (xg, yg), (xs, ys) in zip(gathered, stacked, strict=True):
        np.testing.assert_array_equal(xg, xs)
        np.testing.assert_array_equal(yg, ys)
        np.testing.assert_array_equal(xg, x[yg])  # each row still with its label


def test_batch_of_batches() -> None:
    out = list(Dataset.range(8).batch(2).batch(2).as_numpy_iterator())
    np.testing.assert_array_equal(out[1], [[4, 5], [6, 7]])


def test_batch_of_elements_that_do_not_stack() -> None:
    ds = Dataset.range(4).map(lambda v: ef.zeros((int(v),)))
    with pytest.raises(ValueError, match=re.escape("batch: cannot stack the tensor: it is (0,)")):
        list(ds.batch(2))


def test_batching_1437_shuffled_images_makes_a_tensor_per_batch_not_per_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fast path: 1,437 8x8 images (digits' training set), shuffled and batched by 32,
    are gathered a batch at a time (one NumPy gather per component), never row by row (one
    tensor per row, ~13x slower: benchmarks measure speed, this the path)."""
    x = np.arange(1437 * 64, dtype=np.float32).reshape(1437, 8, 8)
    ds = Dataset.from_tensor_slices((x, np.arange(1437))).shuffle(1437, seed=0).batch(32)
    converted = []
    real = ef.convert_to_tensor
    monkeypatch.setattr(
        ef, "convert_to_tensor", lambda v, *a, **k: converted.append(1) or real(v, *a, **k)
    )
    batches = list(ds)
    assert len(batches) == 45 and len(converted) == 2 * 45  # two components per batch
    rows = np.concatenate([labels.numpy() for _, labels in batches])
    assert sorted(rows) == list(range(1437))  # every row once, shuffled
    assert np.array_equal(batches[0][0].numpy(), x[rows[:32]])


# --- map, filter, repeat, take --------------------------------------------------------------
def test_map_spreads_a_tuple_and_passes_a_dict_whole() -> None:
    pairs = Dataset.from_tensor_slices((np.arange(3), np.arange(3) * 10))
    assert values(pairs.map(lambda x, y: x + y)) == [0, 11, 22]
    records = Dataset.from_tensor_slices({"x": np.arange(3), "y": np.arange(3) * 10})
    assert values(records.map(lambda r: r["x"] - r["y"])) == [0, -9, -18]


def test_map_results_become_tensors_with_a_spec() -> None:
    ds = Dataset.range(3).map(lambda v: {"double": v * 2, "half": ef.cast(v, ef.float32) / 2,
                                         "one": 1.0})  # fmt: skip
    element = next(iter(ds))
    assert all(type(t) is Tensor for t in element.values())
    assert ds.element_spec == {"double": TensorSpec((), ef.int64),
                               "half": TensorSpec((), ef.float32),
                               "one": TensorSpec((), ef.float32)}  # fmt: skip
    assert ds.cardinality() == 3


def test_map_element_spec_is_traced_without_running_the_pipeline() -> None:
    calls: list[object] = []

    def record(x):
        calls.append(x)
        return ef.reshape(x, (2, -1))

    ds = Dataset.from_tensor_slices(np.zeros((5, 6), np.float32)).map(record)
    assert ds.element_spec == TensorSpec((2, 3), ef.float32)
    assert len(calls) == 1 and not isinstance(calls[0], np.ndarray)  # one placeholder


def test_map_element_spec_when_the_function_needs_values() -> None:
    ds = Dataset.range(3).map(lambda v: ef.constant(v.numpy() * 2))
    assert values(ds) == [0, 2, 4]  # iterating works: the function runs eagerly
    with pytest.raises(TypeError, match="element_spec: could not call the map function"):
        _ = ds.element_spec


def test_map_needs_a_function() -> None:
    with pytest.raises(TypeError, match=r"map: expected a function .* got int 3"):
        Dataset.range(3).map(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="filter: expected a function"):
        Dataset.range(3).filter("even")  # type: ignore[arg-type]


def test_map_runs_eagerly_while_a_graph_is_being_built() -> None:
    g = Graph()
    with g.as_default():
        out = list(Dataset.range(3).map(lambda v: v * 2).as_numpy_iterator())
    assert [int(v) for v in out] == [0, 2, 4]
    assert g.get_operations() == []  # the graph has no node of the pipeline's


def test_map_is_not_recorded_by_a_tape() -> None:
    w = ef.constant(2.0)
    with GradientTape() as tape:
        tape.watch(w)
        ds = Dataset.range(2).map(lambda v: ef.cast(v, ef.float32) * w)
        first, second = ds
        total = first + second
    assert tape.gradient(total, w) is None  # data is not part of the computation


def test_filter() -> None:
    ds = Dataset.range(10).filter(lambda v: v % 3 == 0)
    assert values(ds) == [0, 3, 6, 9]
    assert ds.cardinality() == data.UNKNOWN_CARDINALITY
    with pytest.raises(TypeError, match="unknown"):
        len(ds)
    with pytest.raises(TypeError, match=r"scalar bool tensor, got int64 of shape \(\)"):
        list(Dataset.range(3).filter(lambda v: v))


def test_repeat_take_and_map_compose() -> None:
    ds = Dataset.range(3).map(lambda v: v * 10).repeat(2).take(5)
    assert values(ds) == [0, 10, 20, 0, 10]
    assert ds.cardinality() == 5
    assert values(Dataset.range(3).repeat(3)) == [0, 1, 2] * 3
    assert values(Dataset.range(3).repeat(-1).take(4)) == [0, 1, 2, 0]  # -1: forever
    assert values(Dataset.range(5).take(-1)) == list(range(5))
    assert values(Dataset.range(5).take(0)) == []
    assert values(Dataset.range(5).take(9)) == list(range(5))
    assert Dataset.range(5).take(9).cardinality() == 5


def test_repeat_forever() -> None:
    forever = Dataset.range(3).repeat()
    assert forever.cardinality() == data.INFINITE_CARDINALITY
    with pytest.raises(TypeError, match="infinite"):
        len(forever)
    assert bool(forever)  # truthiness does not ask len()
    assert values(forever.take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert forever.take(7).cardinality() == 7
    assert forever.batch(2).cardinality() == data.INFINITE_CARDINALITY
    empty = Dataset.range(0).repeat()
    assert empty.cardinality() == 0 and values(empty) == []  # not an endless loop


def test_shuffle_then_repeat_reshuffles_each_repetition() -> None:
    out = values(Dataset.range(10).shuffle(10, seed=4).repeat(3))
    parts = [out[:10], out[10:20], out[20:]]
    assert all(sorted(p) == list(range(10)) for p in parts)
    assert len({tuple(p) for p in parts}) == 3


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda ds: ds.batch(0), "batch: batch_size must be >= 1, got 0"),
        (lambda ds: ds.batch(-3), "batch: batch_size must be >= 1, got -3"),
        (lambda ds: ds.shuffle(0), "shuffle: buffer_size must be >= 1, got 0"),
        (lambda ds: ds.shuffle(10, seed=-1), "shuffle: seed must be >= 0, got -1"),
        (lambda ds: ds.take(-2), "take: count must be >= -1, got -2"),
        (lambda ds: ds.repeat(-2), "repeat: count must be >= -1, got -2"),
        (lambda ds: ds.prefetch(0), "prefetch: buffer_size must be >= 1, got 0"),
        (lambda ds: ds.prefetch(-5), "prefetch: buffer_size must be >= 1, got -5"),
    ],
)
def test_negative_and_zero_sizes(make, message) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        make(Dataset.range(4))


def test_sizes_must_be_ints() -> None:
    with pytest.raises(TypeError, match=r"batch: batch_size must be an int, got 2\.5"):
        Dataset.range(4).batch(2.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="take: count must be an int, got True"):
        Dataset.range(4).take(True)


def test_repr_shows_the_pipeline() -> None:
    ds = Dataset.from_tensor_slices((np.zeros((10, 2)), np.zeros(10))).shuffle(10, seed=1)
    assert repr(ds.batch(4).prefetch(2)) == (
        "<Dataset from_tensor_slices((10, 2), (10,)).shuffle(10, seed=1).batch(4).prefetch(2)>"
    )


def test_as_numpy_iterator() -> None:
    ds = Dataset.from_tensor_slices({"x": np.arange(4.0), "y": np.arange(4)}).batch(2)
    batches = list(ds.as_numpy_iterator())
    assert type(batches[0]["x"]) is np.ndarray
    np.testing.assert_array_equal(batches[1]["x"], [2.0, 3.0])
    scalar = next(Dataset.range(3).as_numpy_iterator())
    assert isinstance(scalar, np.int64)


# --- prefetch -------------------------------------------------------------------------------
def wait_for_threads(count: int, timeout: float = 2.0) -> int:
    """threading.active_count() once it is down to ``count`` (or the timeout has passed)."""
    deadline = time.monotonic() + timeout
    while threading.active_count() > count and time.monotonic() < deadline:
        time.sleep(0.01)
    return threading.active_count()


def test_prefetch_gives_the_same_elements() -> None:
    before = threading.active_count()
    ds = Dataset.range(50).shuffle(50, seed=2).batch(7)
    expected = [b.tolist() for b in ds.as_numpy_iterator()]
    fresh = Dataset.range(50).shuffle(50, seed=2).batch(7).prefetch(3)
    assert [b.tolist() for b in fresh.as_numpy_iterator()] == expected
    assert fresh.element_spec == ds.element_spec and len(fresh) == len(ds)
    assert threading.active_count() == before  # a finished pass has joined its thread


def test_prefetch_overlaps_making_and_using_elements() -> None:
    """A map that sleeps 20 ms per element and a loop that sleeps 20 ms per element: one
    after the other, 10 elements take ~0.4 s; with prefetch the map of the next element
    runs during the loop's sleep, ~0.22 s. (Sleeping releases the GIL, as NumPy does.)"""

    def slow(v):
        time.sleep(0.02)
        return v

    def run(ds: Dataset) -> float:
        start = time.perf_counter()
        for _ in ds:
            time.sleep(0.02)
        return time.perf_counter() - start

    serial = run(Dataset.range(10).map(slow))
    overlapped = run(Dataset.range(10).map(slow).prefetch(2))
    assert serial > 0.38
    assert overlapped < 0.8 * serial, (serial, overlapped)


def test_prefetch_raises_the_producers_error_in_the_consumer() -> None:
    before = threading.active_count()

    def fail_at_3(v):
        if int(v) == 3:
            raise RuntimeError("bad element 3")
        return v

    got: list[int] = []
    with pytest.raises(RuntimeError, match="bad element 3"):
        for v in Dataset.range(10).map(fail_at_3).prefetch(2):
            got.append(int(v))
    assert got == [0, 1, 2]  # every element before the error arrived first
    assert wait_for_threads(before) == before


def test_prefetch_thread_stops_when_the_iterator_is_dropped() -> None:
    before = threading.active_count()
    for v in Dataset.range(1000).prefetch(2):
        assert threading.active_count() == before + 1
        if int(v) == 5:
            break  # the iterator is garbage now
    gc.collect()
    assert wait_for_threads(before) == before
    forever = iter(Dataset.range(3).repeat().prefetch(1))
    next(forever)
    del forever
    assert wait_for_threads(before) == before


def test_prefetch_close_joins_the_thread() -> None:
    before = threading.active_count()
    it = iter(Dataset.range(3).repeat().map(lambda v: v).prefetch(4))
    assert isinstance(it, data.PrefetchIterator)
    next(it)
    it.close()
    assert threading.active_count() == before  # joined: nothing to wait for
    with pytest.raises(StopIteration):
        next(it)


def test_nested_prefetches_all_stop() -> None:
    before = threading.active_count()
    ds = Dataset.range(100).prefetch(2).map(lambda v: v + 1).prefetch(2)
    it = iter(ds)
    assert int(next(it)) == 1
    assert threading.active_count() == before + 2
    del it
    assert wait_for_threads(before) == before
    assert values(ds) == list(range(1, 101))
    assert wait_for_threads(before) == before


def test_prefetch_autotune() -> None:
    assert values(Dataset.range(5).prefetch(data.AUTOTUNE)) == list(range(5))
    assert "prefetch(2)" in repr(Dataset.range(5).prefetch(data.AUTOTUNE))


# --- feeding graphs and functions -----------------------------------------------------------
def regression(n: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """y = x · [2, -1] + 0.5, exactly."""
    x = np.random.default_rng(0).standard_normal((n, 2)).astype(np.float32)
    return x, (x @ np.array([[2.0], [-1.0]]) + 0.5).astype(np.float32)


def test_feeding_a_session_from_a_dataset() -> None:
    x, y = regression()
    train = Dataset.from_tensor_slices((x, y)).shuffle(64, seed=0).batch(16).prefetch(2)
    g = Graph()
    with g.as_default():
        xs = placeholder(ef.float32, (None, 2))
        ys = placeholder(ef.float32, (None, 1))
        model = nn.Sequential([nn.Dense(1)])
        loss = nn.mean_squared_error(ys, model(xs))
        step = nn.GradientDescentOptimizer(0.1).minimize(loss)
        init = global_variables_initializer()
    with Session(g) as session:
        session.run(init)
        first = session.run(loss, {xs: x, ys: y})
        for _ in range(10):
            for xb, yb in train:  # eager tensors: feed_dict takes them as it takes arrays
                session.run(step, {xs: xb, ys: yb})
        last = session.run(loss, {xs: x, ys: y})
    assert last < 0.01 * first


def test_feeding_a_function_with_the_datasets_signature() -> None:
    x, y = regression(50)
    ds = Dataset.from_tensor_slices((x, y)).batch(16)  # batches of 16, 16, 16 and 2
    signature = list(ds.element_spec)
    assert signature == [TensorSpec((None, 2), ef.float32), TensorSpec((None, 1), ef.float32)]

    @function(input_signature=signature)
    def squared_error(xb, yb):
        return ef.reduce_sum((xb[:, :1] * 2.0 - xb[:, 1:] + 0.5 - yb) ** 2)

    total = sum(float(squared_error(xb, yb)) for xb, yb in ds)
    assert total == pytest.approx(0.0, abs=1e-8)
    assert squared_error.experimental_get_tracing_count() == 1  # one trace for every batch


def test_iterating_in_eager_mode_feeds_a_model() -> None:
    x, _ = regression(10)
    model = nn.Sequential([nn.Dense(3)])
    out = [model(xb) for xb in Dataset.from_tensor_slices(x).batch(4)]
    np.testing.assert_allclose(np.concatenate([o.numpy() for o in out]), model(x).numpy(),
                               rtol=1e-6)  # fmt: skip


# --- fit ------------------------------------------------------------------------------------
def fit(x, y=None, **options) -> nn.History:
    ef.set_seed(0)  # the same initial weights for every model
    model = nn.Sequential([nn.Dense(4, "tanh"), nn.Dense(1)])
    options = {"loss": "mean_squared_error", "epochs": 3, "verbose": False, **options}
    return nn.fit(model, x, y, optimizer=nn.GradientDescentOptimizer(0.05), **options)


def test_fit_on_a_dataset_matches_fit_on_arrays() -> None:
    x, y = regression(50)
    arrays = fit(x, y, batch_size=16, shuffle=False, validation_data=(x[:10], y[:10]))
    validation = Dataset.from_tensor_slices((x[:10], y[:10])).batch(3)
    dataset = fit(Dataset.from_tensor_slices((x, y)).batch(16), validation_data=validation)
    for name in ("loss", "val_loss"):
        np.testing.assert_allclose(dataset[name], arrays[name], rtol=1e-6)
    assert arrays["loss"][2] < arrays["loss"][0]


def test_fit_on_a_shuffled_prefetched_dataset_learns() -> None:
    x, y = regression(64)
    lines: list[str] = []
    ds = Dataset.from_tensor_slices((x, y)).shuffle(64, seed=0).batch(8).prefetch(2)
    history = fit(ds, epochs=5, verbose=2, print_fn=lines.append)
    assert len(lines) == 10 and lines[-2] == "Epoch 5/5" and lines[-1].startswith("8/8 - ")
    assert history["loss"][-1] < 0.5 * history["loss"][0]


DATASET_MISTAKES = {
    "y": ({"y": np.zeros((8, 1))}, "fit: x is a Dataset, so do not give y: its elements"),
    "batch_size": ({"batch_size": 4}, "do not give batch_size: it is batched already"),
    "shuffle": ({"shuffle": False}, "do not give shuffle: it shuffles itself"),
    "seed": ({"seed": 1}, "do not give seed"),
    "infinite": ({"x": "forever"}, "fit: x is an infinite Dataset (repeat() without a count)"),
    "not pairs": ({"x": "singles"}, "must be (x, y) batches, got Tensor"),
    "triples": ({"x": "triples"}, "must be (x, y) batches, got a tuple of 3"),
    "infinite validation": (
        {"validation_data": "forever"},
        "fit: validation_data is an infinite Dataset",
    ),
}


@pytest.mark.parametrize("mistake", list(DATASET_MISTAKES))
def test_fit_dataset_mistakes_are_named_before_any_training(mistake: str) -> None:
    change, message = DATASET_MISTAKES[mistake]
    x, y = regression(8)
    pairs = Dataset.from_tensor_slices((x, y)).batch(4)
    datasets = {
        "forever": pairs.repeat(),
        "singles": Dataset.from_tensor_slices(x).batch(4),
        "triples": Dataset.from_tensor_slices((x, y, y)).batch(4),
    }
    arguments = {"x": pairs, **change}
    for key in ("x", "validation_data"):
        if isinstance(arguments.get(key), str):
            arguments[key] = datasets[arguments[key]]
    model = nn.Sequential([nn.Dense(1)])
    y_given = arguments.pop("y", None)
    with pytest.raises(ValueError, match=re.escape(message)):
        nn.fit(model, arguments.pop("x"), y_given, loss="mean_squared_error",
               optimizer=nn.GradientDescentOptimizer(0.1), verbose=False,
               **arguments)  # fmt: skip
    assert not model.built  # nothing ran


def test_fit_on_arrays_still_needs_y() -> None:
    x, _ = regression(8)
    with pytest.raises(ValueError, match="fit: give y"):
        fit(x)


def test_fit_on_a_dataset_that_gives_nothing() -> None:
    x, y = regression(8)
    empty = Dataset.from_tensor_slices((x, y)).filter(lambda a, b: a[0] > 100.0).batch(4)
    with pytest.raises(ValueError, match="gave no examples in epoch 1"):
        fit(empty)


def test_each_epoch_is_one_pass_with_a_new_order() -> None:
    labels_seen: list[int] = []

    def record(labels, outputs):
        labels_seen.extend(int(v) for v in labels.numpy().ravel())
        return nn.mean_squared_error(labels, outputs)

    x = np.arange(12, dtype=np.float32).reshape(6, 2)
    ds = Dataset.from_tensor_slices((x, np.arange(6, dtype=np.float32)[:, None]))
    fit(ds.shuffle(6, seed=9).batch(4), loss=record, epochs=3)
    passes = [labels_seen[:6], labels_seen[6:12], labels_seen[12:]]
    assert len(labels_seen) == 18
    assert all(sorted(p) == list(range(6)) for p in passes)
    assert len({tuple(p) for p in passes}) == 3  # reshuffled between epochs
