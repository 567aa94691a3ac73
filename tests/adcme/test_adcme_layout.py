"""Tests for adplace/adcme/layout.py: Julia's column-major reshape and vec (NumPy's order="F"), rvec/cvec and
transpose/adjoint."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import adplace as tf
from adplace import adcme
from adcme_reference import run


@pytest.mark.parametrize("shape, dims", [
    ((6,), (2, 3)),
    ((6,), (3, -1)),
    ((24,), (2, 3, 4)),
    ((24,), (4, -1, 2)),
    ((2, 3, 4), (6, 4)),
    ((2, 3, 4), (2, 12)),
    ((2, 3, 4), (-1, 3)),
    ((2, 3, 4), (24,)),
    ((2, 3, 4), (4, 3, 2)),
    ((3, 4), (2, 6)),
    ((3, 4), (12, 1)),
    ((3, 4), (1, -1)),
    ((3, 4), (2, 1, 6)),
    ((2, 3, 2, 2), (3, 8)),
    ((1,), ()),
    ((), (1, 1)),
])
def test_reshape_is_numpy_order_f(shape, dims):
    a = np.random.default_rng(0).normal(size=shape)
    y = adcme.reshape(tf.constant(a), dims)
    want = np.reshape(a, dims, order="F")
    assert y.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(run(y), want)


def test_reshape_spot_values():
    # Julia: reshape(1:6, 2, 3) == [1 3 5; 2 4 6]
    got = run(adcme.reshape(tf.constant(np.arange(1.0, 7.0)), [2, 3]))
    np.testing.assert_array_equal(got, [[1, 3, 5], [2, 4, 6]])
    # Julia: vec([1 2 3; 4 5 6]) == [1, 4, 2, 5, 3, 6]
    np.testing.assert_array_equal(run(adcme.vec(tf.constant([[1, 2, 3], [4, 5, 6]]))), [1, 4, 2, 5, 3, 6])


def test_reshape_accepts_numpy_integers_and_a_tuple():
    a = np.arange(12).reshape(3, 4)
    got = run(adcme.reshape(tf.constant(a), (np.int64(2), np.int32(6))))
    np.testing.assert_array_equal(got, np.reshape(a, (2, 6), order="F"))


def test_reshape_of_a_placeholder_with_unknown_dimensions():
    a = np.arange(24.0).reshape(4, 6)
    x = tf.placeholder(tf.float64, [None, None])
    y = adcme.reshape(x, [3, -1, 2])
    z = adcme.vec(x)
    got_y, got_z = run([y, z], {x: a})
    np.testing.assert_array_equal(got_y, np.reshape(a, (3, -1, 2), order="F"))
    np.testing.assert_array_equal(got_z, a.reshape(-1, order="F"))
    b = np.arange(6.0).reshape(3, 2)  # the same graph, another size
    np.testing.assert_array_equal(run(z, {x: b}), [0, 2, 4, 1, 3, 5])


def test_reshape_of_a_placeholder_with_unknown_rank():
    a = np.arange(12.0).reshape(2, 3, 2)
    x = tf.placeholder(tf.float64)
    np.testing.assert_array_equal(run(adcme.reshape(x, [4, 3]), {x: a}), np.reshape(a, (4, 3), order="F"))
    np.testing.assert_array_equal(run(adcme.vec(x), {x: a}), a.reshape(-1, order="F"))


def test_reshape_round_trip_and_numpy_input():
    a = np.random.default_rng(1).normal(size=(3, 5))
    back = adcme.reshape(adcme.reshape(a, [5, 3]), [3, 5])
    np.testing.assert_array_equal(run(back), a)


def test_reshape_of_the_wrong_size_is_an_error():
    with pytest.raises(ValueError):
        adcme.reshape(tf.zeros([2, 3]), [4, 2])


def test_reshape_gradient_is_the_inverse_permutation():
    a = np.arange(6.0).reshape(2, 3)
    weights = np.arange(1.0, 7.0).reshape(3, 2)
    x = tf.constant(a)
    (grad,) = tf.gradients(tf.reduce_sum(adcme.reshape(x, [3, 2]) * weights), [x])
    np.testing.assert_array_equal(run(grad), np.reshape(weights, (2, 3), order="F"))


# --- vec, rvec, cvec ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4), (1, 1, 3)])
def test_vec_rvec_cvec(shape):
    a = np.random.default_rng(2).normal(size=shape)
    x = tf.constant(a)
    v, r, c = adcme.vec(x), adcme.rvec(x), adcme.cvec(x)
    n = a.size
    assert v.shape.as_list() == [n] and r.shape.as_list() == [1, n] and c.shape.as_list() == [n, 1]
    got_v, got_r, got_c = run([v, r, c])
    flat = a.reshape(-1, order="F")
    np.testing.assert_array_equal(got_v, flat)
    np.testing.assert_array_equal(got_r, flat[None, :])
    np.testing.assert_array_equal(got_c, flat[:, None])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=0, max_size=4), st.data())
def test_reshape_and_vec_random_shapes(shape, data):
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    factors = [d for d in range(1, a.size + 1) if a.size % d == 0]
    first = data.draw(st.sampled_from(factors), label="first")
    dims = data.draw(st.permutations([first, a.size // first, 1]), label="dims")
    dims = list(dims)
    if data.draw(st.booleans(), label="use -1"):
        dims[data.draw(st.integers(0, 2), label="which")] = -1
    tf.reset_default_graph()
    x = tf.constant(a)
    got_r, got_v = run([adcme.reshape(x, dims), adcme.vec(x)])
    np.testing.assert_array_equal(got_r, np.reshape(a, dims, order="F"))
    np.testing.assert_array_equal(got_v, a.reshape(-1, order="F"))


# --- transpose, adjoint -------------------------------------------------------------------------------------------


def test_transpose_and_adjoint_of_real_tensors():
    m = np.arange(6.0).reshape(2, 3)
    v = np.array([1.0, 2.0, 3.0])
    got = run([adcme.transpose(tf.constant(m)), adcme.adjoint(tf.constant(m)), adcme.transpose(tf.constant(v)),
               adcme.adjoint(tf.constant(v)), adcme.transpose(tf.constant(4.0)), adcme.adjoint(tf.constant(4.0))])
    np.testing.assert_array_equal(got[0], m.T)
    np.testing.assert_array_equal(got[1], m.T)
    np.testing.assert_array_equal(got[2], v[None, :])
    np.testing.assert_array_equal(got[3], v[None, :])
    assert got[2].shape == got[3].shape == (1, 3)
    assert got[4] == got[5] == 4.0


def test_transpose_and_adjoint_of_complex_tensors():
    m = np.array([[1 + 2j, 3 - 1j, 0.5j], [-2 + 0j, 1 + 1j, 4 - 4j]])
    v = np.array([1 + 1j, 2 - 3j])
    got = run([adcme.transpose(tf.constant(m)), adcme.adjoint(tf.constant(m)), adcme.transpose(tf.constant(v)),
               adcme.adjoint(tf.constant(v)), adcme.adjoint(tf.constant(2 + 5j))])
    np.testing.assert_array_equal(got[0], m.T)
    np.testing.assert_array_equal(got[1], m.conj().T)
    np.testing.assert_array_equal(got[2], v[None, :])
    np.testing.assert_array_equal(got[3], v.conj()[None, :])
    assert got[4] == 2 - 5j


def test_transpose_of_rank_3_swaps_the_last_two_dimensions():
    a = np.arange(24.0).reshape(2, 3, 4)
    y = adcme.transpose(tf.constant(a))
    assert y.shape.as_list() == [2, 4, 3]
    np.testing.assert_array_equal(run(y), np.swapaxes(a, -1, -2))


def test_transpose_of_a_placeholder_with_unknown_dimensions():
    a = np.arange(6.0).reshape(3, 2)
    x = tf.placeholder(tf.float64, [None, None])
    v = tf.placeholder(tf.float64, [None])
    got_x, got_v = run([adcme.transpose(x), adcme.adjoint(v)], {x: a, v: a[:, 0]})
    np.testing.assert_array_equal(got_x, a.T)
    np.testing.assert_array_equal(got_v, a[:, 0][None, :])
