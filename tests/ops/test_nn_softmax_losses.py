"""Tests for the activations, softmax and loss ops of adplace.ops.nn_ops / nn_impl: values against NumPy (extreme
logits included), gradients against central differences, TF's op names and types, and TF's errors."""
import numpy as np
import pytest

import adplace as tf
from adplace.ops.op_builder import apply_op

RNG = np.random.default_rng(0)
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def np_log_softmax(x, axis=-1):
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def grad_error(x0, build):
    """The gradient checker's max error for y = build(x) at x0 (float64)."""
    x = tf.placeholder(tf.float64, x0.shape)
    y = build(x)
    with tf.Session():
        return tf.test.compute_gradient_error(x, list(x0.shape), y, y.shape.as_list(), x_init_value=x0)


# --- activations ----------------------------------------------------------------------------------------------------
ACTIVATIONS = {  # name -> (tf function, NumPy reference, op type)
    "relu6": (tf.nn.relu6, lambda x: np.minimum(np.maximum(x, 0), 6), "Relu6"),
    "elu": (tf.nn.elu, lambda x: np.where(x < 0, np.expm1(np.minimum(x, 0)), x), "Elu"),
    "selu": (tf.nn.selu, lambda x: SELU_SCALE * np.where(x < 0, SELU_ALPHA * np.expm1(np.minimum(x, 0)), x), "Selu"),
    "softplus": (tf.nn.softplus, lambda x: np.logaddexp(0, x), "Softplus"),
    "softsign": (tf.nn.softsign, lambda x: x / (1 + np.abs(x)), "Softsign"),
    "leaky_relu": (tf.nn.leaky_relu, lambda x: np.where(x > 0, x, 0.2 * x), "LeakyRelu"),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_names_and_gradients(name):
    fn, reference, op_type = ACTIVATIONS[name]
    x0 = np.array([[-800.0, -7.0, -1.5, -0.3], [0.4, 2.0, 6.5, 900.0]], np.float32)
    y = fn(tf.constant(x0))
    assert y.op.type == op_type and y.op.name == op_type and y.dtype == tf.float32
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(run(y), reference(x0.astype(np.float64)).astype(np.float32), rtol=1e-6)
    x1 = np.array([[-2.1, -0.7, 0.35], [1.2, 3.3, 7.5]])  # away from the kinks at 0 and 6
    assert grad_error(x1, fn) < 1e-6
    dy = tf.gradients(fn(tf.constant(x1)), tf.get_default_graph().get_operations()[-2].outputs[0])[0]
    assert dy.op.type == op_type + "Grad"


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_second_derivatives(name):
    fn = ACTIVATIONS[name][0]
    x1 = np.array([[-2.1, -0.7, 0.35], [1.2, 3.3, 7.5]])
    assert grad_error(x1, lambda x: tf.gradients(fn(x) * tf.sin(x), x)[0]) < 1e-5


def test_leaky_relu_alpha_attr_and_integer_input():
    y = tf.nn.leaky_relu(tf.constant([-2.0, 3.0]), alpha=0.1)
    assert y.op.get_attr("alpha") == pytest.approx(0.1)
    np.testing.assert_allclose(run(y), [-0.2, 3.0])
    z = tf.nn.leaky_relu(tf.constant([-4, 2]))
    assert z.dtype == tf.float32 and z.op.name == "LeakyRelu_1"
    np.testing.assert_allclose(run(z), [-0.8, 2.0])


def test_relu6_on_integers_and_dtype_errors():
    np.testing.assert_array_equal(run(tf.nn.relu6(tf.constant([-3, 4, 9]))), [0, 4, 6])
    with pytest.raises(TypeError, match=r"Value passed to parameter 'features' has DataType int32 not in list of "
                                        r"allowed values: bfloat16, float16, float32, float64 \(op: 'Elu'\)"):
        tf.nn.elu(tf.constant([1, 2]))


# --- softmax, log_softmax -------------------------------------------------------------------------------------------
def test_softmax_and_log_softmax_are_stable_for_extreme_logits():
    x0 = np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0], [-1e4, -1e4 + 1, -1e4 + 2]], np.float32)
    s, ls = tf.nn.softmax(tf.constant(x0)), tf.nn.log_softmax(tf.constant(x0))
    assert (s.op.type, s.name, ls.op.type, ls.name) == ("Softmax", "Softmax:0", "LogSoftmax", "LogSoftmax:0")
    vs, vls = run([s, ls])
    reference = np_log_softmax(x0.astype(np.float64))
    np.testing.assert_allclose(vls, reference, rtol=1e-6)
    np.testing.assert_allclose(vs, np.exp(reference), rtol=1e-6, atol=1e-30)
    assert np.all(np.isfinite(vls)) and np.allclose(vs.sum(axis=1), 1)


def test_softmax_over_another_axis_transposes_as_tf():
    x0 = RNG.normal(size=(2, 3, 4))
    y = tf.nn.softmax(tf.constant(x0), axis=1, name="probs")
    assert y.op.type == "Transpose" and y.name == "probs:0" and y.shape.as_list() == [2, 3, 4]
    np.testing.assert_allclose(run(y), np.exp(np_log_softmax(x0, axis=1)), rtol=1e-12)
    z = tf.nn.log_softmax(tf.constant(x0), dim=0)
    assert z.name == "transpose_2:0"  # the first call made "transpose", this one swaps in "transpose_1"
    np.testing.assert_allclose(run(z), np_log_softmax(x0, axis=0), rtol=1e-12)
    assert tf.nn.softmax(tf.constant(x0), axis=2).op.type == "Softmax"


def test_softmax_errors():
    x = tf.constant(np.ones((2, 3), np.float32))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Dimension \(2\) must be in the range \[-2, 2\) where 2 "
                                                             r"is the number of dimensions in the input."):
        tf.nn.softmax(x, axis=2)
    with pytest.raises(ValueError, match="Cannot specify both 'dim' and 'axis'"):
        tf.nn.softmax(x, axis=0, dim=0)
    with pytest.raises(ValueError, match=r"Shape must be at least rank 1 but is rank 0 for 'Softmax' \(op: "
                                         r"'Softmax'\) with input shapes: \[\]."):
        tf.nn.softmax(3.0)
    with pytest.raises(TypeError, match="DataType int32 not in list of allowed values"):
        tf.nn.softmax([1, 2])


def test_softmax_gradients():
    x0 = RNG.normal(size=(3, 4))
    w = tf.constant(RNG.normal(size=(3, 4)))
    assert grad_error(x0, lambda x: tf.nn.softmax(x) * w) < 1e-7
    assert grad_error(x0, lambda x: tf.nn.log_softmax(x) * w) < 1e-7
    assert grad_error(x0, lambda x: tf.nn.softmax(x, axis=0) * w) < 1e-7


# --- softmax cross entropy ------------------------------------------------------------------------------------------
LOGITS = np.array([[4.0, 2.0, 1.0], [0.0, 5.0, 1.0], [1e4, -1e4, 0.0], [-500.0, -500.0, -500.0]], np.float32)
SOFT_LABELS = np.array([[1.0, 0.0, 0.0], [0.0, 0.8, 0.2], [0.1, 0.6, 0.3], [0.2, 0.3, 0.5]], np.float32)


def test_softmax_cross_entropy_v2_values_and_names():
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=SOFT_LABELS, logits=LOGITS)
    op = tf.get_default_graph().get_operation_by_name("softmax_cross_entropy_with_logits")
    assert op.type == "SoftmaxCrossEntropyWithLogits" and len(op.outputs) == 2
    assert loss.name == "softmax_cross_entropy_with_logits/Reshape_2:0" and loss.shape.as_list() == [4]
    expected = -(SOFT_LABELS * np_log_softmax(LOGITS.astype(np.float64))).sum(axis=1)
    value = run(loss)
    np.testing.assert_allclose(value, expected, rtol=1e-6)
    np.testing.assert_allclose(value[:2], [0.16984604, 0.82474494], rtol=1e-6)  # TF's documented example


def test_softmax_cross_entropy_v1_stops_the_labels_gradient():
    labels, logits = tf.constant(SOFT_LABELS), tf.constant(LOGITS)
    v1 = tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    v2 = tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
    assert v1.name == "softmax_cross_entropy_with_logits_sg/Reshape_2:0"
    assert tf.get_default_graph().get_operation_by_name(
        "softmax_cross_entropy_with_logits_sg/labels_stop_gradient").type == "StopGradient"
    assert tf.gradients(v1, labels)[0] is None
    g_labels = tf.gradients(v2, labels)[0]
    g1, g2 = tf.gradients(v1, logits)[0], tf.gradients(v2, logits)[0]
    vg_labels, vg1, vg2 = run([g_labels, g1, g2])
    np.testing.assert_allclose(vg_labels, -np_log_softmax(LOGITS.astype(np.float64)), rtol=1e-5)
    expected = np.exp(np_log_softmax(LOGITS.astype(np.float64))) - SOFT_LABELS
    np.testing.assert_allclose(vg1, expected, atol=1e-6)
    np.testing.assert_allclose(vg2, expected, atol=1e-6)


def test_softmax_cross_entropy_argument_rules():
    with pytest.raises(ValueError, match=r"Only call `softmax_cross_entropy_with_logits` with named arguments "
                                         r"\(labels=..., logits=..., ...\)"):
        tf.nn.softmax_cross_entropy_with_logits(SOFT_LABELS, LOGITS)
    with pytest.raises(ValueError, match="Both labels and logits must be provided."):
        tf.nn.softmax_cross_entropy_with_logits(labels=SOFT_LABELS)
    with pytest.raises(ValueError, match="Cannot specify both 'dim' and 'axis'"):  # TF1's dim=-1 default
        tf.nn.softmax_cross_entropy_with_logits(labels=SOFT_LABELS, logits=LOGITS, axis=0)
    with pytest.raises(ValueError, match=r"Dimensions must be equal, but are 3 and 4 for "
                                         r"'softmax_cross_entropy_with_logits(_\d+)?' \(op: "
                                         r"'SoftmaxCrossEntropyWithLogits'\) with input shapes: \[2,3\], \[2,4\]."):
        tf.nn.softmax_cross_entropy_with_logits_v2(labels=np.ones((2, 4)), logits=np.ones((2, 3)))


def test_softmax_cross_entropy_over_axis_and_higher_rank():
    x0, p0 = RNG.normal(size=(3, 2, 4)), RNG.dirichlet(np.ones(3), size=(2, 4)).transpose(2, 0, 1)
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=p0, logits=x0, axis=0)
    assert loss.shape.as_list() == [2, 4]
    np.testing.assert_allclose(run(loss), -(p0 * np_log_softmax(x0, axis=0)).sum(axis=0), rtol=1e-12)
    loss_dim = tf.nn.softmax_cross_entropy_with_logits(labels=p0, logits=x0, dim=0)
    np.testing.assert_allclose(run(loss_dim), run(loss), rtol=1e-12)
    logits = tf.placeholder(tf.float64, [None, 4, 3])
    unknown = tf.nn.softmax_cross_entropy_with_logits_v2(labels=p0.transpose(1, 2, 0), logits=logits)
    assert unknown.shape.as_list() == [None, 4]
    np.testing.assert_allclose(run(unknown, {logits: x0.transpose(1, 2, 0)}), run(loss), rtol=1e-12)


def test_softmax_cross_entropy_gradients_and_float16():
    p0 = RNG.dirichlet(np.ones(4), size=3)
    x0 = RNG.normal(size=(3, 4))
    assert grad_error(x0, lambda x: tf.nn.softmax_cross_entropy_with_logits_v2(labels=p0, logits=x)) < 1e-7
    assert grad_error(p0, lambda p: tf.nn.softmax_cross_entropy_with_logits_v2(labels=p, logits=x0)) < 1e-7
    # second order: the gradient of the logits' gradient goes through the op's backprop output
    assert grad_error(x0, lambda x: tf.gradients(tf.nn.softmax_cross_entropy_with_logits_v2(
        labels=p0, logits=x), x)[0] * tf.constant(p0)) < 1e-6
    half = tf.nn.softmax_cross_entropy_with_logits_v2(labels=p0.astype(np.float16), logits=x0.astype(np.float16))
    assert half.dtype == tf.float16 and half.op.type == "Cast"
    np.testing.assert_allclose(run(half), -(p0 * np_log_softmax(x0)).sum(1), rtol=2e-3)


def test_softmax_cross_entropy_runtime_shape_error():
    a, b = tf.placeholder(tf.float32, [None, None]), tf.placeholder(tf.float32, [None, None])
    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=b, logits=a)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"logits and labels must be broadcastable: "
                                                             r"logits_size=\[2,3\] labels_size=\[2,4\]"):
        run(loss, {a: np.ones((2, 3)), b: np.ones((2, 4))})


# --- sparse softmax cross entropy -----------------------------------------------------------------------------------
def test_sparse_softmax_cross_entropy_values_names_and_gradient():
    labels = np.array([0, 1, 1, 2])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=LOGITS)
    assert loss.name == "SparseSoftmaxCrossEntropyWithLogits/SparseSoftmaxCrossEntropyWithLogits:0"
    assert loss.op.type == "SparseSoftmaxCrossEntropyWithLogits" and loss.op.get_attr("Tlabels") == tf.int64
    expected = -np_log_softmax(LOGITS.astype(np.float64))[np.arange(4), labels]
    np.testing.assert_allclose(run(loss), expected, rtol=1e-5)
    named = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels.astype(np.int32), logits=LOGITS, name="xent")
    assert named.name == "xent/xent:0"
    x0 = RNG.normal(size=(4, 3))
    assert grad_error(x0, lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x)) < 1e-7


def test_sparse_softmax_cross_entropy_higher_rank_and_unknown_batch():
    x0, labels = RNG.normal(size=(2, 3, 5)), RNG.integers(0, 5, size=(2, 3))
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x0)
    assert loss.shape.as_list() == [2, 3]
    expected = -np.take_along_axis(np_log_softmax(x0), labels[..., None], -1)[..., 0]
    np.testing.assert_allclose(run(loss), expected, rtol=1e-12)
    logits, ids = tf.placeholder(tf.float64, [None, 3, 5]), tf.placeholder(tf.int32, [None, 3])
    dynamic = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits)
    assert dynamic.shape.as_list() == [None, 3]
    np.testing.assert_allclose(run(dynamic, {logits: x0, ids: labels}), expected, rtol=1e-12)


def test_sparse_softmax_cross_entropy_errors():
    logits = np.zeros((3, 3), np.float32)
    with pytest.raises(ValueError, match=r"Logits cannot be scalars - received shape \(\)."):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=1, logits=2.0)
    with pytest.raises(ValueError, match=r"Rank mismatch: Rank of labels \(received 2\) should equal rank of logits "
                                         r"minus 1 \(received 2\)."):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[[1, 2, 0]], logits=logits)
    with pytest.raises(ValueError, match=r"Shape mismatch: The shape of labels \(received \(2,\)\) should equal the "
                                         r"shape of logits except for the last dimension \(received \(3, 3\)\)."):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1, 2], logits=logits)
    with pytest.raises(TypeError, match=r"parameter 'labels' has DataType float32 not in list of allowed values: "
                                        r"int32, int64"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[1.0, 2.0, 0.0], logits=logits)
    ids = tf.placeholder(tf.int32, [3])
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=ids, logits=logits)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Received a label value of 5 which is outside the "
                                                             r"valid range of \[0, 3\).  Label values: 0 5 1"):
        run(loss, {ids: [0, 5, 1]})


def test_sparse_softmax_cross_entropy_has_no_second_derivative():
    x = tf.constant(np.zeros((2, 3)))
    g = tf.gradients(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 1], logits=x), x)[0]
    with pytest.raises(LookupError, match="Gradient explicitly disabled"):
        tf.gradients(g, x)


# --- l2_loss, in_top_k ----------------------------------------------------------------------------------------------
def test_l2_loss():
    x0 = RNG.normal(size=(3, 4)).astype(np.float32)
    loss = tf.nn.l2_loss(tf.constant(x0))
    assert loss.op.type == "L2Loss" and loss.name == "L2Loss:0" and loss.shape.as_list() == []
    np.testing.assert_allclose(run(loss), (x0.astype(np.float64) ** 2).sum() / 2, rtol=1e-6)
    assert grad_error(x0.astype(np.float64), tf.nn.l2_loss) < 1e-7


def test_in_top_k():
    predictions = np.array([[0.1, 0.5, 0.4, 0.0], [0.3, 0.3, 0.3, 0.1], [np.nan, 1.0, 0.0, 0.0],
                            [0.2, 0.1, 0.7, 0.0]], np.float32)
    top1 = tf.nn.in_top_k(predictions, [1, 2, 1, 5], 1)
    assert top1.op.type == "InTopKV2" and top1.op.name == "in_top_k/InTopKV2" and top1.dtype == tf.bool
    np.testing.assert_array_equal(run(top1), [True, True, True, False])  # ties count, out-of-range targets don't
    np.testing.assert_array_equal(run(tf.nn.in_top_k(predictions, [2, 3, 0, 0], 2)), [True, False, False, True])
    k = tf.placeholder(tf.int64, [])
    top_k = tf.nn.in_top_k(predictions, np.array([0, 3, 2, 1], np.int64), k)
    np.testing.assert_array_equal(run(top_k, {k: 3}), [True, False, True, True])
    with pytest.raises(ValueError, match=r"Shape must be rank 1 but is rank 2 for 'in_top_k_\d/InTopKV2'"):
        tf.nn.in_top_k(predictions, [[1, 2, 1, 5]], 1)


# --- logistic losses (nn_impl) --------------------------------------------------------------------------------------
def np_logistic(labels, logits):
    return np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))


def test_sigmoid_cross_entropy_is_stable_and_named_logistic_loss():
    logits = np.array([[-1000.0, -3.0, 0.0], [2.0, 50.0, 1000.0]], np.float32)
    labels = np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 1.0]], np.float32)
    loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
    assert loss.name == "logistic_loss:0" and loss.op.type == "Add"
    value = run(loss)
    assert np.all(np.isfinite(value))
    np.testing.assert_allclose(value, np_logistic(labels.astype(np.float64), logits.astype(np.float64)), rtol=1e-6)
    x0 = RNG.normal(size=(2, 3))
    assert grad_error(x0, lambda x: tf.nn.sigmoid_cross_entropy_with_logits(labels=labels.astype(np.float64),
                                                                            logits=x)) < 1e-7
    with pytest.raises(ValueError, match=r"logits and labels must have the same shape \(\(2, 3\) vs \(3,\)\)"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels=[1.0, 0.0, 1.0], logits=logits)
    with pytest.raises(ValueError, match="Only call `sigmoid_cross_entropy_with_logits` with named arguments"):
        tf.nn.sigmoid_cross_entropy_with_logits(labels, logits)


def test_weighted_cross_entropy_with_logits():
    logits, labels = RNG.normal(size=(3, 4)) * 20, RNG.uniform(size=(3, 4))
    loss = tf.nn.weighted_cross_entropy_with_logits(labels=labels, logits=logits, pos_weight=3.0)
    assert loss.name == "logistic_loss:0"
    q = 1 + 2.0 * labels
    expected = (1 - labels) * logits + q * (np.log1p(np.exp(-np.abs(logits))) + np.maximum(-logits, 0))
    np.testing.assert_allclose(run(loss), expected, rtol=1e-12)
    unweighted = tf.nn.weighted_cross_entropy_with_logits(targets=labels, logits=logits, pos_weight=1.0)
    np.testing.assert_allclose(run(unweighted), np_logistic(labels, logits), rtol=1e-12)


def test_log_poisson_loss():
    targets, log_input = np.array([0.0, 0.5, 3.0, 10.0]), np.array([0.1, -1.0, 1.0, 2.0])
    base = np.exp(log_input) - log_input * targets
    np.testing.assert_allclose(run(tf.nn.log_poisson_loss(targets, log_input)), base)
    stirling = np.where(targets > 1, targets * np.log(np.maximum(targets, 1)) - targets
                        + 0.5 * np.log(2 * np.pi * np.maximum(targets, 1)), 0)
    np.testing.assert_allclose(run(tf.nn.log_poisson_loss(targets, log_input, compute_full_loss=True)),
                               base + stirling)


# --- l2_normalize, xw_plus_b ----------------------------------------------------------------------------------------
def test_l2_normalize():
    x0 = RNG.normal(size=(3, 4))
    y = tf.nn.l2_normalize(tf.constant(x0), axis=1)
    assert y.name == "l2_normalize:0"
    np.testing.assert_allclose(run(y), x0 / np.linalg.norm(x0, axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(run(tf.nn.l2_normalize(tf.constant(x0), dim=0)),
                               x0 / np.linalg.norm(x0, axis=0, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(run(tf.nn.l2_normalize(tf.zeros([2]))), [0.0, 0.0])  # epsilon: no 0/0
    assert grad_error(x0, lambda x: tf.nn.l2_normalize(x, 1)) < 1e-6


def test_xw_plus_b():
    x0, w0, b0 = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4)), RNG.normal(size=4)
    y = tf.nn.xw_plus_b(x0, w0, b0)
    assert y.op.type == "BiasAdd" and y.name == "xw_plus_b:0"
    assert tf.get_default_graph().get_operation_by_name("xw_plus_b/MatMul").type == "MatMul"
    np.testing.assert_allclose(run(y), x0 @ w0 + b0, rtol=1e-12)
    assert tf.nn.xw_plus_b(x0, w0, b0, name="dense").name == "dense:0"


def test_softmax_over_an_axis_known_only_when_run():
    x0 = RNG.normal(size=(2, 3, 4))
    axis = tf.placeholder_with_default(1, shape=[])
    y = tf.nn.softmax(tf.constant(x0), axis=axis)
    z = tf.nn.log_softmax(tf.constant(x0), axis=axis)
    assert y.shape.as_list() == [2, 3, 4] and z.shape.as_list() == [2, 3, 4]
    for value in (0, 1, 2, -1, -3):
        got_y, got_z = run([y, z], {axis: value})
        np.testing.assert_allclose(got_z, np_log_softmax(x0, axis=value), rtol=1e-12)
        np.testing.assert_allclose(got_y, np.exp(np_log_softmax(x0, axis=value)), rtol=1e-12)
    with pytest.raises(tf.errors.InvalidArgumentError):
        run(y, {axis: 3})


def test_softmax_cross_entropy_float64_keeps_the_tail_of_a_confident_row():
    """p = 1 - tail rounds to 1 in float64; the gradient of the confident class still carries -tail."""
    tail = np.exp(-37.42994775023705)
    logits = tf.constant([[37.42994775023705, 0.0], [3.0, 0.0]], tf.float64)
    labels = tf.constant([[1.0, 0.0], [0.5, 0.5]], tf.float64)
    grad = tf.gradients(tf.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits), logits)[0]
    got = run(grad)
    np.testing.assert_allclose(got[0], [-tail, tail], rtol=1e-14, atol=0)
    p = 1 / (1 + np.exp(-3.0))
    np.testing.assert_allclose(got[1], [p - 0.5, 0.5 - p], rtol=1e-14)
    one_class = tf.constant([[0.0]], tf.float64)
    zero = run(tf.gradients(tf.nn.softmax_cross_entropy_with_logits_v2(labels=[[1.0]], logits=one_class),
                            one_class)[0])
    assert zero[0, 0] == 0 and not np.signbit(zero[0, 0])


def test_softmax_cross_entropy_kernel_needs_a_class():
    """The op itself (TF's gen_nn_ops.softmax_cross_entropy_with_logits) rejects rows of no classes."""
    logits = tf.placeholder(tf.float32, [None, None])
    loss = apply_op("SoftmaxCrossEntropyWithLogits", [logits, logits], {"T": tf.float32}, name="xent").outputs[0]
    for batch in (0, 1):
        with pytest.raises(tf.errors.InvalidArgumentError, match="Must have at least one class, but got 0 classes"):
            run(loss, {logits: np.zeros((batch, 0), np.float32)})
