"""Real TensorFlow's side of the FTRL interop test (test_ftrl.py), run in a subprocess so that TF never enters the
pytest process. `build` takes the TF1 API as a module (TF's tf.compat.v1, or adplace), so both sides build the same
graph. Prints one JSON object: config -> variable (and slot) name -> values after STEPS steps.

    python tf_ftrl_peer.py
"""
import json
import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

STEPS = 5
CONFIGS = {
    "plain": {},
    "l1_l2": {"l1_regularization_strength": 0.05, "l2_regularization_strength": 0.1},
    "power": {"learning_rate_power": -0.3, "l1_regularization_strength": 0.01, "initial_accumulator_value": 0.5},
    "shrinkage": {"l1_regularization_strength": 0.01, "l2_shrinkage_regularization_strength": 0.2},
}
X = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], np.float32)
IDS = [1, 3, 1]  # row 1 twice: the optimizer sums its rows before SparseApplyFtrl


def build(v1, config: dict) -> tuple:
    """A float32 dense layer (ApplyFtrl*) and a float64 embedding read by gather (SparseApplyFtrl*), one
    FtrlOptimizer; returns the train op and the global variables (slots included)."""
    w = v1.Variable(np.arange(1.0, 7.0, dtype=np.float32).reshape(3, 2) / 4 - 0.5, name="dense/w")
    table = v1.Variable(np.arange(10.0).reshape(5, 2) / 3 - 1.0, name="embedding/table")
    dense_loss = v1.reduce_sum(v1.square(v1.matmul(X, w) - 1.0))
    sparse_loss = v1.reduce_sum(v1.square(v1.gather(table, IDS) - 0.5))
    optimizer = v1.train.FtrlOptimizer(0.3, **config)
    return optimizer.minimize(dense_loss + v1.cast(sparse_loss, v1.float32)), v1.global_variables()


def values(sess, variables) -> dict:
    fetched = sess.run({v.op.name: v for v in variables})
    return {name: np.asarray(value, np.float64).reshape(-1).tolist() for name, value in fetched.items()}


def train(v1) -> dict:
    out = {}
    for name, config in CONFIGS.items():
        graph = v1.Graph()
        with graph.as_default():
            step, variables = build(v1, config)
            with v1.Session(graph=graph) as sess:
                sess.run(v1.global_variables_initializer())
                for _ in range(STEPS):
                    sess.run(step)
                out[name] = values(sess, variables)
    return out


if __name__ == "__main__":
    import tensorflow as tf
    tf.compat.v1.disable_eager_execution()
    print(json.dumps(train(tf.compat.v1)))
