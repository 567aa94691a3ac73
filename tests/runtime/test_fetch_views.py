"""Fetched results of ops whose kernels hand back a view of their input (Slice, ReverseV2, a cond's Switch/Merge)
are the caller's own arrays: writing into one never changes a variable's stored value."""
import numpy as np
import pytest

import adplace as tf


def _views(v):
    return {
        "slice": lambda: tf.slice(v, [0], [3]),
        "reverse_no_axes": lambda: tf.reverse(v, axis=[]),
        "cond_merge": lambda: tf.cond(tf.constant(True), lambda: tf.identity(v), lambda: v + 1.0),
    }


@pytest.mark.parametrize("kind", ["slice", "reverse_no_axes", "cond_merge"])
def test_writing_into_a_fetched_view_leaves_the_variable_alone(kind):
    with tf.Graph().as_default():
        v = tf.Variable(np.arange(4, dtype=np.float32))
        fetched = _views(v)[kind]()
        with tf.Session() as sess:
            sess.run(v.initializer)
            out = sess.run(fetched)
            out[...] = -7.0
            np.testing.assert_array_equal(sess.run(v), np.arange(4, dtype=np.float32))
            assert not np.shares_memory(sess.run(fetched), sess.run(fetched))


def test_switch_outputs_fetched_are_copies():
    from adplace.ops import control_flow_contexts
    with tf.Graph().as_default():
        v = tf.Variable(np.ones(3, np.float32))
        _, on_true = control_flow_contexts.switch(v.value(), tf.constant(True))
        with tf.Session() as sess:
            sess.run(v.initializer)
            out = sess.run(on_true)
            out[...] = 5.0
            np.testing.assert_array_equal(sess.run(v), np.ones(3, np.float32))
