"""What each task runs under its supervisor: ``python -m eagerflow.distribute.task script.py
args``, the script under mpi4py's runner (an uncaught exception aborts the whole job with
``MPI_Abort``, rather than leaving the task in ``MPI_Finalize``, waiting for the others, which
wait for it), with ``faulthandler`` ready to print the task's Python stack on ``SIGUSR1``.

The supervisor sends ``SIGUSR1`` when the job reaches its deadline with the task still
running: MPI has no timeout, and a job that hangs is one task stuck in its own code while the
others wait for it in a collective. The stacks printed say which is which.
"""

from __future__ import annotations

import faulthandler
import signal

from mpi4py.run import main

if __name__ == "__main__":
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    main()

__all__: list[str] = []  # a program (python -m), not a module to import from
