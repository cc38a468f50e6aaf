"""Benchmarks: eagerflow's overhead against hand-written NumPy (and PyTorch when installed).

Each workload is a set of contenders doing the same work. They are timed interleaved in one
process (round 1: A, B, C; round 2: A, B, C; ...) so that a slow moment of the machine hits
all of them alike, and each contender's time is its best round: on a shared machine, noise
only ever adds time. Only ratios are printed and compared with targets; nothing asserts on
speed (tests must not depend on how busy the machine is).

    python benchmarks/run.py              # every workload
    python benchmarks/run.py W1 --rounds 50
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Step = Callable[[], object]


@dataclass
class Workload:
    """One benchmark: contenders that each run ``ops_per_call`` ops per call."""

    key: str
    title: str
    contenders: dict[str, Step]
    target: float | None = None  # at most this many times hand-written NumPy
    ops_per_call: int = 1
    notes: list[str] = field(default_factory=list)


def best_times(contenders: dict[str, Step], rounds: int, budget: float) -> dict[str, float]:
    """Seconds per call for each contender: the best of ``rounds`` interleaved rounds."""
    # Calibrate: enough calls per round that one round of the slowest takes ~budget/rounds.
    calls: dict[str, int] = {}
    for name, step in contenders.items():
        step()  # warm up (imports, caches)
        n, elapsed = 1, 0.0
        while elapsed < 0.002:
            start = time.perf_counter()
            for _ in range(n):
                step()
            elapsed = time.perf_counter() - start
            n *= 2
        calls[name] = max(1, int(n / 2 * (budget / rounds) / max(elapsed, 1e-9)))
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(rounds):
        for name, step in contenders.items():
            n = calls[name]
            start = time.perf_counter()
            for _ in range(n):
                step()
            best[name] = min(best[name], (time.perf_counter() - start) / n)
    return best


def w1_eager_add() -> Workload:
    from eagerflow import tensor as ef

    a = np.arange(4, dtype=np.float32)
    b = np.ones(4, dtype=np.float32)
    x, y = ef.constant(a), ef.constant(b)
    contenders: dict[str, Step] = {"numpy": lambda: a + b, "eagerflow": lambda: x + y}
    if importlib.util.find_spec("torch") is not None:
        import torch

        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        contenders["pytorch"] = lambda: ta + tb
    return Workload("W1", "eager add of two 4-element float32 tensors", contenders, target=3.0)


WORKLOADS: dict[str, Callable[[], Workload]] = {"W1": w1_eager_add}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", default=list(WORKLOADS))
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=3.0, help="time budget per contender")
    args = parser.parse_args(argv)
    for key in args.workloads:
        work = WORKLOADS[key]()
        times = best_times(work.contenders, args.rounds, args.seconds)
        base = times["numpy"]
        print(f"{work.key}: {work.title}")
        for name, seconds in times.items():
            per_op = seconds / work.ops_per_call
            ratio = seconds / base
            verdict = ""
            if name == "eagerflow" and work.target is not None:
                verdict = (
                    f"  (target <= {work.target:g}x: {'met' if ratio <= work.target else 'MISSED'})"
                )
            print(f"  {name:10s} {per_op * 1e9:10.1f} ns/op  {ratio:6.2f}x numpy{verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
