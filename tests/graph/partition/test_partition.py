"""``partition``: a placed graph cut into one graph per task, joined by ``_Send``/``_Recv``
pairs whose keys every task computes alike."""

from __future__ import annotations

import json
import threading
from typing import Any

import numpy as np
import pytest
from partition_graphs import Mlp
from thread_rendezvous import ThreadRendezvous

import eagerflow.tensor as ef
from eagerflow.graph import (
    Graph,
    RendezvousKey,
    Session,
    control_dependencies,
    device,
    import_graph_def,
    no_op,
    partition,
    partition_to_mermaid,
    placeholder,
)
from eagerflow.graph.core.partition import Part
from eagerflow.graph.core.send_recv import using_rendezvous


def _ops(part: Part, op_type: str) -> list[str]:
    return [o.name for o in part.get_operations() if o.type == op_type]


def _describe(parts: dict[int, Part]) -> list[tuple[int, str, str, list[str], str, list[str]]]:
    """Every node of every part, as plain data."""
    return [
        (task, o.name, o.type, [t.name for t in o.inputs], o.device,
         sorted(f"{k}={v}" for k, v in o.attrs.items() if isinstance(v, str | bool | int)))
        for task, part in parts.items() for o in part.get_operations()
    ]  # fmt: skip


def _two_task_graph() -> tuple[Graph, ef.Tensor, ef.Tensor]:
    g = Graph()
    with g.as_default():
        with device("/job:worker/task:0"):
            x = placeholder(ef.float32, (2,), name="x")
            a = ef.multiply(x, 2.0, name="a")
        with device("/job:worker/task:1"):
            b = ef.add(a, 1.0, name="b")
            c = ef.multiply(a, b, name="c")  # a second use of a: still one pair
        d = ef.subtract(c, a, name="d")  # unplaced: task 0
    return g, c, d


def test_each_cut_edge_gets_one_send_and_one_recv_with_tensorflows_key() -> None:
    g, _, _ = _two_task_graph()
    parts = partition(g)
    assert sorted(parts) == [0, 1]
    assert _ops(parts[0], "_Send") == ["_send_a_0_to_1"]
    assert _ops(parts[1], "_Recv") == ["_recv_a_0_from_0"]
    assert _ops(parts[1], "_Send") == ["_send_c_0_to_0"]
    assert _ops(parts[0], "_Recv") == ["_recv_c_0_from_1"]
    recv = parts[1].get_operation_by_name("_recv_a_0_from_0")
    assert recv.attrs == {
        "tensor_name": "a:0",
        "send_device": "/job:worker/replica:0/task:0/device:CPU:0",
        "send_device_incarnation": 0,
        "recv_device": "/job:worker/replica:0/task:1/device:CPU:0",
        "client_terminated": False,
        "dtype": ef.float32,
        "shape": (2,),
    }
    key = str(RendezvousKey(recv.attrs["send_device"], recv.attrs["recv_device"], "a:0"))
    assert key == ("/job:worker/replica:0/task:0/device:CPU:0;0000000000000000;"
                   "/job:worker/replica:0/task:1/device:CPU:0;a:0;0:0")  # fmt: skip
    parsed = RendezvousKey.parse(key)
    assert (parsed.send_task, parsed.recv_task, parsed.tensor_name) == (0, 1, "a:0")
    # both uses on task 1 read the one _Recv; the copies keep their names and devices
    b, c = parts[1].get_operation_by_name("b"), parts[1].get_operation_by_name("c")
    assert b.inputs[0] is recv.outputs[0] and c.inputs[0] is recv.outputs[0]
    assert c.device == "/job:worker/task:1"
    assert [o.name for o in parts[0].get_operations() if o.type == "Sub"] == ["d"]


def test_the_partition_is_deterministic_and_leaves_the_graph_alone() -> None:
    g, _, _ = _two_task_graph()
    before = [(o.name, o.device) for o in g.get_operations()]
    first, second = partition(g), partition(g)
    assert _describe(first) == _describe(second)
    assert [(o.name, o.device) for o in g.get_operations()] == before
    # another process building the same graph computes the same parts
    assert _describe(partition(_two_task_graph()[0])) == _describe(first)


def test_a_fetch_is_sent_to_every_task_that_does_not_make_it() -> None:
    g, c, d = _two_task_graph()
    parts = partition(g, num_tasks=3, fetches=[c, d])
    assert sorted(parts) == [0, 1, 2]
    assert _ops(parts[1], "_Send") == ["_send_c_0_to_0", "_send_c_0_to_2"]
    assert _ops(parts[0], "_Send") == ["_send_a_0_to_1", "_send_d_0_to_1", "_send_d_0_to_2"]
    assert _ops(parts[2], "_Recv") == ["_recv_c_0_from_1", "_recv_d_0_from_0"]
    assert parts[2].received[c].op.name == "_recv_c_0_from_1"
    assert parts[0].received[c].op.name == "_recv_c_0_from_1"  # the cut edge's pair serves


def test_ops_on_a_variable_go_with_the_variable(mlp: Mlp) -> None:
    parts = partition(mlp.graph)
    w2_reads = [o for o in mlp.graph.get_operations()
                if o.op_def.reads_state and o.attrs["variable"] is mlp.w2]  # fmt: skip
    assert w2_reads and all(o in parts[1].copies for o in w2_reads)
    # the backward pass is cut where the forward pass is: layer 1's gradient is on task 0
    assert mlp.grads[0].op.device == "/job:worker/task:0"
    assert mlp.grads[2].op.device == "/job:worker/task:1"
    assert mlp.grads[0].op in parts[0].copies


def test_a_control_edge_across_tasks_sends_a_dummy_after_its_input() -> None:
    g = Graph()
    with g.as_default():
        with device("/task:1"):
            first = no_op(name="first")
        with control_dependencies([first]):
            second = no_op(name="second")
    parts = partition(g)
    dummy = parts[1].get_operation_by_name("_control_first")
    assert dummy.control_inputs == (parts[1].copies[first],)
    (send,) = [o for o in parts[1].get_operations() if o.type == "_Send"]
    assert send.inputs[0] is dummy.outputs[0] and send.attrs["tensor_name"] == "^first"
    (recv,) = parts[0].copies[second].control_inputs
    assert recv.type == "_Recv" and recv.attrs["tensor_name"] == "^first"
    order = parts[0].get_operations()  # still a topological order: the signal comes first
    assert order.index(recv) < order.index(parts[0].copies[second])


def test_unknown_tasks_and_mixed_jobs_are_refused_by_name() -> None:
    g, _, _ = _two_task_graph()
    with pytest.raises(ValueError, match=r"'Const_1' is placed on /job:worker/task:1's task 1, but "
                       r"the job has 1 task\(s\) \(0 to 0\)"):  # fmt: skip
        partition(g, num_tasks=1)
    with g.as_default(), device("/job:ps/task:0"):
        ef.constant(1.0)
    with pytest.raises(ValueError, match=r"several jobs \['ps', 'worker'\]"):
        partition(g)


def test_a_partition_draws_tasks_as_boxes_and_send_recv_pairs_as_arrows() -> None:
    g, c, _ = _two_task_graph()
    picture = partition_to_mermaid(partition(g, fetches=[c]))
    assert picture.startswith("flowchart LR")
    assert 'subgraph n_scope_task_0_["task 0"]' in picture
    assert 'subgraph n_scope_task_1_["task 1"]' in picture
    assert 'n_task0__send_a_0_to_1 -.->|"a:0"| n_task1__recv_a_0_from_0' in picture
    assert 'n_task1__send_c_0_to_0 -.->|"c:0"| n_task0__recv_c_0_from_1' in picture
    np.testing.assert_equal(picture.count("-.->"), 2)


def test_parts_round_trip_through_graph_def_and_still_talk(mlp: Mlp) -> None:
    # (the round trip of _Send and _Recv that tests/graph/test_graph_def.py counts on)
    parts = partition(mlp.graph, fetches=[mlp.loss])
    defs = [json.loads(json.dumps(parts[task].as_graph_def())) for task in (0, 1)]
    assert {n["op"] for d in defs for n in d["node"]} >= {"_Send", "_Recv"}
    rendezvous = ThreadRendezvous()
    feeds = {"x:0": mlp.feeds[mlp.x], "y:0": mlp.feeds[mlp.y]}
    losses: list[Any] = [None, None]

    def task(i: int) -> None:
        graph = Graph()
        with graph.as_default():
            import_graph_def(defs[i], name="")
        sends = [o for o in graph.get_operations() if o.type == "_Send"]
        init = [o for o in graph.get_operations() if o.name == "init"]
        here = {k: v for k, v in feeds.items() if k[0] in "xy"[i]}
        signals = [s for s in sends if s.inputs[0].op.name.startswith("_control_")]
        with Session(graph) as session, using_rendezvous(rendezvous):
            session.run([*init, *signals])  # task 1's initializers signal task 0's init
            loss = graph.get_tensor_by_name("Mean:0" if i else "_recv_Mean_0_from_1:0")
            # (every data send: the backward pass's too, which nothing here receives)
            losses[i] = session.run([loss, *[s for s in sends if s not in signals]], here)[0]

    threads = [threading.Thread(target=task, args=(i,), daemon=True) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    with Session(mlp.graph) as session:
        session.run(mlp.init)
        expected = session.run(mlp.loss, mlp.feeds)
    np.testing.assert_allclose(losses, [expected, expected], rtol=1e-6)
