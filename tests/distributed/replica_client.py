"""A between-graph replication client, run as its own process by test_training.py and test_faults.py:

    replica_client.py CLUSTER_JSON WORKER_INDEX STEPS [SEED]

Builds the linear model of `build` (variables on the ps tasks by tf.train.replica_device_setter, compute on
/job:worker/task:WORKER_INDEX), opens a session on that worker and runs STEPS steps of asynchronous SGD on batches of
its own (SEED), printing "ready" before the first step and the last loss after the last. STEPS 0 runs until killed.
"""
import itertools
import json
import sys

import numpy as np

import adplace as tf

TRUE_W = np.array([[2.0], [-3.0], [0.5]], np.float32)
TRUE_B = 1.5


def build(cluster, worker: int, learning_rate: float = 0.1) -> dict:
    """The model in the default graph: the same variables (names, ps tasks) in every client."""
    setter = tf.train.replica_device_setter(cluster=cluster, worker_device="/job:worker/task:%d" % worker)
    with tf.device(setter):
        global_step = tf.train.get_or_create_global_step()
        w = tf.Variable(tf.zeros([3, 1]), name="w")
        b = tf.Variable(0.0, name="b")
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
        train = tf.train.GradientDescentOptimizer(learning_rate).minimize(loss, global_step=global_step)
    return {"global_step": global_step, "w": w, "b": b, "x": x, "y": y, "loss": loss, "train": train}


def batch(rng) -> tuple:
    x = rng.uniform(-1.0, 1.0, (16, 3)).astype(np.float32)
    return x, x @ TRUE_W + TRUE_B


def main() -> None:
    cluster = tf.train.ClusterSpec(json.loads(sys.argv[1]))
    worker, steps = int(sys.argv[2]), int(sys.argv[3])
    rng = np.random.default_rng(int(sys.argv[4]) if len(sys.argv) > 4 else worker)
    model = build(cluster, worker)
    with tf.Session("grpc://" + cluster.task_address("worker", worker)) as sess:
        print("ready", flush=True)
        loss = None
        for _ in range(steps) if steps else itertools.count():
            x, y = batch(rng)
            loss, _ = sess.run([model["loss"], model["train"]], {model["x"]: x, model["y"]: y})
        print(loss, flush=True)


if __name__ == "__main__":
    main()
