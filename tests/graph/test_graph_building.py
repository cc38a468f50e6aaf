"""Building a static graph: inside ``with graph.as_default():`` the public ops of
eagerflow.tensor add operations and return symbolic tensors; nothing is computed."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import (
    Graph,
    Operation,
    Session,
    SymbolicTensor,
    control_dependencies,
    get_default_graph,
    global_variables,
    name_scope,
    placeholder,
    trainable_variables,
)
from eagerflow.tensor import execution
from eagerflow.tensor.registry import OPS, OpDef


class Log:
    """A recorder: remembers every op the seam tells it about."""

    def __init__(self) -> None:
        self.records: list[tuple[str, tuple, tuple]] = []

    def record(self, op: OpDef, inputs: tuple, attrs: Any, outputs: tuple) -> None:
        self.records.append((op.name, inputs, outputs))


def _count_kernel_calls(monkeypatch: pytest.MonkeyPatch, op_name: str) -> list[int]:
    """Replace ``op_name``'s registry row by one whose kernel counts its calls."""
    original = OPS[op_name]
    calls: list[int] = []

    def counting(*args: Any, **attrs: Any) -> Any:
        calls.append(1)
        return original.kernel(*args, **attrs)

    monkeypatch.setitem(OPS, op_name, dataclasses.replace(original, kernel=counting))
    return calls


# --- graph mode versus eager mode -----------------------------------------------------------------
def test_ops_inside_as_default_add_operations_and_compute_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _count_kernel_calls(monkeypatch, "MatMul")
    g = Graph()
    log = Log()
    with g.as_default(), execution.recording(log):
        assert not ef.executing_eagerly()
        a = ef.constant([[1.0, 2.0]])
        b = ef.constant([[3.0], [4.0]])
        m = ef.matmul(a, b)
        s = m * 2.0
    assert calls == []  # the MatMul kernel never ran
    assert [o.type for o in g.get_operations()] == ["Const", "Const", "MatMul", "Const", "Mul"]
    assert [r[0] for r in log.records] == ["Const", "Const", "MatMul", "Mul"]
    for _, _, outputs in log.records:
        assert all(isinstance(t, SymbolicTensor) for t in outputs)
    assert isinstance(m, SymbolicTensor) and isinstance(s, SymbolicTensor)
    assert m.shape == (1, 1) and m.dtype is ef.float32


def test_ops_outside_the_block_are_eager_again() -> None:
    g = Graph()
    with g.as_default():
        ef.constant(1.0) + 1.0
    n = len(g.get_operations())
    assert ef.executing_eagerly()
    c = ef.constant(2.0) + 3.0
    assert not isinstance(c, SymbolicTensor)
    assert c.numpy() == 5.0
    assert len(g.get_operations()) == n  # the eager op added nothing


def test_eager_mode_is_restored_after_an_exception_inside_the_block() -> None:
    g = Graph()
    with pytest.raises(ZeroDivisionError), g.as_default():
        ef.constant(1.0)
        raise ZeroDivisionError
    assert ef.executing_eagerly()
    assert get_default_graph() is not g
    assert (ef.constant(1.0) + 1.0).numpy() == 2.0


def test_a_shape_error_inside_the_block_also_restores_eager_mode() -> None:
    g = Graph()
    with pytest.raises(ef.ShapeError), g.as_default():
        ef.matmul(ef.ones((2, 3)), ef.ones((4, 5)))
    assert ef.executing_eagerly()


def test_get_default_graph_inside_and_nested_blocks() -> None:
    g1, g2 = Graph(), Graph()
    with g1.as_default():
        assert get_default_graph() is g1
        with g2.as_default():
            assert get_default_graph() is g2
            t = ef.constant(1.0)
        assert get_default_graph() is g1
        u = ef.constant(2.0)
    assert t.graph is g2 and u.graph is g1
    assert get_default_graph() not in (g1, g2)


# --- symbolic tensors -----------------------------------------------------------------------------
def test_repr_of_a_symbolic_tensor() -> None:
    with Graph().as_default():
        c = ef.constant(1.0) + ef.constant(2.0)
    assert repr(c) == 'Tensor("add:0", shape=(), dtype=float32)'
    assert str(c) == 'Tensor("add:0", shape=(), dtype=float32)'


def test_none_dimensions_propagate_through_matmul() -> None:
    with Graph().as_default():
        x = placeholder(ef.float32, shape=(None, 3))
        w = ef.constant(np.ones((3, 2), np.float32))
        y = x @ w
    assert x.shape == (None, 3)
    assert y.shape == (None, 2)
    assert y.dtype is ef.float32
    assert repr(y) == 'Tensor("MatMul:0", shape=(None, 2), dtype=float32)'


def test_none_dimensions_propagate_through_broadcasting_and_reductions() -> None:
    with Graph().as_default():
        x = placeholder(ef.float32, shape=(None, 3))
        s = x + ef.constant([1.0, 2.0, 3.0])
        r = ef.reduce_sum(s, axis=1)
        k = ef.reduce_sum(s, axis=0)
    assert s.shape == (None, 3)
    assert r.shape == (None,)
    assert k.shape == (3,)


def test_unknown_rank_placeholder_gives_outputs_of_unknown_shape() -> None:
    with Graph().as_default():
        u = placeholder(ef.float32, shape=None, name="u")
        v = u + 1.0
        w = ef.square(u)
    assert u.shape is None and v.shape is None and w.shape is None
    assert u.ndim is None
    assert v.dtype is ef.float32
    assert repr(u) == 'Tensor("u:0", shape=<unknown>, dtype=float32)'


def test_shape_error_while_building_names_the_op() -> None:
    with Graph().as_default():
        x = placeholder(ef.float32, shape=(None, 3))
        with pytest.raises(ef.ShapeError, match="MatMul"):
            x @ ef.constant(np.ones((4, 2), np.float32))
        with pytest.raises(ef.ShapeError, match="AddV2"):
            x + ef.constant([1.0, 2.0])


def test_dtype_error_while_building_names_the_op() -> None:
    with Graph().as_default():
        a = ef.constant(1.0)
        with pytest.raises(ef.DTypeError, match="AddV2"):
            a + ef.constant(1)
        x = placeholder(ef.int32, shape=(2, 2))
        with pytest.raises(ef.DTypeError, match="MatMul"):
            ef.matmul(x, ef.constant(np.ones((2, 2), np.float32)))


def test_bool_of_a_symbolic_tensor_says_to_use_cond() -> None:
    with Graph().as_default():
        c = ef.constant(1.0) > 0.0
    with pytest.raises(TypeError, match="cond"):
        bool(c)
    with pytest.raises(TypeError, match="cond"):
        if c:
            pass


def test_numpy_of_a_symbolic_tensor_says_to_use_session_run() -> None:
    with Graph().as_default():
        c = ef.constant(1.0) + 1.0
    with pytest.raises(Exception, match=r"(?i)session\.run") as info:
        c.numpy()
    assert "add:0" in str(info.value)
    with pytest.raises(Exception, match=r"(?i)session\.run"):
        np.asarray(c)


def test_a_tensor_of_another_graph_cannot_be_used() -> None:
    g1, g2 = Graph(), Graph()
    with g1.as_default():
        a = ef.constant(1.0)
    n = len(g2.get_operations())
    with g2.as_default(), pytest.raises(ValueError, match="another graph"):
        a + 1.0
    with g2.as_default():
        b = ef.constant(2.0)
        with pytest.raises(ValueError):
            ef.add(b, a)
    assert len(g2.get_operations()) == n + 1  # only b's Const: no AddV2 was added
    assert "AddV2" not in [o.type for o in g2.get_operations()]


def test_eager_tensors_used_in_a_graph_become_const_nodes() -> None:
    e = ef.constant([1.0, 2.0])
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, shape=(2,))
        y = x * e
        z = x + e
    const = y.op.inputs[1].op
    assert const.type == "Const"
    np.testing.assert_array_equal(const.attrs["value"], [1.0, 2.0])
    assert const.outputs[0].shape == (2,) and const.outputs[0].dtype is ef.float32
    assert z.op.inputs[1] is y.op.inputs[1]  # captured once, then reused
    assert isinstance(y.op.inputs[1], SymbolicTensor)


def test_placeholder_in_eager_mode_raises_runtime_error() -> None:
    with pytest.raises(RuntimeError, match="as_default"):
        placeholder(ef.float32, shape=(2,))


def test_placeholder_has_static_shape_dtype_and_op() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder("int32", shape=[None, 4], name="ids")
    assert x.name == "ids:0"
    assert x.dtype is ef.int32 and x.shape == (None, 4)
    assert x.op.type == "Placeholder" and x.op.inputs == ()
    assert x.graph is g


# --- operations and looking them up ---------------------------------------------------------------
def test_operation_exposes_name_type_inputs_outputs_and_attrs() -> None:
    g = Graph()
    with g.as_default():
        a = ef.constant([[1.0, 2.0]])
        b = ef.constant([[3.0], [4.0]])
        m = ef.matmul(a, b, transpose_b=False)
        s = ef.reduce_sum(m, axis=0, keepdims=True)
    op = m.op
    assert isinstance(op, Operation)
    assert op.name == "MatMul" and op.type == "MatMul"
    assert op.inputs == (a, b)
    assert op.outputs == (m,)
    assert op.graph is g
    assert op.attrs == {"transpose_a": False, "transpose_b": False}
    assert s.op.type == "Sum" and s.op.attrs == {"axis": 0, "keepdims": True}
    assert s.op.inputs == (m,)
    np.testing.assert_array_equal(a.op.attrs["value"], [[1.0, 2.0]])
    assert a.op.inputs == ()


def test_get_operations_lists_operations_in_creation_order() -> None:
    g = Graph()
    assert g.get_operations() == []
    with g.as_default():
        a = ef.constant(1.0)
        b = ef.constant(2.0)
        c = a * b
    assert g.get_operations() == [a.op, b.op, c.op]
    g.get_operations().clear()  # a copy: the graph keeps its operations
    assert len(g.get_operations()) == 3


def test_get_tensor_and_operation_by_name() -> None:
    g = Graph()
    with g.as_default():
        a = ef.constant(1.0) + ef.constant(2.0)
        with name_scope("s"):
            b = a * 3.0
    assert g.get_tensor_by_name("add:0") is a
    assert g.get_operation_by_name("add") is a.op
    assert g.get_tensor_by_name("s/mul:0") is b
    assert g.get_operation_by_name("s/mul") is b.op


def test_unknown_names_raise_clear_errors() -> None:
    g = Graph()
    with g.as_default():
        ef.constant(1.0) + ef.constant(2.0)
    with pytest.raises(KeyError, match="nope"):
        g.get_operation_by_name("nope")
    with pytest.raises(KeyError, match="nope"):
        g.get_tensor_by_name("nope:0")
    with pytest.raises(KeyError, match="add"):
        g.get_tensor_by_name("add:1")  # add has one output
    with pytest.raises(ValueError, match="op_name:0"):
        g.get_tensor_by_name("add")  # an operation name, not a tensor name


def test_names_are_unique_per_graph() -> None:
    g = Graph()
    with g.as_default():
        a = ef.constant(1.0)
        sums = [a + a for _ in range(3)]
    assert [t.name for t in sums] == ["add:0", "add_1:0", "add_2:0"]
    names = [o.name for o in g.get_operations()]
    assert len(names) == len(set(names))
    g2 = Graph()  # another graph starts its own count
    with g2.as_default():
        b = ef.constant(1.0)
        assert (b + b).name == "add:0"


def test_name_argument_names_the_operation() -> None:
    g = Graph()
    with g.as_default():
        a = ef.constant(1.0, name="a")
        t = ef.add(a, a, name="total")
        t2 = ef.add(a, a, name="total")
        m = ef.matmul(ef.ones((1, 1)), ef.ones((1, 1)), name="prod")
        x = placeholder(ef.float32, shape=(), name="x")
    assert a.name == "a:0"
    assert t.name == "total:0" and t.op.type == "AddV2"
    assert t2.name == "total_1:0"
    assert m.op.name == "prod" and m.op.type == "MatMul"
    assert x.name == "x:0"
    assert g.get_operation_by_name("total") is t.op


def test_explicit_names_and_generated_names_do_not_collide() -> None:
    g = Graph()
    with g.as_default():
        a = ef.constant(1.0)
        taken = ef.add(a, a, name="add_1")
        first = a + a
        second = a + a
    assert taken.name == "add_1:0"
    assert first.name == "add:0"
    assert second.name not in ("add:0", "add_1:0")
    names = [o.name for o in g.get_operations()]
    assert len(names) == len(set(names))


def test_name_scope_prefixes_operation_names() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, shape=(None, 3), name="x")
        w = ef.constant(np.ones((3, 2), np.float32))
        with name_scope("layer1") as scope:
            h = x @ w
            named = ef.add(h, h, name="out")
        after = x @ w
    assert scope == "layer1/"
    assert h.op.name == "layer1/MatMul"
    assert named.name == "layer1/out:0"
    assert after.op.name == "MatMul"  # the scope ended
    assert x.name == "x:0"


def test_name_scopes_nest() -> None:
    with Graph().as_default(), name_scope("outer"):
        a = ef.constant(1.0)
        with name_scope("inner"):
            b = a * 2.0
        c = a * 3.0
    assert a.op.name == "outer/Const"
    assert b.op.name == "outer/inner/mul"
    assert c.op.name == "outer/mul"


def test_a_scope_ending_in_a_slash_is_reentered_and_the_empty_one_is_the_root() -> None:
    with Graph().as_default(), name_scope("outer"):
        with name_scope("outer/"):  # as in TensorFlow: the whole scope, as it is (no _1)
            a = ef.constant(1.0)
        with name_scope(""):
            b = ef.constant(2.0)
    assert a.op.name == "outer/Const" and b.op.name == "Const"


def test_a_reused_name_scope_gets_a_unique_name() -> None:
    with Graph().as_default():
        x = placeholder(ef.float32, shape=(None, 3))
        w = ef.constant(np.ones((3, 2), np.float32))
        with name_scope("layer1"):
            h1 = x @ w
        with name_scope("layer1") as scope:
            h2 = x @ w
    assert h1.op.name == "layer1/MatMul"
    assert scope == "layer1_1/"
    assert h2.op.name == "layer1_1/MatMul"


# --- variables in graph mode ----------------------------------------------------------------------
def test_a_graph_variable_is_a_variablev2_node_named_after_it() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(np.zeros((2, 3), np.float32), name="weights")
    op = g.get_operation_by_name("weights")
    assert op.type == "VariableV2"
    assert v.name == "weights:0"
    assert op.outputs[0].shape == (2, 3) and op.outputs[0].dtype is ef.float32
    assert v.shape == (2, 3) and v.dtype is ef.float32
    assert isinstance(v.initializer, Operation) and v.initializer.graph is g


def test_graph_variable_names_are_uniquified() -> None:
    g = Graph()
    with g.as_default():
        w = Variable(1.0, name="w")
        w1 = Variable(1.0, name="w")
        with name_scope("layer"):
            w2 = Variable(1.0, name="w")
    assert (w.name, w1.name, w2.name) == ("w:0", "w_1:0", "layer/w:0")
    types = {o.name: o.type for o in g.get_operations()}
    assert types["w"] == types["w_1"] == types["layer/w"] == "VariableV2"


def test_graph_variable_value_is_not_available_eagerly() -> None:
    with Graph().as_default():
        v = Variable(1.0, name="w")
    with pytest.raises(ef.FailedPreconditionError, match="w:0"):
        v.numpy()
    with pytest.raises(ef.FailedPreconditionError):
        np.asarray(v)


def test_reading_a_graph_variable_builds_nodes() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(2.0, name="v")
        r = v * 3.0
        a = v.assign_add(1.0)
    assert isinstance(r, SymbolicTensor)
    assert r.op.inputs[0].op.type == "ReadVariableOp"
    assert isinstance(a, SymbolicTensor) and a.op.type == "AssignAddVariableOp"
    assert a.op.attrs["variable"] is v


def test_global_and_trainable_variables_list_graph_variables_in_order() -> None:
    def ids(variables: list[Variable]) -> list[int]:
        return [id(v) for v in variables]  # `==` on variables is elementwise: compare identity

    eager = Variable(0.0, name="eager")  # not part of any graph
    g = Graph()
    with g.as_default():
        a = Variable(1.0, name="a")
        b = Variable(2.0, name="b", trainable=False)
        c = Variable(3.0, name="c")
        assert ids(global_variables()) == ids([a, b, c])
        assert ids(trainable_variables()) == ids([a, c])
    assert ids(global_variables(g)) == ids([a, b, c])
    assert ids(trainable_variables(g)) == ids([a, c])
    assert id(eager) not in ids(global_variables(g))
    other = Graph()
    with other.as_default():
        assert global_variables() == []


def test_assigning_a_value_of_compatible_partial_shape_builds() -> None:
    with Graph().as_default():
        v = Variable(np.zeros(2, np.float32), name="v")
        p = placeholder(ef.float32, shape=(None,), name="p")
        a = v.assign(p)
    assert a.shape == (2,)


def test_assigning_a_value_of_incompatible_shape_fails_while_building() -> None:
    with Graph().as_default():
        v = Variable(np.zeros(2, np.float32), name="v")
        with pytest.raises(ef.ShapeError, match="AssignVariableOp"):
            v.assign(ef.constant([1.0, 2.0, 3.0]))


# --- control dependencies while building ----------------------------------------------------------
def test_control_dependencies_are_recorded_on_new_operations() -> None:
    with Graph().as_default():
        v = Variable(0.0, name="v")
        bump = v.assign_add(1.0)
        with control_dependencies([bump]):
            r = v.read_value()
        plain = v.read_value()
    assert r.op.control_inputs == (bump.op,)
    assert plain.op.control_inputs == ()


# --- a context decides where its variables live (the Context protocol's variable hook) --------
class DictStorage:
    """An autodiff Storage that keeps values by variable name, for the test to look at."""

    def __init__(self) -> None:
        self.values: dict[str, np.ndarray] = {}

    def read(self, variable: Variable) -> np.ndarray:
        return self.values[variable.name]

    def write(self, variable: Variable, value: np.ndarray) -> None:
        self.values[variable.name] = value


def test_the_context_says_where_a_new_variables_value_lives() -> None:
    storage = DictStorage()

    class StoringGraph(Graph):
        def create_variable(self, variable: Any) -> Any:
            return storage

    g = StoringGraph()
    with g.as_default():
        v = Variable(3.0, name="v")
        step = v.assign_add(1.0)
    assert not v.holds_value and storage.values == {}  # a node: no value until it runs
    assert isinstance(step, ef.Tensor) and step.op.type == "AssignAddVariableOp"  # TF 1
    with Session(g) as session:
        session.run(v.initializer)
        session.run(step)
    assert storage.values == {"v:0": 4.0}  # the Session wrote where the context said
    assert v.numpy() == 4.0  # read from the storage, outside any Session


def test_a_graphs_variable_has_no_value_outside_a_session() -> None:
    g = Graph()
    with g.as_default():
        v = Variable(1.0, name="w")
    assert not v.holds_value and Variable(1.0).holds_value
    with pytest.raises(ef.FailedPreconditionError, match=r"'w:0' lives in a graph.*session.run"):
        v.numpy()


def test_the_default_graph_is_the_current_context_and_nothing_else() -> None:
    """One record of "the graph being built": leaving the graph's context (as checkpoint
    restores do, to assign eager variables now) leaves it as the default graph too."""
    g = Graph()
    with g.as_default():
        assert get_default_graph() is g
        with execution.context(None):  # eager again inside the block
            assert get_default_graph() is not g
            assert isinstance(ef.add(1.0, 2.0), ef.Tensor) and ef.add(1.0, 2.0).numpy() == 3.0
        assert get_default_graph() is g


def test_control_dependencies_none_clears_the_enclosing_blocks() -> None:
    """As in TensorFlow: ``control_dependencies(None)`` makes ops that wait for nothing (an
    optimizer's variables made inside a block: their initializers must not need its feeds)."""
    from eagerflow.graph import Graph, control_dependencies, placeholder

    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (2,))
        with control_dependencies([x]):
            waits = ef.identity(ef.constant(1.0))
            with control_dependencies(None):
                free = ef.identity(ef.constant(2.0))
            again = ef.identity(ef.constant(3.0))
    assert [o.name for o in waits.op.control_inputs] == [x.op.name]
    assert free.op.control_inputs == ()
    assert [o.name for o in again.op.control_inputs] == [x.op.name]
