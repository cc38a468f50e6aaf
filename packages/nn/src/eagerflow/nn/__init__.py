"""eagerflow.nn: models, layers, losses, optimizers, training loops and checkpoints.

Read it in this order:

1. ``module.py``        ``Layer`` and ``Model``: objects that find their variables in their
   attributes;
2. ``layers.py``        ``Dense``, ``Flatten``, ``Dropout``, ``Sequential``; with
   ``activations.py`` and ``initializers.py``;
3. ``conv_layers.py``   ``Conv2D``, ``MaxPooling2D``, ``AveragePooling2D``: images, NHWC;
4. ``normalization.py`` ``BatchNormalization``: a layer that trains differently and updates
   its own state (``Layer.add_update``, ``updates``);
5. ``losses.py``        losses and ``accuracy``, composed from public ops;
6. ``optimizers.py``    TensorFlow 1.x's optimizers, as variable assignments, their
   learning rate a variable or one of Keras' schedules (``schedules.py``);
7. ``data.py``          ``data.Dataset``: input pipelines as in ``tf.data`` (slices, shuffle,
   batch, map, repeat, prefetch in a background thread), and ``data_kinds.py`` the rest of
   its kinds (zip, concatenate, padded_batch, from_generator, cache...);
8. ``training.py``      ``batches`` and ``fit``: the training loop (``fit`` takes
   arrays or a ``Dataset``);
9. ``checkpoint.py``    ``Checkpoint``: save and restore every variable of an object tree
   (the file itself: ``checkpoint_file.py``; numbered ones kept: ``checkpoint_manager.py``;
   TensorFlow 1's ``Saver``, by variable name: ``saver.py``);
10. ``callbacks/``      Keras' callbacks for ``fit``: ``History``, the progress bar,
    ``EarlyStopping``, ``ModelCheckpoint``, ``LearningRateScheduler``, ``ReduceLROnPlateau``,
    ``CSVLogger``;
11. ``datasets/``       ``load_digits``: real handwritten digits, shipped in the package.
12. ``replicas.py``     ``ReplicaHook``: where a distribution strategy (eagerflow.distribute)
    plugs in, for data-parallel training; nn never imports one.
"""

from importlib import metadata as _metadata

__version__ = _metadata.version("eagerflow-nn")  # from the repository's VERSION file

from eagerflow.nn import activations, callbacks, data, datasets, initializers, schedules

# Dataset's other kinds (zip, padded_batch...): importing the module registers them.
from eagerflow.nn import data_kinds as _data_kinds  # noqa: F401
from eagerflow.nn.checkpoint import Checkpoint, CheckpointError
from eagerflow.nn.checkpoint_manager import CheckpointManager, latest_checkpoint
from eagerflow.nn.conv_layers import (
    AveragePool2D,
    AveragePooling2D,
    Conv2D,
    MaxPool2D,
    MaxPooling2D,
)
from eagerflow.nn.layers import Dense, Dropout, Flatten, Sequential
from eagerflow.nn.losses import (
    accuracy,
    mean_squared_error,
    sigmoid_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits,
    sparse_softmax_cross_entropy_with_logits,
)
from eagerflow.nn.module import Layer, Model
from eagerflow.nn.normalization import BatchNormalization
from eagerflow.nn.optimizers import (
    Adagrad,
    AdamOptimizer,
    GradientDescentOptimizer,
    MomentumOptimizer,
    Optimizer,
    RMSPropOptimizer,
    get_or_create_global_step,
)
from eagerflow.nn.saver import Saver
from eagerflow.nn.training import History, batches, fit
from eagerflow.nn.variable_scope import (
    AUTO_REUSE,
    VariableScope,
    get_variable,
    get_variable_scope,
    variable_scope,
)

__all__ = [
    "AUTO_REUSE",
    "Adagrad",
    "AdamOptimizer",
    "AveragePool2D",
    "AveragePooling2D",
    "BatchNormalization",
    "Checkpoint",
    "CheckpointError",
    "CheckpointManager",
    "Conv2D",
    "Dense",
    "Dropout",
    "Flatten",
    "GradientDescentOptimizer",
    "History",
    "Layer",
    "MaxPool2D",
    "MaxPooling2D",
    "Model",
    "MomentumOptimizer",
    "Optimizer",
    "RMSPropOptimizer",
    "Saver",
    "Sequential",
    "VariableScope",
    "accuracy",
    "activations",
    "batches",
    "callbacks",
    "data",
    "datasets",
    "fit",
    "get_or_create_global_step",
    "get_variable",
    "get_variable_scope",
    "initializers",
    "latest_checkpoint",
    "mean_squared_error",
    "schedules",
    "sigmoid_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits",
    "sparse_softmax_cross_entropy_with_logits",
    "variable_scope",
]
