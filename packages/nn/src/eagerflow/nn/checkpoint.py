"""``Checkpoint``: every variable of a tree of objects, saved to and restored from one file.

The file is a NumPy ``.npz`` archive (read with ``allow_pickle=False``: loading a checkpoint
never runs code), one array per variable, keyed by the variable's *path* in the object tree:

    model/layers/0/kernel                 Checkpoint(model=...) -> Sequential.layers[0].kernel
    optimizer/learning_rate               an optimizer's own variables: its rate and step
    optimizer/iterations                  count (Keras' two), Adam's beta1_power...
    optimizer/slots/model/layers/0/kernel/m   Adam's m for that kernel
    step                                  a bare Variable

Paths, not variable names, so a checkpoint restores into a freshly built model whose
variables happen to be named ``dense_7/kernel``. Saving writes a temporary file and renames
it over the old one, so an interrupted save never leaves a half-written checkpoint. A path
with a ``..`` part is refused (it would be a zip-slip for whoever unpacks the archive).

A checkpoint file is untrusted: every member's name and ``.npy`` header is read before any
array is, and a ``..`` name, an object array, or arrays declaring more than
``eagerflow.graph.export.limits.MAX_VARIABLE_BYTES`` together are a ``CheckpointError``
before anything is allocated.

Restoring works as in TensorFlow 2. Each value in the file goes to the variable at its path;
the shapes and dtypes of all of them are checked before any is assigned, so a file that does
not fit changes nothing. A value whose variable does not exist yet, because its layer has not
been built, waits in that layer and is assigned when ``build`` makes the variable. Values
with no variable and variables with no value are not errors: ``restore`` returns a
``CheckpointLoadStatus`` whose ``assert_consumed()`` raises if anything did not match, and
which warns about it when it is dropped unless you called ``expect_partial()``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Set
from pathlib import Path
from typing import Any

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.nn.checkpoint_file import (
    FORMAT,
    MARKER,
    CheckpointError,
    assign_values,
    check_value,
    load_arrays,
    read_values,
    write_arrays,
)
from eagerflow.nn.module import Layer
from eagerflow.nn.optimizers import Optimizer
from eagerflow.tensor.execution import context

Trackable = Layer | Optimizer | Variable


class CheckpointWarning(UserWarning):
    """A restore that left values in the file or variables unmatched."""


class Checkpoint:
    """``Checkpoint(model=model, optimizer=opt, step=global_step)``; then ``write(path)`` (or
    ``save(prefix)``, which numbers its files: ``prefix-1``, ``prefix-2``...) and
    ``restore(path)``, which returns a ``CheckpointLoadStatus``: ``.assert_consumed()`` checks
    that everything matched, ``.expect_partial()`` says that a partial match is intended.
    Pass ``session=`` to either for variables that live in a graph."""

    def __init__(self, **objects: Trackable) -> None:
        for key, obj in objects.items():
            if not isinstance(obj, Layer | Optimizer | Variable):
                raise TypeError(f"Checkpoint: '{key}' must be a Layer, Model, Optimizer or "
                                f"Variable, got {type(obj).__name__}")  # fmt: skip
        self.objects = objects
        self.save_counter = 0  # how many numbered checkpoints ``save`` wrote (the last's number)

    def variables(self) -> dict[str, Variable]:
        """``{path: variable}`` for every variable this checkpoint saves, in a stable order."""
        found: dict[str, Variable] = {}
        for key, obj in self.objects.items():
            if isinstance(obj, Variable):
                found[key] = obj
            elif isinstance(obj, Layer):
                found.update((f"{key}/{path}", v) for path, v in obj.variable_paths())
        path_of = {v: path for path, v in found.items()}
        for key, obj in self.objects.items():
            if isinstance(obj, Optimizer):
                found.update((f"{key}/{name}", v) for name, v in obj.non_slots().items())
                for slot_name, primary, slot in obj.slots():
                    where = path_of.get(primary, primary.name.rsplit(":", 1)[0])
                    found[f"{key}/slots/{where}/{slot_name}"] = slot
        return found

    # --- save ---------------------------------------------------------------------------------
    def write(self, path: str | os.PathLike[str], session: Any = None) -> str:
        """Write every variable to ``path`` (atomically, over any file there); returns the
        path. ``save`` numbers its files instead."""
        path = Path(path)
        if path.is_dir():
            raise CheckpointError(f"cannot save a checkpoint to {path}: it is a folder")
        variables = self.variables()
        values = read_values(list(variables.values()), session)
        write_arrays(path, dict(zip(variables, values, strict=True)))
        return str(path)

    def save(self, file_prefix: str | os.PathLike[str], session: Any = None) -> str:
        """Write a new numbered checkpoint, ``{file_prefix}-{n}``, ``n`` being one more than
        ``save_counter`` (which it counts up); returns its path. (``save_counter`` is a number
        of this object, not a variable in the file as in TensorFlow.)"""
        path = self.write(f"{os.fspath(file_prefix)}-{self.save_counter + 1}", session)
        self.save_counter += 1  # only once the file is whole
        return path

    # --- restore ------------------------------------------------------------------------------
    def restore(self, path: str | os.PathLike[str], session: Any = None) -> CheckpointLoadStatus:
        """Give each variable its value from ``path``; a value whose variable its layer has not
        made yet waits for ``build``. On a shape or dtype mismatch nothing changes."""
        arrays = load_arrays(Path(path))
        variables = self.variables()
        pending, waiting_slots = self._missing_optimizer_state(arrays, variables)
        now = {key: v for key, v in variables.items() if key in arrays}
        known = now.keys() | pending.keys() | waiting_slots.keys()
        maybe_waiting = self._for_layers_to_make(arrays, known)
        # check everything first, so that a file that does not fit changes nothing
        for key, variable in now.items():
            check_value(path, key, arrays[key], variable.shape, variable.dtype.np)
        for key, (_, shape, dtype) in pending.items():
            check_value(path, key, arrays[key], shape, dtype)
        for key, (primary, _, _) in waiting_slots.items():
            if primary in maybe_waiting:  # a slot has its variable's shape and dtype
                check_value(path, key, arrays[key], arrays[primary].shape, arrays[primary].dtype)
        for key, (create, _, _) in pending.items():
            now[key] = create()
        assign_values(now, arrays, session)
        waiting = _defer(str(path), arrays, maybe_waiting, waiting_slots)
        used = now.keys() | waiting.keys() | {k for w in waiting.values() for k, *_ in w.slots}
        unused = sorted(arrays.keys() - used)
        return CheckpointLoadStatus(self, str(path), arrays.keys(), unused, list(waiting.values()))

    def _for_layers_to_make(
        self, arrays: dict[str, np.ndarray], known: Set[str]
    ) -> dict[str, tuple[Layer, str]]:
        """The values of the file for variables not made yet: ``{key: (its layer, the rest of
        the key)}``, in the file's order (so that errors come in that order)."""
        found: dict[str, tuple[Layer, str]] = {}
        for key in arrays:
            top, _, rest = key.partition("/")
            layer = self.objects.get(top)
            if isinstance(layer, Layer) and rest and key not in known:
                found[key] = (layer, rest)
        return found

    def _missing_optimizer_state(
        self, arrays: dict[str, np.ndarray], variables: dict[str, Variable]
    ) -> tuple[dict[str, tuple[Any, tuple[int, ...], Any]], dict[str, tuple[str, Optimizer, str]]]:
        """Optimizer variables in the file that do not exist yet (slots are made on the first
        step): ``{key: (create, shape, dtype)}``; and the slots of variables that do not exist
        yet either: ``{key: (the variable's key, optimizer, slot name)}``."""
        pending: dict[str, tuple[Any, tuple[int, ...], Any]] = {}
        waiting: dict[str, tuple[str, Optimizer, str]] = {}
        for key, obj in self.objects.items():
            if not isinstance(obj, Optimizer):
                continue
            for name in arrays:
                if name in variables or not name.startswith(f"{key}/"):
                    continue
                rest = name[len(key) + 1 :]
                if rest.startswith("slots/"):
                    where, _, slot_name = rest[len("slots/") :].rpartition("/")
                    if slot_name not in obj.slot_names:
                        continue  # unmatched (e.g. another optimizer's slot)
                    primary = variables.get(where)
                    if primary is None:
                        waiting[name] = (where, obj, slot_name)
                    else:
                        pending[name] = (_slot_maker(obj, primary, slot_name), primary.shape,
                                         primary.dtype.np)  # fmt: skip
                elif rest in obj.restorable_non_slots():
                    array = arrays[name]
                    pending[name] = (_non_slot_maker(obj, rest, array), array.shape, array.dtype)
        return pending, waiting


class Waiting:
    """A value from the file for a variable that its layer has not made yet. The layer keeps
    it (``Layer.defer``) and, once ``build`` has made the variable, checks and assigns it."""

    def __init__(self, path: str, key: str, array: np.ndarray) -> None:
        self.path, self.key, self.array = path, key, array
        self.slots: list[tuple[str, Optimizer, str, np.ndarray]] = []  # its optimizer state
        self.done = False

    def check(self, variable: Variable) -> None:
        check_value(self.path, self.key, self.array, variable.shape, variable.dtype.np)

    def assign(self, variable: Variable) -> None:
        _assign_or_initialize(variable, self.array)
        for _, optimizer, slot_name, array in self.slots:
            _assign_or_initialize(optimizer.slot(variable, slot_name), array)
        self.done = True

    def file_keys(self) -> list[str]:
        return [self.key, *(key for key, *_ in self.slots)]


class CheckpointLoadStatus:
    """What ``Checkpoint.restore`` matched (TensorFlow 2's class of the same name).

    ``assert_consumed()`` raises ``CheckpointError`` unless every value in the file went to
    a variable and every variable got a value; values still waiting for a layer to build count
    as not consumed. ``expect_partial()`` says a partial restore is intended: without it, a
    status that is dropped with values or variables unmatched warns (``CheckpointWarning``),
    as TensorFlow does, since ``restore`` cannot know yet whether you will ask.
    """

    def __init__(
        self,
        checkpoint: Checkpoint,
        path: str,
        keys: Iterable[str],
        unused: list[str],
        waiting: list[Waiting],
    ) -> None:
        self._checkpoint, self._path, self._keys = checkpoint, path, set(keys)
        self._unused, self._waiting = unused, waiting
        self._answered = False  # assert_consumed or expect_partial was called

    def assert_consumed(self) -> CheckpointLoadStatus:
        """Raise ``CheckpointError`` naming whatever did not match; else return ``self``."""
        self._answered = True
        problems = self._problems(with_waiting=True)
        if problems:
            raise CheckpointError(f"checkpoint {self._path} was not fully used: "
                                  + "; ".join(problems))  # fmt: skip
        return self

    def expect_partial(self) -> CheckpointLoadStatus:
        """Silence the warning about unmatched values; returns ``self``."""
        self._answered = True
        return self

    def _unrestored(self) -> list[str]:
        return sorted(self._checkpoint.variables().keys() - self._keys)

    def _problems(self, with_waiting: bool) -> list[str]:
        problems = []
        if self._unused:
            problems.append(f"values in the file with no variable: {self._unused}")
        if unrestored := self._unrestored():
            problems.append(f"variables with no value in the file: {unrestored}")
        waiting = [key for w in self._waiting if not w.done for key in w.file_keys()]
        if waiting and with_waiting:
            problems.append(f"values waiting for variables not created yet (build the model or "
                            f"call it once): {waiting}")  # fmt: skip
        return problems

    def __repr__(self) -> str:
        waiting = sum(len(w.file_keys()) for w in self._waiting if not w.done)
        restored = len(self._keys) - len(self._unused) - waiting
        unmatched = len(self._unused) + len(self._unrestored())
        return (f"<CheckpointLoadStatus: {restored} restored, {unmatched} unmatched, "
                f"{waiting} waiting>")  # fmt: skip

    def __del__(self) -> None:
        # Values still waiting are not warned about: the layer's build may yet take them.
        if self._answered:
            return
        try:
            problems = self._problems(with_waiting=False)
        except Exception:  # e.g. at interpreter exit: never fail in __del__
            return
        if problems:
            warnings.warn(f"checkpoint {self._path} was restored in part: " + "; ".join(problems)
                          + " (call expect_partial() on the status if that is intended)",
                          CheckpointWarning, stacklevel=2)  # fmt: skip


def _defer(
    path: str,
    arrays: dict[str, np.ndarray],
    maybe_waiting: dict[str, tuple[Layer, str]],
    waiting_slots: dict[str, tuple[str, Optimizer, str]],
) -> dict[str, Waiting]:
    """Hand each value for a variable not made yet to its layer, to give when it makes it;
    the optimizer slots of such a variable wait with it."""
    waiting: dict[str, Waiting] = {}
    for key, (layer, rest) in maybe_waiting.items():
        value = Waiting(path, key, arrays[key])
        if layer.defer(rest, value):  # (False: its layer is built and will make no more)
            waiting[key] = value
    for key, (primary, optimizer, slot_name) in waiting_slots.items():
        if primary in waiting:
            waiting[primary].slots.append((key, optimizer, slot_name, arrays[key]))
    return waiting


def _slot_maker(optimizer: Optimizer, primary: Variable, slot_name: str) -> Any:
    return lambda: optimizer.slot(primary, slot_name)


def _non_slot_maker(optimizer: Optimizer, name: str, array: np.ndarray) -> Any:
    return lambda: optimizer.non_slot(name, array)


def _assign_or_initialize(variable: Variable, array: np.ndarray) -> None:
    """Assign an eager variable now. A graph variable's value lives in each Session, so the
    saved value becomes its initial value, for ``global_variables_initializer`` to assign."""
    if variable.holds_value:
        with context(None):  # now, even while a graph or a function is being built
            variable.assign(array)
    else:
        variable.initializer = variable.assign(array, read_value=False).op


__all__ = [
    "FORMAT",
    "MARKER",
    "Checkpoint",
    "CheckpointError",
    "CheckpointLoadStatus",
    "CheckpointWarning",
    "Trackable",
    "Waiting",
]
