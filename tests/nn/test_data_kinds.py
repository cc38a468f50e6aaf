"""eagerflow.nn.data_kinds: the subtle parts of skip, zip, from_tensors, enumerate,
concatenate, unbatch, cache, padded_batch, from_generator and map(num_parallel_calls=), whose
calls run in threads.
Values agreeing with TensorFlow are checked in tests/conformance/cases_data.py."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.graph import SymbolicTensor, TensorSpec
from eagerflow.nn.data import AUTOTUNE, UNKNOWN_CARDINALITY, Dataset
from eagerflow.tensor.errors import InvalidArgumentError


def values(dataset: Dataset) -> list[int]:
    return [int(v) for v in dataset.as_numpy_iterator()]


def test_skip_after_shuffle_still_batches_by_row_numbers() -> None:
    x = np.arange(10) * 10
    ds = Dataset.from_tensor_slices(x).shuffle(10, seed=1).skip(3).batch(4)
    batches = [b.numpy().tolist() for b in ds]
    order = values(Dataset.from_tensor_slices(x).shuffle(10, seed=1))
    assert [v for b in batches for v in b] == order[3:]
    assert [len(b) for b in batches] == [4, 3]


def test_cache_runs_its_input_once_and_keeps_only_a_whole_pass() -> None:
    calls: list[int] = []

    def seen(x: ef.Tensor) -> ef.Tensor:
        calls.append(int(x))
        return x

    ds = Dataset.range(4).map(seen).cache()
    first = iter(ds)
    next(first)  # a pass broken off: nothing is kept
    assert values(ds) == [0, 1, 2, 3]
    assert values(ds) == [0, 1, 2, 3]
    assert calls == [0, 0, 1, 2, 3]  # the second complete pass was replayed


def test_a_cache_file_is_read_by_the_next_dataset_and_checked(tmp_path: Path) -> None:
    name = str(tmp_path / "c")
    ds = Dataset.range(3).map(lambda x: x * 2).cache(name)
    assert values(ds) == [0, 2, 4] and os.path.exists(name + ".npz")
    calls = []
    again = Dataset.range(3).map(lambda x: calls.append(x) or x).cache(name)
    assert values(again) == [0, 2, 4]
    # read, not run (the map function only met element_spec's graph placeholders)
    assert not [c for c in calls if not isinstance(c, SymbolicTensor)]
    with pytest.raises(InvalidArgumentError, match="holds elements of another dataset"):
        list(Dataset.from_tensors([1.0]).cache(name))
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(InvalidArgumentError, match="is not a cache file"):
        list(Dataset.range(3).cache(str(tmp_path / "bad")))


def test_from_generator_calls_the_generator_once_per_pass() -> None:
    calls = []

    def gen(n: np.ndarray) -> object:
        calls.append(n)
        return iter(range(int(n)))

    ds = Dataset.from_generator(gen, args=(2,), output_signature=TensorSpec((), ef.int64))
    assert values(ds) == [0, 1] and values(ds) == [0, 1]
    assert calls == [2, 2] and ds.cardinality() == UNKNOWN_CARDINALITY


def test_from_generator_names_the_shape_that_does_not_fit() -> None:
    ds = Dataset.from_generator(lambda: iter([[1, 2]]), output_signature=TensorSpec([3], ef.int32))
    with pytest.raises(InvalidArgumentError, match=r"shape \(2,\) where output_signature"):
        list(ds)


def test_zip_takes_a_nested_structure_and_stops_at_the_shortest() -> None:
    ds = Dataset.zip({"a": Dataset.range(5), "b": (Dataset.range(2), Dataset.range(9))})
    elements = [{k: v for k, v in e.items()} for e in ds]
    assert len(elements) == 2 and int(elements[1]["b"][0]) == 1
    assert ds.element_spec["b"][1] == TensorSpec((), ef.int64)
    with pytest.raises(TypeError, match="zip: datasets must be a structure of Datasets"):
        Dataset.zip((Dataset.range(2), 3))
    with pytest.raises(TypeError, match="not a list"):
        Dataset.zip((Dataset.range(2), [Dataset.range(2)]))


def test_concatenate_names_the_component_whose_dtypes_differ() -> None:
    a = Dataset.from_tensor_slices((np.zeros(2, np.float32), np.zeros(2, np.int64)))
    b = Dataset.from_tensor_slices((np.zeros(2, np.float32), np.zeros(2, np.int32)))
    with pytest.raises(TypeError, match=r"concatenate: component \[1\] is int64 .* int32"):
        a.concatenate(b)


def test_padded_batch_pads_every_axis_of_a_structure() -> None:
    rows = [np.ones((1, 2), np.float32), np.ones((2, 1), np.float32)]
    ds = Dataset.from_generator(
        lambda: iter([(r, [7] * (i + 1)) for i, r in enumerate(rows)]),
        output_signature=(TensorSpec([None, None], ef.float32), TensorSpec([None], ef.int32)),
    ).padded_batch(2, padding_values=(ef.constant(-1.0), 0))
    (x, n) = next(iter(ds))
    assert x.numpy().tolist() == [[[1, 1], [-1, -1]], [[1, -1], [1, -1]]]
    assert n.numpy().tolist() == [[7, 0], [7, 7]]


def test_padded_batch_names_the_argument_that_is_wrong() -> None:
    ds = Dataset.from_tensors([1, 2, 3])
    with pytest.raises(ValueError, match=r"padded_shapes .* smaller than its shape"):
        ds.padded_batch(2, padded_shapes=[2])
    with pytest.raises(TypeError, match="padding_values for the tensor is float32"):
        ds.padded_batch(2, padding_values=-1.5)
    with pytest.raises(InvalidArgumentError, match="batch_size must be >= 1"):
        ds.padded_batch(0)


def test_unbatch_names_the_scalar_and_the_rows_that_differ() -> None:
    with pytest.raises(ValueError, match="unbatch: the tensor is a scalar"):
        Dataset.range(3).unbatch()
    ds = Dataset.from_tensors((np.zeros(2), np.zeros(3))).unbatch()
    with pytest.raises(ValueError, match=r"component \[0\]: 2, component \[1\]: 3"):
        list(ds)


def test_map_checks_num_parallel_calls_and_keeps_the_order() -> None:
    for calls in (AUTOTUNE, 1, 3):
        ds = Dataset.range(5).map(lambda x: x * 2, num_parallel_calls=calls, deterministic=False)
        assert values(ds) == [0, 2, 4, 6, 8]
    with pytest.raises(InvalidArgumentError, match="map: num_parallel_calls must be >= 1"):
        Dataset.range(5).map(lambda x: x, num_parallel_calls=0)
    with pytest.raises(TypeError, match="map: deterministic must be a bool"):
        Dataset.range(5).map(lambda x: x, deterministic="yes")


def test_map_with_parallel_calls_runs_calls_at_the_same_time() -> None:
    # Two calls meet at a barrier: one call at a time would wait there until the timeout.
    meet = threading.Barrier(2, timeout=10)

    def both(x: ef.Tensor) -> ef.Tensor:
        meet.wait()
        return x + 1

    assert values(Dataset.range(4).map(both, num_parallel_calls=2)) == [1, 2, 3, 4]


def test_map_with_parallel_calls_gives_the_input_order_when_a_later_call_ends_first() -> None:
    second_done = threading.Event()
    ended: list[int] = []

    def slow_first(x: ef.Tensor) -> ef.Tensor:
        if int(x) == 0:
            assert second_done.wait(10), "the second call never ran beside the first"
        elif int(x) == 1:
            second_done.set()
        ended.append(int(x))
        return x

    assert values(Dataset.range(3).map(slow_first, num_parallel_calls=2)) == [0, 1, 2]
    assert ended[:2] == [1, 0]


def test_map_with_parallel_calls_raises_where_the_failing_element_would_come() -> None:
    def fail_on_two(x: ef.Tensor) -> ef.Tensor:
        if int(x) == 2:
            raise ValueError("element 2 is bad")
        return x

    got: list[int] = []
    with pytest.raises(ValueError, match="element 2 is bad"):
        for v in Dataset.range(5).map(fail_on_two, num_parallel_calls=3).as_numpy_iterator():
            got.append(int(v))
    assert got == [0, 1]


def test_map_with_parallel_calls_leaves_no_thread_behind() -> None:
    it = iter(Dataset.range(100).map(lambda x: x * 2, num_parallel_calls=3))
    assert int(next(it)) == 0
    it.close()  # type: ignore[attr-defined]
    for thread in threading.enumerate():
        if thread.name.startswith("eagerflow-map"):
            thread.join(10)
    assert not [t for t in threading.enumerate() if t.name.startswith("eagerflow-map")]


def test_repr_shows_the_new_steps() -> None:
    ds = Dataset.range(4).enumerate(1).skip(1).cache()
    assert repr(ds) == "<Dataset range(4 elements).enumerate(1).skip(1).cache()>"
    pair = Dataset.from_tensors((np.zeros((2, 3)), 1.0))
    assert repr(pair) == "<Dataset from_tensors((2, 3), ())>"
