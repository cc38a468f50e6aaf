"""Where an eager step's time goes: its NumPy kernels, or the framework's Python around them.

    python benchmarks/breakdown.py W4            # any workload of run.py
    python benchmarks/breakdown.py W6 --rounds 40

Four ways of running the same step, timed interleaved (as in run.py, best round wins):

- hand-written NumPy, the floor;
- eagerflow, eagerly;
- its kernels alone: the same kernel calls, on the same arrays, back to back (a recorder on
  the seam lists them while the step runs once). Their results are kept to the end of the
  step, as a tape keeps what the backward pass needs; a second line frees each at once, so
  the next kernel reuses its memory while it is still in cache. The two differ by what it
  costs to keep intermediate results alive;
- its Python alone: the step with every kernel replaced by a lookup of the result it gave
  when recorded, so only the framework runs (public functions, the seam, the tape, the
  rules, layers and optimizer).

The eager time minus the kept kernels' time and the Python's is what neither explains
alone: mostly the caches, which the big kernels and the framework's Python take from each
other. Then a table of the kernels
by op, each call timed where it runs in the step.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

import run  # sets one BLAS thread before NumPy loads

from eagerflow.tensor.execution import recording
from eagerflow.tensor.registry import OPS, OpDef

Call = tuple[OpDef, tuple[Any, ...], Any]  # an op, its input arrays, its attributes
Kernel = Callable[..., Any]


class KernelCalls:
    """A recorder on the seam: the op, input arrays and attributes of every op that runs."""

    def __init__(self) -> None:
        self.calls: list[Call] = []

    def record(self, op: OpDef, inputs: Any, attrs: Any, outputs: Any) -> None:
        self.calls.append((op, tuple(t._value for t in inputs), attrs))


@contextmanager
def kernels_replaced(make: Callable[[str, Kernel], Kernel]) -> Iterator[None]:
    """Inside the block each op's kernel is ``make(op_name, kernel)`` (a measuring trick:
    OpDefs are frozen, so the field is set by force, and put back after)."""
    saved = {name: op.kernel for name, op in OPS.items()}
    for name, op in OPS.items():
        object.__setattr__(op, "kernel", make(name, saved[name]))
    try:
        yield
    finally:
        for name, op in OPS.items():
            object.__setattr__(op, "kernel", saved[name])


def best_of(step: Callable[[], object], rounds: int, calls: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            step()
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", help="e.g. W4 (see run.py)")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args(argv)
    work = run.WORKLOADS[args.workload]()
    numpy_step, eager_step = work.contenders["numpy"], work.contenders["eagerflow"]
    for _ in range(5):
        eager_step()

    recorder = KernelCalls()
    with recording(recorder):
        eager_step()
    kernel_calls = recorder.calls

    def kernels_kept() -> list[Any]:  # every result lives to the end of the step
        return [op.kernel(*arrays, **attrs) for op, arrays, attrs in kernel_calls]

    def kernels_dropped() -> None:  # each result is freed at once: its memory is reused hot
        for op, arrays, attrs in kernel_calls:
            op.kernel(*arrays, **attrs)

    results: list[Any] = []  # what each kernel call returned, in order

    def remembering(name: str, kernel: Kernel) -> Kernel:
        def call(*args: Any, **kwargs: Any) -> Any:
            results.append(kernel(*args, **kwargs))
            return results[-1]

        return call

    with kernels_replaced(remembering):
        eager_step()
    position = 0

    def replay(*args: Any, **kwargs: Any) -> Any:
        nonlocal position
        position += 1
        return results[position - 1]

    def python_alone() -> None:  # (run with kernels_replaced(replaying))
        nonlocal position
        position = 0
        eager_step()

    def replaying(name: str, kernel: Kernel) -> Kernel:
        return replay

    gc.collect()
    gc.freeze()
    ways = {"numpy": numpy_step, "eager": eager_step, "kept": kernels_kept,
            "dropped": kernels_dropped, "python": python_alone}  # fmt: skip
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(args.rounds):  # each round: each way for ~50 ms
        for name, f in ways.items():
            with kernels_replaced(replaying) if name == "python" else nullcontext():
                calls = max(1, int(0.05 / max(best_of(f, 1, 1), 1e-7)))
                best[name] = min(best[name], best_of(f, 1, calls))

    def line(label: str, seconds: float, ratio: bool = True) -> None:
        times = f"{seconds / best['numpy']:5.2f}x" if ratio else ""
        print(f"  {label:38s} {seconds * 1e6:9.1f} us  {times}".rstrip())

    print(f"{work.key}: {work.title}; per step, best of {args.rounds} interleaved rounds")
    line("hand-written NumPy", best["numpy"])
    line("eagerflow, eager", best["eager"])
    line(f"its {len(kernel_calls)} kernel calls alone", best["kept"])
    line("  the same, each result freed at once", best["dropped"])
    line("its Python alone (kernels replayed)", best["python"], ratio=False)
    rest = best["eager"] - best["kept"] - best["python"]
    line("what neither explains alone", rest, ratio=False)

    # each kernel call timed in place, in the real step (best of the rounds)
    timings: list[float] = []
    clock = time.perf_counter

    def timed(name: str, kernel: Kernel) -> Kernel:
        def call(*a: Any, **k: Any) -> Any:
            start = clock()
            result = kernel(*a, **k)
            timings.append(clock() - start)
            return result

        return call

    fastest: list[float] = []
    with kernels_replaced(timed):
        for _ in range(args.rounds * 5):
            timings.clear()
            eager_step()
            fastest = [min(pair) for pair in zip(fastest or timings, timings, strict=True)]
    by_op: dict[str, list[float]] = defaultdict(list)
    for (op, _, _), seconds in zip(kernel_calls, fastest, strict=True):
        by_op[op.name].append(seconds)
    print("  kernels by op, each call timed in place:")
    for name, times in sorted(by_op.items(), key=lambda item: -sum(item[1])):
        print(f"    {name:38s} x{len(times):<3d} {sum(times) * 1e6:9.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
