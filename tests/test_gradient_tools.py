"""Tests for adplace.gradient_tools (tf.grad_pass_through, tf.recompute_grad) and tf.init_scope
(adplace.framework.default_graph), in graph mode."""
import numpy as np
import pytest

import adplace as tf


def ops_of_type(op_type: str, graph=None) -> list:
    return [op for op in (graph or tf.get_default_graph()).get_operations() if op.type == op_type]


# --- grad_pass_through ---------------------------------------------------------------------------------------------

def test_grad_pass_through_forwards_the_gradient_through_an_assign():
    with tf.variable_scope("vs", use_resource=True):
        x = tf.get_variable("x", shape=(), initializer=tf.constant_initializer(1.0))
        z = tf.get_variable("z", shape=(), initializer=tf.constant_initializer(3.0))
    assert tf.gradients(tf.assign(x, z ** 2), z) == [None]  # Assign is not differentiable
    y = tf.grad_pass_through(lambda v: tf.assign(x, v))(z ** 2)
    g, = tf.gradients(y, z)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(g) == pytest.approx(6.0)
        assert sess.run(y) == 9.0 and sess.run(x) == 9.0


def test_variables_inside_the_wrapped_function_get_no_gradient():
    x = tf.Variable(2.0, name="x")
    z = tf.Variable(3.0, name="z")
    y = tf.grad_pass_through(lambda v: x * v)(z)
    assert tf.gradients(y, x) == [None]
    g, = tf.gradients(y, z)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run([y, g]) == [6.0, 1.0]


def test_grad_pass_through_is_a_straight_through_estimator_for_several_results():
    a = tf.placeholder(tf.float32, [3])
    b = tf.placeholder(tf.float32, [3])
    assert tf.gradients(tf.round(a), a) == [None]

    def quantize(u, v):
        """Rounds u, floors v."""
        return tf.round(u), {"floor": tf.floor(v)}

    wrapped = tf.grad_pass_through(quantize)
    assert wrapped.__name__ == "quantize" and wrapped.__doc__ == "Rounds u, floors v."
    ra, rb = wrapped(a, b)
    loss = tf.reduce_sum(ra * 3.0) + tf.reduce_sum(rb["floor"] * rb["floor"])
    ga, gb = tf.gradients(loss, [a, b])
    feed = {a: [0.4, 1.6, -2.2], b: [0.5, 1.5, 2.5]}
    with tf.Session() as sess:
        values = sess.run({"ra": ra, "floor": rb["floor"], "ga": ga, "gb": gb}, feed)
    np.testing.assert_array_equal(values["ra"], [0.0, 2.0, -2.0])
    np.testing.assert_array_equal(values["ga"], [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(values["gb"], 2 * np.floor([0.5, 1.5, 2.5]))  # d(f^2) = 2 f, passed through


def test_keyword_arguments_are_refused_in_graph_mode():
    with pytest.raises(ValueError, match="supports keywords arguments only when eager execution is enabled"):
        tf.grad_pass_through(lambda v: v)(v=tf.constant(1.0))
    with pytest.raises(ValueError, match="supports keywords arguments only when eager execution is enabled"):
        tf.recompute_grad(lambda v: v)(v=tf.constant(1.0))


# --- recompute_grad ------------------------------------------------------------------------------------------------

def _dense_block(w):
    return lambda x: tf.tanh(tf.matmul(x, w))


def _fixture():
    rng = np.random.RandomState(7)
    x0, w0 = rng.randn(4, 3).astype(np.float32), rng.randn(3, 2).astype(np.float32)
    return tf.constant(x0), tf.Variable(w0, name="w"), x0, w0


def test_recompute_grad_gives_the_plain_gradients_including_variables_read_inside():
    x, w, x0, w0 = _fixture()
    block = _dense_block(w)
    y_re = tf.recompute_grad(block)(x)
    y = block(x)
    grads_re = tf.gradients(tf.reduce_sum(y_re ** 2), [x, w])
    grads = tf.gradients(tf.reduce_sum(y ** 2), [x, w])
    assert None not in grads_re
    with tf.Session() as sess:
        sess.run(w.initializer)
        values_re, values, out_re = sess.run([grads_re, grads, y_re])
    h = np.tanh(x0 @ w0)
    dz = 2 * h * (1 - h * h)
    np.testing.assert_allclose(out_re, h, rtol=1e-6)
    np.testing.assert_allclose(values_re[0], dz @ w0.T, rtol=1e-5)
    np.testing.assert_allclose(values_re[1], x0.T @ dz, rtol=1e-5)
    for a, b in zip(values_re, values):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_the_gradient_builds_a_second_copy_of_the_forward_ops_and_keeps_none_of_the_first():
    x, w, _, _ = _fixture()
    graph = tf.get_default_graph()
    first_id = len(graph.get_operations())
    y = tf.recompute_grad(_dense_block(w))(x)
    forward_ops = {op for op in graph.get_operations()[first_id:] if op.type != "IdentityN"}
    assert {op.type for op in forward_ops} == {"MatMul", "Tanh"}
    loss = tf.reduce_sum(y ** 2)
    before_grad = len(graph.get_operations())
    tf.gradients(loss, [x, w])
    gradient_ops = graph.get_operations()[before_grad:]
    assert len(ops_of_type("Tanh")) == 2 and len(ops_of_type("MatMul")) >= 2
    recomputed = [op for op in gradient_ops if op.type == "Tanh"]
    assert len(recomputed) == 1 and recomputed[0].name.startswith("gradients/")
    assert not [op.name for op in gradient_ops if any(t.op in forward_ops for t in op.inputs)]
    identities = [op for op in gradient_ops if op.type == "Identity" and op.inputs[0] is x]
    assert identities and all(op.control_inputs for op in identities)  # the recomputation waits for dy


def test_get_variable_inside_the_function_is_reused_when_recomputing():
    def block(x):
        with tf.variable_scope("inner_scope"):
            v = tf.get_variable("test_var", shape=10, initializer=tf.constant_initializer(0.5))
        return x * v

    x = tf.constant(np.arange(20, dtype=np.float32).reshape(2, 10))
    with tf.variable_scope("output_scope", reuse=tf.AUTO_REUSE):
        out_re = tf.recompute_grad(block)(x)
        out = block(x)
    variables = tf.trainable_variables()
    assert [v.name for v in variables] == ["output_scope/inner_scope/test_var:0"]
    grads_re = tf.gradients(out_re, variables)
    grads = tf.gradients(out, variables)
    assert [v.name for v in tf.global_variables()] == ["output_scope/inner_scope/test_var:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        a, b = sess.run([grads_re, grads])
    np.testing.assert_allclose(a[0], [10.0 + 2 * i for i in range(10)])
    np.testing.assert_allclose(a[0], b[0])


def test_several_results_and_the_same_tensor_twice():
    x = tf.constant(np.linspace(-1, 1, 10).astype(np.float32))
    seq = tf.recompute_grad(lambda a, b: (a * b, a * b * 2.0))
    first, second = seq(x, x)
    g_re, = tf.gradients(first + second * 0.5, x)
    g, = tf.gradients(x * x + x * x * 2.0 * 0.5, x)
    single = tf.recompute_grad(lambda a, b: a)(x, x)
    g_single = tf.gradients(single, x)[0]
    with tf.Session() as sess:
        a, b, c = sess.run([g_re, g, g_single])
    np.testing.assert_allclose(a, b, rtol=1e-6)
    np.testing.assert_allclose(a, 4 * np.linspace(-1, 1, 10), rtol=1e-6)
    np.testing.assert_array_equal(c, np.ones(10))


def test_training_through_recompute_grad_matches_plain_training():
    rng = np.random.RandomState(3)
    x0, w0 = rng.randn(8, 3).astype(np.float32), rng.randn(3, 1).astype(np.float32)
    finals = []
    for wrap in (tf.recompute_grad, lambda f: f):
        with tf.Graph().as_default():
            w = tf.Variable(w0)
            y = wrap(_dense_block(w))(tf.constant(x0))
            train = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_mean(tf.square(y - 0.3)))
            with tf.Session() as sess:
                sess.run(w.initializer)
                for _ in range(5):
                    sess.run(train)
                finals.append(sess.run(w))
    np.testing.assert_allclose(finals[0], finals[1], rtol=1e-6)
    assert not np.allclose(finals[0], w0)


# --- init_scope ----------------------------------------------------------------------------------------------------

def test_init_scope_clears_control_dependencies_and_keeps_name_and_device_scopes():
    step = tf.no_op(name="step")
    with tf.name_scope("layer"), tf.device("/cpu:0"), tf.control_dependencies([step]):
        inside = tf.constant(1.0, name="inside")
        with tf.init_scope() as entered:
            lifted = tf.constant(0.0, name="c")
            with tf.name_scope("sub"):
                nested = tf.constant(2.0, name="n")
        after = tf.constant(3.0, name="after")
    assert entered is None
    assert inside.op.control_inputs == [step] and after.op.control_inputs == [step]
    assert lifted.op.control_inputs == [] and nested.op.control_inputs == []
    assert (lifted.op.name, nested.op.name) == ("layer/c", "layer/sub/n")
    assert lifted.device == "/device:CPU:0"


def test_init_scope_at_the_top_level_and_in_another_default_graph():
    with tf.init_scope():
        top = tf.constant(1.0, name="top")
    assert top.op.name == "top" and top.graph is tf.get_default_graph()
    other = tf.Graph()
    with other.as_default(), tf.name_scope("s"):
        gate = tf.no_op()
        with tf.control_dependencies([gate]), tf.init_scope():
            c = tf.constant(1.0, name="c")
    assert c.graph is other and c.op.name == "s/c" and c.op.control_inputs == []
