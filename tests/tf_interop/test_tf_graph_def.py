"""TensorFlow's GraphDef files, both ways (``eagerflow.graph.tf_graph_def``).

- TensorFlow -> eagerflow: the frozen MLP and CNN that ``make_fixtures.py`` made with
  TensorFlow import and run in a Session with TensorFlow's recorded outputs.
- eagerflow -> TensorFlow: the FizzBuzz MLP, digits CNN and linear regression of
  ``models.py``, written as ``.pb``, gave in TensorFlow the outputs ``record.py`` recorded in
  ``tensorflow_outputs.json``; with ``EAGERFLOW_TF_PYTHON`` (a Python that has TensorFlow) the
  test runs TensorFlow on today's files too.
- Strictness: unknown ops all listed at once, bad attributes named, no protos -> ImportError.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
sys.path.insert(0, str(HERE))

pytest.importorskip("tensorboard.compat.proto.graph_pb2")

import models  # noqa: E402
import record  # noqa: E402

import eagerflow.graph as g  # noqa: E402
import eagerflow.tensor as ef  # noqa: E402
from eagerflow.autodiff import GradientTape  # noqa: E402
from eagerflow.graph import TensorSpec, function, tf_graph_def  # noqa: E402
from eagerflow.graph.export.tf_graph_def.protos import tensor_proto  # noqa: E402
from eagerflow.tensor.errors import InvalidAttrError  # noqa: E402

FROZEN = json.loads((FIXTURES / "frozen.json").read_text())["models"]
RECORDED = json.loads((HERE / "tensorflow_outputs.json").read_text())["models"]
TOLERANCE = 1e-5  # float32 sums in another order (TensorFlow's Eigen kernels, our BLAS)


def _run_imported(source, name: str, inputs: np.ndarray) -> np.ndarray:
    graph = g.Graph()
    with graph.as_default():
        x, y = tf_graph_def.import_graph_def(
            source, return_elements=[FROZEN[name]["input"], FROZEN[name]["output"]]
        )
        with g.Session() as session:
            return session.run(y, {x: inputs})


# --- TensorFlow -> eagerflow ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["mlp", "cnn", "control"])
@pytest.mark.parametrize("suffix", [".pb", ".pbtxt"])
def test_a_tensorflow_frozen_model_runs_in_a_session(name: str, suffix: str) -> None:
    inputs = np.load(FIXTURES / f"{name}_input.npy")
    ours = _run_imported(FIXTURES / f"{name}{suffix}", name, inputs)
    theirs = np.load(FIXTURES / f"{name}_output.npy")
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=TOLERANCE)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype


def test_the_fixtures_use_the_ops_the_issue_names() -> None:
    used = set(FROZEN["mlp"]["ops"]) | set(FROZEN["cnn"]["ops"])
    assert {"Conv2D", "MaxPool", "BiasAdd", "Relu", "MatMul", "Softmax", "Reshape",
            "Identity", "Const"} <= used  # fmt: skip


def test_the_control_fixture_keeps_its_functions_in_the_library() -> None:
    assert {"StatelessIf", "StatelessWhile", "PartitionedCall"} <= set(FROZEN["control"]["ops"])
    library = _frozen("control").library.function
    assert len(library) >= 5  # both branches of each cond, the loop's cond and body, the call


@pytest.mark.parametrize(
    "renames", [{"StatelessIf": "If", "StatelessWhile": "While",
                 "PartitionedCall": "StatefulPartitionedCall"}]
)  # fmt: skip
def test_the_stateful_spellings_read_as_the_stateless_ones(renames) -> None:
    """TensorFlow writes ``If``, ``While`` and ``StatefulPartitionedCall`` when a function
    has state; with the same functions they compute the same."""
    proto = _frozen("control")
    for node in [*proto.node, *(n for f in proto.library.function for n in f.node_def)]:
        node.op = renames.get(node.op, node.op)
    assert {n.op for n in proto.node} >= {"If", "While", "StatefulPartitionedCall"}
    inputs = np.load(FIXTURES / "control_input.npy")
    ours = _run_imported(proto, "control", inputs)
    np.testing.assert_allclose(ours, np.load(FIXTURES / "control_output.npy"), atol=TOLERANCE)


def test_unknown_ops_inside_functions_are_listed_with_the_others() -> None:
    proto = _frozen("control")
    body = _function(proto, "while_body")
    _node(body, "AddV2").op = "Relu6"
    _node(proto, "Sum").op = "EuclideanNorm"
    with pytest.raises(tf_graph_def.UnknownTfOpError) as caught:
        tf_graph_def.read(proto)
    assert set(caught.value.ops) == {"Relu6", "EuclideanNorm"}


def test_a_function_missing_from_the_library_is_named() -> None:
    proto = _frozen("control")
    _node(proto, "StatelessIf").attr["then_branch"].func.name = "nowhere"
    with pytest.raises(tf_graph_def.TfGraphDefError, match="'nowhere'"):
        tf_graph_def.read(proto)


def _function(proto, prefix: str):
    """The FunctionDef named ``prefix`` and TensorFlow's number (``while_cond_23``)."""
    pattern = re.compile(rf"{prefix}_\d+")
    return next(f for f in proto.library.function if pattern.fullmatch(f.signature.name))


def test_a_reference_to_another_output_argument_is_refused() -> None:
    """``Less`` returns ``z``: ``Less:output:0`` names nothing (eagerflow would otherwise
    take its index alone)."""
    proto = _frozen("control")
    cond = _function(proto, "while_cond")
    identity = _node(cond, "Identity")
    identity.input[0] = identity.input[0].replace(":z:", ":output:")
    with pytest.raises(tf_graph_def.TfGraphDefError, match="Less"):
        tf_graph_def.read(proto)


def test_a_function_without_a_returned_tensor_is_named() -> None:
    proto = _frozen("control")
    body = _function(proto, "while_body")
    del body.ret[body.signature.output_arg[0].name]
    with pytest.raises(tf_graph_def.TfGraphDefError, match="ret"):
        tf_graph_def.read(proto)


@pytest.mark.timeout(60)
def test_a_function_that_calls_itself_is_refused() -> None:
    """A branch whose If runs the branch again would never end: refused before it runs."""
    proto = _frozen("control")
    then = _function(proto, "cond_true")
    node = then.node_def.add(name="again", op="StatelessIf", input=[f"{then.node_def[0].name}"])
    node.attr["then_branch"].func.name = then.signature.name
    node.attr["else_branch"].func.name = then.signature.name
    with g.Graph().as_default(), pytest.raises(ef.InvalidArgumentError, match="uses itself"):
        tf_graph_def.import_graph_def(proto)


def _frozen(name: str):
    from tensorboard.compat.proto import graph_pb2

    return graph_pb2.GraphDef.FromString((FIXTURES / f"{name}.pb").read_bytes())


def _node(proto, op: str):
    """The first node of type ``op`` of a GraphDef or of a FunctionDef."""
    nodes = proto.node_def if hasattr(proto, "node_def") else proto.node
    return next(n for n in nodes if n.op == op)


def test_every_unknown_op_is_listed_at_once() -> None:
    proto = _frozen("cnn")
    _node(proto, "Relu").op = "Relu6"
    _node(proto, "MaxPool").op = "FractionalMaxPool"
    with pytest.raises(tf_graph_def.UnknownTfOpError) as caught:
        tf_graph_def.read(proto)
    assert set(caught.value.ops) == {"Relu6", "FractionalMaxPool"}
    assert "Relu6" in str(caught.value) and "FractionalMaxPool" in str(caught.value)


def test_an_attribute_of_the_wrong_type_names_the_node_and_the_attribute() -> None:
    proto = _frozen("cnn")
    conv = _node(proto, "Conv2D")
    conv.attr["padding"].Clear()
    conv.attr["padding"].i = 3
    with pytest.raises(tf_graph_def.TfGraphDefError) as caught:
        tf_graph_def.read(proto)
    assert caught.value.attr == "padding" and repr(conv.name) in str(caught.value)


@pytest.mark.parametrize(("attr", "value"), [("data_format", b"NCHW"), ("padding", b"EXPLICIT")])
def test_what_eagerflow_does_not_have_is_refused_by_name(attr: str, value: bytes) -> None:
    proto = _frozen("cnn")
    _node(proto, "Conv2D").attr[attr].s = value
    with pytest.raises(tf_graph_def.TfGraphDefError, match=attr):
        tf_graph_def.read(proto)


def test_the_op_rows_check_what_the_rules_read() -> None:
    """A stride of 0 is a well-typed TensorFlow attribute; Conv2D's row refuses it, before
    anything is built, naming the node."""
    proto = _frozen("cnn")
    conv = _node(proto, "Conv2D")
    del conv.attr["strides"].list.i[:]
    conv.attr["strides"].list.i.extend([1, 0, 0, 1])
    graph = g.Graph()
    with graph.as_default(), pytest.raises(InvalidAttrError, match=conv.name):
        tf_graph_def.import_graph_def(proto)
    assert not graph.get_operations()


def test_a_tensor_whose_bytes_do_not_match_its_shape_is_refused() -> None:
    proto = _frozen("mlp")
    const = next(n for n in proto.node if n.op == "Const" and n.attr["value"].tensor.tensor_content)
    const.attr["value"].tensor.tensor_content = b"\0" * 5
    with pytest.raises(tf_graph_def.TfGraphDefError, match="bytes"):
        tf_graph_def.read(proto)


def test_a_shape_input_must_be_a_constant() -> None:
    proto = _frozen("cnn")
    reshape = _node(proto, "Reshape")
    reshape.input[1] = reshape.input[0]
    with pytest.raises(tf_graph_def.TfGraphDefError, match="Const"):
        tf_graph_def.read(proto)


def test_garbage_is_not_a_graph_def(tmp_path) -> None:
    path = tmp_path / "junk.pb"
    path.write_bytes(b"\xff\xff\xff\xff")
    with pytest.raises(tf_graph_def.TfGraphDefError):
        tf_graph_def.read(path)


# --- eagerflow -> TensorFlow ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tf_interop")
    return folder, models.export_all(folder)


def _outputs(model, inputs) -> list[np.ndarray]:
    ours = model(*inputs)
    return [np.asarray(v) for v in (ours if isinstance(ours, tuple | list) else (ours,))]


NAMES = sorted(models.MODELS) + [f"op_{n}" for n in sorted(models.OP_CASES)]


@pytest.mark.parametrize("name", NAMES)
def test_tensorflow_gave_our_outputs_for_our_graph_def(exported, name: str) -> None:
    """Recorded by ``record.py``: TensorFlow ran this very ``.pb`` (the same bytes)."""
    _, built = exported
    model, inputs, sha = built[name]
    assert sha == RECORDED[name]["pb_sha256"], "the .pb changed: make tf-interop-record"
    for value, theirs in zip(_outputs(model, inputs), RECORDED[name]["outputs"], strict=True):
        expected = np.asarray(theirs["value"], theirs["dtype"])
        assert value.dtype == expected.dtype and value.shape == expected.shape
        np.testing.assert_allclose(value, expected, rtol=TOLERANCE, atol=TOLERANCE)


@pytest.mark.skipif(
    not os.environ.get("EAGERFLOW_TF_PYTHON"), reason="EAGERFLOW_TF_PYTHON names no Python with TF"
)
@pytest.mark.timeout(300)
def test_tensorflow_runs_our_graph_defs_now(exported) -> None:
    folder, built = exported
    ran = record.run_in_tensorflow(folder, os.environ["EAGERFLOW_TF_PYTHON"])
    for name, (model, inputs, _) in built.items():
        for value, theirs in zip(_outputs(model, inputs), ran["outputs"][name], strict=True):
            assert value.dtype.name == theirs["dtype"], name
            np.testing.assert_allclose(value, theirs["value"], rtol=TOLERANCE, atol=TOLERANCE)


@pytest.mark.parametrize("name", NAMES)
def test_our_graph_def_reads_back_into_eagerflow(exported, name: str) -> None:
    folder, built = exported
    model, inputs, _ = built[name]
    graph = g.Graph()
    with graph.as_default():
        nodes = tf_graph_def.read(folder / f"{name}.pb")["node"]
        count = sum(n["name"].startswith("output_") for n in nodes)
        fetched = tf_graph_def.import_graph_def(
            folder / f"{name}.pb", return_elements=[f"output_{i}:0" for i in range(count)]
        )
        placeholders = [o for o in graph.get_operations() if o.type == "Placeholder"]
        feeds = {p.outputs[0]: v for p, v in zip(placeholders, inputs, strict=True)}
        with g.Session() as session:
            values = session.run(fetched, feeds)
    for value, expected in zip(values, _outputs(model, inputs), strict=True):
        np.testing.assert_allclose(value, expected, rtol=1e-6, atol=1e-6)


def test_the_written_graph_def_has_tensorflows_names_and_attributes(tmp_path) -> None:
    @function(input_signature=[TensorSpec((None, 3)), TensorSpec((3, 2))])
    def f(x, w):
        y = ef.matmul(x, w, transpose_b=False)
        return ef.cast(ef.reduce_sum(y, axis=1), ef.int32)

    path = tf_graph_def.write(f, tmp_path / "f.pbtxt")
    text = Path(path).read_text()
    for expected in ('op: "MatMul"', 'key: "transpose_a"', 'key: "DstT"', 'type: DT_INT32',
                     'op: "Sum"', 'key: "Tidx"', 'key: "keep_dims"', 'name: "output_0"',
                     "size: -1"):  # fmt: skip
        assert expected in text, expected


def test_control_flow_is_written_as_tensorflow_writes_it(tmp_path) -> None:
    f, _ = models.op_case("while")
    text = Path(tf_graph_def.write(f, tmp_path / "f.pbtxt")).read_text()
    for expected in ('op: "StatelessWhile"', 'key: "body"', 'key: "parallel_iterations"',
                     'op: "StatelessIf"', 'key: "then_branch"', 'key: "Tcond"', "library {",
                     "signature {", 'input_arg {', 'ret {', 'func {'):  # fmt: skip
        assert expected in text, expected
    g_text = Path(tf_graph_def.write(models.op_case("call")[0], tmp_path / "g.pbtxt")).read_text()
    for expected in ('op: "PartitionedCall"', 'key: "f"', 'key: "Tin"', 'key: "Tout"'):
        assert expected in g_text, expected


def test_every_output_argument_belongs_to_an_op_a_rule_writes() -> None:
    from eagerflow.graph.export.tf_graph_def.functions import OUTPUT_ARG

    written = {op for rule in tf_graph_def.TF_RULES.values() for op in rule.ops}
    assert set(OUTPUT_ARG) <= written


def test_a_gradient_loop_over_sequences_is_refused_by_name() -> None:
    @function(input_signature=[TensorSpec((3,))])
    def f(x):
        with GradientTape() as tape:
            tape.watch(x)
            y = while_loop_product(x)
        return tape.gradient(y, x)

    with pytest.raises(tf_graph_def.NoTfCounterpartError, match="sequences"):
        tf_graph_def.to_proto(f)


def while_loop_product(x):
    return g.while_loop(lambda k, acc: k < 3, lambda k, acc: (k + 1, acc * x),
                        [ef.constant(0), ef.ones_like(x)])[1]  # fmt: skip


def test_ops_without_a_tensorflow_counterpart_are_all_listed() -> None:
    @function(input_signature=[TensorSpec((4,))])
    def f(x):
        with GradientTape() as tape:
            tape.watch(x)
            y = ef.reduce_sum(x[1:])
        return ef.random_normal((4,), 1.0, 2.0) + tape.gradient(y, x) + ef.nn.relu(x)

    with pytest.raises(tf_graph_def.NoTfCounterpartError) as caught:
        tf_graph_def.to_proto(f)
    types = {t for t, _, _ in caught.value.ops}
    assert types == {"RandomNormal", "StridedSliceGrad"}
    assert "only N(0, 1) is one TensorFlow op (RandomStandardNormal)" in str(caught.value)


def _op_types(graph) -> set[str]:
    """The op types of a graph and of the subgraphs its ops run (branches, loops, calls)."""
    from eagerflow.graph.core.subgraphs import Subgraph

    types = set()
    for o in graph.get_operations():
        types.add(o.type)
        for value in o.attrs.values():
            if isinstance(value, Subgraph):
                types |= _op_types(value.graph)
    return types


def test_the_op_cases_cover_every_rule_that_reads() -> None:
    from eagerflow.graph.export.tf_graph_def.rules import reading_rules

    used: set[str] = set()
    for name in models.OP_CASES:
        used |= _op_types(models.op_case(name)[0].get_concrete_function().graph)
    readable = {ours for ours, _ in reading_rules().values()}
    # (NoOp only orders effects: TensorFlow's frozen fixtures have one, read above)
    assert readable - used - {"NoOp"} == set(), "rules no op case exercises"


# --- without the protos --------------------------------------------------------------------------
def test_without_tensorboard_the_error_names_the_extra(monkeypatch) -> None:
    for module in ("tensorboard", "tensorboard.compat", "tensorboard.compat.proto",
                   "tensorboard.compat.proto.graph_pb2"):  # fmt: skip
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r"eagerflow-graph\[tf-proto\]"):
        tf_graph_def.read(FIXTURES / "mlp.pb")
    with pytest.raises(ImportError, match=r"eagerflow-graph\[tf-proto\]"):
        tensor_proto(np.zeros(2))


# --- the site's page says what the tables hold ---------------------------------------------------
def test_the_names_page_lists_what_has_no_counterpart_and_the_renamed_ops() -> None:
    page = (HERE.parents[1] / "site" / "docs" / "tensorflow-names.md").read_text("utf8")
    section = page.split("### Ops in TensorFlow's GraphDefs")[1].split("\n## ")[0]
    named = set(re.findall(r"`(\w+)`", section))
    assert set(tf_graph_def.NO_TF_COUNTERPART) <= named
    renamed = {ours for ours, rule in tf_graph_def.TF_RULES.items() if rule.ops != (ours,)}
    rows = dict(re.findall(r"^\| `(\w+)` \| (.*) \|$", section, re.MULTILINE))
    assert set(rows) == renamed
    for ours, cell in rows.items():  # (attributes are named in parentheses)
        ops = re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", cell))
        assert set(tf_graph_def.TF_RULES[ours].ops) == set(ops), ours


def test_a_graph_built_with_placeholders_is_written_and_read_back(tmp_path) -> None:
    graph = g.Graph()
    with graph.as_default():
        x = g.placeholder(ef.float32, (None, 2), name="points")
        y = ef.nn.relu(ef.matmul(x, ef.constant([[1.0, -2.0], [3.0, 0.5]]))) + 1.0
    path = tf_graph_def.write(graph, tmp_path / "g.pbtxt", outputs=[y])
    assert 'name: "points"' in Path(path).read_text()
    points = np.array([[1.0, 2.0], [-1.0, 0.5]], np.float32)
    with g.Session(graph=graph) as session:
        expected = session.run(y, {x: points})
    again = g.Graph()
    with again.as_default():
        x2, y2 = tf_graph_def.import_graph_def(path, return_elements=["points:0", "output_0:0"])
        with g.Session() as session:
            np.testing.assert_array_equal(session.run(y2, {x2: points}), expected)
    with pytest.raises(ValueError, match="outputs"):
        tf_graph_def.to_proto(graph)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("first_input", "missing"), [("Softmax", "Relu"), ("nowhere:3", "nowhere")]
)
def test_a_cycle_or_a_missing_input_is_an_error_naming_the_node(first_input, missing) -> None:
    proto = _frozen("mlp")
    _node(proto, "Relu").input[0] = first_input  # (Softmax needs Relu: a cycle)
    with g.Graph().as_default(), pytest.raises(ef.InvalidArgumentError, match=repr(missing)):
        tf_graph_def.import_graph_def(proto)


def test_a_dtype_eagerflow_does_not_have_is_named() -> None:
    proto = _frozen("mlp")
    _node(proto, "Const").attr["dtype"].type = 7  # DT_STRING
    with pytest.raises(tf_graph_def.TfGraphDefError, match="DT_STRING") as caught:
        tf_graph_def.read(proto)
    assert caught.value.attr == "dtype"
