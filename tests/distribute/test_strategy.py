"""The all-reduce op and MultiWorkerMirroredStrategy, with tasks as threads of this process
(``thread_communicator``): no MPI, no processes. test_mpi_jobs.py runs the real thing."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import workload
from thread_communicator import run_on_threads

import eagerflow.graph as eg
import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.distribute import (
    MPICommunicator,
    MultiWorkerMirroredStrategy,
    all_reduce_sum,
    all_reduce_tensors,
)
from eagerflow.distribute.collective import use_communicator
from eagerflow.distribute.strategy import shard_rows


def test_all_reduce_sums_over_tasks_and_its_gradient_is_an_all_reduce():
    def task(comm):
        with use_communicator(comm):
            x = Variable(np.array([1.0, 2.0], np.float32) * (comm.rank + 1))
            with GradientTape() as tape:
                total = all_reduce_sum(x)
                loss = ef.reduce_sum(total * total) * float(comm.rank + 1)
            return total.numpy(), tape.gradient(loss, x).numpy()

    (t0, g0), (t1, g1) = run_on_threads(2, task)
    np.testing.assert_array_equal(t0, [3.0, 6.0])
    np.testing.assert_array_equal(t1, t0)
    # d/dx_t of sum_s w_s * |sum_r x_r|^2 = 2 * total * (w_0 + w_1), the same on every task
    np.testing.assert_allclose(g0, 2 * t0 * 3)
    np.testing.assert_allclose(g1, g0)


def test_all_reduce_gradient_passes_central_differences():
    """The op's gradient rule against float64 central differences of the job's total loss
    (each task's gradient of its own loss is, by the rule, the gradient of the sum over the
    tasks); first order on 2 tasks, and first and second order on 1 task (an identity)."""
    from eagerflow.autodiff import check_gradients

    rng = np.random.default_rng(30)
    xs = [rng.normal(size=(2, 3)) for _ in range(2)]
    weights = [rng.normal(size=(2, 3)) for _ in range(2)]

    def total_loss(comm, x):
        mine = ef.reduce_sum(ef.tanh(all_reduce_sum(ef.constant(x))) * weights[comm.rank])
        return float(all_reduce_sum(mine))  # the sum over the tasks of their losses

    def task(comm):
        with use_communicator(comm):
            x = ef.constant(xs[comm.rank])
            with GradientTape() as tape:
                tape.watch(x)
                loss = ef.reduce_sum(ef.tanh(all_reduce_sum(x)) * weights[comm.rank])
            analytic = tape.gradient(loss, x).numpy()
            numeric = np.zeros_like(xs[0])
            for i in np.ndindex(*xs[0].shape):  # task 0's input moves; task 1's stays
                step = np.zeros_like(xs[0])
                step[i] = 1e-6 if comm.rank == 0 else 0.0
                up = total_loss(comm, xs[comm.rank] + step)
                down = total_loss(comm, xs[comm.rank] - step)
                numeric[i] = (up - down) / 2e-6
            return analytic, numeric

    (analytic, numeric), _ = run_on_threads(2, task)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7)

    def alone(comm):
        with use_communicator(comm):
            check_gradients(lambda x: ef.tanh(all_reduce_sum(x)), [xs[0]], order=2)

    run_on_threads(1, alone)


def test_all_reduce_tensors_packs_each_dtype_into_one_op():
    def task(comm):
        with use_communicator(comm):
            values = [np.full((2, 3), comm.rank + 1.0, np.float32), np.arange(4.0),
                      np.float32(comm.rank), np.array([comm.rank], np.int64)]  # fmt: skip
            eager = [t.numpy() for t in all_reduce_tensors(values)]
            traced = eg.function(lambda *vs: all_reduce_tensors(vs))
            in_function = [t.numpy() for t in traced(*values)]
            graph = traced.get_concrete_function(*values).graph
            ops = [n.type for n in graph.get_operations()]
            return eager, in_function, ops.count("CollectiveAllReduce")

    for eager, in_function, count in run_on_threads(2, task):
        for got in (eager, in_function):
            np.testing.assert_array_equal(got[0], np.full((2, 3), 3.0))
            np.testing.assert_array_equal(got[1], 2 * np.arange(4.0))
            assert got[2] == 1.0 and got[2].dtype == np.float32
            np.testing.assert_array_equal(got[3], [1])
        assert count == 3  # float32, float64, int64: one all-reduce each


def test_reduce_has_tensorflows_meaning_of_axis():
    def task(comm):
        strategy = MultiWorkerMirroredStrategy(communicator=comm)
        rows = 1 + comm.rank  # uneven: 1 row on task 0, 2 on task 1
        value = np.arange(3.0 * rows, dtype=np.float32).reshape(rows, 3) + 10 * comm.rank
        return [strategy.reduce(op, value if axis is not None else value[0], axis=axis).numpy()
                for op in ("SUM", "MEAN") for axis in (None, 0)]  # fmt: skip

    everything = np.array([[0, 1, 2], [10, 11, 12], [13, 14, 15]], np.float32)
    for sum_none, sum_0, mean_none, mean_0 in run_on_threads(2, task):
        np.testing.assert_array_equal(sum_none, everything[0] + everything[1])
        np.testing.assert_array_equal(sum_0, everything.sum(0))
        np.testing.assert_array_equal(mean_none, (everything[0] + everything[1]) / 2)
        np.testing.assert_allclose(mean_0, everything.mean(0))  # over the global batch of 3


def test_reduce_refuses_a_bad_op_naming_it():
    def task(comm):
        strategy = MultiWorkerMirroredStrategy(communicator=comm)
        with pytest.raises(ValueError, match="'SUM' or 'MEAN', got 'max'"):
            strategy.reduce("max", 1.0)

    run_on_threads(1, task)


def test_the_strategy_knows_its_replica():
    def task(comm):
        strategy = MultiWorkerMirroredStrategy(communicator=comm)
        resolver = strategy.cluster_resolver
        return strategy.num_replicas_in_sync, resolver.task_type, resolver.task_id

    assert run_on_threads(2, task) == [(2, "worker", 0), (2, "worker", 1)]


def test_variables_made_in_scope_start_as_task_0s():
    def task(comm):
        strategy = MultiWorkerMirroredStrategy(communicator=comm)
        with strategy.scope():
            layer = nn.Dense(3, kernel_initializer=nn.initializers.random_normal(comm.rank))
            layer(np.ones((1, 2), np.float32))
        return layer.kernel.numpy()

    first, second = run_on_threads(2, task)
    assert abs(first.mean()) < 0.5  # task 0's values (mean 0), not task 1's (mean 1)
    np.testing.assert_array_equal(second, first)


def test_a_global_batch_is_cut_into_shards_of_nearly_equal_size():
    batch = (np.arange(5), {"y": np.arange(10, 15)})
    shards = [shard_rows(batch, rank, 2) for rank in range(2)]
    assert [len(s[0]) for s in shards] == [2, 3]
    np.testing.assert_array_equal(np.concatenate([s[1]["y"] for s in shards]), batch[1]["y"])


@pytest.mark.parametrize("mode", [*workload.MODES, "digits"])
def test_two_replicas_train_as_one_process_on_the_global_batch(mode):
    alone = workload.train(None, mode)

    def task(comm):
        return workload.train(MultiWorkerMirroredStrategy(communicator=comm), mode)

    batch = workload.DIGITS_BATCH if mode == "digits" else workload.GLOBAL_BATCH
    assert alone["rows"] == [batch]
    for replica in run_on_threads(2, task):
        assert replica["rows"] == [batch // 2]  # each its half of each global batch
        np.testing.assert_allclose(replica["losses"], alone["losses"], rtol=1e-5)
        for got, want in zip(replica["weights"], alone["weights"], strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_without_mpi4py_using_mpi_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(ImportError, match=r"eagerflow-distribute\[mpi\]"):
        MPICommunicator()


def test_fit_under_a_strategy_needs_one_shuffling_order():
    def task(comm):
        strategy = MultiWorkerMirroredStrategy(communicator=comm)
        x, y = workload.data()
        with strategy.scope():
            model = nn.Sequential([nn.Dense(3)])
            with pytest.raises(ValueError, match="give seed="):
                nn.fit(model, x, y, loss="sparse_softmax_cross_entropy", verbose=0,
                       optimizer=nn.GradientDescentOptimizer(0.1))  # fmt: skip

    run_on_threads(2, task)


def test_in_a_session_graph_apply_gradients_averages_over_replicas():
    def task(comm):
        strategy = MultiWorkerMirroredStrategy(communicator=comm)
        with eg.Graph().as_default():
            x = eg.placeholder(ef.float32, (None, 2))
            w = Variable(np.ones((2, 1), np.float32))
            loss = ef.reduce_mean(ef.matmul(x, w) ** 2)
            train = strategy.run(lambda: nn.GradientDescentOptimizer(0.1).minimize(loss))
            with eg.Session() as session:
                session.run(eg.global_variables_initializer())  # w, and the rate
                session.run(train, {x: np.full((1, 2), comm.rank + 1.0, np.float32)})
                return session.run(w.read_value())

    # d loss/d w = 2 (x.w) x: 4 on task 0 (x = 1), 16 on task 1 (x = 2); mean 10: w = 1 - 1
    for w in run_on_threads(2, task):
        np.testing.assert_array_equal(w, np.zeros((2, 1)))
