"""The launcher: ``python -m eagerflow.distribute.run -n 2 train.py [args]``.

Runs ``python train.py args`` as ``-n`` tasks of one MPI job, with the ``mpiexec`` of the
Python environment it runs in (the ``mpich`` wheel's: its ``bin/`` is put on ``PATH``, so
nothing needs activating). Each task

- runs NumPy's BLAS on one thread (``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS``,
  ``MKL_NUM_THREADS`` = 1): tasks that share a machine's cores would otherwise fight for them
  (a step measured 0.34 ms with one thread, 46-69 ms without);
- prints with a ``[worker <rank>] `` prefix;
- runs under a supervisor (``supervisor.py``) that names it if it fails.

The whole job is bounded by ``--timeout`` seconds (``MPIEXEC_TIMEOUT``; MPI itself never
times out a collective, so a hung task would hang the job forever). When a task dies, is
killed or the job times out, the launcher says which task and how, and exits non-zero.

**Several machines.** ``--hosts a,b`` is handed to ``mpiexec -hosts a,b``: MPICH starts the
tasks on those machines, round-robin, over ssh, so each must reach the others by ssh without a
password and hold the same Python environment at the same path, with the script. On a cluster,
run the launcher inside the scheduler's allocation (``srun``/``sbatch``), whose ``mpiexec``
finds the hosts itself.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eagerflow.distribute.supervisor import (
    DEADLINE,
    STATUS_DIR,
    STILL_RUNNING,
    WAITING,
    describe_status,
)

ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
DEFAULT_TIMEOUT = 300.0
GRACE = 10.0  # past the timeout, the launcher ends mpiexec itself
STACK_TIME = 1.0  # seconds before the timeout at which a task still running prints its stack
TIMED_OUT = 124  # the exit status of a job that ran out of time (as coreutils' timeout)


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The launcher's options; everything from the script on is the task's command."""
    parser = argparse.ArgumentParser(
        prog="python -m eagerflow.distribute.run",
        description="Run a Python script as N tasks of an MPI job.",
    )
    parser.add_argument("-n", "--num-workers", type=int, required=True, help="how many tasks")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="end the job after this many s"
    )
    parser.add_argument("--hosts", help="comma-separated machines for mpiexec -hosts")
    parser.add_argument("script", help="the Python script every task runs")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    options = parser.parse_args(argv)
    if options.num_workers < 1:
        parser.error(f"-n must be at least 1, got {options.num_workers}")
    if not options.timeout > 0:
        parser.error(f"--timeout must be > 0 seconds, got {options.timeout}")
    return options


def worker_environment(timeout: float, status_dir: str) -> dict[str, str]:
    """The tasks' environment: this Python's ``bin/`` first on ``PATH``, one BLAS thread,
    ``MPIEXEC_TIMEOUT``, unbuffered output, and where to write their statuses."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(dict.fromkeys(ONE_THREAD, "1"))
    env["MPIEXEC_TIMEOUT"] = str(math.ceil(timeout))
    # a task still running a little before the end prints its Python stack (supervisor.py)
    env[DEADLINE] = str(time.time() + max(timeout - STACK_TIME, timeout / 2))
    env["PYTHONUNBUFFERED"] = "1"
    env[STATUS_DIR] = status_dir
    return env


def mpiexec_command(options: argparse.Namespace, env: dict[str, str]) -> list[str]:
    """``mpiexec -n N [-hosts ...] python -m eagerflow.distribute.supervisor script args``."""
    mpiexec = shutil.which("mpiexec", path=env["PATH"])
    if mpiexec is None:
        raise SystemExit(
            "eagerflow.distribute.run: mpiexec not found on PATH or next to "
            f"{sys.executable}: pip install 'eagerflow-distribute[mpi]' (mpi4py and mpich)"
        )
    hosts = ["-hosts", options.hosts] if options.hosts else []
    task = [sys.executable, "-m", "eagerflow.distribute.supervisor", options.script, *options.args]
    return [mpiexec, "-n", str(options.num_workers), *hosts, *task]


def explain_failure(status_dir: str, num_workers: int, code: int, timed_out: float | None) -> str:
    """Which tasks failed and how, from the statuses their supervisors wrote. (A task that
    MPI aborted, as an uncaught exception does, says so itself, prefixed by its task.)"""
    failed, unfinished, running = [], [], []
    for rank in range(num_workers):
        path = Path(status_dir) / f"task-{rank}"
        status = path.read_text() if path.exists() else None
        if status is None:
            unfinished.append(rank)
        elif status.startswith(STILL_RUNNING):
            running.append(f"task {rank} (/job:worker/task:{rank}) hung, {status}")
        elif status.startswith(WAITING):
            running.append(f"task {rank} was {status}")
        elif int(status) != 0:
            failed.append(f"task {rank} (/job:worker/task:{rank}) {describe_status(int(status))}")
    if timed_out:
        lines = [f"the job ran past --timeout {timed_out:g} s and was ended"]
    else:
        lines = [f"the job failed with status {code}"]
    lines += failed
    lines += running  # (each printed its Python stack above)
    if unfinished:
        which = ", ".join(str(r) for r in unfinished)
        tasks = "task" if len(unfinished) == 1 else "tasks"
        lines.append(f"{tasks} {which} did not finish (ended with the job)")
    return "eagerflow.distribute.run: " + "; ".join(lines)


def launch(options: argparse.Namespace) -> int:
    """Run the job; its exit status (non-zero when a task failed or it timed out)."""
    with tempfile.TemporaryDirectory(prefix="eagerflow-run-") as status_dir:
        env = worker_environment(options.timeout, status_dir)
        command = mpiexec_command(options, env)
        start = time.monotonic()
        job = subprocess.Popen(command, env=env, start_new_session=True)
        try:
            code = job.wait(timeout=options.timeout + GRACE)
        except subprocess.TimeoutExpired:  # mpiexec did not end the job itself: end it
            os.killpg(job.pid, signal.SIGKILL)
            code = job.wait()
        timed_out = time.monotonic() - start >= options.timeout
        if code == 0 and not timed_out:
            return 0
        limit = options.timeout if timed_out else None
        report = explain_failure(status_dir, options.num_workers, code, limit)
        print(report, file=sys.stderr, flush=True)
        return TIMED_OUT if timed_out else (code or 1)


def main(argv: list[str] | None = None) -> None:
    """The command line: ``python -m eagerflow.distribute.run -n 2 script.py [args]``."""
    sys.exit(launch(parse_arguments(argv)))


if __name__ == "__main__":
    main()

__all__ = [
    "DEFAULT_TIMEOUT",
    "ONE_THREAD",
    "TIMED_OUT",
    "explain_failure",
    "launch",
    "main",
    "mpiexec_command",
    "parse_arguments",
    "worker_environment",
]
