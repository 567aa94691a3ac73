"""Tests for the TF1 array ops added beside the array_ops split: placeholder_with_default, shape_n, broadcast_to,
sequence_mask, boolean_mask, lin_space, meshgrid, unique and nn.top_k: NumPy reference values, static shapes, TF's
op names and errors, feeding, gradients."""
import numpy as np
import pytest

import adplace as tf


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


# --- placeholder_with_default -----------------------------------------------------------------------------------------
def test_placeholder_with_default_runs_its_input_unless_fed():
    p = tf.placeholder_with_default(tf.constant([[1.0, 2.0]]), shape=[None, 2])
    assert p.op.type == "PlaceholderWithDefault" and p.op.name == "PlaceholderWithDefault"
    assert p.shape.as_list() == [None, 2]
    y = p * 2.0
    with tf.Session() as sess:
        assert sess.run(y).tolist() == [[2.0, 4.0]]
        assert sess.run(y, {p: np.ones([3, 2])}).tolist() == [[2.0, 2.0]] * 3
        with pytest.raises(ValueError, match=r"Cannot feed value of shape \(3, 3\) for Tensor "
                                             r"'PlaceholderWithDefault:0', which has shape '\(\?, 2\)'"):
            sess.run(y, {p: np.ones([3, 3])})


def test_placeholder_with_default_checks_its_shape_and_passes_gradients():
    with pytest.raises(ValueError, match=r"Dimension 1 in both shapes must be equal, but are 2 and 3. Shapes are "
                                         r"\[1,2\] and \[\?,3\]. for 'PlaceholderWithDefault' \(op: "
                                         r"'PlaceholderWithDefault'\)"):
        tf.placeholder_with_default([[1.0, 2.0]], shape=[None, 3])
    with pytest.raises(ValueError, match="Shapes must be equal rank, but are 1 and 2"):
        tf.placeholder_with_default([1.0], shape=[1, 1])
    x = tf.constant([3.0, 4.0])
    g = tf.gradients(tf.reduce_sum(tf.placeholder_with_default(x, [2]) ** 2), x)[0]
    assert run(g).tolist() == [6.0, 8.0]


# --- shape_n, broadcast_to --------------------------------------------------------------------------------------------
def test_shape_n_is_one_op_with_one_output_per_tensor():
    a = tf.placeholder(tf.float32, [None, 3])
    b = tf.zeros([2, 5, 1])
    sa, sb = tf.shape_n([a, b], out_type=tf.int64)
    assert sa.op is sb.op and sa.op.type == "ShapeN" and sa.op.name == "ShapeN"
    assert sa.dtype == tf.int64 and sa.shape.as_list() == [2] and sb.shape.as_list() == [3]
    va, vb = run([sa, sb], {a: np.zeros([4, 3])})
    assert va.tolist() == [4, 3] and vb.tolist() == [2, 5, 1] and va.dtype == np.int64


def test_conv2d_gradient_takes_shapes_from_one_shape_n_as_tf():
    x = tf.placeholder(tf.float32, [1, 4, 4, 2])
    w = tf.constant(np.ones([3, 3, 2, 3], np.float32))
    dx, dw = tf.gradients(tf.nn.conv2d(x, w, [1, 1, 1, 1], "SAME"), [x, w])
    shape_ns = [op.name for op in tf.get_default_graph().get_operations() if op.type == "ShapeN"]
    assert shape_ns == ["gradients/Conv2D_grad/ShapeN"]
    assert dx.shape.as_list() == [1, 4, 4, 2] and dw.shape.as_list() == [3, 3, 2, 3]


def test_broadcast_to_values_errors_and_gradient():
    x0 = np.array([[1.0], [2.0]])
    y = tf.broadcast_to(x0, [3, 2, 4])
    assert y.op.type == "BroadcastTo" and y.op.name == "BroadcastTo" and y.shape.as_list() == [3, 2, 4]
    np.testing.assert_array_equal(run(y), np.broadcast_to(x0, [3, 2, 4]))
    with pytest.raises(ValueError, match=r"Incompatible shapes: \[2,1\] vs. \[3,3\]"):
        tf.broadcast_to(x0, [3, 3])
    shape = tf.placeholder(tf.int32, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Incompatible shapes: \[2,1\] vs. \[5,5\]"):
        run(tf.broadcast_to(x0, shape), {shape: [5, 5]})
    x = tf.constant(x0)
    g = tf.gradients(tf.broadcast_to(x, [3, 2, 4]) * tf.constant(np.arange(24.0).reshape(3, 2, 4)), x)[0]
    np.testing.assert_array_equal(run(g), np.arange(24.0).reshape(3, 2, 4).sum(axis=(0, 2))[:, None])


# --- sequence_mask, boolean_mask --------------------------------------------------------------------------------------
def test_sequence_mask_with_and_without_maxlen():
    m = tf.sequence_mask([1, 3, 0], 4)
    assert m.dtype == tf.bool and m.op.name == "SequenceMask/Less"
    assert run(m).tolist() == [[True, False, False, False], [True, True, True, False], [False] * 4]
    f = tf.sequence_mask(tf.constant([[2], [1]]), dtype=tf.float32)
    assert f.dtype == tf.float32 and run(f).tolist() == [[[1.0, 1.0]], [[1.0, 0.0]]]
    with pytest.raises(ValueError, match="maxlen must be scalar for sequence_mask"):
        tf.sequence_mask([1], [2, 3])


def test_boolean_mask_selects_rows_and_inner_axes():
    t0 = np.arange(24).reshape(2, 3, 4)
    mask = np.array([[True, False, True], [False, False, True]])
    y = tf.boolean_mask(t0, mask)
    assert y.shape.as_list() == [None, 4] and y.op.name == "boolean_mask/GatherV2"
    np.testing.assert_array_equal(run(y), t0[mask])
    z = tf.boolean_mask(t0, [True, False, True, True], axis=2)
    np.testing.assert_array_equal(run(z), t0[:, :, [0, 2, 3]])
    with pytest.raises(ValueError, match="mask cannot be scalar."):
        tf.boolean_mask(t0, True)
    with pytest.raises(ValueError, match="Number of mask dimensions must be specified"):
        tf.boolean_mask(t0, tf.placeholder(tf.bool))
    with pytest.raises(ValueError, match=r"Shapes \(2,\) and \(3,\) are incompatible"):
        tf.boolean_mask(t0, [True, False, True])


def test_boolean_mask_gradient_flows_to_the_kept_rows():
    x = tf.constant(np.arange(6.0).reshape(3, 2))
    g = tf.gradients(tf.reduce_sum(tf.boolean_mask(x, [True, False, True]) * 2.0), x)[0]
    assert run(tf.convert_to_tensor(g)).tolist() == [[2.0, 2.0], [0.0, 0.0], [2.0, 2.0]]


# --- lin_space, meshgrid ----------------------------------------------------------------------------------------------
def test_lin_space_matches_numpy_and_checks_num():
    y = tf.lin_space(-1.0, 2.0, 7)
    assert y.op.type == "LinSpace" and y.op.name == "LinSpace" and y.shape.as_list() == [7] and tf.linspace is tf.lin_space
    np.testing.assert_allclose(run(y), np.linspace(-1.0, 2.0, 7), rtol=1e-6)
    assert run(tf.lin_space(np.float64(3.0), 5.0, 1)).tolist() == [3.0]
    assert run(tf.lin_space(0.1, 0.7, 3))[-1] == np.float32(0.7)  # the end point exactly
    with pytest.raises(ValueError, match=r"Requires num > 0: 0 for 'LinSpace_\d+' \(op: 'LinSpace'\)"):
        tf.lin_space(0.0, 1.0, 0)
    num = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Requires num > 0: -2"):
        run(tf.lin_space(0.0, 1.0, num), {num: -2})
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.lin_space(0, 1, 3)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid_matches_numpy(indexing):
    a, b, c = np.array([1, 2, 3]), np.array([4, 5]), np.array([6, 7, 8, 9])
    grids = tf.meshgrid(a, b, c, indexing=indexing)
    for got, want in zip(run(grids), np.meshgrid(a, b, c, indexing=indexing)):
        np.testing.assert_array_equal(got, want)
    assert grids[0].op.name.startswith("meshgrid/")


def test_meshgrid_argument_errors():
    with pytest.raises(ValueError, match="indexing parameter must be either 'xy' or 'ij'"):
        tf.meshgrid([1], indexing="ji")
    with pytest.raises(TypeError, match="'sparse' is an invalid keyword argument for this function"):
        tf.meshgrid([1], sparse=True)


# --- unique, top_k ----------------------------------------------------------------------------------------------------
def test_unique_in_order_of_first_appearance():
    y, idx = tf.unique([4, 1, 4, 2, 1, 7])
    assert y.op.type == "Unique" and y.op.name == "Unique" and idx.dtype == tf.int32
    assert y.shape.as_list() == [None] and idx.shape.as_list() == [6]
    vy, vidx = run([y, idx])
    assert vy.tolist() == [4, 1, 2, 7] and vidx.tolist() == [0, 1, 0, 2, 1, 3]
    assert run(tf.unique(tf.constant([2.5, 2.5]), out_idx=tf.int64).idx).dtype == np.int64
    with pytest.raises(ValueError, match=r"Shape must be rank 1 but is rank 2 for 'Unique_\d+' \(op: 'Unique'\)"):
        tf.unique([[1, 2]])
    assert not tf.config.has_kernel("Unique", "GPU", tf.int32)


def test_top_k_values_indices_ties_and_shapes():
    x0 = np.array([[1.0, 5.0, 3.0, 5.0], [9.0, -1.0, 9.0, 9.0]])
    values, indices = tf.nn.top_k(x0, k=3)
    assert values.op.type == "TopKV2" and values.op.name == "TopKV2" and indices.dtype == tf.int32
    assert values.shape.as_list() == [2, 3] and indices.shape.as_list() == [2, 3]
    v, i = run([values, indices])
    assert v.tolist() == [[5.0, 5.0, 3.0], [9.0, 9.0, 9.0]] and i.tolist() == [[1, 3, 2], [0, 2, 3]]
    ints = tf.nn.top_k(tf.constant([-128, 127, 0], tf.int8), 2)
    assert run(ints.values).tolist() == [127, 0] and run(ints.indices).tolist() == [1, 2]


def test_top_k_errors():
    with pytest.raises(ValueError, match=r"input must have last dimension >= k = 5 but is 3"):
        tf.nn.top_k([1.0, 2.0, 3.0], k=5)
    with pytest.raises(ValueError, match="Shape must be at least rank 1 but is rank 0"):
        tf.nn.top_k(1.0)
    k = tf.placeholder(tf.int32, [])
    with pytest.raises(tf.errors.InvalidArgumentError, match="input must have at least k columns. Had 3, needed 4"):
        run(tf.nn.top_k([1.0, 2.0, 3.0], k=k), {k: 4})


def test_top_k_gradient_goes_to_the_chosen_positions():
    x0 = np.array([[0.3, 0.9, 0.1, 0.5], [0.8, 0.2, 0.6, 0.4]])
    with tf.Session():
        x = tf.constant(x0)
        values = tf.nn.top_k(x, 2).values
        g = tf.gradients(values * np.array([[1.0, 10.0]]), x)[0]
        assert g.eval().tolist() == [[0.0, 1.0, 0.0, 10.0], [1.0, 0.0, 10.0, 0.0]]
        assert tf.test.compute_gradient_error(x, [2, 4], values, [2, 2], x_init_value=x0) < 1e-8


def test_top_k_index_type_and_k_dtype():
    values, indices = tf.nn.top_k([[0.1, 0.3, 0.2, 0.4]], 2, index_type=tf.int64)
    assert indices.dtype == tf.int64 and indices.shape.as_list() == [1, 2]
    got_values, got_indices = tf.Session().run([values, indices])
    np.testing.assert_allclose(got_values, [[0.4, 0.3]])
    assert got_indices.dtype == np.int64 and got_indices.tolist() == [[3, 1]]
    k = tf.constant(1, tf.int64)
    assert tf.Session().run(tf.nn.top_k([5, 9, 7], k).indices).tolist() == [1]
    with pytest.raises(TypeError, match="parameter 'index_type' has DataType float32"):
        tf.nn.top_k([1.0], 1, index_type=tf.float32)


def test_placeholder_with_default_names_its_constant_inside_its_own_scope():
    """As TF's op wrapper converts inputs in the op's name scope: the Saver's filename default is save/filename/input."""
    named = tf.placeholder_with_default("model", [], name="filename")
    unnamed = tf.placeholder_with_default([1.0], [None])
    assert named.name == "filename:0" and named.op.inputs[0].op.name == "filename/input"
    assert unnamed.name == "PlaceholderWithDefault:0"
    assert unnamed.op.inputs[0].op.name == "PlaceholderWithDefault/input"
