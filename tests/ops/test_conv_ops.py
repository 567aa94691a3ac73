"""Tests for adplace.ops.conv_ops, conv_grad and kernels/conv: Conv2D and its backprops, conv2d_transpose, MaxPool,
AvgPool and LRN against direct NumPy loops; TF's static shapes and errors; gradient checks; a small convnet."""
import itertools
import math

import numpy as np
import pytest

import adplace as tf
from adplace.framework.registry import has_kernel

RNG = np.random.default_rng(17)


# --- NumPy references (direct loops over output pixels) ----------------------------------------------------------
def _same_or_valid(size, k, stride, dilation, padding):
    effective = (k - 1) * dilation + 1
    if padding == "SAME":
        out = -(-size // stride)
        return out, max((out - 1) * stride + effective - size, 0) // 2
    return (size - effective) // stride + 1, 0


def ref_conv2d(x, f, strides=(1, 1), padding="SAME", dilations=(1, 1)):
    """NHWC cross-correlation, TF style (SAME puts the odd padding cell at the end)."""
    n, h, w, c = x.shape
    kh, kw, _, o = f.shape
    oh, top = _same_or_valid(h, kh, strides[0], dilations[0], padding)
    ow, left = _same_or_valid(w, kw, strides[1], dilations[1], padding)
    out = np.zeros((n, oh, ow, o))
    for i, j, di, dj in itertools.product(range(oh), range(ow), range(kh), range(kw)):
        r, s = i * strides[0] + di * dilations[0] - top, j * strides[1] + dj * dilations[1] - left
        if 0 <= r < h and 0 <= s < w:
            out[:, i, j, :] += x[:, r, s, :] @ f[di, dj]
    return out


def ref_pool(x, k, stride, padding, reduce):
    n, h, w, c = x.shape
    oh, top = _same_or_valid(h, k[0], stride[0], 1, padding)
    ow, left = _same_or_valid(w, k[1], stride[1], 1, padding)
    out = np.zeros((n, oh, ow, c))
    for i, j in itertools.product(range(oh), range(ow)):
        r, s = i * stride[0] - top, j * stride[1] - left
        window = x[:, max(r, 0):r + k[0], max(s, 0):s + k[1], :]
        out[:, i, j, :] = reduce(window, axis=(1, 2))
    return out


def _nchw(a):
    return np.transpose(a, (0, 3, 1, 2))


def _run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# --- Conv2D values -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("stride,padding,dilation,data_format,dtype",
                         list(itertools.product([1, 2], ["SAME", "VALID"], [1, 2], ["NHWC", "NCHW"],
                                                [np.float32, np.float64])))
def test_conv2d_matches_direct_loops(stride, padding, dilation, data_format, dtype):
    n, h, w, c, o = RNG.integers(1, 4), RNG.integers(5, 10), RNG.integers(5, 10), RNG.integers(1, 4), 3
    kh, kw = RNG.integers(1, 4, size=2)
    if dilation > 1 and stride > 1:
        stride = 1  # TF's CPU kernels reject dilations with strides; keep the case TF runs
    x, f = RNG.normal(size=(n, h, w, c)).astype(dtype), RNG.normal(size=(kh, kw, c, o)).astype(dtype)
    feed_x = _nchw(x) if data_format == "NCHW" else x
    y = tf.nn.conv2d(tf.constant(feed_x), tf.constant(f), strides=stride, padding=padding, data_format=data_format,
                     dilations=dilation)
    expected = ref_conv2d(x, f, (stride, stride), padding, (dilation, dilation))
    got = _run(y)
    if data_format == "NCHW":
        got = np.transpose(got, (0, 2, 3, 1))
    assert got.dtype == dtype and y.shape.as_list() == list(got.shape if data_format == "NHWC" else _nchw(got).shape)
    np.testing.assert_allclose(got, expected, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-5)


def test_conv2d_op_attrs_names_and_static_shapes():
    x = tf.placeholder(tf.float32, [None, 28, 28, 3])
    y = tf.nn.conv2d(x, tf.ones([5, 5, 3, 8]), strides=[1, 2, 2, 1], padding="SAME")
    assert y.op.type == "Conv2D" and y.name == "Conv2D:0"
    assert y.shape.as_list() == [None, 14, 14, 8]
    assert y.op.get_attr("strides") == [1, 2, 2, 1] and y.op.get_attr("padding") == "SAME"
    assert y.op.get_attr("data_format") == "NHWC" and y.op.get_attr("dilations") == [1, 1, 1, 1]
    assert y.op.get_attr("use_cudnn_on_gpu") is True and y.op.get_attr("explicit_paddings") == []
    assert [t.name for t in y.op.inputs] == ["Placeholder:0", "ones:0"]
    valid = tf.nn.conv2d(x, tf.ones([5, 5, 3, 8]), [1, 1, 1, 1], "VALID", name="valid")
    assert valid.name == "valid:0" and valid.shape.as_list() == [None, 24, 24, 8]
    z = tf.nn.conv2d(tf.placeholder(tf.float32, [2, 3, None, 9]), tf.ones([3, 3, 3, 4]), 2, "SAME",
                     data_format="NCHW")
    assert z.shape.as_list() == [2, 4, None, 5]
    dilated = tf.nn.conv2d(x, tf.ones([3, 3, 3, 1]), 1, "VALID", dilations=[1, 3, 3, 1])
    assert dilated.shape.as_list() == [None, 22, 22, 1]
    assert tf.nn.conv2d(tf.placeholder(tf.float32), tf.ones([3, 3, 3, 1]), 1, "SAME").shape.as_list() == \
        [None, None, None, 1]


def test_conv2d_filters_alias_and_explicit_padding():
    x = RNG.normal(size=(1, 5, 6, 2))
    f = RNG.normal(size=(3, 2, 2, 2))
    y = tf.nn.conv2d(x, filters=f, strides=1, padding=[[0, 0], [2, 1], [0, 3], [0, 0]])
    assert y.op.get_attr("padding") == "EXPLICIT"
    assert y.op.get_attr("explicit_paddings") == [0, 0, 2, 1, 0, 3, 0, 0]
    assert y.shape.as_list() == [1, 6, 8, 2]
    padded = np.pad(x, ((0, 0), (2, 1), (0, 3), (0, 0)))
    np.testing.assert_allclose(_run(y), ref_conv2d(padded, f, padding="VALID"), rtol=1e-10)
    with pytest.raises(ValueError, match=r'"EXPLICIT" is not a valid value for the padding parameter'):
        tf.nn.conv2d(x, f, 1, "EXPLICIT")
    with pytest.raises(ValueError, match=r"When padding is a list, it must be of size 4. Got padding of size: 2"):
        tf.nn.conv2d(x, f, 1, [[0, 0], [1, 1]])
    with pytest.raises(ValueError, match=r"Cannot specify both 'filter' and 'filters'"):
        tf.nn.conv2d(x, f, 1, "SAME", filters=f)


def test_conv2d_graph_construction_errors():
    x = tf.placeholder(tf.float32, [1, 5, 5, 3])
    with pytest.raises(ValueError, match=r"Depth of input \(3\) is not a multiple of input depth of filter \(4\) for "
                                         r"'Conv2D' \(op: 'Conv2D'\) with input shapes: \[1,5,5,3\], \[3,3,4,2\]\."):
        tf.nn.conv2d(x, tf.ones([3, 3, 4, 2]), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"Shape must be rank 4 but is rank 3 for 'Conv2D_1' \(op: 'Conv2D'\)"):
        tf.nn.conv2d(tf.ones([5, 5, 3]), tf.ones([3, 3, 3, 2]), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"Attr 'padding' of 'Conv2D' Op passed string 'same' not in: "
                                         r"\"SAME\", \"VALID\", \"EXPLICIT\"\."):
        tf.nn.conv2d(x, tf.ones([3, 3, 3, 2]), [1, 1, 1, 1], "same")
    with pytest.raises(ValueError, match=r"Attr 'data_format' of 'Conv2D' Op passed string 'NWHC' not in: "
                                         r"\"NHWC\", \"NCHW\"\."):
        tf.nn.conv2d(x, tf.ones([3, 3, 3, 2]), [1, 1, 1, 1], "SAME", data_format="NWHC")
    with pytest.raises(ValueError, match=r"Negative dimension size caused by subtracting 7 from 5 for 'Conv2D_\d' "
                                         r"\(op: 'Conv2D'\) with input shapes: \[1,5,5,3\], \[7,7,3,2\]\."):
        tf.nn.conv2d(x, tf.ones([7, 7, 3, 2]), [1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match=r"strides should be of length 1, 2 or 4 but was 3"):
        tf.nn.conv2d(x, tf.ones([3, 3, 3, 2]), [1, 1, 1], "SAME")
    with pytest.raises(ValueError, match=r"Stride must be > 0, but got 0"):
        tf.nn.conv2d(x, tf.ones([3, 3, 3, 2]), 0, "SAME")
    with pytest.raises(TypeError, match=r"Value passed to parameter 'T' has DataType int32 not in list of allowed "
                                        r"values: bfloat16, float16, float32, float64 \(op: 'Conv2D'\)"):
        tf.nn.conv2d(tf.ones([1, 5, 5, 3], tf.int32), tf.ones([3, 3, 3, 2], tf.int32), 1, "SAME")


def test_conv2d_batch_or_depth_strides_fail_when_run():
    y = tf.nn.conv2d(tf.ones([2, 5, 5, 3]), tf.ones([3, 3, 3, 2]), [2, 1, 1, 1], "SAME")
    assert y.shape.as_list() == [2, 5, 5, 2]  # the shape function does not look at the batch stride, as in TF
    with pytest.raises(tf.errors.InvalidArgumentError, match="Current implementation does not yet support strides "
                                                             "in the batch and depth dimensions."):
        _run(y)
    z = tf.nn.conv2d(tf.ones([2, 5, 5, 3]), tf.ones([3, 3, 3, 2]), 1, "SAME", dilations=[1, 1, 1, 2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="does not yet support dilations in the batch and depth"):
        _run(z)


def test_conv2d_runtime_shape_errors():
    x, f = tf.placeholder(tf.float32, [None, None, None, None]), tf.placeholder(tf.float32, [3, 3, None, 2])
    y = tf.nn.conv2d(x, f, 1, "VALID")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"input depth must be evenly divisible by filter "
                                                             r"depth: 3 vs 2"):
        _run(y, {x: np.ones((1, 5, 5, 3)), f: np.ones((3, 3, 2, 2))})
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Computed output size would be negative: -1 "
                                                             r"\[input_size: 1, effective_filter_size: 3, stride: 1\]"):
        _run(y, {x: np.ones((1, 1, 5, 3)), f: np.ones((3, 3, 3, 2))})
    assert _run(y, {x: np.ones((1, 2, 5, 3)), f: np.ones((3, 3, 3, 2))}).shape == (1, 0, 3, 2)  # C division: 0


# --- backprop ops and conv2d_transpose ---------------------------------------------------------------------------
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
@pytest.mark.parametrize("stride,padding,dilation", [(1, "SAME", 1), (2, "SAME", 1), (2, "VALID", 1), (3, "VALID", 1),
                                                     (1, "SAME", 2)])
def test_backprop_ops_are_the_adjoints_of_conv2d(stride, padding, dilation, data_format):
    """<conv(x, f), dy> == <x, backprop_input(dy)> == <f, backprop_filter(x, dy)>."""
    x, f = RNG.normal(size=(2, 7, 8, 3)), RNG.normal(size=(3, 2, 3, 4))
    if data_format == "NCHW":
        x = _nchw(x)
    kwargs = {"strides": [1, 1, stride, stride] if data_format == "NCHW" else [1, stride, stride, 1],
              "padding": padding, "data_format": data_format,
              "dilations": [1, 1, dilation, dilation] if data_format == "NCHW" else [1, dilation, dilation, 1]}
    y = tf.nn.conv2d(x, f, **kwargs)
    dy = RNG.normal(size=y.shape.as_list())
    dx = tf.nn.conv2d_backprop_input(list(x.shape), f, dy, **kwargs)
    df = tf.nn.conv2d_backprop_filter(x, list(f.shape), dy, **kwargs)
    assert dx.op.type == "Conv2DBackpropInput" and df.op.type == "Conv2DBackpropFilter"
    assert dx.shape.as_list() == list(x.shape) and df.shape.as_list() == list(f.shape)
    y_v, dx_v, df_v = _run([y, dx, df])
    inner = np.sum(y_v * dy)
    np.testing.assert_allclose(np.sum(x * dx_v), inner, rtol=1e-10)
    np.testing.assert_allclose(np.sum(f * df_v), inner, rtol=1e-10)


def test_backprop_shape_and_runtime_errors():
    dy = tf.placeholder(tf.float32, [1, 3, 3, 2])
    dx = tf.nn.conv2d_backprop_input([1, 6, 6, 1], tf.ones([3, 3, 1, 2]), dy, [1, 2, 2, 1], "SAME")
    assert dx.shape.as_list() == [1, 6, 6, 1]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Conv2DBackpropInput: Size of out_backprop doesn't "
                                                             r"match computed: actual = 3, computed = 4"):
        _run(tf.nn.conv2d_backprop_input([1, 8, 8, 1], tf.ones([3, 3, 1, 2]), dy, [1, 2, 2, 1], "SAME"),
             {dy: np.ones((1, 3, 3, 2))})
    with pytest.raises(ValueError, match=r"Shape must be rank 4 but is rank 3 for 'Conv2DBackpropInput_\d' "):
        tf.nn.conv2d_backprop_input([6, 6, 1], tf.ones([3, 3, 1, 2]), dy, [1, 2, 2, 1], "SAME")
    with pytest.raises(TypeError, match=r"Input 'filter_sizes' of 'Conv2DBackpropFilter' Op has type "
                                        r"float32 that does not match expected type of int32."):
        tf.nn.conv2d_backprop_filter(tf.ones([1, 6, 6, 1]), tf.constant([3.0, 3, 1, 2]), dy, [1, 2, 2, 1], "SAME")


def test_conv2d_transpose_is_conv2d_backprop_input():
    value, f = RNG.normal(size=(2, 4, 4, 3)), RNG.normal(size=(3, 3, 5, 3))
    y = tf.nn.conv2d_transpose(value, f, output_shape=[2, 8, 8, 5], strides=[1, 2, 2, 1])
    assert y.op.type == "Conv2DBackpropInput" and y.op.name == "conv2d_transpose"
    assert y.shape.as_list() == [2, 8, 8, 5] and y.op.get_attr("padding") == "SAME"
    reference = tf.nn.conv2d_backprop_input([2, 8, 8, 5], f, value, [1, 2, 2, 1], "SAME")
    got, expected = _run([y, reference])
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    dynamic = tf.nn.conv2d_transpose(tf.placeholder(tf.float64, [None, 4, 4, 3]), f,
                                     tf.placeholder(tf.int32, [4]), 2, padding="VALID")
    assert dynamic.shape.as_list() == [None, None, None, None]


def test_conv2d_transpose_with_a_stacked_output_shape():
    """The DCGAN pattern: the batch from tf.shape, the rest constants; the static shape keeps the constants."""
    x = tf.placeholder(tf.float32, [None, 7, 7, 4])
    y = tf.nn.conv2d_transpose(x, tf.ones([5, 5, 2, 4]), [tf.shape(x)[0], 14, 14, 2], [1, 2, 2, 1])
    assert y.shape.as_list() == [None, 14, 14, 2]
    assert _run(y, {x: np.ones((3, 7, 7, 4))}).shape == (3, 14, 14, 2)


def test_conv2d_transpose_errors():
    f = tf.ones([3, 3, 5, 3])
    with pytest.raises(ValueError, match=r"input channels does not match filter's input channels, 4 != 3"):
        tf.nn.conv2d_transpose(tf.ones([1, 4, 4, 4]), f, [1, 8, 8, 5], [1, 2, 2, 1])
    with pytest.raises(ValueError, match=r"output_shape must have shape \(4,\), got \(3,\)"):
        tf.nn.conv2d_transpose(tf.ones([1, 4, 4, 3]), f, [8, 8, 5], [1, 2, 2, 1])
    with pytest.raises(ValueError, match=r"output_shape does not match filter's output channels, 6 != 5"):
        tf.nn.conv2d_transpose(tf.ones([1, 4, 4, 3]), f, [1, 8, 8, 6], [1, 2, 2, 1])
    with pytest.raises(ValueError, match=r"padding must be either VALID or SAME: FULL"):
        tf.nn.conv2d_transpose(tf.ones([1, 4, 4, 3]), f, [1, 8, 8, 5], [1, 2, 2, 1], padding="FULL")
    with pytest.raises(ValueError, match=r"data_format has to be either NCHW or NHWC."):
        tf.nn.conv2d_transpose(tf.ones([1, 4, 4, 3]), f, [1, 8, 8, 5], [1, 2, 2, 1], data_format="NWHC")


# --- gradients -----------------------------------------------------------------------------------------------------
def _gradient_error(build, x_value, *extra):
    """max |theoretical - numeric| Jacobian entry of build(x) with respect to placeholder x (float64)."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float64, x_value.shape)
        y = build(x, *extra)
        with tf.Session():
            return tf.test.compute_gradient_error(x, list(x_value.shape), y, y.shape.as_list(),
                                                  x_init_value=x_value)


@pytest.mark.parametrize("stride,padding,data_format", [(1, "SAME", "NHWC"), (2, "SAME", "NCHW"),
                                                        (2, "VALID", "NHWC"), (1, "VALID", "NCHW")])
def test_conv2d_gradients_match_numeric_differences(stride, padding, data_format):
    x0, f0 = RNG.normal(size=(2, 5, 6, 2)), RNG.normal(size=(3, 3, 2, 3))
    if data_format == "NCHW":
        x0 = _nchw(x0)
    conv = lambda x, f: tf.nn.conv2d(x, f, stride, padding, data_format=data_format)  # noqa: E731
    assert _gradient_error(conv, x0, f0) < 1e-8
    assert _gradient_error(lambda f, x: conv(x, f), f0, x0) < 1e-8


def test_conv2d_with_dilations_gradient():
    x0, f0 = RNG.normal(size=(1, 7, 7, 2)), RNG.normal(size=(2, 3, 2, 2))
    conv = lambda x, f: tf.nn.conv2d(x, f, 1, "SAME", dilations=2)  # noqa: E731
    assert _gradient_error(conv, x0, f0) < 1e-8
    assert _gradient_error(lambda f, x: conv(x, f), f0, x0) < 1e-8


def test_explicit_padding_gradients():
    x0, f0 = RNG.normal(size=(1, 4, 5, 2)), RNG.normal(size=(2, 3, 2, 2))
    conv = lambda x, f: tf.nn.conv2d(x, f, 2, [[0, 0], [1, 2], [3, 0], [0, 0]])  # noqa: E731
    assert _gradient_error(conv, x0, f0) < 1e-8
    assert _gradient_error(lambda f, x: conv(x, f), f0, x0) < 1e-8


def test_conv2d_transpose_and_backprop_op_gradients():
    value, f = RNG.normal(size=(1, 3, 3, 2)), RNG.normal(size=(3, 3, 4, 2))
    transpose = lambda v, w: tf.nn.conv2d_transpose(v, w, [1, 6, 6, 4], [1, 2, 2, 1])  # noqa: E731
    assert _gradient_error(transpose, value, f) < 1e-8
    assert _gradient_error(lambda w, v: transpose(v, w), f, value) < 1e-8
    x, dy = RNG.normal(size=(1, 6, 6, 4)), RNG.normal(size=(1, 3, 3, 2))
    backprop_filter = lambda a, b: tf.nn.conv2d_backprop_filter(a, [3, 3, 4, 2], b, [1, 2, 2, 1], "SAME")  # noqa
    assert _gradient_error(backprop_filter, x, dy) < 1e-8
    assert _gradient_error(lambda b, a: backprop_filter(a, b), dy, x) < 1e-8


def test_conv2d_gradient_op_names():
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    w = tf.Variable(tf.ones([3, 3, 1, 2]), name="w")
    dx, dw = tf.gradients(tf.reduce_sum(tf.nn.conv2d(x, w, 1, "SAME")), [x, w])
    assert dx.op.name == "gradients/Conv2D_grad/Conv2DBackpropInput"
    assert dw.op.name == "gradients/Conv2D_grad/Conv2DBackpropFilter"
    assert dx.shape.as_list() == [None, 8, 8, 1] and dw.shape.as_list() == [3, 3, 1, 2]


# --- pooling -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("k,stride,padding,data_format", [(2, 2, "VALID", "NHWC"), (3, 2, "SAME", "NHWC"),
                                                          (3, 1, "SAME", "NCHW"), (2, 3, "VALID", "NCHW"),
                                                          (3, 2, "VALID", "NHWC")])
def test_pools_match_direct_loops(k, stride, padding, data_format):
    x = RNG.normal(size=(2, 7, 8, 3)).astype(np.float32)
    x_in = _nchw(x) if data_format == "NCHW" else x
    args = ([1, 1, k, k], [1, 1, stride, stride]) if data_format == "NCHW" else (k, stride)
    mx = tf.nn.max_pool(x_in, *args, padding=padding, data_format=data_format)
    av = tf.nn.avg_pool(x_in, *args, padding=padding, data_format=data_format)
    got_max, got_avg = _run([mx, av])
    if data_format == "NCHW":
        got_max, got_avg = (np.transpose(a, (0, 2, 3, 1)) for a in (got_max, got_avg))
    np.testing.assert_allclose(got_max, ref_pool(x, (k, k), (stride, stride), padding, np.max), rtol=1e-6)
    np.testing.assert_allclose(got_avg, ref_pool(x, (k, k), (stride, stride), padding, np.mean), rtol=1e-5)
    assert mx.shape.as_list() == list(x_in.shape[:1]) + list(got_max.shape[1:] if data_format == "NHWC" else
                                                             _nchw(got_max).shape[1:])


def test_avg_pool_same_padding_averages_only_valid_cells():
    x = np.arange(9, dtype=np.float64).reshape(1, 3, 3, 1)
    got = _run(tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME"))
    np.testing.assert_allclose(got[0, :, :, 0], [[(0 + 1 + 3 + 4) / 4, (2 + 5) / 2], [(6 + 7) / 2, 8]])


def test_max_pool_integers_and_negative_values():
    x = -np.arange(1, 17, dtype=np.int32).reshape(1, 4, 4, 1)
    got = _run(tf.nn.max_pool(x, 3, 2, "SAME"))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got[0, :, :, 0], [[-1, -3], [-9, -11]])


def test_max_pool_gradient_goes_to_the_first_maximum():
    x = tf.constant(np.ones((1, 4, 4, 1)))
    dx = tf.gradients(tf.reduce_sum(tf.nn.max_pool(x, 2, 2, "VALID")), x)[0]
    assert dx.op.type == "MaxPoolGrad" and dx.op.name == "gradients/MaxPool_grad/MaxPoolGrad"
    expected = np.zeros((4, 4))
    expected[::2, ::2] = 1
    np.testing.assert_array_equal(_run(dx)[0, :, :, 0], expected)
    overlapping = tf.gradients(tf.reduce_sum(tf.nn.max_pool(x, 3, 1, "SAME")), x)[0]
    counts = np.zeros((4, 4))  # each window's first cell, in row-major order
    for i, j in itertools.product(range(4), range(4)):
        counts[max(i - 1, 0), max(j - 1, 0)] += 1
    np.testing.assert_array_equal(_run(overlapping)[0, :, :, 0], counts)


@pytest.mark.parametrize("pool", [tf.nn.max_pool, tf.nn.avg_pool])
@pytest.mark.parametrize("k,stride,padding,data_format", [(2, 2, "VALID", "NHWC"), (3, 2, "SAME", "NCHW"),
                                                          (2, 1, "SAME", "NHWC")])
def test_pool_gradients_match_numeric_differences(pool, k, stride, padding, data_format):
    x0 = RNG.permutation(2 * 5 * 6 * 2).reshape(2, 5, 6, 2) / 10.0  # distinct values: no ties for the max
    build = lambda x: pool(x, k, stride, padding, data_format=data_format)  # noqa: E731
    assert _gradient_error(build, x0) < 1e-8


@pytest.mark.parametrize("pool,grad_type", [(tf.nn.max_pool, "MaxPoolGrad"), (tf.nn.avg_pool, "AvgPoolGrad")])
def test_second_order_pool_gradients(pool, grad_type):
    """The gradient ops' own gradients (MaxPoolGradGrad, AvgPool) checked numerically through grad_ys."""
    x_value, weights = RNG.permutation(36).reshape(1, 6, 6, 1) / 10.0, RNG.normal(size=(1, 6, 6, 1))

    def first_gradient(dy):
        x0 = tf.constant(x_value)
        y = pool(x0, 2, 2, "SAME")
        g = tf.gradients(y, x0, grad_ys=dy)[0]
        assert g.op.type == grad_type
        return g * weights
    assert _gradient_error(first_gradient, RNG.normal(size=(1, 3, 3, 1))) < 1e-8
    with tf.Graph().as_default():
        x = tf.constant(RNG.permutation(36).reshape(1, 6, 6, 1) / 10.0)
        g = tf.gradients(pool(x, 2, 2, "SAME"), x)[0]
        gg = tf.gradients(tf.reduce_sum(g * x), x)[0]
        assert gg.shape.as_list() == [1, 6, 6, 1]
        assert np.all(np.isfinite(_run(gg)))


def test_max_pool_grad_grad_picks_the_argmax_entry():
    x = tf.constant(np.array([[1.0, 5.0], [3.0, 5.0]]).reshape(1, 2, 2, 1))
    dy = tf.placeholder(tf.float64, [1, 1, 1, 1])
    g = tf.gradients(tf.nn.max_pool(x, 2, 2, "VALID"), x, grad_ys=dy)[0]
    ddy = tf.gradients(g, dy, grad_ys=tf.constant(np.arange(4.0).reshape(1, 2, 2, 1)))[0]
    assert [op.type for op in ddy.graph.get_operations() if op.type.startswith("MaxPoolGrad")] == \
        ["MaxPoolGrad", "MaxPoolGradGrad"]
    np.testing.assert_array_equal(_run(ddy, {dy: np.ones((1, 1, 1, 1))}).ravel(), [1.0])  # grad at the first 5


def test_pool_names_attrs_and_shapes():
    x = tf.placeholder(tf.float32, [None, 28, 28, 32])
    p = tf.nn.max_pool(x, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
    assert p.op.type == "MaxPool" and p.name == "MaxPool:0" and p.shape.as_list() == [None, 14, 14, 32]
    assert p.op.get_attr("ksize") == [1, 2, 2, 1] and p.op.get_attr("data_format") == "NHWC"
    assert tf.nn.max_pool2d(x, 3, 2, "VALID").name == "MaxPool2d:0"
    a = tf.nn.avg_pool(x, 3, 2, "VALID", name="pool1")
    assert a.op.type == "AvgPool" and a.name == "pool1:0" and a.shape.as_list() == [None, 13, 13, 32]
    assert tf.nn.avg_pool2d is tf.nn.avg_pool
    nchw = tf.nn.max_pool(tf.placeholder(tf.float32, [None, 3, 9, 9]), [1, 1, 3, 3], [1, 1, 2, 2], "SAME",
                          data_format="NCHW")
    assert nchw.shape.as_list() == [None, 3, 5, 5]
    assert tf.nn.max_pool(tf.placeholder(tf.float32), 2, 2, "SAME").shape.as_list() == [None] * 4


def test_pool_errors():
    x = tf.ones([1, 4, 4, 2])
    with pytest.raises(ValueError, match=r"Attr 'padding' of 'MaxPool' Op passed string 'FULL' not in: "
                                         r"\"SAME\", \"VALID\"\."):
        tf.nn.max_pool(x, 2, 2, "FULL")
    with pytest.raises(ValueError, match=r"Attr 'data_format' of 'AvgPool' Op passed string 'NCWH' not in: "
                                         r"\"NHWC\", \"NCHW\"\."):
        tf.nn.avg_pool(x, 2, 2, "SAME", data_format="NCWH")
    with pytest.raises(ValueError, match=r"ksize cannot be zero."):
        tf.nn.max_pool(x, [1, 0, 2, 1], 2, "SAME")
    with pytest.raises(ValueError, match=r"Shape must be rank 4 but is rank 2 for 'AvgPool_\d' \(op: 'AvgPool'\)"):
        tf.nn.avg_pool(tf.ones([4, 4]), 2, 2, "SAME")
    with pytest.raises(ValueError, match=r"Negative dimension size caused by subtracting 5 from 4 for 'MaxPool_\d'"):
        tf.nn.max_pool(x, 5, 1, "VALID")
    with pytest.raises(TypeError, match=r"Value passed to parameter 'T' has DataType int32 not in list of allowed "
                                        r"values: bfloat16, float16, float32, float64 \(op: 'AvgPool'\)"):
        tf.nn.avg_pool(tf.ones([1, 4, 4, 2], tf.int32), 2, 2, "SAME")
    batch = tf.nn.max_pool(x, [2, 2, 2, 1], [1, 2, 2, 1], "SAME")
    with pytest.raises(tf.errors.UnimplementedError, match="Pooling is not yet supported on the batch dimension."):
        _run(batch)


# --- LRN -------------------------------------------------------------------------------------------------------
def ref_lrn(x, radius, bias, alpha, beta):
    out = np.empty_like(x)
    for d in range(x.shape[-1]):
        window = x[..., max(d - radius, 0):d + radius + 1]
        out[..., d] = x[..., d] / (bias + alpha * np.sum(window ** 2, axis=-1)) ** beta
    return out


def test_lrn_values_and_gradient():
    x = RNG.normal(size=(2, 3, 3, 7)).astype(np.float32)
    y = tf.nn.local_response_normalization(x, depth_radius=2, bias=1.5, alpha=0.3, beta=0.75)
    assert y.op.type == "LRN" and y.name == "LRN:0" and tf.nn.lrn is tf.nn.local_response_normalization
    np.testing.assert_allclose(_run(y), ref_lrn(x.astype(np.float64), 2, 1.5, 0.3, 0.75), rtol=1e-5)
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [1, 2, 2, 6])
        out = tf.nn.lrn(p, 2, 1.0, 0.5, 0.75)
        with tf.Session():
            error = tf.test.compute_gradient_error(p, [1, 2, 2, 6], out, [1, 2, 2, 6],
                                                   x_init_value=RNG.normal(size=(1, 2, 2, 6)).astype(np.float32),
                                                   delta=1e-2)
        assert error < 2e-3
        assert tf.gradients(out, p)[0].op.type == "LRNGrad"


# --- kernels, devices, data types ----------------------------------------------------------------------------------
def test_kernels_exist_for_cpu_and_gpu():
    for op_type in ("Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad",
                    "MaxPoolGradGrad", "AvgPool", "AvgPoolGrad"):
        assert has_kernel(op_type, "CPU", tf.float32) and has_kernel(op_type, "GPU", tf.float32), op_type
    assert has_kernel("MaxPool", "CPU", tf.int32) and not has_kernel("MaxPool", "GPU", tf.int32)


def test_nchw_matches_nhwc_on_a_virtual_gpu():
    x, f = RNG.normal(size=(2, 6, 6, 3)).astype(np.float32), RNG.normal(size=(3, 3, 3, 4)).astype(np.float32)
    with tf.device("/gpu:0"):
        nhwc = tf.nn.max_pool(tf.nn.conv2d(x, f, 2, "SAME"), 2, 2, "SAME")
        nchw = tf.nn.max_pool(tf.nn.conv2d(_nchw(x), f, [1, 1, 2, 2], "SAME", data_format="NCHW"), [1, 1, 2, 2],
                              [1, 1, 2, 2], "SAME", data_format="NCHW")
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        a, b = sess.run([nhwc, nchw])
    np.testing.assert_allclose(_nchw(a), b, rtol=1e-5)


def test_float16_runs_and_rounds_once():
    x, f = RNG.normal(size=(1, 5, 5, 2)), RNG.normal(size=(3, 3, 2, 2))
    y = tf.nn.conv2d(tf.constant(x, tf.float16), tf.constant(f, tf.float16), 1, "SAME")
    got = _run(y)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, ref_conv2d(x.astype(np.float16).astype(np.float64),
                                               f.astype(np.float16).astype(np.float64)), rtol=1e-2, atol=1e-2)


def test_mnist_sized_conv_and_gradients_run():
    x = tf.constant(RNG.normal(size=(32, 28, 28, 1)).astype(np.float32))
    w = tf.Variable(tf.truncated_normal([5, 5, 1, 32], stddev=0.1, seed=1))
    y = tf.nn.relu(tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME"))
    dx, dw = tf.gradients(tf.reduce_mean(tf.square(y)), [x, w])
    y_v, dx_v, dw_v = _run([y, dx, dw])
    assert y_v.shape == (32, 28, 28, 32) and dx_v.shape == (32, 28, 28, 1) and dw_v.shape == (5, 5, 1, 32)
    assert np.all(np.isfinite(dx_v)) and np.any(dw_v != 0)


# --- models ------------------------------------------------------------------------------------------------------
def _lenet(images, classes=10):
    """conv5x5x6 SAME -> maxpool -> conv5x5x16 VALID -> maxpool -> fc 120 -> fc classes."""
    w1 = tf.Variable(tf.truncated_normal([5, 5, 1, 6], stddev=0.1, seed=1))
    h1 = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(images, w1, [1, 1, 1, 1], "SAME")), [1, 2, 2, 1], [1, 2, 2, 1],
                        "SAME")
    w2 = tf.Variable(tf.truncated_normal([5, 5, 6, 16], stddev=0.1, seed=2))
    h2 = tf.nn.avg_pool(tf.nn.relu(tf.nn.conv2d(h1, w2, [1, 1, 1, 1], "VALID")), 2, 2, "VALID")
    flat = tf.reshape(h2, [-1, 5 * 5 * 16])
    w3 = tf.Variable(tf.truncated_normal([400, 120], stddev=0.05, seed=3))
    w4 = tf.Variable(tf.truncated_normal([120, classes], stddev=0.05, seed=4))
    return h1, h2, tf.matmul(tf.nn.relu(tf.matmul(flat, w3)), w4)


def test_lenet_stack_static_shapes():
    images = tf.placeholder(tf.float32, [None, 28, 28, 1])
    h1, h2, logits = _lenet(images)
    assert h1.shape.as_list() == [None, 14, 14, 6]
    assert h2.shape.as_list() == [None, 5, 5, 16]
    assert logits.shape.as_list() == [None, 10]
    assert _run(logits, {images: np.zeros((3, 28, 28, 1))}).shape == (3, 10)


def test_tiny_convnet_loss_decreases_with_gradient_descent():
    images = tf.placeholder(tf.float32, [None, 28, 28, 1])
    targets = tf.placeholder(tf.float32, [None, 4])
    _, _, logits = _lenet(images, classes=4)
    loss = tf.reduce_mean(tf.square(logits - targets))
    step = tf.train.GradientDescentOptimizer(0.05).minimize(loss)
    feed = {images: RNG.normal(size=(8, 28, 28, 1)), targets: np.eye(4)[np.arange(8) % 4]}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([loss, step], feed)[0] for _ in range(15)]
    assert losses[-1] < losses[0] * 0.9 and all(math.isfinite(v) for v in losses)


def test_results_do_not_depend_on_the_batch_chunking(monkeypatch):
    """The kernels cut the batch into chunks of _PATCH_ELEMENTS patch-matrix elements; tiny chunks give the same."""
    from adplace.kernels import conv as conv_kernels

    x, f, dy = RNG.normal(size=(5, 6, 7, 2)), RNG.normal(size=(3, 3, 2, 3)), RNG.normal(size=(5, 3, 4, 3))
    fetches = [tf.nn.conv2d(x, f, 2, "SAME"), tf.nn.conv2d_backprop_input([5, 6, 7, 2], f, dy, [1, 2, 2, 1], "SAME"),
               tf.nn.conv2d_backprop_filter(x, [3, 3, 2, 3], dy, [1, 2, 2, 1], "SAME")]
    whole = _run(fetches)
    monkeypatch.setattr(conv_kernels, "_PATCH_ELEMENTS", 100)  # below one image: one image per chunk
    for got, expected in zip(_run(fetches), whole):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(whole[0], ref_conv2d(x, f, (2, 2)), rtol=1e-10)


def test_conv2d_transpose_of_int32_runs_on_the_cpu():
    x, f = np.arange(48, dtype=np.int32).reshape(2, 4, 2, 3), np.arange(54, dtype=np.int32).reshape(3, 3, 2, 3)
    y = tf.nn.conv2d_transpose(x, f, [2, 8, 4, 2], [1, 2, 2, 1])
    assert y.dtype == tf.int32 and has_kernel("Conv2DBackpropInput", "CPU", tf.int32)
    expected = tf.nn.conv2d_transpose(x.astype(np.float64), f.astype(np.float64), [2, 8, 4, 2], [1, 2, 2, 1])
    got, want = _run([y, expected])
    np.testing.assert_array_equal(got, want.astype(np.int32))


def test_conv2d_transpose_stacked_shape_keeps_a_static_batch():
    """tf.shape(x)[0] of an x whose batch size is known counts as a constant, as in TF's shape inference."""
    x = tf.ones([3, 10, 5, 1])
    y = tf.nn.conv2d_transpose(x, tf.ones([3, 3, 5, 1]), tf.stack([tf.shape(x)[0], 10, 5, 5]), [1, 1, 1, 1])
    assert y.shape.as_list() == [3, 10, 5, 5]


def ref_nd_pool(x, window, strides, padding, reduce, dilation=None):
    """Pooling over every spatial axis of a channels-last array, one axis at a time (a box window separates)."""
    dilation = dilation or [1] * len(window)
    for axis, (k, s, d) in enumerate(zip(window, strides, dilation), start=1):
        size, span = x.shape[axis], (k - 1) * d + 1
        out = -(-size // s) if padding == "SAME" else -(-(size - span + 1) // s)
        before = max(0, (out - 1) * s + span - size) // 2 if padding == "SAME" else 0
        taken = []
        for o in range(out):
            start = o * s - before
            taps = [start + t * d for t in range(k) if 0 <= start + t * d < size]
            taken.append(reduce(np.take(x, taps, axis=axis), axis=axis))
        x = np.stack(taken, axis=axis)
    return x


@pytest.mark.parametrize("pooling_type, reduce", [("MAX", np.max), ("AVG", np.mean)])
@pytest.mark.parametrize("shape, window, strides, dilation, padding", [
    ((2, 9, 2), [3], [2], None, "SAME"),
    ((2, 9, 10, 11, 2), [2, 3, 2], [2, 1, 2], None, "SAME"),
    ((2, 9, 10, 2), [2, 3], [1, 1], [2, 3], "VALID"),
    ((1, 7, 6, 5, 1), [2, 1, 2], [1, 1, 1], [2, 1, 3], "VALID"),
])
def test_nn_pool_matches_direct_loops(pooling_type, reduce, shape, window, strides, dilation, padding):
    x = -np.arange(np.prod(shape), dtype=np.float64).reshape(shape) - 1
    y = tf.nn.pool(x, window, pooling_type, padding, dilation_rate=dilation, strides=strides)
    expected = ref_nd_pool(x, window, strides, padding, reduce, dilation)
    assert y.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(_run(y), expected, rtol=1e-12)
    err = _gradient_error(lambda t: tf.nn.pool(t, window, pooling_type, padding, dilation_rate=dilation,
                                               strides=strides), RNG.permutation(x.size).reshape(shape) / 4.0)
    assert err < 1e-6  # distinct inputs, spaced wider than the checker's step: no max ties


def test_nn_pool_channels_first_and_errors():
    x = RNG.normal(size=(2, 3, 8))
    y = tf.nn.pool(x, [2], "MAX", "VALID", strides=[2], data_format="NCW")
    np.testing.assert_allclose(_run(y), np.transpose(ref_nd_pool(np.transpose(x, (0, 2, 1)), [2], [2], "VALID",
                                                                   np.max), (0, 2, 1)))
    with pytest.raises(ValueError, match=r"`len\(window_shape\)` must be 1, 2, or 3"):
        tf.nn.pool(tf.ones([1, 2, 2, 2, 2, 1]), [1, 1, 1, 1], "MAX", "VALID")
    with pytest.raises(ValueError, match="pooling with 'SAME' padding is not implemented for `dilation_rate` > 1"):
        tf.nn.pool(x, [2], "MAX", "SAME", dilation_rate=[2])
    with pytest.raises(ValueError, match="`strides > 1` not supported in conjunction with `dilation_rate > 1`"):
        tf.nn.pool(x, [2], "MAX", "VALID", dilation_rate=[2], strides=[2])
    with pytest.raises(ValueError, match=r"`strides` > `window_shape` not supported"):
        tf.nn.pool(x, [2], "AVG", "VALID", strides=[3])
    with pytest.raises(ValueError, match="Pooling type must be 'MAX' or 'AVG'. Received: pooling_type=MIN"):
        tf.nn.pool(x, [2], "MIN", "VALID")
