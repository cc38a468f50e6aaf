"""eagerflow.tensor: tensors, dtypes, NumPy kernels, the op registry and the execution seam.

Read it in this order:

1. ``dtypes.py``    our six dtypes;
2. ``tensor.py``    the ``Tensor`` value and how Python values become tensors;
3. ``registry.py``  one ``OpDef`` row per op: kernel, shape rule, dtype rule;
4. ``execution.py`` the seam: ``execute()``, contexts (eager here) and recorders;
5. the ops themselves, each kernel right above the public function that calls
   ``execute``: ``math_ops.py``, ``reduction_ops.py``, ``array_ops.py``,
   ``indexing_ops.py``, ``nn_ops.py``, ``conv_ops.py`` and ``pool_ops.py``
   (``ef.nn.conv2d``..., their geometry in ``windows.py``), ``random_ops.py`` and
   ``logging_ops.py`` (``print``); ``math_ops`` and ``indexing_ops`` attach Tensor's
   operators (``a + b`` *is* ``add(a, b)``);
6. ``nest.py``      nested structures (TensorFlow's ``tf.nest``), used by every package;
7. ``pictures.py``  Mermaid and Graphviz text for any picture of nodes and edges: tapes,
   graphs and compiled plans are all drawn by it.
"""

from importlib import metadata as _metadata

__version__ = _metadata.version("eagerflow-tensor")  # from the repository's VERSION file

# `tensor` first: every op module needs Tensor (and attaches its operators to it).
from eagerflow.tensor.tensor import Tensor, TensorShape, convert_to_tensor, is_tensor  # isort: skip
from eagerflow.tensor import dtypes, errors, execution, nest, pictures, registry
from eagerflow.tensor.array_ops import (
    broadcast_to,
    constant,
    expand_dims,
    fill,
    identity,
    linspace,
    ones,
    ones_like,
    range,
    reshape,
    size,
    squeeze,
    stop_gradient,
    tile,
    transpose,
    zeros,
    zeros_like,
)
from eagerflow.tensor.dtypes import (
    DType,
    as_dtype,
    bool_,
    float16,
    float32,
    float64,
    int32,
    int64,
)
from eagerflow.tensor.errors import (
    AxisError,
    DTypeError,
    EagerflowError,
    FailedPreconditionError,
    InvalidArgumentError,
    OutOfRangeError,
    ShapeError,
    UnknownOpError,
)
from eagerflow.tensor.execution import execute, executing_eagerly
from eagerflow.tensor.indexing_ops import (
    concat,
    gather,
    one_hot,
    split,
    stack,
    strided_slice_grad,
    unsorted_segment_sum,
    where,
)
from eagerflow.tensor.logging_ops import print
from eagerflow.tensor.math_ops import (
    abs,
    add,
    cast,
    clip_by_value,
    divide,
    equal,
    exp,
    floordiv,
    floormod,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    logical_and,
    logical_not,
    logical_or,
    matmul,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    pow,
    sigmoid,
    sign,
    sqrt,
    square,
    subtract,
    tanh,
)
from eagerflow.tensor.nn_ops import (
    log_softmax,
    relu,
    relu_grad,
    softmax,
    softplus,
    sparse_softmax_cross_entropy_with_logits,
)
from eagerflow.tensor.random_ops import random_normal, random_shuffle, random_uniform, set_seed
from eagerflow.tensor.reduction_ops import (
    argmax,
    argmin,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_sum,
)
from eagerflow.tensor.registry import OpDef, get_op

from eagerflow.tensor import nn  # isort: skip  (`ef.nn.relu`: TensorFlow's `tf.nn` spelling)

# TensorFlow spells it `tf.bool`. Not in __all__, so `import *` never shadows the builtin.
bool = bool_
# `ef.print` and `ef.range` are in __all__ (TensorFlow's names), but `from eagerflow.tensor
# import *` would shadow the builtins `print` and `range`: import the module as `ef` instead.

__all__ = [
    "AxisError",
    "DType",
    "DTypeError",
    "EagerflowError",
    "FailedPreconditionError",
    "InvalidArgumentError",
    "OpDef",
    "OutOfRangeError",
    "ShapeError",
    "Tensor",
    "TensorShape",
    "UnknownOpError",
    "abs",
    "add",
    "argmax",
    "argmin",
    "as_dtype",
    "bool_",
    "broadcast_to",
    "cast",
    "clip_by_value",
    "concat",
    "constant",
    "convert_to_tensor",
    "divide",
    "dtypes",
    "equal",
    "errors",
    "execute",
    "executing_eagerly",
    "execution",
    "exp",
    "expand_dims",
    "fill",
    "float16",
    "float32",
    "float64",
    "floordiv",
    "floormod",
    "gather",
    "get_op",
    "greater",
    "greater_equal",
    "identity",
    "int32",
    "int64",
    "is_tensor",
    "less",
    "less_equal",
    "linspace",
    "log",
    "log_softmax",
    "logical_and",
    "logical_not",
    "logical_or",
    "matmul",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nest",
    "nn",
    "not_equal",
    "one_hot",
    "ones",
    "ones_like",
    "pictures",
    "pow",
    "print",
    "random_normal",
    "random_shuffle",
    "random_uniform",
    "range",
    "reduce_max",
    "reduce_mean",
    "reduce_min",
    "reduce_prod",
    "reduce_sum",
    "registry",
    "relu",
    "relu_grad",
    "reshape",
    "set_seed",
    "sigmoid",
    "sign",
    "size",
    "softmax",
    "softplus",
    "sparse_softmax_cross_entropy_with_logits",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "stop_gradient",
    "strided_slice_grad",
    "subtract",
    "tanh",
    "tile",
    "transpose",
    "unsorted_segment_sum",
    "where",
    "zeros",
    "zeros_like",
]
