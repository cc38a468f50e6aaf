"""Limits on import (``eagerflow.graph.export.limits``): nesting depth, library recursion,
file size and variable bytes are refused before anything is parsed deeper or allocated, and
so are symlinks out of a SavedModel folder and ``..`` in names. Every refusal is an
``InvalidAttrError`` naming the file, the node or variable, and the attribute."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import (
    Graph,
    TensorSpec,
    function,
    get_default_graph,
    import_graph_def,
    read_graph_def,
    saved_model,
)
from eagerflow.graph.export import limits
from eagerflow.graph.export.graph_def import functions_as_graph_def
from eagerflow.graph.export.graph_def_import import import_functions
from eagerflow.nn import Checkpoint
from eagerflow.nn.checkpoint import CheckpointError
from eagerflow.tensor.errors import InvalidAttrError

HUGE = [1_000_000, 1_000_000]  # 4 TB of float32


def _graph_def() -> dict[str, Any]:
    g = Graph()
    with g.as_default():
        ef.constant(1.0, name="c")
    return g.as_graph_def()


def _saved(tmp_path: Path) -> Path:
    w = Variable(np.ones(3, np.float32), name="w")

    @function(input_signature=[TensorSpec((3,), ef.float32)])
    def predict(x: ef.Tensor) -> ef.Tensor:
        return inner(x) * w

    @function(input_signature=[TensorSpec((3,), ef.float32)])
    def inner(x: ef.Tensor) -> ef.Tensor:
        return x + 1.0

    path = tmp_path / "m"
    saved_model.save(predict, path)
    return path


def _edit(path: Path, change: Any) -> None:
    document_path = path / "saved_model.json"
    document = json.loads(document_path.read_text())
    change(document)
    document_path.write_text(json.dumps(document))


# --- nesting and size -------------------------------------------------------------------------
def test_json_nested_past_the_recursion_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InvalidAttrError, match=r"deep.json: nesting: JSON nested deeper") as e:
        read_graph_def(path)
    assert e.value.attr == "nesting"


def test_json_nested_past_max_depth_is_refused(tmp_path: Path) -> None:
    graph_def = _graph_def()
    deep: Any = 1
    for _ in range(limits.MAX_DEPTH + 1):
        deep = [deep]
    graph_def["node"][0]["attr"]["extra"] = deep
    with pytest.raises(InvalidAttrError, match=r"nesting: deeper than the limit MAX_DEPTH"):
        import_graph_def(graph_def)  # a dict given directly
    (tmp_path / "g.json").write_text(json.dumps(graph_def))
    with pytest.raises(InvalidAttrError, match=r"g.json: nesting"):
        read_graph_def(tmp_path / "g.json")


def test_a_file_past_the_size_limit_is_refused_unread(tmp_path: Path, monkeypatch: Any) -> None:
    path = _saved(tmp_path)
    monkeypatch.setattr(limits, "MAX_FILE_BYTES", 100)
    with pytest.raises(saved_model.SavedModelError, match=r"saved_model.json: size: \d+ bytes"):
        saved_model.load(path)


# --- the library ------------------------------------------------------------------------------
def test_a_library_function_calling_itself_is_refused() -> None:
    @function(input_signature=[TensorSpec((), ef.float32)])
    def double(x: ef.Tensor) -> ef.Tensor:
        return x * 2.0

    @function(input_signature=[TensorSpec((), ef.float32)])
    def f(x: ef.Tensor) -> ef.Tensor:
        return double(x) + 1.0

    graph_def, _, _ = functions_as_graph_def({"f": f.get_concrete_function()})
    nodes = graph_def["library"]["graphs"]["f"]["node"]
    (call,) = [n for n in nodes if "function" in n.get("attr", {})]
    call["attr"]["function"] = {"function": "f"}  # f calls f
    with pytest.raises(InvalidAttrError, match=r"function 'f': library: uses itself: f -> f"):
        import_functions(graph_def, ["f"], lambda *args: None)  # type: ignore[arg-type, return-value]


def test_a_saved_model_whose_library_loops_is_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path)

    def loop(document: dict[str, Any]) -> None:
        graphs = document["graph_def"]["library"]["graphs"]
        for graph in graphs.values():
            for node in graph["node"]:
                if "function" in node.get("attr", {}):
                    node["attr"]["function"] = {"function": "predict"}

    _edit(path, loop)
    with pytest.raises(InvalidAttrError, match=r"saved_model.json: .*library: uses itself"):
        saved_model.load(path)


def test_graphs_whose_outers_loop_are_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path)

    def loop(document: dict[str, Any]) -> None:
        graphs = document["graph_def"]["library"]["graphs"]
        first, second = list(graphs)[:2]
        graphs[first]["outer"], graphs[second]["outer"] = second, first

    _edit(path, loop)
    with pytest.raises(InvalidAttrError, match=r"library: uses itself"):
        saved_model.load(path)


# --- variable bytes ---------------------------------------------------------------------------
def test_a_huge_variable_is_refused_before_anything_is_built() -> None:
    graph_def = _graph_def()
    graph_def["variables"] = {"v:0": {"name": "v:0", "shape": HUGE, "dtype": "float32"}}
    with pytest.raises(InvalidAttrError, match=r"variable 'v:0': shape: .*MAX_VARIABLE_BYTES"):
        import_graph_def(graph_def)
    assert get_default_graph().get_operations() == []


def test_a_huge_variable_in_a_saved_model_is_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    _edit(path, lambda d: d["graph_def"]["variables"]["w:0"].update(shape=HUGE))
    with pytest.raises(InvalidAttrError, match=r"variable 'w:0': shape: .*MAX_VARIABLE_BYTES"):
        saved_model.load(path)


def _npz_claiming(members: dict[str, tuple[int, ...]]) -> bytes:
    """An .npz archive whose members' headers claim ``shape`` but hold 12 bytes each."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, shape in members.items():
            npy = io.BytesIO()
            header = {"descr": "<f4", "fortran_order": False, "shape": shape}
            np.lib.format.write_array_header_1_0(npy, header)  # type: ignore[attr-defined]
            archive.writestr(name, npy.getvalue() + b"\0" * 12)
    return buffer.getvalue()


def test_a_values_file_claiming_a_huge_array_is_refused_unallocated(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    (path / "variables" / "variables.npz").write_bytes(_npz_claiming({"w:0.npy": tuple(HUGE)}))
    with pytest.raises(InvalidAttrError, match=r"variables.npz: variable 'w:0': shape: "):
        saved_model.load(path)
    (path / "variables" / "variables.npz").write_bytes(_npz_claiming({"w:0.npy": (1000,)}))
    with pytest.raises(InvalidAttrError, match=r"'w:0.npy': shape: \[1000\] .* the member's"):
        saved_model.load(path)


def test_a_checkpoint_claiming_a_huge_array_is_refused_unallocated(tmp_path: Path) -> None:
    path = tmp_path / "ckpt"
    path.write_bytes(_npz_claiming({"v.npy": tuple(HUGE)}))
    with pytest.raises(CheckpointError, match=r"variable 'v': shape: .*MAX_VARIABLE_BYTES"):
        Checkpoint(v=Variable(np.zeros(3, np.float32))).restore(path)


# --- paths ------------------------------------------------------------------------------------
def test_a_symlinked_variables_folder_leading_out_is_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    outside = tmp_path / "outside"
    os.rename(path / "variables", outside)
    os.symlink(outside, path / "variables")
    with pytest.raises(InvalidAttrError, match=r"variables: .* leading out of the SavedModel"):
        saved_model.load(path)


def test_a_symlinked_document_leading_out_is_refused(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    outside = tmp_path / "elsewhere.json"
    os.rename(path / "saved_model.json", outside)
    os.symlink(outside, path / "saved_model.json")
    with pytest.raises(InvalidAttrError, match=r"saved_model.json: .* leading out"):
        saved_model.load(path)


def test_dot_dot_in_a_variable_name_is_refused_on_save_and_load(tmp_path: Path) -> None:
    w = Variable(np.ones(3, np.float32), name="../../evil")

    @function(input_signature=[TensorSpec((3,), ef.float32)])
    def predict(x: ef.Tensor) -> ef.Tensor:
        return x * w

    with pytest.raises(InvalidAttrError, match=r"name: '../../evil:0' leaves its folder"):
        saved_model.save(predict, tmp_path / "m")
    assert not (tmp_path / "m").exists()
    graph_def = _graph_def()
    graph_def["variables"] = {"../v:0": {"name": "v:0", "shape": [2], "dtype": "float32"}}
    with pytest.raises(InvalidAttrError, match=r"variable '../v:0': name: .*leaves its folder"):
        import_graph_def(graph_def)


def test_dot_dot_in_a_checkpoint_key_is_refused(tmp_path: Path) -> None:
    v = Variable(np.zeros(3, np.float32))
    with pytest.raises(InvalidAttrError, match=r"name: '../v' leaves its folder"):
        Checkpoint(**{"../v": v}).save(tmp_path / "ckpt")
    assert list(tmp_path.iterdir()) == []
    evil = tmp_path / "evil"
    with zipfile.ZipFile(evil, "w") as archive:
        archive.writestr("../v.npy", b"")
    with pytest.raises(CheckpointError, match=r"member '../v.npy': name: .*leaves its folder"):
        Checkpoint(v=v).restore(evil)
