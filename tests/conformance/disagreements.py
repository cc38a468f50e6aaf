"""Where eagerflow and TensorFlow disagree today, case by case (see test_conformance.py).

``TO_FIX`` lists the cases by root cause: a wrong value, a crash, an input accepted that
TensorFlow refuses or one refused that it accepts, for the conformance issue to fix or to
decide. A difference decided as one to keep moves to ``KEPT``, with the phrase of
``site/docs/tensorflow-names.md`` that documents it.
"""

from __future__ import annotations

KEPT: dict[str, str] = {
    "gradient/leaky_relu": "applies `alpha` in the input's own dtype",
    "unary/leaky_relu/float64/regular": "applies `alpha` in the input's own dtype",
    "optimizers/Adagrad/float64": "starts its accumulator in the variable's own dtype",
    "losses/MeanSquaredError/float64": "a loss keeps the predictions' float dtype",
    "unary/softmax/float32/edges": "a NaN in softmax's input makes every output NaN",
    "random/seed/two_ops_same_seeds": "two random ops of one graph with the same two seeds",
    "conv/conv2d/dilations=2/gradient": "differentiates a dilated convolution on the CPU",
}

_ROOT_CAUSES: dict[str, list[str]] = {}
TO_FIX = {case: cause for cause, names in _ROOT_CAUSES.items() for case in names}
