"""Tests for adplace.ops.clip_ops: values against NumPy, TF1's op names, None entries, NaN for an infinite norm,
TF's errors, and gradients."""

import numpy as np
import pytest

import adplace as tf


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def test_clip_by_value_is_minimum_then_maximum():
    c = tf.clip_by_value([-2.0, 0.5, 3.0], -1.0, 1.0)
    assert c.op.type == "Maximum" and c.op.name == "clip_by_value"
    assert c.op.inputs[0].op.type == "Minimum"
    np.testing.assert_allclose(run(c), [-1.0, 0.5, 1.0])


def test_clip_by_value_tensor_bounds_and_broadcast_guard():
    lo = tf.constant([0.0, -5.0])
    np.testing.assert_allclose(run(tf.clip_by_value([[-1.0, -1.0], [9.0, 9.0]], lo, 2.0)), [[0, -1], [2, 2]])
    with pytest.raises(ValueError, match=r"Shapes \(2,\) and \(2, 2\) are not compatible"):
        tf.clip_by_value([1.0, 2.0], [[0.0], [1.0]], 3.0)


def test_clip_by_value_gradient_flows_inside_the_range_only():
    x = tf.placeholder(tf.float64, [4])
    g = tf.gradients(tf.reduce_sum(tf.clip_by_value(x, -1.0, 1.0)), x)[0]
    np.testing.assert_allclose(run(g, {x: [-2.0, -0.5, 0.5, 2.0]}), [0, 1, 1, 0])


def test_clip_by_norm_whole_tensor_and_axes():
    t = np.array([[3.0, 4.0], [0.3, 0.4]])
    c = tf.clip_by_norm(t, 1.0)
    assert c.op.name == "clip_by_norm"
    np.testing.assert_allclose(run(c), t / np.linalg.norm(t))
    rows = tf.clip_by_norm(t, 1.0, axes=[1])
    np.testing.assert_allclose(run(rows), [[0.6, 0.8], [0.3, 0.4]])
    np.testing.assert_allclose(run(tf.clip_by_norm(tf.zeros([2]), 1.0)), [0.0, 0.0])
    x = tf.placeholder(tf.float64, [2])
    g = tf.gradients(tf.reduce_sum(tf.clip_by_norm(x, 1.0)), x)[0]
    assert not np.isnan(run(g, {x: [0.0, 0.0]})).any()


def test_clip_by_norm_gradient():
    x = tf.placeholder(tf.float64, [2, 3])
    y = tf.clip_by_norm(x, 0.5, axes=[1])
    x0 = np.random.default_rng(2).normal(size=(2, 3))
    with tf.Session():
        assert tf.test.compute_gradient_error(x, [2, 3], y, [2, 3], x_init_value=x0) < 1e-6


def test_global_norm_ignores_none_and_names_like_tf():
    n = tf.global_norm([tf.constant([3.0, 4.0]), None, tf.constant([[12.0]])])
    assert n.op.name == "global_norm/global_norm"
    np.testing.assert_allclose(run(n), 13.0)


def test_clip_by_global_norm_scales_all_and_keeps_none():
    a, b = np.array([3.0, 4.0], np.float32), np.array([[0.0, 12.0]], np.float32)
    clipped, norm = tf.clip_by_global_norm([a, None, b], 6.5)
    assert clipped[1] is None and len(clipped) == 3
    assert clipped[0].op.name == "clip_by_global_norm/clip_by_global_norm/_0"
    values = run([clipped[0], clipped[2], norm])
    np.testing.assert_allclose(values[0], a / 2)
    np.testing.assert_allclose(values[1], b / 2)
    np.testing.assert_allclose(values[2], 13.0)
    unclipped, _ = tf.clip_by_global_norm((a,), 100.0)
    np.testing.assert_allclose(run(unclipped[0]), a)


def test_clip_by_global_norm_use_norm_and_infinite_norm():
    clipped, norm = tf.clip_by_global_norm([tf.constant([1.0, 1.0])], 1.0, use_norm=tf.constant(4.0))
    assert run(norm) == 4.0
    np.testing.assert_allclose(run(clipped[0]), [0.25, 0.25])
    for bad in (np.inf, np.nan):
        clipped, norm = tf.clip_by_global_norm([tf.constant([bad, 1.0])], 1.0)
        assert np.isnan(run(clipped[0])).all()


def test_clip_by_global_norm_rejects_a_non_sequence():
    with pytest.raises(TypeError, match="t_list should be a sequence"):
        tf.clip_by_global_norm(tf.constant([1.0]), 1.0)
    with pytest.raises(TypeError, match="t_list should be a sequence"):
        tf.global_norm("abc")


def test_clip_by_global_norm_gradient_of_a_training_loss():
    w = tf.Variable([3.0, 4.0])
    loss = tf.reduce_sum(w * w)
    grads, norm = tf.clip_by_global_norm(tf.gradients(loss, [w]), 1.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        g, n = sess.run([grads[0], norm])
    np.testing.assert_allclose(n, 10.0)
    np.testing.assert_allclose(g, [0.6, 0.8], rtol=1e-6)


def test_clip_by_average_norm():
    t = np.array([3.0, 4.0])
    c = tf.clip_by_average_norm(t, 1.0)
    assert c.op.name == "clip_by_average_norm"
    np.testing.assert_allclose(run(c), t * 2 / 5)  # average norm 5 / 2 > 1: scaled to 1
    np.testing.assert_allclose(run(tf.clip_by_average_norm(t, 10.0)), t)
