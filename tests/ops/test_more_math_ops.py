"""Tests for the TF1 math ops added to adplace/ops/math_ops.py (round, inverse trigonometric and hyperbolic, erf,
lgamma, digamma, polygamma, atan2, truncatediv/mod, div_no_nan, realdiv, log_sigmoid, to_int32 and friends) and for
the special functions of adplace/kernels/special.py: NumPy or `math` reference values, TF's op names and errors,
numerical gradients."""
import math

import numpy as np
import pytest

import adplace as tf
from adplace.kernels import special


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def gradient_error(fn, x0):
    with tf.Session():
        x = tf.constant(x0)
        y = fn(x)
        return tf.test.compute_gradient_error(x, list(x0.shape), y, y.shape.as_list(), x_init_value=x0)


# --- unary ops ------------------------------------------------------------------------------------------------------
UNARY = [  # public function, op type, NumPy reference, input range, gradient checked
    (tf.atan, "Atan", np.arctan, (-3, 3)), (tf.asin, "Asin", np.arcsin, (-0.9, 0.9)),
    (tf.acos, "Acos", np.arccos, (-0.9, 0.9)), (tf.sinh, "Sinh", np.sinh, (-2, 2)), (tf.cosh, "Cosh", np.cosh, (-2, 2)),
    (tf.asinh, "Asinh", np.arcsinh, (-3, 3)), (tf.acosh, "Acosh", np.arccosh, (1.2, 4)),
    (tf.atanh, "Atanh", np.arctanh, (-0.9, 0.9)), (tf.expm1, "Expm1", np.expm1, (-2, 2)),
    (tf.erf, "Erf", np.vectorize(math.erf), (-3.5, 3.5)), (tf.erfc, "Erfc", np.vectorize(math.erfc), (-3.5, 5)),
    (tf.lgamma, "Lgamma", np.vectorize(math.lgamma), (0.1, 8)),
]


@pytest.mark.parametrize("fn,op_type,reference,bounds", UNARY, ids=[u[1] for u in UNARY])
def test_unary_op_values_names_and_gradients(fn, op_type, reference, bounds):
    x0 = np.random.default_rng(0).uniform(*bounds, size=(3, 4))
    y = fn(tf.constant(x0))
    assert y.op.type == op_type and y.op.name == op_type and y.dtype == tf.float64
    np.testing.assert_allclose(run(y), reference(x0), rtol=1e-12, atol=1e-14)
    y32 = fn(tf.constant(x0.astype(np.float32)))
    assert run(y32).dtype == np.float32
    assert gradient_error(fn, x0) < 1e-3  # central differences of step 1e-3 on curved functions


def test_unary_float_ops_reject_integers_with_tf_type_error():
    with pytest.raises(TypeError, match=r"Value passed to parameter 'x' has DataType int32 not in list of allowed "
                                        r"values: .*float32.* \(op: 'Erf'\)"):
        tf.erf(tf.constant([1, 2]))


def test_round_is_bankers_rounding_and_keeps_integers():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4999, 2.6])
    np.testing.assert_array_equal(run(tf.round(x)), [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 0.0, 3.0])
    np.testing.assert_array_equal(run(tf.rint(x)), np.rint(x))
    ints = tf.round(tf.constant([3, -4]))
    assert ints.dtype == tf.int32 and run(ints).tolist() == [3, -4]
    p = tf.constant([0.7, 1.2])
    assert tf.gradients(tf.round(p), p) == [None] and tf.gradients(tf.rint(p), p) == [None]


def test_digamma_and_polygamma_known_values_and_gradients():
    x = np.array([1.0, 0.5, 2.0, -0.5, 10.0])
    h = np.array([0.0, 0.0, 1.0, 0.0, sum(1 / k for k in range(1, 10))])
    expected = h - np.euler_gamma - np.array([0, 2 * math.log(2), 0, 2 * math.log(2) - 2, 0])
    np.testing.assert_allclose(run(tf.digamma(x)), expected, rtol=1e-13)
    ones = np.ones(3)
    np.testing.assert_allclose(run(tf.polygamma(np.array([1.0, 2.0, 0.0]), ones)),
                               [math.pi ** 2 / 6, -2 * 1.2020569031595942, -np.euler_gamma], rtol=1e-13)
    x0 = np.array([[0.7, 1.3, 3.5]])
    assert gradient_error(tf.digamma, x0) < 1e-4  # through Polygamma(1, x)
    assert gradient_error(lambda t: tf.polygamma(tf.constant(np.full((1, 3), 2.0)), t), x0) < 1e-3


def test_lgamma_and_digamma_at_poles_and_infinities():
    x = np.array([0.0, -1.0, -3.0, np.inf, -np.inf, np.nan])
    lg, dg = run([tf.lgamma(x), tf.digamma(x)])
    np.testing.assert_array_equal(lg, [np.inf, np.inf, np.inf, np.inf, np.inf, np.nan])
    np.testing.assert_array_equal(dg, [np.nan, np.nan, np.nan, np.inf, np.nan, np.nan])


def test_special_functions_match_math_over_a_wide_range():
    x = np.concatenate([np.linspace(-6, 6, 1201), [1e-8, 26.0, 30.0, 171.5, 1e5, -7.25, -20.5]])
    np.testing.assert_allclose(special.erf(np)(x), [math.erf(v) for v in x], rtol=1e-14, atol=1e-15)
    expected = np.array([math.erfc(v) for v in x])
    np.testing.assert_allclose(special.erfc(np)(x), expected, rtol=5e-11, atol=1e-300)
    poles = (x <= 0) & (x == np.round(x))
    np.testing.assert_allclose(special.lgamma(np)(x[~poles]), [math.lgamma(v) for v in x[~poles]], rtol=1e-13,
                               atol=1e-13)


# --- binary ops -----------------------------------------------------------------------------------------------------
def test_atan2_matches_numpy_broadcasts_and_has_gradients():
    y0, x0 = np.array([[1.0, -2.0, 0.5]]), np.array([[2.0], [-1.5]])
    z = tf.atan2(tf.constant(y0), tf.constant(x0))
    assert z.op.type == "Atan2" and z.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(z), np.arctan2(y0, x0), rtol=1e-14)
    with tf.Session():
        y, x = tf.constant(y0), tf.constant(x0)
        out = tf.atan2(y, x)
        for t, t0 in ((y, y0), (x, x0)):
            assert tf.test.compute_gradient_error(t, list(t0.shape), out, [2, 3], x_init_value=t0) < 1e-6


def test_truncatediv_and_truncatemod_round_toward_zero():
    x, y = np.array([7, -7, 7, -7, 2 ** 62 + 1], np.int64), np.array([2, 2, -2, -2, 3], np.int64)
    q, r = run([tf.truncatediv(x, y), tf.truncatemod(x, y)])
    assert q.tolist() == [3, -3, -3, 3, (2 ** 62 + 1) // 3] and r.tolist() == [1, -1, 1, -1, (2 ** 62 + 1) % 3]
    fq, fr = run([tf.truncatediv(np.array([-7.0]), 2.0), tf.truncatemod(np.array([-7.5]), 2.0)])
    assert fq.tolist() == [-3.5] and fr.tolist() == [-1.5]  # float TruncateDiv is plain division, as TF's kernel
    assert tf.truncatediv(x, y).op.type == "TruncateDiv" and tf.truncatemod(x, y).op.type == "TruncateMod"
    with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
        run(tf.truncatediv(tf.constant([1]), tf.constant([0])))
    with pytest.raises(tf.errors.InvalidArgumentError, match="Integer division by zero"):
        run(tf.truncatemod(tf.constant([1]), tf.constant([0])))


def test_div_no_nan_gives_zero_where_the_divisor_is_zero_and_its_gradient():
    d = tf.div_no_nan([1.0, 0.0, np.inf, 6.0], [0.0, 0.0, 0.0, 3.0])
    assert d.op.type == "DivNoNan" and d.op.name == "div_no_nan"
    assert run(d).tolist() == [0.0, 0.0, 0.0, 2.0]
    with tf.Session():
        x0, y0 = np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.0, -4.0])
        x, y = tf.constant(x0), tf.constant(y0)
        gx, gy = tf.gradients(tf.div_no_nan(x, y), [x, y])
        np.testing.assert_allclose(gx.eval(), [0.5, 0.0, -0.25])
        np.testing.assert_allclose(gy.eval(), [-0.25, 0.0, -3.0 / 16])


def test_realdiv_is_the_realdiv_op():
    z = tf.realdiv(tf.constant([3.0]), 2.0)
    assert z.op.type == "RealDiv" and z.op.name == "RealDiv" and run(z).tolist() == [1.5]
    with pytest.raises(TypeError, match="not in list of allowed values"):
        tf.realdiv(tf.constant([3]), 2)


def test_log_sigmoid_is_stable_and_named_as_tf():
    x = np.array([-800.0, -1.0, 0.0, 2.0, 800.0])
    y = tf.log_sigmoid(x)
    assert y.op.type == "Neg" and y.op.name == "LogSigmoid" and tf.nn.log_sigmoid is tf.log_sigmoid
    np.testing.assert_allclose(run(y), -np.logaddexp(0, -x), rtol=1e-14)
    assert gradient_error(tf.log_sigmoid, np.array([[-3.0, 0.5, 4.0]])) < 1e-8


# --- casts ----------------------------------------------------------------------------------------------------------
def test_to_int32_and_friends_are_casts_named_as_tf1():
    x = tf.constant([1.7, -2.7])
    for fn, op_name, dtype in ((tf.to_int32, "ToInt32", tf.int32), (tf.to_int64, "ToInt64", tf.int64),
                               (tf.to_double, "ToDouble", tf.float64), (tf.to_float, "ToFloat", tf.float32)):
        y = fn(x if dtype != tf.float32 else tf.constant([1, 2]))
        assert y.dtype == dtype and (dtype == tf.float32 or (y.op.type == "Cast" and y.op.name == op_name))
    assert run(tf.to_int32(x)).tolist() == [1, -2]
    assert tf.to_float(x) is x  # already float32: no op, as TF's cast


def test_saturate_cast_clips_to_the_target_range():
    y = tf.saturate_cast(tf.constant([300.0, -5.0, 7.6]), tf.uint8)
    assert y.dtype == tf.uint8 and y.op.name == "saturate_cast"
    assert run(y).tolist() == [255, 0, 7]
    assert run(tf.saturate_cast(tf.constant([2 ** 40, -(2 ** 40)], tf.int64), tf.int32)).tolist() == [
        2 ** 31 - 1, -(2 ** 31)]
