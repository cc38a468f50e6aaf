"""``ParallelMapIterator``: one pass over ``Dataset.map(f, num_parallel_calls=n)``, calling
``f`` on up to ``n`` elements at once in a pool of threads, and giving the results in the
input's order.

Threads help where ``f`` waits (reading a file) or runs NumPy kernels that release the GIL
(most array work over a few thousand elements); pure-Python work still takes turns.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any


def parallel_calls(requested: int, autotune: int) -> int:
    """How many calls run at once: ``requested``, or one per core for ``AUTOTUNE``
    (TensorFlow tunes the number as the pipeline runs; eagerflow takes the cores it has)."""
    return (os.cpu_count() or 1) if requested == autotune else requested


class ParallelMapIterator:
    """The results of ``apply`` on ``elements``, in order, with up to ``calls`` of them being
    made at once.

    The input is read in the consumer's thread (an input pipeline need not be thread-safe);
    ``apply`` runs in the pool. A window of ``calls`` submitted elements is kept full, and
    ``next()`` waits for the oldest: the order TensorFlow gives with ``deterministic=True``,
    and one it allows with ``deterministic=False``. An error in ``apply`` is raised where its
    element would have come, and ends the pass. The pool's threads end with the pass, at
    ``close()``, or when the iterator is dropped (waiting calls are cancelled).
    """

    def __init__(self, elements: Iterator[Any], apply: Callable[[Any], Any], calls: int) -> None:
        self._elements = elements
        self._apply = apply
        self._calls = calls
        self._pool = ThreadPoolExecutor(max_workers=calls, thread_name_prefix="eagerflow-map")
        self._window: deque[Future[Any]] = deque()
        self._input_done = False

    def __iter__(self) -> ParallelMapIterator:
        return self

    def __next__(self) -> Any:
        self._fill()
        if not self._window:
            self.close()
            raise StopIteration
        try:
            return self._window.popleft().result()
        except BaseException:
            self.close()
            raise

    def _fill(self) -> None:
        """Submit input elements until ``calls`` are in flight or the input ends."""
        while not self._input_done and len(self._window) < self._calls:
            try:
                element = next(self._elements)
            except StopIteration:
                self._input_done = True
                return
            self._window.append(self._pool.submit(self._apply, element))

    def close(self) -> None:
        """End the pass: cancel the calls not started, and let the running ones finish."""
        self._input_done = True
        self._window.clear()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)  # (absent if __init__ failed)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


__all__ = ["ParallelMapIterator", "parallel_calls"]
