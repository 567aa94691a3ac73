"""Tests for adplace.compat (tf.compat) and adplace.framework.random_seed (TF's seed rules), and tf.random_shuffle."""

import pathlib

import numpy as np
import pytest

import adplace as tf
from adplace.framework import default_graph, random_seed


# --- compat ---------------------------------------------------------------------------------------------------------
def test_as_bytes_and_as_text():
    assert tf.compat.as_bytes("héllo") == "héllo".encode()
    assert tf.compat.as_bytes(bytearray(b"ab")) == b"ab"
    assert tf.compat.as_bytes("x", encoding="latin-1") == b"x"
    assert tf.compat.as_text(b"abc") == "abc" and tf.compat.as_str("abc") == "abc"
    for fn in (tf.compat.as_bytes, tf.compat.as_text, tf.compat.as_str):
        with pytest.raises(TypeError, match="Expected binary or unicode string, got 1"):
            fn(1)


def test_as_str_any_path_to_str_and_type_tuples():
    assert tf.compat.as_str_any(b"x") == "x" and tf.compat.as_str_any(3) == "3"
    assert tf.compat.path_to_str(pathlib.Path("a") / "b") == str(pathlib.Path("a/b"))
    assert tf.compat.path_to_str(7) == 7
    assert isinstance(np.int32(1), tf.compat.integral_types) and not isinstance(1.5, tf.compat.integral_types)
    assert isinstance(np.float32(1), tf.compat.real_types) and isinstance(1j, tf.compat.complex_types)
    assert isinstance("s", tf.compat.bytes_or_text_types) and isinstance(b"s", tf.compat.bytes_or_text_types)


def test_compat_v1_is_adplace_itself():
    import adplace.compat.v1 as v1
    assert v1 is tf and tf.compat.v1 is tf
    assert tf.compat.v1.placeholder is tf.placeholder
    assert tf.compat.v1.disable_eager_execution() is None and tf.compat.v1.disable_v2_behavior() is None
    assert tf.executing_eagerly() is False


# --- seeds ----------------------------------------------------------------------------------------------------------
def test_get_seed_rules():
    with tf.Graph().as_default() as g:
        assert tf.get_seed(None) == (None, None)
        assert tf.get_seed(5) == (random_seed.DEFAULT_GRAPH_SEED, 5) == (87654321, 5)
        tf.set_random_seed(3)
        assert g.seed == 3
        tf.constant(1.0)
        tf.constant(2.0)
        assert tf.get_seed(None) == (3, 2)  # the op seed is the graph's op count so far
        assert tf.get_seed(2**31 + 1) == (3, 2)  # truncated to 31 bits
    with tf.Graph().as_default():
        tf.set_random_seed(0)
        assert tf.get_seed(None) == (0, 2**31 - 1)  # (0, 0) would mean nondeterministic
        assert tf.get_seed(0) == (0, 2**31 - 1)


def test_default_graph_module_re_exports_the_seed_functions():
    assert default_graph.get_seed is random_seed.get_seed
    assert default_graph.set_random_seed is random_seed.set_random_seed is tf.set_random_seed
    assert tf.random.set_random_seed is tf.set_random_seed and tf.random.get_seed is tf.get_seed


def test_random_ops_take_their_seeds_from_get_seed():
    def build():
        with tf.Graph().as_default() as g:
            tf.set_random_seed(7)
            a = tf.random_uniform([3])
            b = tf.random_normal([2], seed=11)
        return g, a, b
    g, a, b = build()
    ops = {op.type: op for op in g.get_operations()}
    assert ops["RandomStandardNormal"].get_attr("seed") == 7
    assert ops["RandomStandardNormal"].get_attr("seed2") == 11
    values = []
    for _ in range(2):
        g, a, b = build()
        with tf.Session(graph=g) as sess:
            values.append(sess.run([a, b]))
    np.testing.assert_array_equal(values[0][0], values[1][0])
    np.testing.assert_array_equal(values[0][1], values[1][1])


def test_random_shuffle_permutes_the_first_dimension_reproducibly():
    x = np.arange(20).reshape(10, 2)
    s = tf.random_shuffle(x, seed=1)
    assert s.op.type == "RandomShuffle" and s.shape.as_list() == [10, 2]
    with tf.Session() as sess:
        first, second = sess.run(s), sess.run(s)
    assert sorted(first[:, 0].tolist()) == list(range(0, 20, 2))
    np.testing.assert_array_equal(first[:, 1] - first[:, 0], np.ones(10))
    assert not np.array_equal(first, second) or not np.array_equal(first, x)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(s), first)
    assert tf.random.shuffle is tf.random_shuffle


def test_multinomial_and_categorical():
    logits = np.array([[np.log(0.2), np.log(0.8), -np.inf], [0.0, -np.inf, -np.inf]])
    m = tf.multinomial(logits, 4000, seed=5)
    assert m.op.type == "Multinomial" and m.op.name == "multinomial/Multinomial"
    assert m.dtype == tf.int64 and m.shape.as_list() == [2, 4000]
    values = run_once(m)
    np.testing.assert_allclose(np.bincount(values[0], minlength=3) / 4000, [0.2, 0.8, 0.0], atol=0.03)
    np.testing.assert_array_equal(values[1], np.zeros(4000))
    c = tf.random.categorical(tf.placeholder(tf.float32, [None, 2]), 3, dtype=tf.int32)
    assert c.op.name == "categorical/Multinomial" and c.dtype == tf.int32 and c.shape.as_list() == [None, 3]
    assert tf.random.multinomial is tf.multinomial
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1 for 'multinomial\\w*/Multinomial'"):
        tf.multinomial([0.0, 1.0], 2)
    assert tf.gradients(tf.cast(m, tf.float32), m.op.inputs[0]) == [None]


def run_once(fetch):
    with tf.Session() as sess:
        return sess.run(fetch)
