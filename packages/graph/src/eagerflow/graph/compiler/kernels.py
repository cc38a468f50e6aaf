"""Pass 3, code generation: a cluster becomes the source of one function.

One table per interpretation, as in JAX's Autodidax, each keyed by the op's name: the
registry holds each op's NumPy kernel (the interpreter's rule); ``ELEMENTWISE`` holds each
fusible op's value for *one element*, as Python that numba compiles, ``REDUCTIONS`` each
fusible reduction's accumulator, and ``INTO_BUFFER`` the call of an op that writes into a
given array (besides NumPy's ufuncs, which all can). A cluster's function is then one loop
nest over its domain; each iteration loads its inputs' elements (index 0 along a broadcast
dimension), computes every member's element, stores those used outside, and hands each
reduction its element::

    def fused_0(n0, a0, a1, a2, o0, scratch):   # err = w * x + b;  o0 = sum(err * err)
        at = 0
        row0 = scratch[at:at + n0]              # the sum's elements, one row of them
        at += n0
        acc0 = 0.0
        e0 = a0                                 # w, 0-d: a scalar
        e2 = a2                                 # b
        for i0 in range(n0):
            e1 = a1[i0]                         # x
            v0 = np.float32(e0 * e1)            # Mul: each value rounded to its dtype,
            v1 = np.float32(v0 + e2)            # AddV2   as the interpreter's arrays are
            v2 = np.float32(v1 * v1)            # Mul
            row0[i0] = v2
        acc0 += row_sum(row0)                   # Sum: added in float64, see _sums_rows
        o0[()] = np.float32(acc0)

Elementwise arithmetic gives the interpreter's bits exactly (each value is rounded to its
dtype, as NumPy's arrays round it); exp, log, tanh and sqrt may differ in the last bit
(numba calls the C library, NumPy its own vectorized code); and a reduction adds in
another order than NumPy's pairwise sums, in float64 before rounding: the same value to
within float32 rounding, usually closer to the exact one.

The source depends on ranks, dtypes, broadcasting pattern and ops, not on sizes: the sizes
``n0, n1, ...`` are arguments, so one compiled loop serves every batch size. Numba caches
what it compiles on disk (``cache=True``), keyed by the source, so a second process skips
the compile; the source files live in ``EAGERFLOW_CACHE_DIR`` (default
``~/.cache/eagerflow/jit``).

A loop's *scratch* arrays, a row of a sum's elements and a reduction's accumulators when
it keeps dimensions (``scratch_shapes``), are views of one float64 array, its last argument:
the memory planner allocates it once, with the buffers, instead of the loop allocating its
arrays at every call. (One array, not one per view: numba's dispatcher takes ~80 ns to
check each array argument, more than allocating a small array inside the loop costs.)

Without numba, the NumPy backend runs each member as its NumPy kernel, writing into a
preallocated buffer (``out=``) when the kernel is a ufunc: no fusion, but no interpreter
loop and no allocation either.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from eagerflow.graph.core.files import atomic_write
from eagerflow.tensor import dtypes
from eagerflow.tensor.dtypes import DType
from eagerflow.tensor.registry import Attrs, OpDef

BACKENDS = ("numba", "numpy")

# Each fusible op's element, as Python: {0}, {1}, {2} are its inputs' elements. The result is
# then rounded to the op's output dtype (``_ROUND``). NaN handling follows NumPy's kernels.
ELEMENTWISE: dict[str, str] = {
    "AddV2": "{0} + {1}",
    "Sub": "{0} - {1}",
    "Mul": "{0} * {1}",
    "RealDiv": "{0} / {1}",
    "Maximum": "{0} if {0} > {1} or {0} != {0} else {1}",  # a NaN wins, as in np.maximum
    "Minimum": "{0} if {0} < {1} or {0} != {0} else {1}",
    "Neg": "-{0}",
    "Abs": "abs({0})",
    "Sign": "np.sign({0})",
    "Square": "{0} * {0}",
    "Sqrt": "np.sqrt({0})",
    "Exp": "np.exp({0})",
    "Log": "np.log({0})",
    "Tanh": "np.tanh({0})",
    "Relu": "{0} if {0} > 0 or {0} != {0} else 0",
    "ReluGrad": "{0} if {1} > 0 else {0} * 0",  # g * (y > 0), with its NaN for g = inf
    "Less": "{0} < {1}",
    "LessEqual": "{0} <= {1}",
    "Greater": "{0} > {1}",
    "GreaterEqual": "{0} >= {1}",
    "Equal": "{0} == {1}",
    "NotEqual": "{0} != {1}",
    "LogicalAnd": "{0} and {1}",
    "LogicalOr": "{0} or {1}",
    "LogicalNot": "not {0}",
    "SelectV2": "{1} if {0} else {2}",
    "Cast": "{0}",  # the rounding to the output dtype is the cast
    "Identity": "{0}",
    "StopGradient": "{0}",
    "BroadcastTo": "{0}",  # the loop's index does the broadcasting
}


@cache
def fast_math_functions() -> bool:
    """Does numba vectorize exp, log and tanh (with Intel's SVML library)?"""
    if not numba_available():
        return False
    import numba

    return bool(getattr(numba.config, "USING_SVML", False))


def fusible(op: OpDef) -> bool:
    """Can ``op`` be computed inside a fused loop, at least as fast as NumPy does it?"""
    if op.name not in ELEMENTWISE and op.name not in REDUCTIONS:
        return False
    # Without Intel's SVML, numba computes exp, log, tanh one element at a time with the C
    # library, 5 to 35 times slower than NumPy's vectorized loops (tanh over 2**20 floats:
    # 13 ms vs 0.4): a cluster is better cut there, and the op run by NumPy between the loops.
    return fast_math_functions() if op.transcendental else True


class Reduction(NamedTuple):
    """A reduction in a fused loop: the accumulator's ``start``, how it ``take``s an element,
    and the result from the accumulator and the count of elements (``finish``). ``adds``:
    it adds its elements up, so a row of them may be summed at once, and an empty one has a
    value (NumPy raises for an empty maximum)."""

    start: str
    take: str
    finish: str = "{acc}"
    adds: bool = False


# Reductions that may end a cluster.
REDUCTIONS: dict[str, Reduction] = {
    "Sum": Reduction("0.0", "{acc} += {x}", adds=True),
    "Mean": Reduction("0.0", "{acc} += {x}", "{acc} / ({count})", adds=True),
    "Max": Reduction("-np.inf", "{acc} = {x} if {x} > {acc} or {x} != {x} else {acc}"),
    "Min": Reduction("np.inf", "{acc} = {x} if {x} < {acc} or {x} != {x} else {acc}"),
}


def _matmul_into(attrs: Attrs, inputs: list[str], out: str) -> str:
    a, b = inputs
    if attrs["transpose_a"]:
        a += ".swapaxes(-1, -2)"
    if attrs["transpose_b"]:
        b += ".swapaxes(-1, -2)"
    return f"np.matmul({a}, {b}, out={out})"


# Ops besides NumPy's ufuncs that can write their result into a given array: the call, from
# the op's attributes, its inputs' names and the array's name.
INTO_BUFFER: dict[str, Callable[[Attrs, list[str], str], str]] = {"MatMul": _matmul_into}

# How a value is rounded to its dtype (the dtypes a fused loop handles).
_ROUND: dict[DType, str] = {
    dtypes.float32: "np.float32({})",
    dtypes.float64: "np.float64({})",
    dtypes.int32: "np.int32({})",
    dtypes.int64: "np.int64({})",
    dtypes.bool_: "bool({})",
}
FUSIBLE_DTYPES = frozenset(_ROUND)


# --- choosing a backend ----------------------------------------------------------------------
@cache
def numba_available() -> bool:
    """True when numba can be imported (``pip install eagerflow-graph[jit]``)."""
    return importlib.util.find_spec("numba") is not None


_told_about_numba = False


def default_backend() -> str:
    """``"numba"`` when installed, else ``"numpy"``, saying so once per process. The
    environment variable ``EAGERFLOW_JIT_BACKEND`` chooses one (tests run both)."""
    global _told_about_numba
    chosen = os.environ.get("EAGERFLOW_JIT_BACKEND")
    if chosen:
        if chosen not in BACKENDS:
            raise ValueError(f"EAGERFLOW_JIT_BACKEND must be one of {BACKENDS}, got {chosen!r}")
        if chosen == "numba" and not numba_available():
            raise ValueError("EAGERFLOW_JIT_BACKEND=numba, but numba is not installed")
        return chosen
    if numba_available():
        return "numba"
    if not _told_about_numba:
        _told_about_numba = True
        warnings.warn(
            "numba is not installed: jit_compile=True runs compiled plans as NumPy calls "
            "into preallocated buffers, without fusing loops (pip install "
            "'eagerflow-graph[jit]' for fused loops)",
            RuntimeWarning,
            stacklevel=3,
        )
    return "numpy"


# --- the numba backend: one loop nest per cluster --------------------------------------------
class LoopSpec:
    """What a cluster's loop needs, in the order its function takes them.

    ``rank``: the domain's rank. ``inputs``: for each input, its dtype and, per dimension,
    whether it runs along the domain (False: size 1, broadcast), right-aligned as NumPy
    aligns shapes. ``members``: (op name, output dtype, operands), an operand being
    ``("in", k)`` (the k-th input) or ``("v", j)`` (the j-th member's value).
    ``stores``: (member, output k) for elementwise values used outside. ``reductions``:
    (member, output k, axes reduced, keepdims)."""

    def __init__(
        self,
        rank: int,
        inputs: Sequence[tuple[DType, tuple[bool, ...]]],
        members: Sequence[tuple[str, DType, tuple[tuple[str, int], ...]]],
        stores: Sequence[tuple[int, int]],
        reductions: Sequence[tuple[int, int, tuple[int, ...], bool]],
    ) -> None:
        self.rank = rank
        self.inputs = list(inputs)
        self.members = list(members)
        self.stores = list(stores)
        self.reductions = list(reductions)


def loop_source(spec: LoopSpec, name: str) -> str:
    """The Python source of ``spec``'s loop nest, a function ``name(n0, ..., a0, ..., o0,
    ..., scratch)`` writing its outputs into the arrays ``o``, with the float64 array that
    holds ``scratch_shapes`` last (if it has any). Written in passes, in the order the
    function runs: the scratch views and accumulators, the loops over the domain, the body
    (each input's element, each member's value, the stores, the reductions' steps), the
    reductions' outputs."""
    rows = _rows(spec)
    body = "    " * (spec.rank + 1)  # the indent inside the innermost loop
    lines = [
        _signature(spec, name),
        *_accumulators(spec),
        *(f"{'    ' * (j + 1)}for i{j} in range(n{j}):" for j in range(spec.rank)),
        *_elementwise(spec, body),
        *_reduction_steps(spec, body, rows),
    ]
    for reduction in spec.reductions:
        lines += _reduction_output(spec, *reduction)
    return "\n".join(lines) + "\n"


def scratch_shapes(spec: LoopSpec, domain: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """The float64 scratch arrays ``spec``'s loop over ``domain`` needs, by name, in the
    order they lie in its scratch argument: a row for each sum along the innermost loop
    (``row<k>``) and an array of accumulators for each reduction that keeps a dimension
    (``acc<k>``). The caller allocates the argument; the loop only overwrites it."""
    return {name: tuple(1 if d == "1" else domain[int(d[1:])] for d in sizes)
            for name, sizes in _scratch_sizes(spec).items()}  # fmt: skip


def _scratch_sizes(spec: LoopSpec) -> dict[str, list[str]]:
    """Each scratch array's shape, as the loop's sizes ``n<j>`` (or ``1``)."""
    sizes = {f"row{k}": [f"n{spec.rank - 1}"] for k in _rows(spec)}
    for _, k, axes, keepdims in spec.reductions:
        kept = _kept(spec.rank, axes, keepdims)
        if kept:
            sizes[f"acc{k}"] = ["1" if j in axes else f"n{j}" for j in kept]
    return sizes


def _scratch_views(spec: LoopSpec) -> list[str]:
    """The scratch arrays, as views one after the other of the ``scratch`` argument."""
    lines = []
    for name, sizes in _scratch_sizes(spec).items():
        size = " * ".join(sizes)
        shape = f".reshape(({', '.join(sizes)}))" if len(sizes) > 1 else ""
        lines += [f"    {name} = scratch[at:at + {size}]{shape}", f"    at += {size}"]
    return ["    at = 0", *lines] if lines else []


def _rows(spec: LoopSpec) -> list[int]:
    """The outputs whose sums go through a scratch row (see ``_sums_rows``)."""
    return [k for m, k, axes, _ in spec.reductions if _sums_rows(spec, m, axes)]


def _signature(spec: LoopSpec, name: str) -> str:
    """``def name(n0, ..., a0, ..., o0, ..., scratch):``: the domain's sizes, the inputs,
    the outputs, the scratch array (if the loop needs one)."""
    n_out = len(spec.stores) + len(spec.reductions)
    scratch = ["scratch"] if _scratch_sizes(spec) else []
    params = [*(f"n{j}" for j in range(spec.rank)), *(f"a{k}" for k in range(len(spec.inputs))),
              *(f"o{k}" for k in range(n_out)), *scratch]  # fmt: skip
    return f"def {name}({', '.join(params)}):"


def _accumulators(spec: LoopSpec) -> list[str]:
    """Before the loops: each reduction's accumulator at its start value (an array of them,
    given as scratch, when it keeps dimensions), and the 0-d inputs (which come as scalars).
    The scratch rows need nothing: each pass of the innermost loop overwrites its element."""
    lines = _scratch_views(spec)
    for m, k, axes, keepdims in spec.reductions:
        start = REDUCTIONS[spec.members[m][0]].start
        if _kept(spec.rank, axes, keepdims):
            lines.append(f"    acc{k}.fill({start})")
        else:
            lines.append(f"    acc{k} = {start}")
    lines += [f"    e{k} = a{k}" for k, (_, along) in enumerate(spec.inputs) if not along]
    return lines


def _elementwise(spec: LoopSpec, indent: str) -> list[str]:
    """In the innermost loop: each input's element, each elementwise member's value rounded
    to its dtype, and the stores of the values used outside the cluster."""
    r = spec.rank
    lines = [
        f"{indent}e{k} = a{k}[{_index(r, along)}]"
        for k, (_, along) in enumerate(spec.inputs)
        if along
    ]
    for j, (op_name, dtype, operands) in enumerate(spec.members):
        if op_name in REDUCTIONS:
            continue
        expression = ELEMENTWISE[op_name].format(*(_operand(o) for o in operands))
        lines.append(f"{indent}v{j} = {_ROUND[dtype].format(expression)}")
    full = _index(r, (True,) * r)
    lines += [f"{indent}o{k}[{full}] = v{m}" for m, k in spec.stores]
    return lines


def _operand(operand: tuple[str, int]) -> str:
    """An operand's variable: ``e<k>``, the k-th input's element, or ``v<j>``, a member's."""
    kind, i = operand
    return f"e{i}" if kind == "in" else f"v{i}"


def _reduction_steps(spec: LoopSpec, indent: str, rows: Sequence[int]) -> list[str]:
    """In the innermost loop: each reduction takes its element into its accumulator (or its
    scratch row, added up after the innermost loop: those lines come last)."""
    lines, row_sums = [], []
    for m, k, axes, keepdims in spec.reductions:
        op_name, _, operands = spec.members[m]
        x = _operand(operands[0])
        kept = _kept(spec.rank, axes, keepdims)
        acc = (
            f"acc{k}[{', '.join('0' if j in axes else f'i{j}' for j in kept)}]"
            if kept
            else f"acc{k}"
        )
        if k in rows:
            lines.append(f"{indent}row{k}[i{spec.rank - 1}] = {x}")
            row_sums.append(f"{indent[:-4]}{acc} += row_sum(row{k})")
        else:
            lines.append(indent + REDUCTIONS[op_name].take.format(acc=acc, x=x))
    return lines + row_sums


def _reduction_output(
    spec: LoopSpec, m: int, k: int, axes: tuple[int, ...], keepdims: bool
) -> list[str]:
    """After the loops: reduction ``k``'s output from its accumulator (a mean divides by the
    count), looping over the dimensions it keeps."""
    op_name, dtype, _ = spec.members[m]
    count = " * ".join(f"n{j}" for j in axes) or "1"
    finish = REDUCTIONS[op_name].finish
    kept = _kept(spec.rank, axes, keepdims)
    if not kept:
        result = finish.format(acc=f"acc{k}", count=count)
        return [f"    o{k}[()] = {_ROUND[dtype].format(result)}"]
    out_index = ", ".join(f"j{d}" for d in range(len(kept)))
    lines, inner = [], "    "
    for d, j in enumerate(kept):
        bound = "1" if j in axes else f"n{j}"
        lines.append(f"{inner}for j{d} in range({bound}):")
        inner += "    "
    value = _ROUND[dtype].format(finish.format(acc=f"acc{k}[{out_index}]", count=count))
    lines.append(f"{inner}o{k}[{out_index}] = {value}")
    return lines


def _sums_rows(spec: LoopSpec, member: int, axes: Sequence[int]) -> bool:
    """Does this sum add along the innermost loop? Then each row's values go to a scratch
    row, added up by ``row_sum`` once the row is done. Adding them one by one into one
    accumulator makes every iteration wait for the previous addition (~4 cycles); a
    finished row can be summed several additions at a time, as NumPy's sums are."""
    return spec.rank > 0 and spec.rank - 1 in axes and REDUCTIONS[spec.members[member][0]].adds


# A row's sum may be reassociated (``fastmath``): added in another order, as NumPy's pairwise
# sums are. Only this function has the flag: the elementwise arithmetic stays exact.
ROW_SUM = """@numba.njit(cache=True, fastmath={"reassoc"})
def row_sum(row):
    total = 0.0
    for i in range(row.shape[0]):  # (an index, not `for x in row`: 4 times faster)
        total += row[i]
    return total
"""


def _kept(rank: int, axes: Sequence[int], keepdims: bool) -> list[int]:
    """The domain dimensions a reduction's output has (reduced ones too, with keepdims)."""
    return [j for j in range(rank) if keepdims or j not in axes]


def _index(rank: int, along: Sequence[bool]) -> str:
    """An input's element at the loop's indices: right-aligned, 0 where it broadcasts."""
    offset = rank - len(along)
    parts = [f"i{offset + d}" if a else "0" for d, a in enumerate(along)]
    return ", ".join(parts) if parts else "()"


_compiled: dict[str, Callable[..., Any]] = {}


def compile_loop(source: str, name: str) -> Callable[..., Any]:
    """``numba.njit`` of the function in ``source`` (compiled once per source per process,
    and cached on disk by numba, since the source is kept in a file named by its hash)."""
    key = f"{name}\n{source}"
    if key not in _compiled:
        digest = hashlib.sha256(key.encode()).hexdigest()[:20]
        helpers = ROW_SUM + "\n\n" if "row_sum(" in source else ""
        loop = "@numba.njit(cache=True, error_model='numpy')\n" + source
        text = "import numpy as np\nimport numba\n\n\n" + helpers + loop
        module = _module_from_file(f"eagerflow_jit_{digest}", text)
        _compiled[key] = getattr(module, name)
    return _compiled[key]


def _cache_dir() -> Path:
    configured = os.environ.get("EAGERFLOW_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "eagerflow" / "jit"


def _module_from_file(module_name: str, source: str) -> Any:
    """Import ``source`` as a module from a file of the cache directory (written atomically,
    once): numba caches only functions that live in files."""
    directory = _cache_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / f"{module_name}.py"
        if not path.exists() or path.read_text() != source:
            with atomic_write(path) as file:
                file.write(source)
    except OSError:  # no writable cache: compile in memory, without numba's disk cache
        namespace: dict[str, Any] = {}
        exec(compile(source.replace("cache=True", "cache=False"), module_name, "exec"), namespace)
        return _Namespace(namespace)
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # numba's disk cache finds the module by its name
    spec.loader.exec_module(module)
    return module


class _Namespace:
    def __init__(self, names: dict[str, Any]) -> None:
        self.__dict__.update(names)


__all__ = [
    "BACKENDS",
    "ELEMENTWISE",
    "FUSIBLE_DTYPES",
    "INTO_BUFFER",
    "REDUCTIONS",
    "LoopSpec",
    "Reduction",
    "compile_loop",
    "default_backend",
    "fast_math_functions",
    "fusible",
    "loop_source",
    "numba_available",
    "scratch_shapes",
]
