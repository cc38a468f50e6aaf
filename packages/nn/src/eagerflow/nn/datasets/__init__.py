"""Small real data sets that ship inside the ``eagerflow-nn`` wheel: no download, no network.

``load_digits()`` works like ``keras.datasets.mnist.load_data()``: it returns
``((x_train, y_train), (x_test, y_test))`` as NumPy arrays. The data is the file
``digits.npz`` next to this module, read with ``importlib.resources`` (so it is found
wherever the package is installed, even from a zip) and ``numpy.load(allow_pickle=False)``
(so reading it never runs code).
"""

from __future__ import annotations

from importlib import resources

import numpy as np

DIGITS_FILE = "digits.npz"


def load_digits() -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The 1,797 handwritten digits of the UCI "Optical Recognition of Handwritten Digits"
    data set, as scikit-learn ships them: ``((x_train, y_train), (x_test, y_test))``.

    - ``x_train`` uint8 (1437, 8, 8) and ``x_test`` uint8 (360, 8, 8): 8x8 images whose
      pixels are integers **0..16** (not MNIST's 0..255), each the number of inked pixels
      in a 4x4 block of a 32x32 scan. For a network, ``x.astype(np.float32) / 16``, and
      ``[..., None]`` for the one channel of NHWC.
    - ``y_train`` int64 (1437,) and ``y_test`` int64 (360,): the digits 0..9 (int64, an
      integer dtype eagerflow's losses take as it is).

    The split is fixed (it is in the file): 36 images of each digit, drawn once with
    ``numpy.random.default_rng(0)``, make the test set, balanced at 10 x 36 = 360; the other
    1,437 (138 to 147 per digit) the training set. Each part keeps scikit-learn's order of
    the images, so shuffle for training.

    Every call reads the file again: the arrays are the caller's own to modify.

    Source: E. Alpaydin and C. Kaynak (1998), UCI Machine Learning Repository,
    https://archive.ics.uci.edu/dataset/80, licensed CC BY 4.0. scikit-learn's copy
    (``sklearn/datasets/data/digits.csv.gz``) is the set's 1,797 test images, written by 13
    people (its 3,823 training images, by 30 others, are not in it). The file was made from
    that copy by ``packages/nn/scripts/make_digits.py`` in eagerflow's repository;
    ``tests/nn/test_datasets.py`` checks its SHA-256.
    """
    with (
        (resources.files(__name__) / DIGITS_FILE).open("rb") as file,
        np.load(file, allow_pickle=False) as npz,
    ):
        train = (npz["x_train"], npz["y_train"])
        test = (npz["x_test"], npz["y_test"])
    return train, test


__all__ = ["DIGITS_FILE", "load_digits"]
