"""SyncReplicasOptimizer on a cluster, between-graph: two workers, each with its own graph and session (threads of
this process standing for worker processes), the chief's MonitoredTrainingSession starting the token queue runner;
the accumulators and the token queue are shared on the ps by name. Every update averages gradients taken at the
current weights, so the weights follow plain SGD, one global step per update."""
import threading
import time

import numpy as np
import pytest

import adplace as tf

STEPS = 5


def _data():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(16, 3)).astype(np.float32)
    return x, x @ np.array([0.5, -1.0, 2.0], np.float32)


def _worker(cluster, index: int, results: dict, errors: list) -> None:
    x_data, y_data = _data()
    graph = tf.Graph()
    try:
        with graph.as_default():
            with tf.device(tf.train.replica_device_setter(cluster=cluster.spec,
                                                          worker_device=f"/job:worker/task:{index}")):
                w = tf.Variable(tf.zeros([3]), name="w")
                loss = tf.reduce_mean(tf.square(tf.reduce_sum(x_data * w, 1) - y_data))
                global_step = tf.train.get_or_create_global_step()
                opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                                     replicas_to_aggregate=2, total_num_replicas=2)
                train_op = opt.minimize(loss, global_step=global_step)
            hooks = [opt.make_session_run_hook(is_chief=index == 0)]
            options = tf.RunOptions(timeout_in_ms=1000)
            with tf.train.MonitoredTrainingSession(master=cluster.target("worker", index), is_chief=index == 0,
                                                   hooks=hooks, save_checkpoint_secs=None,
                                                   save_summaries_steps=None, stop_grace_period_secs=2) as sess:
                while sess.run(global_step) < STEPS:
                    try:
                        sess.run(train_op, options=options)
                    except tf.errors.DeadlineExceededError:
                        pass  # a token that will never come (the other replica is done)
                results[index] = sess.run([w, global_step])
    except Exception as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)


# Closing the chief's session cancels its queue runner's take_grad after the coordinator was joined: the runner's
# thread then ends with that CancelledError, as TF's does (Coordinator.request_stop re-raises once joined).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_two_workers_train_synchronously_through_the_ps(cluster):
    results, errors = {}, []
    threads = [threading.Thread(target=_worker, args=(cluster, i, results, errors)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    deadline = time.monotonic() + 20  # the chief's queue runner ends once its closed session cancels its take_grad
    while any(t.name.startswith("QueueRunnerThread-sync_token_q") for t in threading.enumerate()) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert not errors, errors
    (w0, step0), (w1, step1) = results[0], results[1]
    final_w, final_step = (w0, step0) if step0 >= step1 else (w1, step1)
    assert STEPS <= final_step <= STEPS + 1
    x_data, y_data = _data()
    expected = np.zeros(3, np.float32)
    for _ in range(final_step):
        expected = expected - 0.1 * (2.0 / len(y_data)) * (x_data.T @ (x_data @ expected - y_data))
    np.testing.assert_allclose(final_w, expected, rtol=1e-5)
