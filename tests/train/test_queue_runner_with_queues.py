"""QueueRunner and Coordinator driving real TF queues (tf.FIFOQueue): every element arrives exactly once, the
queue closes when the input ends, and a stop cancels enqueues blocked on a full queue."""
import time

import numpy as np
import pytest

import adplace as tf



pytestmark = pytest.mark.usefixtures("no_leaked_threads")


def test_four_threads_move_every_element_once_then_close_the_queue():
    n = 1000
    with tf.Graph().as_default():
        source = tf.FIFOQueue(n, tf.int64, shapes=[[]], name="source")
        fill = source.enqueue_many([np.arange(n, dtype=np.int64)])
        close_source = source.close()
        out = tf.FIFOQueue(8, tf.int64, shapes=[[]], name="out")  # small: the threads block and interleave
        qr = tf.train.QueueRunner(out, [out.enqueue([source.dequeue()]) for _ in range(4)])
        tf.train.add_queue_runner(qr)
        take = out.dequeue()
        got = []
        coord = tf.train.Coordinator()
        with tf.Session() as sess:
            sess.run(fill)
            sess.run(close_source)
            threads = tf.train.start_queue_runners(sess, coord=coord)
            assert len(threads) == 5
            try:
                while not coord.should_stop():
                    got.append(int(sess.run(take)))
            except tf.errors.OutOfRangeError:  # `out` closed by the last runner thread, and drained
                pass
            finally:
                coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
            with pytest.raises(tf.errors.CancelledError):  # closed
                sess.run(out.enqueue([np.int64(0)]))
    assert sorted(got) == list(range(n))


def test_stop_cancels_enqueues_blocked_on_a_full_queue():
    with tf.Graph().as_default():
        queue = tf.FIFOQueue(5, tf.int64, shapes=[[]], name="full")
        qr = tf.train.QueueRunner(queue, [queue.enqueue([tf.constant(i, tf.int64)]) for i in range(4)])
        size, take_all = queue.size(), queue.dequeue_many(5)
        coord = tf.train.Coordinator()
        with tf.Session() as sess:
            threads = qr.create_threads(sess, coord=coord, start=True)
            deadline = time.monotonic() + 5
            while sess.run(size) < 5 and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.05)  # the four threads are now blocked in enqueue
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)  # cancelled enqueues fail after the stop: no error
            values = sess.run(take_all)  # what was enqueued before the cancel is still there
            assert sess.run(size) == 0 and set(values.tolist()) <= {0, 1, 2, 3}
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(queue.dequeue())


def test_error_in_a_runner_thread_reaches_join():
    with tf.Graph().as_default():
        queue = tf.FIFOQueue(100, tf.float32, shapes=[[]], name="checked")
        bad = tf.debugging.check_numerics(tf.constant(np.nan, tf.float32), "bad input")
        qr = tf.train.QueueRunner(queue, [queue.enqueue([tf.constant(1.0)]), queue.enqueue([bad])])
        coord = tf.train.Coordinator()
        with tf.Session() as sess:
            threads = qr.create_threads(sess, coord=coord, start=True)
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad input"):
                coord.join(threads, stop_grace_period_secs=5)
            assert sess.run(queue.size()) <= 100
