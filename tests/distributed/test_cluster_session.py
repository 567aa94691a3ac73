"""Sessions on a cluster of tasks on Ray: variables on ps tasks and compute on workers give the values an in-process
session gives, variables outlive sessions and are seen by later clients, Session.reset clears them, and bad targets
and devices get TF's errors."""
import numpy as np
import pytest

import adplace as tf


def _model(placed: bool):
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0" if placed else None):
            w = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="w")
        with tf.device("/job:worker/task:1" if placed else None):
            x = tf.placeholder(tf.float32, [None, 2], name="x")
            y = tf.matmul(x, w)
            step = tf.assign_add(w, tf.matmul(x, y, transpose_a=True) * 0.01)
    return graph, w, x, y, step


def test_steps_across_tasks_give_the_in_process_values(cluster):
    feed = np.array([[1.0, 1.0], [0.5, -1.0]], np.float32)
    results = []
    for target, placed in (("", False), (cluster.target("worker", 0), True)):
        graph, w, x, y, step = _model(placed)
        with tf.Session(target, graph=graph) as sess:
            sess.run(w.initializer)
            first = sess.run({"y": y, "x": x}, {x: feed})
            for _ in range(3):
                sess.run(step, {x: feed})
            results.append((first, sess.run(w)))
    (local_first, local_w), (remote_first, remote_w) = results
    np.testing.assert_allclose(remote_first["y"], local_first["y"])
    assert np.array_equal(remote_first["x"], feed)
    np.testing.assert_allclose(remote_w, local_w, rtol=1e-6)


def test_ops_without_a_job_run_on_the_master_task(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(3.0)
    doubled = v * 2.0
    with tf.Session(cluster.target("worker", 1)) as sess:
        sess.run(v.initializer)
        assert sess.run(doubled) == 6.0
        plan = next(iter(sess._remote._plans.values()))
    placed = sess._remote._placement.device_of(doubled.op).name
    assert placed == "/job:worker/replica:0/task:1/device:CPU:0" and plan is not None


def test_variables_outlive_sessions_and_later_clients_see_them(cluster):
    def client():
        graph = tf.Graph()
        with graph.as_default():
            x = tf.Variable(0.0, name="x")
            increment = tf.assign(x, x + 1)
        return graph, x, increment
    graph, x, increment = client()
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        sess.run(x.initializer)
        assert sess.run(increment) == 1.0
    for expected in (2.0, 3.0):  # the seeds' simple_client.py: a new client process, the same graph and target
        graph, x, increment = client()
        with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
            assert sess.run(increment) == expected
    graph, x, increment = client()
    with tf.Session(cluster.target("worker", 1), graph=graph) as sess:  # unplaced: on worker 1, its own x
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value x"):
            sess.run(increment)
    tf.Session.reset(cluster.target("worker", 0))
    graph, x, increment = client()
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value x"):
            sess.run(increment)


def test_a_device_of_a_job_or_task_outside_the_cluster_is_refused_naming_both(cluster):
    with tf.device("/job:ps/task:7"):
        v = tf.Variable(1.0, name="far_away")
    with tf.Session(cluster.target("worker", 0)) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"far_away.*/job:ps/task:7"):
            sess.run(v.initializer)


def test_an_unreachable_target_is_unavailable_within_the_timeout(ray_cluster):
    config = tf.ConfigProto(operation_timeout_in_ms=500)
    with pytest.raises(tf.errors.UnavailableError, match="localhost:1"):
        tf.Session("grpc://localhost:1", config=config)


def test_a_killed_worker_is_unavailable_and_the_ps_keeps_its_variables(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(0.0, name="kept")
    with tf.device("/job:worker/task:1"):
        bump = tf.assign_add(v, 1.0)
    with tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(v.initializer)
        sess.run(bump)
        cluster.server("worker", 1)._stop()
        with pytest.raises(tf.errors.UnavailableError, match="worker"):
            sess.run(bump)
        assert sess.run(v) == 1.0


def test_a_session_on_a_reset_task_is_aborted_once_then_registers_again(cluster):
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="reset_me")
    with tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(v.initializer)
        assert sess.run(v) == 1.0  # its pieces are registered on the tasks now
        tf.Session.reset(cluster.target("worker", 0))
        with pytest.raises(tf.errors.AbortedError, match="reset or restarted"):
            sess.run(v)
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value reset_me"):
            sess.run(v)
        sess.run(v.initializer)
        assert sess.run(v) == 1.0


def test_a_shared_queue_outlives_the_client_session_that_filled_it_until_reset(cluster):
    def client():
        graph = tf.Graph()
        with graph.as_default(), tf.device("/job:ps/task:0"):
            queue = tf.FIFOQueue(10, tf.int64, shapes=[[]], shared_name="kept_q", name="kept_q")
            return graph, queue, queue.enqueue_many([[7, 8, 9]]), queue.dequeue(), queue.size()
    graph, _, fill, _, _ = client()
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        sess.run(fill)
    graph, _, _, take, size = client()  # a later client, after the filler's session closed
    with tf.Session(cluster.target("worker", 1), graph=graph) as sess:
        bounded = tf.RunOptions(timeout_in_ms=5000)  # a queue lost with the filler's session would block
        assert [sess.run(take, options=bounded) for _ in range(2)] == [7, 8] and sess.run(size) == 1
    tf.Session.reset(cluster.target("worker", 0))
    graph, _, _, _, size = client()
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        assert sess.run(size) == 0
