"""Clustering: which ops the compiler fuses into one loop, and where a cluster must stop."""

from __future__ import annotations

import numpy as np
import pytest

import eagerflow.tensor as ef
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.graph import Graph, function, placeholder
from eagerflow.graph.compiler import kernels
from eagerflow.graph.compiler.fusion import Cluster, find_clusters
from eagerflow.graph.compiler.specialize import specialize
from eagerflow.graph.core.session import Plan


def units_of(fetches: list, fed: list, shapes: list[tuple[int, ...]]) -> list:
    plan = Plan(fetches, fed)
    program = specialize(plan, {plan.slot[t]: s for t, s in zip(fed, shapes, strict=True)})
    return find_clusters(program)


def kinds(units: list) -> list:
    """Each unit as an op type, or a cluster as the list of its op types."""
    return [[n.type for n in u.nodes] if isinstance(u, Cluster) else u.type for u in units]


def test_a_chain_of_elementwise_ops_and_its_reduction_are_one_loop() -> None:
    with Graph().as_default():
        x = placeholder(ef.float32, (None,))
        y = ef.reduce_sum(ef.sqrt(x * 2.0 + 1.0) * x)
        (cluster,) = units_of([y], [x], [(100,)])
    assert kinds([cluster]) == [["Mul", "AddV2", "Sqrt", "Mul", "Sum"]]
    assert cluster.domain == (100,)
    assert cluster.outputs == [cluster.nodes[-1].outputs[0]]  # only the sum leaves the loop


def test_what_reads_a_reduction_cannot_join_its_loop() -> None:
    """Layer norm's shape: x - mean(x) needs the mean before its loop can start."""
    with Graph().as_default():
        x = placeholder(ef.float32, (None, 8))
        centered = x - ef.reduce_mean(x, axis=1, keepdims=True)
        y = centered * centered
        units = units_of([y], [x], [(4, 8)])
    assert kinds(units) == [["Mean"], ["Sub", "Mul"]]


def test_a_variable_write_seals_the_open_clusters_and_a_read_does_not() -> None:
    w = Variable(np.float32(2.0))

    def step(x: ef.Tensor) -> ef.Tensor:
        a = x * w  # a read, then elementwise ops
        b = ef.square(a) + 1.0
        w.assign_add(1.0)  # a write: nothing moves across it
        return b * w + a  # a new read, and a new cluster

    concrete = function(step, autograph=False).get_concrete_function(
        ef.constant(np.ones(5, np.float32))
    )
    plan = concrete.plan()
    program = specialize(plan, {plan.slot[t]: (5,) for t in plan.fed})
    units = kinds(find_clusters(program))
    write = units.index("AssignAddVariableOp")
    before, after = units[:write], units[write + 1 :]
    assert ["Mul", "Square", "AddV2"] in before
    assert ["Mul", "AddV2"] in after


def test_ops_over_different_shapes_are_different_loops_and_one_op_is_no_cluster() -> None:
    with Graph().as_default():
        x = placeholder(ef.float32, (3, 4))
        v = placeholder(ef.float32, (4,))
        row = ef.square(v) * 2.0  # over (4,)
        y = ef.abs(x + row)  # over (3, 4)
        z = ef.sqrt(v)  # alone over (4,) once the first loop was read: just the op
        units = units_of([y, z], [x, v], [(3, 4), (4,)])
    assert kinds(units) == [["Square", "Mul"], ["AddV2", "Abs"], "Sqrt"]


def test_shape_only_ops_fold_so_a_backward_pass_fuses_with_its_forward_pass() -> None:
    """OnesLike(loss), the gradient's seed, becomes a constant once shapes are known."""
    w, b = Variable(np.float32(1.0)), Variable(np.float32(0.0))

    def step(x: ef.Tensor, y: ef.Tensor) -> ef.Tensor:
        with GradientTape() as tape:
            err = w * x + b - y
            loss = ef.reduce_mean(err * err)
        dw, db = tape.gradient(loss, [w, b])
        w.assign_sub(0.1 * dw)
        b.assign_sub(0.1 * db)
        return loss

    data = ef.constant(np.ones(50, np.float32))
    plan = function(step).get_concrete_function(data, data).plan()
    program = specialize(plan, {plan.slot[t]: (50,) for t in plan.fed})
    assert program.folded >= 2  # OnesLike and the division of the seed by the count
    clusters = [u for u in find_clusters(program) if isinstance(u, Cluster)]
    assert len(clusters) == 1
    assert sorted(n.type for n in clusters[0].nodes if n.type in ("Sum", "Mean")) == [
        "Mean", "Sum", "Sum",
    ]  # fmt: skip


def test_integer_means_and_unknown_shapes_are_left_to_the_interpreter() -> None:
    with Graph().as_default():
        n = placeholder(ef.int32, (None,))
        m = ef.reduce_mean(n * 2)  # TensorFlow's integer mean rounds toward zero
        units = units_of([m], [n], [(6,)])
    assert kinds(units) == ["Mul", "Mean"]


def test_without_vectorized_math_functions_tanh_cuts_a_loop_in_two(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """numba's scalar tanh is ~35 times slower than NumPy's vectorized one: without SVML,
    NumPy computes it between two loops; with SVML, it joins the loop."""
    with Graph().as_default():
        x = placeholder(ef.float32, (None,))
        y = ef.tanh(x * 2.0 + 1.0) * x + 3.0
        monkeypatch.setattr(kernels, "fast_math_functions", lambda: False)
        assert kinds(units_of([y], [x], [(10,)])) == [["Mul", "AddV2"], "Tanh", ["Mul", "AddV2"]]
        monkeypatch.setattr(kernels, "fast_math_functions", lambda: True)
        assert kinds(units_of([y], [x], [(10,)])) == [["Mul", "AddV2", "Tanh", "Mul", "AddV2"]]
