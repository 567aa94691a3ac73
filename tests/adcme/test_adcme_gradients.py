"""Tests for adplace/adcme/gradients.py: ADCME's gradients (a Jacobian for non-scalar ys), jacobian, hessian and
hessian_vector, against analytic derivatives and central differences."""
import importlib

import numpy as np
import pytest

import adplace as tf
from adplace import adcme
from adcme_reference import run

X0 = np.array([0.3, -1.2, 2.0])


def f_numpy(x: np.ndarray) -> np.ndarray:
    """y = [x0^2 x1, sin(x1) x2, exp(x0) + x2^3, x0 x1 x2]."""
    return np.array([x[0] ** 2 * x[1], np.sin(x[1]) * x[2], np.exp(x[0]) + x[2] ** 3, x[0] * x[1] * x[2]])


def f_graph(x):
    x0, x1, x2 = x[0], x[1], x[2]
    return tf.stack([x0 ** 2 * x1, tf.sin(x1) * x2, tf.exp(x0) + x2 ** 3, x0 * x1 * x2])


def jacobian_analytic(x: np.ndarray) -> np.ndarray:
    x0, x1, x2 = x
    return np.array([[2 * x0 * x1, x0 ** 2, 0.0],
                     [0.0, np.cos(x1) * x2, np.sin(x1)],
                     [np.exp(x0), 0.0, 3 * x2 ** 2],
                     [x1 * x2, x0 * x2, x0 * x1]])


def central_differences(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    columns = []
    for j in range(x.size):
        step = np.zeros_like(x)
        step[j] = h
        columns.append((f(x + step) - f(x - step)) / (2 * h))
    return np.stack(columns, axis=-1)


def test_jacobian_of_a_nonlinear_function():
    x = tf.constant(X0)
    y = f_graph(x)
    jac, grads = adcme.jacobian(y, x), adcme.gradients(y, x)
    assert jac.shape.as_list() == grads.shape.as_list() == [4, 3]
    got_jac, got_grads = run([jac, grads])
    np.testing.assert_allclose(got_jac, jacobian_analytic(X0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got_grads, jacobian_analytic(X0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got_jac, central_differences(f_numpy, X0), rtol=1e-6, atol=1e-8)


def test_jacobian_of_a_placeholder_at_several_points():
    x = tf.placeholder(tf.float64, [3])
    jac = adcme.jacobian(f_graph(x), x)
    with tf.Session() as sess:
        for point in (X0, np.array([1.0, 0.5, -0.7])):
            np.testing.assert_allclose(sess.run(jac, {x: point}), jacobian_analytic(point), rtol=1e-12, atol=1e-14)


def test_jacobian_shape_of_a_matrix_ys_and_a_scalar_xs():
    s = tf.constant(1.5, tf.float64)
    c = np.arange(6.0).reshape(2, 3)
    y = s ** 2 * c  # dy/ds = 2 s c
    jac = adcme.gradients(y, s)
    assert jac.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(jac), 2 * 1.5 * c, rtol=1e-14)


def test_jacobian_shape_of_a_vector_ys_and_a_matrix_xs():
    a = np.random.default_rng(0).normal(size=(2, 3))
    b = np.random.default_rng(1).normal(size=3)
    m = tf.constant(a)
    y = tf.reduce_sum(m * b, axis=1) ** 2  # y_i = (sum_j m_ij b_j)^2
    jac = adcme.gradients(y, m)
    assert jac.shape.as_list() == [2, 2, 3]
    rows = a @ b
    want = np.zeros((2, 2, 3))
    for i in range(2):
        want[i, i] = 2 * rows[i] * b
    np.testing.assert_allclose(run(jac), want, rtol=1e-12, atol=1e-14)


def test_an_element_of_ys_independent_of_xs_gives_a_zero_row():
    x = tf.constant(X0)
    other = tf.constant(5.0, tf.float64)
    y = tf.stack([tf.reduce_sum(x ** 2), other, x[1] * 3.0])
    got = run(adcme.gradients(y, x))
    np.testing.assert_allclose(got, [2 * X0, np.zeros(3), [0.0, 3.0, 0.0]], rtol=1e-14)


def test_ys_entirely_independent_of_xs_gives_zeros():
    x = tf.constant(X0)
    y = tf.constant([1.0, 2.0], tf.float64)
    np.testing.assert_array_equal(run(adcme.jacobian(y, x)), np.zeros((2, 3)))


def test_xs_a_variable():
    v = tf.Variable(X0)
    jac = adcme.gradients(f_graph(v), v)
    grad = adcme.gradients(tf.reduce_sum(v ** 3), v)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_jac, got_grad = sess.run([jac, grad])
    np.testing.assert_allclose(got_jac, jacobian_analytic(X0), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got_grad, 3 * X0 ** 2, rtol=1e-14)


def test_a_list_of_xs_and_a_list_of_ys():
    a = tf.constant(2.0, tf.float64)
    b = tf.constant([1.0, 3.0], tf.float64)
    y = a * b ** 2  # dy/da = b^2, dy/db = diag(2 a b)
    scalar = a * tf.reduce_sum(b)
    jac_a, jac_b = adcme.gradients(y, [a, b])
    (g_y, g_scalar) = adcme.gradients([y, scalar], a)
    got = run([jac_a, jac_b, g_y, g_scalar])
    np.testing.assert_allclose(got[0], [1.0, 9.0])
    np.testing.assert_allclose(got[1], np.diag([4.0, 12.0]))
    np.testing.assert_allclose(got[2], [1.0, 9.0])
    assert got[3] == 4.0


def test_unknown_length_ys_fed_at_run_time():
    p = tf.placeholder(tf.float64, [None])
    x = tf.constant(X0)
    y = p * tf.reduce_sum(x ** 2)  # y_i = p_i |x|^2, dy_i/dx = 2 p_i x
    jac = adcme.gradients(y, x)
    assert jac.shape.as_list() == [None, 3]
    with tf.Session() as sess:
        for values in ([1.0, -2.0], [0.5, 1.0, 3.0, 4.0], []):
            got = sess.run(jac, {p: values})
            assert got.shape == (len(values), 3)
            np.testing.assert_allclose(got, 2 * np.outer(values, X0).reshape(len(values), 3), rtol=1e-14)


def test_unknown_rank_ys_is_an_error():
    with pytest.raises(ValueError, match="rank of .* is unknown"):
        adcme.gradients(tf.placeholder(tf.float64), tf.constant(1.0, tf.float64))


def test_integer_xs_is_a_type_error():
    n = tf.constant([1, 2])
    with pytest.raises(TypeError, match="int32"):
        adcme.jacobian(tf.cast(n, tf.float64) * 2.0, n)


def test_colocate_gradients_with_ops_is_passed_through(monkeypatch, gpus, virtual_gpus_only):
    module = importlib.import_module("adplace.adcme.gradients")  # the package's `gradients` is the function
    seen = []
    real = module.tf_gradients

    def spy(*args, **kwargs):
        seen.append(kwargs.get("colocate_gradients_with_ops"))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "tf_gradients", spy)
    x = tf.constant(X0)
    with tf.device("/gpu:1"):
        y = tf.sin(x)
    jac = adcme.gradients(y, x, colocate_gradients_with_ops=True)
    grad = adcme.gradients(tf.reduce_sum(y), x, colocate_gradients_with_ops=True)
    assert seen and all(seen), seen
    got_jac, got_grad = run([jac, grad])
    np.testing.assert_allclose(got_jac, np.diag(np.cos(X0)), rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(got_grad, np.cos(X0), rtol=1e-14)
    cos_ops = [op for op in tf.get_default_graph().get_operations() if op.type == "Cos"]
    assert cos_ops and all("GPU:1" in op.device for op in cos_ops), [(op.name, op.device) for op in cos_ops]


def test_scalar_ys_not_depending_on_xs_is_none():
    x = tf.constant(X0)
    assert adcme.gradients(tf.constant(3.0, tf.float64), x) is None
    assert adcme.gradients(tf.reduce_sum(x), [x, tf.constant(1.0)])[1] is None


def test_scalar_ys_gives_a_dense_gradient_shaped_like_xs():
    a = np.arange(12.0).reshape(3, 4)
    x = tf.constant(a)
    grad = adcme.gradients(tf.reduce_sum(tf.gather(x, [2, 0, 2]) ** 2), x)  # IndexedSlices made dense
    assert isinstance(grad, tf.Tensor) and grad.shape.as_list() == [3, 4]
    want = np.zeros_like(a)
    want[2] = 2 * 2 * a[2]
    want[0] = 2 * a[0]
    np.testing.assert_allclose(run(grad), want)


# --- hessian, hessian_vector ----------------------------------------------------------------------------------------


def test_hessian_of_sum_of_cubes_is_diag_6x():
    x = tf.constant(X0)
    h = adcme.hessian(tf.reduce_sum(x ** 3), x)
    assert h.shape.as_list() == [3, 3]
    np.testing.assert_allclose(run(h), np.diag(6 * X0), rtol=1e-14)


def test_hessian_of_a_matrix_argument():
    a = np.array([[1.0, 2.0], [0.5, -1.0]])
    x = tf.constant(a)
    h = adcme.hessian(tf.reduce_sum(x ** 2) * x[0, 1], x)  # f = |x|^2 x01
    assert h.shape.as_list() == [2, 2, 2, 2]
    want = np.zeros((2, 2, 2, 2))
    for i in range(2):
        for j in range(2):
            want[i, j, i, j] += 2 * a[0, 1]
            want[i, j, 0, 1] += 2 * a[i, j]
            want[0, 1, i, j] += 2 * a[i, j]
    np.testing.assert_allclose(run(h), want, rtol=1e-14)


def test_hessian_of_a_non_scalar_is_an_error():
    x = tf.constant(X0)
    with pytest.raises(ValueError, match="must be a scalar"):
        adcme.hessian(x ** 2, x)


def test_hessian_vector_is_hessian_times_v():
    x = tf.constant(X0)
    f = tf.reduce_sum(x ** 3) + x[0] * x[1] ** 2 + tf.sin(x[2] * x[0])
    v = np.array([0.7, -1.1, 2.5])
    got_hv, got_h = run([adcme.hessian_vector(f, x, v), adcme.hessian(f, x)])
    x0, x1, x2 = X0
    want_h = np.diag(6 * X0) + np.array([
        [-x2 ** 2 * np.sin(x2 * x0), 2 * x1, np.cos(x2 * x0) - x2 * x0 * np.sin(x2 * x0)],
        [2 * x1, 2 * x0, 0.0],
        [np.cos(x2 * x0) - x2 * x0 * np.sin(x2 * x0), 0.0, -x0 ** 2 * np.sin(x2 * x0)]])
    np.testing.assert_allclose(got_h, want_h, rtol=1e-12)
    np.testing.assert_allclose(got_hv, want_h @ v, rtol=1e-12)


def test_hessian_vector_with_a_tensor_v_is_not_differentiated_through_v():
    x = tf.constant(X0)
    v = 2.0 * x  # depends on x, but the product treats it as a constant
    got = run(adcme.hessian_vector(tf.reduce_sum(x ** 3), x, v))
    np.testing.assert_allclose(got, 6 * X0 * 2 * X0, rtol=1e-14)


def test_hessian_vector_of_an_independent_ys_is_none():
    assert adcme.hessian_vector(tf.constant(1.0, tf.float64), tf.constant(X0), np.ones(3)) is None
