"""Tests for adplace.contrib.layers: contrib's initializers (sample statistics against their formulas),
regularizers (values, names, error messages, apply_regularization), fully_connected (variable names, collections,
reuse, normalizer and activation) and flatten."""
import numpy as np
import pytest

import adplace as tf

layers = tf.contrib.layers


def _names(variables) -> list:
    return [v.op.name for v in variables]


def _sample(initializer, shape, **dtype) -> np.ndarray:
    value = initializer(shape, **dtype)
    with tf.Session() as sess:
        return sess.run(value)


# --- initializers ---------------------------------------------------------------------------------------------------

def test_xavier_uniform_stays_within_its_limit_and_fills_it():
    w = _sample(layers.xavier_initializer(seed=1), [200, 300])
    limit = np.sqrt(6.0 / (200 + 300))
    assert w.dtype == np.float32 and w.shape == (200, 300)
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.99 * limit
    np.testing.assert_allclose(w.var(), limit ** 2 / 3.0, rtol=0.03)
    assert abs(w.mean()) < 0.01 * limit


def test_xavier_normal_is_a_truncated_normal_with_contribs_stddev():
    w = _sample(layers.xavier_initializer(uniform=False, seed=2), [300, 500])
    stddev = np.sqrt(1.3 * 2.0 / (300 + 500))   # before the truncation at two standard deviations
    assert np.abs(w).max() <= 2.0 * stddev
    np.testing.assert_allclose(w.std(), stddev * 0.8796, rtol=0.03)


def test_xavier_conv2d_counts_the_receptive_field_in_both_fans():
    assert layers.xavier_initializer_conv2d is layers.xavier_initializer
    w = _sample(layers.xavier_initializer_conv2d(seed=3), [5, 5, 16, 32])
    limit = np.sqrt(6.0 / (25 * 16 + 25 * 32))
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.98 * limit


def test_variance_scaling_default_is_he_normal_over_fan_in():
    w = _sample(layers.variance_scaling_initializer(seed=4), [3, 3, 16, 512])
    fan_in = 3 * 3 * 16
    np.testing.assert_allclose(w.std(), np.sqrt(1.3 * 2.0 / fan_in) * 0.8796, rtol=0.03)


@pytest.mark.parametrize("mode, n", [("FAN_IN", 100.0), ("FAN_OUT", 400.0), ("FAN_AVG", 250.0)])
def test_variance_scaling_uniform_modes(mode, n):
    w = _sample(layers.variance_scaling_initializer(factor=1.0, mode=mode, uniform=True, seed=5), [100, 400])
    limit = np.sqrt(3.0 / n)
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.99 * limit


def test_variance_scaling_float64_and_errors():
    assert _sample(layers.xavier_initializer(dtype=tf.float64), [4, 4]).dtype == np.float64
    assert _sample(layers.xavier_initializer(), [4, 4], dtype=tf.float64).dtype == np.float64
    with pytest.raises(TypeError, match="Cannot create initializer for non-floating point type."):
        layers.xavier_initializer(dtype=tf.int32)
    with pytest.raises(TypeError, match="Unknow mode fan_in"):
        layers.variance_scaling_initializer(mode="fan_in")
    with pytest.raises(TypeError, match="Cannot create initializer for non-floating point type."):
        layers.variance_scaling_initializer()([2, 2], dtype=tf.int32)


def test_initializer_works_through_get_variable():
    w = tf.get_variable("w", [10, 20], initializer=layers.xavier_initializer(seed=7))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        value = sess.run(w)
    assert np.abs(value).max() <= np.sqrt(6.0 / 30.0)


# --- regularizers ---------------------------------------------------------------------------------------------------

_W0 = np.array([[1.0, -2.0], [3.0, -4.0]], dtype=np.float32)


def test_l1_and_l2_regularizer_values_and_names():
    w = tf.constant(_W0)
    l1 = layers.l1_regularizer(0.5)(w)
    l2 = layers.l2_regularizer(0.25)(w)
    scoped = layers.l2_regularizer(0.25, scope="decay")(w)
    assert (l1.op.name, l2.op.name, scoped.op.name) == ("l1_regularizer", "l2_regularizer", "decay")
    assert l1.op.type == l2.op.type == "Mul" and l1.shape.ndims == 0
    with tf.Session() as sess:
        v1, v2, v3 = sess.run([l1, l2, scoped])
    assert v1 == pytest.approx(0.5 * 10.0)
    assert v2 == pytest.approx(0.25 * 30.0 / 2.0) and v3 == v2


def test_regularizer_scale_checks():
    assert layers.l1_regularizer(0.0)(tf.constant(_W0)) is None
    assert layers.l2_regularizer(0.0)(tf.constant(_W0)) is None
    with pytest.raises(ValueError, match="scale cannot be an integer: 1"):
        layers.l2_regularizer(1)
    with pytest.raises(ValueError, match=r"Setting a scale less than 0 on a regularizer: -0.5$"):
        layers.l1_regularizer(-0.5)
    with pytest.raises(ValueError, match=r"Setting a scale less than 0 on a regularizer: -0.5\.$"):
        layers.l2_regularizer(-0.5)


def test_regularizer_scale_may_be_a_tensor():
    scale = tf.placeholder(tf.float32, [])
    loss = layers.l1_regularizer(scale)(tf.constant(_W0))
    with tf.Session() as sess:
        assert sess.run(loss, {scale: 2.0}) == pytest.approx(20.0)


def test_sum_and_l1_l2_regularizers():
    w = tf.constant(_W0)
    total = layers.sum_regularizer([layers.l1_regularizer(0.5), None, layers.l2_regularizer(0.25)])(w)
    both = layers.l1_l2_regularizer(0.5, 0.25)(w)
    assert total.op.name == "sum_regularizer" and total.op.type == "AddN"
    assert both.op.name == "l1_l2_regularizer"
    assert layers.sum_regularizer([None, None]) is None
    with tf.Session() as sess:
        v_total, v_both = sess.run([total, both])
    assert v_total == pytest.approx(5.0 + 3.75) and v_both == v_total


def test_regularizer_on_get_variable_adds_a_regularization_loss():
    w = tf.get_variable("w", initializer=_W0, regularizer=layers.l2_regularizer(0.1))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert _names(losses) == ["w/Regularizer/l2_regularizer"]
    with tf.Session() as sess:
        sess.run(w.initializer)
        assert sess.run(losses[0]) == pytest.approx(0.1 * 30.0 / 2.0)


def test_apply_regularization_sums_over_a_list():
    w1, w2 = tf.constant(_W0), tf.constant([1.0, 1.0])
    penalty = layers.apply_regularization(layers.l1_regularizer(0.5), [w1, w2])
    assert penalty.op.name == "get_regularization_penalty" and penalty.op.type == "AddN"
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == [penalty]
    with tf.Session() as sess:
        assert sess.run(penalty) == pytest.approx(0.5 * 12.0)


def test_apply_regularization_reads_the_weights_collection_and_counts_none_as_zero():
    tf.add_to_collection("weights", tf.constant(_W0))
    penalty = layers.apply_regularization(lambda w: None)
    with tf.Session() as sess:
        assert sess.run(penalty) == 0.0


def test_apply_regularization_errors():
    with pytest.raises(ValueError, match="No weights to regularize."):
        layers.apply_regularization(layers.l1_regularizer(0.5))
    with pytest.raises(ValueError, match="regularizer must return a scalar Tensor instead of a Tensor with rank 2."):
        layers.apply_regularization(lambda w: w * 2.0, [tf.constant(_W0)])


# --- fully_connected ------------------------------------------------------------------------------------------------

def test_fully_connected_names_collections_and_values():
    x0 = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 3])
    y = layers.fully_connected(x, 4)
    assert y.name == "fully_connected/Relu:0" and y.shape.as_list() == [None, 4]
    weights, biases = tf.global_variables()
    assert (weights.name, biases.name) == ("fully_connected/weights:0", "fully_connected/biases:0")
    assert weights.shape.as_list() == [3, 4] and biases.shape.as_list() == [4]
    assert tf.trainable_variables() == [weights, biases]
    assert tf.get_collection(tf.GraphKeys.MODEL_VARIABLES) == [weights, biases]
    assert tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES) == []
    bias_add = y.op.inputs[0].op
    assert (bias_add.name, bias_add.inputs[0].op.name) == ("fully_connected/BiasAdd", "fully_connected/MatMul")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        w, b, out = sess.run([weights, biases, y], {x: x0})
    assert np.abs(w).max() <= np.sqrt(6.0 / 7.0) and np.all(b == 0.0)
    np.testing.assert_allclose(out, np.maximum(x0 @ w + b, 0.0), rtol=1e-5, atol=1e-6)


def test_fully_connected_scopes_are_uniquified_and_nested():
    x = tf.ones([2, 3])
    layers.fully_connected(x, 2)
    layers.fully_connected(x, 2)
    with tf.variable_scope("net"):
        inner = layers.fully_connected(x, 2, scope="logits", activation_fn=None)
    assert _names(tf.global_variables()) == [
        "fully_connected/weights", "fully_connected/biases", "fully_connected_1/weights",
        "fully_connected_1/biases", "net/logits/weights", "net/logits/biases"]
    assert inner.op.name == "net/logits/BiasAdd"


def test_fully_connected_reuse_shares_the_variables():
    x0 = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = layers.fully_connected(tf.constant(x0), 2, scope="fc")
    b = layers.fully_connected(tf.constant(x0), 2, scope="fc", reuse=True)
    with tf.variable_scope("fc", reuse=True), pytest.raises(ValueError, match="fc/fully_connected/weights does not"):
        layers.fully_connected(tf.constant(x0), 2)   # a new scope inside fc: nothing there to reuse
    with pytest.raises(ValueError, match="fc/weights already exists"):
        layers.fully_connected(tf.constant(x0), 2, scope="fc")
    assert b.op.name == "fc_1/Relu"
    assert _names(tf.global_variables())[:2] == ["fc/weights", "fc/biases"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        va, vb = sess.run([a, b])
    np.testing.assert_array_equal(va, vb)


def test_fully_connected_reuse_in_a_variable_scope_object():
    x = tf.ones([1, 3])
    with tf.variable_scope("tower") as scope:
        layers.fully_connected(x, 2, scope="fc")
        scope.reuse_variables()
        layers.fully_connected(x, 2, scope="fc")
    assert _names(tf.global_variables()) == ["tower/fc/weights", "tower/fc/biases"]


def test_fully_connected_without_biases_and_with_a_normalizer():
    x = tf.constant([[1.0, 2.0]])
    plain = layers.fully_connected(x, 3, biases_initializer=None, activation_fn=None,
                                   weights_initializer=tf.ones_initializer())
    normalized = layers.fully_connected(x, 3, normalizer_fn=lambda t, factor: t * factor,
                                        normalizer_params={"factor": -1.0},
                                        weights_initializer=tf.ones_initializer())
    assert plain.op.type == "MatMul" and plain.op.name == "fully_connected/MatMul"
    assert _names(tf.global_variables()) == ["fully_connected/weights", "fully_connected_1/weights"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        v_plain, v_norm = sess.run([plain, normalized])
    np.testing.assert_array_equal(v_plain, [[3.0, 3.0, 3.0]])
    np.testing.assert_array_equal(v_norm, [[0.0, 0.0, 0.0]])   # relu(-3)


def test_fully_connected_collections_and_trainable():
    x = tf.ones([2, 3])
    y = layers.fully_connected(x, 2, variables_collections=["mine"], outputs_collections=["outs"])
    z = layers.fully_connected(x, 2, variables_collections={"weights": ["w_only"]}, trainable=False)
    first, second = tf.global_variables()[:2], tf.global_variables()[2:]
    assert tf.get_collection("mine") == first
    assert tf.get_collection("w_only") == second[:1]
    assert tf.get_collection("outs") == [y] and z not in tf.get_collection("outs")
    assert tf.trainable_variables() == first
    assert tf.get_collection(tf.GraphKeys.MODEL_VARIABLES) == first + second


def test_fully_connected_regularizers_and_initializers():
    y = layers.fully_connected(tf.ones([1, 2]), 2, weights_initializer=tf.constant_initializer(2.0),
                               biases_initializer=tf.constant_initializer(0.5),
                               weights_regularizer=layers.l2_regularizer(0.5),
                               biases_regularizer=layers.l1_regularizer(1.0))
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert len(losses) == 2
    assert [name.split("/")[0] for name in _names(losses)] == ["fully_connected", "fully_connected"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        v_losses, v_y = sess.run([losses, y])
    np.testing.assert_allclose(v_losses, [0.5 * 16.0 / 2.0, 1.0])
    np.testing.assert_allclose(v_y, [[4.5, 4.5]])


def test_fully_connected_on_rank_3_inputs_and_errors():
    y = layers.fully_connected(tf.ones([2, 5, 3]), 4)
    assert y.shape.as_list() == [2, 5, 4]
    with pytest.raises(ValueError, match="num_outputs type should be one of"):
        layers.fully_connected(tf.ones([2, 3]), 4.0)
    with pytest.raises(ValueError, match="should be defined"):
        layers.fully_connected(tf.placeholder(tf.float32, [2, None]), 4)


def test_fully_connected_trains():
    rng = np.random.default_rng(1)
    x0 = rng.normal(size=(64, 4)).astype(np.float32)
    y0 = (x0 @ np.array([[1.0], [-2.0], [0.5], [3.0]], dtype=np.float32)).astype(np.float32)
    x, target = tf.placeholder(tf.float32, [None, 4]), tf.placeholder(tf.float32, [None, 1])
    hidden = layers.fully_connected(x, 16)
    out = layers.fully_connected(hidden, 1, activation_fn=None)
    loss = tf.reduce_mean(tf.square(out - target))
    train = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: x0, target: y0})
        for _ in range(100):
            sess.run(train, {x: x0, target: y0})
        last = sess.run(loss, {x: x0, target: y0})
    assert last < 0.2 * first


# --- flatten --------------------------------------------------------------------------------------------------------

def test_contrib_flatten_names_shapes_and_values():
    x0 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = tf.placeholder(tf.float32, [None, 3, 4])
    y = layers.flatten(x)
    z = layers.flatten(tf.constant(x0), scope="flat", outputs_collections=["outs"])
    assert y.name == "Flatten/flatten/Reshape:0" and y.shape.as_list() == [None, 12]
    assert z.op.name == "flat/flatten/Reshape" and z.shape.as_list() == [2, 12]
    assert tf.get_collection("outs") == [z]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: x0}), x0.reshape(2, 12))
    with pytest.raises(ValueError, match="expected min_ndim=1, found ndim=0"):
        layers.flatten(tf.constant(1.0))


# --- conv2d, pooling, dropout ---------------------------------------------------------------------------------------

def test_contrib_conv2d_names_defaults_and_values():
    x0 = np.random.default_rng(2).normal(size=(2, 6, 6, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 6, 6, 3])
    y = layers.conv2d(x, 4, [3, 3], weights_initializer=tf.constant_initializer(0.1))
    weights, biases = tf.global_variables()
    assert (weights.name, biases.name) == ("Conv/weights:0", "Conv/biases:0")
    assert weights.shape.as_list() == [3, 3, 3, 4]
    assert tf.get_collection(tf.GraphKeys.MODEL_VARIABLES) == [weights, biases]
    assert y.name == "Conv/Relu:0" and y.shape.as_list() == [None, 6, 6, 4]   # SAME padding by default
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(y, {x: x0})
    padded = np.pad(x0, [(0, 0), (1, 1), (1, 1), (0, 0)])
    window_sums = sum(padded[:, i:i + 6, j:j + 6, :].sum(axis=3) for i in range(3) for j in range(3))
    np.testing.assert_allclose(out, np.maximum(0.1 * window_sums, 0.0)[..., None].repeat(4, axis=3), rtol=1e-5,
                               atol=1e-6)


def test_contrib_conv2d_scope_reuse_stride_and_nchw():
    x = tf.ones([1, 8, 8, 2])
    a = layers.conv2d(x, 3, 3, scope="conv1")
    b = layers.conv2d(x, 3, 3, scope="conv1", reuse=True)
    c = layers.conv2d(tf.ones([1, 2, 8, 8]), 3, 3, stride=2, data_format="NCHW", activation_fn=None)
    assert _names(tf.global_variables()) == ["conv1/weights", "conv1/biases", "Conv/weights", "Conv/biases"]
    assert b.op.name == "conv1_1/Relu" and c.shape.as_list() == [1, 3, 4, 4] and c.op.type == "BiasAdd"
    with pytest.raises(ValueError, match="Invalid data_format: 'channels_first'"):
        layers.conv2d(x, 3, 3, data_format="channels_first")
    with pytest.raises(ValueError, match="Convolution expects input with rank 4, got 3"):
        layers.conv2d(tf.ones([8, 8, 2]), 3, 3)
    va, vb = _run_all([a, b])
    np.testing.assert_array_equal(va, vb)


def _run_all(fetches):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches)


def test_contrib_pooling_names_and_defaults():
    x0 = np.random.default_rng(3).normal(size=(1, 4, 4, 2)).astype(np.float32)
    mx = layers.max_pool2d(tf.constant(x0), [2, 2])
    av = layers.avg_pool2d(tf.constant(x0), 2, scope="pool")
    assert (mx.op.name, av.op.name) == ("MaxPool2D/MaxPool", "pool/AvgPool")
    assert mx.shape.as_list() == [1, 2, 2, 2]   # stride 2 and VALID by default
    v_mx, v_av = _run_all([mx, av])
    np.testing.assert_allclose(v_mx, x0.reshape(1, 2, 2, 2, 2, 2).max(axis=(2, 4)))
    np.testing.assert_allclose(v_av, x0.reshape(1, 2, 2, 2, 2, 2).mean(axis=(2, 4)), rtol=1e-6)
    with pytest.raises(ValueError, match="data_format has to be either NCHW or NHWC."):
        layers.max_pool2d(tf.constant(x0), 2, data_format="channels_last")


def test_contrib_dropout_trains_by_default():
    y = layers.dropout(tf.ones([100, 100]), keep_prob=0.8)
    off = layers.dropout(tf.ones([3]), is_training=False)
    # TF re-enters the layer's scope, claiming "Dropout/Dropout" (names are unique ignoring case): tf.nn.dropout's
    # scope becomes Dropout/dropout_1
    assert y.op.name == "Dropout/dropout_1/mul_1" and off.op.name == "Dropout_1/Identity"
    value = _run_all(y)
    assert set(np.unique(value)) == {0.0, np.float32(1.0 / 0.8)}
    assert abs((value == 0.0).mean() - 0.2) < 0.03
