"""``Checkpoint``: every variable of a tree of objects, saved to and restored from one file.

The file is a NumPy ``.npz`` archive (read with ``allow_pickle=False``: loading a checkpoint
never runs code), one array per variable, keyed by the variable's *path* in the object tree:

    model/layers/0/kernel                 Checkpoint(model=...) -> Sequential.layers[0].kernel
    optimizer/beta1_power                 an optimizer's own variable
    optimizer/slots/model/layers/0/kernel/m   Adam's m for that kernel
    step                                  a bare Variable

Paths, not variable names, so a checkpoint restores into a freshly built model whose
variables happen to be named ``dense_7/kernel``. Saving writes a temporary file and renames
it over the old one, so an interrupted save never leaves a half-written checkpoint. Restoring
checks every array (present, right shape, right dtype) before it assigns any, so a bad file
changes nothing.
"""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.nn.module import Layer
from eagerflow.nn.optimizers import Optimizer
from eagerflow.tensor.errors import EagerflowError
from eagerflow.tensor.execution import context

MARKER = "__eagerflow_checkpoint__"  # an array every checkpoint has; its value is the format
FORMAT = 1
Trackable = Layer | Optimizer | Variable


class CheckpointError(EagerflowError, ValueError):
    """A checkpoint file that cannot be restored: unreadable, foreign, or not matching."""


class Checkpoint:
    """``Checkpoint(model=model, optimizer=opt, step=global_step)``; then ``save(path)`` and
    ``restore(path)``. Pass ``session=`` to either for variables that live in a graph."""

    def __init__(self, **objects: Trackable) -> None:
        for key, obj in objects.items():
            if not isinstance(obj, Layer | Optimizer | Variable):
                raise TypeError(f"Checkpoint: '{key}' must be a Layer, Model, Optimizer or "
                                f"Variable, got {type(obj).__name__}")  # fmt: skip
        self.objects = objects

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
    def save(self, path: str | os.PathLike[str], session: Any = None) -> str:
        """Write every variable to ``path`` (atomically); returns the path."""
        path = Path(path)
        if path.is_dir():
            raise CheckpointError(f"cannot save a checkpoint to {path}: it is a folder")
        variables = self.variables()
        values = _read(list(variables.values()), session)
        arrays = {key: value for key, value in zip(variables, values, strict=True)}
        arrays[MARKER] = np.array(FORMAT)
        path.parent.mkdir(parents=True, exist_ok=True)  # as TensorFlow's Checkpoint.save does
        handle, temporary = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.",
                                             suffix=".tmp")  # fmt: skip
        try:
            with os.fdopen(handle, "wb") as file:
                np.savez(file, **arrays)  # type: ignore[arg-type]
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, path)  # atomic: readers see the old file or the new one
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return str(path)

    # --- restore ------------------------------------------------------------------------------
    def restore(self, path: str | os.PathLike[str], session: Any = None) -> None:
        """Give every variable its value from ``path``; on any mismatch change nothing."""
        arrays = _load(Path(path))
        variables = self.variables()
        pending = self._missing_optimizer_state(arrays, variables)
        expected: dict[str, tuple[tuple[int, ...], Any]] = {
            key: (v.shape, v.dtype.np) for key, v in variables.items()
        }
        expected.update((key, (shape, dtype)) for key, (_, shape, dtype) in pending.items())
        for key, (shape, dtype) in expected.items():
            if key not in arrays:
                raise CheckpointError(f"checkpoint {path} has no value for '{key}'")
            array = arrays[key]
            if array.shape != tuple(shape) or array.dtype != dtype:
                raise CheckpointError(
                    f"checkpoint {path}: '{key}' is {array.dtype}{list(array.shape)} in the "
                    f"file but {np.dtype(dtype)}{list(shape)} here"
                )
        unknown = sorted(set(arrays) - set(expected))
        if unknown:
            raise CheckpointError(f"checkpoint {path} has values for variables not in this "
                                  f"Checkpoint: {unknown}")  # fmt: skip
        for key, (create, _, _) in pending.items():  # all checked: now it is safe to add state
            variables[key] = create()
        _write(variables, arrays, session)

    def _missing_optimizer_state(
        self, arrays: dict[str, np.ndarray], variables: dict[str, Variable]
    ) -> dict[str, tuple[Any, tuple[int, ...], Any]]:
        """Optimizer variables in the file that do not exist yet (slots are made on the first
        step): ``{key: (create, shape, dtype)}``."""
        pending: dict[str, tuple[Any, tuple[int, ...], Any]] = {}
        for key, obj in self.objects.items():
            if not isinstance(obj, Optimizer):
                continue
            for name in arrays:
                if name in variables or not name.startswith(f"{key}/"):
                    continue
                rest = name[len(key) + 1 :]
                if rest.startswith("slots/"):
                    where, _, slot_name = rest[len("slots/") :].rpartition("/")
                    primary = variables.get(where)
                    if primary is None or slot_name not in obj.slot_names:
                        continue  # reported as unknown (e.g. another optimizer's slot)
                    pending[name] = (_slot_maker(obj, primary, slot_name), primary.shape,
                                     primary.dtype.np)  # fmt: skip
                elif rest in obj.non_slot_names:
                    array = arrays[name]
                    pending[name] = (_non_slot_maker(obj, rest, array), array.shape, array.dtype)
        return pending


def _slot_maker(optimizer: Optimizer, primary: Variable, slot_name: str) -> Any:
    return lambda: optimizer.slot(primary, slot_name)


def _non_slot_maker(optimizer: Optimizer, name: str, array: np.ndarray) -> Any:
    return lambda: optimizer.non_slot(name, array)


def _load(path: Path) -> dict[str, np.ndarray]:
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    if path.is_file() and not zipfile.is_zipfile(path) and not _is_npy(path):
        raise CheckpointError(f"{path} is not an eagerflow checkpoint (not an .npz archive)")
    try:
        data = np.load(path, allow_pickle=False)
        if not isinstance(data, np.lib.npyio.NpzFile):  # a lone .npy array
            raise CheckpointError(f"{path} holds a single array, not an eagerflow checkpoint")
        with data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        if isinstance(error, CheckpointError):
            raise
        raise CheckpointError(f"cannot read checkpoint {path}: {error}") from error
    marker = arrays.pop(MARKER, None)
    if marker is None:
        raise CheckpointError(f"{path} is not an eagerflow checkpoint (no '{MARKER}' entry)")
    if marker.shape != () or int(marker) != FORMAT:
        raise CheckpointError(f"{path} has checkpoint format {marker}, this eagerflow reads "
                              f"format {FORMAT}")  # fmt: skip
    return arrays


def _is_npy(path: Path) -> bool:
    with path.open("rb") as file:
        return file.read(6) == b"\x93NUMPY"  # the magic string every .npy file starts with


def _read(variables: list[Variable], session: Any) -> list[np.ndarray]:
    if any(v._array is None for v in variables):  # graph variables: their values are per Session
        if session is None:
            raise CheckpointError("these variables live in a graph: pass session= to save()")
        return [np.asarray(a) for a in session.run(variables)]
    return [np.array(v.numpy()) for v in variables]


def _write(variables: dict[str, Variable], arrays: dict[str, np.ndarray], session: Any) -> None:
    in_graph = {k: v for k, v in variables.items() if v._array is None}
    if in_graph and session is None:
        raise CheckpointError("these variables live in a graph: pass session= to restore()")
    with context(None):  # eager variables are assigned now, even inside a graph's block
        for key, variable in variables.items():
            if key not in in_graph:
                variable.assign(arrays[key])
    if in_graph:
        with session.graph.as_default():
            assigns = [v.assign(arrays[k], read_value=False) for k, v in in_graph.items()]
        session.run(assigns)
