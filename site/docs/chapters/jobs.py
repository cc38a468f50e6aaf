"""The jobs of chapter 19, each run on several processes by eagerflow's launcher:

    python -m eagerflow.distribute.run -n 2 jobs.py split            # a placed graph, cut in two
    python -m eagerflow.distribute.run -n 2 jobs.py train out.npz    # data-parallel training
    python -m eagerflow.distribute.run -n 2 jobs.py all_reduce       # all-reduce time and size

Every process runs this same script; its task is its MPI rank. Each prints what its task did.
"""

from __future__ import annotations

import sys
import time
from typing import Any

import numpy as np

import eagerflow.graph as eg
import eagerflow.tensor as ef
from eagerflow import nn
from eagerflow.autodiff import GradientTape, Variable
from eagerflow.distribute import (
    MPICommunicator,
    MultiWorkerMirroredStrategy,
    Server,
    all_reduce_sum,
)
from eagerflow.graph import Graph, Session, device, gradients, placeholder


def build_mlp(training: bool = True) -> tuple[Graph, dict[str, Any]]:
    """A two-layer MLP with its first layer on task 0, its second layer and the loss on task
    1; with ``training``, the gradients (each placed with its forward op) and a step."""
    rng = np.random.default_rng(7)
    graph = Graph()
    with graph.as_default():
        with device("/job:worker/task:0"):
            x = placeholder(ef.float32, (4, 3), name="x")
            w1 = Variable(rng.normal(size=(3, 5)).astype(np.float32), name="w1")
            b1 = Variable(np.zeros(5, np.float32), name="b1")
            hidden = ef.nn.relu(ef.matmul(x, w1) + b1)
        with device("/job:worker/task:1"):
            y = placeholder(ef.float32, (4, 2), name="y")
            w2 = Variable(rng.normal(size=(5, 2)).astype(np.float32), name="w2")
            loss = ef.reduce_mean(ef.square(ef.matmul(hidden, w2) - y))
        if not training:
            return graph, {"loss": loss}
        variables = [w1, b1, w2]
        grads = gradients(loss, variables)
        train = eg.group(*[v.assign_sub(0.1 * g) for v, g in zip(variables, grads, strict=True)])
        init = eg.global_variables_initializer()
    feeds = {x: rng.normal(size=(4, 3)).astype(np.float32),
             y: rng.normal(size=(4, 2)).astype(np.float32)}  # fmt: skip
    return graph, {"loss": loss, "grads": grads, "train": train, "init": init, "feeds": feeds}


def _loss_and_gradients(session: Session, mlp: dict[str, Any]) -> list[np.ndarray]:
    """The loss and the gradients, then the loss after one training step."""
    session.run(mlp["init"])
    loss, grads = session.run([mlp["loss"], mlp["grads"]], mlp["feeds"])
    session.run(mlp["train"], mlp["feeds"])
    return [loss, *grads, session.run(mlp["loss"], mlp["feeds"])]


def split() -> None:
    """Run the MLP whole (before joining the job: a process alone), then as this task's part
    of the job; print what the part ran and how far its results are from the whole's."""
    graph, mlp = build_mlp()
    whole = _loss_and_gradients(Session(graph), mlp)
    with Server() as server:
        session = Session(graph)
        part = _loss_and_gradients(session, mlp)
        ran = [step.operation.type for step in session.plan([mlp["loss"]], mlp["feeds"]).steps]
    difference = max(float(np.max(np.abs(a - b))) for a, b in zip(whole, part, strict=True))
    print(f"task {server.task_index} ran {ran.count('MatMul')} MatMul, {ran.count('_Send')} "
          f"_Send, {ran.count('_Recv')} _Recv; loss {float(part[0]):.6f}; largest difference "
          f"from the whole graph: {difference:.1e}")  # fmt: skip


def digits() -> tuple[np.ndarray, np.ndarray]:
    """The handwritten digits of chapter 16, as 64 pixels a row."""
    (x, y), _ = nn.datasets.load_digits()
    return x.reshape(len(x), -1).astype(np.float32) / 16, y


def train(out: str) -> None:
    """Train an MLP on the digits with ``fit``, data-parallel: each task reads its share of
    every global batch of 64. Then time a training step traced by ``function`` on a global
    batch of 512. Task 0 saves the weights and losses to ``out``, and prints the rate."""
    strategy = MultiWorkerMirroredStrategy()
    x, y = digits()
    with strategy.scope():
        ef.set_seed(0)
        model = nn.Sequential([nn.Dense(32, "relu"), nn.Dense(10)])
        optimizer = nn.GradientDescentOptimizer(0.2)
        history = nn.fit(model, x[:1024], y[:1024], loss="sparse_softmax_cross_entropy",
                         optimizer=optimizer, batch_size=64, epochs=3, seed=0,
                         verbose=0)  # fmt: skip
    losses = [float(strategy.reduce("MEAN", v)) for v in history.history["loss"]]
    rate = _steps_per_second(strategy, model, optimizer, x, y)
    if strategy.cluster_resolver.task_id == 0:
        weights = np.concatenate([v.numpy().ravel() for v in model.trainable_variables])
        np.savez(out, weights=weights, losses=np.array(losses), rate=rate)
        print(f"{strategy.num_replicas_in_sync} worker(s): losses {np.round(losses, 4).tolist()}")


def _steps_per_second(strategy: Any, model: Any, optimizer: Any, x: Any, y: Any) -> float:
    """Training steps a second on a global batch of 512 (the best of 5 rounds of 10)."""
    share = 512 // strategy.num_replicas_in_sync
    rows = slice(
        strategy.cluster_resolver.task_id * share, (strategy.cluster_resolver.task_id + 1) * share
    )
    xb, yb = ef.constant(x[rows]), ef.constant(y[rows])

    @eg.function
    def step(xb: Any, yb: Any) -> Any:
        with GradientTape() as tape:
            loss = ef.reduce_mean(
                nn.sparse_softmax_cross_entropy_with_logits(labels=yb, logits=model(xb))
            )
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    comm, best = MPICommunicator(), float("inf")
    strategy.run(step, args=(xb, yb))  # the trace
    for _ in range(5):
        comm.barrier()
        start = time.perf_counter()
        for _ in range(10):
            strategy.run(step, args=(xb, yb))
        comm.barrier()
        best = min(best, (time.perf_counter() - start) / 10)
    return 1 / best


def all_reduce() -> None:
    """The time of one all-reduce of n float32 numbers, by eagerflow's op and by mpi4py's
    own ``Allreduce`` (the floor), for n from a thousand to a million; task 0 prints them."""
    from mpi4py import MPI

    MultiWorkerMirroredStrategy()  # (its communicator runs the op's all-reduce)
    comm = MPICommunicator()
    for n in (1_000, 10_000, 100_000, 1_000_000):
        buffer = np.ones(n, np.float32)
        tensor = ef.constant(buffer)
        calls = {"eagerflow": lambda t=tensor: all_reduce_sum(t),
                 "mpi4py": lambda b=buffer: MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, b)}  # fmt: skip
        best = dict.fromkeys(calls, float("inf"))
        for _ in range(5):
            for name, call in calls.items():
                comm.barrier()
                start = time.perf_counter()
                for _ in range(10):
                    call()
                comm.barrier()
                best[name] = min(best[name], (time.perf_counter() - start) / 10)
        if comm.rank == 0:
            print(f"{n:>9,} float32: eagerflow {best['eagerflow'] * 1e3:7.3f} ms, "
                  f"mpi4py {best['mpi4py'] * 1e3:7.3f} ms, "
                  f"{n * 4 / best['mpi4py'] / 1e9:5.2f} GB/s")  # fmt: skip


if __name__ == "__main__":
    {"split": split, "train": train, "all_reduce": all_reduce}[sys.argv[1]](*sys.argv[2:])
