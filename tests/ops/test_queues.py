"""Tests for adplace/ops/queue_ops.py, kernels/queues.py and kernels/queue_store.py: TF1's queues in sessions (order,
exactly-once delivery under threads, shuffling, padding, priorities, closing), their waits (deadlines, Session.close,
nothing lost), sharing by shared_name, bad input, placement, and GraphDefs (also run by real TensorFlow, in a
subprocess; skipped without TensorFlow)."""
import json
import pathlib
import sys
import threading
import time

import numpy as np
import pytest

import adplace as tf
from adplace.framework.graph_io import graph_to_graph_def

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from ctrl_c import pressing_ctrl_c  # noqa: E402
from tf_peer import needs_tf, run_peer  # noqa: E402

CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"
PEER = pathlib.Path(__file__).with_name("tf_queue_peer.py")


class Worker(threading.Thread):
    """A thread running `fn`, keeping its result or exception for the test to check after join()."""

    def __init__(self, fn, *args):
        super().__init__(daemon=True)
        self.fn, self.args, self.result, self.error = fn, args, None, None

    def run(self):
        try:
            self.result = self.fn(*self.args)
        except BaseException as exc:  # noqa: BLE001 - checked by the test
            self.error = exc

    def finish(self, timeout: float = 5.0):
        self.join(timeout)
        assert not self.is_alive(), "the thread is still blocked"
        return self


def started(fn, *args) -> Worker:
    worker = Worker(fn, *args)
    worker.start()
    return worker


def settle() -> None:
    """Give another thread the time to reach its wait (nothing signals when it does)."""
    time.sleep(0.1)


# --- construction ---------------------------------------------------------------------------------------------------
def test_creation_op_has_tf_attrs_and_a_resource_handle():
    q = tf.FIFOQueue(5, (tf.int32, tf.float32), shapes=([1, 2], [5]), shared_name="foo", name="Q")
    node = graph_to_graph_def(tf.get_default_graph()).node[0]
    assert (node.name, node.op) == ("Q", "FIFOQueueV2")
    assert list(node.attr["component_types"].list.type) == [3, 1]  # DT_INT32, DT_FLOAT
    assert [[d.size for d in s.dim] for s in node.attr["shapes"].list.shape] == [[1, 2], [5]]
    assert node.attr["capacity"].i == 5 and node.attr["shared_name"].s == b"foo" and node.attr["container"].s == b""
    assert q.queue_ref.dtype == tf.resource and q.name == "Q" and q.dtypes == [tf.int32, tf.float32]
    assert [s.as_list() for s in q.shapes] == [[1, 2], [5]] and q.names is None


def test_queue_classes_are_exported_under_tf_and_tf_queue():
    for cls in (tf.FIFOQueue, tf.RandomShuffleQueue, tf.PaddingFIFOQueue, tf.PriorityQueue):
        assert issubclass(cls, tf.QueueBase) and getattr(tf.queue, cls.__name__) is cls
    assert tf.queue.QueueBase is tf.QueueBase


def test_static_shapes_of_dequeued_tensors():
    q = tf.FIFOQueue(10, (tf.float32, tf.int32), shapes=([2], []))
    x, y = q.dequeue()
    many = q.dequeue_many(4)
    up_to = q.dequeue_up_to(4)
    assert x.shape.as_list() == [2] and y.shape.as_list() == []
    assert many[0].shape.as_list() == [4, 2] and up_to[1].shape.as_list() == [None]
    assert x.op.name == "fifo_queue_Dequeue" and many[0].op.type == "QueueDequeueManyV2"


def test_bad_construction_arguments_are_tf_errors():
    with pytest.raises(ValueError, match="fully defined"):
        tf.FIFOQueue(10, tf.float32, shapes=[[None, 2]])
    with pytest.raises(ValueError, match="list of shapes must be provided"):
        tf.PaddingFIFOQueue(10, tf.float32, shapes=None)
    with pytest.raises(ValueError, match="same length"):
        tf.FIFOQueue(10, (tf.float32, tf.int32), names=["a"])


# --- values and order -----------------------------------------------------------------------------------------------
def test_fifo_order_enqueue_many_dequeue_many_and_size():
    q = tf.FIFOQueue(10, (tf.float32, tf.int32), shapes=([2], []))
    enqueue = q.enqueue_many(([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [7, 8, 9]))
    x, y = q.dequeue()
    batch = q.dequeue_many(2)
    with tf.Session() as sess:
        sess.run(enqueue)
        assert sess.run(q.size()) == 3
        first = sess.run([x, y])
        np.testing.assert_array_equal(first[0], [1.0, 2.0])
        assert first[1] == 7
        rows, labels = sess.run(batch)
        np.testing.assert_array_equal(rows, [[3.0, 4.0], [5.0, 6.0]])
        np.testing.assert_array_equal(labels, [8, 9])
        assert rows.dtype == np.float32 and labels.dtype == np.int32
        assert sess.run(q.size()) == 0 and not sess.run(q.is_closed())


def test_names_make_elements_dicts():
    q = tf.FIFOQueue(4, (tf.int32, tf.string), shapes=((), ()), names=("n", "s"))
    enqueue = q.enqueue({"n": 3, "s": "three"})
    out = q.dequeue()
    assert sorted(out) == ["n", "s"]
    with pytest.raises(ValueError, match="must enqueue a dictionary"):
        q.enqueue((1, "x"))
    with pytest.raises(ValueError, match="do not match names"):
        q.enqueue({"n": 1, "t": "x"})
    with tf.Session() as sess:
        sess.run(enqueue)
        assert sess.run(out) == {"n": 3, "s": b"three"}


def test_enqueued_values_are_copied():
    q = tf.FIFOQueue(2, tf.float32, shapes=[[2]])
    x = tf.placeholder(tf.float32, [2])
    with tf.Session() as sess:
        fed = np.array([1.0, 2.0], np.float32)
        sess.run(q.enqueue(x), {x: fed})
        fed[0] = 99.0
        np.testing.assert_array_equal(sess.run(q.dequeue()), [1.0, 2.0])


def test_every_element_is_dequeued_exactly_once_under_many_threads():
    q = tf.FIFOQueue(50, tf.int32, shapes=[[]])
    value = tf.placeholder(tf.int32, [])
    enqueue, dequeue, close = q.enqueue(value), q.dequeue(), q.close()
    seen: list = []
    with tf.Session() as sess:
        def produce(k):
            for i in range(500):
                sess.run(enqueue, {value: k * 500 + i})

        def consume():
            mine = []
            try:
                while True:
                    mine.append(int(sess.run(dequeue)))
            except tf.errors.OutOfRangeError:
                seen.extend(mine)
            return mine

        consumers = [started(consume) for _ in range(4)]
        producers = [started(produce, k) for k in range(4)]
        for p in producers:
            assert p.finish(20).error is None
        sess.run(close)
        results = [c.finish(20) for c in consumers]
    assert all(c.error is None for c in results)
    assert sorted(seen) == list(range(2000))
    for c in results:  # each consumer sees each producer's elements in the order they were enqueued
        for k in range(4):
            from_k = [v for v in c.result if v // 500 == k]
            assert from_k == sorted(from_k)


def test_enqueue_many_larger_than_capacity_moves_in_parts_with_a_concurrent_dequeue():
    q = tf.FIFOQueue(5, tf.int32, shapes=[[]])
    enqueue = q.enqueue_many((list(range(12)),))
    batch = q.dequeue_many(12)  # more than the capacity: collected as elements arrive
    with tf.Session() as sess:
        taker = started(sess.run, batch)
        sess.run(enqueue)
        np.testing.assert_array_equal(taker.finish().result, list(range(12)))


def test_random_shuffle_queue_with_a_seed_gives_a_reproducible_permutation():
    def order():
        with tf.Graph().as_default():
            q = tf.RandomShuffleQueue(50, 0, tf.int32, shapes=[[]], seed=7)
            enqueue, batch = q.enqueue_many((list(range(40)),)), q.dequeue_many(40)
            with tf.Session() as sess:
                sess.run(enqueue)
                return list(sess.run(batch))
    first, second = order(), order()
    assert sorted(first) == list(range(40)) and first != list(range(40))
    assert first == second


def test_min_after_dequeue_holds_elements_back_until_the_queue_closes():
    q = tf.RandomShuffleQueue(10, 2, tf.int32, shapes=[[]], seed=1)
    dequeue = q.dequeue()
    options = tf.RunOptions(timeout_in_ms=100)
    with tf.Session() as sess:
        sess.run(q.enqueue_many(([1, 2, 3],)))
        got = [sess.run(dequeue)]
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(dequeue, options=options)  # 2 left = min_after_dequeue
        assert sess.run(q.size()) == 2
        sess.run(q.close())
        got += [sess.run(dequeue), sess.run(dequeue)]
        assert sorted(got) == [1, 2, 3]
        with pytest.raises(tf.errors.OutOfRangeError, match="RandomShuffleQueue '.*' is closed"):
            sess.run(dequeue)


def test_random_shuffle_queue_checks_min_after_dequeue_against_capacity():
    q = tf.RandomShuffleQueue(5, 5, tf.int32)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="must be < capacity 5"):
        sess.run(q.size())


def test_padding_fifo_queue_pads_unknown_dims_with_zeros():
    q = tf.PaddingFIFOQueue(10, (tf.int32, tf.string), shapes=([None], [2, None]))
    a, s = tf.placeholder(tf.int32, [None]), tf.placeholder(tf.string)  # any shape: the kernel checks it
    enqueue = q.enqueue((a, s))
    batch = q.dequeue_many(2)
    empty = q.dequeue_many(0)
    assert batch[0].shape.as_list() == [2, None] and batch[1].shape.as_list() == [2, 2, None]
    with tf.Session() as sess:
        sess.run(enqueue, {a: [1], s: [[b"x"], [b"y"]]})
        sess.run(enqueue, {a: [1, 2, 3], s: [[b"p", b"q"], [b"r", b"s"]]})
        ints, strings = sess.run(batch)
        np.testing.assert_array_equal(ints, [[1, 0, 0], [1, 2, 3]])
        assert strings.tolist() == [[[b"x", b""], [b"y", b""]], [[b"p", b"q"], [b"r", b"s"]]]
        zero_ints, zero_strings = sess.run(empty)
        assert zero_ints.shape == (0, 0) and zero_strings.shape == (0, 2, 0)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected \[2,\?\], got \[3,1\]"):
            sess.run(enqueue, {a: [1], s: [[b"x"], [b"y"], [b"z"]]})


def test_priority_queue_dequeues_smallest_priority_first_ties_in_order():
    q = tf.PriorityQueue(10, (tf.string,), shapes=((),))
    enqueue = q.enqueue_many(([3, 1, 2, 1], [b"c", b"a1", b"b", b"a2"]))
    one = q.dequeue()
    batch = q.dequeue_many(3)
    assert q.dtypes == [tf.int64, tf.string] and one[0].dtype == tf.int64
    with tf.Session() as sess:
        sess.run(enqueue)
        priority, value = sess.run(one)
        assert (priority, value) == (1, b"a1")
        priorities, values = sess.run(batch)
        assert priorities.tolist() == [1, 2, 3] and values.tolist() == [b"a2", b"b", b"c"]
    unshaped = tf.PriorityQueue(10, (tf.string,))
    priority = tf.placeholder(tf.int64)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="priority element to be a scalar"):
        sess.run(unshaped.enqueue((priority, "x")), {priority: [1, 2]})


# --- closing --------------------------------------------------------------------------------------------------------
def test_closed_queue_drains_then_out_of_range_and_rejects_enqueues():
    q = tf.FIFOQueue(10, tf.float32, shapes=[[]])
    enqueue = q.enqueue_many(([1.0, 2.0, 3.0],))
    many, up_to, one = q.dequeue_many(4), q.dequeue_up_to(2), q.dequeue()
    with tf.Session() as sess:
        sess.run(enqueue)
        sess.run(q.close())
        assert sess.run(q.is_closed())
        with pytest.raises(tf.errors.OutOfRangeError, match=r"insufficient elements \(requested 4, current size 3\)"):
            sess.run(many)
        assert sess.run(q.size()) == 3  # a failed dequeue_many takes nothing
        np.testing.assert_array_equal(sess.run(up_to), [1.0, 2.0])
        np.testing.assert_array_equal(sess.run(up_to), [3.0])  # fewer than asked: what is left
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(up_to)
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(one)
        with pytest.raises(tf.errors.CancelledError, match="is closed"):
            sess.run(enqueue)
        with pytest.raises(tf.errors.CancelledError, match="already closed"):
            sess.run(q.close())
        sess.run(q.close(cancel_pending_enqueues=True))  # no error, as in TF


def test_close_wakes_a_blocked_dequeue_with_out_of_range():
    q = tf.FIFOQueue(10, tf.float32)
    dequeue = q.dequeue()
    with tf.Session() as sess:
        waiter = started(sess.run, dequeue)
        settle()
        sess.run(q.close())
        assert isinstance(waiter.finish().error, tf.errors.OutOfRangeError)


def test_cancel_pending_enqueues_cancels_a_blocked_enqueue():
    q = tf.FIFOQueue(2, tf.float32)
    blocked = q.enqueue_many(([3.0, 4.0],))
    with tf.Session() as sess:
        sess.run(q.enqueue_many(([1.0, 2.0],)))
        waiter = started(sess.run, blocked)
        settle()
        sess.run(q.close(cancel_pending_enqueues=True))
        error = waiter.finish().error
        assert isinstance(error, tf.errors.CancelledError) and "Enqueue operation was cancelled" in str(error)
        assert [sess.run(q.dequeue()) for _ in range(2)] == [1.0, 2.0]


def test_plain_close_waits_behind_a_blocked_enqueue():
    q = tf.FIFOQueue(2, tf.float32)
    with tf.Session() as sess:
        sess.run(q.enqueue_many(([1.0, 2.0],)))
        enqueuer = started(sess.run, q.enqueue(3.0))
        settle()
        closer = started(sess.run, q.close())
        settle()
        assert closer.is_alive() and not sess.run(q.is_closed())
        dequeue = q.dequeue()
        assert sess.run(dequeue) == 1.0
        assert enqueuer.finish().error is None and closer.finish().error is None
        assert [sess.run(dequeue), sess.run(dequeue)] == [2.0, 3.0]


# --- waits: deadlines, cancellation, nothing lost -------------------------------------------------------------------
def test_run_timeout_on_dequeue_many_raises_deadline_exceeded_and_keeps_the_elements():
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    batch = q.dequeue_many(3)
    with tf.Session() as sess:
        sess.run(q.enqueue_many(([1, 2],)))
        start = time.perf_counter()
        with pytest.raises(tf.errors.DeadlineExceededError, match="150 ms deadline.*QueueDequeueManyV2"):
            sess.run(batch, options=tf.RunOptions(timeout_in_ms=150))
        assert 0.14 < time.perf_counter() - start < 1.0
        assert sess.run(q.size()) == 2
        sess.run(q.enqueue(3))
        np.testing.assert_array_equal(sess.run(batch), [1, 2, 3])


def test_operation_timeout_applies_to_a_blocked_enqueue():
    q = tf.FIFOQueue(1, tf.float32)
    enqueue = q.enqueue(1.0)
    with tf.Session(config=tf.ConfigProto(operation_timeout_in_ms=100)) as sess:
        sess.run(enqueue)
        start = time.perf_counter()
        with pytest.raises(tf.errors.DeadlineExceededError, match="operation_timeout_in_ms"):
            sess.run(enqueue)
        assert 0.09 < time.perf_counter() - start < 1.0
        assert sess.run(q.size()) == 1 and sess.run(q.dequeue()) == 1.0


def test_timed_out_dequeue_in_a_parallel_run_loses_nothing():
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    batch = q.dequeue_many(3)
    other = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    config = tf.ConfigProto(inter_op_parallelism_threads=3)
    with tf.Session(config=config) as sess:
        sess.run([q.enqueue_many(([1, 2],)), other.enqueue_many(([5],))])
        fetches = [batch, other.dequeue_many(2)]
        assert sess.plan_for(fetches).mode == "parallel"
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(fetches, options=tf.RunOptions(timeout_in_ms=100))
        assert sess.run([q.size(), other.size()]) == [2, 1]


def test_enqueue_and_dequeue_waiting_on_each_other_in_one_run():
    q = tf.FIFOQueue(1, tf.int32, shapes=[[]])
    batch = q.dequeue_many(3)
    enqueue = q.enqueue_many(([4, 5, 6],))  # larger than the capacity: needs the dequeue to run meanwhile
    with tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=2)) as sess:
        assert sess.plan_for([batch, enqueue]).mode == "parallel"
        np.testing.assert_array_equal(sess.run([batch, enqueue])[0], [4, 5, 6])


def test_session_close_cancels_blocked_queue_ops_of_its_runs():
    empty = tf.FIFOQueue(5, tf.float32, shapes=[[]])
    full = tf.FIFOQueue(1, tf.float32)
    sess = tf.Session()
    sess.run(full.enqueue(1.0))
    waiters = [started(sess.run, op) for op in (empty.dequeue(), empty.dequeue_many(2), full.enqueue(2.0))]
    settle()
    start = time.perf_counter()
    sess.close()
    for waiter in waiters:
        error = waiter.finish().error
        assert isinstance(error, tf.errors.CancelledError) and "was cancelled" in str(error)
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("threads", [1, 3])
def test_ctrl_c_stops_a_blocked_dequeue_and_loses_nothing(threads):
    q = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    other = tf.FIFOQueue(10, tf.int32, shapes=[[]])
    fetches = [q.dequeue_many(2), other.dequeue_many(1)] if threads > 1 else q.dequeue_many(2)
    with tf.Session(config=tf.ConfigProto(inter_op_parallelism_threads=threads)) as sess:
        sess.run(q.enqueue(1))
        with pytest.raises(KeyboardInterrupt), pressing_ctrl_c(0.1) as presses:
            start = time.monotonic()
            sess.run(fetches)
        assert presses.stopped_at - start < 1.0
        assert sess.run(q.size()) == 1
        sess.run([q.enqueue(2), other.enqueue(3)])
        np.testing.assert_array_equal(sess.run(q.dequeue_many(2)), [1, 2])


# --- sharing --------------------------------------------------------------------------------------------------------
def test_shared_name_shares_a_queue_between_sessions_and_without_it_nothing_is_shared():
    shared = tf.FIFOQueue(5, tf.float32, shared_name="test_queues_shared")
    own = tf.FIFOQueue(5, tf.float32)
    with tf.Session() as a, tf.Session() as b:
        a.run([shared.enqueue(1.0), own.enqueue(1.0)])
        assert b.run([shared.size(), own.size()]) == [1, 0]
        assert b.run(shared.dequeue()) == 1.0
        assert a.run([shared.size(), own.size()]) == [0, 1]
        again = tf.FIFOQueue(5, tf.float32, shared_name="test_queues_shared")  # another op, the same queue
        b.run(again.enqueue(2.0))
        assert a.run(shared.dequeue()) == 2.0


def test_a_shared_queue_goes_when_its_last_session_closes():
    q = tf.FIFOQueue(5, tf.float32, shared_name="test_queues_dropped")
    with tf.Session() as sess:
        sess.run(q.enqueue(1.0))
    with tf.Session() as sess:
        assert sess.run(q.size()) == 0


@pytest.mark.parametrize("second, message", [
    (lambda: tf.FIFOQueue(15, tf.float32, shared_name="q"), "has capacity 10 but requested capacity was 15"),
    (lambda: tf.FIFOQueue(10, tf.int32, shared_name="q"), "component types"),
    (lambda: tf.FIFOQueue(10, tf.float32, shapes=[[1, 2]], shared_name="q"), "component shapes"),
    (lambda: tf.FIFOQueue(10, (tf.float32, tf.int32), shared_name="q"), "component types"),
    (lambda: tf.RandomShuffleQueue(10, 0, tf.float32, shared_name="q"), "is a FIFOQueue"),
])
def test_a_shared_queue_made_again_with_other_attrs_is_an_error(second, message):
    first = tf.FIFOQueue(10, tf.float32, shared_name="q")
    other = second()
    with tf.Session() as sess:
        sess.run(first.queue_ref.op)
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(other.queue_ref.op)
        sess.run(first.enqueue(1.0))  # the queue is as it was
        assert sess.run(first.size()) == 1


# --- bad input ------------------------------------------------------------------------------------------------------
def test_wrong_dtype_or_static_shape_fails_when_building():
    q = tf.FIFOQueue(10, (tf.int32, tf.float32), shapes=((), (2,)))
    with pytest.raises(ValueError):
        q.enqueue((tf.placeholder(tf.float32), [1.0, 2.0]))
    with pytest.raises(ValueError):
        q.enqueue((1, [1.0, 2.0, 3.0]))
    with pytest.raises(ValueError):
        q.enqueue_many(([1, 2, 3], [[1.0, 2.0], [3.0, 4.0]]))


def test_wrong_shape_at_run_time_names_the_op_and_the_queue_keeps_working():
    q = tf.FIFOQueue(10, (tf.int32, tf.int32), shapes=((2, 2), (3, 3)))
    bad = tf.placeholder(tf.int32)
    enqueue = q.enqueue((np.ones((2, 2), np.int32), bad), name="feed_it")
    many = q.enqueue_many((np.ones((2, 2, 2), np.int32), bad))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"(?s)Expected \[3,3\], got \[3,4\].*feed_it"):
            sess.run(enqueue, {bad: np.ones((3, 4))})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Shape mismatch in tuple component 1. Expected \[2,3,3\], got \[2,3,4\]"):
            sess.run(many, {bad: np.ones((2, 3, 4))})
        assert sess.run(q.size()) == 0
        sess.run(enqueue, {bad: np.full((3, 3), 7)})
        assert sess.run(q.dequeue())[1][0, 0] == 7


def test_dequeue_many_needs_shapes():
    q = tf.FIFOQueue(10, tf.float32)
    with tf.Session() as sess:
        sess.run(q.enqueue(1.0))
        with pytest.raises(tf.errors.InvalidArgumentError, match="require the components to have specified shapes"):
            sess.run(q.dequeue_many(1))
        assert sess.run(q.size()) == 1


# --- placement ------------------------------------------------------------------------------------------------------
def test_queue_ops_are_placed_on_the_cpu_and_take_gpu_values(gpus):
    with tf.device("/gpu:0"):
        x = tf.constant([1.0, 2.0]) * 3.0
    q = tf.FIFOQueue(4, tf.float32, shapes=[[2]])
    enqueue, dequeue = q.enqueue(x), q.dequeue()
    with tf.Session() as sess:
        assert sess.placement(x).endswith("GPU:0")
        for op in (q.queue_ref.op, enqueue, dequeue.op):
            assert sess.placement(op) == CPU0
        sess.run(enqueue)
        np.testing.assert_array_equal(sess.run(dequeue), [3.0, 6.0])


def test_a_queue_asked_for_on_a_gpu_needs_soft_placement(gpus):
    with tf.device("/gpu:0"):
        q = tf.FIFOQueue(4, tf.float32)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError):
        sess.run(q.size())
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        assert sess.run(q.size()) == 0 and sess.placement(q.queue_ref) == CPU0


# --- GraphDefs ------------------------------------------------------------------------------------------------------
def _queue_graph():
    q = tf.PaddingFIFOQueue(4, (tf.float32, tf.int32), shapes=([None], []), name="pad_q")
    q.enqueue_many(([[1.0, 2.0], [3.0, 0.0]], [5, 6]), name="fill")
    q.dequeue_many(2, name="take")
    q.close(cancel_pending_enqueues=True, name="shut")
    q.size(name="count")
    return tf.get_default_graph().as_graph_def()


def test_graph_def_round_trip_runs_the_imported_queue():
    graph_def = _queue_graph()
    with tf.Graph().as_default() as g:
        tf.import_graph_def(graph_def, name="")
        assert g.get_operation_by_name("take").type == "QueueDequeueManyV2"
        assert g.get_operation_by_name("shut").get_attr("cancel_pending_enqueues") is True
        with tf.Session(graph=g) as sess:
            sess.run("fill")
            values, labels = sess.run(["take:0", "take:1"])
            np.testing.assert_array_equal(values, [[1.0, 2.0], [3.0, 0.0]])
            np.testing.assert_array_equal(labels, [5, 6])
            sess.run("shut")
            assert sess.run("count:0") == 0


@needs_tf
def test_tensorflow_runs_adplace_queue_graph_def(tmp_path):
    (tmp_path / "graph.pb").write_bytes(_queue_graph().SerializeToString())
    out = json.loads(run_peer(PEER, tmp_path / "graph.pb"))
    assert out == {"values": [[1.0, 2.0], [3.0, 0.0]], "labels": [5, 6], "size": 0}


def test_from_list_builds_tf_selection_graph():
    a = tf.FIFOQueue(10, tf.float32, shapes=[[2]])
    b = tf.FIFOQueue(15, tf.float32, shapes=[[3]])
    chosen = tf.FIFOQueue.from_list(tf.constant(1), [a, b])
    assert chosen.queue_ref.op.type == "GatherV2" and chosen.shapes[0].as_list() == [None]
    with pytest.raises(TypeError, match="matching component dtypes"):
        tf.QueueBase.from_list(0, [a, tf.FIFOQueue(10, tf.int32)])
