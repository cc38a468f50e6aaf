"""eagerflow.distribute: one program on several processes and machines, over MPI.

Read it in this order:

1. ``communicator.py``  ``Communicator``: all that is asked of the other processes (rank,
   size, all_reduce, broadcast, send, recv, barrier), and ``MPICommunicator``, over mpi4py;
2. ``collective.py``    ``CollectiveAllReduce``, the all-reduce as a graph op with a gradient,
   and ``all_reduce_tensors``, which packs many tensors into one all-reduce;
3. ``strategy.py``      ``MultiWorkerMirroredStrategy``: data-parallel training, with
   TensorFlow's names;
4. ``server.py``        ``Server``: this process as one task of a job that runs a placed
   graph, each task its part (``partition``, from eagerflow.graph, cuts it);
5. ``run.py``           the launcher, ``python -m eagerflow.distribute.run -n 2 train.py``,
   and ``supervisor.py``, the tiny process that names a task that fails.

MPI (``mpi4py`` and the ``mpich`` wheel) is the ``[mpi]`` extra: importing this package works
without it, and using MPI without it is an ImportError naming the extra.

The names below (and ``__version__``) are found when first used (PEP 562), so that the
launcher and the supervisor, which start before every task, do not pay for importing
eagerflow.nn (~1 s).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from eagerflow.distribute.collective import all_reduce_sum, all_reduce_tensors
    from eagerflow.distribute.communicator import Communicator, MPICommunicator, Request
    from eagerflow.distribute.server import Server, partition
    from eagerflow.distribute.strategy import (
        ClusterResolver,
        DistributedDataset,
        MultiWorkerMirroredStrategy,
        ReduceOp,
    )

_HOMES = {
    "all_reduce_sum": "collective",
    "all_reduce_tensors": "collective",
    "Communicator": "communicator",
    "MPICommunicator": "communicator",
    "Request": "communicator",
    "ClusterResolver": "strategy",
    "DistributedDataset": "strategy",
    "MultiWorkerMirroredStrategy": "strategy",
    "ReduceOp": "strategy",
    "Server": "server",
    "partition": "server",
}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is asked for."""
    if name == "__version__":  # from the repository's VERSION file (importlib.metadata: ~0.1 s)
        from importlib import metadata

        return metadata.version("eagerflow-distribute")
    if name not in _HOMES:
        raise AttributeError(f"module 'eagerflow.distribute' has no attribute {name!r}")
    return getattr(importlib.import_module(f"eagerflow.distribute.{_HOMES[name]}"), name)


__all__ = [
    "ClusterResolver",
    "Communicator",
    "DistributedDataset",
    "MPICommunicator",
    "MultiWorkerMirroredStrategy",
    "ReduceOp",
    "Request",
    "Server",
    "all_reduce_sum",
    "all_reduce_tensors",
    "partition",
]
