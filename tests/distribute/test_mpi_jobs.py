"""Real 2-process jobs through the launcher (``python -m eagerflow.distribute.run -n 2``):
output, faults, timeouts, and data-parallel training equal to one process. Each job is
bounded twice: by the launcher's ``--timeout`` and by the subprocess's timeout here."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import workload

pytest.importorskip("mpi4py", reason="the [mpi] extra (mpi4py, mpich) is not installed")

JOBS = Path(__file__).parent / "jobs"
CHAPTER_JOBS = Path(__file__).resolve().parents[2] / "site" / "docs" / "chapters" / "jobs.py"
LIMIT = 60  # seconds: no job here may take longer, whatever happens
pytestmark = pytest.mark.timeout(LIMIT + 30)


def launch(*args: str, timeout: float = 30, env: dict[str, str] | None = None):
    """Run the launcher with ``args``; the completed process and the seconds it took."""
    command = [sys.executable, "-m", "eagerflow.distribute.run", "--timeout", str(timeout)]
    start = time.monotonic()
    done = subprocess.run([*command, *args], capture_output=True, text=True, timeout=LIMIT,
                          env=env)  # fmt: skip
    return done, time.monotonic() - start


def test_the_launcher_runs_n_tasks_with_prefixed_output_and_one_blas_thread():
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    env["PATH"] = "/usr/bin:/bin"  # no venv: the launcher puts its bin/ (mpiexec) first
    # --hosts is handed to mpiexec -hosts (one machine here: localhost)
    hello = str(JOBS / "hello.py")
    done, _ = launch("-n", "2", "--hosts", "localhost", hello, "a", "--b", env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for rank in (0, 1):
        mine = [line for line in lines if line.startswith(f"[worker {rank}] ")]
        assert f"[worker {rank}] rank {rank} of 2 sum [3.0, 3.0, 3.0] args ['a', '--b']" in mine
        other = float(1 - rank)
        assert f"[worker {rank}] max [1] broadcast [11.0, 11.0] received [{other}, {other}]" in mine
        assert f"[worker {rank}] threads 1 1" in mine
        assert f"[worker {rank}] mpiexec {Path(sys.executable).parent / 'mpiexec'}" in mine
    assert len(lines) == 8


@pytest.mark.parametrize(
    ("how", "says"),
    [
        ("exit", "task 1 (/job:worker/task:1) exited with status 3"),
        ("kill", "task 1 (/job:worker/task:1) was killed by SIGKILL"),
        ("raise", "[worker 1] RuntimeError: task 1 fails on purpose"),
    ],
)
def test_a_task_that_dies_ends_the_job_naming_it(how, says):
    done, seconds = launch("-n", "2", str(JOBS / "fail.py"), how)
    assert done.returncode != 0
    assert says in done.stdout + done.stderr
    assert "eagerflow.distribute.run: the job failed" in done.stderr
    assert "the all-reduce finished" not in done.stdout
    assert seconds < 30


def test_a_hanging_task_is_ended_by_the_timeout_and_named():
    # a second before the timeout each task still running prints its Python stack: task 1 is
    # in its own code (the sleep), task 0 waits for it in an all-reduce
    done, seconds = launch("-n", "2", str(JOBS / "fail.py"), "hang", timeout=5)
    assert done.returncode == 124
    assert "the job ran past --timeout 5 s and was ended" in done.stderr
    assert "task 1 (/job:worker/task:1) hung, running fail.py:" in done.stderr, done.stderr
    assert "task 0 was waiting in MPI communicator.py:" in done.stderr, done.stderr
    assert '[worker 1]   File "' in done.stdout  # the stacks, prefixed by their task
    assert seconds < 25


def test_two_workers_train_as_one_process_on_the_global_batch(tmp_path):
    # (digits: a small CNN on handwritten digits, global batch 64, through fit)
    modes = ("eager", "function", "fit", "digits")
    done, _ = launch("-n", "2", str(JOBS / "train.py"), str(tmp_path), *modes)
    assert done.returncode == 0, done.stdout + done.stderr
    for mode in modes:
        alone = workload.train(None, mode)
        batch = workload.DIGITS_BATCH if mode == "digits" else workload.GLOBAL_BATCH
        assert alone["rows"] == [batch]
        for rank in (0, 1):
            got = np.load(tmp_path / f"{mode}-{rank}.npz")
            assert list(got["rows"]) == [batch // 2]
            np.testing.assert_allclose(got["losses"], alone["losses"], rtol=1e-5)
            for i, want in enumerate(alone["weights"]):
                np.testing.assert_allclose(got[f"w{i}"], want, rtol=1e-5, atol=1e-6)


def test_a_placed_graph_split_across_two_workers_equals_the_unsplit_graph():
    # chapter 19's job: an MLP split across the tasks, run whole first, then as each task's
    # part: loss, gradients and a training step compared (site/docs/chapters/jobs.py)
    done, _ = launch("-n", "2", str(CHAPTER_JOBS), "split")
    assert done.returncode == 0, done.stdout + done.stderr
    for rank in (0, 1):  # one layer's MatMul each, its part talking to the other's; equal
        assert (f"[worker {rank}] task {rank} ran 1 MatMul, 1 _Send, 1 _Recv; loss "
                in done.stdout), done.stdout  # fmt: skip
    lines = [line for line in done.stdout.splitlines() if "largest difference" in line]
    assert len(lines) == 2 and all(line.endswith("whole graph: 0.0e+00") for line in lines)
