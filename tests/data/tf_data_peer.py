"""TensorFlow (tf.compat.v1, graph mode) runs the pipelines of pipelines.py on the files in argv[1] (written by the
test) and prints every element of each, as JSON: {name: [element, ...]} or {name: "error: ..."}. Its output for the
files of files.py, on TF 2.21, is recorded in tf_elements.json (after adding a pipeline, record it again:
`python tf_data_peer.py DIR | tail -1 > tf_elements.json` with DIR written by files.write)."""
import json
import pathlib
import sys

import tensorflow.compat.v1 as tf

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import pipelines  # noqa: E402
from elements import drain, to_json  # noqa: E402

tf.disable_eager_execution()
out = {}
for name, make in pipelines.PIPELINES.items():
    with tf.Graph().as_default():
        try:
            out[name] = to_json(drain(tf, make(tf, sys.argv[1])))
        except Exception as exc:  # noqa: BLE001 - reported to the test
            out[name] = f"error: {type(exc).__name__}: {exc}"
print(json.dumps(out))
