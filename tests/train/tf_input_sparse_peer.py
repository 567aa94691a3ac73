"""Real TensorFlow's side of tests/train/test_input_sparse.py, run in a subprocess:

    python tf_input_sparse_peer.py     # prints one JSON line: run(tf.compat.v1)

run() takes the TF1 API module (tf.compat.v1 here, adplace in the test) so both sides build the same pipelines.
"""
import json

import numpy as np

VALUES = [[1, 2], [], [3], [4, 5, 6], [7]]


def _examples(tf1) -> list:
    return [tf1.train.Example(features=tf1.train.Features(feature={
        "v": tf1.train.Feature(int64_list=tf1.train.Int64List(value=v)),
        "n": tf1.train.Feature(float_list=tf1.train.FloatList(value=[len(v)]))})).SerializeToString() for v in VALUES]


def _value(v) -> dict | list:
    if hasattr(v, "dense_shape"):
        return {"indices": np.asarray(v.indices).tolist(), "values": np.asarray(v.values).tolist(),
                "shape": np.asarray(v.dense_shape).tolist()}
    return np.asarray(v).tolist()


def _drain(tf1, fetches) -> list:
    """Every batch of `fetches` until the input ends, the queue runners started and stopped around."""
    got = []
    with tf1.Session() as sess:
        sess.run(tf1.local_variables_initializer())
        coord = tf1.train.Coordinator()
        threads = tf1.train.start_queue_runners(sess, coord=coord)
        try:
            while True:
                batch = sess.run(fetches)
                got.append({k: _value(v) for k, v in sorted(batch.items())})
        except tf1.errors.OutOfRangeError:
            pass
        coord.request_stop()
        coord.join(threads)
    return got


def run(tf1) -> dict:
    """Batches of VarLenFeature examples (one at a time, and as a minibatch with enqueue_many), in order."""
    out = {}
    with tf1.Graph().as_default():
        serialized = tf1.train.input_producer(tf1.constant(_examples(tf1)), shuffle=False, num_epochs=1).dequeue()
        parsed = tf1.parse_single_example(serialized, {"v": tf1.VarLenFeature(tf1.int64),
                                                       "n": tf1.FixedLenFeature([], tf1.float32)})
        out["single"] = _drain(tf1, tf1.train.batch(parsed, batch_size=2, allow_smaller_final_batch=True))
    with tf1.Graph().as_default():
        serialized = tf1.train.limit_epochs(tf1.constant(_examples(tf1)), num_epochs=1)
        parsed = tf1.parse_example(serialized, {"v": tf1.VarLenFeature(tf1.int64),
                                                "n": tf1.FixedLenFeature([], tf1.float32)})
        out["many"] = _drain(tf1, tf1.train.batch(parsed, batch_size=3, enqueue_many=True,
                                                  allow_smaller_final_batch=True))
    return out


if __name__ == "__main__":
    import tensorflow as tf
    tf.compat.v1.disable_eager_execution()
    print(json.dumps(run(tf.compat.v1)))
