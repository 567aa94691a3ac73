"""Conditional accumulators and SyncReplicasOptimizer in one process: gradients averaged over replicas, stale ones
dropped, take_grad waiting under the step's deadline; replicas as threads sharing one session train exactly as
plain SGD (each update the mean of gradients taken at the current weights), one global step per update."""
import threading

import numpy as np
import pytest

import adplace as tf


def test_take_grad_returns_the_mean_and_drops_stale_gradients():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2], shared_name="acc_mean")
    grad, step = tf.placeholder(tf.float32, [2]), tf.placeholder(tf.int64, [])
    apply, take = acc.apply_grad(grad, local_step=step), acc.take_grad(2)
    count, set_step = acc.num_accumulated(), acc.set_global_step(step)
    with tf.Session() as sess:
        sess.run(apply, {grad: [1.0, 2.0], step: 0})
        sess.run(apply, {grad: [3.0, 6.0], step: 0})
        assert sess.run(count) == 2
        assert sess.run(take).tolist() == [2.0, 4.0]        # the mean; the global step is now 1
        sess.run(apply, {grad: [100.0, 100.0], step: 0})    # stale: dropped
        assert sess.run(count) == 0
        sess.run(set_step, {step: 5})
        sess.run(apply, {grad: [9.0, 9.0], step: 4})
        sess.run(apply, {grad: [1.0, 1.0], step: 5})
        sess.run(apply, {grad: [3.0, 3.0], step: 7})
        assert sess.run(take).tolist() == [2.0, 2.0]


def test_take_grad_waits_under_the_deadline_and_checks_its_arguments():
    acc = tf.ConditionalAccumulator(tf.float32, shape=[2])
    grad = tf.placeholder(tf.float32, None)
    apply = acc.apply_grad(grad)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(acc.take_grad(1), options=tf.RunOptions(timeout_in_ms=150))
        with pytest.raises(tf.errors.InvalidArgumentError, match="Shape mismatch"):
            sess.run(apply, {grad: [1.0, 2.0, 3.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="num_required must be positive, but was 0"):
            sess.run(acc.take_grad(0))


def test_sparse_accumulator_averages_each_row_over_the_gradients_that_had_it():
    acc = tf.SparseConditionalAccumulator(tf.float32, shared_name="acc_sparse")
    apply1 = acc.apply_grad([0, 2], [[1.0, 1.0], [4.0, 4.0]], [3, 2])
    apply2 = acc.apply_grad([2], [[2.0, 0.0]], [3, 2])
    indices, values, shape = acc.take_grad(2)
    with tf.Session() as sess:
        sess.run(apply1)
        sess.run(apply2)
        got = sess.run([indices, values, shape])
    assert got[0].tolist() == [0, 2] and got[1].tolist() == [[1.0, 1.0], [3.0, 2.0]] and got[2].tolist() == [3, 2]


def _linear_problem():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(16, 3)).astype(np.float32)
    return x, x @ np.array([1.0, -2.0, 0.5], np.float32)


def test_sync_replicas_in_threads_equal_sgd_on_the_mean_gradient():
    x_data, y_data = _linear_problem()
    steps = 6
    w = tf.Variable(tf.zeros([3]), name="w")
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(x_data * w, 1) - y_data))
    global_step = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), replicas_to_aggregate=2,
                                         total_num_replicas=2)
    train_op = opt.minimize(loss, global_step=global_step)
    hook = opt.make_session_run_hook(is_chief=True)
    hook.begin()
    coord = tf.train.Coordinator()
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        hook.after_create_session(sess, coord)
        errors = []

        def replica():  # as TF's replicas do: until the global step is reached (a late token may never come)
            try:
                while sess.run(global_step) < steps:
                    try:
                        sess.run(train_op, options=tf.RunOptions(timeout_in_ms=500))
                    except tf.errors.DeadlineExceededError:
                        pass
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
        threads = [threading.Thread(target=replica) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors and not any(t.is_alive() for t in threads)
        got_w, got_step = sess.run([w, global_step])
        coord.request_stop()
        sess.close()
        coord.join(stop_grace_period_secs=5, ignore_live_threads=True)
    assert steps <= got_step <= steps + 1
    expected = np.zeros(3, np.float32)
    for _ in range(got_step):  # every gradient that counts was computed at the current weights: the same one
        residual = x_data @ expected - y_data
        expected = expected - 0.1 * (2.0 / len(y_data)) * (x_data.T @ residual)
    np.testing.assert_allclose(got_w, expected, rtol=1e-5)


def test_sync_replicas_refuses_missing_global_step_and_early_calls():
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
    with pytest.raises(ValueError, match="after apply_gradients"):
        opt.get_chief_queue_runner()
    v = tf.Variable(1.0)
    with pytest.raises(ValueError, match="Global step is required"):
        opt.apply_gradients([(tf.constant(1.0), v)])
