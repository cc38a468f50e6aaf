"""Each task trains workload's MLP as one replica, in each mode given, and saves what it got
to <out>/<mode>-<rank>.npz."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/distribute: workload
import workload

from eagerflow.distribute import MultiWorkerMirroredStrategy

out, modes = Path(sys.argv[1]), sys.argv[2:]
strategy = MultiWorkerMirroredStrategy()
rank = strategy.cluster_resolver.task_id
for mode in modes:
    got = workload.train(strategy, mode)
    weights = {f"w{i}": w for i, w in enumerate(got["weights"])}
    np.savez(out / f"{mode}-{rank}.npz", losses=got["losses"], rows=got["rows"], **weights)
