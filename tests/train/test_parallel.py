"""Tests for adplace/train/parallel.py: make_parallel (the "Effective TensorFlow" tower helper) and
average_gradients (the CIFAR-10 multi-GPU helper), on 2 virtual GPUs, checked against the same model built once."""
import numpy as np
import pytest

import adplace as tf

CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
GPU = "/job:localhost/replica:0/task:0/device:GPU:{}"
X = np.arange(12, dtype=np.float32).reshape(4, 3) / 10.0
Y = np.array([[1.0], [-1.0], [0.5], [2.0]], dtype=np.float32)
W0 = np.array([[0.5], [-0.25], [1.0]], dtype=np.float32)
B0 = np.array([0.1], dtype=np.float32)


def linear_model(x, y):
    """Squared errors and predictions of y ~ x w + b; the variables come from tf.get_variable, so towers share them."""
    w = tf.get_variable("w", initializer=W0)
    b = tf.get_variable("b", initializer=B0)
    prediction = tf.matmul(x, w) + b
    return tf.square(prediction - y), prediction


def build_and_run(num_towers: int | None):
    """Squared errors, predictions and d(mean error)/d(w, b) of linear_model: built once (None) or in towers."""
    x, y = tf.placeholder(tf.float32, [4, 3]), tf.placeholder(tf.float32, [4, 1])
    if num_towers is None:
        errors, predictions = linear_model(x, y)
    else:
        errors, predictions = tf.train.make_parallel(linear_model, num_towers, x=x, y=y)
    grads = tf.gradients(tf.reduce_mean(errors), tf.trainable_variables())
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return sess, sess.run([errors, predictions, grads], {x: X, y: Y})


def test_make_parallel_gives_the_single_tower_outputs_and_gradients(gpus):
    _, (errors, predictions, grads) = build_and_run(None)
    tf.reset_default_graph()
    _, (tower_errors, tower_predictions, tower_grads) = build_and_run(2)
    np.testing.assert_allclose(predictions, X @ W0 + B0, rtol=1e-6)
    np.testing.assert_allclose(tower_predictions, predictions, rtol=1e-6)
    np.testing.assert_allclose(tower_errors, errors, rtol=1e-6)
    for tower_grad, grad in zip(tower_grads, grads, strict=True):
        np.testing.assert_allclose(tower_grad, grad, rtol=1e-5)
    assert [v.name for v in tf.trainable_variables()] == ["w:0", "b:0"]  # one set, shared by both towers


def test_make_parallel_places_tower_i_on_gpu_i(gpus, virtual_gpus_only):
    graph = tf.get_default_graph()
    ops_by_tower = []

    def recording_model(x):
        start = len(graph.get_operations())
        out = tf.tanh(x * tf.get_variable("scale", initializer=2.0))
        ops_by_tower.append(graph.get_operations()[start:])
        return out

    x = tf.placeholder(tf.float32, [4, 2])
    y = tf.train.make_parallel(recording_model, 2, x=x)
    assert y.shape.as_list() == [4, 2]
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    np.testing.assert_allclose(sess.run(y, {x: X[:, :2]}), np.tanh(2.0 * X[:, :2]), rtol=1e-6)
    assert len(ops_by_tower[1]) < len(ops_by_tower[0])  # tower 1 created no second variable
    for i, ops in enumerate(ops_by_tower):
        assert {sess.placement(op) for op in ops} == {GPU.format(i)}, [op.name for op in ops]


@pytest.mark.parametrize("gpus", [4], indirect=True)
def test_make_parallel_with_four_towers_and_a_single_output(gpus, virtual_gpus_only):
    x = tf.placeholder(tf.float32, [8])
    y = tf.train.make_parallel(lambda x: x * tf.get_variable("k", initializer=3.0), 4, x=x)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    np.testing.assert_allclose(sess.run(y, {x: np.arange(8.0)}), 3.0 * np.arange(8.0))
    assert sorted(sess.placement(op) for op in tf.get_default_graph().get_operations() if op.type == "Mul") == [
        GPU.format(i) for i in range(4)]
    assert len(tf.trainable_variables()) == 1


# --- the CIFAR-10 multi-GPU recipe --------------------------------------------------------------------------------

def tower_loss(x, y):
    """The mean squared error of the shared linear model; variables on the CPU, as cifar10's _variable_on_cpu does."""
    with tf.device("/cpu:0"):
        w = tf.get_variable("w", initializer=W0)
        b = tf.get_variable("b", initializer=B0)
    return tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))


OPTIMIZERS = {"sgd": lambda: tf.train.GradientDescentOptimizer(0.1), "adam": lambda: tf.train.AdamOptimizer(0.01)}


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
def test_cifar_towers_step_like_one_device_on_the_full_batch(optimizer, gpus, virtual_gpus_only):
    with tf.device("/cpu:0"):
        x, y = tf.placeholder(tf.float32, [4, 3]), tf.placeholder(tf.float32, [4, 1])
        opt = OPTIMIZERS[optimizer]()
        x_parts, y_parts = tf.split(x, 2), tf.split(y, 2)
        tower_grads = []
        with tf.variable_scope(tf.get_variable_scope()):
            for i in range(2):
                with tf.device(f"/gpu:{i}"), tf.name_scope(f"tower_{i}"):
                    loss = tower_loss(x_parts[i], y_parts[i])
                    tf.get_variable_scope().reuse_variables()
                    tower_grads.append(opt.compute_gradients(loss, colocate_gradients_with_ops=True))
        averaged = tf.train.average_gradients(tower_grads)
        train_op = opt.apply_gradients(averaged)
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    sess.run(train_op, {x: X, y: Y})
    towers_result = sess.run(tf.trainable_variables())

    assert [v.name for v in tf.trainable_variables()] == ["w:0", "b:0"]
    assert {sess.placement(v) for v in tf.trainable_variables()} == {CPU}
    for i, grads_and_vars in enumerate(tower_grads):
        assert {sess.placement(g) for g, _ in grads_and_vars} == {GPU.format(i)}
        # every gradient op computing a value; the gating NoOps (.../tuple/group_deps) have no device of their own
        tower_grad_ops = [op for op in tf.get_default_graph().get_operations()
                          if op.name.startswith(f"tower_{i}/gradients/") and op.outputs]
        assert tower_grad_ops and {sess.placement(op) for op in tower_grad_ops} == {GPU.format(i)}
    average_ops = [op for op in tf.get_default_graph().get_operations() if op.name.startswith("average_gradients/")]
    assert len(average_ops) >= 6 and {sess.placement(op) for op in average_ops} == {CPU}

    tf.reset_default_graph()
    with tf.device("/cpu:0"):
        train_op = OPTIMIZERS[optimizer]().minimize(tower_loss(X, Y))
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    sess.run(train_op)
    for value, expected in zip(towers_result, sess.run(tf.trainable_variables()), strict=True):
        np.testing.assert_allclose(value, expected, rtol=1e-5)
    assert not np.allclose(towers_result[0], W0)  # the step moved w


# --- average_gradients ----------------------------------------------------------------------------------------------

def test_average_gradients_means_over_towers_on_the_callers_device(gpus):
    w, b = tf.Variable(np.zeros(2, np.float32), name="w"), tf.Variable(0.0, name="b")
    tower_grads = []
    for i, (gw, gb) in enumerate([([1.0, 2.0], 1.0), ([3.0, 6.0], 2.0), ([5.0, 1.0], 6.0)]):
        with tf.device(f"/gpu:{i % 2}"):
            tower_grads.append([(tf.constant(gw), w), (tf.constant(gb), b)])
    with tf.device("/cpu:0"):
        averaged = tf.train.average_gradients(tower_grads)
    assert [v for _, v in averaged] == [w, b]
    assert {g.device for g, _ in averaged} == {"/device:CPU:0"}
    values = tf.Session().run([g for g, _ in averaged])
    np.testing.assert_allclose(values[0], [3.0, 3.0])
    assert values[1] == pytest.approx(3.0)


def test_average_gradients_keeps_a_variable_without_gradients_as_none():
    w, unused = tf.Variable(1.0, name="w"), tf.Variable(2.0, name="unused")
    averaged = tf.train.average_gradients([[(tf.constant(2.0), w), (None, unused)],
                                           [(tf.constant(4.0), w), (None, unused)]])
    assert averaged[1] == (None, unused)
    assert tf.Session().run(averaged[0][0]) == pytest.approx(3.0)


def test_average_gradients_rejects_a_gradient_missing_in_some_towers():
    w = tf.Variable(1.0, name="w")
    with pytest.raises(ValueError, match=r"Variable 'w:0' has no gradient \(None\) in towers \[1\]"):
        tf.train.average_gradients([[(tf.constant(1.0), w)], [(None, w)]])


def test_average_gradients_rejects_towers_over_different_variables():
    w, v = tf.Variable(1.0, name="w"), tf.Variable(1.0, name="v")
    g = tf.constant(1.0)
    with pytest.raises(ValueError, match=r"Tower 1 pairs gradient 0 with variable 'v:0' but tower 0 with 'w:0'"):
        tf.train.average_gradients([[(g, w)], [(g, v)]])
    with pytest.raises(ValueError, match="Tower 1 has 2 .* but tower 0 has 1"):
        tf.train.average_gradients([[(g, w)], [(g, w), (g, v)]])
    with pytest.raises(ValueError, match="at least one tower"):
        tf.train.average_gradients([])
