"""Where a distribution strategy plugs into nn, which never imports one.

Data-parallel training runs the same program on every task (a *replica*) and needs three
things of nn, each asked of the hook installed here (``eagerflow.distribute``'s
``MultiWorkerMirroredStrategy`` installs one in its ``scope()`` and ``run()``):

- ``initial_value``: a layer's new variable starts with task 0's value on every task
  (``Layer.add_weight`` asks), so the replicas start equal;
- ``aggregate_gradients``: ``Optimizer.apply_gradients`` applies the gradients averaged over
  the replicas, as TensorFlow's optimizers do inside a strategy, so they stay equal;
- ``shard``: ``fit`` trains each replica on its share of every global batch.

With no hook installed (the usual case) nn works as on one process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from eagerflow.autodiff import Variable
from eagerflow.tensor import Tensor


class ReplicaHook(Protocol):
    """What a distribution strategy does for nn (see the module's docstring)."""

    def initial_value(self, value: Tensor) -> Any:
        """``value`` as task 0 made it."""
        ...

    def aggregate_gradients(
        self, pairs: list[tuple[Tensor, Variable]]
    ) -> list[tuple[Tensor, Variable]]:
        """Each gradient averaged over the replicas, with its variable."""
        ...

    def shard(self, batch: Any) -> Any:
        """This replica's rows of a global batch (a tensor, array, or tuple/dict of them)."""
        ...


# a ContextVar, not a global: set inside a strategy's blocks only, and per thread
_hook: ContextVar[ReplicaHook | None] = ContextVar("eagerflow_replica_hook", default=None)


def current_replica_hook() -> ReplicaHook | None:
    """The hook installed by the innermost ``replica_hook`` block, or None."""
    return _hook.get()


@contextmanager
def replica_hook(hook: ReplicaHook) -> Iterator[None]:
    """Inside ``with replica_hook(h):`` nn asks ``h`` (a strategy's ``scope()`` uses it)."""
    token = _hook.set(hook)
    try:
        yield
    finally:
        _hook.reset(token)


__all__ = ["ReplicaHook", "current_replica_hook", "replica_hook"]
