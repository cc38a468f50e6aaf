"""``Saver``: TensorFlow 1's ``tf.train.Saver``, the variables of a Session saved by name.

Where a ``Checkpoint`` keys a value by its variable's path in an object tree, a ``Saver`` keys
it by the variable's name (``dense/kernel`` for ``dense/kernel:0``), as TensorFlow 1 did: a
graph rebuilt by the same code has the same names. ``save(sess, path, global_step=n)`` writes
``path-n`` (an eagerflow checkpoint file, atomically), records it in the folder's
``checkpoint`` list (``latest_checkpoint`` reads it) and deletes the oldest beyond
``max_to_keep``, in that order, as ``CheckpointManager`` does. ``restore(sess, path)`` checks
every name, shape and dtype before it assigns any value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eagerflow.autodiff import Variable
from eagerflow.graph import global_variables
from eagerflow.nn.checkpoint_file import (
    CheckpointError,
    assign_values,
    check_value,
    load_arrays,
    read_values,
    write_arrays,
)
from eagerflow.nn.checkpoint_manager import read_state, write_state


class Saver:
    """``Saver(var_list=None, max_to_keep=5)``: ``var_list`` is a list of variables (saved by
    their names) or a ``{name: variable}`` dict; None: the default graph's variables, when
    the Saver is made. ``max_to_keep=None`` keeps every checkpoint."""

    def __init__(
        self,
        var_list: Sequence[Variable] | Mapping[str, Variable] | None = None,
        max_to_keep: int | None = 5,
    ) -> None:
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or max_to_keep < 1):
            raise ValueError(f"Saver: max_to_keep must be None or an int >= 1, got {max_to_keep!r}")
        if var_list is None:
            var_list = global_variables()
        if isinstance(var_list, Mapping):
            named = dict(var_list)
        else:
            named = {v.name.rpartition(":")[0] or v.name: v for v in var_list}
            if len(named) < len(var_list):
                raise ValueError("Saver: two variables have the same name; pass a dict")
        if not named:
            raise ValueError("Saver: no variables to save")
        for name, variable in named.items():
            if not isinstance(variable, Variable):
                raise TypeError(f"Saver: '{name}' is a {type(variable).__name__}, not a Variable")
        self.var_list, self.max_to_keep = named, max_to_keep
        self.last_checkpoints: list[str] = []  # the paths this Saver saved and keeps

    def save(self, sess: Any, save_path: str | os.PathLike[str], global_step: Any = None) -> str:
        """Write the variables' values in ``sess`` to ``save_path`` (``save_path-{step}`` with
        a ``global_step``: a number or a variable); returns the path written."""
        path = Path(save_path)
        if global_step is not None:
            step = global_step if isinstance(global_step, int) else sess.run(global_step)
            path = Path(f"{path}-{int(step)}")
        values = read_values(list(self.var_list.values()), sess)
        write_arrays(path, dict(zip(self.var_list, values, strict=True)))
        kept = [p for p in self.last_checkpoints if p != str(path)] + [str(path)]
        dropped = [] if self.max_to_keep is None else kept[: -self.max_to_keep]
        self.last_checkpoints = kept[len(dropped) :]
        listed = [n for n in read_state(path.parent) if str(path.parent / n) not in dropped]
        names = [n for n in listed if n != path.name] + [path.name]
        write_state(path.parent, names)  # the list first: it never names a deleted file
        for old in dropped:
            Path(old).unlink(missing_ok=True)
        return str(path)

    def restore(self, sess: Any, save_path: str | os.PathLike[str]) -> None:
        """Assign each variable its value from ``save_path``; a file without a value for
        one of them, or with another shape or dtype, is refused before any is assigned."""
        arrays = load_arrays(Path(save_path))
        missing = sorted(self.var_list.keys() - arrays.keys())
        if missing:
            raise CheckpointError(f"Saver.restore: {save_path} has no value for {missing}")
        for name, variable in self.var_list.items():
            check_value(save_path, name, arrays[name], variable.shape, variable.dtype.np)
        assign_values(self.var_list, arrays, sess)


__all__ = ["Saver"]
