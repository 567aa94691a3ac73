"""tf.SparseTensor and the sparse ops (adplace/framework/sparse_tensor.py, adplace/ops/sparse_ops.py,
sparse_math_ops.py, sparse_slicing_ops.py, their kernels and gradients), against NumPy references and TF's shapes,
names and error messages."""
import numpy as np
import pytest

import adplace as tf
from adplace.errors import InvalidArgumentError


@pytest.fixture
def sess():
    with tf.Graph().as_default(), tf.Session() as session:
        yield session


def _dense(indices, values, shape, default=0):
    out = np.full(shape, default, dtype=np.asarray(values).dtype)
    for index, value in zip(indices, values):
        out[tuple(index)] += value
    return out


# --- SparseTensor ----------------------------------------------------------------------------------------------------
def test_sparse_tensor_components_properties_and_static_shape(sess):
    st = tf.SparseTensor(indices=[[0, 1], [2, 0]], values=[5.0, 6.0], dense_shape=[3, 4])
    assert st.indices.dtype == tf.int64 and st.dense_shape.dtype == tf.int64
    assert st.dtype == tf.float32 and st.op is st.values.op and st.graph is tf.get_default_graph()
    assert st.shape.as_list() == [3, 4] and st.get_shape() == st.shape
    assert st.indices.op.name == "SparseTensor/indices"
    fed = tf.SparseTensor(tf.placeholder(tf.int64, [None, 2]), tf.placeholder(tf.float32, [None]),
                          tf.placeholder(tf.int64, [2]))
    assert fed.shape.as_list() == [None, None]
    fed.set_shape([None, 7])
    assert fed.shape.as_list() == [None, 7]
    value = st.eval()
    assert isinstance(value, tf.SparseTensorValue)
    np.testing.assert_array_equal(value.values, [5.0, 6.0])
    again = tf.SparseTensor.from_value(value)
    np.testing.assert_array_equal(sess.run(again).indices, [[0, 1], [2, 0]])


def test_sparse_tensor_construction_errors():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="must have rank 2"):
            tf.SparseTensor([0, 1], [1.0, 2.0], [3])
        with pytest.raises(ValueError, match="not compatible"):
            tf.SparseTensor([[0], [1]], [1.0, 2.0, 3.0], [3])
        with pytest.raises(ValueError, match="not compatible"):
            tf.SparseTensor([[0, 1]], [1.0], [3])
        with pytest.raises(TypeError, match="Neither a SparseTensor nor SparseTensorValue"):
            tf.SparseTensor.from_value(([[0]], [1.0], [2]))
        st = tf.SparseTensor([[0]], [1.0], [2])
        with pytest.raises(TypeError, match="Failed to convert object of type .*SparseTensor"):
            tf.convert_to_tensor(st)
        assert tf.convert_to_tensor_or_sparse_tensor(st) is st
        with pytest.raises(RuntimeError, match="Sparse dtype"):
            tf.convert_to_tensor_or_sparse_tensor(st, dtype=tf.int32)
        with pytest.raises(TypeError, match="Input must be a SparseTensor"):
            tf.sparse_tensor_to_dense(tf.constant([1.0]))


# --- SparseToDense ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("indices, shape, values, default, expected", [
    ([1, 3], [5], 1, 0, [0, 1, 0, 1, 0]),
    ([1, 3], [5], 1.0, 0.0, [0.0, 1.0, 0.0, 1.0, 0.0]),
    ([1, 3], [5], [1, 2], -1, [-1, 1, -1, 2, -1]),
    (2, [4], 7, 0, [0, 0, 7, 0]),
    ([[1, 3], [2, 0]], [3, 4], 1, -1, [[-1, -1, -1, -1], [-1, -1, -1, 1], [1, -1, -1, -1]]),
])
def test_sparse_to_dense_values(sess, indices, shape, values, default, expected):
    out = sess.run(tf.sparse_to_dense(indices, shape, values, default))
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == (np.float32 if isinstance(values, float) else np.int32)


def test_sparse_to_dense_strings_and_3d(sess):
    np.testing.assert_array_equal(sess.run(tf.sparse_to_dense([1, 3], [5], "a", "b")),
                                  [b"b", b"a", b"b", b"a", b"b"])
    expected = -np.ones((3, 4, 2), np.int32)
    expected[1, 3, 0] = expected[2, 0, 1] = 1
    np.testing.assert_array_equal(sess.run(tf.sparse_to_dense([[1, 3, 0], [2, 0, 1]], [3, 4, 2], 1, -1)), expected)


def test_sparse_to_dense_static_shapes_and_bad_shape():
    with tf.Graph().as_default():
        indices = tf.placeholder(tf.int64)
        assert tf.sparse_to_dense(indices, [4, 5, 6], 1, 0).shape.as_list() == [4, 5, 6]
        assert tf.sparse_to_dense(indices, tf.placeholder(tf.int64, [3]), 1, 0).shape.as_list() == [None] * 3
        assert tf.sparse_to_dense(indices, tf.placeholder(tf.int64), 1, 0).shape.ndims is None
        with pytest.raises(ValueError, match="must be rank 1 but is rank 2 for 'SparseToDense(_\\d+)?' \\(op: 'SparseToDense'\\)"):
            tf.sparse_to_dense([1, 3], [[5], [3]], 1, -1)
        assert tf.sparse_to_dense([1, 3], [5], 1, name="dense").op.name == "dense"


@pytest.mark.parametrize("values, default, message", [
    ([[5], [3]], -1, r"sparse_values has incorrect shape \[2,1\], should be \[\] or \[2\]"),
    ([1, 2, 3], -1, r"sparse_values has incorrect shape \[3\], should be \[\] or \[2\]"),
    ([1, 2], [0], "default_value should be a scalar"),
])
def test_sparse_to_dense_bad_values(sess, values, default, message):
    with pytest.raises(InvalidArgumentError, match=message):
        sess.run(tf.sparse_to_dense([1, 3], [5], values, default))


@pytest.mark.parametrize("indices, message", [
    ([[1], [10]], r"indices\[1\] = \[10\] is out of bounds: need 0 <= index < \[5\]"),
    ([[1], [1]], r"indices\[1\] = \[1\] is repeated"),
    ([[2], [1]], r"indices\[1\] = \[1\] is out of order. Many sparse ops require sorted indices"),
])
def test_sparse_to_dense_validates_indices(sess, indices, message):
    with pytest.raises(InvalidArgumentError, match=message):
        sess.run(tf.sparse_to_dense(indices, [5], [-1.0, 1.0], 0.0))


def test_sparse_to_dense_without_validation_still_checks_bounds(sess):
    np.testing.assert_array_equal(sess.run(tf.sparse_to_dense([[2], [1]], [5], [-1.0, 1.0], validate_indices=False)),
                                  [0, 1, -1, 0, 0])
    sess.run(tf.sparse_to_dense([[1], [1]], [5], [-1.0, 1.0], validate_indices=False))
    with pytest.raises(InvalidArgumentError, match="out of bounds"):
        sess.run(tf.sparse_to_dense([[1], [10]], [5], [-1.0, 1.0], validate_indices=False))
    st = tf.SparseTensor([[0, 1], [0, 5]], [1.0, 2.0], [2, 3])
    with pytest.raises(InvalidArgumentError, match=r"indices\[1\] = \[0,5\] is out of bounds: need 0 <= index < "
                                                   r"\[2,3\]"):
        sess.run(tf.sparse.to_dense(st))


def test_sparse_tensor_to_dense_and_gradients(sess):
    values = tf.constant([1.0, 2.0, 3.0], tf.float64)
    st = tf.SparseTensor([[0, 1], [1, 0], [2, 2]], values, [3, 3])
    dense = tf.sparse_tensor_to_dense(st, default_value=-1.0)
    np.testing.assert_array_equal(sess.run(dense), [[-1, 1, -1], [2, -1, -1], [-1, -1, 3]])
    assert dense.shape.as_list() == [3, 3]
    assert tf.test.compute_gradient_error(values, [3], dense, [3, 3], x_init_value=np.array([1.0, 2.0, 3.0])) < 1e-8
    default = tf.constant(0.5, tf.float64)
    filled = tf.sparse_to_dense([[0], [2]], [4], values[:2], default)
    g_values, g_default = tf.gradients(tf.reduce_sum(filled * tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64)),
                                       [values, default])
    g_values, g_default = sess.run([g_values, g_default])
    np.testing.assert_allclose(g_values, [1.0, 3.0, 0.0])
    assert g_default == 6.0


# --- SparseTensorDenseMatMul -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("adjoint_a", [False, True])
@pytest.mark.parametrize("adjoint_b", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.complex64])
def test_sparse_tensor_dense_matmul_matches_numpy(sess, adjoint_a, adjoint_b, dtype):
    rng = np.random.default_rng(3)

    def draw(shape):
        x = rng.integers(-3, 4, size=shape).astype(dtype)
        return x + 1j * rng.integers(-2, 3, size=shape).astype(dtype) if dtype == np.complex64 else x

    a = draw((4, 5) if adjoint_a else (5, 4))
    a[rng.random(a.shape) < 0.5] = 0
    b = draw((3, 4) if adjoint_b else (4, 3))
    indices = np.argwhere(a != 0)
    st = tf.SparseTensor(indices, a[tuple(indices.T)], a.shape)
    out = sess.run(tf.sparse_tensor_dense_matmul(st, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b))
    expected = (np.conj(a.T) if adjoint_a else a) @ (np.conj(b.T) if adjoint_b else b)
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    assert out.dtype == dtype and out.shape == (5, 3)


def test_sparse_dense_matmul_adds_repeated_indices_and_infers_shape(sess):
    st = tf.SparseTensor([[0, 1], [0, 1], [2, 0]], [1.0, 2.0, 4.0], [3, 2])
    b = tf.constant([[1.0, 10.0], [2.0, 20.0]])
    product = tf.sparse.matmul(st, b)
    assert product.shape.as_list() == [3, 2] and product.op.type == "SparseTensorDenseMatMul"
    np.testing.assert_array_equal(sess.run(product), [[6, 60], [0, 0], [4, 40]])
    assert tf.sparse.sparse_dense_matmul(st, tf.ones([4, 3]), adjoint_a=True, adjoint_b=True).shape.as_list() == [2, 4]
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3 for 'SparseTensorDenseMatMul_2' "
                                         "\\(op: 'SparseTensorDenseMatMul'\\) with input shapes: \\[3,2\\], \\[3\\], \\[2\\], \\[3,2\\]"):
        tf.sparse_tensor_dense_matmul(st, tf.ones([3, 2]))


def test_sparse_dense_matmul_runtime_errors(sess):
    shape = tf.placeholder(tf.int64, [2])
    st = tf.SparseTensor([[0, 1], [1, 5]], [1.0, 2.0], shape)
    product = tf.sparse_tensor_dense_matmul(st, tf.ones([3, 2]))
    with pytest.raises(InvalidArgumentError, match=r"k \(5\) from index\[1,1\] out of bounds \(>=3\)"):
        sess.run(product, {shape: [2, 3]})
    with pytest.raises(InvalidArgumentError, match="Cannot multiply A and B because inner dimension does not "
                                                   "match: 6 vs. 3"):
        sess.run(product, {shape: [2, 6]})
    rows = tf.SparseTensor([[0, 1], [1, 0]], [1.0, 2.0], shape)
    with pytest.raises(InvalidArgumentError, match=r"m \(1\) from index\[1,0\] out of bounds \(>=1\)"):
        sess.run(tf.sparse_tensor_dense_matmul(rows, tf.ones([3, 2])), {shape: [1, 3]})


@pytest.mark.parametrize("adjoint_a, adjoint_b", [(False, False), (True, False), (False, True), (True, True)])
def test_sparse_dense_matmul_gradients(sess, adjoint_a, adjoint_b):
    values = tf.constant([1.0, -2.0, 3.0], tf.float64)
    indices = [[0, 0], [1, 2], [0, 1]] if not adjoint_a else [[0, 0], [2, 1], [1, 0]]
    st = tf.SparseTensor(indices, values, [2, 3] if not adjoint_a else [3, 2])
    b_value = np.arange(6.0).reshape(3, 2) + 1.0
    b = tf.constant(b_value.T if adjoint_b else b_value)
    product = tf.sparse_tensor_dense_matmul(st, b, adjoint_a=adjoint_a, adjoint_b=adjoint_b)
    assert tf.test.compute_gradient_error(values, [3], product, [2, 2],
                                          x_init_value=np.array([1.0, -2.0, 3.0])) < 1e-8
    assert tf.test.compute_gradient_error(b, b.shape.as_list(), product, [2, 2]) < 1e-8


# --- SparseReorder ---------------------------------------------------------------------------------------------------
def test_sparse_reorder_sorts_row_major_and_routes_gradients(sess):
    values = tf.constant([10.0, 20.0, 30.0, 40.0], tf.float64)
    st = tf.SparseTensor([[0, 3], [0, 1], [3, 1], [2, 0]], values, [4, 5])
    reordered = tf.sparse_reorder(st)
    assert reordered.shape.as_list() == [4, 5]
    out = sess.run(reordered)
    np.testing.assert_array_equal(out.indices, [[0, 1], [0, 3], [2, 0], [3, 1]])
    np.testing.assert_array_equal(out.values, [20, 10, 40, 30])
    grad, = tf.gradients(tf.reduce_sum(reordered.values * tf.constant([1.0, 2.0, 3.0, 4.0], tf.float64)), values)
    np.testing.assert_array_equal(sess.run(grad), [2, 1, 4, 3])
    np.testing.assert_array_equal(sess.run(tf.sparse.reorder(tf.SparseTensorValue([[1], [0]], [1, 2], [2]))).values,
                                  [2, 1])


# --- SparseAdd, SparseTensorDenseAdd ---------------------------------------------------------------------------------
def test_sparse_add_sparse_sparse_with_threshold(sess):
    a = tf.SparseTensor([[0, 1], [1, 0], [2, 1]], [2.0, 0.1, 6.0], [3, 2])
    b = tf.SparseTensor([[1, 0], [1, 1], [2, 1]], [-0.1, 0.0, -6.2], [3, 2])
    for threshold, kept in ((0, [[0, 1], [1, 0], [1, 1], [2, 1]]), (0.11, [[0, 1], [1, 1], [2, 1]]),
                            (0.21, [[0, 1], [1, 1]])):
        out = sess.run(tf.sparse_add(a, b, threshold))
        np.testing.assert_array_equal(out.indices, kept)
        np.testing.assert_array_equal(out.dense_shape, [3, 2])
    out = sess.run(tf.sparse_add(a, b, thresh=0.11))
    np.testing.assert_allclose(out.values, [2.0, 0.0, -0.2], atol=1e-6)
    assert tf.sparse.add(a, b).shape.as_list() == [3, 2]
    with pytest.raises(TypeError, match="At least one input should be SparseTensor"):
        tf.sparse_add(tf.ones([2]), tf.ones([2]))
    with pytest.raises(ValueError, match="Cannot specify both 'thresh' and 'threshold'"):
        tf.sparse_add(a, b, threshold=0.1, thresh=0.1)


def test_sparse_add_matches_numpy_and_has_gradients(sess):
    rng = np.random.default_rng(0)
    dense_a = np.where(rng.random((4, 5)) < 0.4, rng.normal(size=(4, 5)), 0.0)
    dense_b = np.where(rng.random((4, 5)) < 0.4, rng.normal(size=(4, 5)), 0.0)
    ia, ib = np.argwhere(dense_a), np.argwhere(dense_b)
    va, vb = tf.constant(dense_a[tuple(ia.T)]), tf.constant(dense_b[tuple(ib.T)])
    total = tf.sparse_add(tf.SparseTensor(ia, va, [4, 5]), tf.SparseTensor(ib, vb, [4, 5]))
    out = sess.run(total)
    np.testing.assert_allclose(_dense(out.indices, out.values, (4, 5)), dense_a + dense_b)
    weights = tf.constant(rng.normal(size=(4, 5)))
    loss = tf.reduce_sum(tf.sparse_tensor_to_dense(total) * weights)
    ga, gb = sess.run(tf.gradients(loss, [va, vb]))
    w = sess.run(weights)
    np.testing.assert_allclose(ga, w[tuple(ia.T)])
    np.testing.assert_allclose(gb, w[tuple(ib.T)])


def test_sparse_add_sparse_dense_either_order_with_gradients(sess):
    values = tf.constant([1.0, 2.0], tf.float64)
    st = tf.SparseTensor([[0, 0], [1, 2]], values, [2, 3])
    dense = tf.constant(np.arange(6.0).reshape(2, 3))
    for total in (tf.sparse_add(st, dense), tf.sparse_add(dense, st)):
        assert total.shape.as_list() == [2, 3]
        np.testing.assert_array_equal(sess.run(total), [[1, 1, 2], [3, 4, 7]])
    assert tf.test.compute_gradient_error(values, [2], total, [2, 3], x_init_value=np.array([1.0, 2.0])) < 1e-8
    assert tf.test.compute_gradient_error(dense, [2, 3], total, [2, 3]) < 1e-8
    with pytest.raises(InvalidArgumentError, match="Dimension 1 does not equal"):
        sess.run(tf.sparse_add(tf.SparseTensor([[0, 0]], [1.0], [2, 4]), tf.ones([2, 3])))


# --- SparseReduceSum -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis, keepdims", [(None, False), (0, False), (1, False), (-1, False), (1, True),
                                            ([0, 1], False), ([0, 2], True)])
def test_sparse_reduce_sum_matches_numpy(sess, axis, keepdims):
    indices = np.array([[0, 0, 1], [0, 2, 0], [1, 1, 1], [1, 2, 0]])
    values = np.array([1.0, 2.0, 3.0, 4.0])
    st = tf.SparseTensor(indices, values, [2, 3, 2])
    dense = _dense(indices, values, (2, 3, 2))
    total = tf.sparse_reduce_sum(st, axis, keepdims=keepdims)
    expected = np.sum(dense, axis=None if axis is None else tuple(np.atleast_1d(axis)), keepdims=keepdims)
    np.testing.assert_allclose(sess.run(total), expected)
    assert total.shape.as_list() == list(expected.shape)


def test_sparse_reduce_sum_aliases_errors_and_gradient(sess):
    values = tf.constant([1.0, 1.0, 1.0], tf.float64)
    st = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], values, [2, 3])
    np.testing.assert_array_equal(sess.run(tf.sparse_reduce_sum(st, reduction_axes=1, keep_dims=True)), [[2], [1]])
    np.testing.assert_array_equal(sess.run(tf.sparse.reduce_sum(st, 0)), [1, 1, 1])
    assert sess.run(tf.sparse_reduce_sum(st)) == 3.0
    bad_axis = tf.sparse_reduce_sum(st, 2)  # TF 1.15 builds it (shape unknown) and fails when it runs
    assert bad_axis.shape.ndims is None
    with pytest.raises(InvalidArgumentError, match="Invalid reduction dimension 2, for input with 2 dimensions"):
        sess.run(bad_axis)
    reduced = tf.sparse_reduce_sum(st, 1)
    assert tf.test.compute_gradient_error(values, [3], reduced, [2], x_init_value=np.ones(3)) < 1e-8
    grad, = tf.gradients(tf.reduce_sum(reduced * tf.constant([2.0, 5.0], tf.float64)), values)
    np.testing.assert_array_equal(sess.run(grad), [2, 2, 5])


# --- retain, reshape, from_dense -------------------------------------------------------------------------------------
def test_sparse_retain_keeps_the_marked_entries(sess):
    st = tf.SparseTensor([[0, 1], [0, 3], [2, 0], [3, 1]], [1, 2, 3, 4], [4, 5])
    out = sess.run(tf.sparse_retain(st, [True, False, False, True]))
    np.testing.assert_array_equal(out.indices, [[0, 1], [3, 1]])
    np.testing.assert_array_equal(out.values, [1, 4])
    np.testing.assert_array_equal(out.dense_shape, [4, 5])
    with pytest.raises(ValueError):
        tf.sparse.retain(st, [True, False])


def test_sparse_reshape_recomputes_indices(sess):
    st = tf.SparseTensor([[0, 0, 0], [0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 2, 3]], [1, 2, 3, 4, 5], [2, 3, 6])
    reshaped = tf.sparse_reshape(st, [9, -1])
    assert reshaped.shape.as_list() == [9, 4]
    out = sess.run(reshaped)
    np.testing.assert_array_equal(out.indices, [[0, 0], [0, 1], [1, 2], [4, 2], [8, 1]])
    np.testing.assert_array_equal(out.dense_shape, [9, 4])
    with pytest.raises(ValueError, match="Cannot reshape a tensor with 36 elements"):
        tf.sparse.reshape(st, [5, 7])
    new_shape = tf.placeholder(tf.int64, [2])
    with pytest.raises(InvalidArgumentError, match="dense values, but the requested shape"):
        sess.run(tf.sparse_reshape(st, new_shape).indices, {new_shape: [5, 7]})


def test_from_dense_round_trips(sess):
    dense = np.array([[0, 3, 0], [4, 0, 5]], np.int32)
    st = tf.sparse.from_dense(dense)
    out = sess.run(st)
    np.testing.assert_array_equal(out.indices, [[0, 1], [1, 0], [1, 2]])
    np.testing.assert_array_equal(out.values, [3, 4, 5])
    np.testing.assert_array_equal(sess.run(tf.sparse.to_dense(st)), dense)
    assert isinstance(tf.sparse.SparseTensor([[0]], [1], [1]), tf.SparseTensor)


def test_shape_of_a_sparse_tensor_is_its_dense_shape_cast_to_out_type():
    sp = tf.sparse_placeholder(tf.float32)
    shape = tf.shape(sp)
    assert shape.dtype == tf.int32 and shape.op.type == "Cast"
    value = tf.SparseTensorValue([[0, 1]], [1.0], [3, 4])
    with tf.Session() as sess:
        assert sess.run(shape, {sp: value}).tolist() == [3, 4]
        assert sess.run(tf.shape(sp, out_type=tf.int64), {sp: value}).dtype == np.int64
