"""Constant folding's node simplifications (adplace/runtime/simplification.py): steps that compute nothing alias their
input, reshapes to folded shapes reshape in one call; values, dtypes and errors as without folding."""
import operator

import numpy as np
import pytest

import adplace as tf
from adplace.kernels.registration import forward
from adplace.runtime.feeds import borrowable_feeds
from folding_support import unfolded_config


def _step(plan, op):
    (step,) = [s for s in plan.steps if s.op is op]
    return step


def _check(out, feed: dict, inner, kind: str):
    """Fetch `out` (reading `inner`) with and without folding: the same values and dtype, and `inner`'s step an alias
    (kind "alias") or a bare reshape ("reshape") reading only its data input."""
    sess, plain = tf.Session(), tf.Session(config=unfolded_config())
    got, want = sess.run(out, feed), plain.run(out, feed)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == want.dtype and np.shape(got) == np.shape(want)
    plan = sess.plan_for(out, feed)
    assert inner.op in plan.simplified_ops and not plain.plan_for(out, feed).simplified_ops
    step = _step(plan, inner.op)
    assert len(step.in_slots) == 1
    if kind == "alias":
        assert step.kernel is forward
    else:
        assert isinstance(step.kernel, operator.methodcaller)


X = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5


@pytest.mark.parametrize("reduce", [tf.reduce_sum, tf.reduce_mean, tf.reduce_prod, tf.reduce_max, tf.reduce_min])
def test_a_reduction_over_no_axes_is_its_input(reduce):
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    inner = reduce(x, axis=[])
    _check(inner * 2.0, {x: X}, inner, "alias")


@pytest.mark.parametrize("reduce", [tf.reduce_any, tf.reduce_all])
def test_a_boolean_reduction_over_no_axes_is_its_input(reduce):
    x = tf.placeholder(tf.bool, [2, 3], name="x")
    inner = reduce(x, axis=[])
    _check(tf.logical_not(inner), {x: X > 0}, inner, "alias")


def test_a_kept_reduction_over_axes_of_size_one_is_its_input():
    x = tf.placeholder(tf.int32, [2, 1, 3], name="x")
    inner = tf.reduce_mean(x, axis=[-2], keepdims=True)
    _check(inner + 1, {x: np.arange(6, dtype=np.int32).reshape(2, 1, 3)}, inner, "alias")
    dropped = tf.reduce_sum(x, axis=[1])  # without keep_dims the rank changes: a real reduction
    sess = tf.Session()
    assert dropped.op not in sess.plan_for(dropped + 1, {x: np.zeros((2, 1, 3), np.int32)}).simplified_ops


def test_identity_reshapes_tiles_transposes_and_broadcasts_are_their_input():
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    for inner in (tf.reshape(x, [2, 3]), tf.reshape(x, [-1, 3]), tf.tile(x, [1, 1]), tf.transpose(x, [0, 1]),
                  tf.broadcast_to(x, [2, 3])):
        _check(inner - 1.0, {x: X}, inner, "alias")


def test_reshapes_to_folded_shapes_are_one_call():
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    column = tf.placeholder(tf.float32, [2, 1, 3], name="column")
    cases = [(tf.reshape(x, [-1]), {x: X}), (tf.reshape(x, [3, 2]), {x: X}), (tf.expand_dims(x, -1), {x: X}),
             (tf.squeeze(column), {column: X.reshape(2, 1, 3)}), (tf.squeeze(column, [1]), {column: X.reshape(2, 1, 3)})]
    for inner, feed in cases:
        _check(inner * 3.0, feed, inner, "reshape")


def test_what_would_fail_or_compute_keeps_its_kernel_and_its_error():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    wrong = tf.reshape(x, [4, 2], name="wrong")  # 6 values into 8: only known to fail once x is fed
    moved = tf.transpose(tf.reshape(x, [2, 3]), [1, 0])
    sess, plain = tf.Session(), tf.Session(config=unfolded_config())
    feed = {x: X}
    for _ in range(3):  # the general plan, then the plan specialized to x's shape
        with pytest.raises(tf.errors.InvalidArgumentError) as got:
            sess.run(wrong * 1.0, feed)
        with pytest.raises(tf.errors.InvalidArgumentError) as want:
            plain.run(wrong * 1.0, feed)
        assert got.value.op is wrong.op and got.value.message == want.value.message
    np.testing.assert_array_equal(sess.run(moved + 0.0, feed), X.T)
    assert moved.op not in sess.plan_for(moved + 0.0, feed).simplified_ops


def test_a_fetched_op_is_computed_by_its_own_kernel():
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    summed = tf.reduce_sum(x, axis=[])
    sess = tf.Session()
    value = sess.run(summed, {x: X})
    np.testing.assert_array_equal(value, X)
    assert not np.shares_memory(value, X) and summed.op not in sess.plan_for(summed, {x: X}).simplified_ops


def test_a_fed_array_passed_on_to_a_queue_is_not_borrowed():
    x = tf.placeholder(tf.float32, [2, 3], name="x")
    queue = tf.FIFOQueue(2, tf.float32, shapes=[[2, 3]])
    summed = tf.reduce_sum(x, axis=[])
    enqueue = queue.enqueue([summed])
    sess = tf.Session()
    fed = X.copy()
    sess.run(enqueue, {x: fed})
    plan = sess.plan_for(enqueue, {x: fed})
    assert summed.op in plan.simplified_ops
    assert borrowable_feeds(plan) == [False]  # the alias carries the fed array to a stateful op, as a view would
    fed += 100.0  # the caller's array changes after the run: the queue keeps what was fed
    np.testing.assert_array_equal(sess.run(queue.dequeue()), X)


def test_a_variable_passed_on_by_an_alias_is_never_written_through_it():
    v = tf.Variable(np.ones((64, 64), np.float32), name="v")
    negated = tf.negative(tf.reduce_sum(v, axis=[]))  # the negation may compute into its input's buffer
    sess = tf.Session()
    sess.run(v.initializer)
    for _ in range(3):
        np.testing.assert_array_equal(sess.run(negated), -np.ones((64, 64), np.float32))
    np.testing.assert_array_equal(sess.run(v), np.ones((64, 64), np.float32))
