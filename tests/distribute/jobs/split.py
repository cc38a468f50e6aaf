"""A job that runs a placed graph: a two-layer MLP, layer 1 on task 0, layer 2 and the loss on
task 1, its gradients placed with their forward ops. Each task first runs the graph whole
(no job yet: a process alone), then as its task of the job (``Server``), twice, and one
training step; it writes both results to ``{folder}/task{rank}.npz``."""

import sys
from pathlib import Path

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.distribute import Server
from eagerflow.graph import (
    Graph,
    Session,
    device,
    global_variables_initializer,
    gradients,
    group,
    placeholder,
)
from eagerflow.tensor.nest import flatten

rng = np.random.default_rng(7)
graph = Graph()
with graph.as_default():
    with device("/job:worker/task:0"):
        x = placeholder(ef.float32, (4, 3), name="x")
        w1 = Variable(rng.normal(size=(3, 5)).astype(np.float32), name="w1")
        b1 = Variable(np.zeros(5, np.float32), name="b1")
        hidden = ef.maximum(ef.matmul(x, w1) + b1, 0.0)
    with device("/job:worker/task:1"):
        y = placeholder(ef.float32, (4, 2), name="y")
        w2 = Variable(rng.normal(size=(5, 2)).astype(np.float32), name="w2")
        loss = ef.reduce_mean(ef.square(ef.matmul(hidden, w2) - y))
    variables = [w1, b1, w2]
    grads = gradients(loss, variables)
    train = group(*[v.assign_sub(0.1 * g) for v, g in zip(variables, grads, strict=True)])
    init = global_variables_initializer()
feeds = {
    x: rng.normal(size=(4, 3)).astype(np.float32),
    y: rng.normal(size=(4, 2)).astype(np.float32),
}
fetches = [hidden, loss, grads]


def results(session: Session) -> list[np.ndarray]:
    session.run(init)
    first = flatten(session.run(fetches, feeds))
    again = flatten(session.run(fetches, feeds))  # the same keys: a second step
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    session.run(train, feeds)
    return [*first, session.run(loss, feeds)]


alone = results(Session(graph))
with Server() as server:
    session = Session(graph)
    split = results(session)
    task = server.task_index
    ran = [step.operation.type for step in session.plan([loss], feeds).steps]
np.savez(Path(sys.argv[1]) / f"task{task}.npz", *alone, *split)
print(
    f"task {task}: {len(split)} results; ran {ran.count('MatMul')} MatMul, "
    f"{ran.count('_Send')} _Send, {ran.count('_Recv')} _Recv"
)
