"""The fixtures of the partition tests."""

from __future__ import annotations

import pytest
from partition_graphs import Mlp


@pytest.fixture
def mlp() -> Mlp:
    return Mlp()
