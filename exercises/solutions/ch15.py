"""Chapter 15 exercises — run `.venv/bin/pytest -m ch15`.

FizzBuzz three ways: one number's class with ``cond``, the whole sequence with
``while_loop`` (both work eagerly and build a graph), and the two ends of the learned
version: the binary encoding a network reads and the decoding of what it predicts.

Classes, as in the chapter: 0 for the number itself, 1 for Fizz, 2 for Buzz, 3 for FizzBuzz.

Reference solutions: the same functions as `exercises/ch15.py`, solved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.graph import cond, while_loop
from eagerflow.tensor import Tensor

WORDS = ("", "Fizz", "Buzz", "FizzBuzz")


def fizzbuzz_class(n: Tensor) -> Tensor:
    """★★ The FizzBuzz class of one number, chosen with ``cond``: works in both modes.

    3 if ``n`` is a multiple of 15, else 2 if of 5, else 1 if of 3, else 0. Eagerly a
    Python ``if`` on ``ef.equal(...)`` would do; in a graph ``n`` has no value while the
    graph is built, so the choice must become ``If`` nodes that the Session evaluates.

    Args:
        n: An ``int32`` scalar tensor (eager, or symbolic in a graph).

    Returns:
        An ``int32`` scalar tensor: 0, 1, 2 or 3.

    Hint 1:
        Nested ``cond``: the false branch of one is a function that calls the next.

    Hint 2:
        Test 15 first: a multiple of 15 is also a multiple of 3 and of 5. Each branch is a
        function of no arguments returning an int32 tensor, such as ``lambda: ef.constant(3)``.

    Hint 3:
        ``cond(ef.equal(n % 15, 0), lambda: ef.constant(3), lambda: cond(ef.equal(n % 5, 0),
        ...))``, two levels deeper for 3 and for 0.
    """

    def multiple_of(k: int) -> Tensor:
        return ef.equal(ef.floormod(n, k), 0)

    return cond(
        multiple_of(15),
        lambda: ef.constant(3),
        lambda: cond(
            multiple_of(5),
            lambda: ef.constant(2),
            lambda: cond(multiple_of(3), lambda: ef.constant(1), lambda: ef.constant(0)),
        ),
    )


def fizzbuzz_classes(n: Tensor) -> Tensor:
    """★★ The classes of 1, 2, …, ``n``, computed by a ``while_loop``: works in both modes.

    Loop a counter ``i`` from 1 while ``i <= n``, appending ``fizzbuzz_class(i)`` to a
    vector that starts empty. In a graph the number of iterations is not known until the
    Session is fed ``n``: the loop must be one ``While`` node, not a Python loop.

    Args:
        n: An ``int32`` scalar tensor, at least 0.

    Returns:
        An ``int32`` vector of length ``n`` (shape ``(None,)`` in a graph).

    Hint 1:
        A ``while_loop`` with a counter and a vector that grows by one class per iteration.

    Hint 2:
        Two loop variables, ``ef.constant(1)`` and ``ef.zeros((0,), ef.int32)``. The vector's
        length changes: say so with ``shape_invariants``.

    Hint 3:
        The body returns ``i + 1`` and
        ``ef.concat([classes, ef.reshape(fizzbuzz_class(i), (1,))], axis=0)``; the condition is
        ``i <= n``; ``shape_invariants=[(), (None,)]``; return the second final variable.
    """

    def body(i: Tensor, classes: Tensor) -> tuple[Tensor, Tensor]:
        grown = ef.concat([classes, ef.reshape(fizzbuzz_class(i), (1,))], axis=0)
        return i + 1, grown

    _, classes = while_loop(
        lambda i, classes: i <= n,
        body,
        [ef.constant(1), ef.zeros((0,), ef.int32)],
        shape_invariants=[(), (None,)],
    )
    return classes


def binary_encode(numbers: Any, bits: int = 10) -> Tensor:
    """★★ Each number as its ``bits`` binary digits, least significant first, with ops.

    ``binary_encode([6], 4)`` is ``[[0., 1., 1., 0.]]``: 6 = 0·1 + 1·2 + 1·4 + 0·8. This
    is the input of the learned FizzBuzz: ten 0/1 features per number. Use eagerflow ops
    only, so the encoding works on a placeholder too.

    Args:
        numbers: A vector of integers (a tensor, NumPy array or list; int32 or int64).
        bits: How many digits.

    Returns:
        A ``float32`` tensor of shape ``(len(numbers), bits)`` (``(None, bits)`` in a graph
            fed by a ``(None,)`` placeholder).

    Hint 1:
        Digit i of n is ``(n // 2**i) % 2``: compute every digit of every number at once, by
        broadcasting.

    Hint 2:
        A column of the numbers, shape (batch, 1), against a row of the powers of two, shape
        (bits,), broadcasts to (batch, bits).

    Hint 3:
        ``ef.expand_dims(numbers, 1)`` and
        ``ef.constant([2**i for i in range(bits)], numbers.dtype)``, then ``ef.floordiv``,
        ``ef.floormod(..., 2)`` and ``ef.cast(..., ef.float32)``.
    """
    numbers = ef.convert_to_tensor(numbers)
    powers = ef.constant([2**i for i in range(bits)], numbers.dtype)
    digits = ef.floormod(ef.floordiv(ef.expand_dims(numbers, 1), powers), 2)
    return ef.cast(digits, ef.float32)


def decode(numbers: Sequence[int], logits: Any) -> list[str]:
    """★ Turn a network's outputs back into FizzBuzz text.

    Row k of ``logits`` holds the network's four scores for ``numbers[k]``; the predicted
    class is the highest. Class 0 prints the number itself (``"7"``), classes 1, 2 and 3
    print ``"Fizz"``, ``"Buzz"`` and ``"FizzBuzz"``. Decode what the network *predicted*,
    even when it is wrong: that is how you see its mistakes.

    Args:
        numbers: The numbers the rows are about.
        logits: Shape ``(len(numbers), 4)``: a tensor or a NumPy array.

    Returns:
        One string per number.

    Hint 1:
        The predicted class of a row is the position of its highest score.

    Hint 2:
        ``np.argmax(np.asarray(logits), axis=1)`` (NumPy reads tensors), then one string per
        number: the number itself for class 0, else ``WORDS[class]``.
    """
    predicted = np.argmax(np.asarray(logits), axis=1)
    return [WORDS[c] if c else str(n) for n, c in zip(numbers, predicted, strict=True)]


def fizzbuzz_weights(bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """★★★ Stretch: the learned FizzBuzz's weights, written by hand, right on every number."""
    kernels, biases, out_rows = [], [], []
    out_bias = np.array([0.5, 0.0, 0.0, -0.5])  # logits (0.5, d3, d5, d3 + d5 - 0.5)
    for k, reads in ((3, np.array([0.0, 1.0, 0.0, 1.0])), (5, np.array([0.0, 0.0, 1.0, 1.0]))):
        # digit i weighs 2**i mod k, taken between -k/2 and k/2: s ≡ n (mod k), few values
        weights = np.array([(pow(2, i, k) + k // 2) % k - k // 2 for i in range(bits)], float)
        lo, hi = int(weights[weights < 0].sum()), int(weights[weights > 0].sum())
        target = (np.arange(lo, hi + 1) % k == 0).astype(float)  # d_k at s = lo, ..., hi
        changes = np.diff(np.diff(target), prepend=0.0)  # slope changes at t = lo, ..., hi-1
        kernels.append(np.repeat(weights[:, None], hi - lo, axis=1))  # one hinge per t:
        biases.append(-np.arange(lo, hi, dtype=float))  # relu(s - t)
        out_rows.append(np.outer(changes, reads))  # d_k, to the logits that read it
        out_bias += target[0] * reads
    return np.concatenate(kernels, 1), np.concatenate(biases), np.concatenate(out_rows), out_bias
