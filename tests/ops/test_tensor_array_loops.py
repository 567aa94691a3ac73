"""Tests for tf.TensorArray inside tf.while_loop (adplace/ops/tensor_array_ops.py with control_flow_v1.py and
while_grad.py): a write per iteration then a stack, reads from an unstacked array, dynamic_size growth, a
maximum_iterations bound, and gradients through loops that write and read TensorArrays, among them an ADCME-style
time integration whose gradient with respect to its parameters is checked against finite differences."""
import numpy as np
import pytest

import adplace as tf
from graph_run import run


def test_a_write_per_iteration_then_stack():
    n = 5
    ta = tf.TensorArray(tf.float32, size=n)
    _, ta = tf.while_loop(lambda i, _: i < n, lambda i, t: (i + 1, t.write(i, tf.cast(i * i, tf.float32))), (0, ta))
    stacked = ta.stack()
    assert stacked.shape.as_list() == [5]
    np.testing.assert_allclose(run(stacked), [0.0, 1.0, 4.0, 9.0, 16.0])


def test_reads_inside_the_loop_from_an_unstacked_array():
    p = tf.placeholder(tf.float64, [None, 2])
    rows = tf.TensorArray(tf.float64, size=tf.shape(p)[0]).unstack(p)

    def body(i, acc):
        return i + 1, acc + rows.read(i) * tf.cast(i + 1, tf.float64)

    _, total = tf.while_loop(lambda i, _: i < tf.shape(p)[0], body, (0, tf.zeros([2], tf.float64)))
    value = np.arange(8.0).reshape(4, 2)
    np.testing.assert_allclose(run(total, {p: value}), (value * np.arange(1, 5)[:, None]).sum(axis=0))


def test_dynamic_size_grows_one_element_per_iteration():
    limit = tf.placeholder(tf.int32, [])
    ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=[2])
    _, ta = tf.while_loop(lambda i, _: i < limit, lambda i, t: (i + 1, t.write(i, tf.stack([i, 2 * i]))), (0, ta))
    stacked, size = ta.stack(), ta.size()
    assert stacked.shape.as_list() == [None, 2]
    for k in (0, 3, 7):
        got, got_size = run([stacked, size], {limit: k})
        assert got_size == k and got.shape == (k, 2)
        np.testing.assert_array_equal(got, np.stack([np.arange(k), 2 * np.arange(k)], axis=1).reshape(k, 2))


def test_dynamic_size_array_written_at_a_computed_index_with_gaps():
    ta = tf.TensorArray(tf.float32, size=1, dynamic_size=True, element_shape=[])
    _, ta = tf.while_loop(lambda i, _: i < 3, lambda i, t: (i + 1, t.write(2 * i, tf.cast(i, tf.float32) + 1.0)),
                          (0, ta))
    np.testing.assert_array_equal(run(ta.stack()), [1.0, 0.0, 2.0, 0.0, 3.0])  # unwritten elements read as zeros


def test_maximum_iterations_stops_a_loop_over_an_array():
    x = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    source = tf.TensorArray(tf.float32, size=6).unstack(x)
    out = tf.TensorArray(tf.float32, size=0, dynamic_size=True, element_shape=[])

    def body(i, t):
        return i + 1, t.write(i, source.read(i) * 10.0)

    _, out = tf.while_loop(lambda i, _: i < 6, body, (0, out), maximum_iterations=4)
    stacked, size = run([out.stack(), out.size()])
    assert size == 4
    np.testing.assert_allclose(stacked, [10.0, 20.0, 30.0, 40.0])


def test_two_arrays_and_a_tensor_carried_together():
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
    src = tf.TensorArray(tf.float64, size=5).unstack(x)
    cums = tf.TensorArray(tf.float64, size=5)
    maxes = tf.TensorArray(tf.float64, size=5)

    def body(i, total, best, c, m):
        v = src.read(i)
        total, best = total + v, tf.maximum(best, v)
        return i + 1, total, best, c.write(i, total), m.write(i, best)

    loop_vars = (0, tf.constant(0.0, tf.float64), tf.constant(-np.inf, tf.float64), cums, maxes)
    _, total, _, cums, maxes = tf.while_loop(lambda i, *_: i < 5, body, loop_vars)
    got_total, got_cums, got_maxes = run([total, cums.stack(), maxes.stack()])
    assert got_total == x.sum()
    np.testing.assert_allclose(got_cums, np.cumsum(x))
    np.testing.assert_allclose(got_maxes, np.maximum.accumulate(x))


# --- gradients ------------------------------------------------------------------------------------------------------
def test_gradient_through_a_loop_that_reads_an_unstacked_array_and_writes_another():
    x0 = np.array([0.5, -1.0, 2.0, 0.25])
    x = tf.constant(x0)
    w = tf.constant(1.5, tf.float64)
    src = tf.TensorArray(tf.float64, size=4).unstack(x)
    out = tf.TensorArray(tf.float64, size=4)
    _, out = tf.while_loop(lambda i, _: i < 4, lambda i, t: (i + 1, t.write(i, tf.sin(src.read(i) * w))), (0, out))
    loss = tf.reduce_sum(tf.square(out.stack()))
    gx, gw = tf.gradients(loss, [x, w])
    got_x, got_w = run([gx, gw])
    s = np.sin(x0 * 1.5)
    np.testing.assert_allclose(got_x, 2 * s * np.cos(x0 * 1.5) * 1.5)
    np.testing.assert_allclose(got_w, np.sum(2 * s * np.cos(x0 * 1.5) * x0))


def _integrate(theta, u0, steps: int, dt: float):
    """ADCME style: u_{k+1} = u_k + dt * f(u_k, theta) with f(u, theta) = -theta_0 u + theta_1 sin(u) + theta_2,
    every state written to a TensorArray; (stacked states, final state)."""
    states = tf.TensorArray(tf.float64, size=steps + 1, clear_after_read=False).write(0, u0)

    def body(k, u, ta):
        f = -theta[0] * u + theta[1] * tf.sin(u) + theta[2]
        u_next = u + dt * f
        return k + 1, u_next, ta.write(k + 1, u_next)

    _, u_last, states = tf.while_loop(lambda k, u, ta: k < steps, body, (0, u0, states))
    return states.stack(), u_last


def _numpy_loss(theta, u0, steps, dt, observed):
    u, states = u0.copy(), [u0.copy()]
    for _ in range(steps):
        u = u + dt * (-theta[0] * u + theta[1] * np.sin(u) + theta[2])
        states.append(u)
    return float(np.sum((np.array(states) - observed) ** 2))


def test_adcme_style_time_integration_gradient_matches_finite_differences():
    steps, dt = 20, 0.05
    u0 = np.array([0.3, -0.8, 1.1])
    theta0 = np.array([0.7, 0.4, -0.2])
    observed = np.linspace(0.0, 1.0, (steps + 1) * 3).reshape(steps + 1, 3)
    theta = tf.placeholder(tf.float64, [3])
    stacked, _ = _integrate(theta, tf.constant(u0), steps, dt)
    loss = tf.reduce_sum(tf.square(stacked - observed))
    grad, = tf.gradients(loss, theta)
    got_loss, got_grad = run([loss, grad], {theta: theta0})
    assert got_loss == pytest.approx(_numpy_loss(theta0, u0, steps, dt, observed), rel=1e-12)
    eps = 1e-6
    numeric = [(_numpy_loss(theta0 + eps * e, u0, steps, dt, observed) -
                _numpy_loss(theta0 - eps * e, u0, steps, dt, observed)) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(got_grad, numeric, rtol=1e-7, atol=1e-9)


def test_adcme_style_gradient_with_respect_to_the_initial_state():
    steps, dt = 10, 0.1
    theta = tf.constant([0.5, 0.3, 0.1], tf.float64)
    u0 = tf.placeholder(tf.float64, [2])
    stacked, u_last = _integrate(theta, u0, steps, dt)
    loss = tf.reduce_sum(stacked) + tf.reduce_sum(u_last * u_last)
    with tf.Session():
        jac_t, jac_n = tf.test.compute_gradient(u0, [2], loss, [], x_init_value=np.array([0.2, -0.4]), delta=1e-6)
    np.testing.assert_allclose(jac_t, jac_n, rtol=1e-6, atol=1e-8)


def test_gradient_through_a_dynamic_size_array_written_in_a_loop():
    x = tf.placeholder(tf.float64, [3])
    src = tf.TensorArray(tf.float64, size=3).unstack(x)
    ta = tf.TensorArray(tf.float64, size=0, dynamic_size=True, element_shape=[])

    def body(i, t):
        v = src.read(i)
        return i + 1, t.write(i, tf.exp(v) * v)

    _, ta = tf.while_loop(lambda i, _: i < 3, body, (0, ta))
    loss = tf.reduce_sum(ta.stack() * [1.0, 2.0, 3.0])
    grad, = tf.gradients(loss, x)
    x0 = np.array([0.1, -0.3, 0.6])
    np.testing.assert_allclose(run(grad, {x: x0}), np.exp(x0) * (1 + x0) * [1.0, 2.0, 3.0])


def test_gradient_through_a_loop_bounded_by_maximum_iterations():
    x0 = np.array([1.0, 2.0, 3.0, 4.0])
    x = tf.constant(x0)
    src = tf.TensorArray(tf.float64, size=4).unstack(x)

    def body(i, acc):
        return i + 1, acc * src.read(i)

    _, product = tf.while_loop(lambda i, _: i < 4, body, (0, tf.constant(1.0, tf.float64)), maximum_iterations=3)
    grad, = tf.gradients(product, x)
    got_product, got_grad = run([product, grad])
    assert got_product == 6.0
    np.testing.assert_allclose(got_grad, [6.0, 3.0, 2.0, 0.0])


def test_a_string_array_unstacked_and_read():
    ta = tf.TensorArray(tf.string, size=3).unstack(tf.constant([b"a", b"b", b"c"]))
    with tf.Session() as sess:
        assert sess.run(ta.read(1)) == b"b"
        assert sess.run(ta.stack()).tolist() == [b"a", b"b", b"c"]


def test_mark_used_is_accepted_and_changes_nothing():
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True).unstack(tf.zeros([0, 3, 5]))
    assert ta.mark_used() is None
    with tf.Session() as sess:
        assert sess.run(ta.size()) == 0
