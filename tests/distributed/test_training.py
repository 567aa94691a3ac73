"""Training on a cluster of tasks on Ray, as TF's distributed guides do it: between-graph replication (one client
process per worker, variables on ps tasks), partitioned variables sharded over ps tasks, in-graph replication (one
client, towers on several workers), MonitoredTrainingSession's chief and workers with checkpoints, the seeds'
simple_client.py, and queues shared by name between client processes."""
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import adplace as tf
from clients import HERE, load_client


def start_client(name: str, *args) -> subprocess.Popen:
    """A client process running tests/distributed/NAME.py ARGS on the test Ray cluster ($ADPLACE_RAY_ADDRESS)."""
    return subprocess.Popen([sys.executable, str(HERE / f"{name}.py"), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def finish(process: subprocess.Popen, timeout: float = 120) -> str:
    """The stdout of a client process that must exit cleanly."""
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-3000:]
    return out


replica = load_client("replica_client")


def test_between_graph_replication_trains_asynchronously_from_two_client_processes(cluster):
    steps = 60
    model = replica.build(cluster.spec, 0)
    with tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        clients = [start_client("replica_client", json.dumps(cluster.spec.as_dict()), i, steps) for i in (0, 1)]
        losses = [float(finish(c).split()[-1]) for c in clients]
        global_step, w, b = sess.run([model["global_step"], model["w"], model["b"]])
    assert global_step == 2 * steps
    np.testing.assert_allclose(w, replica.TRUE_W, atol=0.05)
    assert abs(b - replica.TRUE_B) < 0.05 and max(losses) < 1e-2
    placed = sess._remote._placement.device_of
    assert placed(model["w"].op).task_name == placed(model["global_step"].op).task_name == "/job:ps/replica:0/task:0"


def _partitioned_model(placed: bool):
    graph = tf.Graph()
    with graph.as_default():
        setter = tf.train.replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0") if placed else None
        with tf.device(setter):
            w = tf.get_variable("w", [4, 1], initializer=tf.zeros_initializer(),
                                partitioner=tf.fixed_size_partitioner(2))
            x = tf.constant(np.arange(24, dtype=np.float32).reshape(6, 4) / 10.0)
            loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - tf.matmul(x, [[1.0], [-1.0], [2.0], [0.5]])))
            train = tf.train.GradientDescentOptimizer(0.02).minimize(loss)
    return graph, w, train


@pytest.mark.parametrize("cluster", [{"ps": 2, "worker": 1}], indirect=True)
def test_partitioned_variables_are_sharded_over_the_ps_tasks_and_train_as_in_process(cluster):
    trained = []
    for target, placed in (("", False), (cluster.target("worker", 0), True)):
        graph, w, train = _partitioned_model(placed)
        with tf.Session(target, graph=graph) as sess:
            sess.run(tf.variables_initializer(graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)))
            for _ in range(20):
                sess.run(train)
            trained.append(sess.run(w.as_tensor() if hasattr(w, "as_tensor") else tf.concat(list(w), 0)))
    np.testing.assert_allclose(trained[1], trained[0], rtol=1e-5)
    assert not np.allclose(trained[0], 0.0)
    for i, shard in enumerate(np.split(trained[1], 2)):  # shard i is on ps task i, and only there
        graph = tf.Graph()
        with graph.as_default():
            with tf.device(f"/job:ps/task:{i}"):
                here = tf.Variable(np.zeros([2, 1], np.float32), name=f"w/part_{i}")
            with tf.device(f"/job:ps/task:{1 - i}"):
                there = tf.Variable(np.zeros([2, 1], np.float32), name=f"w/part_{i}")
        with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
            np.testing.assert_array_equal(sess.run(here), shard)
            with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized"):
                sess.run(there)


def _towers_model(placed: bool):
    """In-graph replication: one tower per worker, gradients averaged and applied to the ps variables."""
    graph = tf.Graph()
    rng = np.random.default_rng(7)
    with graph.as_default():
        with tf.device("/job:ps/task:0" if placed else None):
            w = tf.Variable(tf.zeros([3, 1]), name="w")
            b = tf.Variable(0.0, name="b")
        opt = tf.train.GradientDescentOptimizer(0.1)
        tower_grads = []
        for i in range(2):
            with tf.device(f"/job:worker/task:{i}" if placed else None), tf.name_scope(f"tower_{i}"):
                x, y = replica.batch(rng)
                loss = tf.reduce_mean(tf.square(tf.matmul(tf.constant(x), w) + b - tf.constant(y)))
                tower_grads.append(opt.compute_gradients(loss, [w, b]))
        with tf.device("/job:ps/task:0" if placed else None):
            averaged = [(tf.add_n([g[k][0] for g in tower_grads]) / 2.0, tower_grads[0][k][1]) for k in range(2)]
            train = opt.apply_gradients(averaged)
    return graph, w, b, train


def test_in_graph_replication_with_towers_on_two_workers_gives_the_in_process_result(cluster):
    results = []
    for target, placed in (("", False), (cluster.target("worker", 0), True)):
        graph, w, b, train = _towers_model(placed)
        with tf.Session(target, graph=graph) as sess:
            sess.run([w.initializer, b.initializer])
            for _ in range(10):
                sess.run(train)
            results.append(sess.run([w, b]))
            if placed:
                tasks = {p.task for plan in sess._remote._plans.values() for p in plan.pieces}
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5)
    assert not np.allclose(results[0][0], 0.0)
    assert {"/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1", "/job:ps/replica:0/task:0"} <= tasks


class _FastWaits:
    """session_manager's `time` with short sleeps: a worker polls for the chief's model every 0.2 s, not 30 s."""

    def __init__(self):
        import time
        self.time, self.polls = time.time, threading.Semaphore(0)
        self._sleep = time.sleep

    def sleep(self, seconds: float) -> None:
        self.polls.release()
        self._sleep(min(seconds, 0.2))


def _train(mts, model, rng, steps: int) -> None:
    for _ in range(steps):
        x, y = replica.batch(rng)
        mts.run(model["train"], {model["x"]: x, model["y"]: y})


def test_monitored_training_sessions_chief_initializes_workers_wait_and_checkpoints_resume(cluster, tmp_path,
                                                                                         monkeypatch):
    from adplace.train import session_manager
    waits = _FastWaits()
    monkeypatch.setattr(session_manager, "time", waits)
    seen = {}

    def worker() -> None:  # a non-chief started before the chief: waits until the chief initialized the model
        with tf.Graph().as_default():
            model = replica.build(cluster.spec, 1)
            with tf.train.MonitoredTrainingSession(master=cluster.target("worker", 1), is_chief=False,
                                                   max_wait_secs=45) as mts:  # polls for 15 s
                seen["first step"] = mts.run(model["global_step"])
                _train(mts, model, np.random.default_rng(1), 5)

    thread = threading.Thread(target=worker, daemon=True)
    thread.start()
    checkpoints = str(tmp_path / "ckpt")
    rng = np.random.default_rng(0)
    try:
        assert waits.polls.acquire(timeout=30), "the worker did not wait for the chief"
        with tf.Graph().as_default():
            model = replica.build(cluster.spec, 0)
            with tf.train.MonitoredTrainingSession(master=cluster.target("worker", 0), is_chief=True,
                                                   checkpoint_dir=checkpoints, save_checkpoint_steps=5,
                                                   log_step_count_steps=None) as mts:
                _train(mts, model, rng, 10)
                thread.join(60)
                assert not thread.is_alive() and 0 <= seen["first step"] <= 10
                first = mts.run(model["global_step"])
            saves = [op.device for op in tf.get_default_graph().get_operations() if op.type == "SaveV2"]
    finally:
        thread.join(60)  # on failure, the worker gives up waiting after max_wait_secs
    assert saves and all(d.startswith("/job:ps/task:0") for d in saves)  # saved by the ps, to files here
    assert first == 15 and tf.train.latest_checkpoint(checkpoints).endswith("-15")
    saved = {name for name, _ in tf.train.list_variables(checkpoints)}
    assert {"global_step", "w", "b"} <= saved
    tf.Session.reset(cluster.target("worker", 0))  # the ps forgets the model: only the checkpoint has it
    with tf.Graph().as_default():
        model = replica.build(cluster.spec, 0)
        with tf.train.MonitoredTrainingSession(master=cluster.target("worker", 0), is_chief=True,
                                               checkpoint_dir=checkpoints, log_step_count_steps=None) as mts:
            assert mts.run(model["global_step"]) == 15
            _train(mts, model, rng, 3)
            assert mts.run(model["global_step"]) == 18


def test_the_seeds_simple_client_increments_x_across_client_processes(cluster):
    target = cluster.target("worker", 0)
    printed = [finish(start_client("simple_client", target, "init")).strip()]
    for _ in range(2):
        printed.append(finish(start_client("simple_client", target)).strip())
    assert printed == ["1.0", "2.0", "3.0"]


def test_a_queue_with_a_shared_name_is_shared_between_client_processes(cluster):
    target = cluster.target("worker", 0)
    filler = start_client("queue_client", target, "fill", 50)
    drainer = start_client("queue_client", target, "drain", 50)
    assert finish(filler).strip() == "filled"
    drained = [int(v) for v in finish(drainer).split()]
    assert drained == list(range(50))
    with tf.device("/job:ps/task:0"):
        queue = tf.FIFOQueue(1000, tf.int64, shapes=[[]], shared_name="q", name="shared_queue")
    with tf.Session(target) as sess:
        assert sess.run(queue.size()) == 0  # the same queue, seen from a third client: empty
