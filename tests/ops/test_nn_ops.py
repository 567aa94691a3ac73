"""Tests for adplace.ops.nn_ops: BiasAdd (shapes, TF's errors, kernel, gradient function, GPU kernel availability),
tf.nn.moments and tf.nn.batch_normalization against NumPy."""
import numpy as np
import pytest

import adplace as tf
from adplace.framework.registry import get_gradient_function, has_kernel


# --- BiasAdd --------------------------------------------------------------------------------------------------------

def test_bias_add_values_and_name():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([10.0, 20.0, 30.0], dtype=np.float32)
    y = tf.nn.bias_add(tf.constant(x), tf.constant(b))
    assert y.op.type == "BiasAdd" and y.name == "BiasAdd:0"
    assert y.shape.as_list() == [2, 3]
    np.testing.assert_array_equal(tf.Session().run(y), x + b)


def test_bias_add_channels_first():
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 2, 2)
    b = np.array([1.0, 2.0, 3.0])
    y = tf.nn.bias_add(x, b, data_format="NCHW")
    assert y.op.get_attr("data_format") == "NCHW"
    np.testing.assert_array_equal(tf.Session().run(y), x + b.reshape(1, 3, 1, 1))
    with pytest.raises(ValueError, match="data_format must be of the form `N...C` or `NC...`"):
        tf.nn.bias_add(x, b, data_format="HWC")


def test_bias_add_shape_errors():
    with pytest.raises(ValueError, match=r"Shape must be at least rank 2 but is rank 1 for 'BiasAdd' \(op: 'BiasAdd'\)"
                                         r" with input shapes: \[3\], \[3\]."):
        tf.nn.bias_add([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"Shape must be rank 1 but is rank 2 for 'BiasAdd_1'"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([1, 3]))
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 3 and 4 for 'BiasAdd_2' \(op: "
                                         r"'BiasAdd'\) with input shapes: \[2,3\], \[4\]."):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([4]))
    with pytest.raises(ValueError, match="requested dtype float32 for Tensor with dtype int32"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([3], dtype=tf.int32))


def test_bias_add_runtime_mismatch_is_invalid_argument():
    x = tf.placeholder(tf.float32, [None, None])
    b = tf.placeholder(tf.float32, [None])
    y = tf.nn.bias_add(x, b)
    assert y.shape.as_list() == [None, None]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Must provide as many biases as the last dimension of "
                                                             r"the input tensor: \[2\] vs. \[2,3\]"):
        tf.Session().run(y, {x: np.ones((2, 3)), b: np.ones(2)})


def test_bias_add_has_cpu_and_gpu_kernels():
    assert has_kernel("BiasAdd", "CPU", tf.int32)
    assert has_kernel("BiasAdd", "GPU", tf.float32)
    assert not has_kernel("BiasAdd", "GPU", tf.int8)


def test_bias_add_gradient_sums_over_all_but_the_channel_axis():
    x = tf.placeholder(tf.float32, [2, 2, 3])
    y = tf.nn.bias_add(x, tf.zeros([3]))
    dy = tf.constant(np.arange(12, dtype=np.float32).reshape(2, 2, 3))
    dx, db = get_gradient_function(y.op)(y.op, dy)
    assert dx is dy
    np.testing.assert_array_equal(tf.Session().run(db), np.arange(12).reshape(2, 2, 3).sum(axis=(0, 1)))

    z = tf.nn.bias_add(tf.ones([2, 3, 2, 2]), tf.zeros([3]), data_format="NCHW")
    dz = tf.constant(np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2))
    _, db_nchw = get_gradient_function(z.op)(z.op, dz)
    np.testing.assert_array_equal(tf.Session().run(db_nchw), np.arange(24).reshape(2, 3, 2, 2).sum(axis=(0, 2, 3)))


def test_bias_add_gradient_with_unknown_rank():
    x = tf.placeholder(tf.float32)
    y = tf.nn.bias_add(x, tf.constant([1.0, 2.0]))
    assert y.shape.ndims is None
    dy = tf.placeholder(tf.float32)
    _, db = get_gradient_function(y.op)(y.op, dy)
    grad = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    np.testing.assert_array_equal(tf.Session().run(db, {dy: grad}), grad.sum(axis=(0, 1)))


# --- moments, batch_normalization ------------------------------------------------------------------------------------

def test_moments_match_numpy():
    x0 = np.random.default_rng(0).normal(size=(4, 5, 3)).astype(np.float32)
    mean, variance = tf.nn.moments(tf.constant(x0), axes=[0, 1])
    kept_mean, kept_variance = tf.nn.moments(tf.constant(x0), axes=[0, 1], keep_dims=True)
    assert mean.shape.as_list() == [3] and kept_mean.shape.as_list() == [1, 1, 3]
    assert mean.op.name == "moments/Squeeze"
    ops = {op.type for op in tf.get_default_graph().get_operations() if op.name.startswith("moments/")}
    assert {"Mean", "StopGradient", "SquaredDifference", "Squeeze"} <= ops
    vm, vv, vkm, vkv = tf.Session().run([mean, variance, kept_mean, kept_variance])
    np.testing.assert_allclose(vm, x0.mean(axis=(0, 1)), rtol=1e-5)
    np.testing.assert_allclose(vv, x0.var(axis=(0, 1)), rtol=1e-5)
    np.testing.assert_allclose(vkm, x0.mean(axis=(0, 1), keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(vkv, x0.var(axis=(0, 1), keepdims=True), rtol=1e-5)


def test_moments_of_float16_are_computed_in_float32():
    x0 = np.array([[1000.0, 1001.0], [1002.0, 1003.0]], dtype=np.float16)
    mean, variance = tf.nn.moments(tf.constant(x0), axes=[0])
    assert mean.dtype == tf.float16 and variance.dtype == tf.float16
    np.testing.assert_allclose(tf.Session().run(variance), [1.0, 1.0])


def test_batch_normalization_formula():
    rng = np.random.default_rng(1)
    x0, mean0, var0 = rng.normal(size=(6, 3)), rng.normal(size=3), rng.uniform(0.5, 2.0, size=3)
    offset0, scale0 = rng.normal(size=3), rng.normal(size=3)
    y = tf.nn.batch_normalization(x0, tf.constant(mean0), tf.constant(var0), offset0, scale0, 1e-3)
    bare = tf.nn.batch_normalization(x0, mean0, var0, None, None, 1e-3)
    assert y.op.name == "batchnorm/add_1"
    vy, vbare = tf.Session().run([y, bare])
    np.testing.assert_allclose(vy, scale0 * (x0 - mean0) / np.sqrt(var0 + 1e-3) + offset0, rtol=1e-10)
    np.testing.assert_allclose(vbare, (x0 - mean0) / np.sqrt(var0 + 1e-3), rtol=1e-10)


def test_bias_add_channels_first_uses_axis_one_at_every_rank():
    """"NC..." puts the channels right after the batch, so a 3-D or 5-D input adds the bias along axis 1."""
    for shape in ((2, 3, 4), (2, 3, 2, 2, 2)):
        x = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
        b = np.array([1.0, 2.0, 3.0])
        y = tf.nn.bias_add(x, b, data_format="NCHW")
        assert y.shape.as_list() == list(shape)
        np.testing.assert_array_equal(tf.Session().run(y), x + b.reshape((1, 3) + (1,) * (len(shape) - 2)))
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 4 and 3 for 'BiasAdd_2' \(op: "
                                         r"'BiasAdd'\) with input shapes: \[2,4,3\], \[3\]."):
        tf.nn.bias_add(tf.ones([2, 4, 3]), tf.ones([3]), data_format="NCHW")


def test_crelu_concatenates_both_signs_along_the_axis():
    x = np.array([[-9, 7, -5], [1, -3, 5]], dtype=np.int32)
    y = tf.nn.crelu(x)
    assert y.op.type == "Relu" and y.op.name == "CRelu/Relu" and y.op.inputs[0].op.name == "CRelu"
    assert y.shape.as_list() == [2, 6]
    np.testing.assert_array_equal(tf.Session().run(y), np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], 1))
    rows = tf.nn.crelu(x.astype(np.float32), axis=0)
    assert rows.shape.as_list() == [4, 3]
    np.testing.assert_array_equal(tf.Session().run(rows), np.concatenate([np.maximum(x, 0), np.maximum(-x, 0)], 0))
