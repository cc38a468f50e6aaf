"""A job that says who it is, what it was given and how it runs, and uses each method of
the communicator: all-reduce, broadcast, a send and a receive each way (both send first:
non-blocking sends do not deadlock), and a barrier."""

import os
import shutil
import sys

import numpy as np

from eagerflow.distribute import MPICommunicator

comm = MPICommunicator()
total = comm.all_reduce(np.full(3, comm.rank + 1.0))
largest = comm.all_reduce(np.array([comm.rank]), op="max")
shared = comm.broadcast(np.full(2, 10.0 + comm.rank), root=1)
other = 1 - comm.rank
big = np.full(1_000_000, comm.rank, np.float32)  # past MPI's eager limit: a blocking send
request = comm.send(big, dest=other, tag=7)  # from both tasks first would deadlock
got = comm.recv(other, tag=7, shape=big.shape, dtype=np.float32)
request.wait()
comm.barrier()
print(f"rank {comm.rank} of {comm.size} sum {total.tolist()} args {sys.argv[1:]}")
print(f"max {largest.tolist()} broadcast {shared.tolist()} received {got[:2].tolist()}")
print(f"threads {os.environ.get('OPENBLAS_NUM_THREADS')} {os.environ.get('OMP_NUM_THREADS')}")
print(f"mpiexec {shutil.which('mpiexec')}")
