"""tf.train's learning-rate schedules against their formulas, evaluated at several global steps."""
import math

import numpy as np
import pytest

import adplace as tf


def _values(make, steps):
    step = tf.placeholder(tf.int64, [])
    lr = make(step)
    with tf.Session() as sess:
        return lr, [sess.run(lr, {step: s}) for s in steps]


def test_exponential_decay_continuous_and_staircase():
    lr, got = _values(lambda s: tf.train.exponential_decay(0.1, s, 10, 0.5), [0, 5, 10, 25])
    np.testing.assert_allclose(got, [0.1 * 0.5 ** (s / 10) for s in (0, 5, 10, 25)], rtol=1e-6)
    assert lr.dtype == tf.float32 and lr.op.name == "ExponentialDecay"
    _, got = _values(lambda s: tf.train.exponential_decay(0.1, s, 10, 0.5, staircase=True), [0, 9, 10, 25])
    np.testing.assert_allclose(got, [0.1, 0.1, 0.05, 0.025], rtol=1e-6)


def test_natural_exp_and_inverse_time_decay():
    _, got = _values(lambda s: tf.train.natural_exp_decay(0.2, s, 4, 0.5), [0, 2, 8])
    np.testing.assert_allclose(got, [0.2 * math.exp(-0.5 * s / 4) for s in (0, 2, 8)], rtol=1e-6)
    _, got = _values(lambda s: tf.train.inverse_time_decay(0.2, s, 4, 0.5, staircase=True), [0, 3, 4, 9])
    np.testing.assert_allclose(got, [0.2 / (1 + 0.5 * (s // 4)) for s in (0, 3, 4, 9)], rtol=1e-6)


def test_polynomial_decay_caps_the_step_or_cycles():
    _, got = _values(lambda s: tf.train.polynomial_decay(1.0, s, 10, end_learning_rate=0.1, power=2.0),
                     [0, 5, 10, 20])
    np.testing.assert_allclose(got, [1.0, 0.9 * 0.25 + 0.1, 0.1, 0.1], rtol=1e-6)
    _, got = _values(lambda s: tf.train.polynomial_decay(1.0, s, 10, end_learning_rate=0.0, cycle=True),
                     [0, 5, 15])
    np.testing.assert_allclose(got, [1.0, 0.5, 0.25], rtol=1e-6)  # step 15: decay_steps becomes 20


def test_cosine_decay_reaches_alpha():
    _, got = _values(lambda s: tf.train.cosine_decay(2.0, s, 100, alpha=0.1), [0, 50, 100, 300])
    expected = [2.0 * (0.9 * 0.5 * (1 + math.cos(math.pi * min(s, 100) / 100)) + 0.1) for s in (0, 50, 100, 300)]
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_piecewise_constant_takes_the_value_of_each_interval():
    _, got = _values(lambda s: tf.train.piecewise_constant(s, [10, 20], [1.0, 0.5, 0.1]), [0, 10, 11, 20, 21])
    np.testing.assert_allclose(got, [1.0, 1.0, 0.5, 0.5, 0.1], rtol=1e-6)
    with pytest.raises(ValueError, match="The length of boundaries should be 1 less than the length of values"):
        tf.train.piecewise_constant(tf.constant(1), [1, 2], [1.0, 2.0])
    with pytest.raises(ValueError, match="Values must have elements all with the same dtype"):
        tf.train.piecewise_constant(tf.constant(1), [1], [1.0, 2])


@pytest.mark.parametrize("schedule", ["exponential_decay", "natural_exp_decay", "inverse_time_decay"])
def test_schedules_need_a_global_step(schedule):
    with pytest.raises(ValueError, match=f"global_step is required for {schedule}."):
        getattr(tf.train, schedule)(0.1, None, 10, 0.5)


def test_a_decayed_rate_drives_the_optimizer_step_by_step():
    step = tf.train.get_or_create_global_step()
    lr = tf.train.exponential_decay(1.0, step, 1, 0.5)
    w = tf.Variable(0.0)
    train = tf.train.GradientDescentOptimizer(lr).minimize(-w, global_step=step)  # gradient -1: w += lr
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        assert sess.run(w) == pytest.approx(1.0 + 0.5 + 0.25)
        assert sess.run(step) == 3


def test_piecewise_constant_boundaries_must_match_x_dtype_except_int32_to_int64():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"Boundaries \(<dtype: 'float32'>\) must have the same dtype as x "
                                             r"\(<dtype: 'int32'>\)"):
            tf.train.piecewise_constant(tf.constant(0), [-1.0, 1.0], [1, 2, 3])
        step = tf.Variable(5, dtype=tf.int64)
        lr = tf.train.piecewise_constant(step, [3, 10], [1.0, 0.5, 0.1])     # Python ints widen to int64
        with tf.Session() as sess:
            sess.run(step.initializer)
            assert sess.run(lr) == pytest.approx(0.5)


def _sgdr_reference(step, first, t_mul=2.0, m_mul=1.0, alpha=0.0):
    factor, period = 1.0, float(first)
    while step >= period:
        step, period, factor = step - period, period * t_mul, factor * m_mul
    return (1 - alpha) * factor * 0.5 * (1 + math.cos(math.pi * step / period)) + alpha


@pytest.mark.parametrize("kwargs", [{}, {"t_mul": 1.0}, {"m_mul": 0.5}, {"alpha": 0.2, "t_mul": 3.0}])
def test_cosine_decay_restarts_matches_the_sgdr_schedule(kwargs):
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [])
        lr = tf.train.cosine_decay_restarts(2.0, step, 100, **kwargs)
        with tf.Session() as sess:
            for s in (0, 40, 100, 250, 299, 300, 700):
                assert sess.run(lr, {step: s}) == pytest.approx(2.0 * _sgdr_reference(s, 100, **kwargs), rel=1e-5,
                                                                abs=1e-6)
    with pytest.raises(ValueError, match="global_step is required for cosine_decay_restarts"):
        tf.train.cosine_decay_restarts(0.1, None, 10)


def test_linear_cosine_decays_clean_and_noisy():
    def reference(s, steps=1000, periods=0.5, alpha=0.0, beta=0.001):
        s = min(s, steps)
        return ((alpha + (steps - s) / steps) * 0.5 * (1 + math.cos(math.pi * 2 * periods * s / steps)) + beta)

    with tf.Graph().as_default():
        step = tf.placeholder(tf.int32, [])
        clean = tf.train.linear_cosine_decay(1.0, step, 1000, num_periods=5, alpha=0.1, beta=1e-4)
        noisy = tf.train.noisy_linear_cosine_decay(1.0, step, 1000, initial_variance=1e-12)
        loud = tf.train.noisy_linear_cosine_decay(1.0, step, 1000, initial_variance=10.0)
        with tf.Session() as sess:
            for s in (0, 250, 999, 1500):
                assert sess.run(clean, {step: s}) == pytest.approx(reference(s, periods=5, alpha=0.1, beta=1e-4),
                                                                   abs=1e-6)
                assert sess.run(noisy, {step: s}) == pytest.approx(reference(s), abs=1e-4)   # noise ~1e-6
            draws = {float(sess.run(loud, {step: 0})) for _ in range(3)}
    assert len(draws) == 3   # a fresh noise draw each run
