"""Tests for adplace/adcme/indexing.py's scatter_update/add/sub (ADCME's `A[i...] = v` as a new tensor), against a
NumPy copy assigned (or np.add.at) at the same 1-based indices."""
import itertools

import numpy as np
import pytest

import adplace as tf
from adplace import adcme
from adcme_reference import COLON, julia_getindex, julia_scatter, kept_shape, run
from placement_log import GPU0

SCATTERS = {"update": adcme.scatter_update, "add": adcme.scatter_add, "sub": adcme.scatter_sub}
KINDS = ["int", "colon", "vector", "mask", "fed_vector", "fed_scalar", "const_tensor"]


def make_index(kind: str, dim: int, feeds: dict):
    """(index for the scatter, the same index for the NumPy reference); no repeated positions (update's result
    would depend on the order)."""
    if kind == "int":
        return dim, dim
    if kind == "colon":
        return COLON, COLON
    if kind == "vector":
        v = np.array([dim, 1], np.int64)
        return v, v
    if kind == "mask":
        m = np.arange(dim) % 2 == 1
        return m, m
    if kind == "fed_vector":
        p = tf.placeholder(tf.int32, [None])
        feeds[p] = np.array([1, dim], np.int32)
        return p, feeds[p]
    if kind == "fed_scalar":
        p = tf.placeholder(tf.int32, [])
        feeds[p] = dim - 1
        return p, int(feeds[p])
    v = np.array([2], np.int64)
    return tf.constant(v), v


@pytest.mark.parametrize("how", sorted(SCATTERS))
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
def test_scatter_every_combination_of_index_kinds(how, shape):
    rng = np.random.default_rng(len(shape))
    a = rng.normal(size=shape)
    x = tf.constant(a)
    feeds, fetches, expected, labels = {}, [], [], []
    for kinds in itertools.product(KINDS, repeat=len(shape)):
        pairs = [make_index(k, d, feeds) for k, d in zip(kinds, shape)]
        values = rng.normal(size=kept_shape(a, [r for _, r in pairs]))
        y = SCATTERS[how](x, *[p for p, _ in pairs], values)
        assert y.shape.as_list() == list(shape), kinds
        fetches.append(y)
        expected.append(julia_scatter(a, [r for _, r in pairs], values, how))
        labels.append(kinds)
    for kinds, got, want in zip(labels, run(fetches, feeds), expected):
        np.testing.assert_allclose(got, want, rtol=1e-15, err_msg=str(kinds))


def test_scatter_spot_values():
    a = np.zeros((2, 3))
    x = tf.constant(a)
    got = run([adcme.scatter_update(x, 2, 3, 7.0), adcme.scatter_add(x, COLON, 1, np.array([1.0, 2.0])),
               adcme.scatter_sub(x, 1, np.array([3, 1]), np.array([5.0, 6.0]))])
    np.testing.assert_array_equal(got[0], [[0, 0, 0], [0, 0, 7]])
    np.testing.assert_array_equal(got[1], [[1, 0, 0], [2, 0, 0]])
    np.testing.assert_array_equal(got[2], [[-6, 0, -5], [0, 0, 0]])


@pytest.mark.parametrize("how", sorted(SCATTERS))
def test_scalar_updates_broadcast(how):
    a = np.arange(12.0).reshape(3, 4)
    indices = (np.array([1, 3]), COLON)
    got = run(SCATTERS[how](tf.constant(a), *indices, 2.5))
    np.testing.assert_array_equal(got, julia_scatter(a, indices, 2.5, how))
    got_tensor = run(SCATTERS[how](tf.constant(a), *indices, tf.constant(2.5, tf.float64)))
    np.testing.assert_array_equal(got_tensor, got)


def test_a_row_broadcasts_over_the_indexed_rows():
    """Julia's rule: a 1×n row fills every indexed row (`A[[1, 3], :] .= [1 2 3 4]`)."""
    a = np.zeros((3, 4))
    row = np.array([[1.0, 2.0, 3.0, 4.0]])
    got = run(adcme.scatter_update(tf.constant(a), np.array([1, 3]), COLON, row))
    np.testing.assert_array_equal(got, [row[0], np.zeros(4), row[0]])


def test_a_vector_broadcasts_along_the_leading_dimension_as_in_julia():
    """Julia broadcasts from the first dimension (NumPy from the last): a vector set into `A[:, 1:2]` fills each of
    the two columns (`A[:, 1:2] .= [1, 2, 3]`), even when its length equals the number of columns."""
    a = np.zeros((2, 2))
    got = run(adcme.scatter_update(tf.constant(a), COLON, np.array([1, 2]), np.array([5.0, 6.0])))
    np.testing.assert_array_equal(got, [[5.0, 5.0], [6.0, 6.0]])
    b = np.zeros((3, 4))
    got = run(adcme.scatter_add(tf.constant(b), COLON, np.array([2, 4]), np.array([1.0, 2.0, 3.0])))
    np.testing.assert_array_equal(got, [[0, 1, 0, 1], [0, 2, 0, 2], [0, 3, 0, 3]])
    with pytest.raises(ValueError):  # a length-4 vector has no place along a dimension of 3
        adcme.scatter_update(tf.constant(b), COLON, COLON, np.arange(4.0))


def test_scatter_add_repeated_indices_add_up():
    a = np.zeros(4)
    got = run(adcme.scatter_add(tf.constant(a), np.array([2, 2, 4, 2]), np.array([1.0, 10.0, 100.0, 1000.0])))
    np.testing.assert_array_equal(got, [0.0, 1011.0, 0.0, 100.0])
    b = np.ones((2, 2))
    got = run(adcme.scatter_sub(tf.constant(b), np.array([1, 1]), np.array([2, 2, 2]), 1.0))
    np.testing.assert_array_equal(got, [[1.0, -5.0], [1.0, 1.0]])


def test_scatter_add_with_a_fed_index_repeated():
    i = tf.placeholder(tf.int64, [None])
    y = adcme.scatter_add(tf.zeros([3], tf.float64), i, 1.0)
    np.testing.assert_array_equal(run(y, {i: [3, 3, 1, 3]}), [1.0, 0.0, 3.0])
    np.testing.assert_array_equal(run(y, {i: []}), [0.0, 0.0, 0.0])


def test_empty_index_vector_changes_nothing():
    a = np.arange(6.0).reshape(2, 3)
    got = run(adcme.scatter_update(tf.constant(a), np.zeros(0, np.int64), COLON, 9.0))
    np.testing.assert_array_equal(got, a)


# --- dtypes -------------------------------------------------------------------------------------------------------


def test_int_updates_into_a_float_tensor():
    x = tf.constant(np.zeros(4, np.float32))
    y = adcme.scatter_update(x, np.array([1, 4]), [3, 5])
    z = adcme.scatter_add(x, 2, 7)
    w = adcme.scatter_sub(x, COLON, tf.constant([1, 2, 3, 4], tf.int32))
    assert y.dtype == z.dtype == w.dtype == tf.float32
    got = run([y, z, w])
    np.testing.assert_array_equal(got[0], [3.0, 0.0, 0.0, 5.0])
    np.testing.assert_array_equal(got[1], [0.0, 7.0, 0.0, 0.0])
    np.testing.assert_array_equal(got[2], [-1.0, -2.0, -3.0, -4.0])


def test_a_float32_update_into_a_float64_ref():
    x = tf.constant(np.zeros((2, 2)))
    y = adcme.scatter_update(x, 1, COLON, tf.constant([0.5, 0.25], tf.float32))
    assert y.dtype == tf.float64
    np.testing.assert_array_equal(run(y), [[0.5, 0.25], [0.0, 0.0]])


def test_an_int_ref_keeps_its_dtype():
    y = adcme.scatter_add(tf.constant([1, 2, 3]), 3, 10)
    assert y.dtype == tf.int32
    np.testing.assert_array_equal(run(y), [1, 2, 13])


# --- tensors are values ---------------------------------------------------------------------------------------------


def test_the_input_is_unchanged():
    a = np.arange(6.0).reshape(2, 3)
    v = tf.Variable(a)
    x = tf.constant(a)
    y, z = adcme.scatter_update(x, 1, 1, -1.0), adcme.scatter_add(v, COLON, 2, 100.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_x, got_y, got_v, got_z = sess.run([x, y, v, z])
        got_v_again = sess.run(v)
    np.testing.assert_array_equal(got_x, a)
    np.testing.assert_array_equal(got_v, a)
    np.testing.assert_array_equal(got_v_again, a)
    assert got_y[0, 0] == -1.0 and got_z[0, 1] == 101.0 and got_z[1, 1] == 104.0


def test_scatter_on_a_placeholder_with_an_unknown_dimension():
    a = np.arange(12.0).reshape(4, 3)
    x = tf.placeholder(tf.float64, [None, 3])
    y = adcme.scatter_update(x, COLON, 2, 0.0)
    z = adcme.scatter_add(x, COLON, np.array([1, 3]), tf.ones([4, 2], tf.float64))
    got_y, got_z = run([y, z], {x: a})
    np.testing.assert_array_equal(got_y, julia_scatter(a, (COLON, 2), 0.0, "update"))
    np.testing.assert_array_equal(got_z, julia_scatter(a, (COLON, np.array([1, 3])), 1.0, "add"))


# --- gradients ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", sorted(SCATTERS))
@pytest.mark.parametrize("indices", [(np.array([3, 1]), 2), (COLON, np.array([True, False, True, True]))])
def test_gradients_with_respect_to_ref_and_updates(how, indices):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(3, 4))
    u = rng.normal(size=kept_shape(a, indices))
    weights = rng.normal(size=a.shape)
    x, v = tf.constant(a), tf.constant(u)
    loss = tf.reduce_sum(SCATTERS[how](x, *indices, v) * weights)
    grad_x, grad_v = run([tf.convert_to_tensor(g) for g in tf.gradients(loss, [x, v])])
    mask = julia_scatter(np.zeros_like(a), indices, 1.0, "update")  # 1 where the scatter writes
    np.testing.assert_allclose(grad_x, weights * (1 - mask) if how == "update" else weights, rtol=1e-12)
    sign = -1.0 if how == "sub" else 1.0
    np.testing.assert_allclose(grad_v, sign * julia_getindex(weights, *indices), rtol=1e-12)


def test_gradient_of_a_broadcast_scalar_update_sums():
    a = np.arange(12.0).reshape(3, 4)
    weights = np.random.default_rng(4).normal(size=a.shape)
    s = tf.constant(2.0, tf.float64)
    (grad,) = tf.gradients(tf.reduce_sum(adcme.scatter_update(tf.constant(a), 2, COLON, s) * weights), [s])
    np.testing.assert_allclose(run(grad), weights[1].sum(), rtol=1e-12)


def test_gradient_of_repeated_scatter_add():
    u = tf.constant([1.0, 2.0, 3.0], tf.float64)
    weights = np.array([10.0, 20.0, 30.0])
    (grad,) = tf.gradients(tf.reduce_sum(adcme.scatter_add(tf.zeros([3], tf.float64), np.array([2, 2, 3]), u)
                                         * weights), [u])
    np.testing.assert_array_equal(run(grad), [20.0, 20.0, 30.0])


# --- placement and errors ---------------------------------------------------------------------------------------------


def test_scatter_ops_go_where_the_device_scope_puts_them(gpus, virtual_gpus_only):
    x = tf.constant(np.zeros((2, 3)))
    before = set(tf.get_default_graph().get_operations())
    with tf.device("/gpu:0"):
        y = adcme.scatter_add(x, 2, np.array([1, 3]), 1.0)
    made = [op for op in tf.get_default_graph().get_operations() if op not in before]
    assert made and all("GPU:0" in op.device for op in made), [(op.name, op.device) for op in made]
    with tf.Session() as sess:
        assert sess.placement(y) == GPU0
        np.testing.assert_array_equal(sess.run(y), [[0, 0, 0], [1, 0, 1]])


def test_scatter_errors():
    x = tf.zeros([2, 3], name="R")
    with pytest.raises(TypeError, match="scatter_update: expected indices and updates"):
        adcme.scatter_update(x, 1.0)
    with pytest.raises(ValueError, match="scatter_add: 1 indices for R.* rank 2"):
        adcme.scatter_add(x, 1, 1.0)
    with pytest.raises(ValueError, match="index 3 is out of bounds for dimension 1 of R"):
        adcme.scatter_sub(x, 3, 1, 1.0)
    with pytest.raises(ValueError, match="rank of .* is unknown"):
        adcme.scatter_update(tf.placeholder(tf.float32), 1, 1.0)
    with pytest.raises(TypeError, match="must be integer"):
        adcme.scatter_update(x, tf.constant(1.0), 1, 1.0)
    with pytest.raises(ValueError):  # a value that does not broadcast to the indexed 2×2
        adcme.scatter_update(x, COLON, np.array([1, 2]), np.ones(3))
