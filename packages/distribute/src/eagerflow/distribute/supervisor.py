"""The tiny process the launcher puts between ``mpiexec`` and each task.

``mpiexec`` starts one supervisor per task; the supervisor runs the task (``python script.py
args``) as its child and

- prefixes each line the task prints with ``[worker <rank>] ``, so interleaved output says
  whose it is;
- writes the task's exit status to the launcher's status folder (``task-<rank>``) and, if the
  task failed, says which task and how on its standard error. MPI cannot: a task that calls
  ``os._exit(3)`` or is killed makes ``mpiexec`` tear the job down without naming it;
- exits as the task did, so ``mpiexec`` ends the whole job when one task fails.

The task inherits the supervisor's environment and open files, among them the connection to
``mpiexec``'s process manager (MPICH's ``PMI_FD``) through which its ``MPI_Init`` joins the
job. On Linux the task is killed if its supervisor dies (``PR_SET_PDEATHSIG``), so a job
``mpiexec`` ends leaves no task behind.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType

STATUS_DIR = "EAGERFLOW_RUN_STATUS_DIR"  # where the launcher reads the tasks' exit statuses
DEADLINE = "EAGERFLOW_RUN_DEADLINE"  # when (time.time()) a task still running prints its stack
STILL_RUNNING = "running"  # a task's status at the deadline, until it ends
WAITING = "waiting in MPI"  # the same, for a task whose stack shows it waiting for the others
RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK")  # MPICH's, Open MPI's


def task_rank() -> int:
    """This task's rank, as the process manager told it (-1 if it did not)."""
    for name in RANK_VARIABLES:
        if name in os.environ:
            return int(os.environ[name])
    return -1


def describe_status(code: int) -> str:
    """A task's exit status in words: ``exited with status 3``, ``was killed by SIGKILL``."""
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _die_with_parent() -> None:
    # Linux only: PR_SET_PDEATHSIG (1) sends the task SIGKILL when its supervisor ends
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def _at_the_deadline(child: subprocess.Popen[bytes], rank: int) -> threading.Timer | None:
    """A timer that, at the job's deadline, has the task print its Python stack (``task.py``
    set ``faulthandler`` on ``SIGUSR1``) and marks it still running, if it is."""
    deadline = os.environ.get(DEADLINE)
    if deadline is None:
        return None

    def still_running() -> None:
        if child.poll() is None:
            _write_status(rank, STILL_RUNNING)
            child.send_signal(signal.SIGUSR1)

    timer = threading.Timer(max(float(deadline) - time.time(), 0.0), still_running)
    timer.daemon = True
    timer.start()
    return timer


class _StackReader:
    """Finds where the task was in the stack it prints at the deadline (its innermost frame)
    and writes it as the task's status: ``running <file>:<line> in <function>``, or
    ``waiting in MPI ...`` when that frame is eagerflow's communicator or mpi4py."""

    FRAME = re.compile(rb'^  File "(.*)", line (\d+) in (.*)$')

    def __init__(self, rank: int) -> None:
        self.rank, self.expecting = rank, False

    def read(self, line: bytes) -> None:
        if line.startswith((b"Current thread 0x", b"Thread 0x")):
            self.expecting = True
        elif self.expecting and (frame := self.FRAME.match(line.rstrip())):
            self.expecting = False
            path, number, function = (part.decode(errors="replace") for part in frame.groups())
            waiting = "eagerflow/distribute/communicator.py" in path or "mpi4py" in path
            where = f"{Path(path).name}:{number} in {function}"
            _write_status(self.rank, f"{WAITING if waiting else STILL_RUNNING} {where}")


def _write_status(rank: int, code: int | str) -> None:
    folder = os.environ.get(STATUS_DIR)
    if not folder or not Path(folder).is_dir():
        return  # (another machine: the launcher's folder is not here; stderr says it)
    target = Path(folder) / f"task-{rank}"
    partial = target.with_suffix(".partial")
    partial.write_text(str(code))
    partial.replace(target)  # atomically: the launcher never reads half a status


def supervise(command: list[str]) -> int:
    """Run ``command`` as task ``task_rank()``, prefixing its output; its exit status."""
    rank = task_rank()
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, close_fds=False,
        preexec_fn=_die_with_parent,
    )  # fmt: skip

    def forward(signum: int, frame: FrameType | None) -> None:
        child.send_signal(signum)  # mpiexec ending the job: end the task too

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    timer = _at_the_deadline(child, rank)
    assert child.stdout is not None
    prefix = f"[worker {rank}] ".encode()
    out = sys.stdout.buffer
    stack = _StackReader(rank)
    for line in child.stdout:
        out.write(prefix + line)
        out.flush()
        stack.read(line)
    code = child.wait()
    if timer is not None:
        timer.cancel()
    _write_status(rank, code)
    if code != 0:
        sys.stderr.write(f"[worker {rank}] task {rank} (/job:worker/task:{rank}) "
                         f"{describe_status(code)}\n")  # fmt: skip
        sys.stderr.flush()
    return code if code >= 0 else 128 - code


def main() -> None:
    """``python -m eagerflow.distribute.supervisor script.py [args]`` (the launcher's)."""
    # task.py: mpi4py's runner, and the task's stack printed at the deadline
    sys.exit(supervise([sys.executable, "-u", "-m", "eagerflow.distribute.task", *sys.argv[1:]]))


if __name__ == "__main__":
    main()

__all__ = [
    "DEADLINE",
    "RANK_VARIABLES",
    "STATUS_DIR",
    "STILL_RUNNING",
    "describe_status",
    "main",
    "supervise",
    "task_rank",
]
