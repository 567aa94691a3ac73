"""Tests for adplace.ops.array_ops and adplace.ops.constant_op: static shapes and dtypes at build time, values
through Session.run, and TF1's build-time (ValueError/TypeError) and run-time (tf.errors) failures."""

import numpy as np
import pytest

import adplace as tf


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


# --- constant ---------------------------------------------------------------------------------------------------

def test_constant_default_dtypes():
    assert tf.constant(1.0).dtype == tf.float32
    assert tf.constant(1).dtype == tf.int32
    assert tf.constant(2**40).dtype == tf.int64
    assert tf.constant(True).dtype == tf.bool
    assert tf.constant(np.float64(1.0)).dtype == tf.float64
    assert tf.constant(np.arange(3)).dtype == tf.int64
    assert tf.constant("s").dtype == tf.string


def test_constant_value_and_shape():
    c = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    assert c.op.type == "Const"
    assert c.shape.as_list() == [2, 2]
    out = run(c)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [[1.0, 2.0], [3.0, 4.0]])


def test_constant_explicit_dtype_converts():
    c = tf.constant([1, 2], dtype=tf.float64)
    assert c.dtype == tf.float64
    out = run(c)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [1.0, 2.0])


def test_constant_reshapes_to_shape():
    c = tf.constant([1.0, 2.0, 3.0, 4.0], shape=[2, 2])
    assert c.shape.as_list() == [2, 2]
    np.testing.assert_allclose(run(c), [[1.0, 2.0], [3.0, 4.0]])


def test_constant_broadcasts_scalar_to_shape():
    c = tf.constant(7.0, shape=[2, 3])
    assert c.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(c), np.full((2, 3), 7.0))


def test_constant_pads_with_last_element_tf1():
    c = tf.constant([1, 2, 3], shape=[2, 3])
    np.testing.assert_array_equal(run(c), [[1, 2, 3], [3, 3, 3]])


def test_constant_too_many_elements_raises():
    with pytest.raises(ValueError, match="Too many elements provided. Needed at most 2, but received 3"):
        tf.constant([1, 2, 3], shape=[2])


def test_constant_verify_shape():
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.constant([1, 2, 3], shape=[3, 1], verify_shape=True)


def test_constant_rejects_non_integral_float_for_int_dtype():
    with pytest.raises(TypeError, match="Expected int32"):
        tf.constant(1.5, dtype=tf.int32)


def test_fetched_constant_can_be_mutated_without_corrupting_the_graph():
    c = tf.constant([1.0, 2.0])
    with tf.Session() as sess:
        fetched = sess.run(c)
        fetched[0] = 100.0
        np.testing.assert_allclose(sess.run(c), [1.0, 2.0])


def test_constant_name():
    assert tf.constant(1.0, name="k").name == "k:0"


# --- placeholder --------------------------------------------------------------------------------------------------

def test_placeholder_feed():
    p = tf.placeholder(tf.float32, shape=[2], name="x")
    assert p.op.type == "Placeholder"
    assert p.name == "x:0"
    assert p.shape.as_list() == [2]
    out = run(p * 2.0, {p: [1.5, 2.5]})
    np.testing.assert_allclose(out, [3.0, 5.0])


def test_placeholder_unknown_shape_accepts_any_shape():
    p = tf.placeholder(tf.float32)
    assert p.shape.ndims is None
    y = p + 1.0
    assert y.shape.ndims is None
    with tf.Session() as sess:
        assert sess.run(y, {p: np.zeros((2, 3))}).shape == (2, 3)
        assert sess.run(y, {p: 5.0}).shape == ()


def test_placeholder_partial_shape():
    p = tf.placeholder(tf.float32, shape=[None, 3])
    y = tf.reduce_sum(p, axis=1)
    assert y.shape.as_list() == [None]
    np.testing.assert_allclose(run(y, {p: np.ones((4, 3))}), [3.0] * 4)


def test_placeholder_feed_converts_dtype():
    p = tf.placeholder(tf.float32, shape=[2])
    out = run(p, {p: [1, 2]})
    assert out.dtype == np.float32


def test_placeholder_feed_wrong_shape_raises_value_error():
    p = tf.placeholder(tf.float32, shape=[2])
    with pytest.raises(ValueError, match="Cannot feed value of shape"):
        run(p, {p: [1.0, 2.0, 3.0]})


def test_unfed_placeholder_raises_invalid_argument():
    p = tf.placeholder(tf.float32, shape=[2], name="needs_feed")
    with pytest.raises(tf.errors.InvalidArgumentError, match="You must feed a value for placeholder tensor "
                                                             "'needs_feed'"):
        run(p * 2.0)


# --- identity -----------------------------------------------------------------------------------------------------

def test_identity():
    c = tf.constant([1.0, 2.0])
    i = tf.identity(c, name="same")
    assert i.op.type == "Identity"
    assert i.name == "same:0"
    assert i.shape.as_list() == [2]
    np.testing.assert_allclose(run(i), [1.0, 2.0])


# --- shape, size, rank ------------------------------------------------------------------------------------------

def test_shape_size_rank():
    x = tf.zeros([2, 3, 4])
    s, n, r = tf.shape(x), tf.size(x), tf.rank(x)
    assert s.shape.as_list() == [3]
    assert s.dtype == tf.int32
    out = run([s, n, r])
    np.testing.assert_array_equal(out[0], [2, 3, 4])
    assert out[1] == 24 and out[2] == 3


def test_dynamic_shape_of_placeholder():
    p = tf.placeholder(tf.float32, shape=[None, 2])
    np.testing.assert_array_equal(run(tf.shape(p), {p: np.zeros((5, 2))}), [5, 2])


# --- reshape -----------------------------------------------------------------------------------------------------

def test_reshape_with_minus_one():
    x = tf.constant(np.arange(6.0, dtype=np.float32))
    y = tf.reshape(x, [3, -1])
    assert y.op.type == "Reshape"
    assert y.shape.as_list() == [3, 2]
    np.testing.assert_allclose(run(y), np.arange(6.0).reshape(3, 2))


def test_reshape_bad_size_raises_at_build_time():
    x = tf.zeros([6])
    with pytest.raises(ValueError, match="Cannot reshape a tensor with 6 elements.*'r'"):
        tf.reshape(x, [4, 2], name="r")
    with pytest.raises(ValueError, match="Cannot reshape a tensor with 6 elements"):
        tf.reshape(x, [4, -1])


def test_reshape_two_unknown_dims_raises():
    with pytest.raises(ValueError, match="multiple unknown dimensions"):
        tf.reshape(tf.zeros([6]), [-1, -1])


def test_reshape_dynamic_shape_error_at_run_names_op():
    p = tf.placeholder(tf.float32)
    y = tf.reshape(p, [4, -1], name="my_reshape")
    assert y.shape.as_list() == [4, None]
    with pytest.raises(tf.errors.InvalidArgumentError, match="my_reshape") as info:
        run(y, {p: np.zeros(5)})
    assert "Input to reshape is a tensor with 5 values" in str(info.value)
    np.testing.assert_allclose(run(y, {p: np.arange(8.0)}), np.arange(8.0).reshape(4, 2))


def test_reshape_with_shape_tensor():
    x = tf.constant(np.arange(6.0))
    target = tf.placeholder(tf.int32, shape=[2])
    y = tf.reshape(x, target)
    assert y.shape.as_list() == [None, None]
    np.testing.assert_allclose(run(y, {target: [2, 3]}), np.arange(6.0).reshape(2, 3))


# --- transpose ---------------------------------------------------------------------------------------------------

def test_transpose_default_reverses_dims():
    value = np.arange(24.0).reshape(2, 3, 4)
    y = tf.transpose(tf.constant(value))
    assert y.op.type == "Transpose"
    assert y.op.name == "transpose"
    assert y.shape.as_list() == [4, 3, 2]
    np.testing.assert_allclose(run(y), value.T)


def test_transpose_with_perm():
    value = np.arange(24.0).reshape(2, 3, 4)
    y = tf.transpose(tf.constant(value), perm=[1, 0, 2])
    assert y.shape.as_list() == [3, 2, 4]
    np.testing.assert_allclose(run(y), np.transpose(value, [1, 0, 2]))


def test_transpose_bad_perm_raises():
    with pytest.raises(ValueError, match="Transpose"):
        tf.transpose(tf.zeros([2, 3]), perm=[0, 0])


def test_transpose_unknown_rank_input():
    p = tf.placeholder(tf.float32)
    y = tf.transpose(p)
    assert y.shape.ndims is None
    np.testing.assert_allclose(run(y, {p: np.arange(6.0).reshape(2, 3)}), np.arange(6.0).reshape(2, 3).T)


# --- split --------------------------------------------------------------------------------------------------------

def test_split_into_equal_pieces():
    value = np.arange(12.0).reshape(2, 6)
    parts = tf.split(tf.constant(value), 3, axis=1)
    assert len(parts) == 3
    assert parts[0].op.type == "Split"
    assert [p.shape.as_list() for p in parts] == [[2, 2]] * 3
    for got, want in zip(run(parts), np.split(value, 3, axis=1)):
        np.testing.assert_allclose(got, want)


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_split_on_every_axis_gives_numpys_pieces(axis):
    value = np.arange(2 * 6 * 4, dtype=np.float32).reshape(2, 6, 4)
    parts = run(tf.split(tf.constant(value), 2, axis=axis))
    for got, want in zip(parts, np.split(value, 2, axis=axis), strict=True):
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_split_with_sizes_and_minus_one():
    value = np.arange(12.0).reshape(2, 6)
    parts = tf.split(tf.constant(value), [1, -1, 2], axis=1)
    assert parts[0].op.type == "SplitV"
    assert [p.shape.as_list() for p in parts] == [[2, 1], [2, 3], [2, 2]]
    got = run(parts)
    np.testing.assert_allclose(got[0], value[:, :1])
    np.testing.assert_allclose(got[1], value[:, 1:4])
    np.testing.assert_allclose(got[2], value[:, 4:])


def test_split_sizes_minus_one_resolved_at_run_time():
    p = tf.placeholder(tf.float32, shape=[None])
    a, b = tf.split(p, [2, -1])
    got = run([a, b], {p: np.arange(5.0)})
    np.testing.assert_allclose(got[0], [0.0, 1.0])
    np.testing.assert_allclose(got[1], [2.0, 3.0, 4.0])


def test_split_uneven_raises_value_error():
    with pytest.raises(ValueError, match="evenly divisible by 2 but is 5"):
        tf.split(tf.zeros([5]), 2)


def test_split_sizes_not_summing_raises_value_error():
    with pytest.raises(ValueError, match="SplitV"):
        tf.split(tf.zeros([5]), [2, 2])


# --- concat, stack, unstack -----------------------------------------------------------------------------------

def test_concat():
    a = np.ones((2, 2), np.float32)
    b = np.zeros((2, 3), np.float32)
    y = tf.concat([tf.constant(a), tf.constant(b)], axis=1)
    assert y.op.type == "ConcatV2"
    assert y.shape.as_list() == [2, 5]
    np.testing.assert_allclose(run(y), np.concatenate([a, b], axis=1))


def test_concat_negative_axis_and_unknown_dims():
    p = tf.placeholder(tf.float32, shape=[None, 2])
    y = tf.concat([p, tf.zeros([3, 2])], axis=-2)
    assert y.shape.as_list() == [None, 2]
    assert run(y, {p: np.ones((4, 2))}).shape == (7, 2)


def test_concat_mismatched_dims_raises():
    with pytest.raises(ValueError, match="Dimension 1 in both shapes must be equal"):
        tf.concat([tf.zeros([2, 2]), tf.zeros([2, 3])], axis=0)
    with pytest.raises(ValueError, match="rank"):
        tf.concat([tf.zeros([2, 2]), tf.zeros([2])], axis=0)


def test_stack():
    values = [np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0])]
    y = tf.stack([tf.constant(v) for v in values], axis=1)
    assert y.op.type == "Pack"
    assert y.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(y), np.stack(values, axis=1))


def test_stack_python_values_take_tensor_dtype():
    y = tf.stack([tf.constant(1.0, dtype=tf.float64), 2.0])
    assert y.dtype == tf.float64
    np.testing.assert_allclose(run(y), [1.0, 2.0])


def test_stack_mismatched_shapes_raises():
    with pytest.raises(ValueError, match="Pack"):
        tf.stack([tf.zeros([2]), tf.zeros([3])])


def test_unstack():
    value = np.arange(6.0).reshape(2, 3)
    parts = tf.unstack(tf.constant(value), axis=1)
    assert len(parts) == 3
    assert parts[0].op.type == "Unpack"
    assert [p.shape.as_list() for p in parts] == [[2]] * 3
    for i, got in enumerate(run(parts)):
        np.testing.assert_allclose(got, value[:, i])


def test_unstack_unknown_dim_requires_num():
    p = tf.placeholder(tf.float32, shape=[None])
    with pytest.raises(ValueError, match="Cannot infer num"):
        tf.unstack(p)
    parts = tf.unstack(p, num=2)
    np.testing.assert_allclose(run(parts, {p: [7.0, 8.0]}), [7.0, 8.0])


# --- squeeze, expand_dims ------------------------------------------------------------------------------------

def test_squeeze_all_and_axis():
    value = np.arange(3.0).reshape(1, 3, 1)
    x = tf.constant(value)
    all_ = tf.squeeze(x)
    one = tf.squeeze(x, axis=[2])
    assert all_.shape.as_list() == [3]
    assert one.shape.as_list() == [1, 3]
    got = run([all_, one])
    np.testing.assert_allclose(got[0], [0.0, 1.0, 2.0])
    np.testing.assert_allclose(got[1], value.reshape(1, 3))


def test_squeeze_non_one_dim_raises():
    with pytest.raises(ValueError, match="Can not squeeze dim\\[1\\]"):
        tf.squeeze(tf.zeros([1, 3]), axis=1)


def test_expand_dims():
    value = np.array([1.0, 2.0])
    x = tf.constant(value)
    front, back = tf.expand_dims(x, 0), tf.expand_dims(x, -1)
    assert front.shape.as_list() == [1, 2]
    assert back.shape.as_list() == [2, 1]
    got = run([front, back])
    np.testing.assert_allclose(got[0], value[None, :])
    np.testing.assert_allclose(got[1], value[:, None])


def test_expand_dims_axis_out_of_range_raises():
    with pytest.raises(ValueError, match="out of range"):
        tf.expand_dims(tf.zeros([2]), 3)


# --- ones, zeros, fill, *_like ------------------------------------------------------------------------------

def test_ones_and_zeros():
    o = tf.ones([2, 3])
    z = tf.zeros([2], dtype=tf.int32)
    assert (o.dtype, z.dtype) == (tf.float32, tf.int32)
    assert o.shape.as_list() == [2, 3]
    assert o.op.name == "ones"
    got_o, got_z = run([o, z])
    assert got_o.dtype == np.float32 and got_z.dtype == np.int32
    np.testing.assert_allclose(got_o, np.ones((2, 3)))
    np.testing.assert_array_equal(got_z, [0, 0])


def test_fill():
    f = tf.fill([2, 2], 3)
    assert f.dtype == tf.int32
    assert f.shape.as_list() == [2, 2]
    got = run(f)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.full((2, 2), 3))
    np.testing.assert_allclose(run(tf.fill([3], 0.5)), [0.5, 0.5, 0.5])


def test_fill_non_scalar_value_raises():
    with pytest.raises(ValueError, match="Fill"):
        tf.fill([2], [1.0, 2.0])


def test_ones_like_and_zeros_like():
    x = tf.constant([[1.5, 2.5]])
    o, z = tf.ones_like(x), tf.zeros_like(x)
    oi = tf.ones_like(x, dtype=tf.int32)
    assert (o.dtype, z.dtype, oi.dtype) == (tf.float32, tf.float32, tf.int32)
    assert oi.shape.as_list() == [1, 2]
    got = run([o, z, oi])
    np.testing.assert_allclose(got[0], [[1.0, 1.0]])
    np.testing.assert_allclose(got[1], [[0.0, 0.0]])
    assert got[2].dtype == np.int32
    np.testing.assert_array_equal(got[2], [[1, 1]])


def test_zeros_like_of_placeholder_follows_fed_shape():
    p = tf.placeholder(tf.float32)
    assert run(tf.zeros_like(p), {p: np.ones((3, 2))}).shape == (3, 2)


# --- indexing (StridedSlice) -----------------------------------------------------------------------------------

def test_indexing_shapes_and_values():
    value = np.arange(6.0).reshape(2, 3)
    x = tf.constant(value)
    first, column, expanded, tail = x[0], x[:, 1], x[..., None], x[1, 1:]
    assert first.op.type == "StridedSlice"
    assert first.shape.as_list() == [3]
    assert column.shape.as_list() == [2]
    assert expanded.shape.as_list() == [2, 3, 1]
    assert tail.shape.as_list() == [2]
    got = run([first, column, expanded, tail])
    np.testing.assert_allclose(got[0], value[0])
    np.testing.assert_allclose(got[1], value[:, 1])
    np.testing.assert_allclose(got[2], value[..., None])
    np.testing.assert_allclose(got[3], value[1, 1:])


def test_indexing_with_newaxis_and_step():
    value = np.arange(10.0)
    x = tf.constant(value)
    y = x[tf.newaxis, ::3]
    assert y.shape.as_list() == [1, 4]
    np.testing.assert_allclose(run(y), value[None, ::3])


def test_indexing_out_of_range_raises_value_error():
    with pytest.raises(ValueError, match="StridedSlice"):
        tf.constant([1.0, 2.0])[5]


def test_indexing_with_tensor_indices_and_bounds():
    value = np.arange(12.0).reshape(3, 4)
    x, i = tf.placeholder(tf.float64, [3, 4]), tf.placeholder(tf.int32, [])
    row, rows, col, tail = x[i], x[i:i + 1], x[:, i], x[-1, i:]
    assert row.shape.as_list() == [4] and rows.shape.as_list() == [None, 4] and col.shape.as_list() == [3]
    got = tf.Session().run([row, rows, col, tail, x[tf.constant(-1, tf.int64)]], {x: value, i: 2})
    for out, want in zip(got, [value[2], value[2:3], value[:, 2], value[-1, 2:], value[-1]]):
        np.testing.assert_array_equal(out, want)
    grad = tf.gradients(tf.reduce_sum(x[i:, 1]), x)[0]
    np.testing.assert_array_equal(tf.Session().run(grad, {x: value, i: 1}), [[0, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0]])
    np.testing.assert_array_equal(run(tf.constant([5, 6, 7])[np.asarray(1, np.int64)]), 6)  # a 0-d NumPy index
    with pytest.raises(ValueError, match="Attempting to slice scalar input"):
        tf.constant(1.0)[:]


def test_indexing_variable_reads_value():
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]])
    y = v[1]
    with tf.Session() as sess:
        sess.run(v.initializer)
        np.testing.assert_allclose(sess.run(y), [3.0, 4.0])


def test_constant_copies_the_callers_array_and_leaves_it_writable():
    source = np.array([1.0, 2.0], np.float32)
    c = tf.constant(source)
    source[0] = 5.0
    np.testing.assert_array_equal(tf.Session().run(c), [1.0, 2.0])


def test_lists_holding_tensors_are_packed_like_tf1():
    x = tf.placeholder(tf.float32, [None, 4])
    y = tf.reshape(x, [tf.shape(x)[0], 2, 2])
    z = tf.zeros([tf.shape(x)[0], 3])
    sess = tf.Session()
    out_y, out_z = sess.run([y, z], {x: np.arange(8, dtype=np.float32).reshape(2, 4)})
    assert out_y.shape == (2, 2, 2) and out_z.shape == (2, 3)
    packed = tf.convert_to_tensor([tf.constant(1.0), 2.0])
    assert packed.op.type == "Pack" and sess.run(packed).tolist() == [1.0, 2.0]
    with pytest.raises(TypeError, match="symbolic"):
        tf.constant(tf.constant(1.0))


def test_strings_are_bytes_like_tf():
    sess = tf.Session()
    assert sess.run(tf.constant("abc")) == b"abc"
    assert sess.run(tf.constant(b"ab") + "c") == b"abc"
    p = tf.placeholder(tf.string, [2])
    assert sess.run(tf.identity(p), {p: ["x", b"y"]}).tolist() == [b"x", b"y"]


def test_zeros_and_ones_per_dtype_and_small_static_shapes_are_constants():
    small, big = tf.zeros([2, 3]), tf.ones([40, 40])
    sess = tf.Session()
    assert sess.run(tf.zeros([2], tf.bool)).tolist() == [False, False]
    assert sess.run(tf.ones([2], tf.bool)).tolist() == [True, True]
    assert sess.run(tf.zeros([2], tf.string)).tolist() == [b"", b""]
    assert (small.op.type, small.op.name) == ("Const", "zeros")
    assert (big.op.type, big.op.name) == ("Fill", "ones") and sess.run(big).sum() == 1600


def test_helper_constants_are_named_under_their_op():
    x = tf.placeholder(tf.float32, [4])
    tf.reshape(x, [2, 2])
    second = tf.reshape(x, [4, 1])
    assert second.op.name == "Reshape_1" and second.op.inputs[1].op.name == "Reshape_1/shape"
    v = tf.Variable(1.0)
    inc = tf.assign_add(v, 2.0)
    assert inc.op.inputs[1].op.name == "AssignAdd/value"


def test_indexing_keeps_known_dims_of_partial_shapes():
    x = tf.placeholder(tf.float32, [None, 3, 5])
    assert x[0].shape.as_list() == [3, 5]
    assert x[:, 1:].shape.as_list() == [None, 2, 5]
    assert x[..., None, 2].shape.as_list() == [None, 3, 1]
    with pytest.raises(ValueError, match="out of bounds"):
        x[:, 7]


def test_scope_names_cannot_duplicate_an_op():
    x = tf.constant(1.0)
    with tf.name_scope("s") as scope:
        tf.add(x, x, name=scope)
        with pytest.raises(ValueError, match="Duplicate node name in graph: 's'"):
            tf.subtract(x, x, name=scope)


# --- tile: multiples that cannot fit --------------------------------------------------------------------------------

def _ops():
    return [op.name for op in tf.get_default_graph().get_operations()]


@pytest.mark.parametrize("multiples, message", [
    ([1, 2, 3], r"Shape must be rank 2 but is rank 3 for 'Tile' \(op: 'Tile'\) with input shapes: \[2,2\], \[3\]"),
    ([[1, 2]], r"Shape must be rank 1 but is rank 2 for 'Tile' \(op: 'Tile'\) with input shapes: \[2,2\], \[1,2\]"),
    (2, r"Shape must be rank 1 but is rank 0 for 'Tile'"),
    ([1, -2], r"Invalid value in tensor used for shape: -2 for 'Tile' .* input\[1\] = <1 -2>"),
])
def test_static_multiples_that_cannot_fit_are_a_value_error_adding_no_op(multiples, message):
    x = tf.placeholder(tf.float32, [2, 2], name="x")
    with pytest.raises(ValueError, match=message) as info:
        tf.tile(x, multiples)
    assert len(str(info.value)) < 1024
    assert _ops() == ["x"]  # not even the multiples Const
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1 for 'my_tile'"):
        tf.tile([[1.0, 2.0]], [3], name="my_tile")  # a Python input: no Const for it either
    assert _ops() == ["x"]


def test_multiples_of_a_known_wrong_length_fail_at_construction_even_when_fed():
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    m = tf.placeholder(tf.int32, [3], name="m")
    with pytest.raises(ValueError, match=r"Shape must be rank 2 but is rank 3 for 'Tile'.*\[\?,2\], \[3\]"):
        tf.tile(x, m)
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 3"):
        tf.tile(x, [tf.constant(1), 2, 3])
    assert "Tile" not in _ops()
    with pytest.raises(TypeError, match="parameter 'multiples' has DataType float32 not in list"):
        tf.tile(x, tf.constant([1.0, 2.0]))


def test_fed_multiples_that_cannot_fit_are_an_invalid_argument_error_naming_the_op():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="x")
    m = tf.placeholder(tf.int32, None, name="m")
    t = tf.tile(x, m, name="T")
    assert t.shape.as_list() == [None, None]
    sess = tf.Session()
    for fed, message in (([1, 2, 3], "Expected multiples argument to be a vector of length 2 but got length 3"),
                         ([[1, 2]], r"Expected multiples to be 1-D, but got shape \[1,2\]"),
                         ([1, -1], r"Expected multiples\[1\] >= 0, but got -1"),
                         (3, r"Expected multiples to be 1-D, but got shape \[\]")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=message) as info:
            sess.run(t, {m: fed})
        assert info.value.op is t.op and "{{node T}}" in str(info.value) and len(str(info.value)) < 1024
    assert sess.run(t, {m: [2, 1]}).tolist() == [[1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [3.0, 4.0]]


def test_a_static_multiple_of_minus_one_is_an_unknown_dim_then_a_run_time_error():
    x = tf.constant([[1.0, 2.0]])
    t = tf.tile(x, [2, -1])  # TF's shape function reads -1 as unknown; its kernel rejects it
    assert t.shape.as_list() == [2, None]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected multiples\[1\] >= 0, but got -1"):
        tf.Session().run(t)


def test_tile_values_static_shapes_and_gradient_with_int64_multiples():
    x = tf.placeholder(tf.float32, [None, 0, 3], name="x")
    assert tf.tile(x, [0, 2, 2]).shape.as_list() == [0, 0, 6]
    assert tf.tile(tf.placeholder(tf.float32), [2, 3]).shape.as_list() == [None, None]
    assert tf.tile(tf.placeholder(tf.float32, [2]), tf.placeholder(tf.int32)).shape.as_list() == [None]
    a = tf.constant([[1.0, 2.0]])
    t = tf.tile(a, tf.constant([2, 2], dtype=tf.int64))
    grad, = tf.gradients(t, a)
    value, dx = tf.Session().run([t, grad])
    assert value.tolist() == [[1.0, 2.0, 1.0, 2.0]] * 2 and dx.tolist() == [[4.0, 4.0]]
    assert tf.Session().run(tf.tile(tf.constant(5.0), [])) == 5.0


# --- slice, pad, reverse, identity_n (tf.slice, tf.pad, tf.reverse, tf.identity_n) ------------------------------------
def _gradient_error(x, y, x0):
    with tf.Session():
        return tf.test.compute_gradient_error(x, list(x0.shape), y, y.shape.as_list(), x_init_value=x0)


def test_slice_values_shapes_and_minus_one():
    x = np.arange(24).reshape(2, 3, 4)
    s = tf.slice(x, [0, 1, 1], [2, -1, 2])
    assert s.op.type == "Slice" and s.op.name == "Slice" and s.shape.as_list() == [2, 2, 2]
    np.testing.assert_array_equal(run(s), x[:, 1:, 1:3])
    p = tf.placeholder(tf.float32, [None, 4])
    assert tf.slice(p, [1, 0], [-1, 2]).shape.as_list() == [None, 2]
    assert tf.slice(p, tf.placeholder(tf.int32, [2]), [1, 2]).shape.as_list() == [1, 2]
    start, size = tf.placeholder(tf.int32, []), tf.constant(1)  # lists holding tensors keep their constant parts
    assert tf.slice(np.zeros((2, 3)), [tf.constant(0), 0], [size, 2]).shape.as_list() == [1, 2]
    assert tf.slice(np.zeros((2, 3)), [start, 0], [-1, 2]).shape.as_list() == [None, 2]


def test_slice_errors():
    with pytest.raises(ValueError, match=r"Expected size\[1\] in \[0, 2\], but got 3 for 'Slice\w*'"):
        tf.slice(np.zeros((2, 3)), [0, 1], [1, 3])
    b = tf.placeholder(tf.int32, [2])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Expected size\[0\] in \[0, 1\], but got 2"):
        run(tf.slice(np.zeros((2, 3)), b, [2, 1]), {b: [1, 0]})


def test_slice_gradient():
    x = tf.placeholder(tf.float64, [3, 4])
    assert _gradient_error(x, tf.slice(x, [1, 1], [2, 2]), np.arange(12.0).reshape(3, 4)) < 1e-8


@pytest.mark.parametrize("mode", ["CONSTANT", "REFLECT", "SYMMETRIC", "reflect"])
def test_pad_modes_match_numpy(mode):
    x = np.arange(12.0).reshape(3, 4)
    paddings = [[1, 2], [2, 1]]
    p = tf.pad(x, paddings, mode=mode)
    expected = np.pad(x, paddings, mode={"CONSTANT": "constant", "REFLECT": "reflect"}.get(mode.upper(),
                                                                                          "symmetric"))
    assert p.op.type == ("Pad" if mode == "CONSTANT" else "MirrorPad") and p.shape.as_list() == [6, 7]
    np.testing.assert_array_equal(run(p), expected)
    xp = tf.placeholder(tf.float64, [3, 4])
    assert _gradient_error(xp, tf.pad(xp, paddings, mode=mode), x) < 1e-8


def test_pad_shape_keeps_the_known_parts_of_paddings_holding_tensors():
    n = tf.placeholder(tf.int32, [])
    x = tf.zeros([4, 4])
    assert tf.pad(x, [[1, 2], [0, n]]).shape.as_list() == [7, None]
    assert tf.pad(x, [[n, 0], [1, 2]]).shape.as_list() == [None, 7]
    assert tf.pad(x, [tf.constant([1, 0]), [0, n]]).shape.as_list() == [5, None]
    assert tf.pad(tf.placeholder(tf.float32, [None, 20]), [[0, n], [0, 0]]).shape.as_list() == [None, 20]
    np.testing.assert_array_equal(run(tf.pad([[1.0]], [[n, 0], [0, 1]]), {n: 1}), [[0.0, 0.0], [1.0, 0.0]])


def test_pad_constant_values_uses_pad_v2():
    p = tf.pad([[1, 2]], [[1, 0], [0, 1]], constant_values=9)
    assert p.op.type == "PadV2" and p.op.name == "PadV2"
    np.testing.assert_array_equal(run(p), [[9, 9, 9], [1, 2, 9]])
    x = tf.placeholder(tf.float64, [2])
    assert _gradient_error(x, tf.pad(x, [[2, 1]], constant_values=-1.0), np.array([1.0, 2.0])) < 1e-8
    assert tf.pad(tf.placeholder(tf.float32, [None, 2]), [[1, 1], [0, 0]]).shape.as_list() == [None, 2]


def test_pad_errors():
    with pytest.raises(ValueError, match="Unknown padding mode: WRAP"):
        tf.pad([1.0], [[1, 1]], mode="wrap")
    with pytest.raises(ValueError, match=r"Shape must be rank 1 but is rank 2 for 'Pad\w*' \(op: 'Pad'\)"):
        tf.pad(np.zeros((2, 2)), [[1, 1]])
    with pytest.raises(ValueError, match="Shape must be rank 2 but is rank 1 for 'Pad"):
        tf.pad(np.zeros((2, 2)), [1, 1])
    with pytest.raises(ValueError, match="Dimension must be 2 but is 1 for 'Pad"):
        tf.pad(np.zeros((2, 2)), [[1], [1]])
    np.testing.assert_array_equal(run(tf.pad(np.float32(7), np.zeros((0, 2), np.int32))), 7)  # a scalar: no pairs
    p = tf.placeholder(tf.int32, [1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="paddings must be less than the dimension size: 3, 0"):
        run(tf.pad([1.0, 2.0, 3.0], p, mode="REFLECT"), {p: [[3, 0]]})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Paddings must be non-negative: -1 0"):
        run(tf.pad([1.0, 2.0, 3.0], p), {p: [[-1, 0]]})


def test_reverse_and_gradient():
    x = np.arange(6.0).reshape(2, 3)
    r = tf.reverse(x, [-1])
    assert r.op.type == "ReverseV2" and r.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(run(r), x[:, ::-1])
    np.testing.assert_array_equal(run(tf.reverse_v2(x, [0, 1])), x[::-1, ::-1])
    xp = tf.placeholder(tf.float64, [2, 3])
    assert _gradient_error(xp, tf.reverse(xp, [0]) * np.arange(6.0).reshape(2, 3), x) < 1e-8
    with pytest.raises(ValueError, match="axis 1 specified more than once"):
        tf.reverse(x, [1, -1])


def test_identity_n_passes_values_and_gradients_through():
    a, b = tf.placeholder(tf.float64, [2]), tf.constant(3)
    outs = tf.identity_n([a, b])
    assert outs[0].op.type == "IdentityN" and outs[0].op is outs[1].op and outs[1].dtype == tf.int32
    values = run(outs, {a: [1.0, 2.0]})
    np.testing.assert_array_equal(values[0], [1.0, 2.0])
    assert values[1] == 3
    assert run(tf.gradients(tf.reduce_sum(outs[0] * outs[0]), a)[0], {a: [1.0, 2.0]}).tolist() == [2.0, 4.0]


# --- tf.where (TF1's Select) ------------------------------------------------------------------------------------------
def test_where_tf1_row_selection_and_errors():
    x, y = np.arange(6.0).reshape(3, 2), -np.ones((3, 2))
    w = tf.where([True, False, True], x, y)
    assert w.op.type == "Select" and w.op.name == "Select"
    np.testing.assert_array_equal(run(w), [x[0], y[1], x[2]])
    with pytest.raises(ValueError, match="x and y must both be non-None or both be None."):
        tf.where([True], x=[1.0])
    coords = tf.where([[False, True], [True, True]])
    assert coords.dtype == tf.int64 and coords.shape.as_list() == [None, 2]
    np.testing.assert_array_equal(run(coords), [[0, 1], [1, 0], [1, 1]])


# --- batch matmul ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True), (True, True)])
def test_batch_matmul_broadcasts_batch_dims_with_transposes_and_gradients(ta, tb):
    rng = np.random.default_rng(3)
    a0 = rng.normal(size=(2, 1, 4, 3) if ta else (2, 1, 3, 4))
    b0 = rng.normal(size=(5, 2, 4) if tb else (5, 4, 2))
    a, b = tf.placeholder(tf.float64, a0.shape), tf.placeholder(tf.float64, b0.shape)
    c = tf.matmul(a, b, transpose_a=ta, transpose_b=tb)
    assert c.op.type == "BatchMatMulV2" and c.shape.as_list() == [2, 5, 3, 2]
    expected = np.matmul(np.swapaxes(a0, -1, -2) if ta else a0, np.swapaxes(b0, -1, -2) if tb else b0)
    np.testing.assert_allclose(run(c, {a: a0, b: b0}), expected)
    with tf.Session():
        assert tf.test.compute_gradient_error(a, list(a0.shape), c, [2, 5, 3, 2], x_init_value=a0,
                                              extra_feed_dict={b: b0}) < 1e-8
        assert tf.test.compute_gradient_error(b, list(b0.shape), c, [2, 5, 3, 2], x_init_value=b0,
                                              extra_feed_dict={a: a0}) < 1e-8


def test_matmul_rank_three_times_rank_two_and_mismatch_error():
    a0, b0 = np.ones((4, 2, 3)), np.ones((3, 5))
    c = tf.matmul(a0, b0)
    assert c.shape.as_list() == [4, 2, 5]
    np.testing.assert_allclose(run(c), np.full((4, 2, 5), 3.0))
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 3 and 4 for 'MatMul\\w*' "
                                         "\\(op: 'BatchMatMulV2'\\)"):
        tf.matmul(a0, np.ones((4, 5)))


def test_constant_casts_numpy_values_to_the_dtype_asked_for_but_checks_python_values():
    """TF casts an ndarray with astype (float -> uint8 wraps, ints -> bool), while Python lists must fit the dtype;
    an empty list is any dtype."""
    wrapped, flags, empty = tf.Session().run([tf.constant(np.array([1.7, 300.0]), dtype=tf.uint8),
                                              tf.constant(np.array([0, 2]), dtype=tf.bool),
                                              tf.constant([], dtype=tf.bool)])
    np.testing.assert_array_equal(wrapped, np.array([1.7, 300.0]).astype(np.uint8))
    np.testing.assert_array_equal(flags, [False, True])
    assert empty.dtype == np.bool_ and empty.shape == (0,)
    with pytest.raises(TypeError, match="Expected int32"):
        tf.constant([1.5], dtype=tf.int32)
    with pytest.raises(TypeError, match="Expected bool"):
        tf.constant([1, 0], dtype=tf.bool)


def test_prevent_gradient_passes_values_and_refuses_gradients_with_its_reason():
    from adplace.ops.array_ops import prevent_gradient
    x = tf.constant([1.0, 2.0])
    y = prevent_gradient(x, message="no second derivative here")
    np.testing.assert_array_equal(tf.Session().run(y), [1.0, 2.0])
    with pytest.raises(LookupError, match="Gradient explicitly disabled. Reason: no second derivative here"):
        tf.gradients(y * 2.0, x)


def test_none_is_not_a_tensor_value():
    with pytest.raises(ValueError, match="None values not supported."):
        tf.convert_to_tensor(None)
    with pytest.raises(ValueError, match="None values not supported."):
        tf.constant(None)


def test_reshape_to_the_wrong_size_gives_tfs_message():
    x = tf.placeholder(tf.float32)
    with pytest.raises(tf.errors.InvalidArgumentError, match="tensor with 20 values, but the requested shape has 21"):
        tf.Session().run(tf.reshape(x, [3, 7]), {x: np.zeros(20)})
    with pytest.raises(tf.errors.InvalidArgumentError, match="20 values, but the requested shape requires a multiple "
                                                             "of 3"):
        tf.Session().run(tf.reshape(x, [-1, 3]), {x: np.zeros(20)})
