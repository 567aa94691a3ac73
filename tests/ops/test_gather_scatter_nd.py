"""Tests for adplace/ops/scatter_nd_ops.py: tf.gather_nd, tf.scatter_nd and tf.tensor_scatter_update/add/sub
(GatherNd, ScatterNd, TensorScatter*): NumPy reference values, static shapes, TF's errors, and gradients."""

import numpy as np
import pytest

import adplace as tf
from graph_run import gradient_error, run


def dense(value):
    """A fetched gradient as an array: an IndexedSlicesValue summed into its dense shape."""
    if hasattr(value, "indices"):
        out = np.zeros(value.dense_shape, dtype=value.values.dtype)
        np.add.at(out, value.indices, value.values)
        return out
    return value


# --- gather_nd ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64, np.complex64])
def test_gather_nd_elements_of_a_vector(dtype):
    g = tf.gather_nd(np.array([8, 1, 2, 3, 7, 5], dtype=dtype), [[4], [4], [0]])
    assert g.op.type == "GatherNd" and g.op.name == "GatherNd" and g.shape.as_list() == [3]
    np.testing.assert_array_equal(run(g), np.array([7, 7, 8], dtype=dtype))


def test_gather_nd_strings():
    g = tf.gather_nd(tf.constant([b"a", b"b", b"c"]), [[2], [0]])
    assert list(run(g)) == [b"c", b"a"]


def test_gather_nd_scalar_slice_and_higher_rank_indices():
    params = np.array([[-8, -1, -2, -3, -7, -5], [8, 1, 2, 3, 7, 5]], dtype=np.float32).T  # [6, 2]
    scalar = tf.gather_nd(params, [4, 1])
    assert scalar.shape.as_list() == [] and run(scalar) == 7
    row = tf.gather_nd(params, [4])
    assert row.shape.as_list() == [2]
    np.testing.assert_array_equal(run(row), [-7, 7])
    cube = np.stack([params, params * 10], axis=-1)  # [6, 2, 2]
    indices = np.array([[[3], [2], [1]], [[4], [4], [0]]])
    g = tf.gather_nd(cube, indices)
    assert g.shape.as_list() == [2, 3, 2, 2]
    np.testing.assert_array_equal(run(g), cube[[3, 2, 1, 4, 4, 0]].reshape(2, 3, 2, 2))


def test_gather_nd_empty_index_tuples_copy_the_whole_tensor():
    params = np.arange(12.0).reshape(3, 4)
    g = tf.gather_nd(params, tf.constant(np.zeros((2, 0), np.int32)))
    assert g.shape.as_list() == [2, 3, 4]
    np.testing.assert_array_equal(run(g), np.stack([params, params]))


def test_gather_nd_full_tuples_into_a_rank_5_tensor():
    rng = np.random.default_rng(0)
    shape = (10, 20, 5, 1, 17)
    params = rng.random(shape)
    indices = np.stack([rng.integers(0, s, size=200) for s in shape], axis=1).reshape(10, 20, 5)
    g = tf.gather_nd(params, indices)
    assert g.shape.as_list() == [10, 20]
    np.testing.assert_array_equal(run(g), params[tuple(np.moveaxis(indices, -1, 0))])


def test_gather_nd_empty_indices_and_empty_params():
    params = np.ones((3, 3), np.float32)
    for indices, shape in ((np.empty((0, 2), np.int32), [0]), (np.empty((0, 1), np.int32), [0, 3])):
        g = tf.gather_nd(params, indices)
        assert g.shape.as_list() == shape and run(g).shape == tuple(shape)
    assert run(tf.gather_nd(np.empty((0, 3), np.float32), np.empty((0, 2), np.int32))).shape == (0,)
    g = tf.gather_nd(np.empty((0, 3), np.float32), np.zeros((1, 2), np.int32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Requested more than 0 entries, but params is empty"):
        run(g)


def test_gather_nd_static_shapes():
    assert tf.gather_nd(tf.constant([[0, 1, 2]]), tf.placeholder(tf.int32)).shape.ndims is None
    p = tf.placeholder(tf.float32, [None, 4, 5])
    assert tf.gather_nd(p, tf.placeholder(tf.int64, [7, None, 2])).shape.as_list() == [7, None, 5]
    assert tf.gather_nd(p, tf.placeholder(tf.int32, [3, None])).shape.ndims is None
    with pytest.raises(ValueError, match=r"indices.shape\[-1\] must be <= params.rank, but saw indices shape: \[4\] "
                                         r"and params shape: \[1,2,3\] for 'GatherNd(_\d+)?' \(op: 'GatherNd'\)"):
        tf.gather_nd(tf.zeros([1, 2, 3]), [0, 0, 0, 0])
    with pytest.raises(TypeError, match="Tindices"):
        tf.gather_nd([1.0, 2.0], [[0.0]])


def test_gather_nd_out_of_range_index_is_tfs_error():
    i = tf.placeholder(tf.int32)
    g = tf.gather_nd([0, 1, 2], i)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0,1\] = \[7\] does not index into param "
                                                             r"shape \[3\]") as info:
        run(g, {i: [[[0], [7]]]})
    assert info.value.op is g.op
    g2 = tf.gather_nd([[0, 1, 2]], [[[0], [0], [1]]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0,2\] = \[1\] does not index into param "
                                                             r"shape \[1,3\]"):
        run(g2)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = \[-1, 0\] does not index"):
        run(tf.gather_nd(tf.zeros([3, 2]), tf.constant([[0, 0], [-1, 0]], tf.int64)))


def test_gather_nd_batch_dims_is_not_supported():
    with pytest.raises(NotImplementedError, match="batch_dims=1"):
        tf.gather_nd([[1, 2]], [[0]], batch_dims=1)


def test_gather_nd_gradient_of_elements_is_a_scatter():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]], tf.float64)
    y = tf.gather_nd(x, tf.constant([[0, 0], [1, 1]]))
    g, = tf.gradients(y, x, grad_ys=tf.constant([1.0, 2.0], tf.float64))
    assert g.op.type == "ScatterNd"
    np.testing.assert_array_equal(run(g), [[1, 0], [0, 2]])


def test_gather_nd_gradient_of_rank3_elements_with_int64_indices():
    x = tf.constant([[[1, 3], [5, 7]], [[2, 4], [6, 8]]], tf.float64)
    y = tf.gather_nd(x, tf.constant([[[0, 1], [1, 0]], [[0, 0], [1, 1]]], tf.int64))
    g, = tf.gradients(y, x, grad_ys=tf.constant([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], tf.float64))
    np.testing.assert_array_equal(run(g), [[[5, 6], [1, 2]], [[3, 4], [7, 8]]])


def test_gather_nd_gradient_of_whole_rows_is_indexed_slices():
    x = tf.constant(np.tile(np.arange(1.0, 10.0), (6, 1)))
    y = tf.gather_nd(x, tf.constant([[2], [0], [5]]))
    g, = tf.gradients(y, x, grad_ys=tf.constant(np.repeat([[1.0], [2.0], [3.0]], 9, axis=1)))
    assert isinstance(g, tf.IndexedSlices)
    expected = np.zeros((6, 9))
    expected[2], expected[0], expected[5] = 1, 2, 3
    np.testing.assert_array_equal(dense(run(g)), expected)
    np.testing.assert_array_equal(run(tf.convert_to_tensor(g)), expected)


def test_gather_nd_numeric_gradient():
    x = tf.placeholder(tf.float64, [3, 4, 2])
    y = tf.gather_nd(x, [[[0, 1], [2, 3]], [[1, 1], [0, 1]]])
    x0 = np.random.default_rng(1).standard_normal((3, 4, 2))
    assert gradient_error(x, [3, 4, 2], y, [2, 2, 2], x_init_value=x0) < 1e-8


# --- scatter_nd -----------------------------------------------------------------------------------------------------
def test_scatter_nd_adds_repeated_indices():
    s = tf.scatter_nd([[4], [3], [1], [7], [4]], [9.0, 10.0, 11.0, 12.0, 1.0], [8])
    assert s.op.type == "ScatterNd" and s.op.name == "ScatterNd" and s.shape.as_list() == [8]
    assert [t.op.name for t in s.op.inputs] == ["ScatterNd/indices", "ScatterNd/updates", "ScatterNd/shape"]
    np.testing.assert_array_equal(run(s), [0, 11, 0, 10, 10, 0, 0, 12])


def test_scatter_nd_slices_and_names_of_inputs():
    updates = np.array([[[5, 5, 5, 5], [6, 6, 6, 6]], [[7, 7, 7, 7], [8, 8, 8, 8]]], np.int64)
    s = tf.scatter_nd(tf.constant([[0], [2]], tf.int64), updates, tf.constant([4, 2, 4], tf.int64))
    expected = np.zeros((4, 2, 4), np.int64)
    expected[0], expected[2] = updates
    assert s.shape.as_list() == [4, 2, 4]
    np.testing.assert_array_equal(run(s), expected)


def test_scatter_nd_strings_start_empty_and_repeats_concatenate():
    words = tf.scatter_nd([[2], [0], [2]], tf.constant([b"up", b"x", b"on"]), [4])
    rows = tf.scatter_nd([[1]], tf.constant([[b"p", b"q"]]), [2, 2])
    got_words, got_rows = run([words, rows])
    assert got_words.tolist() == [b"x", b"", b"upon", b""]
    assert got_rows.tolist() == [[b"", b""], [b"p", b"q"]]


def test_scatter_nd_static_shape_errors():
    with pytest.raises(ValueError, match=r"The outer 1 dimensions of indices\.shape=\[2,1\] must match the outer 1 "
                                         r"dimensions of updates\.shape=\[3\]: Dimension 0 in both shapes must be "
                                         r"equal, but are 2 and 3\. Shapes are \[2\] and \[3\]\. for 'ScatterNd'"):
        tf.scatter_nd([[0], [1]], [1.0, 2.0, 3.0], [4])
    with pytest.raises(ValueError, match=r"The inner 1 dimensions of output\.shape=\[4,3\] must match the inner 1 "
                                         r"dimensions of updates\.shape=\[2,2\]: Dimension 0 in both shapes must be "
                                         r"equal, but are 3 and 2"):
        tf.scatter_nd([[0], [1]], [[1.0, 2.0], [3.0, 4.0]], [4, 3])
    with pytest.raises(ValueError, match=r"The inner 1 dimensions of input\.shape=\[4,3\] must match the inner 1 "
                                         r"dimensions of updates\.shape=\[2,2\]: .* for 'TensorScatterAdd'"):
        tf.tensor_scatter_add(tf.zeros([4, 3]), [[0], [1]], [[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match=r"The outer 2 dimensions of indices\.shape=\[3,2,2\] must match the outer 2 "
                                         r"dimensions of updates\.shape=\[2,2,2\]"):
        tf.tensor_scatter_update(tf.zeros([2, 2, 2], tf.int32), tf.zeros([3, 2, 2], tf.int32),
                                 tf.zeros([2, 2, 2], tf.int32))
    with pytest.raises(ValueError, match="Indices and updates specified for empty output shape"):
        tf.scatter_nd([[0]], [1.0], [0])
    with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
        tf.scatter_nd(0, [1.0], [3])
    assert tf.scatter_nd([[0]], [[1.0, 2.0]], tf.placeholder(tf.int32, [2])).shape.as_list() == [None, None]


def test_scatter_nd_out_of_range_and_shape_mismatch_at_run_time():
    i = tf.placeholder(tf.int32)
    s = tf.scatter_nd(i, [1.0, 2.0], [3, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = \[5, 0\] does not index into shape "
                                                             r"\[3,2\]") as info:
        run(s, {i: [[0, 0], [5, 0]]})
    assert info.value.op is s.op
    u = tf.placeholder(tf.float32)
    s2 = tf.scatter_nd([[0], [1]], u, [3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Outer dimensions of indices and update must match"):
        run(s2, {u: [1.0, 2.0, 3.0]})


def test_scatter_nd_gradient_is_a_gather_nd():
    u = tf.placeholder(tf.float64, [3, 2])
    s = tf.scatter_nd([[1], [3], [1]], u, [4, 2])
    g, = tf.gradients(s, u, grad_ys=tf.constant(np.arange(8.0).reshape(4, 2)))
    assert g.op.type == "GatherNd"
    np.testing.assert_array_equal(run(g, {u: np.zeros((3, 2))}), [[2, 3], [6, 7], [2, 3]])
    assert gradient_error(u, [3, 2], s, [4, 2], x_init_value=np.ones((3, 2))) < 1e-8


# --- tensor_scatter_update / add / sub ------------------------------------------------------------------------------
def test_tensor_scatter_ops_write_a_copy():
    t = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
    indices, updates = [[4], [0], [4]], [10.0, 20.0, 30.0]
    upd, add, sub = (tf.tensor_scatter_update(t, indices, updates), tf.tensor_scatter_add(t, indices, updates),
                     tf.tensor_scatter_sub(t, indices, updates))
    assert [o.op.type for o in (upd, add, sub)] == ["TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub"]
    got = run([upd, add, sub, t])
    np.testing.assert_array_equal(got[0], [20, 2, 3, 4, 30])  # the last write of a repeated index wins
    np.testing.assert_array_equal(got[1], [21, 2, 3, 4, 45])
    np.testing.assert_array_equal(got[2], [-19, 2, 3, 4, -35])
    np.testing.assert_array_equal(got[3], [1, 2, 3, 4, 5])
    assert tf.tensor_scatter_nd_update is tf.tensor_scatter_update and tf.tensor_scatter_nd_add is tf.tensor_scatter_add
    assert tf.tensor_scatter_nd_sub is tf.tensor_scatter_sub


def test_tensor_scatter_slices_and_errors():
    t = np.zeros((3, 2), np.int32)
    got = run(tf.tensor_scatter_add(t, [[2], [0]], [[1, 2], [3, 4]]))
    np.testing.assert_array_equal(got, [[3, 4], [0, 0], [1, 2]])
    with pytest.raises(TypeError, match="does not match type"):
        tf.tensor_scatter_update(tf.zeros([3]), [[0]], tf.constant([1], tf.int32))
    i = tf.placeholder(tf.int64)
    op = tf.tensor_scatter_update(tf.zeros([3]), i, [1.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[0\] = \[3\] does not index into shape \[3\]"):
        run(op, {i: [[3]]})


def test_tensor_scatter_gradients():
    t = tf.constant(np.arange(5.0))
    u = tf.placeholder(tf.float64, [2])
    indices = [[1], [3]]
    feed = {u: [7.0, 8.0]}
    dy = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0], tf.float64)
    expected = {"update": ([1, 0, 3, 0, 5], [2, 4]), "add": ([1, 2, 3, 4, 5], [2, 4]),
                "sub": ([1, 2, 3, 4, 5], [-2, -4])}
    for kind, fn in (("update", tf.tensor_scatter_update), ("add", tf.tensor_scatter_add),
                     ("sub", tf.tensor_scatter_sub)):
        y = fn(t, indices, u)
        dt, du = run(tf.gradients(y, [t, u], grad_ys=dy), feed)
        np.testing.assert_array_equal(dt, expected[kind][0])
        np.testing.assert_array_equal(du, expected[kind][1])
        assert gradient_error(u, [2], y, [5], x_init_value=np.array([7.0, 8.0])) < 1e-8
