"""The ordinary Session in a job: every task runs the same ``run(fetches, feed_dict)``, each
only its part, and gets every fetch. The tasks here are threads sharing a
``ThreadRendezvous``; a real job's are processes (``eagerflow.distribute``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from partition_graphs import Mlp
from thread_rendezvous import ThreadRendezvous, run_job

import eagerflow.tensor as ef
from eagerflow.graph import Graph, Job, Session, device, get_job, group, placeholder, set_job
from eagerflow.tensor.errors import FailedPreconditionError, InvalidArgumentError
from eagerflow.tensor.nest import flatten


def _unsplit(mlp: Mlp) -> list[Any]:
    with Session(mlp.graph) as session:
        session.run(mlp.init)
        return flatten(session.run(mlp.fetches, mlp.feeds))


def test_an_mlp_split_across_two_tasks_gives_the_unsplit_outputs_and_gradients(
    mlp: Mlp,
) -> None:
    expected = _unsplit(mlp)

    def step(session: Session) -> list[Any]:
        session.run(mlp.init)
        first = flatten(session.run(mlp.fetches, mlp.feeds))
        second = flatten(session.run(mlp.fetches, mlp.feeds))  # the same keys, a new step
        assert all(np.array_equal(a, b) for a, b in zip(first, second, strict=True))
        return first

    results, rendezvous = run_job(mlp.graph, step)
    for task in results:
        assert len(task) == len(expected) == 6  # hidden, out, loss, and three gradients
        for got, want in zip(task, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6)
    assert rendezvous.pending() == {}  # every send met its receive


def test_each_task_runs_only_its_part(mlp: Mlp) -> None:
    def kernels(session: Session) -> list[str]:
        session.run(mlp.init)
        plan = session.plan([mlp.loss], mlp.feeds)
        session.run(mlp.loss, mlp.feeds)
        return [step.operation.type for step in plan.steps]

    (task0, task1), rendezvous = run_job(mlp.graph, kernels)
    assert task0.count("MatMul") == 1 and "Square" not in task0
    assert task1.count("MatMul") == 1 and "Relu" not in task1 and "Maximum" not in task1
    assert "_Send" in task0 and "_Recv" in task0  # the hidden layer out, the loss back
    loss_keys = [k for k in rendezvous.sent if ";Mean:0;" in k]
    assert loss_keys and all(k.endswith(";0:0") for k in loss_keys)


def test_feeds_of_placeholders_on_other_tasks_are_ignored(mlp: Mlp) -> None:
    expected = _unsplit(mlp)[2]
    bad = {mlp.x: mlp.feeds[mlp.x], mlp.y: np.full((4, 2), 99.0, np.float32)}

    def step(session: Session) -> Any:
        session.run(mlp.init)
        # task 0 is fed garbage for y, which lives on task 1 and is fed well there
        return session.run(mlp.loss, bad if session.job.task_id == 0 else mlp.feeds)

    results, _ = run_job(mlp.graph, step)
    np.testing.assert_allclose(results, [expected, expected], rtol=1e-6)


def test_an_operation_placed_elsewhere_is_run_there_and_fetched_as_none() -> None:
    g = Graph()
    with g.as_default(), device("/job:worker/task:1"):
        v = ef.constant(3.0) * 2.0
        op = ef.identity(v).op
    results, _ = run_job(g, lambda s: s.run([op, v]))
    assert results[0] == [None, 6.0] and results[1] == [None, 6.0]


def test_a_graph_that_places_nothing_runs_whole_in_every_task() -> None:
    g = Graph()
    with g.as_default():
        x = placeholder(ef.float32, (), name="x")
        y = x * 2.0
    results, rendezvous = run_job(g, lambda s: s.run(y, {x: 1.5}))
    assert results == [3.0, 3.0] and rendezvous.sent == []


def test_set_job_is_the_process_wide_job_a_session_uses() -> None:
    g = Graph()
    with g.as_default(), device("/task:1"):
        y = ef.constant(2.0) + 1.0
    rendezvous = ThreadRendezvous(timeout=0.2)
    assert get_job() is None
    set_job(Job(1, 2, rendezvous))
    try:
        with Session(g) as session:
            assert session.run(y) == 3.0  # task 1 makes y, and sends it to task 0
        assert rendezvous.pending() == {"/job:worker/replica:0/task:1/device:CPU:0;"
            "0000000000000000;/job:worker/replica:0/task:0/device:CPU:0;add:0;0:0": 1}  # fmt: skip
    finally:
        set_job(None)
    with Session(g) as session:
        assert session.run(y) == 3.0  # alone again: the whole graph


def test_clear_errors() -> None:
    rendezvous = ThreadRendezvous()
    with pytest.raises(ValueError, match=r"task_id 2 is not a task of a job of 2 task\(s\)"):
        Job(2, 2, rendezvous)
    with pytest.raises(TypeError, match="set_job takes a Job or None"):
        set_job("worker")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Session\(job=\.\.\.\) takes a Job"):
        Session(Graph(), job=rendezvous)  # type: ignore[arg-type]
    g = Graph()
    with g.as_default(), device("/task:3"):
        y = ef.constant(1.0) + 1.0
    with pytest.raises(ValueError, match="placed on /task:3's task 3, but the job has 2"):
        Session(g, job=Job(0, 2, rendezvous)).run(y)
    # a _Recv that runs outside a job says what it needs
    from eagerflow.graph import partition

    part = partition(g, num_tasks=4, fetches=[y])[0]
    with pytest.raises(FailedPreconditionError, match="_Recv runs in a partitioned graph"):
        Session(part).run(part.received[y])


def test_a_recv_that_never_comes_fails_within_the_timeout() -> None:
    g = Graph()
    with g.as_default(), device("/task:1"):
        y = ef.constant(1.0) + 1.0
    # (an error that is not eagerflow's comes out as the kernel's failure, naming the node)
    with pytest.raises(InvalidArgumentError, match=r"_Recv.*TimeoutError: nothing was sent under "
                       r".*;add:0;0:0") as caught:  # fmt: skip
        Session(g, job=Job(0, 2, ThreadRendezvous(timeout=0.05))).run(y)
    assert "(in graph node '_recv_add_0_from_1')" in caught.value.__notes__


def test_training_steps_split_across_tasks_equal_the_unsplit_ones(mlp: Mlp) -> None:
    with mlp.graph.as_default():  # the updates go with their variables' tasks
        train = group(*[v.assign_sub(0.1 * g) for v, g in zip(mlp.variables, mlp.grads,
                                                               strict=True)])  # fmt: skip

    def steps(session: Session) -> Any:
        session.run(mlp.init)
        losses = [session.run([train, mlp.loss], mlp.feeds)[1] for _ in range(3)]
        return losses, session.run(mlp.variables), sorted(v.name for v in session._values)

    with Session(mlp.graph) as session:
        expected_losses, expected_weights, _ = steps(session)
    (task0, task1), rendezvous = run_job(mlp.graph, steps)
    for losses, weights, _ in (task0, task1):
        np.testing.assert_allclose(losses, expected_losses, rtol=1e-6)
        for got, want in zip(weights, expected_weights, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6)
    assert expected_losses[2] < expected_losses[0]  # it trains
    assert task0[2] == ["b1:0", "w1:0"] and task1[2] == ["w2:0"]  # each holds its own
    assert rendezvous.pending() == {}


def test_compiled_parts_give_the_same_results(mlp: Mlp, monkeypatch: pytest.MonkeyPatch) -> None:
    # (the compiler keeps each _Send and _Recv in its place: a stateful op seals every fused
    # loop; NumPy's backend, since numba's first compile can outlast the test's timeouts)
    monkeypatch.setenv("EAGERFLOW_JIT_BACKEND", "numpy")
    expected = _unsplit(mlp)

    def step(session: Session) -> list[Any]:
        session.run(mlp.init)
        results = flatten(session.run(mlp.fetches, mlp.feeds))
        plan = session.plan(mlp.fetches, mlp.feeds)
        assert plan.task_step is not None and session.compiled(plan).programs  # it ran compiled
        return results

    results, rendezvous = run_job(mlp.graph, step, jit_compile=True)
    for task in results:
        for got, want in zip(task, expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6)
    assert rendezvous.pending() == {}


def test_a_received_value_of_another_dtype_or_shape_is_refused() -> None:
    g = Graph()
    with g.as_default(), device("/task:1"):
        y = ef.constant([1.0, 2.0]) + 1.0
    rendezvous = ThreadRendezvous(timeout=0.5)
    key = ("/job:worker/replica:0/task:1/device:CPU:0;0000000000000000;"
           "/job:worker/replica:0/task:0/device:CPU:0;add:0;0:0")  # fmt: skip
    rendezvous.send(key, np.array([1.0, 2.0, 3.0], np.float32))
    with pytest.raises(InvalidArgumentError, match=r"_Recv 'add:0': expected float32 of shape "
                       r"\(2,\), received float32 of shape \(3,\)"):  # fmt: skip
        Session(g, job=Job(0, 2, rendezvous)).run(y)
