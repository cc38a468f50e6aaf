"""Make ``eagerflow/nn/datasets/digits.npz``, the data behind ``eagerflow.nn.datasets.load_digits``.

Run once, by a maintainer, in a throwaway virtual environment that has scikit-learn and
eagerflow (scikit-learn is never a dependency of eagerflow):

    python3 -m venv /tmp/skvenv
    /tmp/skvenv/bin/pip install scikit-learn -e packages/tensor -e packages/autodiff \\
        -e packages/graph -e packages/nn
    /tmp/skvenv/bin/python packages/nn/scripts/make_digits.py

It prints the new file's SHA-256 and size; ``tests/nn/test_datasets.py`` holds the same
SHA-256, so a changed file fails the tests until someone looks at why.

The data: the 1,797 8x8 digits scikit-learn ships (``sklearn/datasets/data/digits.csv.gz``),
which its documentation describes as a copy of the test set (``optdigits.tes``) of the UCI
"Optical Recognition of Handwritten Digits" data set (E. Alpaydin and C. Kaynak, 1998;
https://archive.ics.uci.edu/dataset/80, licensed CC BY 4.0). Pixels are integers 0..16: each
counts the ink in a 4x4 block of a 32x32 bitmap.

The split (``split`` below), fixed once and for all by the file it writes: 36 images of each
digit, drawn with ``numpy.random.default_rng(0)``, are the test set (360 images, balanced);
the other 1,437 are the training set. Both keep scikit-learn's order.

The file is an ``.npz`` archive as ``numpy.savez_compressed`` writes one, but with every
member dated 1980-01-01 (savez stamps the current time): the same data then gives the same
bytes, so the checksum in the tests is a fact about the data, not about the day it was made.
"""

from __future__ import annotations

import hashlib
import sys
import zipfile
from pathlib import Path

import numpy as np

from eagerflow.graph.core.files import atomic_write

OUT = Path(__file__).resolve().parents[1] / "src" / "eagerflow" / "nn" / "datasets" / "digits.npz"
TEST_PER_DIGIT = 36  # 10 x 36 = 360 test images; the rarest digit (8) has 174 in all
SEED = 0


def source() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits as ``(images uint8 [1797, 8, 8] in 0..16, labels int64 [1797])``."""
    from sklearn.datasets import load_digits  # (imported here: only this function needs it)

    digits = load_digits()
    images = digits.images  # float64, but whole numbers 0..16: exact in uint8
    assert images.shape == (1797, 8, 8) and images.min() == 0 and images.max() == 16
    assert np.array_equal(images, np.round(images))
    return images.astype(np.uint8), digits.target.astype(np.int64)


def split(images: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """The fixed split: ``TEST_PER_DIGIT`` images of each digit, drawn by a seeded generator,
    for testing; the rest for training; each part in the source's order."""
    rng = np.random.default_rng(SEED)
    test = np.zeros(len(labels), dtype=bool)
    for digit in range(10):
        (where,) = np.nonzero(labels == digit)
        test[rng.permutation(where)[:TEST_PER_DIGIT]] = True
    return {
        "x_train": images[~test],
        "y_train": labels[~test],
        "x_test": images[test],
        "y_test": labels[test],
    }


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """What ``numpy.savez_compressed(path, **arrays)`` writes (one deflated ``name.npy`` per
    array, read back by ``numpy.load``), with fixed timestamps; atomically."""
    with atomic_write(path, "wb") as file, zipfile.ZipFile(file, "w") as archive:
        for name, array in arrays.items():
            member = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            member.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(member, "w") as out:
                np.lib.format.write_array(out, np.ascontiguousarray(array), allow_pickle=False)


def main() -> int:
    """Write the file and print its SHA-256 and size."""
    arrays = split(*source())
    write_npz(OUT, arrays)
    data = OUT.read_bytes()
    for name, array in arrays.items():
        print(f"{name:8s} {array.dtype} {array.shape}")
    print(f"wrote {OUT} ({len(data):,} bytes)")
    print(f"sha256 {hashlib.sha256(data).hexdigest()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
