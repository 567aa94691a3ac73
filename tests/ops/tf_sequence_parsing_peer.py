"""Real TensorFlow's side of tests/ops/test_sequence_parsing.py, run in a subprocess:

    python tf_sequence_parsing_peer.py JOB_FILE

JOB_FILE (JSON) holds `examples` (SequenceExample specs, see sequence_example()), `cases` ({"single": bool,
"examples": [indices], "names": [...] or null, "context": {key: spec}, "sequence": {key: spec}}, spec
["fixed", shape, dtype, default] | ["var", dtype] | ["seq", shape, dtype, allow_missing]) and `graph` ({"graph_def":
hex, "fetches": [tensor names]}). Prints one JSON line: the examples as TF serializes them (hex), each case's
result ({"value": ...} or {"error": "<class>: <message>"}) and the graph's fetched values.
"""
import json
import sys

import numpy as np


def feature(tf, kind: str, values):
    """A tf.train.Feature of kind "bytes" (hex values), "float", "int64", or "none" (no list)."""
    if kind == "bytes":
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes.fromhex(v) for v in values]))
    if kind == "float":
        return tf.train.Feature(float_list=tf.train.FloatList(value=values))
    if kind == "int64":
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    return tf.train.Feature()


def sequence_example(tf, spec: dict):
    """A SequenceExample of whichever TF-like module `tf` is, from {"context": {key: [kind, values]}, "lists":
    {key: [[kind, values], ...]}}."""
    context = tf.train.Features(feature={k: feature(tf, *v) for k, v in spec.get("context", {}).items()})
    lists = tf.train.FeatureLists(feature_list={
        k: tf.train.FeatureList(feature=[feature(tf, *step) for step in steps])
        for k, steps in spec.get("lists", {}).items()})
    return tf.train.SequenceExample(context=context, feature_lists=lists)


def feature_config(tf, spec):
    """The feature config of `spec` for the TF-like module `tf` (its TF1 names)."""
    if spec[0] == "var":
        return tf.VarLenFeature(tf.as_dtype(spec[1]))
    if spec[0] == "fixed":
        return tf.FixedLenFeature(spec[1], tf.as_dtype(spec[2]), default_value=spec[3])
    return tf.FixedLenSequenceFeature(spec[1], tf.as_dtype(spec[2]), allow_missing=spec[3])


def encode(tf, value):
    """JSON for a fetched value: arrays as {"dtype", "shape", "values"} (bytes as hex), sparse values as dicts."""
    if hasattr(value, "dense_shape"):
        return {"indices": encode(tf, value.indices), "values": encode(tf, value.values),
                "shape": encode(tf, value.dense_shape)}
    if isinstance(value, dict):
        return {k: encode(tf, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(tf, v) for v in value]
    value = np.asarray(value)
    flat = [v.hex() if isinstance(v, bytes) else v for v in value.reshape(-1).tolist()]
    return {"dtype": "string" if value.dtype == object else value.dtype.name, "shape": list(value.shape),
            "values": flat}


def parse(tf, case: dict, serialized: list):
    """The fetches of one case: the single or the batch parse of its examples."""
    context = {k: feature_config(tf, v) for k, v in case["context"].items()}
    sequence = {k: feature_config(tf, v) for k, v in case["sequence"].items()}
    data = [serialized[i] for i in case["examples"]]
    if case["single"]:
        return tf.io.parse_single_sequence_example(data[0], context, sequence, example_name=case.get("names"))
    return tf.io.parse_sequence_example(data, context, sequence, example_names=case.get("names"))


def main(job_file: str) -> None:
    import tensorflow as tf
    tf1 = tf.compat.v1
    tf1.disable_eager_execution()
    with open(job_file) as f:
        job = json.load(f)
    serialized = [sequence_example(tf, e).SerializeToString(deterministic=True) for e in job["examples"]]
    out = {"serialized": [s.hex() for s in serialized], "cases": []}
    for case in job["cases"]:
        with tf.Graph().as_default(), tf1.Session() as sess:
            try:
                out["cases"].append({"value": encode(tf, sess.run(parse(tf1, case, serialized)))})
            except tf.errors.OpError as e:
                lines = [line for line in e.message.split("\n") if line and not line.startswith(("\t", " "))]
                out["cases"].append({"error": f"{type(e).__name__}: {lines[-1]}"})
    graph_def = tf1.GraphDef.FromString(bytes.fromhex(job["graph"]["graph_def"]))
    with tf.Graph().as_default() as graph, tf1.Session() as sess:
        tf1.import_graph_def(graph_def, name="")
        out["graph"] = encode(tf, sess.run([graph.get_tensor_by_name(n) for n in job["graph"]["fetches"]]))
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:])
