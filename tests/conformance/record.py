"""Record what TensorFlow gives for every conformance case, into ``tensorflow_results.json``.

Run by ``make conformance-record``, with a Python that has TensorFlow (a virtual environment of
its own: TensorFlow is never a dependency, and CI reads the recorded file)::

    .venv-tf/bin/python tests/conformance/record.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # no start-up chatter

import cases  # noqa: E402
import namespaces  # noqa: E402
from outcome import outcome  # noqa: E402

RESULTS = HERE / "tensorflow_results.json"


def main() -> int:
    import tensorflow as tf

    ns = namespaces.tensorflow()
    recorded = {name: outcome(case, ns) for name, case in sorted(cases.CASES.items())}
    text = json.dumps({"tensorflow": tf.__version__, "cases": recorded}, indent=1, sort_keys=True)
    partial = RESULTS.with_suffix(".json.partial")
    partial.write_text(text + "\n", encoding="utf8")
    partial.replace(RESULTS)  # whole or not at all
    print(f"{len(recorded)} cases recorded from TensorFlow {tf.__version__} in {RESULTS.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
