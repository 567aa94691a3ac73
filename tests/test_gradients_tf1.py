"""TF1 behaviour of the gradient tools in adplace.gradients, pinned against NumPy: tf.hessians, tf.custom_gradient,
tf.RegisterGradient with gradient_override_map, tf.stop_gradient, aggregation_method, gate_gradients, grad_loss
and stop_gradients."""
import numpy as np
import pytest

import adplace as tf
from adplace.gradients import _hessian_vector_product


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed_dict)


# --- hessians ------------------------------------------------------------------------------------------------------

def test_hessian_of_a_quadratic_form_is_a_plus_a_transpose():
    rng = np.random.RandomState([1, 2, 3])
    mat0, x0 = rng.randn(4, 4).astype(np.float32), rng.randn(4).astype(np.float32)
    mat, x = tf.constant(mat0), tf.constant(x0)
    hess, = tf.hessians(tf.reduce_sum(x[:, None] * mat * x[None, :]), x)
    assert hess.shape.as_list() == [4, 4]
    np.testing.assert_allclose(run(hess), mat0 + mat0.T, rtol=1e-5, atol=1e-6)


def test_hessians_of_several_xs():
    rng = np.random.RandomState(5)
    mats = [rng.randn(3, 3).astype(np.float32) for _ in range(3)]
    xs = [tf.constant(rng.randn(3).astype(np.float32)) for _ in range(3)]
    ys = [tf.reduce_sum(x[:, None] * tf.constant(m) * x[None, :]) for x, m in zip(xs, mats)]
    for got, m in zip(run(tf.hessians(ys, xs)), mats):
        np.testing.assert_allclose(got, m + m.T, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("m, n", [(3, 3), (3, 4)])
def test_hessian_with_respect_to_a_matrix_has_shape_x_shape_twice(m, n):
    x0 = np.random.RandomState(2).randn(m, n).astype(np.float32)
    x = tf.constant(x0)
    hess, = tf.hessians(tf.reduce_sum(tf.matmul(tf.transpose(x), x) * 0.5), x)
    value = run(hess)
    assert value.shape == (m, n, m, n)
    expected = np.kron(np.eye(m), np.ones((n, n)))  # d2/dx_ij dx_kl of 0.5 * sum((x^T x)) = [i == k]
    np.testing.assert_allclose(value.reshape(m * n, m * n), expected, atol=1e-6)


def test_hessian_of_a_tanh_model_against_the_closed_form():
    rng = np.random.RandomState(11)
    a0, x0 = rng.randn(5, 3), rng.randn(3)
    x = tf.Variable(x0, name="x")  # float64: the Hessian a Newton step would use
    loss = tf.reduce_sum(tf.tanh(tf.matmul(tf.constant(a0), tf.reshape(x, [3, 1]))))
    hess, = tf.hessians(loss, x)
    t = np.tanh(a0 @ x0)
    expected = a0.T @ np.diag(-2 * t * (1 - t * t)) @ a0
    np.testing.assert_allclose(run(hess), expected, rtol=1e-10)


def test_hessian_needs_a_fully_defined_connected_x():
    for shape in [(10, 10), None]:
        with tf.Graph().as_default():
            x = tf.placeholder(tf.float32, shape)
            with pytest.raises(ValueError):
                tf.hessians(x, x)


def test_hessian_vector_product():
    rng = np.random.RandomState([1, 2, 3])
    mat0, v0, x0 = (rng.randn(4, 4).astype(np.float32), rng.randn(4, 1).astype(np.float32),
                    rng.randn(4, 1).astype(np.float32))
    mat, v, x = tf.constant(mat0), tf.constant(v0), tf.constant(x0)
    x_mat_x = tf.matmul(tf.transpose(x), tf.matmul(mat, x))
    hess_v, = _hessian_vector_product(x_mat_x, [x], [v])
    np.testing.assert_allclose(run(hess_v), (mat0 + mat0.T) @ v0, rtol=1e-5, atol=1e-6)


# --- custom_gradient -----------------------------------------------------------------------------------------------

def test_custom_gradient_replaces_the_gradient_and_composes():
    @tf.custom_gradient
    def my_identity(x):
        return x, lambda dy: [3 * dy]

    x = tf.constant(3.0)
    dy, = tf.gradients(my_identity(my_identity(x)), x)
    assert run(dy) == 9.0


def test_custom_gradient_of_two_inputs_and_grad_ys():
    @tf.custom_gradient
    def switched_multiply(x1, x2):
        return x1 * x2, lambda dy: [dy * x1, dy * x2]  # the order switched on purpose

    x1, x2 = tf.constant(3.0), tf.constant(5.0)
    y = switched_multiply(x1, x2)
    assert run(tf.gradients(y, [x1, x2])) == [3.0, 5.0]
    assert run(tf.gradients(y, [x1, x2], grad_ys=tf.constant(2.0))) == [6.0, 10.0]
    assert run(tf.gradients(y * 4.0, [x1, x2], grad_ys=[0.5])) == [6.0, 10.0]


def test_custom_gradient_on_a_method_and_with_several_results():
    class Model:
        @tf.custom_gradient
        def split(self, x):
            return [x * 2.0, x * 3.0], lambda d1, d2: d1 * 10.0 + d2 * 100.0

    x = tf.constant(1.0)
    a, b = Model().split(x)
    assert run([a, b]) == [2.0, 3.0]
    assert run(tf.gradients(a + b, x)) == [110.0]
    assert run(tf.gradients(a, x)) == [10.0]  # b's gradient is filled with zeros


def test_errors_of_grad_fn_reach_the_caller_of_gradients():
    @tf.custom_gradient
    def broken(x):
        def grad(_):
            raise RuntimeError("x")
        return x, grad

    y = broken(tf.constant(1.0))
    with pytest.raises(RuntimeError, match="x"):
        tf.gradients(y, y.op.inputs[0])


def test_custom_gradient_hands_the_variables_it_reads_to_grad_fn():
    with tf.variable_scope("f", use_resource=True):
        w = tf.get_variable("w", shape=(4, 3), initializer=tf.ones_initializer())
    seen = []

    @tf.custom_gradient
    def dense(x):
        out = tf.matmul(x, w)

        def grad(dy, variables=None):
            seen.append(variables)
            gx, = tf.gradients(out, [x], grad_ys=dy)
            return gx, [tf.ones((4, 3))]
        return out, grad

    x = tf.ones((2, 4))
    with tf.variable_scope("f", use_resource=True):
        y = dense(x)
    gx, gw = tf.gradients(y, [x, w])
    assert [[v is w for v in vs] for vs in seen] == [[True]]
    gx_value, gw_sum = run([gx, tf.reduce_sum(gw)])
    np.testing.assert_allclose(gx_value, np.full((2, 4), 3.0))
    assert gw_sum == 12.0


def test_custom_gradient_reading_a_variable_needs_a_variables_argument():
    w = tf.Variable(2.0, name="w")

    @tf.custom_gradient
    def scaled(x):
        return x * w, lambda dy: dy * w
    with pytest.raises(TypeError, match="grad_fn must accept a keyword argument 'variables'"):
        scaled(tf.constant(1.0))


def test_custom_gradient_must_return_one_gradient_per_variable():
    w = tf.Variable(2.0, name="w")

    @tf.custom_gradient
    def scaled(x):
        return x * w, lambda dy, variables=None: (dy * w, [])
    with pytest.raises(ValueError, match="Must return gradient for each variable"):
        tf.gradients(scaled(tf.constant(1.0)), w)


def test_custom_gradient_may_create_variables_in_a_use_resource_scope():
    @tf.custom_gradient
    def layer(x):
        w = tf.get_variable("w", initializer=3.0)
        return x * w, lambda dy, variables=None: (dy * w, [dy * x])
    with tf.variable_scope("layer", use_resource=True):
        x = tf.constant(2.0)
        y = layer(x)
    gx, gw = tf.gradients(y, [x, tf.trainable_variables()[0]])
    assert run([gx, gw]) == [3.0, 2.0]


# --- RegisterGradient and gradient_override_map --------------------------------------------------------------------

def test_gradient_override_map_applies_to_ops_built_inside_it_only():
    @tf.RegisterGradient("TestCustomSquare")
    def _custom_square_grad(op, grad):
        return grad * 5.0 * op.inputs[0]

    x = tf.constant(2.0)
    graph = tf.get_default_graph()
    with graph.gradient_override_map({"Square": "TestCustomSquare"}):
        overridden = tf.square(x)
        with graph.gradient_override_map({"Square": "Square"}):
            restored = tf.square(x)
    plain = tf.square(x)
    assert run([tf.gradients(t, x)[0] for t in (overridden, restored, plain)]) == [10.0, 4.0, 4.0]
    with pytest.raises(KeyError, match="Registering two gradient with name 'TestCustomSquare'"):
        tf.RegisterGradient("TestCustomSquare")(_custom_square_grad)
    with pytest.raises(TypeError, match="op_type_map must be a dictionary mapping strings to strings"):
        with graph.gradient_override_map({"Square": 1}):
            pass


def test_an_unregistered_override_is_a_lookup_error_naming_the_op():
    x = tf.constant(2.0)
    with tf.get_default_graph().gradient_override_map({"Square": "NoSuchGradient"}):
        y = tf.square(x, name="sq")
    with pytest.raises(LookupError, match="sq"):
        tf.gradients(y, x)


# --- stop_gradient and stop_gradients ------------------------------------------------------------------------------

def test_stop_gradient_blocks_one_path():
    inp = tf.constant(1.0, shape=[100, 32], name="in")
    assert tf.gradients(tf.stop_gradient(inp), inp) == [None]
    x = tf.constant(3.0)
    assert run(tf.gradients(x * tf.stop_gradient(x), x)) == [3.0]
    assert run(tf.gradients(x * x, x)) == [6.0]


def test_stop_gradients_treats_tensors_as_constants():
    a = tf.constant(0.0)
    b = 2 * a
    assert run(tf.gradients(a + b, [a, b], stop_gradients=[a, b])) == [1.0, 1.0]
    assert run(tf.gradients(a + b, [a, b])) == [3.0, 1.0]
    assert run(tf.gradients(a + b, [a], stop_gradients=b)) == [1.0]


# --- aggregation_method and gate_gradients -------------------------------------------------------------------------

@pytest.mark.parametrize("method", [tf.AggregationMethod.ADD_N, tf.AggregationMethod.EXPERIMENTAL_TREE,
                                    tf.AggregationMethod.EXPERIMENTAL_ACCUMULATE_N, None])
def test_every_aggregation_method_sums_to_the_same_values(method):
    x = tf.constant(1.0)
    y = x * 2.0
    z = y + y + y + y + y + y + y + y + y + y
    grads = tf.gradients(z, [x, y], aggregation_method=method)
    assert run(grads) == [20.0, 10.0]
    w = tf.constant(np.arange(6, dtype=np.float64).reshape(2, 3))
    loss = tf.reduce_sum(tf.sin(w) * tf.cos(w) + tf.exp(w) * w + tf.square(w))
    gw, = tf.gradients(loss, w, aggregation_method=method)
    w0 = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(run(gw), np.cos(2 * w0) + np.exp(w0) * (w0 + 1) + 2 * w0, rtol=1e-12)


def test_an_unknown_aggregation_method_is_a_value_error():
    x = tf.constant(1.0)
    with pytest.raises(ValueError, match="Invalid aggregation_method specified 7"):
        tf.gradients(x * x, x, aggregation_method=7)


def test_gate_gradients_groups_an_ops_input_gradients_without_changing_values():
    x = tf.constant([[1.0, 2.0]])
    w = tf.constant([[3.0], [4.0]])
    y = tf.matmul(x, w)
    gated = tf.gradients(y, [x, w], gate_gradients=True)
    ungated = tf.gradients(y, [x, w])
    assert all(g.op.type == "Identity" and g.op.control_inputs for g in gated)
    assert gated[0].name == "gradients/MatMul_grad/tuple/control_dependency:0"
    assert not any(g.op.control_inputs for g in ungated)
    for a, b in zip(run(gated), run(ungated)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("gate", [tf.train.Optimizer.GATE_NONE, tf.train.Optimizer.GATE_OP,
                                  tf.train.Optimizer.GATE_GRAPH])
def test_optimizer_gate_gradients_and_grad_loss(gate):
    var0, var1 = tf.Variable([1.0, 2.0]), tf.Variable([3.0, 4.0])
    loss = tf.reduce_sum(var0 * var1 * 2.0 + var1)
    opt = tf.train.GradientDescentOptimizer(0.1)
    plain = opt.compute_gradients(loss, [var0, var1], gate_gradients=gate)
    scaled = opt.compute_gradients(loss, [var0, var1], gate_gradients=gate, grad_loss=tf.constant(3.0))
    assert [v for _, v in plain] == [var0, var1]
    g_plain, g_scaled = run([[g for g, _ in plain], [g for g, _ in scaled]])
    np.testing.assert_allclose(g_plain[0], [6.0, 8.0])
    np.testing.assert_allclose(g_plain[1], [3.0, 5.0])
    for a, b in zip(g_plain, g_scaled):
        np.testing.assert_allclose(b, 3.0 * a)
    with pytest.raises(ValueError, match="gate_gradients must be one of"):
        opt.compute_gradients(loss, gate_gradients=5)
