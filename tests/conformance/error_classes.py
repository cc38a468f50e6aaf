"""Which eagerflow error class agrees with the class TensorFlow raised (see
``test_conformance.py``'s error-class test and ``site/docs/tensorflow-names.md``).

TensorFlow's op errors (``tf.errors.InvalidArgumentError``, ``OutOfRangeError``, ...) are
``OpError``\\ s, plain ``Exception``\\ s; its Python side raises ``ValueError`` and
``TypeError``. eagerflow's errors are classes of the same names that are also the built-in
exception a Python user expects (its ``InvalidArgumentError`` is a ``ValueError``), so the
mapping is by name: eagerflow agrees when the class it raised, or one of its bases, has the
name ``AGREEING`` gives for TensorFlow's (``ShapeError`` is an ``InvalidArgumentError``, so
it agrees with TensorFlow's ``InvalidArgumentError``; ``DTypeError`` is a ``TypeError``).
A pair of classes that disagrees on purpose is in ``KEPT_CLASSES``, with the phrase of
``tensorflow-names.md`` that says why.
"""

from __future__ import annotations

# TensorFlow's class: the name of the eagerflow class (or base) that agrees with it
AGREEING: dict[str, str] = {
    "InvalidArgumentError": "InvalidArgumentError",
    "OutOfRangeError": "OutOfRangeError",
    "FailedPreconditionError": "FailedPreconditionError",
    "UnimplementedError": "NotImplementedError",
    "NotFoundError": "FileNotFoundError",
    "ValueError": "ValueError",
    "TypeError": "TypeError",
    "RuntimeError": "RuntimeError",
    # TensorFlow's function-graph errors are classes of the built-in ones: agree with those
    "InaccessibleTensorError": "ValueError",
    "OperatorNotAllowedInGraphError": "TypeError",
}

# (TensorFlow's class, eagerflow's class): the phrase of tensorflow-names.md that keeps it
KEPT_CLASSES: dict[tuple[str, str], str] = {
    ("InvalidArgumentError", "DTypeError"): "a dtype an op does not accept is a `DTypeError`",
    ("InvalidArgumentError", "OutOfRangeError"): "an index past the end of an axis is an "
    "`OutOfRangeError`",
    ("AbortedError", "AxisError"): "TensorFlow's Softmax kernel reports a scalar as an "
    "`AbortedError`",
    ("DataLossError", "InvalidArgumentError"): "padding an element to a smaller size is a "
    "`DataLossError` in TensorFlow",
}


def agrees(tensorflow: str, ours: type[BaseException]) -> bool:
    """Whether eagerflow raising ``ours`` agrees with TensorFlow raising ``tensorflow``."""
    wanted = AGREEING.get(tensorflow, tensorflow)
    return any(c.__name__ == wanted for c in ours.__mro__)


__all__ = ["AGREEING", "KEPT_CLASSES", "agrees"]
