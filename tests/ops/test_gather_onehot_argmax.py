"""Tests for tf.gather (GatherV2), tf.unsorted_segment_sum, tf.one_hot, tf.argmax/argmin and tf.where_v2: NumPy
reference values, static shapes (unknown dims too), TF's errors and numerical gradients."""

import numpy as np
import pytest

import adplace as tf
from graph_run import gradient_error, run


# --- gather ---------------------------------------------------------------------------------------------------------
def test_gather_rows_names_and_shape():
    params = np.arange(15.0).reshape(5, 3)
    g = tf.gather(params, [4, 0, 4])
    assert g.op.type == "GatherV2" and g.op.name == "GatherV2"
    assert [t.op.name for t in g.op.inputs] == ["GatherV2/params", "GatherV2/indices", "GatherV2/axis"]
    assert g.shape.as_list() == [3, 3] and g.dtype == tf.float64
    np.testing.assert_array_equal(run(g), params[[4, 0, 4]])


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_gather_along_any_axis_with_matrix_indices(axis):
    params = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
    indices = np.array([[1, 0], [1, 1]], dtype=np.int32) % 2
    g = tf.gather(params, indices, axis=axis)
    expected = np.take(params, indices, axis=axis)
    assert g.shape.as_list() == list(expected.shape)
    np.testing.assert_array_equal(run(g), expected)


def test_gather_static_shapes_with_unknown_dims():
    p = tf.placeholder(tf.float32, [None, 7])
    i = tf.placeholder(tf.int64, [None])
    assert tf.gather(p, i).shape.as_list() == [None, 7]
    assert tf.gather(p, i, axis=1).shape.as_list() == [None, None]
    assert tf.gather(tf.placeholder(tf.float32), i).shape.ndims is None
    assert tf.gather(p, i, axis=tf.placeholder(tf.int32, [])).shape.as_list() == [None, None]


def test_gather_scalar_index_drops_the_axis():
    g = tf.gather([[1, 2], [3, 4]], 1, axis=1)
    assert g.shape.as_list() == [2]
    np.testing.assert_array_equal(run(g), [2, 4])


def test_gather_out_of_range_index_is_tfs_runtime_error():
    p = tf.placeholder(tf.int64, [None])
    g = tf.gather(tf.constant([1.0, 2.0, 3.0, 4.0, 5.0]), p)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 7 is not in \[0, 5\)") as info:
        run(g, {p: [0, 7]})
    assert info.value.op is g.op
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1,0\] = -1 is not in \[0, 5\)"):
        run(tf.gather(tf.constant([1.0, 2.0, 3.0, 4.0, 5.0]), [[0], [-1]]))


def test_gather_build_time_errors():
    with pytest.raises(TypeError, match="Value passed to parameter 'indices' has DataType float32"):
        tf.gather([1, 2], [0.0])
    with tf.Graph().as_default(), pytest.raises(ValueError, match=r"Shape must be at least rank 3 but is rank 2 for "
                                                                  r"'GatherV2' \(op: "
                                         r"'GatherV2'\) with input shapes: \[2,2\], \[1\], \[\] and with computed "
                                         r"input tensors: input\[2\] = <2>\."):
        tf.gather([[1, 2], [3, 4]], [0], axis=2)


def test_gather_gradient_is_indexed_slices_summed_when_densified():
    params = tf.constant(np.arange(6.0).reshape(3, 2))
    g = tf.gather(params, [2, 0, 2])
    grad = tf.gradients(tf.reduce_sum(g * g), params)[0]
    assert isinstance(grad, tf.IndexedSlices) and grad.shape.as_list() == [3, 2]
    values, indices, dense_shape = run([grad.values, grad.indices, grad.dense_shape])
    np.testing.assert_allclose(values, [[8.0, 10.0], [0.0, 2.0], [8.0, 10.0]])
    assert indices.tolist() == [2, 0, 2] and dense_shape.tolist() == [3, 2]
    dense = tf.convert_to_tensor(grad)
    assert dense.op.type == "UnsortedSegmentSum" and dense.shape.as_list() == [3, 2]
    np.testing.assert_allclose(run(dense), [[0.0, 2.0], [0.0, 0.0], [16.0, 20.0]])


@pytest.mark.parametrize("axis,indices", [(0, [[1, 1], [0, 2]]), (1, [3, 0, 3]), (2, [[1], [0]]), (-1, 1)])
def test_gather_gradient_matches_numerical(axis, indices):
    x = tf.placeholder(tf.float64, [3, 4, 2])
    y = tf.gather(x, indices, axis=axis)
    x0 = np.random.default_rng(0).normal(size=(3, 4, 2))
    assert gradient_error(x, [3, 4, 2], y, y.shape.as_list(), x0) < 1e-8


def test_gather_gradient_with_unknown_row_count():
    x = tf.placeholder(tf.float64, [None, 2])
    grad = tf.gradients(tf.reduce_sum(tf.gather(x, [1, 1])), x)[0]
    with pytest.warns(UserWarning, match="dense Tensor of unknown shape"):
        dense = tf.convert_to_tensor(grad)
    np.testing.assert_allclose(run(dense, {x: np.zeros((3, 2))}), [[0, 0], [2, 2], [0, 0]])


def test_gather_on_a_virtual_gpu_matches_the_cpu():
    params = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    with tf.device("/gpu:0"):
        g = tf.gather(params, [3, 1])
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        np.testing.assert_array_equal(sess.run(g), params[[3, 1]])


# --- unsorted_segment_sum -------------------------------------------------------------------------------------------
def test_unsorted_segment_sum_values_shape_and_negative_ids_dropped():
    data = np.arange(12.0).reshape(4, 3)
    s = tf.unsorted_segment_sum(data, [2, 0, 2, -1], 3)
    assert s.op.type == "UnsortedSegmentSum" and s.shape.as_list() == [3, 3]
    np.testing.assert_allclose(run(s), [data[1], [0, 0, 0], data[0] + data[2]])


def test_unsorted_segment_sum_matrix_ids_and_errors():
    data = np.arange(8.0).reshape(2, 2, 2)
    s = tf.unsorted_segment_sum(data, [[0, 1], [1, 1]], 2)
    assert s.shape.as_list() == [2, 2]
    np.testing.assert_allclose(run(s), [data[0, 0], data[0, 1] + data[1, 0] + data[1, 1]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"segment_ids\[0,0\] = 7 is out of range \[0, 2\)"):
        run(tf.unsorted_segment_sum([[17.0]], [[7]], 2))
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 2 and 3 for 'UnsortedSegmentSum\w*' "
                                         r"\(op: 'UnsortedSegmentSum'\) with input shapes: \[2,2,2\], \[3\], \[\]\."):
        tf.unsorted_segment_sum(data, [0, 1, 1], 2)
    assert tf.unsorted_segment_sum(tf.placeholder(tf.float32, [None, 5]), tf.placeholder(tf.int32, [None]),
                                   tf.placeholder(tf.int32, [])).shape.as_list() == [None, 5]


@pytest.mark.parametrize("seed", range(6))
def test_unsorted_segment_sum_adds_each_row_in_order_bit_for_bit(seed):
    """Against out[id] += row for each row in turn, from +0.0: repeated ids, dropped negative ones (seeds 0-2) or
    none dropped (3-5), and -0.0 rows, whose lone sum is +0.0."""
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((40, 6)).astype(np.float32)
    data[::7] = -0.0
    ids = rng.integers(-2 if seed < 3 else 0, 12, 40).astype(np.int32)
    expected = np.zeros((12, 6), np.float32)
    for i, row in zip(ids, data):
        if i >= 0:
            expected[i] = expected[i] + row
    got = run(tf.unsorted_segment_sum(data, ids, 12))
    np.testing.assert_array_equal(got, expected)
    assert (np.signbit(got) == np.signbit(expected)).all()


def test_unsorted_segment_sum_gradient():
    x = tf.placeholder(tf.float64, [4, 2])
    y = tf.unsorted_segment_sum(x, [1, -1, 0, 1], 3)
    assert gradient_error(x, [4, 2], y, [3, 2], np.arange(8.0).reshape(4, 2)) < 1e-8


# --- where_v2 -------------------------------------------------------------------------------------------------------
def test_where_v2_broadcasts_all_three():
    w = tf.where_v2([True, False], 1.0, [[2.0], [3.0]])
    assert w.op.type == "SelectV2" and w.shape.as_list() == [2, 2]
    np.testing.assert_array_equal(run(w), [[1.0, 2.0], [1.0, 3.0]])
    coords = tf.where_v2([[True, False], [False, True]])
    assert coords.op.type == "Where" and coords.dtype == tf.int64
    np.testing.assert_array_equal(run(coords), [[0, 0], [1, 1]])


def test_where_v2_errors():
    with pytest.raises(ValueError, match="x and y must both be non-None or both be None."):
        tf.where_v2([True], 1.0)
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3 for 'SelectV2'"):
        tf.where_v2([True, False], [1.0, 2.0, 3.0], 0.0)
    with pytest.raises(TypeError, match="Input 'condition' of 'SelectV2' Op has type float32"):
        tf.where_v2([1.0], 1.0, 2.0)
    c = tf.placeholder(tf.bool)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"condition \[2\], then \[3\], and else \[\] must be "
                                                             r"broadcastable"):
        run(tf.where_v2(c, [1.0, 2.0, 3.0], 0.0), {c: [True, False]})


def test_where_v2_gradient_sums_over_broadcast_axes():
    x = tf.placeholder(tf.float64, [3])
    y = tf.placeholder(tf.float64, [2, 1])
    cond = tf.constant([[True, False, True], [False, False, True]])
    out = tf.where_v2(cond, x, y)
    gx, gy = tf.gradients(tf.reduce_sum(out), [x, y])
    values = run([gx, gy], {x: np.ones(3), y: np.ones((2, 1))})
    np.testing.assert_allclose(values[0], [1.0, 0.0, 2.0])
    np.testing.assert_allclose(values[1], [[1.0], [2.0]])
    out_x = tf.where_v2(cond, x, np.ones((2, 1)))
    assert gradient_error(x, [3], out_x, [2, 3], np.arange(3.0)) < 1e-8


# --- argmax / argmin ------------------------------------------------------------------------------------------------
def test_argmax_argmin_values_dtype_names_and_first_tie():
    x = np.array([[1, 9, 9], [8, 2, 0]], dtype=np.float32)
    amax, amin = tf.argmax(x, axis=1), tf.argmin(x, 0)
    assert amax.op.type == "ArgMax" and amax.op.name == "ArgMax" and amax.dtype == tf.int64
    assert [t.op.name for t in amax.op.inputs] == ["ArgMax/input", "ArgMax/dimension"]
    assert amax.shape.as_list() == [2] and amin.shape.as_list() == [3]
    values = run([amax, amin])
    np.testing.assert_array_equal(values[0], [1, 0])
    np.testing.assert_array_equal(values[1], [0, 1, 1])
    default = tf.argmax(x)  # axis None: 0
    np.testing.assert_array_equal(run(default), [1, 0, 0])
    legacy = tf.argmax(x, dimension=-1, output_type=tf.int32)
    assert legacy.dtype == tf.int32
    np.testing.assert_array_equal(run(legacy), [1, 0])


def test_argmax_shapes_and_errors():
    p = tf.placeholder(tf.float32, [None, 4, 5])
    assert tf.argmax(p, 1).shape.as_list() == [None, 5]
    assert tf.argmax(p, tf.placeholder(tf.int32, [])).shape.as_list() == [None, None]
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dimension'"):
        tf.argmax(p, axis=1, dimension=1)
    with pytest.raises(ValueError, match=r"Expected dimension in the range \[-3, 3\), but got 3 for 'ArgMax\w*'"):
        tf.argmax(p, 3)
    with pytest.raises(TypeError, match="parameter 'output_type' has DataType float32"):
        tf.argmax(p, 1, output_type=tf.float32)
    e = tf.placeholder(tf.float32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Reduction axis 0 is empty in shape \[0\]"):
        run(tf.argmax(e, 0), {e: np.zeros(0)})


def test_argmax_is_not_differentiable():
    x = tf.placeholder(tf.float32, [3])
    assert tf.gradients(tf.cast(tf.argmax(x), tf.float32), x) == [None]


# --- one_hot --------------------------------------------------------------------------------------------------------
def test_one_hot_default_float32_last_axis_and_out_of_range_rows():
    h = tf.one_hot([0, 2, -1, 3], 3)
    assert h.op.type == "OneHot" and h.op.name == "one_hot" and h.dtype == tf.float32
    assert h.shape.as_list() == [4, 3]
    np.testing.assert_array_equal(run(h), [[1, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_one_hot_axis_matches_numpy(axis):
    indices = np.array([[0, 1], [2, 1]])
    h = tf.one_hot(indices, 4, on_value=5, off_value=-1, axis=axis)
    expected = np.where(np.expand_dims(indices, axis if axis != -1 else 2) ==
                        np.arange(4).reshape([4 if i == (axis % 3) else 1 for i in range(3)]), 5, -1)
    assert h.dtype == tf.int32 and h.shape.as_list() == list(expected.shape)
    np.testing.assert_array_equal(run(h), expected)


def test_one_hot_dtype_inference_and_errors():
    assert tf.one_hot([1], 2, off_value=0.5).dtype == tf.float32
    assert tf.one_hot([1], 2, dtype=tf.int64).dtype == tf.int64
    assert tf.one_hot([1], 2, on_value=np.float64(1), dtype=tf.float64).dtype == tf.float64
    with pytest.raises(TypeError, match=r"dtype <dtype: 'int32'> of on_value does not match dtype parameter "
                                        r"<dtype: 'float32'>"):
        tf.one_hot([1], 2, on_value=1, dtype=tf.float32)
    with pytest.raises(TypeError, match=r"dtype <dtype: 'float32'> of on_value does not match dtype <dtype: 'int32'> "
                                        r"of off_value"):
        tf.one_hot([1], 2, on_value=1.0, off_value=0)
    with pytest.raises(ValueError, match="axis must be >= -1"):
        tf.one_hot([1], 2, axis=-2)
    with pytest.raises(TypeError, match="parameter 'indices' has DataType float32"):
        tf.one_hot([1.0], 2)
    d = tf.placeholder(tf.int32, [])
    unknown_depth = tf.one_hot(tf.placeholder(tf.int64, [None]), d)
    assert unknown_depth.shape.as_list() == [None, None]
    with pytest.raises(tf.errors.InvalidArgumentError, match="depth must be non-negative, got: -1"):
        run(unknown_depth, {d: -1, unknown_depth.op.inputs[0]: [0]})


def test_one_hot_has_no_gradient():
    on = tf.placeholder(tf.float32, [])
    assert tf.gradients(tf.one_hot([0, 1], 2, on_value=on, off_value=0.0), on) == [None]


def test_gather_batch_dims_values_shapes_and_gradient():
    rows = tf.gather([[10, 11, 12, 13], [20, 21, 22, 23]], [[2, 1], [0, 3]], batch_dims=1)
    assert rows.op.get_attr("batch_dims") == 1 and rows.shape.as_list() == [2, 2]
    np.testing.assert_array_equal(run(rows), [[12, 11], [20, 23]])
    params = np.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    indices = np.arange(2 * 6).reshape(2, 6) % 4
    inner = tf.gather(params, indices, axis=2, batch_dims=1)
    assert inner.shape.as_list() == [2, 3, 6, 5]
    np.testing.assert_array_equal(run(inner), np.stack([np.take(params[b], indices[b], axis=1) for b in range(2)]))
    np.testing.assert_array_equal(run(tf.gather([[1, 2], [3, 4]], [[1], [0]], batch_dims=-1)), [[2], [3]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1,0\] = 5 is not in \[0, 2\)"):
        run(tf.gather([[1, 2], [3, 4]], [[1], [5]], batch_dims=1))
    with pytest.raises(ValueError, match=r"batch_dims \(2\) must be less than or equal to axis \(1\)"):
        tf.gather(params, indices[..., None], axis=1, batch_dims=2)
    p = tf.placeholder(tf.float64, [2, 3, 4, 5])
    g = tf.gather(p, indices, axis=2, batch_dims=1)
    with tf.Session():
        assert tf.test.compute_gradient_error(p, [2, 3, 4, 5], g, [2, 3, 6, 5], x_init_value=params * 1.0) < 1e-8
