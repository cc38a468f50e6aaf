"""The SavedModel format's names and its JSON pieces: structures of tensors, specs, outputs
(``__init__.py`` describes the whole format)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from eagerflow.graph.tracing.tensor_spec import TensorSpec
from eagerflow.tensor import Tensor, dtypes
from eagerflow.tensor.errors import InvalidAttrError

FORMAT = "eagerflow.SavedModel"
VERSION = 1
SAVED_MODEL_FILENAME = "saved_model.json"
VARIABLES_FILENAME = "variables/variables.npz"  # relative to the export directory
DEFAULT_SERVING_SIGNATURE = "serving_default"


class SavedModelError(InvalidAttrError):
    """A SavedModel directory whose files are not what ``save`` writes: not JSON, cut short,
    another format or version, a malformed entry, variable values that do not fit, or past
    a limit (``limits``). An ``InvalidAttrError``, as every refused import is; ``attr``
    names the entry, when there is one."""


# --- structures as JSON ----------------------------------------------------------------------
def encode_structure(structure: Any, leaf: Callable[[Any], dict[str, Any]]) -> Any:
    """``structure`` as JSON data: lists, tuples and dicts spelled out, leaves by ``leaf``."""
    if structure is None:
        return None
    if isinstance(structure, dict):
        for key in structure:
            if not (key is None or isinstance(key, bool | int | str)):
                raise TypeError(f"a SavedModel stores dicts keyed by str or int, got key {key!r}")
        return {"dict": [[k, encode_structure(v, leaf)] for k, v in structure.items()]}
    if isinstance(structure, tuple):
        return {"tuple": [encode_structure(x, leaf) for x in structure]}
    if isinstance(structure, list):
        return {"list": [encode_structure(x, leaf) for x in structure]}
    return leaf(structure)


def decode_structure(data: Any, leaf: Callable[[str, Any], Any], where: str) -> Any:
    """The inverse of ``encode_structure``; ``leaf(kind, payload)`` makes each leaf."""
    if data is None:
        return None
    if not isinstance(data, dict) or len(data) != 1:
        raise SavedModelError(
            f"{where}: a structure entry is one {{kind: payload}}, got {data!r:.80}"
        )
    ((kind, payload),) = data.items()
    if kind in ("list", "tuple", "dict") and not isinstance(payload, list):
        raise SavedModelError(f"{where}: {kind!r} holds a list, got {payload!r:.80}")
    if kind == "list":
        return [decode_structure(x, leaf, where) for x in payload]
    if kind == "tuple":
        return tuple(decode_structure(x, leaf, where) for x in payload)
    if kind == "dict":
        if not all(isinstance(p, list) and len(p) == 2 for p in payload):
            raise SavedModelError(f"{where}: a dict is a list of [key, value] pairs")
        return {k: decode_structure(v, leaf, where) for k, v in payload}
    return leaf(kind, payload)


def spec_entry(spec: TensorSpec) -> dict[str, Any]:
    """A ``TensorSpec`` as the JSON entry the file keeps."""
    shape = spec.static_shape
    return {
        "shape": None if shape is None else list(shape),
        "dtype": spec.dtype.name,
        "name": spec.name,
    }


def spec_from(entry: Any, where: str) -> TensorSpec:
    """The ``TensorSpec`` of a file's JSON entry, checked (``where`` names it in errors)."""
    if not isinstance(entry, dict) or not {"shape", "dtype"} <= set(entry):
        raise SavedModelError(f"{where}: a TensorSpec is {{shape, dtype, name}}, got {entry!r:.80}")
    try:
        return TensorSpec(entry["shape"], dtypes.as_dtype(entry["dtype"]), entry.get("name"))
    except (TypeError, ValueError, KeyError) as e:
        raise SavedModelError(f"{where}: bad TensorSpec {entry!r:.80}: {e}") from None


def encode_outputs(structure: Any) -> Any:
    """What a function returns, each tensor as ``{"output": i}`` (its place in the trace's
    outputs, which are the flattened structure)."""
    counter = itertools.count()
    return encode_structure(structure, lambda _: {"output": next(counter)})


def tensor_entry(t: Tensor) -> dict[str, Any]:
    """A tensor's shape and dtype as the JSON entry the file keeps."""
    shape = t.shape
    return {"shape": None if shape is None else list(shape), "dtype": t.dtype.name}


__all__ = [
    "DEFAULT_SERVING_SIGNATURE",
    "FORMAT",
    "SAVED_MODEL_FILENAME",
    "VARIABLES_FILENAME",
    "VERSION",
    "SavedModelError",
    "decode_structure",
    "encode_outputs",
    "encode_structure",
    "spec_entry",
    "spec_from",
    "tensor_entry",
]
