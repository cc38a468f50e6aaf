"""TensorFlow's protocol buffer values, to and from plain Python: dtypes, shapes, tensors and
the ``AttrValue`` of a node's attribute.

A rule (``rules.py``) speaks plain Python: a node's TensorFlow attributes are a dict of
``bool``, ``int``, ``float``, ``str``, a ``DType`` (TensorFlow's ``type`` attributes: ``T``,
``DstT``), a ``TfShape`` (a ``shape`` attribute, ``None`` for an unknown size), a NumPy array
(a ``TensorProto``: the ``value`` of a ``Const``), a list of ints (``strides``, ``ksize``), of
``DType``s (``Tin``, ``Tout``), of ``TfShape``s (``output_shapes``) or a ``TfFunc`` (a
function of the GraphDef's library, by name: ``then_branch``, ``body``, ``f``).
This module alone knows the protocol buffers. Their classes come from the ``tensorboard``
package (``tensorboard.compat.proto``: the same ``.proto`` files as TensorFlow's, without
TensorFlow), an optional extra imported only when a function here runs.

A file is untrusted: ``tensor_from_proto`` checks that a tensor's bytes match its shape and
dtype and that it is not absurdly large before it allocates anything.
"""

from __future__ import annotations

import math
from types import ModuleType
from typing import Any, NamedTuple

import numpy as np

from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.errors import InvalidAttrError

EXTRA = "tf-proto"
# a Const of more elements than this is refused (a few bytes of a file could ask for terabytes)
MAX_ELEMENTS = 1 << 28

# TensorFlow's DataType enum, by NumPy's name (its values are fixed by types.proto)
_DT = {
    "float16": "DT_HALF", "float32": "DT_FLOAT", "float64": "DT_DOUBLE", "int8": "DT_INT8",
    "int16": "DT_INT16", "int32": "DT_INT32", "int64": "DT_INT64", "uint8": "DT_UINT8",
    "uint16": "DT_UINT16", "uint32": "DT_UINT32", "uint64": "DT_UINT64", "bool": "DT_BOOL",
}  # fmt: skip
# where a TensorProto keeps values that are not packed into tensor_content
_VALUES_FIELD = {
    "float32": "float_val", "float64": "double_val", "int8": "int_val", "int16": "int_val",
    "int32": "int_val", "uint8": "int_val", "uint16": "int_val", "int64": "int64_val",
    "uint32": "uint32_val", "uint64": "uint64_val", "bool": "bool_val", "float16": "half_val",
}  # fmt: skip


class TfShape(NamedTuple):
    """A TensorFlow ``shape`` attribute: ``dims`` (``None`` for an unknown size), or
    ``dims=None`` for an unknown rank."""

    dims: tuple[int | None, ...] | None


class TfFunc(NamedTuple):
    """A TensorFlow ``func`` attribute: the ``name`` of a FunctionDef of the library."""

    name: str


class TfGraphDefError(InvalidAttrError):
    """A TensorFlow GraphDef that cannot be read as it is: a node's attribute of the wrong
    type or value, a tensor whose bytes do not match its shape. The message names the node
    and the attribute (``attr``)."""


def protos() -> ModuleType:
    """The module of TensorFlow's protocol buffer classes (``graph_pb2``), or an
    ``ImportError`` saying which extra installs it."""
    try:
        from tensorboard.compat.proto import graph_pb2
    except ImportError:
        raise ImportError(
            "TensorFlow GraphDefs need TensorFlow's protocol buffer classes, which the "
            f'tensorboard package ships: pip install "eagerflow-graph[{EXTRA}]"'
        ) from None
    return graph_pb2


def _pb(name: str) -> Any:
    """A submodule of ``tensorboard.compat.proto`` (after ``protos()`` found the package)."""
    protos()
    import importlib

    return importlib.import_module(f"tensorboard.compat.proto.{name}")


# --- dtypes, shapes, tensors ---------------------------------------------------------------------
def dtype_enum(dtype: DType) -> int:
    """TensorFlow's ``DataType`` number of an eagerflow dtype."""
    name = _DT.get(np.dtype(dtype.np).name)
    if name is None:
        raise TypeError(f"TensorFlow has no dtype for {dtype.name}")
    return int(_pb("types_pb2").DataType.Value(name))


def dtype_of(enum: int) -> DType:
    """The eagerflow dtype of TensorFlow's ``DataType`` number; a ``TypeError`` for the
    others (strings, resources, complex numbers...)."""
    types = _pb("types_pb2")
    theirs = types.DataType.Name(enum) if enum in types.DataType.values() else str(enum)
    for ours, name in _DT.items():
        if name == theirs:
            return dtypes.as_dtype(ours)
    raise TypeError(f"eagerflow has no dtype for TensorFlow's {theirs}")


def shape_proto(dims: tuple[int | None, ...] | None) -> Any:
    """A ``TensorShapeProto``: -1 for an unknown size, ``unknown_rank`` for no shape."""
    proto = _pb("tensor_shape_pb2").TensorShapeProto()
    if dims is None:
        proto.unknown_rank = True
    for d in dims or ():
        proto.dim.add(size=-1 if d is None else int(d))
    return proto


def shape_of(proto: Any) -> tuple[int | None, ...] | None:
    """A ``TensorShapeProto`` as a tuple (``None`` for -1), or ``None`` for an unknown rank."""
    if proto.unknown_rank:
        return None
    sizes = [d.size for d in proto.dim]
    if any(s < -1 for s in sizes):
        raise ValueError(f"a shape's sizes are >= -1, got {sizes}")
    return tuple(None if s == -1 else int(s) for s in sizes)


def tensor_proto(array: np.ndarray) -> Any:
    """A ``TensorProto`` holding ``array``'s bytes (little-endian) in ``tensor_content``."""
    array = np.asarray(array)
    proto = _pb("tensor_pb2").TensorProto(dtype=dtype_enum(dtypes.as_dtype(array.dtype.name)))
    proto.tensor_shape.CopyFrom(shape_proto(tuple(array.shape)))
    little = np.ascontiguousarray(array.astype(array.dtype.newbyteorder("<"), copy=False))
    proto.tensor_content = little.tobytes()
    return proto


def tensor_from_proto(proto: Any) -> np.ndarray:
    """The array a ``TensorProto`` holds: its packed ``tensor_content``, or its typed values
    (one value fills the whole tensor, as TensorFlow's splat constants do)."""
    dtype = np.dtype(dtype_of(proto.dtype).np)
    dims = shape_of(proto.tensor_shape)
    if dims is None or any(d is None for d in dims):
        raise ValueError("a tensor's shape must be fully known")
    shape = tuple(int(d or 0) for d in dims)
    size = math.prod(shape)
    if size > MAX_ELEMENTS:
        raise ValueError(f"a tensor of {size} elements is more than the {MAX_ELEMENTS} allowed")
    if proto.tensor_content:
        raw = proto.tensor_content
        if len(raw) != size * dtype.itemsize:
            raise ValueError(
                f"a {dtype} tensor of shape {list(shape)} needs {size * dtype.itemsize} bytes, "
                f"the proto has {len(raw)}"
            )
        return np.frombuffer(raw, dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    values = np.asarray(getattr(proto, _VALUES_FIELD[dtype.name]))
    if dtype == np.float16:  # half_val holds the float16 bits in int32s
        values = values.astype(np.uint16).view(np.float16)
    if values.size not in (1, size) and not (values.size == 0 and size == 0):
        raise ValueError(f"a tensor of shape {list(shape)} has {values.size} values")
    if values.size == 0:
        return np.zeros(shape, dtype)
    return np.broadcast_to(values.astype(dtype), (size,)).reshape(shape).copy()


# --- attributes ----------------------------------------------------------------------------------
def attr_proto(value: Any) -> Any:
    """An ``AttrValue`` holding a rule's plain value (see the module docs)."""
    attr = _pb("attr_value_pb2").AttrValue()
    if isinstance(value, bool):  # (before int: a bool is an int)
        attr.b = value
    elif isinstance(value, int):
        attr.i = value
    elif isinstance(value, float):
        attr.f = value
    elif isinstance(value, str):
        attr.s = value.encode()
    elif isinstance(value, DType):
        attr.type = dtype_enum(value)
    elif isinstance(value, TfShape):
        attr.shape.CopyFrom(shape_proto(value.dims))
    elif isinstance(value, np.ndarray):
        attr.tensor.CopyFrom(tensor_proto(value))
    elif isinstance(value, TfFunc):
        attr.func.name = value.name
    elif isinstance(value, list):
        _list_proto(attr.list, value)
    else:
        raise TypeError(f"no TensorFlow attribute holds {value!r:.60}")
    return attr


def _list_proto(proto: Any, values: list[Any]) -> None:
    """A ``ListValue`` of ints, dtypes or shapes (set even when empty: ``Tin: []`` is a
    value, not a missing attribute)."""
    proto.SetInParent()
    if all(type(v) is int for v in values):
        proto.i.extend(values)
    elif all(isinstance(v, DType) for v in values):
        proto.type.extend(dtype_enum(v) for v in values)
    elif all(isinstance(v, TfShape) for v in values):
        proto.shape.extend(shape_proto(v.dims) for v in values)
    else:
        raise TypeError(f"no TensorFlow list attribute holds {values!r:.60}")


def attr_value(attr: Any) -> Any:
    """An ``AttrValue`` as a plain value (the inverse of ``attr_proto``; a list of strings,
    floats or types comes back as a list of them). Errors are ``ValueError``/``TypeError``."""
    kind = attr.WhichOneof("value")
    if kind == "s":
        return attr.s.decode("utf8", errors="replace")
    if kind in ("i", "f", "b"):
        return {"i": int, "f": float, "b": bool}[kind](getattr(attr, kind))
    if kind == "type":
        return dtype_of(attr.type)
    if kind == "shape":
        return TfShape(shape_of(attr.shape))
    if kind == "tensor":
        return tensor_from_proto(attr.tensor)
    if kind == "func":
        return TfFunc(attr.func.name)
    if kind == "list":
        items = attr.list
        return (
            [int(i) for i in items.i]
            + [float(f) for f in items.f]
            + [s.decode("utf8", errors="replace") for s in items.s]
            + [dtype_of(t) for t in items.type]
            + [TfShape(shape_of(s)) for s in items.shape]
        )
    raise TypeError(f"an attribute of kind {kind!r}, which no rule reads")


__all__ = [
    "EXTRA",
    "MAX_ELEMENTS",
    "TfFunc",
    "TfGraphDefError",
    "TfShape",
    "attr_proto",
    "attr_value",
    "dtype_enum",
    "dtype_of",
    "protos",
    "shape_of",
    "shape_proto",
    "tensor_from_proto",
    "tensor_proto",
]
