"""Real TensorFlow's side of the parsing-op interop tests, run in a subprocess by tests/tf_peer.py's run_peer:

    tf_parsing_peer.py JOB_FILE

JOB_FILE (JSON) holds `examples` (each {key: [kind, values]}, kind "bytes" (hex values), "float" or "int64"),
`parse` cases ({"examples": [indices], "single": bool, "names": [..] or null, "features": {key: spec}}, spec
["fixed", shape, dtype, default] | ["var", dtype] | ["seq", shape, dtype, default]) and `csv` cases
({"records": [...], "defaults": [...], "kwargs": {...}}), and optionally a `graph` ({"graph_def": hex, "fetches":
[tensor names]}) to import and run. Prints one JSON object: the Examples as TF serializes them
(deterministically, hex), each case's result or error message and the graph's fetched values, as tests/ops/test_parsing_ops.py encodes them.
"""
import json
import sys

import numpy as np
import tensorflow as tf
from example_spec import example as example_from_spec

tf1 = tf.compat.v1
tf1.disable_eager_execution()


def example(spec: dict) -> bytes:
    return example_from_spec(tf, spec).SerializeToString(deterministic=True)


def feature(spec):
    if spec[0] == "var":
        return tf1.io.VarLenFeature(tf.as_dtype(spec[1]))
    if spec[0] == "fixed":
        return tf1.io.FixedLenFeature(spec[1], tf.as_dtype(spec[2]), default_value=spec[3])
    return tf1.io.FixedLenSequenceFeature(spec[1], tf.as_dtype(spec[2]), allow_missing=True, default_value=spec[3])


def encode(value):
    """JSON for a fetched value: arrays as {"dtype", "shape", "values"} (bytes as hex), SparseTensorValues as dicts."""
    if isinstance(value, tf1.SparseTensorValue):
        return {"indices": encode(value.indices), "values": encode(value.values), "shape": encode(value.dense_shape)}
    value = np.asarray(value)
    flat = [v.hex() if isinstance(v, bytes) else v for v in value.reshape(-1).tolist()]
    return {"dtype": "string" if value.dtype == object else value.dtype.name, "shape": list(value.shape),
            "values": flat}


def run(build, *args, **kwargs):
    with tf.Graph().as_default(), tf1.Session() as sess:
        try:
            return {"value": encode_all(sess.run(build(*args, **kwargs)))}
        except tf.errors.OpError as e:
            return {"error": type(e).__name__ + ": " + kernel_message(e.message)}


def kernel_message(message: str) -> str:
    """The kernel's own message: TF 2's graph errors wrap it in "Graph execution error:" and node details."""
    return [line for line in message.split("\n") if line and not line.startswith(("\t", " "))][-1]


def encode_all(fetched):
    if isinstance(fetched, dict):
        return {k: encode(v) for k, v in fetched.items()}
    return [encode(v) for v in fetched]


def main(job_file: str) -> None:
    with open(job_file) as f:
        job = json.load(f)
    serialized = [example(e) for e in job["examples"]]
    out = {"serialized": [s.hex() for s in serialized], "parse": [], "csv": []}
    for case in job["parse"]:
        features = {k: feature(v) for k, v in case["features"].items()}
        data = [serialized[i] for i in case["examples"]]
        if case["single"]:
            out["parse"].append(run(tf1.io.parse_single_example, data[0], features))
        else:
            out["parse"].append(run(tf1.io.parse_example, data, features, example_names=case["names"]))
    for case in job["csv"]:
        out["csv"].append(run(tf1.io.decode_csv, case["records"], case["defaults"], **case["kwargs"]))
    if "graph" in job:
        graph_def = tf1.GraphDef.FromString(bytes.fromhex(job["graph"]["graph_def"]))
        with tf.Graph().as_default() as graph, tf1.Session() as sess:
            tf1.import_graph_def(graph_def, name="")
            fetches = [graph.get_tensor_by_name(name) for name in job["graph"]["fetches"]]
            out["graph"] = encode_all(sess.run(fetches))
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:])
