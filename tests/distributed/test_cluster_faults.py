"""Faults on a cluster of tasks on Ray: killed worker and ps actors, a client killed mid-step, and a step past its
deadline. Nothing committed to the ps is lost, no step is half applied, and the cluster goes on."""
import os
import subprocess
import sys
import threading
import time

import numpy as np

import adplace as tf
from clients import HERE, load_client


replica = load_client("replica_client")


def _model(cluster, worker: int) -> tuple:
    graph = tf.Graph()
    with graph.as_default():
        return graph, replica.build(cluster.spec, worker)


def _train(sess, model, rng, steps: int) -> None:
    for _ in range(steps):
        x, y = replica.batch(rng)
        sess.run(model["train"], {model["x"]: x, model["y"]: y})


def _restart(cluster, job: str, task: int):
    server = tf.train.Server(cluster.spec, job, task)
    cluster.servers.append(server)
    return server


def test_a_worker_killed_mid_training_fails_its_steps_others_go_on_and_a_restarted_worker_rejoins(cluster):
    graph0, model0 = _model(cluster, 0)
    graph1, model1 = _model(cluster, 1)
    sess0 = tf.Session(cluster.target("worker", 0), graph=graph0)
    with graph0.as_default():
        sess0.run(tf.global_variables_initializer())
    sess1 = tf.Session(cluster.target("worker", 1), graph=graph1)
    outcome = {"steps": 0}
    started = threading.Event()

    def loop() -> None:  # worker 1's client trains until its task dies under it
        rng = np.random.default_rng(1)
        try:
            while True:
                _train(sess1, model1, rng, 1)
                outcome["steps"] += 1
                if outcome["steps"] == 3:
                    started.set()
        except Exception as exc:  # noqa: BLE001 - the error is the outcome
            outcome["error"] = exc
            started.set()

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    assert started.wait(60)
    cluster.server("worker", 1)._stop()
    thread.join(30)
    assert isinstance(outcome.get("error"), tf.errors.UnavailableError), outcome
    assert "worker" in str(outcome["error"])
    rng = np.random.default_rng(0)
    _train(sess0, model0, rng, 4)  # worker 0's client goes on, on the ps variables worker 1 trained
    assert sess0.run(model0["global_step"]) == outcome["steps"] + 4
    sess1.close()
    _restart(cluster, "worker", 1)
    with tf.Session(cluster.target("worker", 1), graph=graph1) as sess1:  # a new session on the new task
        _train(sess1, model1, np.random.default_rng(2), 3)
        assert sess1.run(model1["global_step"]) == outcome["steps"] + 7
    sess0.close()


def test_a_restarted_ps_is_restored_from_the_last_checkpoint_by_monitored_training_session(cluster, tmp_path):
    checkpoints = str(tmp_path / "ckpt")
    graph, model = _model(cluster, 0)
    rng = np.random.default_rng(0)
    with graph.as_default():
        with tf.train.MonitoredTrainingSession(master=cluster.target("worker", 0), is_chief=True,
                                               checkpoint_dir=checkpoints, save_checkpoint_steps=5,
                                               log_step_count_steps=None) as mts:
            _train(mts, model, rng, 12)
            assert tf.train.latest_checkpoint(checkpoints).endswith("-10")
            saved_w = tf.train.load_variable(checkpoints, "w")
            cluster.server("ps", 0)._stop()  # the variables go with the ps task
            _restart(cluster, "ps", 0)
            _train(mts, model, rng, 1)  # recovers: a new session, restored from step 10
            assert mts.run(model["global_step"]) == 11
            assert not np.array_equal(mts.run(model["w"]), saved_w)  # the step trained on the restored w


def test_a_client_killed_mid_step_leaves_no_half_applied_update_on_the_ps(cluster):
    pair = load_client("pair_client")
    graph = tf.Graph()
    with graph.as_default():
        first, second, _ = pair.build()
    target = cluster.target("worker", 0)
    with tf.Session(target, graph=graph) as sess:
        sess.run([first.initializer, second.initializer])
        client = subprocess.Popen([sys.executable, str(HERE / "pair_client.py"), target], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=dict(os.environ))
        try:
            assert client.stdout.readline().strip() == "running", client.stderr.read()[-3000:]
            time.sleep(0.5)
        finally:
            client.kill()  # SIGKILL, while it runs steps
            client.wait(30)
        values = None
        for _ in range(50):  # until the last step, already on the ps, has ended
            time.sleep(0.2)
            now = sess.run([first, second])
            if now == values:
                break
            values = now
    assert values[0] == values[1] and values[0] >= 2.0, values


def test_a_step_past_its_deadline_is_deadline_exceeded_and_the_cluster_goes_on(cluster):
    with tf.device("/job:ps/task:0"):
        queue = tf.FIFOQueue(10, tf.float32, shapes=[[]], name="empty")
    taken = queue.dequeue()  # no device: with its queue on the ps, as TF's placer keeps it
    with tf.device("/job:worker/task:0"):
        doubled = taken * 2.0
    with tf.Session(cluster.target("worker", 1)) as sess:
        started = time.monotonic()
        try:
            sess.run(doubled, options=tf.RunOptions(timeout_in_ms=1000))
        except tf.errors.DeadlineExceededError:
            pass
        else:
            raise AssertionError("the step did not time out")
        assert time.monotonic() - started < 6.0
        sess.run(queue.enqueue(3.0))
        assert sess.run(doubled) == 6.0  # the timed-out dequeue took nothing
        assert sess.run(queue.size()) == 0
