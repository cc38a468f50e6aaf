"""``tf.nn``'s spelling: ``import eagerflow.tensor as ef``, then ``ef.nn.relu(x)``.

Nothing is defined here: these are the ops of ``nn_ops.py``, ``conv_ops.py``, ``pool_ops.py`` and
``math_ops.py`` under the names TensorFlow files them under. The older spelling ``ef.relu``
names the same functions (convolutions and pools are only here, as in TensorFlow).
"""

from eagerflow.tensor.conv_ops import conv2d, conv2d_backprop_filter, conv2d_backprop_input
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
from eagerflow.tensor.pool_ops import (
    avg_pool2d,
    avg_pool_grad,
    max_pool2d,
    max_pool_grad,
    max_pool_grad_grad,
)

__all__ = [
    "avg_pool2d",
    "avg_pool_grad",
    "conv2d",
    "conv2d_backprop_filter",
    "conv2d_backprop_input",
    "elu",
    "leaky_relu",
    "log_softmax",
    "max_pool2d",
    "max_pool_grad",
    "max_pool_grad_grad",
    "relu",
    "sigmoid",
    "softmax",
    "softplus",
    "sparse_softmax_cross_entropy_with_logits",
    "tanh",
]
