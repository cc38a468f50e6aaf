"""Chapter 15 exercises — run `.venv/bin/pytest -m ch15`.

FizzBuzz three ways: one number's class with ``cond``, the whole sequence with
``while_loop`` (both work eagerly and build a graph), and the two ends of the learned
version: the binary encoding a network reads and the decoding of what it predicts.

Classes, as in the chapter: 0 for the number itself, 1 for Fizz, 2 for Buzz, 3 for FizzBuzz.

Replace each ``raise NotImplementedError`` with your code, then run `.venv/bin/pytest -m ch15`:
an exercise you have not started is reported as skipped (not attempted yet), a wrong answer
as a failure that shows what was expected. Reference solutions are in
`exercises/solutions/ch15.py`; try on your own first.

Each exercise's docstring starts with its difficulty, from ★ to ★★★, and ends with its
hints: read Hint 1 first, and the next only if you need it; the last is nearly the answer.
"""

# ruff: noqa: F401  (the imports are the ones you will want)
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
    raise NotImplementedError


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
    raise NotImplementedError


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
    raise NotImplementedError


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
    raise NotImplementedError


def fizzbuzz_weights(bits: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """★★★ Stretch: the learned FizzBuzz's weights, written by hand, right on every number.

    The chapter's network, ``Dense(hidden, "relu")`` then ``Dense(4)``, reads a number's
    ``bits`` binary digits, least significant first (``binary_encode``). Training finds
    weights that are right on most numbers; write weights that are right on *every* number
    from 0 to ``2**bits - 1``, with no training, from what the chapter says the network has
    to discover. Digit i is worth 2ⁱ, and 2ⁱ mod 3 is 1, 2, 1, 2, … while 2ⁱ mod 5 is 1, 2,
    4, 3, 1, …; so a weighted sum of the digits s = Σ wᵢ·bᵢ with wᵢ ≡ 2ⁱ (mod k) is ≡ n
    (mod k). That sum is linear in the digits, takes a few dozen values, and a sum of
    ReLUs of it can be 1 at the multiples of k among those values and 0 at the others.

    Open-ended: the tests load your weights into the chapter's network,
    ``Sequential([Dense(hidden, "relu"), Dense(4)])`` in float32, and run it on every number
    for several ``bits`` you do not see. The right class's logit must beat every other by at
    least 0.1 (a tie is not an answer), and ``hidden`` must be at most ``6 * bits``: a table
    of the numbers would need ``2**bits`` units (the chapter trains 512 for 10 digits).

    Args:
        bits: How many binary digits the network reads (1 or more).

    Returns:
        ``(kernel, bias, out_kernel, out_bias)``: NumPy arrays of shapes ``(bits, hidden)``,
            ``(hidden,)``, ``(hidden, 4)`` and ``(4,)``, the two layers' weights.

    Hint 1:
        A function of an integer s, known at s = lo, lo + 1, …, hi, is matched at those points
        by its value at lo plus a sum of hinges c·relu(s − t), one per t = lo, …, hi − 1: each
        changes the slope by c at t. A hinge is one hidden unit: its column of ``kernel``
        holds the digit weights wᵢ, its ``bias`` is −t, and ``out_kernel`` holds its c.

    Hint 2:
        Build two such functions: d3, 1 where the mod-3 sum is a multiple of 3 and else 0, and
        d5 for the mod-5 sum. The output layer adds hidden units, so it can add them up too:
        logits (0.5, d3, d5, d3 + d5 − 0.5) choose the number, Fizz, Buzz or FizzBuzz, by 0.5.

    Hint 3:
        Take wᵢ between −k/2 and k/2 (1, −1, … for 3; 1, 2, −1, −2, … for 5), for fewer values
        of s. Then lo is the sum of the negative wᵢ, hi that of the positive;
        ``target = (np.arange(lo, hi + 1) % k == 0).astype(float)``; the c's are
        ``np.diff(np.diff(target), prepend=0.0)``; ``target[0]`` goes into ``out_bias``
        wherever d3 (or d5) appears.
    """
    raise NotImplementedError
