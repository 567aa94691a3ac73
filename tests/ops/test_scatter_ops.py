"""Tests for the sparse variable writes of adplace.ops.state_ops (kernels: adplace.kernels.scatter): tf.scatter_*,
tf.scatter_nd_*, tf.batch_scatter_update, tf.count_up_to and the matching Variable methods. NumPy loops are the
reference: one update per index occurrence, in order, as TF's CPU kernels apply them."""
import numpy as np
import pytest

import adplace as tf

SCATTERS = {  # tf function -> the NumPy update of one row
    "scatter_update": lambda old, new: new, "scatter_add": np.add, "scatter_sub": np.subtract,
    "scatter_mul": np.multiply, "scatter_div": np.divide, "scatter_min": np.minimum, "scatter_max": np.maximum,
}


def _numpy_scatter(combine, ref, indices, updates):
    out = ref.copy()
    updates = np.broadcast_to(updates, indices.shape + ref.shape[1:])
    for at, row in np.ndenumerate(indices):
        out[row] = combine(out[row], updates[at])
    return out


def _run(*fetches, init=True):
    with tf.Session() as sess:
        if init:
            sess.run(tf.global_variables_initializer())
        return sess.run(list(fetches))


def _updates(rng, shape, dtype):
    values = rng.uniform(0.5, 2.0, size=shape) * rng.choice([-1, 1], size=shape)  # no zeros: ScatterDiv divides
    return values.astype(dtype) if dtype != np.int32 else np.where(values < 0, -2, 3).astype(dtype)


# --- Scatter*: values ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op_name, dtype", [(op, dtype) for op in sorted(SCATTERS)
                                            for dtype in (np.float32, np.float64, np.int32)
                                            if (op, dtype) != ("scatter_div", np.int32)])  # C division: tested below
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("indices_shape, row_shape", [((), ()), ((4,), (3,)), ((2, 3), ()), ((2, 2), (2, 3))])
def test_scatter_matches_numpy_with_repeated_indices(op_name, dtype, index_dtype, indices_shape, row_shape):
    rng = np.random.default_rng(len(indices_shape) * 7 + len(row_shape))
    ref = _updates(rng, (5,) + row_shape, dtype)
    indices = rng.integers(0, 3, size=indices_shape).astype(index_dtype)  # rows 0-2 of 5: repeats are certain
    updates = _updates(rng, indices_shape + row_shape, dtype)
    v = tf.Variable(ref)
    out, after = _run(getattr(tf, op_name)(v, indices, updates), v.read_value())
    expected = _numpy_scatter(SCATTERS[op_name], ref, indices, updates)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    np.testing.assert_allclose(after, expected, rtol=1e-6)
    assert out.dtype == dtype


@pytest.mark.parametrize("op_name", sorted(SCATTERS))
def test_scatter_of_a_scalar_update_writes_every_row_named(op_name):
    ref = np.arange(1.0, 13.0).reshape(4, 3)
    v = tf.Variable(ref)
    out, = _run(getattr(tf, op_name)(v, [2, 0, 2], 1.5))
    np.testing.assert_allclose(out, _numpy_scatter(SCATTERS[op_name], ref, np.array([2, 0, 2]), np.float64(1.5)))


def test_scatter_update_of_a_repeated_index_keeps_the_last_update():
    v = tf.Variable([0.0, 0.0, 0.0])
    out, = _run(tf.scatter_update(v, [1, 2, 1, 1], [5.0, 6.0, 7.0, 8.0]))
    np.testing.assert_array_equal(out, [0.0, 8.0, 6.0])


def test_scatter_add_of_many_repeats_adds_each_one():
    updates = np.random.default_rng(0).random(10_000)
    v = tf.Variable(np.zeros([2, 2]))
    out, = _run(tf.scatter_add(v, np.ones(10_000, np.int32), np.stack([updates, -updates], axis=1)))
    np.testing.assert_allclose(out, [[0.0, 0.0], [updates.sum(), -updates.sum()]])


def test_scatter_div_of_integers_truncates_toward_zero_like_c():
    v = tf.Variable(np.array([-7, 7, -7, 9], np.int32))
    out, = _run(tf.scatter_div(v, [0, 1, 2, 3, 3], np.array([2, -2, 7, 2, 2], np.int32)))
    np.testing.assert_array_equal(out, [-3, -3, -1, 2])


def test_scatter_update_of_bools_and_scalar_indices():
    v = tf.Variable([True, False])
    first = tf.scatter_update(v, 1, True)
    with tf.control_dependencies([first]):
        second = tf.scatter_update(v, tf.constant(0, tf.int64), False)
    out, = _run(second)
    np.testing.assert_array_equal(out, [False, True])


def test_scatter_returns_the_ref_and_fetching_it_gives_the_new_value():
    v = tf.Variable([1.0, 2.0, 3.0], name="v")
    add = tf.scatter_add(v, [0], [10.0])
    assert add.dtype == tf.float32_ref and add.op.type == "ScatterAdd" and add.op.name == "ScatterAdd"
    assert add.shape.as_list() == [3]
    doubled = add * 2.0  # a reader after the write
    out, twice = _run(add, doubled)
    np.testing.assert_array_equal(out, [11.0, 2.0, 3.0])
    np.testing.assert_array_equal(twice, [22.0, 4.0, 6.0])


def test_fetched_values_do_not_alias_the_variable():
    v = tf.Variable([1.0, 2.0])
    add = tf.scatter_add(v, [1], [1.0])
    with tf.Session() as sess:
        sess.run(v.initializer)
        out = sess.run(add)
        out[:] = 100.0
        np.testing.assert_array_equal(sess.run(v), [1.0, 3.0])


@pytest.mark.parametrize("fn, locking", [(tf.scatter_update, True), (tf.scatter_add, False),
                                         (tf.scatter_sub, False), (tf.scatter_mul, False), (tf.scatter_div, False),
                                         (tf.scatter_min, False), (tf.scatter_max, False),
                                         (tf.scatter_nd_update, True), (tf.scatter_nd_add, False),
                                         (tf.scatter_nd_sub, False)])
def test_use_locking_defaults_are_tfs(fn, locking):
    v = tf.Variable([1.0, 2.0])
    indices = [[0]] if "nd" in fn.__name__ else [0]
    op = fn(v, indices, [1.0], name="w").op
    assert op.get_attr("use_locking") is locking and op.name == "w"
    assert op.get_attr("Tindices") == tf.int32 and op.get_attr("T") == tf.float32
    assert fn(v, indices, [1.0], use_locking=not locking).op.get_attr("use_locking") is (not locking)


def test_scatter_ops_are_not_differentiable():
    v = tf.Variable([1.0, 2.0])
    updates = tf.constant([3.0])
    for out in (tf.scatter_add(v, [0], updates), tf.scatter_nd_update(v, [[1]], updates)):
        assert tf.gradients(tf.reduce_sum(out), updates) == [None]


# --- Scatter*: errors ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("op_name", sorted(SCATTERS))
@pytest.mark.parametrize("indices, message", [([-1, 0, 5], r"indices\[0\] = -1 is not in \[0, 6\)"),
                                              ([2, 0, 6], r"indices\[2\] = 6 is not in \[0, 6\)")])
def test_scatter_index_out_of_range_is_an_error_and_writes_nothing(op_name, indices, message):
    _assert_bad_indices_write_nothing(op_name, indices, message)


def _assert_bad_indices_write_nothing(op_name: str, indices, message: str) -> None:
    params = np.array([1, 2, 3, 4, 5, 6], np.float32)
    v = tf.Variable(params)
    scatter = getattr(tf, op_name)(v, np.array(indices), np.array([-3, -4, -5], np.float32))
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(scatter)
        np.testing.assert_array_equal(sess.run(v), params)


def test_scatter_out_of_range_names_the_index_of_a_matrix_of_indices():
    v = tf.Variable(np.zeros([5, 2], np.float32))
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1,0\] = 7 is not in \[0, 5\)"):
            sess.run(tf.scatter_add(v, [[1, 2], [7, 0]], np.ones([2, 2, 2], np.float32)))


def test_a_failed_step_undoes_the_writes_made_before_the_bad_scatter():
    w, v = tf.Variable(1.0, name="w"), tf.Variable([1.0, 2.0], name="v")
    bump = tf.assign_add(w, 1.0)
    with tf.control_dependencies([bump]):
        bad = tf.scatter_add(v, [0, 9], [1.0, 1.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices\[1\] = 9 is not in \[0, 2\)"):
            sess.run(bad)
        assert sess.run(w) == 1.0
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0])


def test_scatter_shape_errors_at_graph_construction():
    v = tf.Variable(np.zeros([5, 3], np.float32))
    with pytest.raises(ValueError, match=r"Dimension 1 in both shapes must be equal, but are 2 and 3.*for "
                                         r"'ScatterAdd' \(op: 'ScatterAdd'\) with input shapes: \[5,3\], \[2\], "
                                         r"\[2,2\]\."):
        tf.scatter_add(v, [0, 1], np.zeros([2, 2], np.float32))
    with pytest.raises(ValueError, match="Shapes must be equal rank, but are 1 and 2"):
        tf.scatter_update(v, [0], np.zeros([3], np.float32))


def test_scatter_dtype_errors_at_graph_construction():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(TypeError, match="'ScatterAdd' Op requires that input 'ref' be a mutable tensor"):
        tf.scatter_add(v.value(), [0], [1.0])
    with pytest.raises(TypeError, match="Input 'updates' of 'ScatterSub' Op has type float64 that does not match "
                                        "type float32 of argument 'ref'"):
        tf.scatter_sub(v, [0], tf.constant([1.0], tf.float64))
    with pytest.raises(TypeError, match="parameter 'Tindices' has DataType float32 not in list of allowed values"):
        tf.scatter_mul(v, tf.constant([0.0]), [1.0])
    with pytest.raises(TypeError, match="parameter 'T' has DataType bool not in list"):
        tf.scatter_max(tf.Variable([True]), [0], [False])


def test_scatter_shape_errors_of_unknown_shapes_are_invalid_argument_at_run_time():
    v = tf.Variable(np.zeros([4, 2], np.float32))
    indices, updates = tf.placeholder(tf.int32), tf.placeholder(tf.float32)
    add = tf.scatter_add(v, indices, updates)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Must have updates.shape = indices.shape \+ params.shape\[1:\] or updates.shape = "
                                 r"\[\], got updates.shape \[2,3\], indices.shape \[2\], params.shape \[4,2\]"):
            sess.run(add, {indices: [0, 1], updates: np.zeros([2, 3])})
        np.testing.assert_array_equal(sess.run(add, {indices: [0, 0], updates: np.ones([2, 2])}),
                                      [[2.0, 2.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])


def test_scatter_into_an_uninitialized_variable_is_a_failed_precondition():
    v = tf.Variable([1.0, 2.0], name="fresh")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="Attempting to use uninitialized value fresh"):
            sess.run(tf.scatter_add(v, [0], [1.0]))


# --- ScatterNd* ----------------------------------------------------------------------------------------------------
ND = {"scatter_nd_update": lambda old, new: new, "scatter_nd_add": np.add, "scatter_nd_sub": np.subtract}


def _numpy_scatter_nd(combine, ref, indices, updates):
    out = ref.copy()
    k = indices.shape[-1]
    flat_updates = updates.reshape((-1,) + ref.shape[k:])
    for i, at in enumerate(indices.reshape(-1, k)):
        out[tuple(at)] = combine(out[tuple(at)], flat_updates[i])
    return out


@pytest.mark.parametrize("op_name", sorted(ND))
@pytest.mark.parametrize("ref_shape, indices_shape", [((3, 6), (4, 1)), ((3, 6), (4, 2)), ((3, 6, 9), (2, 3, 2)),
                                                      ((3, 6, 9), (5, 3))])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_scatter_nd_matches_numpy_with_repeated_indices(op_name, ref_shape, indices_shape, index_dtype):
    rng = np.random.default_rng(sum(ref_shape) + sum(indices_shape))
    k = indices_shape[-1]
    coords = rng.integers(0, 2, size=indices_shape)  # coordinates 0-1 only: repeats are certain
    indices = coords.astype(index_dtype)
    updates = rng.standard_normal(indices_shape[:-1] + ref_shape[k:])
    ref = rng.standard_normal(ref_shape)
    v = tf.Variable(ref)
    out, = _run(getattr(tf, op_name)(v, indices, updates))
    np.testing.assert_allclose(out, _numpy_scatter_nd(ND[op_name], ref, indices, updates))


def test_scatter_nd_update_of_single_elements_and_rows():
    v = tf.Variable([0, 0, 0, 0, 0, 0, 0, 0])
    m = tf.Variable([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    out, rows = _run(tf.scatter_nd_update(v, [[4], [3], [1], [7]], [9, 10, 11, 12]),
                     tf.scatter_nd_update(m, [[1]], [[11.0, 12.0]]))
    np.testing.assert_array_equal(out, [0, 11, 0, 10, 9, 0, 0, 12])
    np.testing.assert_array_equal(rows, [[0.0, 0.0], [11.0, 12.0], [0.0, 0.0]])


def test_scatter_nd_update_and_scatter_update_of_strings():
    ref = tf.Variable(["qq", "ww", "ee", "rr", "", "", "", ""])
    nd = tf.scatter_nd_update(ref, [[4], [3], [1], [7]], ["aa", "dd", "cc", "bb"])
    with tf.control_dependencies([nd]):
        rows = tf.scatter_update(ref, [0, 0], ["xx", "zz"])
    out, = _run(rows)
    assert out.tolist() == [b"zz", b"cc", b"ee", b"dd", b"aa", b"", b"", b"bb"]


def test_scatter_nd_add_and_sub_of_the_tf_docs_example():
    ref = [1, 2, 3, 4, 5, 6, 7, 8]
    add, sub = _run(tf.scatter_nd_add(tf.Variable(ref), [[4], [3], [1], [7]], [9, 10, 11, 12]),
                    tf.scatter_nd_sub(tf.Variable(ref), [[4], [3], [1], [7]], [9, 10, 11, 12]))
    np.testing.assert_array_equal(add, [1, 13, 3, 14, 14, 6, 7, 20])
    np.testing.assert_array_equal(sub, [1, -9, 3, -6, -4, 6, 7, -4])  # the TF docstring says -6 at 4


def test_scatter_nd_with_extra_index_dimensions_and_shape():
    v = tf.Variable(tf.zeros([2, 2], tf.int32))
    update = tf.scatter_nd_update(v, tf.zeros([1, 1, 2], tf.int32), tf.zeros([1, 1], tf.int32))
    assert update.shape.as_list() == [2, 2]
    out, = _run(update)
    np.testing.assert_array_equal(out, np.zeros([2, 2]))


@pytest.mark.parametrize("op_name", sorted(ND))
@pytest.mark.parametrize("indices, message", [([[-1], [0], [5]], r"indices\[0\] = \[-1\] does not index into "
                                                                 r"shape \[6\]"),
                                              ([[2], [0], [6]], r"indices\[2\] = \[6\] does not index into shape "
                                                                r"\[6\]")])
def test_scatter_nd_index_out_of_range_is_an_error_and_writes_nothing(op_name, indices, message):
    _assert_bad_indices_write_nothing(op_name, indices, message)


def test_scatter_nd_out_of_range_names_the_coordinates():
    v = tf.Variable(np.zeros([3, 4], np.float32))
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"indices\[1,0\] = \[1, 4\] does not index into shape \[3,4\]"):
            sess.run(tf.scatter_nd_add(v, [[[0, 0]], [[1, 4]]], np.ones([2, 1], np.float32)))


def test_scatter_nd_shape_errors_at_graph_construction():
    ref = tf.Variable(tf.zeros([2, 2, 2], tf.int32))
    with pytest.raises(ValueError, match=r"The outer 2 dimensions of indices\.shape=\[3,2,2\] must match the outer 2 "
                                         r"dimensions of updates\.shape=\[2,2,2\]: Dimension 0 in both shapes must be "
                                         r"equal, but are 3 and 2\. Shapes are \[3,2\] and \[2,2\]\. for "
                                         r"'ScatterNdUpdate'"):
        tf.scatter_nd_update(ref, tf.zeros([3, 2, 2], tf.int32), tf.zeros([2, 2, 2], tf.int32))
    with pytest.raises(ValueError, match=r"The inner 2 dimensions of input\.shape=\[2,2,2\] must match the inner 0 "
                                         r"dimensions of updates\.shape=\[2,2\]: Shapes must be equal rank, but are 2 "
                                         r"and 0"):
        tf.scatter_nd_update(ref, tf.zeros([2, 2, 1], tf.int32), tf.zeros([2, 2], tf.int32))
    with pytest.raises(ValueError, match=r"Shape must be at least rank 1 but is rank 0 for 'ScatterNdAdd'"):
        tf.scatter_nd_add(ref, 0, tf.zeros([2, 2], tf.int32))


def test_scatter_nd_shape_errors_of_unknown_shapes_are_invalid_argument_at_run_time():
    v = tf.Variable(np.zeros(3))
    indices, updates = tf.placeholder(tf.int32), tf.placeholder(tf.float64)
    add = tf.scatter_nd_add(v, indices, updates)
    cases = [(0, 1.0, r"indices must be at least 1-D"),
             ([[1, 2]], [1.0], r"Must have updates.shape = indices.shape\[:batch_dim\] \+ params_shape\[slice_dim:\], "
                               r"got updates.shape: \[1\], indices.shape: \[1,2\], params_shape: \[3\], "
                               r"slice_dim: 2, and batch_dim: 1")]
    with tf.Session() as sess:
        sess.run(v.initializer)
        for indices_value, updates_value, message in cases:
            with pytest.raises(tf.errors.InvalidArgumentError, match=message):
                sess.run(add, {indices: indices_value, updates: updates_value})
        np.testing.assert_array_equal(sess.run(add, {indices: [1], updates: 2.0}), [0.0, 2.0, 0.0])  # one element


def test_scatter_nd_of_a_scalar_variable_is_an_error():
    v = tf.Variable(0.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="Output must be at least 1-D"):
            sess.run(tf.scatter_nd_update(v, [[0]], [0.22]))


def test_batch_scatter_update_writes_along_the_last_index_axis():
    ref = np.arange(24.0).reshape(2, 3, 4)
    indices = np.array([[[0, 3], [1, 2], [2, 0]], [[3, 1], [0, 2], [1, 3]]])  # [2, 3, 2]: two of 4 per (i, j)
    updates = -np.arange(12.0).reshape(2, 3, 2) - 1
    v = tf.Variable(ref)
    out, = _run(tf.batch_scatter_update(v, indices, updates))
    expected = ref.copy()
    for i, j, n in np.ndindex(indices.shape):
        expected[i, j, indices[i, j, n]] = updates[i, j, n]
    np.testing.assert_array_equal(out, expected)


# --- Variable methods ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", sorted(SCATTERS))
def test_variable_scatter_methods_take_indexed_slices(method):
    ref = np.arange(1.0, 7.0).reshape(3, 2)
    v = tf.Variable(ref)
    delta = tf.IndexedSlices(tf.constant([[2.0, 4.0], [0.5, 8.0]], tf.float64), tf.constant([2, 2]))
    out, = _run(getattr(v, method)(delta))
    np.testing.assert_allclose(out, _numpy_scatter(SCATTERS[method], ref, np.array([2, 2]),
                                                   np.array([[2.0, 4.0], [0.5, 8.0]])))
    assert getattr(v, method)(delta, name="named").op.name == "named"
    with pytest.raises(TypeError, match="sparse_delta is not IndexedSlices"):
        getattr(v, method)(tf.constant([1.0]))


def test_variable_scatter_nd_methods_lock_and_count_up_to():
    v = tf.Variable([1.0, 2.0, 3.0])
    counter = tf.Variable(0, name="counter")
    nd = [v.scatter_nd_update([[0]], [5.0]), v.scatter_nd_add([[1]], [5.0]), v.scatter_nd_sub([[2]], [5.0])]
    assert all(op.op.get_attr("use_locking") is True for op in nd)
    assert v.scatter_add(tf.IndexedSlices(tf.constant([1.0]), tf.constant([0]))).op.get_attr("use_locking") is False
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for op in nd:
            sess.run(op)
        np.testing.assert_array_equal(sess.run(v), [5.0, 7.0, -2.0])
        assert [sess.run(counter.count_up_to(2)) for _ in range(2)] == [0, 1]


def test_variable_batch_scatter_update_takes_indexed_slices():
    v = tf.Variable(np.zeros([2, 3]))
    delta = tf.IndexedSlices(tf.constant([[1.0], [2.0]], tf.float64), tf.constant([[2], [0]]))
    out, = _run(v.batch_scatter_update(delta))
    np.testing.assert_array_equal(out, [[0.0, 0.0, 1.0], [2.0, 0.0, 0.0]])


# --- CountUpTo -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [tf.int32, tf.int64])
def test_count_up_to_returns_each_value_then_stops_at_the_limit(dtype):
    v = tf.Variable(tf.constant(0, dtype), name="count")
    count = tf.count_up_to(v, 3)
    assert count.dtype == dtype and count.op.type == "CountUpTo" and count.op.get_attr("limit") == 3
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert [sess.run(count) for _ in range(3)] == [0, 1, 2]
        for _ in range(2):
            with pytest.raises(tf.errors.OutOfRangeError, match="Reached limit of 3"):
                sess.run(count)
            assert sess.run(v) == 3
        assert sess.run(v).dtype == dtype.as_numpy_dtype


def test_count_up_to_needs_a_scalar_int_variable():
    with pytest.raises(TypeError, match="parameter 'T' has DataType float32 not in list"):
        tf.count_up_to(tf.Variable(0.0), 3)
    with pytest.raises(ValueError, match=r"Shape must be rank 0 but is rank 1 for 'CountUpTo'"):
        tf.count_up_to(tf.Variable([0]), 3)
