"""Tests for adplace.ops.logging_ops (tf.Print): identity values, TF1's stderr text, first_n, and the gradient."""

import numpy as np
import pytest

import adplace as tf


def test_print_is_an_identity_that_writes_message_and_values_to_stderr(capsys):
    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    y = tf.Print(x, [x, tf.constant([[1, 2], [3, 4]]), "text"], "values: ")
    assert y.op.type == "Print" and y.op.name == "Print" and y.shape.as_list() == [4] and y.dtype == tf.float32
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y), [1.0, 2.0, 3.0, 4.0])
        sess.run(y)
    assert capsys.readouterr().err == "values: [1 2 3...][[1 2][3...]...][text]\n" * 2


def test_print_summarize_and_first_n(capsys):
    p = tf.placeholder(tf.int32, [5])
    y = tf.Print(p, [p], first_n=2, summarize=-1, name="show")
    assert y.op.name == "show"
    with tf.Session() as sess:
        for i in range(4):
            assert sess.run(y, {p: np.arange(5) + i}).tolist() == list(range(i, i + 5))
    assert capsys.readouterr().err == "[0 1 2 3 4]\n[1 2 3 4 5]\n"


def test_print_gradient_passes_through():
    p = tf.placeholder(tf.float64, [3])
    y = tf.Print(p, [tf.shape(p)], "shape: ")
    g, = tf.gradients(tf.reduce_sum(y * y), p)
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {p: [1.0, 2.0, 3.0]}), [2.0, 4.0, 6.0])


def test_print_runs_on_the_cpu_only():
    assert tf.config.has_kernel("Print", "CPU") and not tf.config.has_kernel("Print", "GPU")
    with pytest.raises(TypeError):
        tf.Print(tf.constant(1.0), tf.constant(2.0))
