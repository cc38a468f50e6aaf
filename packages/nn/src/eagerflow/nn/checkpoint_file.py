"""The checkpoint file itself, below ``Checkpoint`` and ``Model.save_weights``, which both use
it: a NumPy ``.npz`` archive of ``{key: array}`` plus a ``MARKER`` entry holding the format,
written atomically (a temporary file renamed over the old one) and read as untrusted (every
member's name and ``.npy`` header checked before any array is made, ``allow_pickle=False``).
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from eagerflow.autodiff import Variable
from eagerflow.graph.core.files import atomic_write
from eagerflow.graph.export.limits import check_name, read_npz
from eagerflow.tensor.errors import EagerflowError, InvalidAttrError, format_shape
from eagerflow.tensor.execution import context

MARKER = "__eagerflow_checkpoint__"  # an array every checkpoint has; its value is the format
FORMAT = 1


class CheckpointError(EagerflowError, ValueError):
    """A checkpoint file that cannot be restored: unreadable, foreign, or not matching."""


def write_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` and the marker to ``path``, atomically: a reader (or a crash) sees the
    old file or the new one, never half of one. A key with a ``..`` part is refused."""
    checked = {check_name(f"checkpoint {path}", key): value for key, value in arrays.items()}
    checked[MARKER] = np.array(FORMAT)
    path.parent.mkdir(parents=True, exist_ok=True)  # as TensorFlow's Checkpoint.save does
    with atomic_write(path, "wb") as file:
        np.savez(file, **checked)  # type: ignore[arg-type]


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of the checkpoint at ``path`` (its marker checked and removed)."""
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}")
    if path.is_file() and not zipfile.is_zipfile(path) and not _is_npy(path):
        raise CheckpointError(f"{path} is not an eagerflow checkpoint (not an .npz archive)")
    if path.is_file() and _is_npy(path):  # a lone .npy array
        raise CheckpointError(f"{path} holds a single array, not an eagerflow checkpoint")
    try:  # every member's name and header checked before any array is made (limits)
        arrays = read_npz(str(path))
    except InvalidAttrError as error:
        raise CheckpointError(f"checkpoint {error}") from None
    except OSError as error:
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


def check_value(
    path: str | os.PathLike[str], key: str, array: np.ndarray, shape: tuple[int, ...], dtype: Any
) -> None:
    """Raise ``CheckpointError`` unless the file's ``array`` for ``key`` has the variable's
    ``shape`` and ``dtype``."""
    if array.shape != tuple(shape) or array.dtype != dtype:
        raise CheckpointError(
            f"checkpoint {path}: '{key}' is {array.dtype} {format_shape(array.shape)} in the "
            f"file but {np.dtype(dtype)} {format_shape(shape)} here"
        )


def read_values(variables: list[Variable], session: Any) -> list[np.ndarray]:
    """The values of ``variables``: read now, or (graph variables) run in ``session``."""
    if not all(v.holds_value for v in variables):  # graph variables: their values are per Session
        if session is None:
            raise CheckpointError("these variables live in a graph: pass session= to save()")
        return [np.asarray(a) for a in session.run(variables)]
    return [np.array(v.numpy()) for v in variables]


def assign_values(
    variables: dict[str, Variable], arrays: dict[str, np.ndarray], session: Any
) -> None:
    """Assign each variable its array: eager ones now, graph ones in ``session``."""
    in_graph = {k: v for k, v in variables.items() if not v.holds_value}
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


__all__ = [
    "FORMAT",
    "MARKER",
    "CheckpointError",
    "assign_values",
    "check_value",
    "load_arrays",
    "read_values",
    "write_arrays",
]
