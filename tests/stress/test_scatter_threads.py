"""Many threads, one session, sparse writes: locked ScatterAdd, ScatterNdAdd and SparseApplyAdagrad count exactly, and
CountUpTo hands out every value exactly once.

A locked sparse write holds the variable's lock from its read to its store, so no update is lost whatever the
interleaving; the repeated indices also check that each occurrence of an index counts. Threads switch every
microsecond (fixture fast_switching), so a thread is often stopped between a kernel's read and its write.
"""
import numpy as np
import pytest
from stress_support import PARALLEL, run_threads

import adplace as tf
from adplace.ops import training_ops

THREADS = 8
STEPS = 600  # per thread, times ADPLACE_STRESS

pytestmark = pytest.mark.usefixtures("fast_switching")


def _repeat(sess, fetch, times: int):
    return lambda: [sess.run(fetch) for _ in range(times)]


@pytest.mark.parametrize("config", [None, PARALLEL], ids=["plain", "inter_op_threads_4"])
def test_locked_scatter_add_from_eight_threads_counts_exactly(config, stress_scale):
    k = STEPS * stress_scale
    v = tf.Variable(np.zeros([4, 2], np.int64), name="table")
    add = tf.scatter_add(v, [0, 2, 0], np.array([[1, 2], [3, 4], [5, 6]], np.int64), use_locking=True)
    sess = tf.Session(config=config)
    sess.run(v.initializer)
    run_threads(*[_repeat(sess, add, k)] * THREADS)
    n = THREADS * k
    np.testing.assert_array_equal(sess.run(v), [[6 * n, 8 * n], [0, 0], [3 * n, 4 * n], [0, 0]])


def test_locked_scatter_nd_add_from_eight_threads_counts_exactly(stress_scale):
    k = STEPS * stress_scale
    v = tf.Variable(np.zeros([3, 3]), name="grid")
    add = tf.scatter_nd_add(v, [[0, 1], [2, 2], [0, 1]], [1.0, 2.0, 0.5], use_locking=True)
    sess = tf.Session()
    sess.run(v.initializer)
    run_threads(*[_repeat(sess, add, k)] * THREADS)
    expected = np.zeros([3, 3])
    expected[0, 1], expected[2, 2] = 1.5 * THREADS * k, 2.0 * THREADS * k
    np.testing.assert_array_equal(sess.run(v), expected)


def test_locked_sparse_apply_adagrad_from_eight_threads_accumulates_every_row(stress_scale):
    """accum += grad**2 per occurrence: with grad rows of ones and twos, accum's rows grow by exact integers."""
    k = STEPS * stress_scale
    var = tf.Variable(np.zeros([3, 2]), name="var")
    accum = tf.Variable(np.ones([3, 2]), name="accum")
    train = training_ops.sparse_apply_adagrad(var, accum, 0.01, np.array([[1.0, 1.0], [2.0, 2.0], [1.0, 2.0]]),
                                              [1, 0, 1], use_locking=True)
    sess = tf.Session()
    sess.run([var.initializer, accum.initializer])
    run_threads(*[_repeat(sess, train, k)] * THREADS)
    n = THREADS * k
    np.testing.assert_array_equal(sess.run(accum), [[1 + 4 * n, 1 + 4 * n], [1 + 2 * n, 1 + 5 * n], [1, 1]])
    assert np.isfinite(sess.run(var)).all()


@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_count_up_to_from_six_threads_gives_each_value_exactly_once(dtype, stress_scale):
    limit = 1_500 * stress_scale
    counter = tf.Variable(tf.constant(0, dtype), name="counter")
    count = counter.count_up_to(limit)
    sess = tf.Session()
    sess.run(counter.initializer)
    taken: list[list[int]] = [[] for _ in range(6)]

    def take(mine: list):
        while True:
            try:
                mine.append(int(sess.run(count)))
            except tf.errors.OutOfRangeError:
                return
    run_threads(*[(lambda mine=mine: take(mine)) for mine in taken])
    values = sorted(v for mine in taken for v in mine)
    assert values == list(range(limit))
    assert all(mine == sorted(mine) for mine in taken)  # each thread sees its own values increase
    assert sess.run(counter) == limit
