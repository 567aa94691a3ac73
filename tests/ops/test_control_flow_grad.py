"""Gradients through tf.cond and tf.while_loop, checked against finite differences (float64) and closed forms: the
backward loop, stacks of forward values (also pushed inside a cond in the body), nested loops, loop invariants,
maximum_iterations, back_prop=False, optimizers, and where the gradient ops are placed."""
import numpy as np
import pytest

import adplace as tf

EPS = 1e-6


def _numeric(f, point: np.ndarray) -> np.ndarray:
    grad = np.zeros_like(point)
    for k in range(point.size):
        step = np.zeros_like(point)
        step.flat[k] = EPS
        grad.flat[k] = (f(point + step) - f(point - step)) / (2 * EPS)
    return grad


def _check(loss, xs, feeds: dict, rtol=1e-6):
    """tf.gradients(loss, xs) at `feeds` equals central differences of the loss in each x."""
    grads = tf.gradients(loss, xs)
    with tf.Session() as sess:
        got = sess.run(grads, feeds)
        for x, g in zip(xs, got):
            want = _numeric(lambda v, x=x: sess.run(loss, {**feeds, x: v}), np.asarray(feeds[x], np.float64))
            np.testing.assert_allclose(g, want, rtol=rtol, atol=1e-8)


def test_cond_gradients_flow_through_the_taken_branch_only():
    x = tf.placeholder(tf.float32, [])
    w = tf.Variable(2.0)
    y = tf.cond(x > 0, lambda: x * w * w, lambda: tf.sin(x) + w)
    g = tf.gradients(y, [x, w])
    with tf.Session() as sess:
        sess.run(w.initializer)
        np.testing.assert_allclose(sess.run(g, {x: 3.0}), [4.0, 12.0])
        np.testing.assert_allclose(sess.run(g, {x: -1.0}), [np.cos(-1.0), 1.0], rtol=1e-6)
    assert {"Switch", "Merge"} <= {op.type for op in tf.get_default_graph().get_operations()
                                    if op.name.startswith("gradients/")}


def test_nested_cond_and_case_gradients():
    x = tf.placeholder(tf.float64, [2])
    y = tf.cond(x[0] > 0, lambda: tf.cond(x[1] > 0, lambda: x * x, lambda: x * 3.0), lambda: tf.exp(x))
    z = tf.case([(x[0] > 1, lambda: tf.reduce_sum(x) ** 2)], default=lambda: tf.reduce_prod(x))
    for point in ([0.5, 2.0], [0.5, -2.0], [-0.5, 1.0], [1.5, 0.3]):
        _check(tf.reduce_sum(y) + z, [x], {x: np.array(point)})


def test_a_loop_gradient_is_a_backward_loop_with_stacks():
    x = tf.placeholder(tf.float64, [])
    w = tf.placeholder(tf.float64, [])
    _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, y * w), [0, x])
    g = tf.gradients(y, [x, w])
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(g, {x: 2.0, w: 1.5}), [1.5 ** 3, 3 * 2.0 * 1.5 ** 2])
    types = {op.type for op in tf.get_default_graph().get_operations() if op.name.startswith("gradients")}
    assert {"StackV2", "StackPushV2", "StackPopV2", "Enter", "Exit", "LoopCond", "ControlTrigger"} <= types


def test_coupled_loop_variables_and_invariants():
    x = tf.placeholder(tf.float64, [3])
    w = tf.placeholder(tf.float64, [3])
    _, a, b = tf.while_loop(lambda i, a, b: i < 4, lambda i, a, b: (i + 1, a * b, tf.sin(a) + w), [0, x, x])
    _check(tf.reduce_sum(a) + tf.reduce_sum(b * b), [x, w], {x: np.array([0.7, -0.4, 0.2]),
                                                           w: np.array([1.5, 0.5, -1.0])})


def test_a_variable_only_the_body_reads_still_gets_its_gradient():
    """b feeds a, but the loss reads only a: b's Exit is unused and its gradient still goes round the loop."""
    x = tf.placeholder(tf.float64, [])
    _, a, _ = tf.while_loop(lambda i, a, b: i < 3, lambda i, a, b: (i + 1, a + b, b * 2.0), [0, x, x * x])
    _check(a, [x], {x: np.array(0.8)})


def test_nested_loop_gradients():
    x = tf.placeholder(tf.float64, [])
    w = tf.placeholder(tf.float64, [])

    def outer(i, t):
        _, t2 = tf.while_loop(lambda j, t: j < i, lambda j, t: (j + 1, t * x + 0.1), [0, t])
        return i + 1, t2 + w * tf.cast(i, tf.float64)
    _, z = tf.while_loop(lambda i, t: i < 4, outer, [0, x])
    _check(z, [x, w], {x: np.array(0.9), w: np.array(1.5)})


def test_gradients_of_conds_inside_a_loop_body():
    x = tf.placeholder(tf.float64, [3])
    w = tf.placeholder(tf.float64, [3])

    def body(i, u):
        step = tf.cond(tf.reduce_sum(u) > 0.0, lambda: u * w + tf.sin(u), lambda: u - w * 0.5)
        nested = tf.cond(i > 1, lambda: tf.cond(step[0] > 0, lambda: step * step, lambda: step), lambda: step + 1.0)
        return i + 1, nested
    _, final = tf.while_loop(lambda i, u: i < 4, body, [0, x])
    for point in ([0.3, -0.2, 0.4], [-0.9, -0.2, 0.1], [0.05, -0.5, 0.2]):
        _check(tf.reduce_sum(final * final), [x, w], {x: np.array(point), w: np.array([0.9, 1.1, 0.7])},
               rtol=1e-5)


def test_maximum_iterations_and_back_prop_false():
    x = tf.placeholder(tf.float64, [])
    limited = tf.while_loop(lambda y: y < 1e9, lambda y: y * 3.0, [x], maximum_iterations=4)
    _check(limited, [x], {x: np.array(0.5)})
    frozen = tf.while_loop(lambda y: y < 10.0, lambda y: y * 3.0, [x], back_prop=False)
    assert tf.gradients(frozen, x) == [None]


def test_an_optimizer_fits_a_parameter_through_a_loop():
    """ADCME style: u_{k+1} = u_k + dt * (-kappa * u_k) over 20 steps; fit kappa to data made with kappa = 0.7."""
    kappa = tf.Variable(0.2, dtype=tf.float64)
    dt, u0 = 0.05, np.linspace(1.0, 2.0, 5)
    _, u = tf.while_loop(lambda k, u: k < 20, lambda k, u: (k + 1, u + dt * (-kappa * u)), [0, tf.constant(u0)])
    target = u0 * (1 - dt * 0.7) ** 20
    loss = tf.reduce_sum((u - target) ** 2)
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(kappa.initializer)
        first = sess.run(loss)
        for _ in range(200):
            sess.run(train)
        assert sess.run(loss) < 1e-6 * first
        assert abs(sess.run(kappa) - 0.7) < 1e-3


def test_colocated_gradients_of_a_loop_body_stay_on_the_forward_ops_device(gpus):
    x = tf.placeholder(tf.float32, [4])
    w = tf.Variable(np.full(4, 0.5, np.float32))

    def body(i, u):
        with tf.device("/gpu:1"):
            return i + 1, tf.sin(u) * w
    _, y = tf.while_loop(lambda i, u: i < 3, body, [0, x])
    grads = tf.gradients(tf.reduce_sum(y), [x, w], colocate_gradients_with_ops=True)
    with tf.Session() as sess:
        sess.run(w.initializer)
        sess.run(grads, {x: np.ones(4, np.float32)})
        placed = {name: device for name, _, _, device, _ in sess.placement_table()}
    body_grads = [n for n in placed if n.startswith("gradients/while/") and ("Sin_grad" in n or "mul_grad" in n)
                  and "acc" not in n and "Enter" not in n]
    assert body_grads and all(placed[n].endswith("GPU:1") for n in body_grads), \
        {n: placed[n] for n in body_grads}


def test_a_loop_gradient_graph_round_trips_through_a_graph_def():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float64, [], name="x")
        _, y = tf.while_loop(lambda i, y: i < 3, lambda i, y: (i + 1, tf.sin(y) * y), [0, x])
        grad, = tf.gradients(y, x)
    copy = tf.Graph()
    with copy.as_default():
        tf.import_graph_def(g.as_graph_def(), name="")
    with tf.Session(graph=g) as sess:
        expected = sess.run(grad, {x: 0.8})
    with tf.Session(graph=copy) as sess:
        assert sess.run(grad.name, {"x:0": 0.8}) == pytest.approx(expected, rel=1e-12)


def test_a_sparse_gradient_of_a_loop_invariant_keeps_the_rows_of_every_iteration():
    x = tf.placeholder(tf.float64, [3])
    _, a = tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a + x[i] * x[i]), (0, tf.constant(0.0, tf.float64)))
    g, = tf.gradients(a, x)
    assert isinstance(g, tf.IndexedSlices)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.convert_to_tensor(g), {x: [1.0, 2.0, 3.0]}), [2.0, 4.0, 6.0])


def test_an_embedding_read_in_a_loop_trains_only_its_rows():
    emb = tf.Variable(np.arange(12.0).reshape(4, 3))
    ids = tf.constant([1, 3, 1])
    _, total = tf.while_loop(lambda i, t: i < 3,
                             lambda i, t: (i + 1, t + tf.reduce_sum(tf.gather(emb, ids[i]) ** 2)),
                             (0, tf.constant(0.0, tf.float64)))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(total)
    with tf.Session() as sess:
        sess.run(emb.initializer)
        sess.run(train)
        rows = np.arange(12.0).reshape(4, 3)
        np.testing.assert_allclose(sess.run(emb), [rows[0], 0.6 * rows[1], rows[2], 0.8 * rows[3]])


def test_gradients_taken_inside_a_loop_body_stay_in_the_iteration():
    params = tf.constant(5.0)
    squared = tf.square(params)

    def body(i, total):
        data = tf.constant([1.0, 2.0, 3.0]) * squared
        return i + 1, total + tf.gradients(data, params)[0]  # d(6 * p^2)/dp = 60 in every iteration
    _, total = tf.while_loop(lambda i, _: i < 10, body, [0, 0.0])
    with tf.Session() as sess:
        assert sess.run(total) == 600.0


def test_sparse_gradients_through_conds_and_loops():
    v = tf.Variable([1.0, 42.0])
    c = tf.placeholder(tf.int32, [])
    r = tf.cond(c < 2, lambda: tf.identity(v), lambda: tf.gather(v, [1, 1]))
    with pytest.warns(UserWarning, match="unknown shape"):  # merged sparse gradients lose the static dense shape
        g = tf.convert_to_tensor(tf.gradients(r, v)[0])
    x = tf.constant([1.0, 1.0, 1.0, 1.0, 1.0])
    y = tf.while_loop(lambda i, _: i < 3, lambda i, s: (i + 1, s + tf.gather(s, [0])), [0, x[:1]])[1]
    gy = tf.convert_to_tensor(tf.gradients(y * 3.0, x)[0])
    emb = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    p = tf.placeholder(tf.bool, [])
    cost = tf.cond(p, lambda: tf.reduce_sum(tf.gather(emb, [0, 2])), lambda: tf.constant(0.0))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(cost)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(g, {c: 1}), [1.0, 1.0])
        np.testing.assert_array_equal(sess.run(g, {c: 3}), [0.0, 2.0])
        np.testing.assert_array_equal(sess.run(gy), [24.0, 0.0, 0.0, 0.0, 0.0])
        sess.run(train, {p: False})
        sess.run(train, {p: True})
        np.testing.assert_allclose(sess.run(emb), [[0.9, 1.9], [3.0, 4.0], [4.9, 5.9]], rtol=1e-6)


def test_a_bare_switch_passes_gradient_only_through_the_live_output():
    from adplace.ops.control_flow_contexts import switch
    x = tf.constant(2.0)
    x_false, x_true = switch(x, tf.constant(True))
    with tf.Session() as sess:
        assert sess.run(tf.gradients(x_true, x)[0]) == 1.0
        assert sess.run(tf.gradients(x_false, x)[0]) == 0.0


def test_stopped_loop_outputs_give_none_or_zeros_as_tf():
    x, y = tf.constant(3.0), tf.constant(2.0)
    rx, _ = tf.while_loop(lambda x, y: x < 100.0, lambda x, y: (tf.square(x) + tf.square(y), tf.square(y)), [x, y])
    assert tf.gradients(tf.stop_gradient(rx), y) == [None]
    a, b = tf.Variable(0.0), tf.Variable(0.0)
    first, second = tf.scan(lambda _, __: (a, b), tf.zeros(5), initializer=(0.0, 0.0))
    grads = tf.gradients(first + tf.stop_gradient(second), [a, b])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(grads), [5.0, 0.0])


def test_a_stopped_loop_gradient_added_to_a_loss_needs_no_second_order_loop():
    x, y = tf.constant(2.0), tf.constant(2.0)
    rx = tf.while_loop(lambda x: x < 100.0, lambda x: x * y, [x])  # 2 * 2^6 = 128
    rg = tf.stop_gradient(tf.gradients(rx, y)[0])
    r = tf.gradients(tf.square(y) + rx + rg, y)[0]  # 2y + d(x0 * y^6)/dy = 4 + 6 * 2 * 2^5
    with tf.Session() as sess:
        assert sess.run(r) == 388.0


def test_the_gradient_of_an_imported_loop_says_why_it_is_not_built():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        tf.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * x), [0, x], name="loop")
    imported = tf.Graph()
    with imported.as_default():
        tf.import_graph_def(g.as_graph_def(), name="")
        with pytest.raises(LookupError, match="No gradient for the while loop ending at loop/Exit_1: it was imported"):
            tf.gradients(imported.get_tensor_by_name("loop/Exit_1:0"), imported.get_tensor_by_name("x:0"))
