"""Run TensorFlow GraphDefs in TensorFlow: ``python tf_run.py DIR`` reads ``DIR/NAME.pb`` and
``DIR/NAME_P.npy`` for each placeholder ``P``, for each name in ``DIR/names.json``, runs each
graph with ``tf.compat.v1.import_graph_def`` and a ``Session``, and prints a JSON object: the
TensorFlow version and, per name, every output (``output_0``, ``output_1``...) as a nested
list with its dtype. Run by a Python that has TensorFlow (``record.py``, the tests)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")


def run(tf, pb: Path) -> list[dict]:
    graph_def = tf.compat.v1.GraphDef.FromString(pb.read_bytes())
    placeholders = [n.name for n in graph_def.node if n.op == "Placeholder"]
    outputs = sorted(n.name for n in graph_def.node if n.name.startswith("output_"))
    with tf.Graph().as_default():
        fetched = tf.compat.v1.import_graph_def(
            graph_def, return_elements=[f"{o}:0" for o in outputs], name=""
        )
        with tf.compat.v1.Session() as session:
            feeds = {f"{p}:0": np.load(pb.with_name(f"{pb.stem}_{p}.npy")) for p in placeholders}
            values = session.run(fetched, feeds)
    return [{"dtype": v.dtype.name, "value": v.tolist()} for v in values]


def main() -> int:
    import tensorflow as tf

    folder = Path(sys.argv[1])
    names = json.loads((folder / "names.json").read_text())
    results = {n: run(tf, folder / f"{n}.pb") for n in names}
    print(json.dumps({"tensorflow": tf.__version__, "outputs": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
