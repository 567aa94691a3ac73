"""Real TensorFlow's side of the Adadelta interop tests (test_adadelta.py), run in a subprocess so that TF never enters
the pytest process. `build` and `run` take the TF1 API as a module (TF's tf.compat.v1, or adplace), so both sides
build the same graph from the same code. Prints one JSON object on stdout: variable (and slot) name -> values.

    python tf_adadelta_peer.py train           # STEPS steps of the training graph from its initial values
    python tf_adadelta_peer.py restore PREFIX  # restore the graph's variables and slots from PREFIX, then one step
"""
import json
import os
import sys

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

STEPS = 6
HYPER = {"learning_rate": 1.0, "rho": 0.9, "epsilon": 1e-6}
X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]])
Y = np.array([[1.0, -2.0], [0.5, 3.0]])
IDS = [1, 3, 1]  # row 1 twice: the optimizer sums its rows (Unique) before SparseApplyAdadelta
TARGET = np.array([[0.5, -1.0], [2.0, 1.0], [-1.5, 0.25]])


def build(v1) -> tuple:
    """A float32 dense layer (ApplyAdadelta) and a float64 embedding read by gather (SparseApplyAdadelta), trained
    by one AdadeltaOptimizer; returns the train op and the global variables (slots included)."""
    w = v1.Variable(np.arange(1.0, 7.0, dtype=np.float32).reshape(3, 2) / 4, name="dense/w")
    table = v1.Variable(np.arange(10.0).reshape(5, 2) / 3 + 0.5, name="embedding/table")
    dense_loss = v1.reduce_sum(v1.square(v1.matmul(X.astype(np.float32), w) - Y.astype(np.float32)))
    sparse_loss = v1.reduce_sum(v1.square(v1.gather(table, IDS) - TARGET))
    optimizer = v1.train.AdadeltaOptimizer(**HYPER)
    train = v1.group(optimizer.minimize(dense_loss, var_list=[w]), optimizer.minimize(sparse_loss,
                                                                                     var_list=[table]))
    return train, v1.global_variables()


def values(sess, variables) -> dict:
    """name -> flat list of values, for JSON."""
    fetched = sess.run({v.op.name: v for v in variables})
    return {name: np.asarray(value, np.float64).reshape(-1).tolist() for name, value in fetched.items()}


def main(mode: str, prefix: str = "") -> dict:
    import tensorflow as tf
    v1 = tf.compat.v1
    v1.disable_eager_execution()
    train, variables = build(v1)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        if mode == "restore":
            v1.train.Saver().restore(sess, prefix)  # NotFoundError unless every TF slot name is in the checkpoint
            sess.run(train)
        else:
            for _ in range(STEPS):
                sess.run(train)
        return values(sess, variables)


if __name__ == "__main__":
    print(json.dumps(main(*sys.argv[1:])))
