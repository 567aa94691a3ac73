"""Tests for adplace.layers' convolution, pooling, flatten and dropout layers (tf.layers.conv2d, max_pooling2d,
average_pooling2d, flatten, dropout and their classes): output shapes for both paddings and data formats, values
against NumPy references, variable names, collections, reuse, errors, and a small convnet that trains."""
import numpy as np
import pytest

import adplace as tf


def _names(variables) -> list:
    return [v.op.name for v in variables]


def _same_pads(size: int, window: int, stride: int) -> tuple[int, int]:
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return total // 2, total - total // 2


def _windows(x: np.ndarray, kh: int, kw: int, stride: tuple, padding: str, fill: float) -> np.ndarray:
    """NHWC -> [N, OH, OW, kh, kw, C] windows, SAME padding filled with `fill`."""
    if padding == "same":
        (t, b), (lft, r) = _same_pads(x.shape[1], kh, stride[0]), _same_pads(x.shape[2], kw, stride[1])
        x = np.pad(x, [(0, 0), (t, b), (lft, r), (0, 0)], constant_values=fill)
    oh, ow = (x.shape[1] - kh) // stride[0] + 1, (x.shape[2] - kw) // stride[1] + 1
    out = np.empty((x.shape[0], oh, ow, kh, kw, x.shape[3]), x.dtype)
    for i in range(oh):
        for j in range(ow):
            out[:, i, j] = x[:, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw, :]
    return out


def _conv_reference(x, kernel, bias, stride=(1, 1), padding="valid"):
    kh, kw = kernel.shape[:2]
    return np.einsum("nijabc,abco->nijo", _windows(x, kh, kw, stride, padding, 0.0), kernel) + bias


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# --- conv2d ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("padding, strides, expected", [
    ("valid", 1, [None, 26, 26, 8]), ("same", 1, [None, 28, 28, 8]), ("VALID", 2, [None, 13, 13, 8]),
    ("SAME", (2, 3), [None, 14, 10, 8])])
def test_conv2d_output_shapes(padding, strides, expected):
    x = tf.placeholder(tf.float32, [None, 28, 28, 1])
    y = tf.layers.conv2d(x, 8, 3, strides=strides, padding=padding)
    assert y.shape.as_list() == expected


def test_conv2d_variables_names_and_values():
    x0 = np.random.default_rng(0).normal(size=(2, 7, 6, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 7, 6, 3])
    y = tf.layers.conv2d(x, 4, [3, 2], activation=tf.nn.relu)
    kernel, bias = tf.global_variables()
    assert (kernel.name, bias.name) == ("conv2d/kernel:0", "conv2d/bias:0")
    assert kernel.shape.as_list() == [3, 2, 3, 4] and bias.shape.as_list() == [4]
    assert tf.trainable_variables() == [kernel, bias]
    assert y.name == "conv2d/Relu:0" and y.shape.as_list() == [None, 5, 5, 4]
    assert y.op.inputs[0].op.name == "conv2d/BiasAdd"
    assert y.op.inputs[0].op.inputs[0].op.name == "conv2d/Conv2D"
    k, b, out = _run([kernel, bias, y], {x: x0})
    limit = np.sqrt(6.0 / (3 * 2 * 3 + 3 * 2 * 4))   # Glorot-uniform over the receptive field
    assert np.abs(k).max() <= limit and np.all(b == 0.0)
    np.testing.assert_allclose(out, np.maximum(_conv_reference(x0, k, b), 0.0), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("padding", ["valid", "same"])
def test_conv2d_strided_values(padding):
    x0 = np.random.default_rng(1).normal(size=(1, 7, 8, 2)).astype(np.float32)
    y = tf.layers.conv2d(tf.constant(x0), 3, 3, strides=2, padding=padding,
                         bias_initializer=tf.constant_initializer(0.5))
    kernel, bias = tf.global_variables()
    k, b, out = _run([kernel, bias, y])
    np.testing.assert_allclose(out, _conv_reference(x0, k, b, (2, 2), padding), rtol=1e-5, atol=1e-5)


def test_conv2d_channels_first_matches_channels_last():
    x0 = np.random.default_rng(2).normal(size=(2, 6, 6, 3)).astype(np.float32)
    init = tf.constant_initializer(np.random.default_rng(3).normal(size=(3, 3, 3, 5)))
    last = tf.layers.conv2d(tf.constant(x0), 5, 3, padding="same", kernel_initializer=init)
    first = tf.layers.conv2d(tf.constant(x0.transpose(0, 3, 1, 2)), 5, 3, padding="same", kernel_initializer=init,
                             data_format="channels_first", bias_initializer=tf.ones_initializer())
    assert first.shape.as_list() == [2, 5, 6, 6]
    assert tf.global_variables()[2].shape.as_list() == [3, 3, 3, 5]
    assert first.op.type == "BiasAdd" and first.op.get_attr("data_format") in ("NCHW", b"NCHW")
    v_last, v_first = _run([last, first])
    np.testing.assert_allclose(v_first.transpose(0, 2, 3, 1), v_last + 1.0, rtol=1e-5, atol=1e-5)


def test_conv2d_without_bias_and_with_a_dilation():
    y = tf.layers.conv2d(tf.ones([1, 9, 9, 2]), 3, 3, use_bias=False, dilation_rate=2)
    assert _names(tf.global_variables()) == ["conv2d/kernel"]
    assert y.op.name == "conv2d/Conv2D" and y.shape.as_list() == [1, 5, 5, 3]
    assert list(y.op.get_attr("dilations")) == [1, 2, 2, 1]


def test_conv2d_names_are_uniquified_and_reuse_shares():
    x = tf.ones([1, 5, 5, 2])
    tf.layers.conv2d(x, 2, 3)
    tf.layers.conv2d(x, 2, 3)
    a = tf.layers.conv2d(x, 2, 3, name="conv")
    b = tf.layers.conv2d(x, 2, 3, name="conv", reuse=True)
    with tf.variable_scope("tower"):
        tf.layers.conv2d(x, 2, 3)
    assert _names(tf.global_variables()) == ["conv2d/kernel", "conv2d/bias", "conv2d_1/kernel", "conv2d_1/bias",
                                             "conv/kernel", "conv/bias", "tower/conv2d/kernel", "tower/conv2d/bias"]
    assert b.op.name == "conv_1/BiasAdd"
    with pytest.raises(ValueError, match="Variable conv/kernel already exists"):
        tf.layers.conv2d(x, 2, 3, name="conv")
    with pytest.raises(ValueError, match="Trying to share variable conv/kernel, but specified shape"):
        tf.layers.conv2d(x, 2, 2, name="conv", reuse=True)
    va, vb = _run([a, b])
    np.testing.assert_array_equal(va, vb)


def test_conv2d_reuse_through_variable_scopes():
    x = tf.ones([1, 5, 5, 2])
    with tf.variable_scope("net"):
        a = tf.layers.conv2d(x, 2, 3, name="c")
    with tf.variable_scope("net", reuse=True):
        b = tf.layers.conv2d(x, 2, 3, name="c")
    with tf.variable_scope("net", reuse=tf.AUTO_REUSE):
        c = tf.layers.conv2d(x, 2, 3, name="c")
    assert _names(tf.global_variables()) == ["net/c/kernel", "net/c/bias"]
    assert (a.op.name, b.op.name, c.op.name) == ("net/c/BiasAdd", "net_1/c/BiasAdd", "net_2/c/BiasAdd")
    va, vb, vc = _run([a, b, c])
    np.testing.assert_array_equal(va, vb)
    np.testing.assert_array_equal(va, vc)


def test_conv2d_layer_object_is_built_once():
    layer = tf.layers.Conv2D(4, 3, padding="same", kernel_initializer=tf.ones_initializer())
    y1 = layer(tf.ones([1, 4, 4, 2]))
    y2 = layer(tf.placeholder(tf.float32, [None, 8, 8, 2]))
    assert layer.trainable_weights == [layer.kernel, layer.bias] and len(tf.global_variables()) == 2
    assert y1.shape.as_list() == [1, 4, 4, 4] and y2.shape.as_list() == [None, 8, 8, 4]
    assert _run(y1)[0, 1, 1, 0] == 18.0
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 2 but received input with "
                                         r"shape \[1, 4, 4, 3\]"):
        layer(tf.ones([1, 4, 4, 3]))


def test_conv2d_regularizers_and_trainable():
    tf.layers.conv2d(tf.ones([1, 3, 3, 1]), 1, 3, kernel_initializer=tf.ones_initializer(), trainable=False,
                     kernel_regularizer=tf.contrib.layers.l2_regularizer(0.5))
    assert tf.trainable_variables() == [] and len(tf.global_variables()) == 2
    losses = tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    assert _names(losses) == ["conv2d/kernel/Regularizer/l2_regularizer"]
    assert _run(losses[0]) == pytest.approx(0.5 * 9.0 / 2.0)


def test_conv2d_argument_and_input_errors():
    x = tf.ones([1, 5, 5, 2])
    with pytest.raises(ValueError, match=r"The `kernel_size` argument must be a tuple of 2 integers. Received: "
                                         r"\(1, 2, 3\)"):
        tf.layers.conv2d(x, 2, (1, 2, 3))
    with pytest.raises(ValueError, match="including element a of type <class 'str'>"):
        tf.layers.conv2d(x, 2, 3, strides=(1, "a"))
    with pytest.raises(ValueError, match='The `padding` argument must be a list/tuple or one of "valid", "same"'):
        tf.layers.conv2d(x, 2, 3, padding="full")
    with pytest.raises(ValueError, match="The `data_format` argument must be one of"):
        tf.layers.conv2d(x, 2, 3, data_format="NHWC")
    with pytest.raises(ValueError, match=r"expected ndim=4, found ndim=3. Full shape received: \[5, 5, 2\]"):
        tf.layers.conv2d(tf.ones([5, 5, 2]), 2, 3)
    with pytest.raises(ValueError, match="The channel dimension of the inputs should be defined. Found `None`."):
        tf.layers.conv2d(tf.placeholder(tf.float32, [None, 5, 5, None]), 2, 3)
    assert tf.global_variables() == []


# --- pooling --------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("layer, reduce", [(tf.layers.max_pooling2d, np.max), (tf.layers.average_pooling2d, np.mean)])
@pytest.mark.parametrize("padding, size, strides, expected", [
    ("valid", 2, 2, [None, 3, 3, 3]), ("same", 2, 2, [None, 4, 4, 3]), ("valid", 3, 1, [None, 5, 5, 3]),
    ("same", (3, 2), (2, 1), [None, 4, 7, 3])])
def test_pooling_shapes_and_values(layer, reduce, padding, size, strides, expected):
    x0 = np.random.default_rng(4).normal(size=(2, 7, 7, 3)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 7, 7, 3])
    y = layer(x, size, strides, padding=padding)
    assert y.shape.as_list() == expected
    kh, kw = (size, size) if isinstance(size, int) else size
    stride = (strides, strides) if isinstance(strides, int) else strides
    windows = _windows(x0, kh, kw, stride, padding.lower(), np.nan)
    reference = (np.nanmax if reduce is np.max else np.nanmean)(windows, axis=(3, 4))
    np.testing.assert_allclose(_run(y, {x: x0}), reference, rtol=1e-5, atol=1e-6)


def test_pooling_names_and_channels_first():
    x0 = np.random.default_rng(5).normal(size=(2, 3, 6, 6)).astype(np.float32)
    mx = tf.layers.max_pooling2d(tf.constant(x0), 2, 2, data_format="channels_first")
    av = tf.layers.AveragePooling2D(3, 3, data_format="channels_first", name="pool")(tf.constant(x0))
    again = tf.layers.MaxPooling2D([2, 2], [2, 2])(tf.constant(x0.transpose(0, 2, 3, 1)))
    assert (mx.op.name, av.op.name, again.op.name) == ("max_pooling2d/MaxPool", "pool/AvgPool",
                                                       "max_pooling2d_1/MaxPool")
    assert mx.shape.as_list() == [2, 3, 3, 3] and av.shape.as_list() == [2, 3, 2, 2]
    v_mx, v_av, v_again = _run([mx, av, again])
    np.testing.assert_allclose(v_mx, v_again.transpose(0, 3, 1, 2))
    np.testing.assert_allclose(v_av, x0.reshape(2, 3, 2, 3, 2, 3).mean(axis=(3, 5)), rtol=1e-5)
    assert tf.global_variables() == []


def test_pooling_errors():
    with pytest.raises(ValueError, match="Argument `strides` must not be None."):
        tf.layers.MaxPooling2D(2, None)
    with pytest.raises(ValueError, match=r"The `pool_size` argument must be a tuple of 2 integers. Received: \[2\]"):
        tf.layers.max_pooling2d(tf.ones([1, 4, 4, 1]), [2], 2)
    with pytest.raises(ValueError, match="expected ndim=4, found ndim=2"):
        tf.layers.average_pooling2d(tf.ones([4, 4]), 2, 2)


# --- flatten --------------------------------------------------------------------------------------------------------

def test_flatten_keeps_the_batch_dimension():
    x0 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = tf.placeholder(tf.float32, [None, 3, 4])
    y = tf.layers.flatten(x)
    assert y.name == "flatten/Reshape:0" and y.shape.as_list() == [None, 12]
    assert tf.layers.flatten(tf.placeholder(tf.float32, [5, 2, None])).shape.as_list() == [5, None]
    assert tf.layers.flatten(tf.placeholder(tf.float32, [None, 2, None])).shape.as_list() == [None, None]
    assert tf.layers.flatten(tf.ones([3])).shape.as_list() == [3, 1]
    unknown = tf.placeholder(tf.float32, [None, None, 4])
    z = tf.layers.flatten(unknown, name="flat")
    assert z.op.name == "flat/Reshape" and z.shape.as_list() == [None, None]
    v_y, v_z = _run([y, z], {x: x0, unknown: x0})
    np.testing.assert_array_equal(v_y, x0.reshape(2, 12))
    np.testing.assert_array_equal(v_z, x0.reshape(2, 12))


def test_flatten_channels_first_orders_like_channels_last():
    x0 = np.arange(2 * 3 * 2 * 2, dtype=np.float32).reshape(2, 3, 2, 2)   # NCHW
    y = tf.layers.Flatten(data_format="channels_first")(tf.constant(x0))
    np.testing.assert_array_equal(_run(y), x0.transpose(0, 2, 3, 1).reshape(2, 12))


def test_flatten_errors():
    with pytest.raises(ValueError, match=r"Input 0 of layer flatten is incompatible with the layer: expected "
                                         r"min_ndim=1, found ndim=0. Full shape received: \[\]"):
        tf.layers.flatten(tf.constant(1.0))
    with pytest.raises(ValueError, match="The `data_format` argument must be one of"):
        tf.layers.flatten(tf.ones([2, 2]), data_format="NCHW")


# --- dropout --------------------------------------------------------------------------------------------------------

def test_dropout_is_the_identity_unless_training():
    x0 = np.random.default_rng(6).normal(size=(4, 5)).astype(np.float32)
    default = tf.layers.dropout(tf.constant(x0), 0.5)
    off = tf.layers.Dropout(0.9)(tf.constant(x0), training=False)
    assert (default.name, off.name) == ("dropout/Identity:0", "dropout_1/Identity:0")
    v_default, v_off = _run([default, off])
    np.testing.assert_array_equal(v_default, x0)
    np.testing.assert_array_equal(v_off, x0)


def test_dropout_scales_the_kept_units_while_training():
    y = tf.layers.dropout(tf.ones([100, 100]), rate=0.25, training=True)
    assert y.name.startswith("dropout/dropout/") and y.shape.as_list() == [100, 100]
    value = _run(y)
    assert set(np.unique(value)) == {0.0, np.float32(1.0 / 0.75)}
    assert abs((value == 0.0).mean() - 0.25) < 0.03
    assert tf.global_variables() == []


def test_dropout_with_a_training_placeholder():
    is_training = tf.placeholder(tf.bool, [])
    x = tf.ones([50, 40])
    y = tf.layers.dropout(x, rate=0.5, training=is_training)
    assert y.name == "dropout/cond/Merge:0" and y.shape.as_list() == [50, 40]
    grad, = tf.gradients(tf.reduce_sum(y), [x])
    with tf.Session() as sess:
        on, on_grad = sess.run([y, grad], {is_training: True})
        off, off_grad = sess.run([y, grad], {is_training: False})
    np.testing.assert_array_equal(off, np.ones([50, 40]))
    np.testing.assert_array_equal(off_grad, np.ones([50, 40]))
    assert set(np.unique(on)) == {0.0, 2.0} and abs((on == 0.0).mean() - 0.5) < 0.05
    assert set(np.unique(on_grad)) == {0.0, 2.0}


def test_dropout_with_a_constant_training_tensor_builds_one_branch():
    y = tf.layers.dropout(tf.ones([3]), training=tf.constant(False))
    assert y.op.type == "Identity"


def test_dropout_noise_shape_shares_the_mask():
    y = tf.layers.dropout(tf.ones([8, 30]), rate=0.5, noise_shape=[None, 1], training=True, seed=3)
    value = _run(y)
    assert np.all(value == value[:, :1])   # each row kept or dropped whole
    assert y.shape.as_list() == [8, 30]


# --- a small convnet ------------------------------------------------------------------------------------------------

def test_a_small_convnet_trains():
    rng = np.random.default_rng(7)
    images = rng.normal(size=(32, 12, 12, 1)).astype(np.float32)
    labels = (images[:, :6].mean(axis=(1, 2, 3)) > images[:, 6:].mean(axis=(1, 2, 3))).astype(np.int32)
    x = tf.placeholder(tf.float32, [None, 12, 12, 1])
    y = tf.placeholder(tf.int32, [None])
    is_training = tf.placeholder(tf.bool, [])
    tf.set_random_seed(1)
    net = tf.layers.conv2d(x, 8, 3, padding="same", activation=tf.nn.relu)
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.conv2d(net, 8, 3, activation=tf.nn.relu)
    net = tf.layers.average_pooling2d(net, 2, 2)
    net = tf.layers.flatten(net)
    assert net.shape.as_list() == [None, 2 * 2 * 8]
    net = tf.layers.dense(net, 16, activation=tf.nn.relu)
    net = tf.layers.dropout(net, rate=0.1, training=is_training)
    logits = tf.layers.dense(net, 2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.AdamOptimizer(0.01).minimize(loss)
    assert _names(tf.trainable_variables()) == [
        "conv2d/kernel", "conv2d/bias", "conv2d_1/kernel", "conv2d_1/bias", "dense/kernel", "dense/bias",
        "dense_1/kernel", "dense_1/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        evaluate = {x: images, y: labels, is_training: False}
        first = sess.run(loss, evaluate)
        for _ in range(30):
            sess.run(train, {x: images, y: labels, is_training: True})
        last = sess.run(loss, evaluate)
    assert last < 0.7 * first
