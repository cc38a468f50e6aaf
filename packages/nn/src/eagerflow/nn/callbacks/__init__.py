"""``nn.callbacks``: Keras' hooks into ``fit``, with Keras' names.

``base.py`` holds ``Callback`` (the hooks, and the order ``fit`` calls them in),
``CallbackList`` and ``History``; ``progbar.py`` the progress bar (``Progbar``,
``ProgbarLogger``); ``monitors.py`` the callbacks that act on a number: ``EarlyStopping``,
``ModelCheckpoint``, ``LearningRateScheduler``, ``ReduceLROnPlateau``, ``CSVLogger``;
``tensorboard.py`` ``TensorBoard`` (event files for TensorBoard, through
``eagerflow.graph.summary``).
"""

from eagerflow.nn.callbacks.base import Callback, CallbackList, History
from eagerflow.nn.callbacks.monitors import (
    CSVLogger,
    EarlyStopping,
    LearningRateScheduler,
    ModelCheckpoint,
    ReduceLROnPlateau,
)
from eagerflow.nn.callbacks.progbar import Progbar, ProgbarLogger
from eagerflow.nn.callbacks.tensorboard import TensorBoard

__all__ = [
    "CSVLogger",
    "Callback",
    "CallbackList",
    "EarlyStopping",
    "History",
    "LearningRateScheduler",
    "ModelCheckpoint",
    "Progbar",
    "ProgbarLogger",
    "ReduceLROnPlateau",
    "TensorBoard",
]
