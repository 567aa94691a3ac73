"""tf.train.QueueRunner, add_queue_runner and start_queue_runners, on a stand-in queue made of py_funcs.

The stand-in models what a QueueRunner relies on: an enqueue op that blocks while the queue is full, fails with
OutOfRangeError when its input is exhausted (StopIteration in a py_func) and fails once the queue is cancelled;
close() ops that record how they were run. Tests with TF's real queues are in test_queue_runner_with_queues.py.
"""
import itertools
import threading
import types

import numpy as np
import pytest

import adplace as tf


pytestmark = pytest.mark.usefixtures("no_leaked_threads")


class StandInQueue:
    """A bounded queue of the items of `source`, with enqueue and close ops made of py_funcs."""

    def __init__(self, source, capacity=None, name="stand_in_queue", fail_on=None):
        self.name, self.capacity, self.fail_on = name, capacity, fail_on
        self.source = iter(source)
        self.items, self.closes = [], []  # closes: cancel_pending_enqueues of each close op run
        self.blocked = 0                  # enqueues waiting for room
        self.cancelled = False
        self.cond = threading.Condition()

    def _enqueue(self):
        with self.cond:
            item = next(self.source)  # StopIteration: OutOfRangeError, the input is exhausted
            if item == self.fail_on:
                raise ValueError(f"bad record {item}")
            while self.capacity is not None and len(self.items) >= self.capacity and not self.cancelled:
                self.blocked += 1
                self.cond.notify_all()
                self.cond.wait()
                self.blocked -= 1
            if self.cancelled:
                raise RuntimeError("enqueue cancelled")
            self.items.append(int(item))
        return np.int64(0)

    def enqueue_op(self, name="enqueue"):
        return tf.py_func(self._enqueue, [], tf.int64, name=name).op

    def close(self, cancel_pending_enqueues=False):
        def close():
            with self.cond:
                self.closes.append(cancel_pending_enqueues)
                self.cancelled = self.cancelled or cancel_pending_enqueues
                self.cond.notify_all()
            return np.int64(0)
        return tf.py_func(close, [], tf.int64, name="cancel" if cancel_pending_enqueues else "close").op

    def wait_blocked(self, n):
        with self.cond:
            assert self.cond.wait_for(lambda: self.blocked == n, timeout=5), self.blocked


def _join_all(threads):
    for t in threads:
        t.join(5)
    assert not any(t.is_alive() for t in threads)


def test_threads_without_coordinator_enqueue_every_item_once_and_the_last_closes():
    with tf.Graph().as_default():
        queue = StandInQueue(range(300))
        qr = tf.train.QueueRunner(queue, [queue.enqueue_op(f"enqueue_{i}") for i in range(4)])
        with tf.Session() as sess:
            threads = qr.create_threads(sess, start=True)
            assert len(threads) == 4 and not any(t.daemon for t in threads)
            _join_all(threads)
    assert sorted(queue.items) == list(range(300))
    assert queue.closes == [False]  # the default close_op, queue.close(), run once by the last thread
    assert qr.exceptions_raised == []


def test_threads_under_coordinator_and_cancel_on_stop():
    with tf.Graph().as_default():
        queue = StandInQueue(range(200), name="input_queue")
        ops = [queue.enqueue_op(f"enqueue_{i}") for i in range(3)]
        qr = tf.train.QueueRunner(queue, ops)
        coord = tf.train.Coordinator()
        with tf.Session() as sess:
            threads = qr.create_threads(sess, coord=coord, daemon=True, start=True)
            assert [t.name for t in threads] == [f"QueueRunnerThread-input_queue-enqueue_{i}" for i in range(3)] + [
                "QueueRunnerThread-input_queue-close_on_stop"]
            assert all(t.daemon for t in threads)
            _join_all(threads[:3])
            assert queue.closes == [False] and threads[3].is_alive()  # the stop has not come yet
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)
    assert sorted(queue.items) == list(range(200))
    assert queue.closes == [False, True]  # then cancel_op on the stop


def test_exact_count_of_variable_updates_ended_by_out_of_range():
    """Enqueue ops that are not queue ops at all: each run takes a ticket, then adds one to a variable."""
    tickets = itertools.count()

    def take_ticket():
        if next(tickets) >= 500:
            raise StopIteration
        return np.int64(0)

    with tf.Graph().as_default():
        counter = tf.Variable(0, dtype=tf.int64)
        closed = []
        close_op = tf.py_func(lambda: closed.append(1) or np.int64(0), [], tf.int64).op
        cancel_op = tf.py_func(lambda: np.int64(0), [], tf.int64).op
        enqueue_ops = []
        for _ in range(3):
            with tf.control_dependencies([tf.py_func(take_ticket, [], tf.int64)]):
                enqueue_ops.append(tf.assign_add(counter, 1, use_locking=True).op)  # exact: no Hogwild race
        qr = tf.train.QueueRunner(types.SimpleNamespace(name="counter"), enqueue_ops, close_op, cancel_op)
        assert (qr.close_op, qr.cancel_op, qr.enqueue_ops, qr.name) == (close_op, cancel_op, enqueue_ops, "counter")
        coord = tf.train.Coordinator()
        with tf.Session() as sess:
            sess.run(counter.initializer)
            threads = qr.create_threads(sess, coord=coord, start=True)
            _join_all(threads[:3])
            coord.request_stop()
            coord.join(threads)
            assert sess.run(counter) == 500
    assert closed == [1]


def test_cancel_op_wakes_enqueues_blocked_on_a_full_queue():
    with tf.Graph().as_default():
        queue = StandInQueue(itertools.count(), capacity=3)
        qr = tf.train.QueueRunner(queue, [queue.enqueue_op() for _ in range(4)])
        coord = tf.train.Coordinator()
        with tf.Session() as sess:
            threads = qr.create_threads(sess, coord=coord, start=True)
            queue.wait_blocked(4)
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=5)  # the errors of cancelled enqueues come after the stop
    assert queue.items == [0, 1, 2]
    assert queue.closes == [True]  # cancelled, not closed: no thread saw the queue closed


def test_blocked_threads_past_the_grace_period_are_named(monkeypatch):
    hooked = []
    monkeypatch.setattr(threading, "excepthook", lambda args: hooked.append(args.exc_value))
    with tf.Graph().as_default():
        queue = StandInQueue(itertools.count(), capacity=1, name="full")
        cancel_for_real = queue.close(cancel_pending_enqueues=True)
        no_op_cancel = tf.py_func(lambda: np.int64(0), [], tf.int64).op
        qr = tf.train.QueueRunner(queue, [queue.enqueue_op("a"), queue.enqueue_op("b")], cancel_op=no_op_cancel)
        coord = tf.train.Coordinator()
        with tf.Session() as sess:
            threads = qr.create_threads(sess, coord=coord, start=True)
            queue.wait_blocked(2)
            coord.request_stop()
            with pytest.raises(RuntimeError, match="threads still running") as info:
                coord.join(threads, stop_grace_period_secs=0.2)
            names = sorted(str(info.value).split(": ")[1].split(" "))
            assert names == ["QueueRunnerThread-full-a", "QueueRunnerThread-full-b"]
            sess.run(cancel_for_real)
            _join_all(threads)
    # As in TF, an error reported after join() is raised by request_stop() in the reporting thread.
    assert len(hooked) == 2 and all("enqueue cancelled" in str(e) for e in hooked)


def test_error_in_an_enqueue_op_is_reported_to_the_coordinator():
    with tf.Graph().as_default():
        queue = StandInQueue(itertools.count(), fail_on=50)
        qr = tf.train.QueueRunner(queue, [queue.enqueue_op() for _ in range(3)])
        coord = tf.train.Coordinator()
        with tf.Session() as sess:
            threads = qr.create_threads(sess, coord=coord, start=True)
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad record 50"):
                coord.join(threads, stop_grace_period_secs=5)
    assert coord.should_stop() and queue.closes == [True]
    assert 50 not in queue.items and set(range(50)) <= set(queue.items)
    assert qr.exceptions_raised == []  # with a coordinator, errors go to it


def test_error_without_coordinator_is_kept_and_ends_only_its_thread(monkeypatch):
    hooked = []
    monkeypatch.setattr(threading, "excepthook", lambda args: hooked.append(args.exc_value))
    with tf.Graph().as_default():
        queue = StandInQueue(range(100), fail_on=0)
        threads = []
        # The second op starts once the first thread has failed and ended, so the second thread is the last one.
        with tf.control_dependencies([tf.py_func(lambda: threads[0].join() or np.int64(0), [], tf.int64)]):
            second = queue.enqueue_op("second")
        qr = tf.train.QueueRunner(queue, [queue.enqueue_op("first"), second])
        with tf.Session() as sess:
            threads += qr.create_threads(sess)
            for t in threads:
                t.start()
            _join_all(threads)
    assert len(qr.exceptions_raised) == 1 and hooked == qr.exceptions_raised
    assert isinstance(hooked[0], tf.errors.InvalidArgumentError) and "bad record 0" in str(hooked[0])
    assert sorted(queue.items) == list(range(1, 100))
    assert queue.closes == [False]  # the failed thread ended first; the other one closed the queue


def test_custom_queue_closed_exception_types():
    for source, closes in [(range(21), [False, True]), (range(20), [True])]:
        with tf.Graph().as_default():
            queue = StandInQueue(source, fail_on=20)  # item 20: ValueError, an InvalidArgumentError
            qr = tf.train.QueueRunner(queue, [queue.enqueue_op()],
                                      queue_closed_exception_types=(tf.errors.InvalidArgumentError,))
            assert qr.queue_closed_exception_types == (tf.errors.InvalidArgumentError,)
            coord = tf.train.Coordinator()
            with tf.Session() as sess:
                threads = qr.create_threads(sess, coord=coord, start=True)
                _join_all(threads[:1])
                # InvalidArgumentError now means "closed": close_op runs, the coordinator does not stop. The
                # OutOfRangeError of an exhausted source is now an error, reported to the coordinator, for which it
                # is a clean stop: no close_op, cancel_op on the stop, no error from join().
                assert coord.should_stop() == (closes == [True])
                coord.request_stop()
                coord.join(threads, stop_grace_period_secs=5)
        assert sorted(queue.items) == list(range(20)) and queue.closes == closes


def test_create_threads_again_only_after_the_running_ones_ended():
    with tf.Graph().as_default():
        queue = StandInQueue(itertools.count(), capacity=2)
        qr = tf.train.QueueRunner(queue, [queue.enqueue_op()])
        coord = tf.train.Coordinator()
        with tf.Session() as sess, tf.Session() as other:
            threads = qr.create_threads(sess, coord=coord)
            assert len(threads) == 2 and not any(t.is_alive() or t.daemon for t in threads)
            assert qr.create_threads(sess, coord=coord) == []  # created, not started: still counted as running
            other_threads = qr.create_threads(other, coord=coord, start=True)  # another session: its own threads
            assert len(other_threads) == 2
            for t in threads:
                t.start()
            queue.wait_blocked(2)
            coord.request_stop()
            coord.join(stop_grace_period_secs=5)  # all four registered
            coord.clear_stop()
            queue.cancelled = False
            queue.items.clear()
            again = qr.create_threads(sess, coord=coord, start=True)
            assert len(again) == 2
            queue.wait_blocked(1)
            coord.request_stop()
            coord.join(again, stop_grace_period_secs=5)


def test_add_and_start_queue_runners():
    with tf.Graph().as_default() as graph:
        first, second = StandInQueue(range(30), name="q1"), StandInQueue(range(40), name="q2")
        qr1 = tf.train.QueueRunner(first, [first.enqueue_op()] * 2)
        qr2 = tf.train.queue_runner.QueueRunner(second, [second.enqueue_op()])
        tf.train.add_queue_runner(qr1)
        tf.train.queue_runner.add_queue_runner(qr2, collection="my_runners")
        assert graph.get_collection(tf.GraphKeys.QUEUE_RUNNERS) == [qr1]
        assert graph.get_collection("my_runners") == [qr2]
        with pytest.raises(ValueError, match="No default session is registered"):
            tf.train.start_queue_runners()
        with pytest.raises(TypeError, match="sess must be a `tf.Session` object"):
            tf.train.start_queue_runners(sess=object())
        assert tf.train.start_queue_runners(sess=type("MonitoredSession", (), {})()) == []
        coord = tf.train.Coordinator()
        with tf.Session() as sess:
            threads = tf.train.start_queue_runners(coord=coord)  # the default session
            assert len(threads) == 3 and all(t.daemon for t in threads)
            threads += tf.train.queue_runner.start_queue_runners(sess, coord=coord, start=False,
                                                                 collection="my_runners")
            assert len(threads) == 5 and not threads[-1].is_alive()
            for t in threads[3:]:
                t.start()
            _join_all(threads[:2] + threads[3:4])
            coord.request_stop()
            coord.join(threads)
    assert sorted(first.items) == list(range(30)) and sorted(second.items) == list(range(40))


def test_start_queue_runners_with_none_defined_warns(caplog):
    with tf.Graph().as_default():
        tf.constant(1)
        with tf.Session() as sess, caplog.at_level("WARNING", logger="adplace"):
            assert tf.train.start_queue_runners(sess) == []
    assert "no queue runners were defined" in caplog.text


def test_constructor_checks_and_protos():
    with tf.Graph().as_default():
        queue = StandInQueue(range(1))
        op = queue.enqueue_op()
        with pytest.raises(ValueError, match="Must provide queue and enqueue_ops"):
            tf.train.QueueRunner(queue, [])
        with pytest.raises(ValueError, match="Must provide queue and enqueue_ops"):
            tf.train.QueueRunner(None, [op])
        for bad in ([tf.errors.OutOfRangeError], (), (ValueError,), (tf.errors.OutOfRangeError, "x")):
            with pytest.raises(TypeError, match="must be a tuple of tf.error types"):
                tf.train.QueueRunner(queue, [op], queue_closed_exception_types=bad)
        qr = tf.train.QueueRunner(queue, [op])
        assert qr.queue is queue and qr.name == "stand_in_queue"
        assert qr.queue_closed_exception_types == (tf.errors.OutOfRangeError,)
        assert qr.close_op.name.startswith("close") and qr.cancel_op.name.startswith("cancel")
        with pytest.raises(ValueError, match="mutually exclusive"):
            tf.train.QueueRunner(queue, queue_runner_def=object())
        # QueueRunnerDef protos: test_queue_runner_proto.py

