"""``MultiWorkerMirroredStrategy``: data-parallel training, with TensorFlow's names.

Every task of the job (started by ``python -m eagerflow.distribute.run -n 2 train.py``) runs
the same script and holds a full copy (a *replica*) of the model. Each step, each replica
computes gradients on its share of the global batch; the gradients are averaged over the
replicas with one all-reduce, and every replica applies the same average, so the copies stay
equal, and equal to one process training on the whole global batch.

- ``scope()``: variables that layers create inside start with task 0's values everywhere; an
  optimizer's ``apply_gradients`` averages the gradients over the replicas first; ``nn.fit``
  trains each replica on its share of each global batch.
- ``run(fn, args)`` calls ``fn`` on this replica, with the same meaning for ``apply_gradients``
  inside it (a custom training loop).
- ``experimental_distribute_dataset(ds)``: the batches of ``ds`` are global; each replica
  iterates over its share of each.
- ``reduce("SUM" | "MEAN", value, axis)``: combine a per-replica value (a loss, a count).

nn never imports this package: ``scope()`` and ``run()`` install a ``ReplicaHook``
(``eagerflow.nn.replicas``), which nn asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.distribute.collective import all_reduce_sum, all_reduce_tensors, set_communicator
from eagerflow.distribute.communicator import Communicator, MPICommunicator
from eagerflow.nn.replicas import replica_hook
from eagerflow.tensor import Tensor
from eagerflow.tensor.dtypes import INTEGERS


class ReduceOp:
    """``tf.distribute.ReduceOp``'s names: how ``reduce`` combines the replicas' values."""

    SUM = "SUM"
    MEAN = "MEAN"


@dataclass(frozen=True)
class ClusterResolver:
    """Where this process sits in the job: ``task_type`` is ``"worker"`` and ``task_id`` its
    rank, so it is ``/job:worker/task:<task_id>`` in TensorFlow's device names."""

    task_type: str
    task_id: int
    num_workers: int


def shard_rows(value: Any, rank: int, size: int) -> Any:
    """Replica ``rank``'s rows of ``value`` (a tensor or array, or a tuple, list or dict of
    them): rows ``[i*n//size, (i+1)*n//size)`` of its ``n`` rows, so shards differ by at most
    one row when ``size`` does not divide ``n``."""
    if isinstance(value, Mapping):
        return {key: shard_rows(item, rank, size) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return type(value)(shard_rows(item, rank, size) for item in value)
    rows = len(value)
    return value[rank * rows // size : (rank + 1) * rows // size]


class _Replicas:
    """The strategy's answers to nn (``eagerflow.nn.replicas.ReplicaHook``)."""

    def __init__(self, communicator: Communicator) -> None:
        self.communicator = communicator

    def initial_value(self, value: Tensor) -> Any:
        if not ef.executing_eagerly():
            raise TypeError(
                "MultiWorkerMirroredStrategy.scope(): variables are broadcast from task 0 "
                "when made eagerly or in a function, not in a Session's graph"
            )
        array = np.array(value, order="C", copy=True)
        return self.communicator.broadcast(array, root=0)

    def aggregate_gradients(
        self, pairs: list[tuple[Tensor, Variable]]
    ) -> list[tuple[Tensor, Variable]]:
        grads = all_reduce_tensors([g for g, _ in pairs])
        scale = 1.0 / self.communicator.size
        return [(g * ef.cast(scale, g.dtype), v) for g, (_, v) in zip(grads, pairs, strict=True)]

    def shard(self, batch: Any) -> Any:
        return shard_rows(batch, self.communicator.rank, self.communicator.size)


class DistributedDataset:
    """The dataset ``experimental_distribute_dataset`` returns: iterating over it gives this
    replica's share of each global batch of the dataset it wraps."""

    def __init__(self, dataset: Any, replicas: _Replicas) -> None:
        self._dataset = dataset
        self._replicas = replicas

    def __iter__(self) -> Iterator[Any]:
        for batch in self._dataset:
            yield self._replicas.shard(batch)


class MultiWorkerMirroredStrategy:
    """Synchronous data-parallel training over the tasks of a job (see the module's
    docstring). ``communicator`` defaults to ``MPICommunicator()``: the job's MPI world."""

    def __init__(
        self, cluster_resolver: Any = None, *, communicator: Communicator | None = None
    ) -> None:
        if cluster_resolver is not None:
            raise NotImplementedError(
                "MultiWorkerMirroredStrategy: the job is the MPI world, found from the "
                "launcher; pass no cluster_resolver"
            )
        self._communicator = MPICommunicator() if communicator is None else communicator
        set_communicator(self._communicator)
        self._replicas = _Replicas(self._communicator)
        rank, size = self._communicator.rank, self._communicator.size
        self.cluster_resolver = ClusterResolver("worker", rank, size)

    @property
    def num_replicas_in_sync(self) -> int:
        """How many replicas train together: one per task."""
        return self._communicator.size

    @contextmanager
    def scope(self) -> Iterator[MultiWorkerMirroredStrategy]:
        """Inside it, new layers' variables start equal, optimizers average gradients over
        the replicas, and ``nn.fit`` trains on each replica's share of each batch."""
        with replica_hook(self._replicas):
            yield self

    def run(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        """``fn(*args, **kwargs)`` on this replica, where an optimizer's ``apply_gradients``
        averages the gradients over the replicas first."""
        with replica_hook(self._replicas):
            return fn(*args, **(kwargs or {}))

    def experimental_distribute_dataset(self, dataset: Any) -> DistributedDataset:
        """``dataset``'s global batches, each replica iterating over its share of each."""
        return DistributedDataset(dataset, self._replicas)

    def reduce(self, reduce_op: str, value: Any, axis: int | None = None) -> Tensor:
        """Combine ``value`` over the replicas by ``"SUM"`` or ``"MEAN"``. With ``axis``
        (TensorFlow's meaning) each replica's value is first summed along ``axis``, and the
        mean divides by the number of rows along ``axis`` over all replicas (the global
        batch), so a per-example loss gives the global batch's mean loss."""
        if reduce_op not in (ReduceOp.SUM, ReduceOp.MEAN):
            raise ValueError(f"reduce: reduce_op must be 'SUM' or 'MEAN', got {reduce_op!r}")
        tensor = ef.convert_to_tensor(value)
        if axis is None:
            total, count = all_reduce_sum(tensor), self.num_replicas_in_sync
        else:
            if not -tensor.ndim <= axis < tensor.ndim:
                raise ValueError(f"reduce: axis {axis} is out of range for shape {tensor.shape}")
            total = all_reduce_sum(ef.reduce_sum(tensor, axis=axis))
            rows = tensor.shape[axis]  # (known when traced: the count is all-reduced now)
            if rows is None:
                raise ValueError(f"reduce: axis {axis} of shape {tensor.shape} must be known")
            count = int(self._communicator.all_reduce(np.array([rows], np.int64))[0])
        if reduce_op == ReduceOp.SUM:
            return total
        if tensor.dtype in INTEGERS:
            return total // ef.cast(count, tensor.dtype)
        return total / ef.cast(count, tensor.dtype)


__all__ = [
    "ClusterResolver",
    "DistributedDataset",
    "MultiWorkerMirroredStrategy",
    "ReduceOp",
    "shard_rows",
]
