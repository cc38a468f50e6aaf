"""The graphs the partition tests share (a module of its own: ``conftest`` is a name
several test folders use, so importing from it is ambiguous)."""

from __future__ import annotations

from typing import Any

import numpy as np

import eagerflow.tensor as ef
from eagerflow.autodiff import Variable
from eagerflow.graph import Graph, device, global_variables_initializer, gradients, placeholder


class Mlp:
    """A two-layer MLP: layer 1 on task 0, layer 2 and the loss on task 1, its gradients
    placed with their forward ops; ``feeds`` and the unsplit results to compare with."""

    def __init__(self) -> None:
        rng = np.random.default_rng(7)
        self.graph = Graph()
        with self.graph.as_default():
            with device("/job:worker/task:0"):
                self.x = placeholder(ef.float32, (4, 3), name="x")
                self.w1 = Variable(rng.normal(size=(3, 5)).astype(np.float32), name="w1")
                self.b1 = Variable(np.zeros(5, np.float32), name="b1")
                self.hidden = ef.maximum(ef.matmul(self.x, self.w1) + self.b1, 0.0)
            with device("/job:worker/task:1"):
                self.y = placeholder(ef.float32, (4, 2), name="y")
                self.w2 = Variable(rng.normal(size=(5, 2)).astype(np.float32), name="w2")
                self.out = ef.matmul(self.hidden, self.w2)
                self.loss = ef.reduce_mean(ef.square(self.out - self.y))
            self.variables = [self.w1, self.b1, self.w2]
            self.grads = gradients(self.loss, self.variables)
            self.init = global_variables_initializer()
        self.feeds = {
            self.x: rng.normal(size=(4, 3)).astype(np.float32),
            self.y: rng.normal(size=(4, 2)).astype(np.float32),
        }

    @property
    def fetches(self) -> list[Any]:
        return [self.hidden, self.out, self.loss, self.grads]
