"""tf.metrics: streaming metrics held in local variables, each returning (value, update_op) as TF1 does.

A metric creates zero-initialized, non-trainable variables in the LOCAL_VARIABLES and METRIC_VARIABLES
collections under its variable scope (`accuracy/total:0`, `accuracy/count:0`), so `tf.local_variables_initializer()`
resets it. Running `update_op` folds one batch in and returns the metric so far; `value` reads it without updating.
Divisions by a zero count give 0, as TF's _safe_div does.

    acc, acc_update = tf.metrics.accuracy(labels, predictions)
    sess.run(tf.local_variables_initializer())
    for batch in batches:
        sess.run(acc_update, feed(batch))
    sess.run(acc)            # the accuracy over every batch fed so far
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import add_to_collections, control_dependencies
from adplace.framework.graph import GraphKeys
from adplace.framework.operation import Tensor
from adplace.ops import array_ops, math_ops, reduction_ops, state_ops
from adplace.ops.losses_impl import broadcast_weights, remove_squeezable_dimensions, safe_div
from adplace.ops.variable_scope import variable_scope
from adplace.ops.variables import Variable


def metric_variable(shape, dtype, validate_shape: bool = True, name: str | None = None) -> Variable:
    """A zero-initialized, non-trainable variable in GraphKeys.LOCAL_VARIABLES and GraphKeys.METRIC_VARIABLES."""
    return Variable(lambda: array_ops.zeros(shape, dtype), trainable=False,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
                    validate_shape=validate_shape, name=name)


def _remove_squeezable_dimensions(predictions, labels, weights):
    """Squeeze a trailing 1 so `labels` and `predictions` have one rank (their static shapes must then be compatible),
    then squeeze or expand the last dim of non-scalar `weights` to match the predictions' rank."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels, predictions = remove_squeezable_dimensions(labels, predictions)
        predictions.shape.assert_is_compatible_with(labels.shape)
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    w_rank, p_rank = weights.shape.ndims, predictions.shape.ndims
    if w_rank != 0 and w_rank is not None and p_rank is not None:
        if w_rank - p_rank == 1:
            weights = array_ops.squeeze(weights, [-1])
        elif p_rank - w_rank == 1:
            weights = array_ops.expand_dims(weights, -1)
    return predictions, labels, weights


def _add_to(collections, value: Tensor) -> None:
    if collections:
        add_to_collections(collections, value)


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of `values` over every batch (tf.metrics.mean).

    Args:
      values: a `Tensor` of any shape.
      weights: optional `Tensor` of rank 0 or the rank of `values`, broadcastable to `values`.
      metrics_collections: optional collections to add the mean to.
      updates_collections: optional collections to add `update_op` to.
      name: optional variable_scope name (default "mean").

    Returns:
      mean: `total / count` (0 while `count` is 0).
      update_op: adds `sum(values * weights)` to `total` and `sum(weights)` to `count`, and returns the new mean.

    Raises:
      ValueError: `weights` that do not broadcast to `values`.
    """
    with variable_scope(name, "mean", (values, weights)):
        values = math_ops.cast(values, _dtypes.float32)
        total = metric_variable([], _dtypes.float32, name="total")
        count = metric_variable([], _dtypes.float32, name="count")
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), _dtypes.float32)
        else:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(math_ops.cast(weights, _dtypes.float32), values)
            values = math_ops.multiply(values, weights)
            num_values = reduction_ops.reduce_sum(weights)
        update_total_op = state_ops.assign_add(total, reduction_ops.reduce_sum(values))
        with control_dependencies([values]):
            update_count_op = state_ops.assign_add(count, num_values)
        mean_t = safe_div(total.value(), count.value(), "value")
        _add_to(metrics_collections, mean_t)
        update_op = safe_div(update_total_op, update_count_op, "update_op")
        _add_to(updates_collections, update_op)
        return mean_t, update_op


def accuracy(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """How often `predictions` equals `labels`, over every batch (tf.metrics.accuracy); a weighted mean of 0/1.

    Raises:
      ValueError: `labels` and `predictions` of incompatible shapes, or `weights` that do not broadcast.
    """
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    predictions.shape.assert_is_compatible_with(labels.shape)
    if labels.dtype.base_dtype != predictions.dtype.base_dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    is_correct = math_ops.cast(math_ops.equal(predictions, labels), _dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None, updates_collections=None,
                        name=None):
    """The streaming mean of |predictions - labels| (tf.metrics.mean_absolute_error)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    absolute_errors = math_ops.abs(predictions - labels)
    return mean(absolute_errors, weights, metrics_collections, updates_collections, name or "mean_absolute_error")


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None, updates_collections=None,
                       name=None):
    """The streaming mean of (labels - predictions)**2 (tf.metrics.mean_squared_error)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    squared_error = math_ops.squared_difference(labels, predictions)
    return mean(squared_error, weights, metrics_collections, updates_collections, name or "mean_squared_error")


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None, updates_collections=None,
                            name=None):
    """The square root of the streaming mean squared error (tf.metrics.root_mean_squared_error)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    mse, update_mse_op = mean_squared_error(labels, predictions, weights, None, None,
                                            name or "root_mean_squared_error")
    rmse = math_ops.sqrt(mse)
    _add_to(metrics_collections, rmse)
    update_rmse_op = math_ops.sqrt(update_mse_op)
    _add_to(updates_collections, update_rmse_op)
    return rmse, update_rmse_op


def percentage_below(values, threshold, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The streaming fraction of `values` below `threshold` (tf.metrics.percentage_below)."""
    is_below_threshold = math_ops.cast(math_ops.less(values, threshold), _dtypes.float32)
    return mean(is_below_threshold, weights, metrics_collections, updates_collections,
                name or "percentage_below_threshold")


# --- counts of a boolean condition: true/false positives/negatives, precision, recall ---------------------------------
def _count_condition(values: Tensor, weights, metrics_collections, updates_collections):
    """A `count` variable summing the (weighted) 1.0s of the 0/1 float `values`; returns (count, update_op)."""
    count = metric_variable([], _dtypes.float32, name="count")
    if weights is not None:
        weights = math_ops.cast(weights, _dtypes.float32)
        values = math_ops.multiply(values, weights)
    value_tensor = array_ops.identity(count.value())
    _add_to(metrics_collections, value_tensor)
    update_op = state_ops.assign_add(count, reduction_ops.reduce_sum(values))
    _add_to(updates_collections, update_op)
    return value_tensor, update_op


def _condition_counter(default_name: str, label_is: bool, prediction_is: bool):
    """A tf.metrics function counting the elements where bool(labels) == label_is and bool(predictions) ==
    prediction_is (the product of 0/1 floats: the same count as TF's logical_and of two Equal ops)."""
    def counter(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
        with variable_scope(name, default_name, (predictions, labels, weights)):
            predictions, labels, weights = _remove_squeezable_dimensions(
                math_ops.cast(predictions, _dtypes.bool), math_ops.cast(labels, _dtypes.bool), weights)
            label_f = math_ops.cast(labels, _dtypes.float32)
            prediction_f = math_ops.cast(predictions, _dtypes.float32)
            is_condition = math_ops.multiply(label_f if label_is else 1.0 - label_f,
                                             prediction_f if prediction_is else 1.0 - prediction_f)
            return _count_condition(is_condition, weights, metrics_collections, updates_collections)
    counter.__name__ = default_name
    counter.__doc__ = (f"The streaming (weighted) count of {default_name.replace('_', ' ')} (tf.metrics."
                       f"{default_name}): labels {label_is} and predictions {prediction_is}, both cast to bool.")
    return counter


true_positives = _condition_counter("true_positives", True, True)
false_positives = _condition_counter("false_positives", False, True)
false_negatives = _condition_counter("false_negatives", True, False)
true_negatives = _condition_counter("true_negatives", False, False)


def _ratio_metric(default_name: str, other_count):
    """precision (tp / (tp + fp)) or recall (tp / (tp + fn)), 0 while the denominator is 0."""
    def metric(labels, predictions, weights=None, metrics_collections=None, updates_collections=None, name=None):
        with variable_scope(name, default_name, (predictions, labels, weights)):
            predictions, labels, weights = _remove_squeezable_dimensions(
                math_ops.cast(predictions, _dtypes.bool), math_ops.cast(labels, _dtypes.bool), weights)
            true_p, true_p_update = true_positives(labels, predictions, weights)
            other, other_update = other_count(labels, predictions, weights)
            value = safe_div(true_p, true_p + other, "value")
            _add_to(metrics_collections, value)
            update_op = safe_div(true_p_update, true_p_update + other_update, "update_op")
            _add_to(updates_collections, update_op)
            return value, update_op
    metric.__name__ = default_name
    return metric


precision = _ratio_metric("precision", false_positives)
precision.__doc__ = """The streaming precision tp / (tp + fp) of bool-cast predictions (tf.metrics.precision)."""
recall = _ratio_metric("recall", false_negatives)
recall.__doc__ = """The streaming recall tp / (tp + fn) of bool-cast predictions (tf.metrics.recall)."""


# --- ROC and PR curves: confusion counts at thresholds, auc -----------------------------------------------------------
_CONFUSION_KEYS = ("tp", "fn", "tn", "fp")
_CONFUSION_NAMES = {"tp": "true_positives", "fn": "false_negatives", "tn": "true_negatives", "fp": "false_positives"}


def _confusion_matrix_at_thresholds(labels, predictions, thresholds, weights=None):
    """Variables of shape [len(thresholds)] counting, per threshold t, the (weighted) tp/fn/tn/fp where a prediction
    above t counts as positive; returns ({key: variable}, {key: update op}).

    The comparisons broadcast [T, 1] thresholds against [1, N] predictions (TF tiles both to [T, N]).
    """
    predictions, labels, weights = _remove_squeezable_dimensions(
        math_ops.cast(predictions, _dtypes.float32), math_ops.cast(labels, _dtypes.bool), weights)
    num_thresholds = len(thresholds)
    predictions_row = array_ops.reshape(predictions, [1, -1])
    label_is_pos = array_ops.reshape(math_ops.cast(labels, _dtypes.float32), [1, -1])
    thresholds_column = convert_to_tensor([[t] for t in thresholds], dtype=_dtypes.float32)
    pred_is_pos = math_ops.cast(math_ops.greater(predictions_row, thresholds_column), _dtypes.float32)
    is_condition = {"tp": label_is_pos * pred_is_pos, "fn": label_is_pos * (1.0 - pred_is_pos),
                    "tn": (1.0 - label_is_pos) * (1.0 - pred_is_pos), "fp": (1.0 - label_is_pos) * pred_is_pos}
    if weights is not None:
        weights_row = array_ops.reshape(broadcast_weights(math_ops.cast(weights, _dtypes.float32), predictions),
                                        [1, -1])
        is_condition = {key: counts * weights_row for key, counts in is_condition.items()}
    values, update_ops = {}, {}
    for key in _CONFUSION_KEYS:
        values[key] = metric_variable([num_thresholds], _dtypes.float32, name=_CONFUSION_NAMES[key])
        update_ops[key] = state_ops.assign_add(values[key], reduction_ops.reduce_sum(is_condition[key], 1))
    return values, update_ops


def _area(x: Tensor, y: Tensor, num_thresholds: int, summation_method: str, name: str) -> Tensor:
    """Sum over neighbouring thresholds of the x step times the trapezoid (or lower/upper) height."""
    dx = x[:num_thresholds - 1] - x[1:]
    if summation_method == "trapezoidal":
        height = (y[:num_thresholds - 1] + y[1:]) / 2.0
    elif summation_method == "minoring":
        height = math_ops.minimum(y[:num_thresholds - 1], y[1:])
    elif summation_method == "majoring":
        height = math_ops.maximum(y[:num_thresholds - 1], y[1:])
    else:
        raise ValueError(f"Invalid summation_method: {summation_method}")
    return reduction_ops.reduce_sum(math_ops.multiply(dx, height), name=name)


def auc(labels, predictions, weights=None, num_thresholds: int = 200, metrics_collections=None,
        updates_collections=None, curve: str = "ROC", name=None, summation_method: str = "trapezoidal",
        thresholds=None):
    """The streaming area under the ROC or PR curve, by a Riemann sum over `num_thresholds` thresholds (tf.metrics.auc).

    Predictions are probabilities in [0, 1]; labels are cast to bool. The thresholds are evenly spaced in (0, 1)
    (or `thresholds`, sorted), plus one just below 0 and one just above 1.

    Raises:
      ValueError: `curve` not "ROC" or "PR", or an unknown `summation_method`.
      NotImplementedError: summation_method="careful_interpolation" (use "trapezoidal").
    """
    with variable_scope(name, "auc", (labels, predictions, weights)):
        if curve not in ("ROC", "PR"):
            raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
        if summation_method == "careful_interpolation":
            raise NotImplementedError("tf.metrics.auc(summation_method='careful_interpolation') is not supported; "
                                      "use 'trapezoidal', 'minoring' or 'majoring'.")
        kepsilon = 1e-7  # floating point slack at the end points
        if thresholds is not None:
            thresholds = sorted(thresholds)
            num_thresholds = len(thresholds) + 2
        else:
            thresholds = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        thresholds = [0.0 - kepsilon] + list(thresholds) + [1.0 + kepsilon]
        values, update_ops = _confusion_matrix_at_thresholds(labels, predictions, thresholds, weights)
        epsilon = 1.0e-6  # keeps the rates finite when a count is 0

        def compute_auc(tp, fn, tn, fp, op_name):
            rec = math_ops.div(tp + epsilon, tp + fn + epsilon)
            if curve == "ROC":
                x, y = math_ops.div(fp, fp + tn + epsilon), rec
            else:
                x, y = rec, math_ops.div(tp + epsilon, tp + fp + epsilon)
            return _area(x, y, num_thresholds, summation_method, op_name)

        auc_value = compute_auc(*(values[k].value() for k in _CONFUSION_KEYS), "value")
        _add_to(metrics_collections, auc_value)
        update_op = compute_auc(*(update_ops[k] for k in _CONFUSION_KEYS), "update_op")
        _add_to(updates_collections, update_op)
        return auc_value, update_op

__all__ = ["accuracy", "auc", "false_negatives", "false_positives", "mean", "mean_absolute_error", "mean_squared_error",
           "metric_variable", "percentage_below", "precision", "recall", "root_mean_squared_error",
           "true_negatives", "true_positives"]
