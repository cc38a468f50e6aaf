"""A job that says who it is, what it was given and how it runs; all-reduces its rank + 1."""

import os
import shutil
import sys

import numpy as np

from eagerflow.distribute import MPICommunicator

comm = MPICommunicator()
total = comm.all_reduce(np.full(3, comm.rank + 1.0))
print(f"rank {comm.rank} of {comm.size} sum {total.tolist()} args {sys.argv[1:]}")
print(f"threads {os.environ.get('OPENBLAS_NUM_THREADS')} {os.environ.get('OMP_NUM_THREADS')}")
print(f"mpiexec {shutil.which('mpiexec')}")
