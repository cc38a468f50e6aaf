"""Losses and accuracy: values against NumPy, stability, argument checks, gradient checks
and eager/graph agreement."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, check_gradients
from eagerflow.graph import Graph, Session, placeholder
from eagerflow.tensor.errors import DTypeError, OutOfRangeError, ShapeError

SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


# --- NumPy references -----------------------------------------------------------------------
def np_log_softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = z - z.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def np_softmax_xent(labels: np.ndarray, logits: np.ndarray, axis: int = -1) -> np.ndarray:
    return -(labels * np_log_softmax(logits, axis)).sum(axis=axis)


def np_sigmoid_xent(labels: np.ndarray, logits: np.ndarray) -> np.ndarray:
    sigmoid = 1.0 / (1.0 + np.exp(-logits))
    return -labels * np.log(sigmoid) - (1 - labels) * np.log(1 - sigmoid)


def np_sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


RNG = np.random.default_rng(0)
LOGITS = RNG.standard_normal((5, 4))
SPARSE = np.array([0, 3, 1, 1, 2])
ONE_HOT = np.eye(4)[SPARSE]
SOFT = np.exp(RNG.standard_normal((5, 4)))
SOFT /= SOFT.sum(axis=1, keepdims=True)


# --- values ---------------------------------------------------------------------------------
def test_mean_squared_error() -> None:
    labels = RNG.standard_normal((4, 3))
    predictions = RNG.standard_normal((4, 3))
    loss = nn.mean_squared_error(labels, predictions)
    assert loss.shape == ()
    assert loss.dtype is ef.float64
    np.testing.assert_allclose(loss.numpy(), ((predictions - labels) ** 2).mean(), rtol=1e-12)


def test_mean_squared_error_numpy_labels_take_the_predictions_dtype() -> None:
    predictions = ef.constant([[1.0], [2.0]], ef.float32)
    loss = nn.mean_squared_error(np.array([[0.0], [4.0]]), predictions)  # float64 labels
    assert loss.dtype is ef.float32
    assert float(loss) == pytest.approx((1.0 + 4.0) / 2)


@pytest.mark.parametrize("labels", [ONE_HOT, SOFT], ids=["one_hot", "soft"])
def test_softmax_cross_entropy(labels: np.ndarray) -> None:
    loss = nn.softmax_cross_entropy_with_logits(labels=labels, logits=LOGITS)
    assert loss.shape == (5,)
    np.testing.assert_allclose(loss.numpy(), np_softmax_xent(labels, LOGITS), rtol=1e-12)


def test_softmax_cross_entropy_along_axis_0() -> None:
    loss = nn.softmax_cross_entropy_with_logits(labels=SOFT.T, logits=LOGITS.T, axis=0)
    np.testing.assert_allclose(loss.numpy(), np_softmax_xent(SOFT, LOGITS), rtol=1e-12)


def test_sparse_softmax_cross_entropy() -> None:
    loss = nn.sparse_softmax_cross_entropy_with_logits(labels=SPARSE, logits=LOGITS)
    assert loss.shape == (5,)
    expected = -np_log_softmax(LOGITS)[np.arange(5), SPARSE]
    np.testing.assert_allclose(loss.numpy(), expected, rtol=1e-12)
    dense = nn.softmax_cross_entropy_with_logits(labels=ONE_HOT, logits=LOGITS)
    np.testing.assert_allclose(loss.numpy(), dense.numpy(), rtol=1e-12)


def test_sigmoid_cross_entropy() -> None:
    labels = RNG.uniform(0, 1, (3, 4))
    logits = RNG.standard_normal((3, 4)) * 3
    loss = nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    assert loss.shape == (3, 4)
    np.testing.assert_allclose(loss.numpy(), np_sigmoid_xent(labels, logits), rtol=1e-10)


def test_accuracy_with_sparse_and_one_hot_labels() -> None:
    predictions = np.array([[0.1, 0.9, 0.0], [0.8, 0.1, 0.1], [0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    labels = np.array([1, 0, 0, 2])  # right, right, wrong, wrong
    sparse = nn.accuracy(labels, predictions)
    one_hot = nn.accuracy(np.eye(3)[labels], predictions)
    assert sparse.dtype is ef.float32 and sparse.shape == ()
    assert float(sparse) == 0.5
    assert float(one_hot) == 0.5
    assert float(nn.accuracy(np.array([1, 0, 2, 0]), predictions)) == 1.0


def test_accuracy_rejects_labels_that_do_not_fit() -> None:
    with pytest.raises(ShapeError, match="accuracy"):
        nn.accuracy(np.zeros((2, 3, 4)), np.zeros(2))


def test_accuracy_has_no_gradient() -> None:
    logits = ef.constant(LOGITS)
    with GradientTape() as tape:
        tape.watch(logits)
        value = nn.accuracy(SPARSE, logits)
    assert tape.gradient(value, logits) is None


# --- stability ------------------------------------------------------------------------------
def _value_and_gradient(fn, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x = ef.constant(logits)
    with GradientTape() as tape:
        tape.watch(x)
        loss = fn(x)
        total = ef.reduce_sum(loss)
    return loss.numpy(), tape.gradient(total, x).numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_cross_entropy_is_stable_for_huge_logits(dtype) -> None:
    logits = np.array([[1e4, 0.0, -1e4], [1e4, 0.0, -1e4], [-1e4, -1e4, 1e4]], dtype)
    labels = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], dtype)
    loss, grad = _value_and_gradient(
        lambda x: nn.softmax_cross_entropy_with_logits(labels=labels, logits=x), logits
    )
    np.testing.assert_array_equal(loss, [0.0, 1e4, 0.0])
    # softmax - labels: softmax is exactly one-hot at the largest logit
    np.testing.assert_array_equal(grad, [[0, 0, 0], [1, -1, 0], [0, 0, 0]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_softmax_cross_entropy_is_stable_for_huge_logits(dtype) -> None:
    logits = np.array([[1e4, 0.0, -1e4], [1e4, 0.0, -1e4]], dtype)
    loss, grad = _value_and_gradient(
        lambda x: nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 2], logits=x), logits
    )
    np.testing.assert_array_equal(loss, [0.0, 2e4])
    np.testing.assert_array_equal(grad, [[0, 0, 0], [1, 0, -1]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_cross_entropy_is_stable_for_huge_logits(dtype) -> None:
    logits = np.array([1e4, 1e4, -1e4, -1e4], dtype)
    labels = np.array([1.0, 0.0, 1.0, 0.0], dtype)
    loss, grad = _value_and_gradient(
        lambda x: nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=x), logits
    )
    np.testing.assert_array_equal(loss, [0.0, 1e4, 1e4, 0.0])
    np.testing.assert_array_equal(grad, [0.0, 1.0, -1.0, 0.0])  # sigmoid(x) - z


def test_sigmoid_cross_entropy_gradient_is_sigmoid_minus_label() -> None:
    logits = np.array([-3.0, -0.5, 0.5, 2.0])
    labels = np.array([0.0, 1.0, 0.3, 1.0])
    _, grad = _value_and_gradient(
        lambda x: nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=x), logits
    )
    np.testing.assert_allclose(grad, np_sigmoid(logits) - labels, rtol=1e-12)


def test_sigmoid_cross_entropy_gradient_at_logit_zero() -> None:
    """Logits of exactly 0 are common: a zero-initialized logistic regression starts there."""
    labels = np.array([0.0, 1.0, 0.5])
    _, grad = _value_and_gradient(
        lambda x: nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=x), np.zeros(3)
    )
    np.testing.assert_allclose(grad, 0.5 - labels, rtol=1e-12)


# --- arguments ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "fn",
    [
        nn.softmax_cross_entropy_with_logits,
        nn.sparse_softmax_cross_entropy_with_logits,
        nn.sigmoid_cross_entropy_with_logits,
    ],
)
def test_cross_entropies_take_keyword_arguments_only(fn) -> None:
    with pytest.raises(TypeError, match="positional"):
        fn(ONE_HOT, LOGITS)
    fn(labels=ONE_HOT if fn is not nn.sparse_softmax_cross_entropy_with_logits else SPARSE,
       logits=LOGITS)  # fmt: skip


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: nn.mean_squared_error(np.zeros(3), np.zeros((3, 1))), "mean_squared_error"),
        (lambda: nn.softmax_cross_entropy_with_logits(labels=np.zeros((5, 3)), logits=LOGITS),
         "softmax_cross_entropy_with_logits"),
        (lambda: nn.sigmoid_cross_entropy_with_logits(labels=np.zeros((4, 5)), logits=LOGITS),
         "sigmoid_cross_entropy_with_logits"),
    ],
    ids=["mse", "softmax", "sigmoid"],
)  # fmt: skip
def test_shape_mismatch_names_the_function_and_the_shapes(call, name: str) -> None:
    with pytest.raises(ShapeError) as info:
        call()
    message = str(info.value)
    assert message.startswith(name)
    shapes = re.findall(r"\[[\d,?]*\]", message)
    assert len(shapes) == 2 and shapes[0] != shapes[1], message


def test_sparse_shape_mismatch_names_the_function_and_the_shapes() -> None:
    with pytest.raises(ShapeError) as info:
        nn.sparse_softmax_cross_entropy_with_logits(labels=np.zeros((5, 1), np.int64),
                                                    logits=LOGITS)  # fmt: skip
    message = str(info.value)
    assert message.startswith("sparse_softmax_cross_entropy_with_logits")
    assert "int64[5,1]" in message and "float64[5,4]" in message


def test_mean_squared_error_does_not_broadcast_n_against_n_by_1() -> None:
    """(n,) labels against (n, 1) predictions would silently give an (n, n) loss."""
    with pytest.raises(ShapeError, match=re.escape("[4]")):
        nn.mean_squared_error(np.zeros(4), np.zeros((4, 1)))


def test_integer_predictions_are_a_dtype_error() -> None:
    with pytest.raises(DTypeError, match="mean_squared_error"):
        nn.mean_squared_error(np.zeros(3), np.zeros(3, np.int32))
    with pytest.raises(DTypeError, match="softmax_cross_entropy_with_logits"):
        nn.softmax_cross_entropy_with_logits(labels=ONE_HOT, logits=SPARSE.reshape(5, 1))


def test_labels_tensor_of_another_float_dtype_is_a_dtype_error() -> None:
    with pytest.raises(DTypeError, match=r"float64.*float32"):
        nn.sigmoid_cross_entropy_with_logits(
            labels=ef.constant([0.0, 1.0], ef.float64), logits=ef.constant([0.0, 1.0], ef.float32)
        )


def test_sparse_labels_must_be_integers_and_logits_floats() -> None:
    with pytest.raises(DTypeError, match="sparse_softmax_cross_entropy_with_logits"):
        nn.sparse_softmax_cross_entropy_with_logits(labels=SPARSE.astype(float), logits=LOGITS)
    with pytest.raises(DTypeError, match="sparse_softmax_cross_entropy_with_logits"):
        nn.sparse_softmax_cross_entropy_with_logits(labels=SPARSE, logits=LOGITS.astype(int))


@pytest.mark.parametrize("bad", [4, -1])
def test_sparse_label_out_of_range(bad: int) -> None:
    labels = SPARSE.copy()
    labels[2] = bad
    with pytest.raises(OutOfRangeError, match=rf"label {bad} is out of range \[0, 4\)"):
        nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=LOGITS)


# --- gradient checks ------------------------------------------------------------------------
@st.composite
def batch_and_classes(draw: st.DrawFn) -> tuple[np.random.Generator, int, int]:
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return rng, draw(st.integers(1, 3)), draw(st.integers(2, 4))


def _distribution(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    p = rng.uniform(0.1, 1.0, shape)
    return p / p.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("order", [1, 2])
def test_mean_squared_error_gradients(order: int) -> None:
    @SETTINGS
    @given(batch_and_classes())
    def check(case) -> None:
        rng, n, k = case
        labels, predictions = rng.standard_normal((n, k)), rng.standard_normal((n, k))
        check_gradients(nn.mean_squared_error, [labels, predictions], order=order)

    check()


@pytest.mark.parametrize("order", [1, 2])
def test_softmax_cross_entropy_gradients(order: int) -> None:
    """With respect to the logits and to (soft) labels."""

    @SETTINGS
    @given(batch_and_classes())
    def check(case) -> None:
        rng, n, k = case
        labels, logits = _distribution(rng, (n, k)), rng.uniform(-3, 3, (n, k))
        check_gradients(
            lambda y, x: nn.softmax_cross_entropy_with_logits(labels=y, logits=x),
            [labels, logits], order=order,
        )  # fmt: skip

    check()


@pytest.mark.parametrize("order", [1, 2])
def test_sparse_softmax_cross_entropy_gradients(order: int) -> None:
    @SETTINGS
    @given(batch_and_classes())
    def check(case) -> None:
        rng, n, k = case
        labels = rng.integers(0, k, n)
        check_gradients(
            lambda x: nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x),
            [rng.uniform(-3, 3, (n, k))], order=order,
        )  # fmt: skip

    check()


@pytest.mark.parametrize("order", [1, 2])
def test_sigmoid_cross_entropy_gradients(order: int) -> None:
    """Logits kept 0.05 away from 0, where the |x| in the stable formula has its kink."""

    @SETTINGS
    @given(batch_and_classes())
    def check(case) -> None:
        rng, n, k = case
        logits = rng.uniform(-4, 4, (n, k))
        logits = np.where(np.abs(logits) < 0.05, np.copysign(0.05, logits) + logits, logits)
        labels = rng.uniform(0, 1, (n, k))
        check_gradients(
            lambda y, x: nn.sigmoid_cross_entropy_with_logits(labels=y, logits=x),
            [labels, logits], order=order,
        )  # fmt: skip

    check()


# --- graph mode -----------------------------------------------------------------------------
LABELS_01 = RNG.uniform(0, 1, (5, 4))
GRAPH_CASES = {
    "mean_squared_error": (lambda y, x: nn.mean_squared_error(y, x), SOFT, ef.float64),
    "softmax": (lambda y, x: nn.softmax_cross_entropy_with_logits(labels=y, logits=x),
                SOFT, ef.float64),
    "sparse": (lambda y, x: nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x),
               SPARSE, ef.int64),
    "sigmoid": (lambda y, x: nn.sigmoid_cross_entropy_with_logits(labels=y, logits=x),
                LABELS_01, ef.float64),
    "accuracy_sparse": (nn.accuracy, SPARSE, ef.int64),
    "accuracy_one_hot": (nn.accuracy, ONE_HOT, ef.float64),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(GRAPH_CASES))
def test_graph_mode_gives_the_same_values_as_eager(name: str) -> None:
    fn, labels, label_dtype = GRAPH_CASES[name]
    eager = fn(ef.constant(labels, label_dtype), ef.constant(LOGITS)).numpy()
    g = Graph()
    with g.as_default():
        y = placeholder(label_dtype, (None, *labels.shape[1:]))
        x = placeholder(ef.float64, (None, 4))
        out = fn(y, x)
    with Session(g) as session:
        result = session.run(out, {y: labels, x: LOGITS})
    np.testing.assert_allclose(result, eager, rtol=1e-12)
    assert np.asarray(result).dtype == eager.dtype


def test_graph_mode_checks_shapes_when_building() -> None:
    with Graph().as_default():
        y = placeholder(ef.float32, (None, 3))
        x = placeholder(ef.float32, (None, 4))
        with pytest.raises(ShapeError, match="softmax_cross_entropy_with_logits"):
            nn.softmax_cross_entropy_with_logits(labels=y, logits=x)


def test_graph_mode_checks_sparse_labels_when_the_session_runs() -> None:
    """The fused op's kernel checks labels, so a graph catches a bad one too (a one-hot would
    make it a silent row of zeros)."""
    g = Graph()
    with g.as_default():
        y = placeholder(ef.int64, (None,))
        x = placeholder(ef.float64, (None, 4))
        loss = nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=x)
    bad = SPARSE.copy()
    bad[1] = 7
    with Session(g) as session:
        np.testing.assert_allclose(
            session.run(loss, {y: SPARSE, x: LOGITS}),
            nn.sparse_softmax_cross_entropy_with_logits(labels=SPARSE, logits=LOGITS).numpy(),
        )
        with pytest.raises(OutOfRangeError, match=r"SparseSoftmax.*label 7 is out of range"):
            session.run(loss, {y: bad, x: LOGITS})


def test_sparse_loss_returns_its_gradient_as_the_ops_second_output() -> None:
    """What the gradient rule scales: softmax(logits) - one_hot(labels)."""
    from eagerflow.tensor.execution import execute

    loss, backprop = execute("SparseSoftmaxCrossEntropyWithLogits",
                             (ef.constant(LOGITS), ef.constant(SPARSE)))  # fmt: skip
    softmax = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(backprop.numpy(), softmax - np.eye(4)[SPARSE], rtol=1e-12)
    np.testing.assert_allclose(loss.numpy(), -np.log(softmax[np.arange(5), SPARSE]), rtol=1e-12)


@pytest.mark.parametrize(
    ("logits_shape", "labels_shape"),
    [((5, 4), (5, 1)), ((2, 3, 4), (6,)), ((5, 4), (3,)), ((4,), (1,))],
)
def test_fused_op_refuses_labels_of_another_shape(logits_shape, labels_shape) -> None:
    """Called directly (not through nn's checks), the op still names both shapes."""
    logits = ef.constant(np.zeros(logits_shape))
    labels = ef.constant(np.zeros(labels_shape, np.int64))
    with pytest.raises(
        ShapeError, match=r"SparseSoftmaxCrossEntropyWithLogits.*must have the shape"
    ):
        ef.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
