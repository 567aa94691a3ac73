"""Tests for adplace.ops.init_ops: TF1's initializer values, statistics of the random ones (bounds, mean, std,
Glorot and variance-scaling formulas), dtypes, seeds and errors."""
import numpy as np
import pytest

import adplace as tf


def _sample(initializer, shape, dtype=tf.float32):
    with tf.Session() as sess:
        return sess.run(initializer(shape, dtype=dtype))


# --- deterministic initializers -----------------------------------------------------------------------------------

def test_zeros_and_ones():
    np.testing.assert_array_equal(_sample(tf.zeros_initializer(), [2, 3]), np.zeros((2, 3)))
    np.testing.assert_array_equal(_sample(tf.ones_initializer(), [4]), np.ones(4))
    ints = _sample(tf.zeros_initializer(dtype=tf.int64), [2], dtype=None)
    assert ints.dtype == np.int64 and ints.tolist() == [0, 0]
    assert _sample(tf.ones_initializer(), [2], dtype=tf.bool).tolist() == [True, True]


def test_constant_fills_and_pads_like_tf1():
    np.testing.assert_array_equal(_sample(tf.constant_initializer(2.5), [2, 2]), np.full((2, 2), 2.5))
    np.testing.assert_array_equal(_sample(tf.constant_initializer([1, 2, 3, 4]), [2, 2]), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(_sample(tf.constant_initializer([1, 2]), [2, 2]), [[1, 2], [2, 2]])
    assert _sample(tf.constant_initializer(3), [2], dtype=tf.int32).dtype == np.int32
    with pytest.raises(TypeError, match="Invalid type for initial value"):
        tf.constant_initializer({"a": 1})
    with pytest.raises(TypeError, match="Expected Tensor's shape"):
        tf.constant_initializer([1.0, 2.0], verify_shape=True)([3])


# --- random initializers: statistics -------------------------------------------------------------------------------

def test_random_uniform_bounds_and_moments():
    values = _sample(tf.random_uniform_initializer(-2.0, 4.0, seed=1), [200, 100])
    assert values.dtype == np.float32
    assert values.min() >= -2.0 and values.max() < 4.0
    assert abs(values.mean() - 1.0) < 0.05
    assert abs(values.std() - 6.0 / np.sqrt(12)) < 0.03
    unit = _sample(tf.random_uniform_initializer(seed=2), [1000])  # maxval defaults to 1
    assert unit.min() >= 0.0 and unit.max() < 1.0


def test_random_normal_moments():
    values = _sample(tf.random_normal_initializer(mean=3.0, stddev=0.5, seed=3), [200, 100])
    assert abs(values.mean() - 3.0) < 0.02
    assert abs(values.std() - 0.5) < 0.01
    assert values.max() - values.min() > 6 * 0.5  # not truncated


def test_truncated_normal_stays_within_two_stddevs():
    values = _sample(tf.truncated_normal_initializer(mean=1.0, stddev=2.0, seed=4), [200, 100])
    assert values.min() >= 1.0 - 4.0 and values.max() <= 1.0 + 4.0
    assert abs(values.mean() - 1.0) < 0.05
    assert abs(values.std() - 2.0 * 0.87962566) < 0.03  # the std of a unit normal truncated to [-2, 2]


def test_glorot_uniform_limit():
    fan_in, fan_out = 300, 200
    values = _sample(tf.glorot_uniform_initializer(seed=5), [fan_in, fan_out])
    limit = np.sqrt(6.0 / (fan_in + fan_out))
    assert np.abs(values).max() <= limit
    assert np.abs(values).max() > 0.99 * limit
    assert abs(values.mean()) < 0.01 * limit
    assert abs(values.std() - limit / np.sqrt(3)) < 0.01 * limit


def test_glorot_normal_std_and_truncation():
    fan_in, fan_out = 300, 200
    values = _sample(tf.glorot_normal_initializer(seed=6), [fan_in, fan_out])
    target_std = np.sqrt(2.0 / (fan_in + fan_out))  # the truncation correction restores the Glorot variance
    assert abs(values.std() - target_std) < 0.02 * target_std
    assert np.abs(values).max() <= 2 * target_std / 0.87962566 + 1e-6


def test_glorot_uses_convolution_fans():
    shape = [3, 3, 16, 32]  # (height, width, in, out): fan_in = 9 * 16, fan_out = 9 * 32
    values = _sample(tf.glorot_uniform_initializer(seed=7), shape)
    limit = np.sqrt(6.0 / (9 * 16 + 9 * 32))
    assert values.shape == (3, 3, 16, 32)
    assert np.abs(values).max() <= limit and np.abs(values).max() > 0.98 * limit


@pytest.mark.parametrize("mode, fan", [("fan_in", 400), ("fan_out", 100), ("fan_avg", 250)])
def test_variance_scaling_uniform_modes(mode, fan):
    values = _sample(tf.variance_scaling_initializer(scale=2.0, mode=mode, distribution="uniform", seed=8),
                     [400, 100])
    limit = np.sqrt(3.0 * 2.0 / fan)
    assert np.abs(values).max() <= limit and np.abs(values).max() > 0.99 * limit


def test_variance_scaling_normal_distributions():
    truncated = _sample(tf.variance_scaling_initializer(seed=9), [500, 200])  # default: fan_in, truncated_normal
    assert abs(truncated.std() - np.sqrt(1.0 / 500)) < 0.02 * np.sqrt(1.0 / 500)
    assert np.abs(truncated).max() <= 2 * np.sqrt(1.0 / 500) / 0.87962566 + 1e-6
    plain = _sample(tf.variance_scaling_initializer(scale=4.0, distribution="untruncated_normal", seed=10),
                    [500, 200])
    assert abs(plain.std() - np.sqrt(4.0 / 500)) < 0.02 * np.sqrt(4.0 / 500)
    assert np.abs(plain).max() > 3 * np.sqrt(4.0 / 500)


def test_he_and_lecun_factories():
    he = _sample(tf.initializers.he_uniform(seed=11), [200, 50])
    assert np.abs(he).max() <= np.sqrt(6.0 / 200) and np.abs(he).max() > 0.99 * np.sqrt(6.0 / 200)
    lecun = _sample(tf.initializers.lecun_uniform(seed=12), [200, 50])
    assert np.abs(lecun).max() <= np.sqrt(3.0 / 200)


# --- dtypes, seeds, errors, config ---------------------------------------------------------------------------------

def test_dtype_from_call_or_constructor():
    assert _sample(tf.glorot_uniform_initializer(dtype=tf.float64), [3, 3], dtype=None).dtype == np.float64
    assert _sample(tf.random_normal_initializer(), [3], dtype=tf.float64).dtype == np.float64


def test_op_seed_makes_values_reproducible_across_graphs():
    samples = []
    for _ in range(2):
        with tf.Graph().as_default():
            samples.append(_sample(tf.random_uniform_initializer(seed=42), [5]))
    np.testing.assert_array_equal(samples[0], samples[1])


def test_argument_errors():
    with pytest.raises(ValueError, match="`scale` must be positive float."):
        tf.variance_scaling_initializer(scale=0.0)
    with pytest.raises(ValueError, match="Invalid `mode` argument: fan_sum"):
        tf.variance_scaling_initializer(mode="fan_sum")
    with pytest.raises(ValueError, match="Invalid `distribution` argument: cauchy"):
        tf.variance_scaling_initializer(distribution="cauchy")
    with pytest.raises(ValueError, match="Expected floating point type, got <dtype: 'int32'>."):
        tf.random_normal_initializer(dtype=tf.int32)


def test_get_config_round_trips():
    init = tf.variance_scaling_initializer(scale=2.0, mode="fan_out", distribution="uniform", seed=3)
    clone = type(init).from_config(init.get_config())
    assert (clone.scale, clone.mode, clone.distribution, clone.seed) == (2.0, "fan_out", "uniform", 3)
    assert tf.glorot_uniform_initializer.from_config({"seed": 1}).get_config() == {"seed": 1, "dtype": "float32"}


def test_initializers_namespace_names():
    assert tf.initializers.zeros is tf.zeros_initializer
    assert tf.initializers.glorot_uniform is tf.glorot_uniform_initializer
    assert tf.initializers.variance_scaling is tf.variance_scaling_initializer
    v = tf.Variable(1.0)
    assert tf.initializers.global_variables().control_inputs == [v.initializer]


def test_initializer_ops_are_named_under_the_variable():
    tf.get_variable("w", shape=[2, 2], initializer=tf.random_normal_initializer(seed=1))
    names = [op.name for op in tf.get_default_graph().get_operations()]
    assert "w/Initializer/random_normal/RandomStandardNormal" in names
    assert names.index("w/Initializer/random_normal") < names.index("w")


# --- identity and uniform-unit-scaling initializers ----------------------------------------------------------------

def test_identity_initializer_scales_an_eye_and_rejects_non_matrices():
    init = tf.identity_initializer(gain=0.5)
    w = tf.get_variable("w", shape=[3, 4], initializer=init)
    with pytest.raises(ValueError, match="only be used for 2D matrices"):
        init([2, 2, 2])
    with pytest.raises(ValueError, match="Expected floating point type"):
        tf.identity_initializer(dtype=tf.int32)
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_array_equal(sess.run(w), 0.5 * np.eye(3, 4, dtype=np.float32))
        assert sess.run(tf.initializers.identity(dtype=tf.float64)([2, 2])).dtype == np.float64


def test_uniform_unit_scaling_bounds_follow_the_input_size():
    shape = [50, 30, 4]  # input size 50 * 30: limit = factor * sqrt(3 / 1500)
    t = tf.uniform_unit_scaling_initializer(factor=2.0, seed=3)(shape)
    same = tf.uniform_unit_scaling_initializer(factor=2.0, seed=3)(shape)
    with tf.Session() as sess:
        a, b = sess.run([t, same])
    limit = 2.0 * np.sqrt(3.0 / 1500.0)
    assert a.shape == tuple(shape) and a.dtype == np.float32
    assert np.all(np.abs(a) <= limit) and np.abs(a).max() > 0.9 * limit
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="Expected floating point type"):
        tf.uniform_unit_scaling_initializer(dtype=tf.string)
