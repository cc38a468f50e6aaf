"""``tf.nn``'s spelling: ``import eagerflow.tensor as ef``, then ``ef.nn.relu(x)``.

Nothing is defined here: these are the ops of ``nn_ops.py`` and ``math_ops.py`` under the
names TensorFlow files them under. The older spelling ``ef.relu`` names the same functions.
"""

from eagerflow.tensor.math_ops import sigmoid, tanh
from eagerflow.tensor.nn_ops import (
    elu,
    leaky_relu,
    log_softmax,
    relu,
    softmax,
    softplus,
    sparse_softmax_cross_entropy_with_logits,
)

__all__ = [
    "elu",
    "leaky_relu",
    "log_softmax",
    "relu",
    "sigmoid",
    "softmax",
    "softplus",
    "sparse_softmax_cross_entropy_with_logits",
    "tanh",
]
