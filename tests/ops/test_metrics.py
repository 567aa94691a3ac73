"""Tests for adplace/ops/metrics_impl.py (tf.metrics): streaming values over several batches against NumPy, the
local metric variables (names, collections, reset), weights, collections arguments, op names and errors."""
import numpy as np
import pytest

import adplace as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def stream(value, update, feeds_per_batch):
    """Initialize the local variables, run `update` once per batch; returns (update results, final value)."""
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(value) == 0.0  # a zero count divides to 0, as TF's _safe_div
        updates = [sess.run(update, feeds) for feeds in feeds_per_batch]
        return updates, sess.run(value)


def test_metric_variables_are_local_and_named_like_tf():
    acc, update = tf.metrics.accuracy([1, 2], [1, 3])
    names = [v.name for v in tf.local_variables()]
    assert names == ["accuracy/total:0", "accuracy/count:0"]
    assert tf.get_collection(tf.GraphKeys.METRIC_VARIABLES) == tf.local_variables()
    assert tf.GraphKeys.METRIC_VARIABLES == "metric_variables"
    assert tf.global_variables() == [] and tf.trainable_variables() == []
    assert not tf.local_variables()[0].trainable
    assert (acc.name, update.name) == ("accuracy/value:0", "accuracy/update_op:0")
    tf.metrics.accuracy([1, 2], [1, 3])
    tf.metrics.mean([1.0], name="loss_mean")
    assert [v.name for v in tf.local_variables()][2:] == ["accuracy_1/total:0", "accuracy_1/count:0",
                                                          "loss_mean/total:0", "loss_mean/count:0"]


def test_mean_streams_over_batches():
    values = tf.placeholder(tf.float32, [None])
    mean, update = tf.metrics.mean(values)
    batches = [np.array([1.0, 2.0, 6.0]), np.array([3.0]), np.array([-2.0, 0.5])]
    updates, final = stream(mean, update, [{values: b} for b in batches])
    seen = np.concatenate(batches)
    np.testing.assert_allclose(updates, [np.mean(seen[:3]), np.mean(seen[:4]), np.mean(seen)], rtol=1e-6)
    assert final == pytest.approx(np.mean(seen))
    assert (mean.name, update.name) == ("mean/value:0", "mean/update_op:0")


def test_weighted_mean_broadcasts_weights_and_expands_a_missing_last_dim():
    values = tf.placeholder(tf.float32, [2, 3])
    weights = tf.placeholder(tf.float32, [2])  # rank one below the values: expanded to [2, 1]
    mean, update = tf.metrics.mean(values, weights)
    v1, w1 = np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1.0, 0.0], np.float32)
    v2, w2 = np.ones((2, 3), np.float32) * 10, np.array([0.5, 2.0], np.float32)
    updates, final = stream(mean, update, [{values: v1, weights: w1}, {values: v2, weights: w2}])
    full_w1, full_w2 = np.repeat(w1[:, None], 3, 1), np.repeat(w2[:, None], 3, 1)
    expected = ((v1 * full_w1).sum() + (v2 * full_w2).sum()) / (full_w1.sum() + full_w2.sum())
    assert updates[0] == pytest.approx((v1 * full_w1).sum() / full_w1.sum())
    assert final == pytest.approx(expected)


def test_all_zero_weights_give_zero_not_nan():
    mean, update = tf.metrics.mean([1.0, 2.0], weights=[0.0, 0.0])
    updates, final = stream(mean, update, [None])
    assert updates == [0.0] and final == 0.0


def test_accuracy_streams_and_casts_predictions_to_the_labels_dtype():
    labels = tf.placeholder(tf.int64, [None])
    predictions = tf.placeholder(tf.int32, [None])
    acc, update = tf.metrics.accuracy(labels, predictions)
    batches = [([1, 0, 1], [1, 1, 0]), ([2, 2], [2, 2]), ([0], [3])]
    updates, final = stream(acc, update, [{labels: y, predictions: p} for y, p in batches])
    np.testing.assert_allclose(updates, [1 / 3, 3 / 5, 3 / 6], rtol=1e-6)
    assert final == pytest.approx(0.5)


def test_accuracy_squeezes_a_trailing_one_and_takes_weights():
    labels = np.array([[1], [2], [3], [4]])
    predictions = np.array([1, 0, 3, 0])
    acc, update = tf.metrics.accuracy(labels, predictions, weights=[[1.0], [3.0], [1.0], [0.0]])
    updates, _ = stream(acc, update, [None])
    assert updates[0] == pytest.approx(2 / 5)


def test_accuracy_with_argmax_of_logits():
    logits = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], np.float32)
    labels = np.array([1, 1, 1])
    acc, update = tf.metrics.accuracy(labels, tf.argmax(logits, 1))
    assert stream(acc, update, [None])[0] == [pytest.approx(2 / 3)]


@pytest.mark.parametrize("fn, scope, reference", [
    (tf.metrics.mean_absolute_error, "mean_absolute_error", lambda y, p: np.abs(p - y)),
    (tf.metrics.mean_squared_error, "mean_squared_error", lambda y, p: (p - y) ** 2),
])
def test_error_means_stream(fn, scope, reference):
    labels = tf.placeholder(tf.float32, [None, 2])
    predictions = tf.placeholder(tf.float32, [None, 2])
    value, update = fn(labels, predictions)
    assert tf.local_variables()[0].name == f"{scope}/total:0"
    rng = np.random.RandomState(0)
    batches = [(rng.randn(3, 2), rng.randn(3, 2)), (rng.randn(1, 2), rng.randn(1, 2))]
    _, final = stream(value, update, [{labels: y, predictions: p} for y, p in batches])
    errors = np.concatenate([reference(y, p) for y, p in batches])
    assert final == pytest.approx(errors.mean(), rel=1e-5)


def test_root_mean_squared_error():
    labels = tf.placeholder(tf.float32, [None])
    predictions = tf.placeholder(tf.float32, [None])
    rmse, update = tf.metrics.root_mean_squared_error(labels, predictions, metrics_collections=["m"],
                                                      updates_collections=["u"])
    assert [v.name for v in tf.local_variables()] == ["root_mean_squared_error/total:0",
                                                      "root_mean_squared_error/count:0"]
    assert tf.get_collection("m") == [rmse] and tf.get_collection("u") == [update]
    assert rmse.op.type == "Sqrt"
    updates, final = stream(rmse, update, [{labels: [1.0, 2.0], predictions: [2.0, 2.0]},
                                           {labels: [0.0], predictions: [3.0]}])
    np.testing.assert_allclose(updates, [np.sqrt(0.5), np.sqrt(10 / 3)], rtol=1e-6)
    assert final == pytest.approx(np.sqrt(10 / 3))


LABELS = [np.array([1, 0, 1, 1, 0]), np.array([0, 0, 1])]
PREDS = [np.array([1, 1, 0, 1, 0]), np.array([1, 0, 1])]


def confusion(labels, preds):
    y, p = np.concatenate(labels).astype(bool), np.concatenate(preds).astype(bool)
    return {"tp": np.sum(y & p), "fp": np.sum(~y & p), "fn": np.sum(y & ~p), "tn": np.sum(~y & ~p)}


@pytest.mark.parametrize("fn, key", [(tf.metrics.true_positives, "tp"), (tf.metrics.false_positives, "fp"),
                                     (tf.metrics.false_negatives, "fn"), (tf.metrics.true_negatives, "tn")])
def test_condition_counts(fn, key):
    labels = tf.placeholder(tf.int32, [None])
    predictions = tf.placeholder(tf.int32, [None])
    value, update = fn(labels, predictions)
    assert tf.local_variables()[0].name == f"{fn.__name__}/count:0"
    updates, final = stream(value, update, [{labels: y, predictions: p} for y, p in zip(LABELS, PREDS)])
    assert updates[0] == confusion(LABELS[:1], PREDS[:1])[key]
    assert final == confusion(LABELS, PREDS)[key]


@pytest.mark.parametrize("fn, other", [(tf.metrics.precision, "fp"), (tf.metrics.recall, "fn")])
def test_precision_and_recall(fn, other):
    labels = tf.placeholder(tf.int32, [None])
    predictions = tf.placeholder(tf.bool, [None])
    value, update = fn(labels, predictions)
    name = fn.__name__
    assert (value.name, update.name) == (f"{name}/value:0", f"{name}/update_op:0")
    assert [v.name for v in tf.local_variables()] == [
        f"{name}/true_positives/count:0", f"{name}/{ {'fp': 'false_positives', 'fn': 'false_negatives'}[other]}"
                                          "/count:0"]
    feeds = [{labels: y, predictions: p.astype(bool)} for y, p in zip(LABELS, PREDS)]
    updates, final = stream(value, update, feeds)
    first, both = confusion(LABELS[:1], PREDS[:1]), confusion(LABELS, PREDS)
    assert updates[0] == pytest.approx(first["tp"] / (first["tp"] + first[other]))
    assert final == pytest.approx(both["tp"] / (both["tp"] + both[other]))


def test_precision_with_no_positive_predictions_is_zero():
    value, update = tf.metrics.precision([1, 1], [0, 0])
    assert stream(value, update, [None]) == ([0.0], 0.0)


def test_percentage_below():
    value, update = tf.metrics.percentage_below([1.0, 5.0, 2.0, 9.0], threshold=3.0)
    assert stream(value, update, [None]) == ([0.5], 0.5)
    assert value.name == "percentage_below_threshold/value:0"


def test_local_variables_initializer_resets_a_metric():
    values = tf.placeholder(tf.float32, [None])
    mean, update = tf.metrics.mean(values)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(update, {values: [10.0, 20.0]})
        sess.run(tf.local_variables_initializer())
        sess.run(update, {values: [1.0]})
        assert sess.run(mean) == 1.0


def test_collections_arguments():
    mean, update = tf.metrics.mean([1.0], metrics_collections=["metrics"],
                                   updates_collections=[tf.GraphKeys.UPDATE_OPS])
    assert tf.get_collection("metrics") == [mean]
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == [update]


def test_shape_errors():
    with pytest.raises(ValueError, match="are incompatible"):
        tf.metrics.accuracy(np.zeros([3]), np.zeros([4]))
    with pytest.raises(ValueError, match="weights can not be broadcast to values"):
        tf.metrics.mean(np.zeros([2, 3], np.float32), weights=np.ones([2, 2], np.float32))
    with pytest.raises(ValueError, match="weights can not be broadcast to values. values.rank=3. weights.rank=1."):
        tf.metrics.mean(np.zeros([2, 3, 4], np.float32), weights=np.ones([2], np.float32))


def np_auc(labels, scores, weights, num_thresholds, curve, method):
    """The threshold sum tf.metrics.auc defines, in NumPy."""
    thresholds = [-1e-7] + [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)] + [1 + 1e-7]
    pos, w = labels.astype(bool), np.broadcast_to(weights, scores.shape)
    counts = {k: [] for k in ("tp", "fn", "tn", "fp")}
    for t in thresholds:
        above = scores > t
        counts["tp"].append(np.sum(w * (pos & above)))
        counts["fn"].append(np.sum(w * (pos & ~above)))
        counts["tn"].append(np.sum(w * (~pos & ~above)))
        counts["fp"].append(np.sum(w * (~pos & above)))
    tp, fn, tn, fp = (np.array(counts[k], np.float64) for k in ("tp", "fn", "tn", "fp"))
    eps = 1e-6
    rec = (tp + eps) / (tp + fn + eps)
    x, y = (fp / (fp + tn + eps), rec) if curve == "ROC" else (rec, (tp + eps) / (tp + fp + eps))
    height = {"trapezoidal": (y[:-1] + y[1:]) / 2, "minoring": np.minimum(y[:-1], y[1:]),
              "majoring": np.maximum(y[:-1], y[1:])}[method]
    return np.sum((x[:-1] - x[1:]) * height)


@pytest.mark.parametrize("curve, method", [("ROC", "trapezoidal"), ("ROC", "minoring"), ("PR", "trapezoidal"),
                                           ("PR", "majoring")])
def test_auc_streams_over_batches(curve, method):
    rng = np.random.RandomState(3)
    labels_all = rng.randint(0, 2, size=40)
    scores_all = np.clip(0.35 * labels_all + 0.65 * rng.rand(40), 0, 1).astype(np.float32)
    weights_all = rng.choice([0.0, 1.0, 2.0], size=40).astype(np.float32)
    labels = tf.placeholder(tf.int64, [None])
    scores = tf.placeholder(tf.float32, [None])
    weights = tf.placeholder(tf.float32, [None])
    value, update = tf.metrics.auc(labels, scores, weights, num_thresholds=50, curve=curve, summation_method=method)
    feeds = [{labels: labels_all[i:i + 20], scores: scores_all[i:i + 20], weights: weights_all[i:i + 20]}
             for i in (0, 20)]
    updates, final = stream(value, update, feeds)
    assert updates[0] == pytest.approx(np_auc(labels_all[:20], scores_all[:20], weights_all[:20], 50, curve, method),
                                       rel=1e-4)
    assert final == pytest.approx(np_auc(labels_all, scores_all, weights_all, 50, curve, method), rel=1e-4)


def test_auc_variables_names_and_a_perfect_ranking():
    value, update = tf.metrics.auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    assert [v.name for v in tf.local_variables()] == ["auc/true_positives:0", "auc/false_negatives:0",
                                                      "auc/true_negatives:0", "auc/false_positives:0"]
    assert tf.local_variables()[0].shape.as_list() == [200]
    assert (value.name, update.name) == ("auc/value:0", "auc/update_op:0")
    assert stream(value, update, [None])[1] == pytest.approx(0.75, abs=1e-3)  # one of four pairs is misordered
    perfect, perfect_update = tf.metrics.auc([0, 1], [0.2, 0.9], num_thresholds=10)
    assert stream(perfect, perfect_update, [None])[1] == pytest.approx(1.0, abs=1e-5)


def test_auc_errors():
    with pytest.raises(ValueError, match="curve must be either ROC or PR, XY unknown"):
        tf.metrics.auc([1], [0.5], curve="XY")
    with pytest.raises(ValueError, match="Invalid summation_method: sideways"):
        tf.metrics.auc([1], [0.5], summation_method="sideways")
