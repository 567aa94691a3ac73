"""Tests for adplace/ops/losses_impl.py (tf.losses): values against NumPy for every loss and reduction, weights
broadcasting and its errors, the LOSSES collection, op names, dtypes and gradients."""
import numpy as np
import pytest

import adplace as tf

R = tf.losses.Reduction
LABELS = np.array([[1.0, 0.0, 2.0], [0.5, -1.0, 3.0]], np.float32)
PREDS = np.array([[1.5, 0.0, 0.0], [0.5, 1.0, 2.5]], np.float32)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict)


def reduce_np(losses, weights, reduction):
    """NumPy reference of compute_weighted_loss."""
    weights = np.broadcast_to(np.asarray(weights, np.float64), losses.shape)
    weighted = losses * weights
    if reduction == R.NONE:
        return weighted
    total = weighted.sum()
    denominator = {R.SUM: 1.0, R.MEAN: weights.sum(), R.SUM_OVER_BATCH_SIZE: losses.size,
                   R.SUM_BY_NONZERO_WEIGHTS: np.count_nonzero(weights)}[reduction]
    return 0.0 if denominator == 0 else total / denominator


WEIGHTS = [1.0, 2.5, np.array([[0.0], [2.0]], np.float32), np.array([[1.0, 0.0, 2.0]], np.float32),
           np.array([[0.0, 1.0, 0.0], [3.0, 0.0, 1.0]], np.float32), 0.0]


@pytest.mark.parametrize("reduction", [R.NONE, R.SUM, R.MEAN, R.SUM_OVER_BATCH_SIZE, R.SUM_BY_NONZERO_WEIGHTS])
@pytest.mark.parametrize("weights", WEIGHTS, ids=range(len(WEIGHTS)))
def test_compute_weighted_loss_reductions(reduction, weights):
    losses = np.abs(LABELS - PREDS)
    loss = tf.losses.compute_weighted_loss(tf.constant(losses), weights, reduction=reduction)
    np.testing.assert_allclose(run(loss), reduce_np(losses, weights, reduction), rtol=1e-6)
    assert loss.shape.as_list() == ([2, 3] if reduction == R.NONE else [])


def test_reduction_keys_and_default():
    assert R.SUM_OVER_NONZERO_WEIGHTS == R.SUM_BY_NONZERO_WEIGHTS == "weighted_sum_by_nonzero_weights"
    assert set(R.all()) == {"none", "weighted_sum", "weighted_mean", "weighted_sum_over_batch_size",
                            "weighted_sum_by_nonzero_weights"}
    with pytest.raises(ValueError, match="Invalid Reduction Key mean"):
        tf.losses.compute_weighted_loss([1.0], reduction="mean")


def np_huber(err, delta):
    a = np.abs(err)
    return np.where(a <= delta, 0.5 * err ** 2, 0.5 * delta ** 2 + delta * (a - delta))


@pytest.mark.parametrize("fn, scope, reference", [
    (tf.losses.absolute_difference, "absolute_difference", lambda y, p: np.abs(p - y)),
    (tf.losses.mean_squared_error, "mean_squared_error", lambda y, p: (p - y) ** 2),
    (tf.losses.huber_loss, "huber_loss", lambda y, p: np_huber(p - y, 1.0)),
    (lambda labels, predictions, **kw: tf.losses.huber_loss(labels, predictions, delta=0.3, **kw), "huber_loss",
     lambda y, p: np_huber(p - y, 0.3)),
    (tf.losses.hinge_loss, "hinge_loss", lambda y, p: np.maximum(0.0, 1 - (2 * (y > 0.7) - 1) * p)),
])
@pytest.mark.parametrize("weights", WEIGHTS[:5], ids=range(5))
def test_elementwise_losses_match_numpy(fn, scope, reference, weights):
    labels = (LABELS > 0.7).astype(np.float32) if scope == "hinge_loss" else LABELS
    loss = fn(tf.constant(labels), tf.constant(PREDS), weights=weights)
    assert loss.op.name == f"{scope}/value"
    assert loss.dtype == tf.float32
    np.testing.assert_allclose(run(loss), reduce_np(reference(LABELS, PREDS), weights, R.SUM_BY_NONZERO_WEIGHTS),
                               rtol=1e-5)


def test_log_loss_matches_numpy():
    y = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    p = np.array([[0.9, 0.2], [0.4, 0.0]], np.float32)
    eps = 1e-7
    expected = -y * np.log(p + eps) - (1 - y) * np.log(1 - p + eps)
    loss = tf.losses.log_loss(y, p, weights=[[1.0], [0.5]], epsilon=eps)
    np.testing.assert_allclose(run(loss), reduce_np(expected, [[1.0], [0.5]], R.SUM_BY_NONZERO_WEIGHTS), rtol=1e-5)


def test_cosine_distance_axis_and_dim():
    y = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], np.float32)
    p = np.array([[0.0, 1.0], [0.6, 0.8], [0.6, 0.8]], np.float32)
    expected = (1 - (y * p).sum(axis=1, keepdims=True)).mean()
    np.testing.assert_allclose(run(tf.losses.cosine_distance(y, p, axis=1)), expected, rtol=1e-6)
    np.testing.assert_allclose(run(tf.losses.cosine_distance(y, p, dim=1)), expected, rtol=1e-6)
    with pytest.raises(ValueError, match="You must specify 'axis'."):
        tf.losses.cosine_distance(y, p)
    with pytest.raises(ValueError, match="Cannot specify both 'axis' and 'dim'"):
        tf.losses.cosine_distance(y, p, axis=1, dim=1)


def test_mean_pairwise_squared_error_matches_pairs():
    y = np.array([[1.0, 2.0, 4.0], [0.0, 0.0, 1.0]], np.float32)
    p = np.array([[1.0, 3.0, 2.0], [1.0, 0.0, 0.0]], np.float32)

    def pairwise(row_y, row_p):
        d = row_p - row_y
        pairs = [(d[i] - d[j]) ** 2 for i in range(3) for j in range(i + 1, 3)]
        return np.mean(pairs)

    per_row = np.array([pairwise(y[0], p[0]), pairwise(y[1], p[1])])
    loss = tf.losses.mean_pairwise_squared_error(y, p, weights=[[2.0], [1.0]])
    assert loss.op.name == "mean_pairwise_squared_error/value_2"  # as TF: both div_no_nan ops are "value" too
    np.testing.assert_allclose(run(loss), 2 * per_row[0] + per_row[1], rtol=1e-5)  # TF1 sums the weighted rows
    zero_weights = tf.losses.mean_pairwise_squared_error(y, p, weights=0.0)
    assert run(zero_weights) == 0.0
    with pytest.raises(TypeError, match="reduction"):
        tf.losses.mean_pairwise_squared_error(y, p, reduction=tf.losses.Reduction.SUM)


def test_weights_that_do_not_broadcast_fail_when_run():
    """With shapes known only when run, an Assert checks the weights before they are applied."""
    values = np.arange(24, dtype=np.float32).reshape(3, 2, 4)
    weights = tf.placeholder(tf.float32)
    loss = tf.losses.compute_weighted_loss(values, weights=weights)
    for bad in (np.ones((3,)), np.ones((3, 2)), np.ones((2, 2, 2, 2)), np.ones((3, 2, 4, 1))):
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"weights can not be broadcast to values\."):
            run(loss, {weights: bad})
    for good in (np.float32(2.0), np.ones((3, 1, 4)), np.ones((1, 2, 1))):
        np.testing.assert_allclose(run(loss, {weights: good}), np.mean(values * good), rtol=1e-6)


def np_softmax_xent(labels, logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return -(labels * log_softmax).sum(axis=-1)


LOGITS = np.array([[2.0, 1.0, -1.0], [0.5, 0.5, 3.0], [-2.0, 4.0, 0.0]], np.float32)
ONEHOT = np.eye(3, dtype=np.float32)[[0, 2, 2]]


@pytest.mark.parametrize("smoothing", [0, 0.2])
def test_softmax_cross_entropy_with_label_smoothing(smoothing):
    smoothed = ONEHOT * (1 - smoothing) + smoothing / 3
    weights = np.array([1.0, 0.0, 2.0], np.float32)
    loss = tf.losses.softmax_cross_entropy(ONEHOT, LOGITS, weights=weights, label_smoothing=smoothing)
    assert loss.op.name == "softmax_cross_entropy_loss/value"
    np.testing.assert_allclose(run(loss), reduce_np(np_softmax_xent(smoothed, LOGITS), weights,
                                                    R.SUM_BY_NONZERO_WEIGHTS), rtol=1e-5)
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("softmax_cross_entropy_loss/labels_stop_gradient").type == "StopGradient"


@pytest.mark.parametrize("smoothing", [0, 0.1])
def test_sigmoid_cross_entropy_with_label_smoothing(smoothing):
    labels = np.array([[1, 0, 1], [0, 0, 1], [1, 1, 0]], np.int32)
    smoothed = labels * (1 - smoothing) + 0.5 * smoothing
    x = LOGITS.astype(np.float64)
    expected = np.maximum(x, 0) - x * smoothed + np.log1p(np.exp(-np.abs(x)))
    loss = tf.losses.sigmoid_cross_entropy(labels, LOGITS, label_smoothing=smoothing)
    assert loss.op.name == "sigmoid_cross_entropy_loss/value"
    np.testing.assert_allclose(run(loss), expected.mean(), rtol=1e-5)


def test_sparse_softmax_cross_entropy_squeezes_labels_and_weights():
    ids = np.array([[0], [2], [1]], np.int64)
    weights = np.array([[1.0], [3.0], [0.0]], np.float32)
    loss = tf.losses.sparse_softmax_cross_entropy(ids, LOGITS, weights=weights)
    per_example = np_softmax_xent(np.eye(3)[ids[:, 0]], LOGITS.astype(np.float64))
    np.testing.assert_allclose(run(loss), (per_example[0] + 3 * per_example[1]) / 2, rtol=1e-5)
    unreduced = tf.losses.sparse_softmax_cross_entropy(ids[:, 0], LOGITS, reduction=R.NONE)
    assert unreduced.shape.as_list() == [3]
    np.testing.assert_allclose(run(unreduced), per_example, rtol=1e-5)


# --- errors --------------------------------------------------------------------------------------------------------
def test_weights_that_do_not_broadcast():
    with pytest.raises(ValueError, match=r"weights can not be broadcast to values. values.rank=2. weights.rank=1."):
        tf.losses.mean_squared_error(LABELS, PREDS, weights=[1.0, 2.0])
    with pytest.raises(ValueError, match=r"weights can not be broadcast to values. Mismatch at dim 1. "
                                         r"values.shape=\[2, 3\] weights.shape=\[2, 2\]."):
        tf.losses.mean_squared_error(LABELS, PREDS, weights=np.ones((2, 2), np.float32))


def test_incompatible_shapes_and_missing_arguments():
    with pytest.raises(ValueError, match="are incompatible"):
        tf.losses.absolute_difference(LABELS, PREDS[:, :2])
    with pytest.raises(ValueError, match="labels must not be None."):
        tf.losses.mean_squared_error(None, PREDS)
    with pytest.raises(ValueError, match="predictions must not be None."):
        tf.losses.log_loss(LABELS, None)
    with pytest.raises(ValueError, match="logits must not be None."):
        tf.losses.hinge_loss(LABELS, None)
    with pytest.raises(ValueError, match="onehot_labels must not be None."):
        tf.losses.softmax_cross_entropy(None, LOGITS)


# --- names, dtypes, collections ------------------------------------------------------------------------------------
def test_scope_argument_names_the_ops():
    loss = tf.losses.mean_squared_error(LABELS, PREDS, scope="my_loss")
    assert loss.name == "my_loss/value:0"
    second = tf.losses.mean_squared_error(LABELS, PREDS)
    third = tf.losses.mean_squared_error(LABELS, PREDS)
    assert (second.name, third.name) == ("mean_squared_error/value:0", "mean_squared_error_1/value:0")
    assert tf.losses.compute_weighted_loss(tf.constant([1.0])).name == "weighted_loss/value:0"


def test_compute_weighted_loss_returns_the_input_dtype():
    loss = tf.losses.compute_weighted_loss(tf.constant([1.0, 3.0], tf.float64), weights=[1.0, 0.0])
    assert loss.dtype == tf.float64
    assert run(loss) == pytest.approx(1.0)


def test_losses_collection():
    a = tf.losses.mean_squared_error(LABELS, PREDS)
    b = tf.losses.absolute_difference(LABELS, PREDS, loss_collection=None)
    c = tf.losses.huber_loss(LABELS, PREDS, loss_collection="extra")
    assert tf.losses.get_losses() == [a] == tf.get_collection(tf.GraphKeys.LOSSES)
    assert tf.losses.get_losses(loss_collection="extra") == [c]
    assert b not in tf.losses.get_losses()
    with tf.name_scope("tower"):
        d = tf.losses.mean_squared_error(LABELS, PREDS)
    assert tf.losses.get_losses(scope="tower") == [d]
    tf.losses.add_loss(tf.constant(5.0))
    assert len(tf.losses.get_losses()) == 3


def test_regularization_and_total_loss():
    assert run(tf.losses.get_regularization_loss()) == 0.0
    with pytest.raises(ValueError):
        tf.losses.get_total_loss()
    w = tf.get_variable("w", initializer=tf.constant([1.0, -2.0]),
                        regularizer=lambda v: tf.reduce_sum(tf.square(v)))
    data = tf.losses.mean_squared_error(LABELS, PREDS)
    regularization = tf.losses.get_regularization_loss()
    assert regularization.name == "total_regularization_loss:0"
    assert tf.losses.get_regularization_losses() == tf.get_collection(tf.GraphKeys.REGULARIZATION_LOSSES)
    total = tf.losses.get_total_loss()
    data_only = tf.losses.get_total_loss(add_regularization_losses=False, name="data_loss")
    assert total.name == "total_loss:0" and data_only.name == "data_loss:0"
    with tf.Session() as sess:
        sess.run(w.initializer)
        d, r, t, o = sess.run([data, regularization, total, data_only])
    assert r == pytest.approx(5.0) and t == pytest.approx(d + 5.0) and o == pytest.approx(d)


# --- gradients -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [tf.losses.mean_squared_error, tf.losses.huber_loss, tf.losses.absolute_difference,
                                tf.losses.log_loss])
def test_gradient_matches_central_differences(fn):
    y = np.array([[0.2, 0.9], [0.7, 0.1]])
    p0 = np.array([[0.3, 0.5], [0.45, 0.25]])
    p = tf.placeholder(tf.float64, [2, 2])
    loss = fn(tf.constant(y), tf.cast(p, tf.float32), weights=[[1.0], [2.0]])
    with tf.Session():
        err = tf.test.compute_gradient_error(p, [2, 2], tf.cast(loss, tf.float64), [], x_init_value=p0)
    assert err < 2e-3


def test_zero_weights_give_zero_loss_and_finite_gradient():
    p = tf.constant(PREDS)
    loss = tf.losses.mean_squared_error(LABELS, p, weights=0.0)
    grad = tf.gradients(loss, p)[0]
    value, g = run([loss, grad])
    assert value == 0.0
    np.testing.assert_array_equal(g, np.zeros_like(PREDS))


def test_sparse_softmax_loss_squeezes_weights_of_unknown_rank_when_run():
    """Column weights [batch, 1] fed to a placeholder of unknown rank lose their last dim, as TF's cond does."""
    logits = tf.constant([[10.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 1.0]])
    labels = tf.constant([[2], [0], [1]])
    weights = tf.placeholder(tf.float32)
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits, weights)
    per_example = run(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=[2, 0, 1], logits=logits))
    column = np.array([[1.0], [2.0], [0.0]], np.float32)
    np.testing.assert_allclose(run(loss, {weights: column}), (per_example * column[:, 0]).sum() / 2, rtol=1e-6)
    np.testing.assert_allclose(run(loss, {weights: 3.0}), per_example.mean() * 3, rtol=1e-6)
