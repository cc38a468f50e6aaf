"""The launcher's pieces, without starting a job (test_mpi_jobs.py starts real ones)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from eagerflow.distribute import run
from eagerflow.distribute.supervisor import describe_status


def test_the_command_line_takes_the_scripts_own_arguments_as_they_are():
    options = run.parse_arguments(["-n", "2", "--hosts", "a,b", "train.py", "-n", "7", "--x"])
    assert (options.num_workers, options.hosts, options.timeout) == (2, "a,b", 300.0)
    assert (options.script, options.args) == ("train.py", ["-n", "7", "--x"])
    env = run.worker_environment(options.timeout, "/status")
    command = run.mpiexec_command(options, env)
    assert command[1:5] == ["-n", "2", "-hosts", "a,b"]
    assert command[5:] == [sys.executable, "-m", "eagerflow.distribute.supervisor",
                           "train.py", "-n", "7", "--x"]  # fmt: skip


BAD = [(["-n", "0", "s.py"], "-n must be at least 1"),
       (["-n", "2", "--timeout", "0", "s.py"], "--timeout must be > 0")]  # fmt: skip


@pytest.mark.parametrize(("argv", "says"), BAD)
def test_bad_options_are_refused(argv, says, capsys):
    with pytest.raises(SystemExit):
        run.parse_arguments(argv)
    assert says in capsys.readouterr().err


def test_each_task_gets_one_blas_thread_a_timeout_and_this_pythons_bin_first():
    env = run.worker_environment(2.5, "/status")
    assert [env[name] for name in run.ONE_THREAD] == ["1", "1", "1"]
    assert env["MPIEXEC_TIMEOUT"] == "3"
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)


def test_without_mpiexec_the_launcher_names_the_extra():
    options = run.parse_arguments(["-n", "2", "s.py"])
    with pytest.raises(SystemExit, match=r"eagerflow-distribute\[mpi\]"):
        run.mpiexec_command(options, {"PATH": "/nonexistent"})


def test_a_failure_is_explained_task_by_task(tmp_path):
    (tmp_path / "task-0").write_text("0")
    (tmp_path / "task-1").write_text("-9")
    report = run.explain_failure(str(tmp_path), 3, 137, None)
    assert report == (
        "eagerflow.distribute.run: the job failed with status 137; task 1 (/job:worker/task:1) "
        "was killed by SIGKILL; task 2 did not finish (ended with the job)"
    )
    assert describe_status(3) == "exited with status 3"
