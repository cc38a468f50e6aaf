"""Chapter 12 exercises — run `.venv/bin/pytest -m ch12`.

FizzBuzz three ways: one number's class with ``cond``, the whole sequence with
``while_loop`` (both work eagerly and build a graph), and the two ends of the learned
version: the binary encoding a network reads and the decoding of what it predicts.

Classes, as in the chapter: 0 for the number itself, 1 for Fizz, 2 for Buzz, 3 for FizzBuzz.

Reference solutions: the same functions as `exercises/ch12.py`, solved.
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
    """The FizzBuzz class of one number, chosen with ``cond``: works in both modes.

    3 if ``n`` is a multiple of 15, else 2 if of 5, else 1 if of 3, else 0. Eagerly a
    Python ``if`` on ``ef.equal(...)`` would do; in a graph ``n`` has no value while the
    graph is built, so the choice must become ``If`` nodes that the Session evaluates.

    Args:
        n: An ``int32`` scalar tensor (eager, or symbolic in a graph).

    Returns:
        An ``int32`` scalar tensor: 0, 1, 2 or 3.

    Hint:
        Nest the ``cond``: the false branch of the first is a function that calls the
        second, and so on. Each branch is a function of no arguments, such as
        ``lambda: ef.constant(3)``. Test 15 first: a multiple of 15 is also a multiple of 3.
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
    """The classes of 1, 2, …, ``n``, computed by a ``while_loop``: works in both modes.

    Loop a counter ``i`` from 1 while ``i <= n``, appending ``fizzbuzz_class(i)`` to a
    vector that starts empty. In a graph the number of iterations is not known until the
    Session is fed ``n``: the loop must be one ``While`` node, not a Python loop.

    Args:
        n: An ``int32`` scalar tensor, at least 0.

    Returns:
        An ``int32`` vector of length ``n`` (shape ``(None,)`` in a graph).

    Hint:
        Two loop variables: ``ef.constant(1)`` and ``ef.zeros((0,), ef.int32)``. The body
        returns ``i + 1`` and ``ef.concat([classes, ef.reshape(c, (1,))], axis=0)``. The
        vector grows, so pass ``shape_invariants=[(), (None,)]``. ``while_loop`` returns
        the final loop variables as a list.
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
    """Each number as its ``bits`` binary digits, least significant first, with ops.

    ``binary_encode([6], 4)`` is ``[[0., 1., 1., 0.]]``: 6 = 0·1 + 1·2 + 1·4 + 0·8. This
    is the input of the learned FizzBuzz: ten 0/1 features per number. Use eagerflow ops
    only, so the encoding works on a placeholder too.

    Args:
        numbers: A vector of integers (a tensor, NumPy array or list; int32 or int64).
        bits: How many digits.

    Returns:
        A ``float32`` tensor of shape ``(len(numbers), bits)`` (``(None, bits)`` in a graph
        fed by a ``(None,)`` placeholder).

    Hint:
        Digit i of n is ``(n // 2**i) % 2``. Make a column of the numbers
        (``ef.expand_dims(numbers, 1)``, shape (batch, 1)) and a row of the powers of two
        (``ef.constant([1, 2, 4, …], numbers.dtype)``, shape (bits,)): ``ef.floordiv`` and
        ``ef.floormod`` broadcast them to (batch, bits). Finish with ``ef.cast``.
    """
    numbers = ef.convert_to_tensor(numbers)
    powers = ef.constant([2**i for i in range(bits)], numbers.dtype)
    digits = ef.floormod(ef.floordiv(ef.expand_dims(numbers, 1), powers), 2)
    return ef.cast(digits, ef.float32)


def decode(numbers: Sequence[int], logits: Any) -> list[str]:
    """Turn a network's outputs back into FizzBuzz text.

    Row k of ``logits`` holds the network's four scores for ``numbers[k]``; the predicted
    class is the highest. Class 0 prints the number itself (``"7"``), classes 1, 2 and 3
    print ``"Fizz"``, ``"Buzz"`` and ``"FizzBuzz"``. Decode what the network *predicted*,
    even when it is wrong: that is how you see its mistakes.

    Args:
        numbers: The numbers the rows are about.
        logits: Shape ``(len(numbers), 4)``: a tensor or a NumPy array.

    Returns:
        One string per number.

    Hint:
        ``np.argmax(np.asarray(logits), axis=1)`` gives the classes (NumPy reads tensors).
    """
    predicted = np.argmax(np.asarray(logits), axis=1)
    return [WORDS[c] if c else str(n) for n, c in zip(numbers, predicted, strict=True)]
