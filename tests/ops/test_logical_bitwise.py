"""Tests for the logical, bitwise and predicate ops of adplace.ops.math_ops, the Python operators & | ^ ~ on Tensor
and Variable (logical for bool, bitwise for integers, TypeError for floats, as TF), and the bool reductions."""

import numpy as np
import pytest

import adplace as tf

A = np.array([True, False, True, False])
B = np.array([True, True, False, False])


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def test_logical_ops_values_and_op_types():
    a, b = tf.constant(A), tf.constant(B)
    ops = [tf.logical_and(a, b), tf.logical_or(a, b), tf.logical_not(a), tf.logical_xor(a, b)]
    assert [o.op.type for o in ops] == ["LogicalAnd", "LogicalOr", "LogicalNot", "LogicalAnd"]
    assert ops[3].op.name == "LogicalXor"
    for got, want in zip(run(ops), [A & B, A | B, ~A, A ^ B]):
        np.testing.assert_array_equal(got, want)


def test_logical_ops_broadcast_and_reject_non_bool():
    m = tf.logical_and(tf.constant([[True], [False]]), tf.constant(B))
    assert m.shape.as_list() == [2, 4]
    np.testing.assert_array_equal(run(m), [B, np.zeros(4, bool)])
    with pytest.raises(TypeError, match="parameter 'x' has DataType float32 not in list of allowed values: bool"):
        tf.logical_and(tf.constant([1.0]), tf.constant([1.0]))


def test_bitwise_namespace():
    x, y = np.array([6, 3, -1], np.int32), np.array([5, 1, 2], np.int32)
    ops = [tf.bitwise.bitwise_and(x, y), tf.bitwise.bitwise_or(x, y), tf.bitwise.bitwise_xor(x, y),
           tf.bitwise.invert(x), tf.bitwise.left_shift(x, y), tf.bitwise.right_shift(x, y)]
    assert [o.op.type for o in ops] == ["BitwiseAnd", "BitwiseOr", "BitwiseXor", "Invert", "LeftShift",
                                        "RightShift"]
    for got, want in zip(run(ops), [x & y, x | y, x ^ y, ~x, x << y, x >> y]):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match="parameter 'x' has DataType float32"):
        tf.bitwise.bitwise_and(tf.constant([1.0]), tf.constant([1.0]))


def test_operators_on_bool_tensors_are_logical():
    a, b = tf.constant(A), tf.constant(B)
    ops = [a & b, a | b, a ^ b, ~a, a & True, False | b]
    assert [o.op.name for o in ops[:4]] == ["and", "or", "xor", "LogicalNot"]
    for got, want in zip(run(ops), [A & B, A | B, A ^ B, ~A, A, B]):
        np.testing.assert_array_equal(got, want)


def test_operators_on_integer_tensors_are_bitwise():
    i = tf.constant(np.array([6, 3], np.int64))
    ops = [i & 5, i | 8, 1 ^ i, ~i]
    assert ops[0].op.type == "BitwiseAnd" and ops[0].op.name == "and/BitwiseAnd"
    assert ops[2].op.type == "BitwiseXor" and ops[3].op.type == "Invert"
    values = run(ops)
    assert values[0].dtype == np.int64
    for got, want in zip(values, [[4, 1], [14, 11], [7, 2], [-7, -4]]):
        np.testing.assert_array_equal(got, want)


def test_operators_on_float_tensors_raise_type_error():
    f = tf.constant([1.0])
    for apply in (lambda: f & f, lambda: f | 1.0, lambda: f ^ f, lambda: ~f):
        with pytest.raises(TypeError, match="not in list of allowed values"):
            apply()


def test_operators_on_variables_forward_to_their_value():
    v = tf.Variable([True, False])
    w = tf.Variable(np.array([12, 10], np.int32))
    ops = [v & [True, True], ~v, v ^ True, w | 1, ~w]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        values = sess.run(ops)
    for got, want in zip(values, [[True, False], [False, True], [False, True], [13, 11], [-13, -11]]):
        np.testing.assert_array_equal(got, want)


def test_logical_and_bitwise_ops_have_no_gradient():
    x = tf.placeholder(tf.float32, [2])
    mask = tf.logical_and(x > 0, x < 1)
    assert tf.gradients(tf.cast(mask, tf.float32), x) == [None]


def test_getitem_still_slices():
    t = tf.constant(np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(run(t[1, ::-1]), [5, 4, 3])


# --- predicates and bool reductions ---------------------------------------------------------------------------------
def test_is_finite_nan_inf():
    x = np.array([1.0, np.nan, np.inf, -np.inf], np.float32)
    ops = [tf.is_finite(x), tf.is_nan(x), tf.is_inf(x)]
    assert all(o.dtype == tf.bool for o in ops)
    for got, want in zip(run(ops), [np.isfinite(x), np.isnan(x), np.isinf(x)]):
        np.testing.assert_array_equal(got, want)


def test_reduce_any_all():
    m = np.array([[True, False], [True, True]])
    ops = [tf.reduce_any(m), tf.reduce_all(m, 1), tf.reduce_any(m, 0, keepdims=True),
           tf.reduce_all(m, reduction_indices=[0], keep_dims=True)]
    assert ops[0].op.type == "Any" and ops[1].op.type == "All"
    assert [o.shape.as_list() for o in ops] == [[], [2], [1, 2], [1, 2]]
    for got, want in zip(run(ops), [True, [False, True], [[True, True]], [[True, False]]]):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError, match="parameter 'input' has DataType float32 not in list of allowed values: bool"):
        tf.reduce_any([1.0])


def test_count_nonzero():
    x = np.array([[0.0, 1.5, 0.0], [2.0, -1.0, 0.0]])
    c = tf.count_nonzero(x, axis=1)
    assert c.dtype == tf.int64 and c.shape.as_list() == [2]
    np.testing.assert_array_equal(run(c), [1, 2])
    total = tf.count_nonzero(x, dtype=tf.int32, keepdims=True)
    assert total.dtype == tf.int32 and total.shape.as_list() == [1, 1]
    assert run(total)[0, 0] == 3
    assert run(tf.count_nonzero([True, False, True])) == 2


def test_reduce_logsumexp_is_stable_and_differentiable():
    x = np.array([[1000.0, 1000.0], [-np.inf, 0.0]])
    lse = tf.reduce_logsumexp(x, axis=1)
    assert lse.op.name == "ReduceLogSumExp" and lse.shape.as_list() == [2]
    np.testing.assert_allclose(run(lse), [1000.0 + np.log(2.0), 0.0])
    np.testing.assert_allclose(run(tf.reduce_logsumexp(x[1:], keepdims=True)), [[0.0]])
    assert run(tf.reduce_logsumexp(tf.constant([-np.inf, -np.inf]))) == -np.inf
    p = tf.placeholder(tf.float64, [2, 3])
    y = tf.reduce_logsumexp(p, 0)
    x0 = np.random.default_rng(1).normal(size=(2, 3))
    with tf.Session():
        assert tf.test.compute_gradient_error(p, [2, 3], y, [3], x_init_value=x0) < 1e-6
