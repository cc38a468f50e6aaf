"""Chapter 15 exercises: FizzBuzz (`exercises/ch15.py`)."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.graph import Graph, Session, SymbolicTensor, placeholder
from eagerflow.tensor import Tensor

pytestmark = pytest.mark.ch15


def python_class(n: int) -> int:
    return 3 if n % 15 == 0 else 2 if n % 5 == 0 else 1 if n % 3 == 0 else 0


def op_types(graph: Graph) -> list[str]:
    return [o.type for o in graph.get_operations()]


# --- fizzbuzz_class -------------------------------------------------------------------------------
def test_fizzbuzz_class_eagerly(chapter):
    for n in range(1, 31):
        got = chapter.fizzbuzz_class(ef.constant(n))
        assert isinstance(got, Tensor), f"fizzbuzz_class({n}): expected a tensor, got {got!r}"
        assert int(got) == python_class(n), (
            f"fizzbuzz_class({n}): expected {python_class(n)}, got {int(got)}"
        )


def test_fizzbuzz_class_builds_if_nodes(chapter):
    graph = Graph()
    with graph.as_default():
        n = placeholder(ef.int32, (), name="n")
        c = chapter.fizzbuzz_class(n)
    assert isinstance(c, SymbolicTensor), f"in a graph expected a symbolic tensor, got {c!r}"
    assert "If" in op_types(graph), f"expected cond to add an If node; got {op_types(graph)}"
    with Session(graph) as session:
        got = [int(session.run(c, {n: value})) for value in range(1, 31)]
    want = [python_class(value) for value in range(1, 31)]
    assert got == want, f"classes of 1..30 in a Session: expected {want}, got {got}"


def test_fizzbuzz_class_on_hidden_numbers(chapter):
    numbers = [*np.random.default_rng(1212).integers(31, 100_000, 12).tolist(), 15 * 4099, 35]
    graph = Graph()
    with graph.as_default():
        n = placeholder(ef.int32, (), name="n")
        c = chapter.fizzbuzz_class(n)
    with Session(graph) as session:
        for value in numbers:
            eager = int(chapter.fizzbuzz_class(ef.constant(value)))
            traced = int(session.run(c, {n: value}))
            want = python_class(value)
            assert c.dtype is ef.int32 and chapter.fizzbuzz_class(ef.constant(value)).dtype is (
                ef.int32
            ), (
                f"fizzbuzz_class gave {c.dtype.name} in a graph and "
                f"{chapter.fizzbuzz_class(ef.constant(value)).dtype.name} eagerly: a class is an "
                "int32 scalar (ef.constant(3) is int32; ef.constant(3, ef.int64) is not)"
            )
            assert (eager, traced) == (want, want), (
                f"fizzbuzz_class({value}): expected {want}, got {eager} eagerly and {traced} "
                "in a Session"
            )


# --- fizzbuzz_classes -----------------------------------------------------------------------------
def test_fizzbuzz_classes_eagerly(chapter):
    for n in (0, 1, 15, 20):
        got = chapter.fizzbuzz_classes(ef.constant(n))
        want = [python_class(i) for i in range(1, n + 1)]
        assert isinstance(got, Tensor) and got.dtype is ef.int32, (
            f"expected an int32 tensor, got {got!r}"
        )
        assert got.numpy().tolist() == want, f"fizzbuzz_classes({n}): expected {want}, got {got}"


def test_fizzbuzz_classes_is_one_while_node(chapter):
    graph = Graph()
    with graph.as_default():
        n = placeholder(ef.int32, (), name="n")
        classes = chapter.fizzbuzz_classes(n)
    types = op_types(graph)
    assert types.count("While") == 1, f"expected one While node in the graph, got {types}"
    assert isinstance(classes, SymbolicTensor) and classes.shape == (None,), (
        f"expected a vector of unknown length, shape (None,), got {classes!r}"
    )
    with Session(graph) as session:
        for value in (0, 7, 45):
            got = session.run(classes, {n: value}).tolist()
            want = [python_class(i) for i in range(1, value + 1)]
            assert got == want, (
                f"fizzbuzz_classes({value}) in a Session: expected {want}, got {got}"
            )


def test_fizzbuzz_classes_on_hidden_lengths(chapter):
    lengths = np.random.default_rng(1213).integers(2, 120, 3).tolist()
    graph = Graph()
    with graph.as_default():
        n = placeholder(ef.int32, (), name="n")
        classes = chapter.fizzbuzz_classes(n)
    with Session(graph) as session:
        for value in lengths:
            want = [python_class(i) for i in range(1, value + 1)]
            assert chapter.fizzbuzz_classes(ef.constant(value)).numpy().tolist() == want, (
                f"fizzbuzz_classes({value}) eagerly"
            )
            assert session.run(classes, {n: value}).tolist() == want, (
                f"fizzbuzz_classes({value}) in a Session"
            )


# --- binary_encode --------------------------------------------------------------------------------
def numpy_encode(numbers, bits):
    return np.array([[(n >> i) & 1 for i in range(bits)] for n in numbers], np.float32)


def test_binary_encode_eagerly(chapter):
    got = chapter.binary_encode(ef.constant([6]), 4)
    assert isinstance(got, Tensor), f"expected a tensor, got {got!r}"
    assert got.dtype is ef.float32, f"the network reads float32 features, got {got.dtype}"
    assert got.numpy().tolist() == [[0.0, 1.0, 1.0, 0.0]], (
        f"6 in 4 bits, least significant first: expected [[0, 1, 1, 0]], got {got.numpy()}"
    )
    numbers = [1, 2, 3, 100, 511, 1023]
    got = chapter.binary_encode(np.array(numbers), 10)
    assert got.shape == (6, 10), f"expected shape (6, 10), got {got.shape}"
    np.testing.assert_array_equal(
        got.numpy(), numpy_encode(numbers, 10), err_msg=f"encoding {numbers} in 10 bits"
    )


def test_binary_encode_on_a_placeholder(chapter):
    graph = Graph()
    with graph.as_default():
        numbers = placeholder(ef.int32, (None,), name="numbers")
        encoded = chapter.binary_encode(numbers, 10)
    assert isinstance(encoded, SymbolicTensor) and encoded.shape == (None, 10), (
        f"use eagerflow ops, so a placeholder of shape (None,) gives (None, 10); got {encoded!r}"
    )
    with Session(graph) as session:
        got = session.run(encoded, {numbers: [5, 96, 1000]})
    np.testing.assert_array_equal(got, numpy_encode([5, 96, 1000], 10))


def test_binary_encode_on_hidden_numbers(chapter):
    rng = np.random.default_rng(1214)
    for bits in (3, 7, 12):
        numbers = rng.integers(0, 2**bits, 9)
        for given in (numbers.astype(np.int64), ef.constant(numbers.astype(np.int32))):
            got = chapter.binary_encode(given, bits)
            assert isinstance(got, Tensor) and got.shape == (9, bits), (
                f"binary_encode of 9 numbers in {bits} bits: expected a (9, {bits}) tensor, "
                f"got {got!r}"
            )
            np.testing.assert_array_equal(
                got.numpy(), numpy_encode(numbers.tolist(), bits),
                err_msg=f"{numbers.tolist()} in {bits} bits, least significant first",
            )  # fmt: skip


# --- decode ---------------------------------------------------------------------------------------
def test_decode_follows_the_predictions(chapter):
    numbers = [1, 3, 5, 15, 7, 9]
    logits = np.full((6, 4), -1.0, np.float32)
    for row, cls in enumerate([0, 1, 2, 3, 1, 0]):  # the last two are deliberately wrong
        logits[row, cls] = 2.0
    want = ["1", "Fizz", "Buzz", "FizzBuzz", "Fizz", "9"]
    got = chapter.decode(numbers, logits)
    assert got == want, (
        f"expected {want} (decode the predicted class, even when it is wrong), got {got}"
    )
    got = chapter.decode(numbers, ef.constant(logits))
    assert got == want, f"logits given as a tensor: expected {want}, got {got}"


def test_decode_on_hidden_predictions(chapter):
    rng = np.random.default_rng(1215)
    numbers = rng.integers(1, 1000, 25).tolist()
    logits = rng.normal(size=(25, 4)).astype(np.float32)
    classes = logits.argmax(axis=1)
    want = [
        str(n) if c == 0 else ("", "Fizz", "Buzz", "FizzBuzz")[c]
        for n, c in zip(numbers, classes, strict=True)
    ]
    for given in (logits, ef.constant(logits)):
        got = chapter.decode(numbers, given)
        assert got == want, (
            f"decode of hidden numbers and scores: expected {want}, got {got} (decode each "
            "row's highest score, whatever the number is)"
        )


# --- stretch: the weights by hand -----------------------------------------------------------------
def all_numbers_and_classes(bits):
    numbers = np.arange(2**bits)
    classes = np.select([numbers % 15 == 0, numbers % 5 == 0, numbers % 3 == 0], [3, 2, 1], 0)
    return numbers, classes


def network_with(weights, bits):
    """The chapter's network, ``Dense(hidden, "relu")`` then ``Dense(4)``, holding ``weights``
    (after checking their shapes and the width)."""
    assert isinstance(weights, tuple | list) and len(weights) == 4, (
        f"fizzbuzz_weights({bits}): expected (kernel, bias, out_kernel, out_bias), got "
        f"{type(weights).__name__} of length {len(weights) if hasattr(weights, '__len__') else '?'}"
    )
    kernel, bias, out_kernel, out_bias = (np.asarray(w, np.float32) for w in weights)
    hidden = kernel.shape[1] if kernel.ndim == 2 else -1
    shapes = [w.shape for w in (kernel, bias, out_kernel, out_bias)]
    want = [(bits, hidden), (hidden,), (hidden, 4), (4,)]
    assert hidden > 0 and shapes == want, (
        f"fizzbuzz_weights({bits}): expected shapes (kernel, bias, out_kernel, out_bias) "
        f"{want} (kernel (bits, hidden)), got {shapes}"
    )
    assert hidden <= 6 * bits, (
        f"fizzbuzz_weights({bits}): {hidden} hidden units, expected at most 6·bits = "
        f"{6 * bits}: units that grow like 2**bits are a table of the numbers, and the "
        "digit sums take few values"
    )
    assert all(np.all(np.isfinite(w)) for w in (kernel, bias, out_kernel, out_bias)), (
        f"fizzbuzz_weights({bits}): the weights hold a NaN or an infinity"
    )
    model = nn.Sequential([nn.Dense(hidden, "relu", input_shape=(bits,)), nn.Dense(4)])
    for variable, value in zip(model.variables, (kernel, bias, out_kernel, out_bias), strict=True):
        variable.assign(value)
    return model


def check_every_number(chapter, bits, numbers=None):
    model = network_with(chapter.fizzbuzz_weights(bits), bits)
    all_numbers, all_classes = all_numbers_and_classes(bits)
    numbers = all_numbers if numbers is None else np.asarray(numbers)
    classes = all_classes[numbers]
    logits = model(numpy_encode(numbers.tolist(), bits)).numpy()
    right = logits[np.arange(len(numbers)), classes]
    others = np.where(np.arange(4) == classes[:, None], -np.inf, logits).max(axis=1)
    wrong = np.flatnonzero(right - others < 0.1)
    shown = "; ".join(
        f"{numbers[k]} (class {classes[k]}): logits {np.round(logits[k], 3).tolist()}"
        for k in wrong[:4]
    )
    assert not len(wrong), (
        f"fizzbuzz_weights({bits}) on {numbers.min()}..{numbers.max()}: {len(wrong)} numbers "
        f"whose right class does not win by 0.1 or more, e.g. {shown}"
    )


def test_fizzbuzz_weights_stretch_on_the_chapters_numbers(chapter):
    check_every_number(chapter, 4)  # 0 to 15, small enough to read
    check_every_number(chapter, 10, np.arange(1, 1024))


def test_fizzbuzz_weights_stretch_on_hidden_widths(chapter):
    for bits in np.random.default_rng(1216).integers(8, 15, 3).tolist():
        check_every_number(chapter, bits)  # every number from 0 to 2**bits - 1
