"""More sparse ops (adplace/ops/sparse_ops.py, sparse_math_ops.py, sparse_slicing_ops.py, sparse_grad.py and
kernels/sparse*.py): SparseTensor * and / a dense tensor (SparseDenseCwiseMul/Div/Add), sparse_softmax,
sparse_maximum/minimum, sparse_fill_empty_rows, the max reductions and SparseTensor-output reductions,
sparse_to_indicator, sparse_merge, sparse_reset_shape, sparse_transpose and sparse_concat, against NumPy references,
numeric gradients and TF's errors."""
import numpy as np
import pytest

import adplace as tf
from adplace.errors import InvalidArgumentError
from adplace.ops import sparse_math_ops


@pytest.fixture
def sess():
    with tf.Graph().as_default(), tf.Session() as session:
        yield session


def _random_sparse(shape, seed, dtype=np.float64, keep=0.5):
    """(SparseTensor, its dense NumPy value): about `keep` of the entries non-zero, values in [1, 2)."""
    rng = np.random.RandomState(seed)
    dense = (rng.rand(*shape) + 1).astype(dtype)
    dense[rng.rand(*shape) > keep] = 0
    indices = np.argwhere(dense != 0)
    return tf.SparseTensor(indices, dense[tuple(indices.T)], shape), dense


def _densify(value):
    out = np.zeros(value.dense_shape, np.asarray(value.values).dtype)
    for index, entry in zip(np.asarray(value.indices), value.values):
        out[tuple(index)] = entry
    return out


# --- SparseTensor (*, /) dense and sparse_dense_cwise_add -------------------------------------------------------------
@pytest.mark.parametrize("sp_shape, dense_shape", [((4, 5, 3), (4, 5, 1)), ((3, 4), (3, 4)), ((6,), (1,)),
                                                   ((2, 3, 4), (1, 4)), ((2, 3), ())])
def test_sparse_times_and_over_dense_broadcast_the_dense_side(sess, sp_shape, dense_shape):
    sp, dense = _random_sparse(sp_shape, seed=len(sp_shape))
    other = np.asarray(np.random.RandomState(1).rand(*dense_shape) + 1)
    mask = dense != 0
    for result, expected in ((sp * other, dense * other), (sp / tf.constant(other), dense / other),
                             (tf.constant(other) * sp, dense * other)):
        assert isinstance(result, tf.SparseTensor)
        assert result.indices is sp.indices and result.dense_shape is sp.dense_shape
        np.testing.assert_allclose(_densify(sess.run(result)), np.where(mask, expected, 0))


def test_sparse_operators_name_their_ops_like_tf(sess):
    sp, _ = _random_sparse((2, 2), seed=0)
    assert (sp * 2.0).values.op.type == "SparseDenseCwiseMul"
    assert (sp * 2.0).values.op.name == "mul_1"  # scope "mul"; the first product above took "mul"
    assert (sp / 2.0).values.op.name == "truediv" and (sp / 2.0).values.op.type == "SparseDenseCwiseDiv"
    assert (tf.constant(3.0, tf.float64) * sp).values.op.type == "SparseDenseCwiseMul"
    assert (tf.constant(3.0) * tf.constant(2.0)).op.type == "Mul"


def test_integer_true_division_casts_to_float64_and_integer_div_truncates(sess):
    sp = tf.SparseTensor([[0, 0], [1, 1]], np.array([7, -7], np.int32), [2, 2])
    quotient = sp / tf.constant([[2, 2], [2, 2]])
    assert quotient.dtype == tf.float64
    np.testing.assert_allclose(sess.run(quotient).values, [3.5, -3.5])
    np.testing.assert_array_equal(sess.run(sp.__div__(2)).values, [3, -3])  # C++ rounding toward zero
    with pytest.raises(InvalidArgumentError, match="Integer division by zero"):
        sess.run(sp.__div__(0).values)


def test_dense_operand_must_fit_into_the_sparse_shape(sess):
    sp = tf.SparseTensor([[0, 0, 1, 0], [0, 0, 3, 0]], [10, 20], [1, 1, 4, 2])
    with pytest.raises(InvalidArgumentError, match=r"SparseDenseBinaryOpShared broadcasts dense to sparse only; "
                                                   r"got incompatible shapes: \[1,1,4,2\] vs. \[3,4,1\]"):
        sess.run(tf.ones([3, 4, 1], tf.int32) * sp)
    with pytest.raises(ValueError, match="float64"):
        _random_sparse((2,), seed=0)[0] * tf.constant([1.0, 2.0], tf.float32)


def test_sparse_dense_cwise_add_touches_only_the_sparse_entries(sess):
    sp = tf.SparseTensor([[0, 0], [1, 1]], [1, 1], [2, 2])
    for dense in (tf.ones([2, 2], tf.int32), tf.ones([1], tf.int32)):
        result = sparse_math_ops.sparse_dense_cwise_add(sp, dense)
        np.testing.assert_array_equal(_densify(sess.run(result)), 2 * np.eye(2))
    values = tf.constant([1.0, 2.0])
    summed = sparse_math_ops.sparse_dense_cwise_add(tf.SparseTensor([[0], [1]], values, [2]), tf.ones([2]))
    with pytest.raises(NotImplementedError, match="SparseDenseCwiseAdd"):
        tf.gradients(summed.values, values)


@pytest.mark.parametrize("sp_shape, dense_shape", [((4, 3, 5), (4, 3, 1)), ((7,), (1,)), ((3, 2, 4), (1, 4))])
def test_product_and_quotient_gradients_match_central_differences(sess, sp_shape, dense_shape):
    sp, _ = _random_sparse(sp_shape, seed=3)
    nnz = sess.run(sp.values).shape[0]
    other = np.random.RandomState(4).rand(*dense_shape) + 1
    other_t = tf.constant(other)
    product, quotient = sp * other_t, sp / other_t
    assert tf.test.compute_gradient_error([sp.values, other_t], [(nnz,), dense_shape], product.values, (nnz,)) < 1e-6
    assert tf.test.compute_gradient_error(sp.values, (nnz,), quotient.values, (nnz,)) < 1e-6
    assert tf.test.compute_gradient_error(other_t, dense_shape, quotient.values, (nnz,), x_init_value=other) < 1e-5


def test_product_gradient_adds_up_over_the_entries_reading_one_dense_element(sess):
    values = tf.constant([1.0, 2.0, 3.0], tf.float64)
    sp = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], values, [2, 3])
    scale = tf.constant([[10.0], [100.0]], tf.float64)
    d_values, d_scale = tf.gradients(tf.reduce_sum((sp * scale).values), [values, scale])
    np.testing.assert_allclose(sess.run(d_values), [10, 10, 100])
    np.testing.assert_allclose(sess.run(d_scale), [[3], [3]])


# --- sparse_softmax --------------------------------------------------------------------------------------------------
def _masked_softmax(dense, mask):
    shifted = np.where(mask, np.exp(dense - np.where(mask, dense, -np.inf).max(axis=-1, keepdims=True)), 0)
    return shifted / np.maximum(shifted.sum(axis=-1, keepdims=True), 1e-300)


def test_sparse_softmax_ignores_the_implicit_zeros(sess):
    sp, dense = _random_sparse((2, 3, 5), seed=7)
    result = tf.sparse.softmax(sp)
    assert result.indices is sp.indices
    np.testing.assert_allclose(_densify(sess.run(result)), _masked_softmax(dense, dense != 0), rtol=1e-12)
    assert result.values.op.name == "SparseSoftmax"
    assert tf.sparse_softmax is tf.sparse.softmax


def test_sparse_softmax_gradient_and_rank_check(sess):
    sp, _ = _random_sparse((3, 6), seed=8)
    nnz = sess.run(sp.values).shape[0]
    assert tf.test.compute_gradient_error(sp.values, (nnz,), tf.sparse_softmax(sp).values, (nnz,)) < 1e-6
    with pytest.raises(InvalidArgumentError, match="Input should have rank >= 2, but received shape: 4"):
        sess.run(tf.sparse_softmax(tf.SparseTensor([[1]], [1.0], [4])).values)


# --- sparse_maximum, sparse_minimum ----------------------------------------------------------------------------------
def test_sparse_maximum_and_minimum_over_the_union_of_indices(sess):
    rng = np.random.RandomState(9)
    a_dense, b_dense = rng.randn(4, 5), rng.randn(4, 5)
    a_dense[rng.rand(4, 5) < 0.5] = 0
    b_dense[rng.rand(4, 5) < 0.5] = 0
    a, b = (tf.SparseTensor(np.argwhere(d), d[d != 0], d.shape) for d in (a_dense, b_dense))
    high, low = sess.run([tf.sparse_maximum(a, b), tf.sparse.minimum(a, b)])
    np.testing.assert_array_equal(_densify(high), np.maximum(a_dense, b_dense))
    np.testing.assert_array_equal(_densify(low), np.minimum(a_dense, b_dense))
    union = np.argwhere((a_dense != 0) | (b_dense != 0))
    np.testing.assert_array_equal(high.indices, union)


def test_sparse_maximum_errors(sess):
    one_d = tf.SparseTensor([[0]], [1], [2])
    with pytest.raises(InvalidArgumentError, match="Operands do not have the same ranks; got shapes: 1 1 and 2"):
        sess.run(tf.sparse_maximum(tf.SparseTensor([[0, 0]], [0], [1, 1]), one_d))
    with pytest.raises(InvalidArgumentError, match="Operands' shapes do not match: got 1 and 2 for dimension 0"):
        sess.run(tf.sparse_maximum(tf.SparseTensor([[0]], [0], [1]), one_d))
    values = tf.constant([1.0])
    with pytest.raises(NotImplementedError, match="SparseSparseMaximum"):
        tf.gradients(tf.sparse_maximum(tf.SparseTensor([[0]], values, [2]), tf.SparseTensor([[1]], [2.0], [2])).values,
                     values)


# --- sparse_fill_empty_rows ------------------------------------------------------------------------------------------
def test_fill_empty_rows_values_indicator_and_gradient(sess):
    values = tf.constant([5.0, 6.0, 7.0], tf.float64)
    default = tf.constant(-1.0, tf.float64)
    sp = tf.SparseTensor([[1, 0], [1, 3], [3, 2]], values, [5, 4])
    filled, empty = tf.sparse_fill_empty_rows(sp, default)
    out, empty_out = sess.run([filled, empty])
    np.testing.assert_array_equal(out.indices, [[0, 0], [1, 0], [1, 3], [2, 0], [3, 2], [4, 0]])
    np.testing.assert_array_equal(out.values, [-1, 5, 6, -1, 7, -1])
    np.testing.assert_array_equal(empty_out, [True, False, True, False, True])
    weights = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], tf.float64)
    d_values, d_default = tf.gradients(tf.reduce_sum(filled.values * weights), [values, default])
    np.testing.assert_array_equal(sess.run(d_values), [2, 3, 5])
    assert sess.run(d_default) == 1 + 4 + 6
    assert tf.test.compute_gradient_error(values, [3], filled.values, [6]) < 1e-8


def test_fill_empty_rows_strings_and_a_bad_row(sess):
    sp = tf.SparseTensor([[1, 1]], ["b"], [3, 2])
    filled, _ = tf.sparse.fill_empty_rows(sp, "")
    np.testing.assert_array_equal(sess.run(filled).values, [b"", b"b", b""])
    with pytest.raises(InvalidArgumentError, match=r"indices\(0, 0\) is invalid: 3 >= 3"):
        sess.run(tf.sparse_fill_empty_rows(tf.SparseTensor([[3, 0]], [1], [3, 2]), 0)[1])


# --- reductions ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", [None, 0, 1, -1, [0, 2], [1, -3]])
@pytest.mark.parametrize("keepdims", [False, True])
def test_sparse_reduce_max_and_sparse_outputs_match_numpy(sess, axis, keepdims):
    indices = np.array([[0, 0, 1], [0, 2, 0], [1, 1, 1], [1, 2, 0], [1, 2, 1]])
    values = np.array([-1.0, -2.0, 3.0, -4.0, 5.0])
    st = tf.SparseTensor(indices, values, [2, 3, 2])
    dense = np.full((2, 3, 2), -np.inf)
    dense[tuple(indices.T)] = values
    np_axis = None if axis is None else tuple(np.atleast_1d(axis))
    expected_max = np.asarray(np.max(dense, axis=np_axis, keepdims=keepdims))
    expected_max[np.isinf(expected_max)] = 0  # an output no value reached is 0
    total = np.sum(np.where(np.isinf(dense), 0, dense), axis=np_axis, keepdims=keepdims)
    dense_max, sparse_max, sparse_sum = sess.run([tf.sparse_reduce_max(st, axis, keepdims),
                                                  tf.sparse.reduce_max_sparse(st, axis, keepdims),
                                                  tf.sparse_reduce_sum_sparse(st, axis, keepdims)])
    np.testing.assert_array_equal(dense_max, expected_max)
    np.testing.assert_array_equal(_densify(sparse_max), expected_max)
    np.testing.assert_array_equal(_densify(sparse_sum), total)
    assert len(sparse_max.values) == np.count_nonzero(np.max(np.isfinite(dense), axis=np_axis, keepdims=keepdims))


def test_reductions_check_axes_when_run_and_max_has_no_gradient(sess):
    values = tf.constant([1.0, 2.0])
    st = tf.SparseTensor([[0, 1], [1, 0]], values, [2, 2])
    for reduce in (tf.sparse_reduce_max, tf.sparse_reduce_sum):
        bad = reduce(st, -3)
        with pytest.raises(InvalidArgumentError, match="Invalid reduction dimension -3, for input with 2 dimensions"):
            sess.run(bad)
    with pytest.raises(LookupError, match=r"No gradient defined for operation 'SparseReduceMax_\d' \(op type: "
                                          r"SparseReduceMax\)"):
        tf.gradients(tf.sparse_reduce_max(st, 0), values)


# --- to_indicator, merge ---------------------------------------------------------------------------------------------
def test_sparse_to_indicator_marks_each_rows_ids(sess):
    st = tf.SparseTensor([[0, 0, 0], [0, 1, 0], [0, 1, 1], [1, 2, 0], [1, 2, 1]], [3, 0, 3, 4, 4], [2, 3, 2])
    indicator = sess.run(tf.sparse.to_indicator(st, 5))
    expected = np.zeros((2, 3, 5), bool)
    expected[0, 0, 3] = expected[0, 1, 0] = expected[0, 1, 3] = expected[1, 2, 4] = True
    np.testing.assert_array_equal(indicator, expected)


def test_sparse_merge_orders_and_widens(sess):
    indices = [[0, 0], [1, 0], [1, 1]]
    ids = tf.SparseTensor(indices, np.array([4, 3, 1], np.int32), [2, 2])
    values = tf.SparseTensorValue(np.array(indices), np.array([0.5, 2.0, 3.0]), np.array([2, 2]))
    merged = tf.sparse_merge(ids, values, 5)
    assert merged.shape.as_list() == [2, 5]
    out = sess.run(merged)
    np.testing.assert_array_equal(out.indices, [[0, 4], [1, 1], [1, 3]])
    np.testing.assert_array_equal(out.values, [0.5, 3.0, 2.0])
    np.testing.assert_array_equal(out.dense_shape, [2, 5])
    as_given = sess.run(tf.sparse_merge(ids, values, 5, already_sorted=True))
    np.testing.assert_array_equal(as_given.indices, [[0, 4], [1, 3], [1, 1]])
    second = tf.SparseTensor(indices, [2, 0, 6], [2, 2])
    two = sess.run(tf.sparse_merge([ids, second], values, [5, 7]))
    np.testing.assert_array_equal(two.indices, [[0, 4, 2], [1, 1, 6], [1, 3, 0]])
    np.testing.assert_array_equal(two.dense_shape, [2, 5, 7])


def test_sparse_merge_argument_errors():
    ids = tf.SparseTensor([[0, 0]], [1], [1, 1])
    with pytest.raises(TypeError, match="vocab_size has to be a Tensor or Python int"):
        tf.sparse_merge(ids, ids, 2.5)
    with pytest.raises(ValueError, match="sp_ids and vocab_size have to have equal lengths"):
        tf.sparse_merge([ids, ids], ids, [3])


# --- reset_shape, transpose, concat ----------------------------------------------------------------------------------
def test_sparse_reset_shape_bounding_box_and_new_shape(sess):
    st = tf.SparseTensor([[0, 0, 1], [1, 3, 2]], [1, 2], [2, 5, 6])
    np.testing.assert_array_equal(sess.run(tf.sparse_reset_shape(st)).dense_shape, [2, 4, 3])
    empty = tf.SparseTensor(np.zeros((0, 3), np.int64), np.zeros(0, np.int32), [2, 5, 6])
    np.testing.assert_array_equal(sess.run(tf.sparse.reset_shape(empty)).dense_shape, [0, 0, 0])
    widened = tf.sparse_reset_shape(st, [3, 6, 7])
    assert widened.shape.as_list() == [3, 6, 7]
    with pytest.raises(ValueError, match="should have dimension sizes >= sp_input.shape"):
        tf.sparse_reset_shape(st, [3, 4, 7])
    with pytest.raises(ValueError):
        tf.sparse_reset_shape(st, [3, 7])
    new_shape = tf.placeholder(tf.int64)
    fed = tf.sparse_reset_shape(st, new_shape)
    np.testing.assert_array_equal(sess.run(fed, {new_shape: [2, 5, 9]}).dense_shape, [2, 5, 9])
    with pytest.raises(InvalidArgumentError, match="x <= y did not hold element-wise"):
        sess.run(fed, {new_shape: [2, 4, 9]})
    with pytest.raises(InvalidArgumentError, match="x == y did not hold element-wise"):
        sess.run(fed, {new_shape: [2, 5]})


@pytest.mark.parametrize("perm", [None, [1, 0, 2], [2, 0, 1]])
def test_sparse_transpose_matches_numpy(sess, perm):
    sp, dense = _random_sparse((2, 3, 4), seed=11)
    transposed = tf.sparse_transpose(sp, perm)
    expected = np.transpose(dense, perm)
    assert transposed.shape.as_list() == list(expected.shape)
    out = sess.run(transposed)
    np.testing.assert_array_equal(_densify(out), expected)
    np.testing.assert_array_equal(out.indices, np.argwhere(expected))  # row-major order


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sparse_concat_matches_numpy(sess, axis):
    a, a_dense = _random_sparse((2, 3), seed=12)
    b, b_dense = _random_sparse((2, 3), seed=13)
    joined = tf.sparse.concat(axis, [a, b])
    expected = np.concatenate([a_dense, b_dense], axis)
    assert joined.shape.as_list() == list(expected.shape)
    out = sess.run(joined)
    np.testing.assert_array_equal(_densify(out), expected)
    np.testing.assert_array_equal(out.indices, np.argwhere(expected))


def test_sparse_concat_expands_other_dims_or_reports_them(sess):
    a = tf.SparseTensor([[0, 2], [2, 1]], [1, 2], [3, 3])
    b = tf.SparseTensor([[0, 1]], [3], [2, 4])
    out = sess.run(tf.sparse_concat(1, [a, b], expand_nonconcat_dim=True))
    np.testing.assert_array_equal(out.indices, [[0, 2], [0, 4], [2, 1]])
    np.testing.assert_array_equal(out.dense_shape, [3, 7])
    with pytest.raises(InvalidArgumentError, match="Input shapes must match: expected 3 for dimension 0 but got 2 "
                                                   "at position 1"):
        sess.run(tf.sparse_concat(1, [a, b]))
    assert tf.sparse_concat(0, [a]) is a


# --- slice, split ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("start, size", [([0, 0], [2, 4]), ([1, 3], [5, 5]), ([0, 6], [2, 1])])
def test_sparse_slice_matches_numpy_and_passes_gradients(sess, start, size):
    sp, dense = _random_sparse((3, 7), seed=14)
    sliced = tf.sparse.slice(sp, start, size)
    expected = dense[start[0]:start[0] + size[0], start[1]:start[1] + size[1]]
    out = sess.run(sliced)
    np.testing.assert_array_equal(out.dense_shape, expected.shape)
    np.testing.assert_array_equal(_densify(out), expected)
    nnz, kept = sess.run(sp.values).shape[0], len(out.values)
    if kept:
        assert tf.test.compute_gradient_error(sp.values, (nnz,), sliced.values, (kept,)) < 1e-8


def test_sparse_split_gives_the_first_pieces_one_more(sess):
    sp, dense = _random_sparse((2, 7), seed=15)
    pieces = tf.sparse_split(sp_input=sp, num_split=3, axis=1)
    outs = sess.run(pieces)
    for out, expected in zip(outs, np.split(dense, [3, 5], axis=1)):
        np.testing.assert_array_equal(_densify(out), expected)
    assert [list(out.dense_shape) for out in outs] == [[2, 3], [2, 2], [2, 2]]
    with pytest.raises(ValueError, match="Keyword arguments are required"):
        tf.sparse_split(1, 2, sp)
    with pytest.raises(InvalidArgumentError, match=r"Input num_split should be between 1 and the splitting dimension "
                                                   r"size \(2\), got 3"):
        sess.run(tf.sparse.split(sp_input=sp, num_split=3, axis=0)[0].values)


def test_static_shapes_and_build_time_errors_of_concat_and_reshape():
    a = tf.SparseTensor([[0, 2], [2, 1]], [1, 2], [3, 3])
    b = tf.SparseTensor([[0, 1]], [3], [3, 4])
    joined = tf.sparse_concat(1, [a, b])
    assert joined.indices.shape.as_list() == [3, 2] and joined.values.shape.as_list() == [3]
    assert joined.shape.as_list() == [3, 7]
    with pytest.raises(ValueError, match="SparseConcat"):
        tf.sparse_concat(1, [a, tf.SparseTensor([[0, 0, 0]], [1], [2, 3, 4])])
    with pytest.raises(ValueError, match="At most one dimension can be inferred"):
        tf.sparse_reshape(a, [-1, 3, -1])
