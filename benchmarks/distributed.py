"""Distribution benchmarks: all-reduce time and bandwidth against message size, and a
data-parallel training step on 1 and 2 worker processes (MPI, through the launcher).

The floor is hand-written: mpi4py's ``Allreduce`` on a NumPy buffer, and W4's NumPy MLP step
(784-256-10, global batch 128) whose gradients are packed into one buffer and all-reduced by
mpi4py, as Horovod does. eagerflow's contenders are the ``CollectiveAllReduce`` op
(``all_reduce_sum``) and a ``MultiWorkerMirroredStrategy`` step traced by ``function``.
Contenders are timed interleaved, every task running the same number of calls (a collective
waits for all tasks); each contender's time is its best round, as in ``run.py``. Only ratios
and rates are printed: nothing asserts on speed.

    python benchmarks/distributed.py                  # 1 and 2 workers
    python benchmarks/distributed.py --rounds 3 --steps 5 --sizes 1000 100000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread per worker (the launcher sets it too)

import numpy as np  # noqa: E402

Step = Callable[[], object]
GLOBAL_BATCH = 128


def timed(comm: Any, contenders: dict[str, Step], rounds: int, calls: int) -> dict[str, float]:
    """Seconds per call of each contender: the best of ``rounds`` interleaved rounds of
    ``calls`` calls, each round started and ended together on every task (a barrier)."""
    best = dict.fromkeys(contenders, float("inf"))
    for step in contenders.values():
        step()  # warm up: traces, first messages
    for _ in range(rounds):
        for name, step in contenders.items():
            comm.barrier()
            start = time.perf_counter()
            for _ in range(calls):
                step()
            comm.barrier()
            best[name] = min(best[name], (time.perf_counter() - start) / calls)
    return best


def all_reduce_contenders(size: int) -> dict[str, Step]:
    """mpi4py's Allreduce of ``size`` float32 numbers, and eagerflow's op on the same."""
    from mpi4py import MPI

    import eagerflow.tensor as ef
    from eagerflow.distribute import all_reduce_sum

    buffer = np.ones(size, np.float32)
    tensor = ef.constant(np.ones(size, np.float32))
    return {
        "mpi4py": lambda: MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, buffer, MPI.SUM),
        "eagerflow": lambda: all_reduce_sum(tensor),
    }


def mlp_arrays(rows: slice) -> dict[str, np.ndarray]:
    """W4's batch (this task's ``rows`` of it) and starting weights, the same on every task."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((GLOBAL_BATCH, 784)).astype(np.float32)
    y = rng.integers(0, 10, GLOBAL_BATCH)
    limit1, limit2 = np.sqrt(6 / (784 + 256)), np.sqrt(6 / (256 + 10))
    return {"x": x[rows], "y": y[rows],
            "w1": rng.uniform(-limit1, limit1, (784, 256)).astype(np.float32),
            "b1": np.zeros(256, np.float32),
            "w2": rng.uniform(-limit2, limit2, (256, 10)).astype(np.float32),
            "b2": np.zeros(10, np.float32)}  # fmt: skip


def numpy_step(a: dict[str, np.ndarray]) -> Step:
    """W4's NumPy step on this task's rows; the four gradients packed into one buffer, summed
    over the tasks by one mpi4py Allreduce, and divided by the global batch."""
    from mpi4py import MPI

    x, y, names = a["x"], a["y"], ("w1", "b1", "w2", "b2")
    rows = np.arange(len(x))
    packed = np.empty(sum(a[n].size for n in names), np.float32)

    def step() -> object:
        h_in = x @ a["w1"] + a["b1"]
        h = np.maximum(h_in, 0)
        logits = h @ a["w2"] + a["b2"]
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        d_logits = np.exp(log_probs)
        d_logits[rows, y] -= 1
        d_h = (d_logits @ a["w2"].T) * (h_in > 0)
        grads = {"w1": x.T @ d_h, "b1": d_h.sum(0), "w2": h.T @ d_logits, "b2": d_logits.sum(0)}
        offset = 0
        for n in names:
            packed[offset : offset + a[n].size] = grads[n].reshape(-1)
            offset += a[n].size
        MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, packed, MPI.SUM)
        offset = 0
        for n in names:
            a[n] -= np.float32(0.01 / GLOBAL_BATCH) * packed[offset : offset + a[n].size].reshape(
                a[n].shape
            )
            offset += a[n].size
        return None

    return step


def eagerflow_step(strategy: Any, a: dict[str, np.ndarray]) -> Step:
    """The same step with eagerflow: a traced function run by the strategy, whose optimizer
    averages the gradients over the tasks with one CollectiveAllReduce."""
    import eagerflow.graph as eg
    import eagerflow.tensor as ef
    from eagerflow import nn
    from eagerflow.autodiff import GradientTape

    with strategy.scope():
        model = nn.Sequential([nn.Dense(256, "relu"), nn.Dense(10)])
        model(ef.constant(a["x"][:1]))
        for v, name in zip(model.trainable_variables, ("w1", "b1", "w2", "b2"), strict=True):
            v.assign(a[name])
        optimizer = nn.GradientDescentOptimizer(0.01)
    x, y = ef.constant(a["x"]), ef.constant(a["y"])

    @eg.function
    def step(x: Any, y: Any) -> Any:
        with GradientTape() as tape:
            loss = ef.reduce_mean(
                nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=model(x))
            )
        variables = model.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    return lambda: strategy.run(step, args=(x, y))


def worker(args: argparse.Namespace) -> None:
    """One task's measurements; task 0 writes them to ``args.out`` as JSON."""
    from eagerflow.distribute import MultiWorkerMirroredStrategy
    from eagerflow.distribute.communicator import MPICommunicator

    strategy = MultiWorkerMirroredStrategy()  # (its communicator runs eagerflow's all-reduces)
    comm = MPICommunicator()
    tasks, rank = comm.size, comm.rank
    results: dict[str, Any] = {"tasks": tasks, "all_reduce": {}, "step": {}}
    if tasks > 1:
        for size in args.sizes:
            contenders = all_reduce_contenders(size)
            results["all_reduce"][size] = timed(comm, contenders, args.rounds, args.calls)
    share = GLOBAL_BATCH // tasks
    rows = slice(rank * share, (rank + 1) * share)
    contenders = {"numpy": numpy_step(mlp_arrays(rows)),
                  "eagerflow": eagerflow_step(strategy, mlp_arrays(rows))}  # fmt: skip
    results["step"] = timed(comm, contenders, args.rounds, args.steps)
    if rank == 0:
        Path(args.out).write_text(json.dumps(results))


def launch(tasks: int, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """Run this script as ``tasks`` workers through eagerflow's launcher; task 0's results."""
    command = [sys.executable, "-m", "eagerflow.distribute.run", "-n", str(tasks),
               "--timeout", str(args.timeout), __file__, "--worker", "--out", str(out),
               "--rounds", str(args.rounds), "--steps", str(args.steps),
               "--calls", str(args.calls), "--sizes", *map(str, args.sizes)]  # fmt: skip
    shown = None if args.verbose else subprocess.DEVNULL
    subprocess.run(command, check=True, timeout=args.timeout + 30, stdout=shown)
    return dict(json.loads(out.read_text()))


def report(runs: list[dict[str, Any]]) -> None:
    """The tables: all-reduce per size (2 workers), then the step on 1 and 2 workers."""
    for run in runs:
        for size, times in run["all_reduce"].items():
            floor, ours = times["mpi4py"], times["eagerflow"]
            print(f"all-reduce of {int(size):>8} float32 on {run['tasks']} workers: "
                  f"mpi4py {floor * 1e3:8.3f} ms ({int(size) * 4 / floor / 1e9:6.2f} GB/s), "
                  f"eagerflow {ours * 1e3:8.3f} ms, {ours / floor:5.2f}x mpi4py")  # fmt: skip
    for run in runs:
        floor, ours = run["step"]["numpy"], run["step"]["eagerflow"]
        print(f"data-parallel MLP step, global batch {GLOBAL_BATCH}, {run['tasks']} worker(s): "
              f"numpy {1 / floor:7.1f} steps/s, eagerflow {1 / ours:7.1f} steps/s, "
              f"{ours / floor:5.2f}x numpy")  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20, help="all-reduces per round")
    parser.add_argument("--steps", type=int, default=20, help="training steps per round")
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--verbose", action="store_true", help="show the workers' output")
    args = parser.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    with tempfile.TemporaryDirectory() as folder:
        runs = [launch(n, args, Path(folder, f"{n}.json")) for n in args.workers]
    report(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
