"""Real TensorFlow's side of test_tensor_array.py, run as a subprocess (TensorFlow never shares a process with
adplace): import DIR/graph.pb, run the tensors DIR/fetches.json names, save each value as DIR/value_<i>.npy.

    python tf_tensor_array_peer.py DIR
"""
import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
tf1.disable_eager_execution()


def main(folder: pathlib.Path) -> None:
    graph_def = tf1.GraphDef()
    graph_def.ParseFromString((folder / "graph.pb").read_bytes())
    graph = tf.Graph()
    with graph.as_default():
        tf1.import_graph_def(graph_def, name="")
    with tf1.Session(graph=graph) as sess:
        values = sess.run(json.loads((folder / "fetches.json").read_text()))
    for i, value in enumerate(values):
        np.save(folder / f"value_{i}.npy", np.asarray(value), allow_pickle=False)
    print("ok")


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]))
