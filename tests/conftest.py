"""Shared test set-up. This folder is on sys.path (pytest's default import mode puts the root
conftest's folder there), so tests can `import op_cases`."""

import pytest

import eagerflow.tensor as ef
from eagerflow.graph import reset_default_graph
from eagerflow.nn import Layer


@pytest.fixture(autouse=True)
def _fresh_global_state() -> None:
    """Every test starts from the same process-wide state, whatever ran before it: random ops
    seeded with 0, an empty default graph, and layer names counted afresh (the first Dense is
    ``dense``). A test that needs another seed sets it itself."""
    ef.set_seed(0)
    reset_default_graph()
    Layer.reset_names()
