"""Chapter 14 exercises — run `.venv/bin/pytest -m ch14`.

Why graphs: a graph is data. The encoder that writes an op's attributes as JSON data (and
reads them back, every bit), a saved function that still reports its calls after it is
loaded, and (a stretch) an exporter that turns a GraphDef into a function that needs only
NumPy.

Reference solutions: the same functions as `exercises/ch14.py`, solved.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.graph import Function, TensorSpec, function
from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import DType


def encode_attr(value: Any) -> Any:
    """★★ ``value``, an op attribute, as JSON data: what ``json.dumps`` can write *strictly*
    (``allow_nan=False``), and what ``decode_attr`` turns back into the very same value.

    This is a part of the chapter's GraphDef format (the module docstring of
    ``packages/graph/src/eagerflow/graph/export/graph_def.py``), and the test checks that the
    chapter's own ``decode_attr`` reads what you write. The values to handle, and how each
    is written:

    - ``None``, ``True``/``False``, an ``int``, a ``str``: themselves;
    - a ``float``: itself if it is finite (``json`` writes every digit a float needs, and
      ``-0.0`` keeps its sign); ``nan``, ``inf`` and ``-inf`` are not JSON, so they are
      ``{"float": "nan"}``, ``{"float": "inf"}``, ``{"float": "-inf"}``;
    - a ``tuple`` (a shape such as ``(None, 2)``): a JSON array of its items, encoded;
    - a ``list``: ``{"list": [...]}`` of its items, encoded (JSON has one kind of array, and
      the tuple took it);
    - a ``DType`` (``ef.float32``): ``{"dtype": "float32"}``;
    - a NumPy array: ``{"tensor": {"dtype": "float32", "shape": [2, 1], "base64": "..."}}``,
      its raw bytes in little-endian order, in base64 (``base64.b64encode(...).decode()``).
      Bytes, not decimal digits: NaN payloads, ``-0.0`` and int64 extremes must come back
      bit for bit.

    Anything else is a ``TypeError``.

    Args:
        value: One attribute value, perhaps nested (tuples and lists of the above).

    Returns:
        JSON data: dicts with str keys, lists, str, int, finite float, bool, None.

    Hint 1:
        One branch per kind of value, and a recursive call for the items of a tuple or a list.

    Hint 2:
        The order of the tests matters: ``bool`` before ``int`` (``True`` is an ``int`` too),
        and non-finite floats before finite ones.

    Hint 3:
        An array: ``{"tensor": {"dtype": a.dtype.name, "shape": list(a.shape), "base64":
        base64.b64encode(little.tobytes()).decode()}}`` with ``little =
        a.astype(a.dtype.newbyteorder("<"))``. A ``DType``: ``{"dtype": value.name}``. Anything
        else: ``raise TypeError``.
    """
    if value is None or isinstance(value, bool | str) or type(value) is int:
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}  # "nan", "inf", "-inf"
    if isinstance(value, tuple):
        return [encode_attr(item) for item in value]
    if isinstance(value, list):
        return {"list": [encode_attr(item) for item in value]}
    if isinstance(value, DType):
        return {"dtype": value.name}
    if isinstance(value, np.ndarray):
        little = value.astype(value.dtype.newbyteorder("<"), copy=False)
        return {
            "tensor": {
                "dtype": value.dtype.name,
                "shape": list(value.shape),
                "base64": base64.b64encode(little.tobytes()).decode("ascii"),
            }
        }
    raise TypeError(f"an attribute cannot be a {type(value).__name__}: {value!r:.60}")


def decode_attr(data: Any) -> Any:
    """★★ The inverse of ``encode_attr``: JSON data (as ``json.loads`` gives it back) to the
    attribute's Python value, with its type (a tuple stays a tuple, a list a list, ``True``
    stays ``True``, an ``int`` an ``int``) and, for floats and arrays, its every bit. An array
    comes back with its dtype and shape, in native byte order, writable.

    The test also gives it what the chapter's own encoder writes
    (``eagerflow.graph.export.graph_def.encode_attr``) for these kinds of values.

    Args:
        data: What ``encode_attr`` returned, after ``json.loads(json.dumps(...))``.

    Returns:
        The attribute value.

    Hint 1:
        The mirror of ``encode_attr``: a JSON array was a tuple, a dict says with its one key
        what it was, anything else is itself.

    Hint 2:
        ``((kind, payload),) = data.items()`` unpacks a one-key dict. Decode the items of tuples
        and lists again (they may be nested).

    Hint 3:
        A tensor: ``np.frombuffer(raw, np.dtype(name).newbyteorder("<"))`` reads the bytes
        (read-only, 1-d): ``.reshape(shape).astype(np.dtype(name))`` makes the native, writable
        array. ``dtypes.as_dtype("float32")`` is ``ef.float32``.
    """
    if data is None or isinstance(data, bool | str | int | float):
        return data
    if isinstance(data, list):
        return tuple(decode_attr(item) for item in data)
    ((kind, payload),) = data.items()
    if kind == "float":
        return float(payload)
    if kind == "list":
        return [decode_attr(item) for item in payload]
    if kind == "dtype":
        return dtypes.as_dtype(payload)
    if kind == "tensor":
        dtype = np.dtype(payload["dtype"])
        raw = base64.b64decode(payload["base64"])
        little = np.frombuffer(raw, dtype.newbyteorder("<")).reshape(payload["shape"])
        return little.astype(dtype)
    raise ValueError(f"not an encoded attribute: {data!r:.60}")


def reporting_square() -> Function:
    """★ A traced function that squares a vector and *reports each call*, even after it has
    been saved with ``saved_model.save`` and loaded in a program without its Python code.

    Return a ``function`` with the input signature ``[TensorSpec((None,), ef.float32)]``
    that returns ``y = x * x`` and, every time it runs, prints the line that
    ``ef.print("squares:", y)`` prints for that call's ``y`` (to ``sys.stderr``, as
    ``ef.print`` does).

    A Python ``print`` will not do. It runs while the function is traced, once, in the
    process that saves it, and shows a symbolic tensor; the loaded function runs only the
    graph, and the graph has no node for it. The test saves your function, loads it, calls
    the loaded one on vectors of its own and reads what each call printed.

    Returns:
        The ``Function``.

    Hint 1:
        A Python ``print`` runs once, while tracing; the loaded function runs only the graph.

    Hint 2:
        ``ef.print`` is an op (``PrintV2``), a node of the graph, kept in order by the automatic
        control dependencies although nothing uses its result (chapter 10, "``print`` or
        ``ef.print``").

    Hint 3:
        ``@function(input_signature=[TensorSpec((None,), ef.float32)])`` on a ``square(x)`` that
        computes ``y = x * x``, calls ``ef.print("squares:", y)`` and returns ``y``.
    """

    @function(input_signature=[TensorSpec((None,), ef.float32)])
    def square(x: Any) -> Any:
        y = x * x
        ef.print("squares:", y)  # an op: it runs whenever the graph runs
        return y

    return square


# Each op's value in NumPy, for numpy_source: {0}, {1} are its inputs, {axis} … its attributes.
NUMPY = {
    "AddV2": "{0} + {1}",
    "Sub": "{0} - {1}",
    "Mul": "{0} * {1}",
    "RealDiv": "{0} / {1}",
    "Maximum": "np.maximum({0}, {1})",
    "Neg": "-{0}",
    "Square": "np.square({0})",
    "Exp": "np.exp({0})",
    "Log": "np.log({0})",
    "Tanh": "np.tanh({0})",
    "Relu": "np.maximum({0}, 0)",
    "Sum": "np.sum({0}, axis={axis!r}, keepdims={keepdims!r})",
    "Mean": "np.mean({0}, axis={axis!r}, keepdims={keepdims!r})",
    "Reshape": "np.reshape({0}, {shape!r})",
    "Transpose": "np.transpose({0}, {perm!r})",
}


def _literal(value: Any) -> str:
    """Python source for ``value`` (of an array's ``tolist()``): its ``repr``, but for the
    floats that have no literal, ``inf`` and ``nan``, which are NumPy's names."""
    if isinstance(value, list):
        return "[" + ", ".join(_literal(item) for item in value) + "]"
    if isinstance(value, float) and not math.isfinite(value):
        return "np.nan" if math.isnan(value) else "np.inf" if value > 0 else "-np.inf"
    return repr(value)


def numpy_source(graph_def: dict[str, Any], fetches: Sequence[str]) -> str:
    """★★★ Stretch: an exporter. A GraphDef as the source of a function that needs only
    NumPy: a graph that runs where eagerflow is not.

    ONNX Runtime ran the chapter's classifier without eagerflow, because it knows every op
    of the ONNX file. Make NumPy the runtime: return the source of a function:

        def run(feeds):
            ...
            return [...]

    that computes the tensors named in ``fetches`` (``"add:0"``) from ``feeds``, a dict
    from each placeholder's name (``"x"``) to a NumPy array. The test executes your source
    with ``np`` as its only global and ``import`` refused, calls ``run`` on inputs of its
    own, and compares each result, its values, shape and dtype, with a Session running the
    original graph.

    Translate the def's nodes in order, one rule per op type, as
    ``eagerflow.graph.onnx`` does for ONNX. The test's graphs use these ops, each with one
    output, and the attributes named (as the def writes them: ``decode_attr``, yours from
    above, reads them):

    - ``Placeholder``: ``feeds[name]``. ``Const``: its ``value``, an array, which the
      source must hold itself (write its numbers and its dtype; ``inf``, ``-inf`` and
      ``nan`` among them too);
    - ``AddV2``, ``Sub``, ``Mul``, ``RealDiv``, ``Maximum``: broadcasting as NumPy does;
    - ``Neg``, ``Square``, ``Exp``, ``Log``, ``Tanh``, ``Relu``;
    - ``MatMul`` (``transpose_a``, ``transpose_b``);
    - ``Sum`` and ``Mean`` (``axis``: an int, a tuple or None; ``keepdims``);
    - ``Reshape`` (``shape``) and ``Transpose`` (``perm``).

    Args:
        graph_def: A GraphDef without variables, as ``json.loads`` gives it back.
        fetches: Names of tensors of the def, ``"node:0"``.

    Returns:
        Python source defining ``run(feeds)``, which returns one array per fetch, in order.

    Hint 1:
        One line per node: a local variable for its output, computed from its inputs'
        variables. Node names are not always Python names (``"dense/MatMul"``): number the
        variables ``v0``, ``v1``, … and keep a dict from tensor name to variable.

    Hint 2:
        A table from op type to a format string, ``"AddV2": "{0} + {1}"``, ``"Sum":
        "np.sum({0}, axis={axis!r}, keepdims={keepdims!r})"``, filled with the inputs'
        variables and the decoded attributes. A constant is ``np.array({list!r},
        {dtype!r})`` of ``value.tolist()`` and ``value.dtype.name``; but ``repr`` writes
        ``inf`` and ``nan`` as bare names that the source does not define: write those
        numbers as ``np.inf``, ``-np.inf`` and ``np.nan`` (a small recursive function over
        the nested lists).

    Hint 3:
        ``Relu`` is ``np.maximum({0}, 0)``; ``MatMul``'s ``transpose_a`` swaps the last two
        axes of its first input, ``np.swapaxes({0}, -1, -2)``, before ``np.matmul``.
    """
    lines = ["def run(feeds):"]
    variables: dict[str, str] = {}  # tensor name -> the local variable holding its value
    for k, node in enumerate(graph_def["node"]):
        attrs = {key: decode_attr(value) for key, value in node.get("attr", {}).items()}
        args = [variables[name] for name in node.get("input", [])]
        if node["op"] == "Placeholder":
            expression = f"np.asarray(feeds[{node['name']!r}])"
        elif node["op"] == "Const":
            value = attrs["value"]
            expression = f"np.array({_literal(value.tolist())}, {value.dtype.name!r})"
        elif node["op"] == "MatMul":
            a, b = args
            a = f"np.swapaxes({a}, -1, -2)" if attrs["transpose_a"] else a
            b = f"np.swapaxes({b}, -1, -2)" if attrs["transpose_b"] else b
            expression = f"np.matmul({a}, {b})"
        else:
            expression = NUMPY[node["op"]].format(*args, **attrs)
        lines.append(f"    v{k} = {expression}")
        variables[f"{node['name']}:0"] = f"v{k}"
    lines.append(f"    return [{', '.join(variables[name] for name in fetches)}]")
    return "\n".join(lines) + "\n"
