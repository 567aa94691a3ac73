"""tf.IndexedSlices: the gradient of gather, how several are summed, where they become dense, and clipping."""
import numpy as np
import pytest

import adplace as tf


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


def test_properties_follow_the_values_tensor():
    values = tf.constant(np.ones((2, 3), np.float32), name="vals")
    slices = tf.IndexedSlices(values, tf.constant([4, 1]), tf.constant([5, 3]))
    assert slices.dtype == tf.float32 and slices.name == "vals:0" and slices.op is values.op
    assert slices.graph is values.graph and slices.device == values.device
    assert slices.shape.as_list() == [5, 3] and slices.get_shape().as_list() == [5, 3]
    assert tf.IndexedSlices(values, tf.constant([4, 1])).shape.ndims is None
    assert "IndexedSlices(indices=" in str(slices)
    negated = -slices
    assert isinstance(negated, tf.IndexedSlices) and negated.indices is slices.indices
    np.testing.assert_array_equal(run(negated.values), -np.ones((2, 3)))


def test_dense_conversion_sums_repeated_rows_and_checks_dtype_and_shape():
    slices = tf.IndexedSlices(tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), tf.constant([2, 0, 2]),
                              tf.constant([4, 2]))
    dense = tf.convert_to_tensor(slices)
    assert dense.shape.as_list() == [4, 2]
    np.testing.assert_array_equal(run(dense), [[3, 4], [0, 0], [6, 8], [0, 0]])
    with pytest.raises(ValueError, match="requested dtype int32 for IndexedSlices with dtype float32"):
        tf.convert_to_tensor(slices, dtype=tf.int32)
    with pytest.raises(ValueError, match="IndexedSlices without dense_shape"):
        tf.convert_to_tensor(tf.IndexedSlices(slices.values, slices.indices))
    huge = tf.IndexedSlices(tf.constant([[1.0]]), tf.constant([0]), tf.constant([100000, 1000]))
    with pytest.warns(UserWarning, match="with 100000000 elements"):
        tf.convert_to_tensor(huge)
    assert tf.convert_to_tensor_or_indexed_slices(slices) is slices
    with pytest.raises(ValueError, match="requested dtype float64"):
        tf.convert_to_tensor_or_indexed_slices(slices, dtype=tf.float64)
    assert isinstance(tf.convert_to_tensor_or_indexed_slices([1.0]), tf.Tensor)


def test_gradients_of_two_gathers_are_concatenated_not_densified():
    params = tf.Variable(np.arange(8.0).reshape(4, 2), name="params")
    loss = tf.reduce_sum(tf.gather(params, [1, 3])) + 2.0 * tf.reduce_sum(tf.gather(params, [3]))
    grad, = tf.gradients(loss, params)
    assert isinstance(grad, tf.IndexedSlices)
    values, indices = run([grad.values, grad.indices])
    assert indices.tolist() == [1, 3, 3]
    np.testing.assert_array_equal(values, [[1, 1], [1, 1], [2, 2]])
    np.testing.assert_array_equal(run(tf.convert_to_tensor(grad)), [[0, 0], [1, 1], [0, 0], [3, 3]])


def test_a_dense_gradient_joins_slices_as_all_of_its_rows():
    params = tf.Variable(np.ones((3, 2)), name="params")
    loss = tf.reduce_sum(tf.gather(params, [2])) + tf.reduce_sum(params * params)
    grad, = tf.gradients(loss, params)
    assert isinstance(grad, tf.IndexedSlices)
    np.testing.assert_array_equal(run(tf.convert_to_tensor(grad)), [[2, 2], [2, 2], [3, 3]])


def test_ops_that_need_a_dense_gradient_convert_it():
    x = tf.constant(np.arange(6.0).reshape(2, 3))
    flat = tf.reshape(x, [3, 2])
    grad, = tf.gradients(tf.reduce_sum(tf.gather(flat, [0, 0])), x)
    assert isinstance(grad, tf.Tensor) and grad.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(grad), [[2, 2, 0], [0, 0, 0]])


def test_gating_keeps_slices_sparse():
    params = tf.Variable(np.ones((3, 2)), name="params")
    other = tf.Variable(2.0, dtype=tf.float64, name="other")
    loss = tf.reduce_sum(tf.gather(params, [1])) * other
    grads = tf.gradients(loss, [params, other], gate_gradients=True)
    assert isinstance(grads[0], tf.IndexedSlices)
    gated = tf.tuple([grads[0], grads[1]])
    assert isinstance(gated[0], tf.IndexedSlices) and gated[0].values.op.type == "Identity"
    values, other_grad = run([gated[0].values, gated[1]])
    np.testing.assert_array_equal(values, [[2, 2]])
    assert other_grad == 2.0


def test_clipping_scales_only_the_values():
    slices = tf.IndexedSlices(tf.constant([[3.0, 4.0]]), tf.constant([1]), tf.constant([3, 2]))
    dense = tf.constant([0.0, 12.0])
    (clipped_slices, clipped_dense), norm = tf.clip_by_global_norm([slices, dense], 6.5)
    assert isinstance(clipped_slices, tf.IndexedSlices) and clipped_slices.indices is slices.indices
    values, dense_value, norm_value = run([clipped_slices.values, clipped_dense, norm])
    assert norm_value == pytest.approx(13.0)
    np.testing.assert_allclose(values, [[1.5, 2.0]])
    np.testing.assert_allclose(dense_value, [0.0, 6.0])
    by_norm = tf.clip_by_norm(slices, 1.0)
    assert isinstance(by_norm, tf.IndexedSlices)
    np.testing.assert_allclose(run(by_norm.values), [[0.6, 0.8]])
    by_value = tf.clip_by_value(slices, 0.0, 3.5)
    np.testing.assert_allclose(run(by_value.values), [[3.0, 3.5]])


def test_scalar_mul_keeps_slices_sparse_and_wants_a_scalar():
    slices = tf.IndexedSlices(tf.constant([[1.0, -2.0]]), tf.constant([0]), tf.constant([2, 2]))
    scaled = tf.scalar_mul(3.0, slices)
    assert isinstance(scaled, tf.IndexedSlices)
    np.testing.assert_array_equal(run(scaled.values), [[3.0, -6.0]])
    np.testing.assert_array_equal(run(tf.scalar_mul(2, tf.constant([1, 2]))), [2, 4])
    with pytest.raises(ValueError, match="Only scalar multiply works, got shape"):
        tf.scalar_mul([1.0, 2.0], slices)


def test_indexed_slices_grad_ys_flow_through_as_slices():
    x = tf.placeholder(tf.float32)
    dy = tf.IndexedSlices(tf.placeholder(tf.float32), tf.placeholder(tf.int32))
    dx, = tf.gradients(tf.identity(x), x, grad_ys=dy)
    assert isinstance(dx, tf.IndexedSlices) and dx.dense_shape is None
    assert dx.values.op.name == "gradients/grad_ys_0_values"
    with tf.Session() as sess:
        value = sess.run(dx, {x: [1.0], dy.indices: [0], dy.values: [2.0]})
    assert isinstance(value, tf.IndexedSlicesValue) and value.dense_shape is None
    assert value.values.tolist() == [2.0] and value.indices.tolist() == [0]


def test_a_fetched_gradient_of_gather_is_an_indexed_slices_value():
    params = tf.Variable(np.zeros((4, 2), np.float32), name="params")
    grad, = tf.gradients(tf.reduce_sum(tf.gather(params, [3, 1])), params)
    value = run(grad)
    assert isinstance(value, tf.IndexedSlicesValue)
    assert value.indices.tolist() == [3, 1] and value.dense_shape.tolist() == [4, 2]
    np.testing.assert_array_equal(value.values, np.ones((2, 2)))


def test_arithmetic_with_a_tensor_densifies_the_slices():
    slices = tf.IndexedSlices(tf.constant([[1.0, 2.0]]), tf.constant([1]), tf.constant([2, 2]))
    product = tf.ones([2, 2]) * slices
    assert isinstance(product, tf.Tensor)
    np.testing.assert_array_equal(run(product), [[0.0, 0.0], [1.0, 2.0]])


def test_a_sparse_gradient_into_a_binary_op_is_made_dense():
    """A gather of `m + 0.0`: the Add's gradient gets an IndexedSlices and passes a dense one on, as TF's does."""
    m = tf.Variable(np.ones((5, 5), np.float32))
    g, = tf.gradients(tf.reduce_sum(tf.gather(m * 2.0 + 0.0, [0, 0])), m)
    assert isinstance(g, tf.Tensor)
    with tf.Session() as sess:
        sess.run(m.initializer)
        np.testing.assert_array_equal(sess.run(g), np.vstack([np.full((1, 5), 4.0), np.zeros((4, 5))]))
