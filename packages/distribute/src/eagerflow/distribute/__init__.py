"""eagerflow.distribute: one program on several processes and machines, over MPI.

Read it in this order:

1. ``communicator.py``  ``Communicator``: all that is asked of the other processes (rank,
   size, all_reduce, broadcast, send, recv, barrier), and ``MPICommunicator``, over mpi4py;
2. ``collective.py``    ``CollectiveAllReduce``, the all-reduce as a graph op with a gradient,
   and ``all_reduce_tensors``, which packs many tensors into one all-reduce;
3. ``strategy.py``      ``MultiWorkerMirroredStrategy``: data-parallel training, with
   TensorFlow's names;
4. ``run.py``           the launcher, ``python -m eagerflow.distribute.run -n 2 train.py``,
   and ``supervisor.py``, the tiny process that names a task that fails.

MPI (``mpi4py`` and the ``mpich`` wheel) is the ``[mpi]`` extra: importing this package works
without it, and using MPI without it is an ImportError naming the extra.
"""

from importlib import metadata as _metadata

from eagerflow.distribute.collective import all_reduce_sum, all_reduce_tensors
from eagerflow.distribute.communicator import Communicator, MPICommunicator, Request
from eagerflow.distribute.strategy import (
    ClusterResolver,
    DistributedDataset,
    MultiWorkerMirroredStrategy,
    ReduceOp,
)

__version__ = _metadata.version("eagerflow-distribute")  # from the repository's VERSION file

__all__ = [
    "ClusterResolver",
    "Communicator",
    "DistributedDataset",
    "MPICommunicator",
    "MultiWorkerMirroredStrategy",
    "ReduceOp",
    "Request",
    "all_reduce_sum",
    "all_reduce_tensors",
]
