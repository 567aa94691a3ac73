"""Session.run, make_callable and partial runs fetch and feed composite tensors (tf.SparseTensor, tf.IndexedSlices)
as TF does: a fetch gives the value type (SparseTensorValue, IndexedSlicesValue), alone or nested; a feed takes
the value type or a tuple in its field order."""
import collections

import numpy as np
import pytest

import adplace as tf

INDICES = np.array([[3, 2, 0], [4, 5, 1]], np.int64)
VALUES = np.array([1.0, 2.0], np.float32)
SHAPE = np.array([7, 9, 2], np.int64)


def _assert_sparse_value(value, indices=INDICES, values=VALUES, shape=SHAPE):
    assert isinstance(value, tf.SparseTensorValue)
    np.testing.assert_array_equal(value.indices, indices)
    np.testing.assert_array_equal(value.values, values)
    np.testing.assert_array_equal(value.dense_shape, shape)


def _constant_sparse():
    return tf.SparseTensor(tf.constant(INDICES), tf.constant(VALUES), tf.constant(SHAPE))


def test_fetch_sparse_tensor_alone_as_tuple_and_nested():
    with tf.Graph().as_default():
        sp = _constant_sparse()
        with tf.Session() as sess:
            _assert_sparse_value(sess.run(sp))
            indices, values, shape = sess.run(sp)
            np.testing.assert_array_equal(indices, INDICES)
            (out,) = sess.run([sp])
            _assert_sparse_value(out)
            _assert_sparse_value(sess.run({"sp": sp})["sp"])
            _assert_sparse_value(sess.run({"sp": [sp]})["sp"][0])
            _assert_sparse_value(sess.run([[[sp]]])[0][0][0])
            pair = collections.namedtuple("Pair", ["sparse", "dense"])
            out = sess.run(pair(sp, sp.values * 2.0))
            assert type(out).__name__ == "Pair"
            _assert_sparse_value(out.sparse)
            np.testing.assert_array_equal(out.dense, VALUES * 2.0)
            _assert_sparse_value(sp.eval())


def _fed_sparse():
    return tf.SparseTensor(tf.placeholder(tf.int64, shape=(2, 3)), tf.placeholder(tf.float32, shape=(2,)),
                           tf.placeholder(tf.int64, shape=(3,)))


@pytest.mark.parametrize("feed", [(INDICES, VALUES, SHAPE), tf.SparseTensorValue(INDICES, VALUES, SHAPE),
                                  [INDICES.tolist(), VALUES.tolist(), SHAPE.tolist()]])
def test_feed_sparse_tensor_from_tuple_value_or_list(feed):
    with tf.Graph().as_default():
        sp = _fed_sparse()
        sp2 = tf.SparseTensor(tf.identity(sp.indices), tf.identity(sp.values), tf.identity(sp.dense_shape))
        with tf.Session() as sess:
            indices, values, shape = sess.run([sp.indices, sp.values, sp.dense_shape], {sp: feed})
            np.testing.assert_array_equal(values, VALUES)
            _assert_sparse_value(sess.run(sp, {sp: feed}))
            _assert_sparse_value(sess.run(sp2, {sp: feed}))


def test_sparse_placeholder_names_shapes_and_feeds():
    with tf.Graph().as_default():
        sp = tf.sparse_placeholder(tf.float32, name="placeholder1")
        assert [sp.values.op.name, sp.indices.op.name, sp.dense_shape.op.name] == [
            "placeholder1/values", "placeholder1/indices", "placeholder1/shape"]
        assert sp.shape.ndims is None
        partial = tf.sparse_placeholder(tf.float32, shape=[None, 9, 2])
        assert partial.shape.as_list() == [None, 9, 2]
        assert partial.indices.shape.as_list() == [None, 3]
        known = tf.sparse_placeholder(tf.float32, shape=SHAPE.tolist(), name="known")
        assert known.shape.as_list() == [7, 9, 2]
        with tf.Session() as sess:
            for placeholder in (sp, partial, known):
                _assert_sparse_value(sess.run(placeholder, {placeholder: (INDICES, VALUES, SHAPE)}))
            np.testing.assert_array_equal(sess.run(known.dense_shape), SHAPE)
            total = tf.sparse_reduce_sum(sp)
            assert sess.run(total, {sp: tf.SparseTensorValue(INDICES, VALUES, SHAPE)}) == 3.0


def test_fetch_indexed_slices_with_and_without_dense_shape():
    values = np.array([[1.0, 2.0]], np.float32)
    indices = np.array([2], np.int64)
    dense_shape = np.array([5, 2], np.int64)
    with tf.Graph().as_default():
        full = tf.IndexedSlices(tf.constant(values), tf.constant(indices), tf.constant(dense_shape))
        no_shape = tf.IndexedSlices(tf.constant(values), tf.constant(indices))
        with tf.Session() as sess:
            out = sess.run(full)
            assert isinstance(out, tf.IndexedSlicesValue)
            np.testing.assert_array_equal(out.values, values)
            np.testing.assert_array_equal(out.indices, indices)
            np.testing.assert_array_equal(out.dense_shape, dense_shape)
            out_values, out_indices, out_shape = sess.run(no_shape)
            np.testing.assert_array_equal(out_indices, indices)
            assert out_shape is None
            nested = sess.run({"a": [full, no_shape]})
            assert nested["a"][1].dense_shape is None
            np.testing.assert_array_equal(nested["a"][0].dense_shape, dense_shape)


def test_feed_indexed_slices_with_and_without_dense_shape():
    values = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    indices = np.array([0, 3], np.int64)
    dense_shape = np.array([4, 2], np.int64)
    with tf.Graph().as_default():
        full = tf.IndexedSlices(tf.placeholder(tf.float32, (2, 2)), tf.placeholder(tf.int64, (2,)),
                                tf.placeholder(tf.int64, (2,)))
        no_shape = tf.IndexedSlices(tf.placeholder(tf.float32, (2, 2)), tf.placeholder(tf.int64, (2,)))
        with pytest.warns(UserWarning, match="unknown shape"):
            dense = tf.convert_to_tensor(full)
        with tf.Session() as sess:
            for feed in ((values, indices, dense_shape), tf.IndexedSlicesValue(values, indices, dense_shape)):
                out = sess.run(full, {full: feed})
                np.testing.assert_array_equal(out.indices, indices)
                np.testing.assert_array_equal(sess.run(dense, {full: feed}), [[1, 2], [0, 0], [0, 0], [3, 4]])
            for feed in ((values, indices), tf.IndexedSlicesValue(values, indices, None)):
                out = sess.run(no_shape, {no_shape: feed})
                np.testing.assert_array_equal(out.values, values)
                assert out.dense_shape is None


def test_make_callable_and_partial_run_fetch_and_feed_sparse_tensors():
    with tf.Graph().as_default():
        sp = tf.sparse_placeholder(tf.float32)
        doubled = tf.SparseTensor(sp.indices, sp.values * 2.0, sp.dense_shape)
        total = tf.sparse_reduce_sum(sp)
        with tf.Session() as sess:
            run = sess.make_callable([doubled, total], feed_list=[sp])
            out, out_total = run(tf.SparseTensorValue(INDICES, VALUES, SHAPE))
            _assert_sparse_value(out, values=VALUES * 2.0)
            assert out_total == 3.0
            handle = sess.partial_run_setup([doubled, total], [sp])
            out = sess.partial_run(handle, doubled, {sp: (INDICES, VALUES, SHAPE)})
            _assert_sparse_value(out, values=VALUES * 2.0)
            assert sess.partial_run(handle, total) == 3.0


def test_feeding_a_composite_a_wrong_value_names_what_it_takes():
    with tf.Graph().as_default():
        sp = _fed_sparse()
        slices = tf.IndexedSlices(tf.placeholder(tf.float32, (2,)), tf.placeholder(tf.int64, (2,)))
        with tf.Session() as sess:
            with pytest.raises(TypeError, match=r"SparseTensorValue or a tuple \(indices, values, dense_shape\), "
                                                r"got ndarray"):
                sess.run(sp.values, {sp: np.zeros(3)})
            with pytest.raises(ValueError, match="got a tuple of 2 elements"):
                sess.run(sp.values, {sp: (INDICES, VALUES)})
            with pytest.raises(TypeError, match=r"IndexedSlicesValue or a tuple \(values, indices\), got int"):
                sess.run(slices.values, {slices: 3})
            with pytest.raises(ValueError, match="Cannot feed value of shape"):
                sess.run(sp.values, {sp: (INDICES, np.ones(3, np.float32), SHAPE)})
