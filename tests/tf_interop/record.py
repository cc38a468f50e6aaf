"""Record what TensorFlow computes with eagerflow's GraphDefs, into
``tensorflow_outputs.json``: each model of ``models.py`` is written as a ``.pb`` by
``eagerflow.graph.tf_graph_def.write``, then TensorFlow (another Python, which has it) loads
and runs it (``tf_run.py``). The file keeps the TensorFlow version, each ``.pb``'s SHA-256
(so a test knows the recorded outputs belong to the file it writes today) and the outputs.

Run by ``make tf-interop-record`` with this repository's Python and TensorFlow's::

    EAGERFLOW_TF_PYTHON=.venv-tf/bin/python .venv/bin/python tests/tf_interop/record.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import models  # noqa: E402

RESULTS = HERE / "tensorflow_outputs.json"


def run_in_tensorflow(folder: Path, python: str) -> dict:
    """What ``tf_run.py`` prints for the GraphDefs in ``folder``, run by ``python``."""
    done = subprocess.run(
        [python, str(HERE / "tf_run.py"), str(folder)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    python = os.environ.get("EAGERFLOW_TF_PYTHON", ".venv-tf/bin/python")
    with tempfile.TemporaryDirectory() as folder:
        built = models.export_all(Path(folder))
        ran = run_in_tensorflow(Path(folder), python)
    recorded = {
        "tensorflow": ran["tensorflow"],
        "models": {
            name: {"pb_sha256": sha, "outputs": ran["outputs"][name]}
            for name, (_, _, sha) in sorted(built.items())
        },
    }
    partial = RESULTS.with_suffix(".json.partial")
    partial.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf8")
    partial.replace(RESULTS)  # whole or not at all
    print(f"{len(built)} models run by TensorFlow {ran['tensorflow']}, recorded in {RESULTS.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
