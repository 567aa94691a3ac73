"""Tests for adplace/adcme/indexing.py: Julia's size/length/ndims and 1-based getindex on tensors, against NumPy."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import adplace as tf
from adplace import adcme
from adcme_reference import COLON, gather_gradient, julia_getindex, run
from placement_log import GPU0

# --- size, length, ndims -------------------------------------------------------------------------------------------


def test_size_of_known_shapes():
    x = tf.zeros([2, 3, 4])
    assert adcme.size(x) == (2, 3, 4)
    assert [adcme.size(x, d) for d in (1, 2, 3, 4, 7)] == [2, 3, 4, 1, 1]
    assert adcme.size(tf.constant(5.0)) == () and adcme.size(tf.constant(5.0), 1) == 1
    assert adcme.length(x) == 24 and adcme.ndims(x) == 3
    assert adcme.length(tf.constant(5.0)) == 1 and adcme.ndims(tf.constant(5.0)) == 0
    assert adcme.length(tf.zeros([3, 0])) == 0


def test_size_of_a_partially_known_shape():
    x = tf.placeholder(tf.float64, [None, 3])
    assert adcme.size(x) == (None, 3)
    assert adcme.size(x, 1) is None and adcme.size(x, 2) == 3 and adcme.size(x, 3) == 1
    assert adcme.length(x) is None and adcme.ndims(x) == 2


def test_size_of_an_unknown_rank():
    x = tf.placeholder(tf.float32)
    assert adcme.size(x) is None and adcme.size(x, 1) is None and adcme.length(x) is None
    with pytest.raises(ValueError, match="rank of .* is unknown"):
        adcme.ndims(x)


def test_size_of_a_variable():
    v = tf.Variable(np.zeros((4, 5)))
    assert adcme.size(v) == (4, 5) and adcme.length(v) == 20 and adcme.ndims(v) == 2


@pytest.mark.parametrize("d", [0, -1])
def test_size_dimension_below_one_is_an_error(d):
    with pytest.raises(ValueError, match=f"dimension {d} .* out of range"):
        adcme.size(tf.zeros([2, 3]), d)


def test_length_of_python_objects():
    assert adcme.length([1, 2, 3]) == 3 and adcme.length((4,)) == 1 and adcme.length([]) == 0
    assert adcme.length([tf.zeros([5]), tf.zeros([6])]) == 2  # a list of tensors is a list


# --- getindex: every index kind on ranks 1, 2, 3 -------------------------------------------------------------------

KINDS = ["int", "colon", "vector", "empty", "mask", "fed_vector", "fed_scalar", "const_tensor"]


def make_index(kind: str, dim: int, feeds: dict):
    """(index for getindex, the same index for the NumPy reference) of the given kind on a dimension of size `dim`."""
    if kind == "int":
        return dim, dim
    if kind == "colon":
        return COLON, COLON
    if kind == "vector":  # repeated entries gather twice
        v = np.array([dim, 1, dim], np.int64)
        return v, v
    if kind == "empty":
        v = np.zeros(0, np.int64)
        return v, v
    if kind == "mask":
        m = np.arange(dim) % 2 == 0
        return m, m
    if kind == "fed_vector":
        p = tf.placeholder(tf.int32, [None])
        feeds[p] = np.array([1, dim, 1], np.int32)
        return p, feeds[p]
    if kind == "fed_scalar":  # a loop index: drops the dimension like an int
        p = tf.placeholder(tf.int64, [])
        feeds[p] = dim - 1 if dim > 1 else 1
        return p, int(feeds[p])
    v = np.array([dim, 1], np.int64)
    return tf.constant(v), v


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
def test_getindex_every_combination_of_index_kinds(shape):
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) * 1.5 - 7.0
    x = tf.constant(a)
    feeds, fetches, expected, labels = {}, [], [], []
    for kinds in itertools.product(KINDS, repeat=len(shape)):
        pairs = [make_index(k, d, feeds) for k, d in zip(kinds, shape)]
        y = adcme.getindex(x, *[p for p, _ in pairs])
        want = julia_getindex(a, *[r for _, r in pairs])
        static = [d for d in y.shape.as_list()]
        assert len(static) == want.ndim, kinds
        assert all(s is None or s == w for s, w in zip(static, want.shape)), (kinds, static, want.shape)
        fetches.append(y)
        expected.append(want)
        labels.append(kinds)
    for kinds, got, want in zip(labels, run(fetches, feeds), expected):
        assert got.shape == want.shape, kinds
        np.testing.assert_array_equal(got, want, err_msg=str(kinds))


def test_getindex_spot_values():
    a = np.arange(1.0, 13.0).reshape(3, 4)  # a[i, j] in Julia is a[i-1, j-1] here
    x = tf.constant(a)
    got = run([adcme.getindex(x, 2, 3), adcme.getindex(x, 3, COLON), adcme.getindex(x, COLON, 1),
               adcme.getindex(x, np.array([3, 1]), np.array([4])), adcme.getindex(x, np.array([True, False, True]), 2)])
    assert got[0] == 7.0
    np.testing.assert_array_equal(got[1], [9.0, 10.0, 11.0, 12.0])
    np.testing.assert_array_equal(got[2], [1.0, 5.0, 9.0])
    np.testing.assert_array_equal(got[3], [[12.0], [4.0]])
    np.testing.assert_array_equal(got[4], [2.0, 10.0])


def test_one_index_on_a_matrix_selects_rows():
    a = np.arange(12.0).reshape(3, 4)
    x = tf.constant(a)
    rows, row, mask_rows = run([adcme.getindex(x, np.array([3, 1, 3])), adcme.getindex(x, 2),
                                adcme.getindex(x, np.array([False, True, True]))])
    np.testing.assert_array_equal(rows, a[[2, 0, 2]])
    np.testing.assert_array_equal(row, a[1])
    np.testing.assert_array_equal(mask_rows, a[1:])


def test_one_index_on_rank_3_selects_along_the_first_dimension():
    a = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(run(adcme.getindex(tf.constant(a), 2)), a[1])


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (1, 5), (4, 1)])
def test_colon_alone_is_column_major_vec(shape):
    a = np.random.default_rng(0).normal(size=shape)
    y = adcme.getindex(tf.constant(a), COLON)
    assert y.shape.as_list() == [a.size]
    np.testing.assert_array_equal(run(y), a.reshape(-1, order="F"))


def test_colon_alone_on_a_vector_is_the_vector():
    a = np.array([3.0, 1.0, 2.0])
    np.testing.assert_array_equal(run(adcme.getindex(tf.constant(a), COLON)), a)


def test_no_index_is_the_tensor_itself():
    x = tf.constant([1.0, 2.0])
    assert adcme.getindex(x) is x


def test_end_is_the_callers_size():
    a = np.arange(20.0).reshape(4, 5)
    x = tf.constant(a)
    last = adcme.size(x, 2)  # what Julia's `end` in dimension 2 becomes
    got = run(adcme.getindex(x, COLON, np.arange(2, last + 1)))  # x[:, 2:end]
    np.testing.assert_array_equal(got, a[:, 1:])


def test_getindex_of_a_variable_and_of_numpy_and_lists():
    a = np.arange(6.0).reshape(2, 3)
    v = tf.Variable(a)
    y = adcme.getindex(v, 2, np.array([1, 3]))
    z = adcme.getindex(a, 1, 3)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_y, got_z = sess.run([y, z])
    np.testing.assert_array_equal(got_y, [3.0, 5.0])
    assert got_z == 2.0


def test_an_index_tensor_as_a_loop_index():
    a = np.arange(10.0) ** 2
    x = tf.constant(a)

    def body(i, total):
        return i + 1, total + adcme.getindex(x, i)

    _, total = tf.while_loop(lambda i, total: i <= 10, body, [tf.constant(1), tf.constant(0.0, tf.float64)])
    assert run(total) == a.sum()


def test_getindex_of_a_placeholder_with_unknown_dimensions():
    a = np.arange(12.0).reshape(3, 4)
    x = tf.placeholder(tf.float64, [None, None])
    mask = np.array([True, False, False, True])  # an unknown dimension takes a mask of any length
    y = adcme.getindex(x, np.array([3, 2]), mask)
    np.testing.assert_array_equal(run(y, {x: a}), a[np.ix_([2, 1], [0, 3])])


@settings(max_examples=25, deadline=None)
@given(st.data())
def test_getindex_random_index_vectors(data):
    shape = data.draw(st.lists(st.integers(1, 4), min_size=1, max_size=3), label="shape")
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    indices = [np.array(data.draw(st.lists(st.integers(1, d), max_size=5)), np.int64) for d in shape]
    tf.reset_default_graph()
    np.testing.assert_array_equal(run(adcme.getindex(tf.constant(a), *indices)), julia_getindex(a, *indices))


# --- getindex: gradients ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("indices", [
    (np.array([2, 2, 1, 4]),),
    (3,),
    (np.array([1, 3, 1]), COLON, 2),
    (2, np.array([True, False, True]), np.array([4, 4])),
    (COLON, COLON, COLON),
])
def test_gradient_through_getindex_scatters_back(indices):
    shape = (4,) if len(indices) == 1 else (3, 3, 4)
    a = np.random.default_rng(1).normal(size=shape)
    x = tf.constant(a)
    y = adcme.getindex(x, *indices)
    weights = np.random.default_rng(2).normal(size=julia_getindex(a, *indices).shape)
    (grad,) = tf.gradients(tf.reduce_sum(y * weights), [x])
    np.testing.assert_allclose(run(tf.convert_to_tensor(grad)), gather_gradient(a, indices, weights), rtol=1e-12)


def test_gradient_through_getindex_with_fed_indices_and_ones():
    a = np.arange(12.0).reshape(3, 4)
    x = tf.Variable(a)
    rows = tf.placeholder(tf.int32, [None])
    col = tf.placeholder(tf.int32, [])
    (grad,) = tf.gradients(tf.reduce_sum(adcme.getindex(x, rows, col)), [x])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(tf.convert_to_tensor(grad), {rows: [3, 1, 3], col: 2})
    want = np.zeros_like(a)
    np.add.at(want, ([2, 0, 2], [1, 1, 1]), 1.0)
    np.testing.assert_array_equal(got, want)


# --- getindex: placement ------------------------------------------------------------------------------------------


def test_getindex_ops_go_where_the_device_scope_puts_them(gpus, virtual_gpus_only):
    x = tf.constant(np.arange(12.0).reshape(3, 4))
    i = tf.placeholder(tf.int32, [])
    before = set(tf.get_default_graph().get_operations())
    with tf.device("/gpu:0"):
        y = adcme.getindex(x, i, np.array([4, 1]))
    made = [op for op in tf.get_default_graph().get_operations() if op not in before]
    assert made and all("GPU:0" in op.device for op in made), [(op.name, op.device) for op in made]
    with tf.Session() as sess:
        assert sess.placement(y) == GPU0
        np.testing.assert_array_equal(sess.run(y, {i: 2}), [7.0, 4.0])


# --- getindex: errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("indices, bad, dim", [
    ((4, 1), 4, 1),
    ((1, 5), 5, 2),
    ((0, 1), 0, 1),
    ((1, np.array([1, 6])), 6, 2),
    ((np.array([-1]), COLON), -1, 1),
    ((np.array([4]),), 4, 1),  # one index on a matrix: rows
])
def test_out_of_bounds_static_index(indices, bad, dim):
    x = tf.zeros([3, 4], name="A")
    with pytest.raises(ValueError, match=rf"index {bad} is out of bounds for dimension {dim} of A.*size {[3, 4][dim - 1]}"):
        adcme.getindex(x, *indices)


@pytest.mark.parametrize("count", [2, 4])
def test_wrong_number_of_indices(count):
    x = tf.zeros([2, 3, 4], name="B")
    with pytest.raises(ValueError, match=f"{count} indices for B.* rank 3"):
        adcme.getindex(x, *([1] * count))


@pytest.mark.parametrize("index", [1.0, 1.5, np.array([1.0, 2.0]), np.float64(2.0)])
def test_float_index_is_a_type_error(index):
    with pytest.raises(TypeError, match="not an integer"):
        adcme.getindex(tf.zeros([3, 4]), index, 1)


def test_bool_scalar_index_is_a_type_error():
    with pytest.raises(TypeError, match="Bool index"):
        adcme.getindex(tf.zeros([3, 4]), True, 1)


@pytest.mark.parametrize("mask", [np.array([True, False]), np.array([True] * 5), np.ones((2, 2), bool)])
def test_mask_of_the_wrong_length(mask):
    with pytest.raises(ValueError, match="mask .* dimension 2 .* has 4"):
        adcme.getindex(tf.zeros([3, 4]), COLON, mask)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64, tf.bool])
def test_non_integer_index_tensor_is_a_type_error(dtype):
    index = tf.placeholder(dtype, [None], name="idx")
    with pytest.raises(TypeError, match=f"index tensor idx.* must be integer, got {dtype.name}"):
        adcme.getindex(tf.zeros([3, 4]), index, 1)


def test_failed_getindex_adds_no_ops():
    x = tf.zeros([3, 4])
    count = len(tf.get_default_graph().get_operations())
    with pytest.raises(ValueError):
        adcme.getindex(x, 1, 9)
    assert len(tf.get_default_graph().get_operations()) == count


def test_an_error_in_an_earlier_dimension_adds_no_gathers():
    x = tf.zeros([3, 4], name="C")
    count = len(tf.get_default_graph().get_operations())
    with pytest.raises(ValueError, match="index 7 is out of bounds for dimension 1 of C"):
        adcme.getindex(x, 7, np.array([1, 2]))
    assert len(tf.get_default_graph().get_operations()) == count


def test_numpy_scalars_lists_and_an_empty_list_as_indices():
    a = np.arange(12.0).reshape(3, 4)
    x = tf.constant(a)
    got = run([adcme.getindex(x, np.int64(3), np.int32(2)), adcme.getindex(x, [3, 1], 4), adcme.getindex(x, [], COLON)])
    assert got[0] == a[2, 1]
    np.testing.assert_array_equal(got[1], a[[2, 0], 3])
    assert got[2].shape == (0, 4)


def test_index_zero_on_an_unknown_dimension_is_still_out_of_bounds():
    x = tf.placeholder(tf.float64, [None, 3], name="P")
    with pytest.raises(ValueError, match="index 0 is out of bounds for dimension 1 of P.*size None"):
        adcme.getindex(x, np.array([2, 0]), 1)


def test_a_zero_dimensional_index_array_drops_its_dimension():
    a = np.arange(6.0).reshape(2, 3)
    x = tf.constant(a)
    y = adcme.getindex(x, np.array(2), COLON)
    z = adcme.scatter_update(x, np.array(2), COLON, np.array([7.0, 8.0, 9.0]))
    assert y.shape.as_list() == [3]
    got_y, got_z = run([y, z])
    np.testing.assert_array_equal(got_y, a[1])
    np.testing.assert_array_equal(got_z, [a[0], [7.0, 8.0, 9.0]])
    with pytest.raises(ValueError, match="index 3 is out of bounds"):
        adcme.getindex(x, np.array(3), 1)


def test_an_index_on_a_scalar_is_an_error():
    with pytest.raises(ValueError, match="1 indices for S.* rank 0"):
        adcme.getindex(tf.constant(3.0, name="S"), 1)
