"""The benchmark scripts run (what they print is measured, so only its form is checked)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def run_script(*args: str) -> list[str]:
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                            check=True, cwd=BENCHMARKS, timeout=300)  # fmt: skip
    return result.stdout.splitlines()


def test_run_prints_a_ratio_per_contender() -> None:
    lines = run_script("run.py", "W1", "--rounds", "2", "--seconds", "0.2")
    assert lines[0].startswith("W1: ")
    assert re.fullmatch(r"  numpy +[\d.]+ ns/op +1\.00x numpy", lines[1])
    assert re.fullmatch(r"  eagerflow +[\d.]+ ns/op +[\d.]+x numpy  \(target <= 3x: (met|MISSED)\)",
                        lines[2])  # fmt: skip


def test_breakdown_splits_a_step_into_kernels_and_python() -> None:
    lines = run_script("breakdown.py", "W2", "--rounds", "2")
    assert lines[0].startswith("W2: ")
    labels = [re.sub(r" {2,}[-\d.]+ us.*", "", line).strip() for line in lines[1:7]]
    assert labels == ["hand-written NumPy", "eagerflow, eager", "its 6 kernel calls alone",
                      "the same, each result freed at once", "its Python alone (kernels replayed)",
                      "what neither explains alone"]  # fmt: skip
    # y = a*b + a; the tape's seed; the two products of Mul's gradient and the sum of a's
    calls = {line.split()[0]: line.split()[1] for line in lines[8:]}
    assert calls == {"Mul": "x3", "AddV2": "x2", "OnesLike": "x1"}


def test_a_workload_without_a_target_prints_ratios_only() -> None:
    # W7 (a GELU + layer-norm block on 4096x256): a step takes tens of ms, a run ~2 s
    lines = run_script("run.py", "W7", "--rounds", "2", "--seconds", "0.2")
    assert lines[0].startswith("W7: ")
    names = [line.split()[0] for line in lines[1:]]
    assert names[:2] == ["numpy", "eagerflow"]
    assert set(names[2:]) <= {"pytorch"}  # "pytorch" and "pytorch F", when torch is installed
    for line in lines[1:]:
        assert re.fullmatch(r"  [\w ]+? +[\d.]+ ns/op +[\d.]+x numpy", line), line


def test_the_cnn_workload_checks_its_numpy_step_and_compares_with_pytorch():
    # W8 (the digits CNN): making it checks the hand-written gradients against eagerflow's
    lines = run_script("run.py", "W8", "--rounds", "2", "--seconds", "0.2")
    assert lines[0].startswith("W8: ")
    assert re.fullmatch(r"  numpy +[\d.]+ ns/op +1\.00x numpy", lines[1])
    target = r"\(target <= 1\.5x: (met|MISSED)\)"
    assert re.fullmatch(r"  eagerflow +[\d.]+ ns/op +[\d.]+x numpy  " + target, lines[2])
    if len(lines) > 3:  # torch is installed
        assert re.fullmatch(r"  pytorch +[\d.]+ ns/op +[\d.]+x numpy", lines[3])
        assert re.fullmatch(r"  \(eagerflow / pytorch: [\d.]+x; target <= 1x: (met|MISSED)\)",
                            lines[4])  # fmt: skip
        assert len(lines) == 5


def test_distributed_prints_all_reduce_and_step_rates_on_1_and_2_workers() -> None:
    pytest.importorskip("mpi4py")
    lines = run_script("distributed.py", "--rounds", "1", "--steps", "2", "--calls", "2",
                       "--sizes", "1000", "--timeout", "120")  # fmt: skip
    number = r" *[\d.]+"
    assert re.fullmatch(
        rf"all-reduce of +1000 float32 on 2 workers: mpi4py{number} ms "
        rf"\({number} GB/s\), eagerflow{number} ms,{number}x mpi4py",
        lines[0],
    )
    for line, workers in zip(lines[1:], (1, 2), strict=True):
        assert re.fullmatch(rf"data-parallel MLP step, global batch 128, {workers} worker\(s\): "
                            rf"numpy{number} steps/s, eagerflow{number} steps/s,{number}x numpy",
                            line), line  # fmt: skip
