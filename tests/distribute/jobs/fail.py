"""A job whose task 1 fails as argv[1] says (exit, kill, raise, hang) while task 0 waits for it
in an all-reduce."""

import os
import signal
import sys
import time

import numpy as np

from eagerflow.distribute import MPICommunicator

comm = MPICommunicator()
how = sys.argv[1]
if comm.rank == 1:
    print(f"task 1 will {how}", flush=True)
    if how == "exit":
        os._exit(3)
    elif how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif how == "raise":
        raise RuntimeError("task 1 fails on purpose")
    elif how == "hang":
        time.sleep(600)
comm.all_reduce(np.ones(4))
print("the all-reduce finished")
