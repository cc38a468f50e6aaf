"""load_digits: the shipped file is the one the script made (checksum), its arrays have the
documented shapes, dtypes, ranges and split, and each call returns arrays of its own."""

from __future__ import annotations

import hashlib
import importlib.util
import zipfile
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from eagerflow import nn
from eagerflow.nn.datasets import DIGITS_FILE, load_digits

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "packages" / "nn" / "scripts" / "make_digits.py"
# printed by the script when it made the file; a new file must come with a new checksum here
SHA256 = "d34c473237910a22ae422a2e5952e804f2ecffb8316eec3c9a6f3170e7dd8e1a"
# scikit-learn's copy = UCI's optdigits.tes, whose per-digit counts UCI's page lists
COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def shipped() -> bytes:
    return (resources.files("eagerflow.nn.datasets") / DIGITS_FILE).read_bytes()


def test_the_shipped_file_is_the_one_the_script_made():
    data = shipped()
    assert hashlib.sha256(data).hexdigest() == SHA256
    assert 10_000 < len(data) < 100_000  # tens of kB


def test_the_file_holds_four_plain_arrays():
    with np.load(resources.files("eagerflow.nn.datasets") / DIGITS_FILE) as npz:
        assert sorted(npz.files) == ["x_test", "x_train", "y_test", "y_train"]
    with zipfile.ZipFile(resources.files("eagerflow.nn.datasets") / DIGITS_FILE) as archive:
        # fixed dates: the script makes the same bytes from the same data
        assert {m.date_time for m in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_shapes_dtypes_and_ranges():
    (x_train, y_train), (x_test, y_test) = nn.datasets.load_digits()
    assert (x_train.shape, x_test.shape) == ((1437, 8, 8), (360, 8, 8))
    assert (y_train.shape, y_test.shape) == ((1437,), (360,))
    assert x_train.dtype == x_test.dtype == np.uint8
    assert y_train.dtype == y_test.dtype == np.int64
    for x in (x_train, x_test):
        assert x.min() == 0 and x.max() == 16  # 0..16, not 0..255
    for y in (y_train, y_test):
        assert set(np.unique(y)) == set(range(10))


def test_the_split_is_balanced_and_stratified():
    (_, y_train), (_, y_test) = load_digits()
    assert np.bincount(y_test).tolist() == [36] * 10
    assert (np.bincount(y_train) + np.bincount(y_test)).tolist() == COUNTS


def test_train_and_test_are_disjoint():
    # the source's 1,797 images are all different, so the split, a partition of them,
    # leaves no test image in the training set
    (x_train, _), (x_test, _) = load_digits()
    train = {image.tobytes() for image in x_train}
    assert not [image for image in x_test if image.tobytes() in train]
    assert len(train | {image.tobytes() for image in x_test}) == 1797


def test_every_call_gives_the_same_arrays_as_fresh_copies():
    first = [a for part in load_digits() for a in part]
    saved = [a.copy() for a in first]
    for a in first:
        a[...] = 0  # the caller's to modify
    again = [a for part in load_digits() for a in part]
    for a, b in zip(again, saved, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_data_trains_a_classifier():
    # real data with signal: class means from the training set (a nearest-centroid rule)
    # classify most test images
    (x_train, y_train), (x_test, y_test) = load_digits()
    flat_train = x_train.reshape(-1, 64).astype(np.float32)
    centroids = np.stack([flat_train[y_train == d].mean(0) for d in range(10)])
    flat_test = x_test.reshape(-1, 64).astype(np.float32)
    distances = ((flat_test[:, None, :] - centroids) ** 2).sum(-1)
    assert (distances.argmin(1) == y_test).mean() > 0.85


def test_the_script_remakes_the_same_arrays(tmp_path):
    pytest.importorskip("sklearn")  # not a dependency: skipped unless installed
    spec = importlib.util.spec_from_file_location("make_digits", SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    arrays = script.split(*script.source())
    (x_train, y_train), (x_test, y_test) = load_digits()
    expected = {"x_train": x_train, "y_train": y_train, "x_test": x_test, "y_test": y_test}
    assert arrays.keys() == expected.keys()
    for name, array in arrays.items():
        assert array.dtype == expected[name].dtype
        np.testing.assert_array_equal(array, expected[name], err_msg=name)
    script.write_npz(tmp_path / "digits.npz", arrays)
    with np.load(tmp_path / "digits.npz") as npz:
        for name, array in arrays.items():
            np.testing.assert_array_equal(npz[name], array)
