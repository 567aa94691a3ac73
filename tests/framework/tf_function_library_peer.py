"""Real TensorFlow's side of tests/framework/test_function_library.py, run as a subprocess so that TensorFlow never
shares a process with adplace.

    python tf_function_library_peer.py write DIR

writes DIR/datasets.pb: a tf.data graph (map with a captured tensor, filter, batch, and a flat_map, each read by a
one-shot iterator, whose factory functions hold the others), DIR/datasets.json ({"next": [get_next tensor names]})
and DIR/datasets.<i>.<k>.npy: the k-th element TF's iterator i yields, until its end.
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


def write(folder: pathlib.Path) -> None:
    graph = tf.Graph()
    with graph.as_default():
        scale = tf.constant(3, tf.int64, name="scale")
        numbers = tf.data.Dataset.range(10)
        batched = numbers.map(lambda v: v * scale).filter(lambda v: tf.equal(v % 2, 0)).batch(2)
        nested = tf.data.Dataset.range(4).flat_map(lambda v: tf.data.Dataset.range(v).map(lambda w: w + v * 10))
        nexts = [tf1.data.make_one_shot_iterator(d).get_next() for d in (batched, nested)]
        with tf1.Session(graph=graph) as sess:
            for i, fetch in enumerate(nexts):
                k = 0
                while True:
                    try:
                        value = sess.run(fetch)
                    except tf.errors.OutOfRangeError:
                        break
                    np.save(folder / f"datasets.{i}.{k}.npy", np.asarray(value), allow_pickle=False)
                    k += 1
    (folder / "datasets.pb").write_bytes(graph.as_graph_def().SerializeToString())
    (folder / "datasets.json").write_text(json.dumps({"next": [t.name for t in nexts]}))


if __name__ == "__main__":
    command, target = sys.argv[1], pathlib.Path(sys.argv[2])
    {"write": write}[command](target)
