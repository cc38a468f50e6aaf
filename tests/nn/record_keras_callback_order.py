"""Record the order in which a real Keras ``fit`` calls a callback's hooks.

Run with the TensorFlow venv, never in CI (``/work/tfenv/bin/python
tests/nn/record_keras_callback_order.py``); it rewrites ``fixtures/keras_callback_order.json``,
which ``test_callbacks.py`` compares ``nn.fit``'s order with: 2 epochs of 2 training batches,
validation on 1 batch.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras
import numpy as np

HOOKS = ["on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end",
         "on_train_batch_begin", "on_train_batch_end", "on_test_begin", "on_test_end",
         "on_test_batch_begin", "on_test_batch_end"]  # fmt: skip


class Recorder(keras.callbacks.Callback):
    """Every hook call as ``[hook, epoch or batch (if the hook has one), sorted log keys]``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[Any]] = []
        for hook in HOOKS:
            setattr(self, hook, self._recorder(hook))

    def _recorder(self, hook: str) -> Any:
        def record(*args: Any, **kwargs: Any) -> None:
            # Keras passes logs by position to some hooks and by name to others
            number = [a for a in args if isinstance(a, int)]
            logs = next((a for a in [*args, *kwargs.values()] if isinstance(a, dict)), None)
            self.calls.append([hook, *number, sorted(logs or {})])

        return record


def main() -> None:
    x = np.random.default_rng(0).standard_normal((8, 2)).astype("float32")
    y = x.sum(axis=1, keepdims=True)
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    recorder = Recorder()
    model.fit(x, y, batch_size=4, epochs=2, verbose=0, validation_data=(x[:4], y[:4]),
              callbacks=[recorder])  # fmt: skip
    out = Path(__file__).parent / "fixtures" / "keras_callback_order.json"
    record = {"keras": keras.__version__, "calls": recorder.calls}
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {len(recorder.calls)} calls to {out}")


if __name__ == "__main__":
    main()
