"""tf.losses: weighted losses reduced as TF1 reduces them, added to GraphKeys.LOSSES, built from primitive ops.

Every loss works in float32 under its own name scope (`mean_squared_error/...`), multiplies by `weights`
(broadcastable to the losses: rank 0 or the losses' rank, each dim 1 or equal), then reduces by `reduction`; the
TF1 default, SUM_BY_NONZERO_WEIGHTS, divides the weighted sum by the number of nonzero weights (0 when none).

    loss = tf.losses.mean_squared_error([[1.0], [2.0]], [[1.5], [2.0]])   # 0.125, named "mean_squared_error/value:0"
    tf.get_collection(tf.GraphKeys.LOSSES) == [loss]

This module also holds the weight helpers tf.metrics shares (TF's weights_broadcast_ops and
confusion_matrix.remove_squeezable_dimensions): `assert_broadcastable`, `broadcast_weights`,
`remove_squeezable_dimensions`.
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import add_to_collection, control_dependencies, get_collection, name_scope
from adplace.framework.graph import GraphKeys
from adplace.framework.operation import Operation, Tensor
from adplace.ops import (array_ops, check_ops, cross_entropy_ops, logical_ops, math_ops, nn_impl, reduction_ops,
                         selection_ops, slicing_ops)
from adplace.ops.constant_op import constant
from adplace.ops.control_flow_ops import no_op
from adplace.ops.op_builder import deprecated_argument_lookup


class Reduction:
    """How compute_weighted_loss reduces the weighted losses (tf.losses.Reduction)."""

    NONE = "none"
    SUM = "weighted_sum"
    MEAN = "weighted_mean"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_OVER_NONZERO_WEIGHTS,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}.")


# --- weights: TF's weights_broadcast_ops and confusion_matrix.remove_squeezable_dimensions ---------------------------
_BROADCAST_ERROR = "weights can not be broadcast to values."


def assert_broadcastable(weights, values) -> Operation:
    """Check that `weights` broadcast to `values`: rank 0, or the same rank with each dim 1 or equal to the value's.

    Checked when the graph is built where the shapes allow (a NoOp to depend on, or TF's ValueError); otherwise an
    Assert op fails with InvalidArgumentError "weights can not be broadcast to values." when run.
    """
    with name_scope(None, "assert_broadcastable", [weights, values]):
        weights = convert_to_tensor(weights, name="weights")
        values = convert_to_tensor(values, name="values")
        w_rank, v_rank = weights.shape.ndims, values.shape.ndims
        if w_rank == 0:
            return no_op(name="static_scalar_check_success")
        if w_rank is None or v_rank is None:
            return _dynamic_broadcast_check(weights, values)
        if w_rank != v_rank:
            raise ValueError(f"{_BROADCAST_ERROR} values.rank={v_rank}. weights.rank={w_rank}. "
                             f"values.shape={values.shape}. weights.shape={weights.shape}.")
        w_dims, v_dims = weights.shape.as_list(), values.shape.as_list()
        if None not in w_dims and None not in v_dims:
            for i, (w, v) in enumerate(zip(w_dims, v_dims)):
                if w not in (1, v):
                    raise ValueError(f"{_BROADCAST_ERROR} Mismatch at dim {i}. values.shape={v_dims} "
                                     f"weights.shape={w_dims}.")
            return no_op(name="static_dims_check_success")
        return _dynamic_broadcast_check(weights, values)


def _dynamic_broadcast_check(weights: Tensor, values: Tensor) -> Operation:
    """The run-time form of assert_broadcastable. Both shape vectors are zero-padded by the other's rank, so they
    can be compared elementwise whatever the ranks are."""
    w_shape, v_shape = array_ops.shape(weights, name="weights/shape"), array_ops.shape(values, name="values/shape")
    w_rank, v_rank = array_ops.rank(weights), array_ops.rank(values)
    is_scalar = math_ops.equal(w_rank, 0, name="is_scalar")
    padded_w = array_ops.concat([w_shape, array_ops.zeros(array_ops.reshape(v_rank, [1]), _dtypes.int32)], 0)
    padded_v = array_ops.concat([v_shape, array_ops.zeros(array_ops.reshape(w_rank, [1]), _dtypes.int32)], 0)
    dims_fit = reduction_ops.reduce_all(logical_ops.logical_or(math_ops.equal(padded_w, 1),
                                                               math_ops.equal(padded_w, padded_v)))
    is_valid = logical_ops.logical_or(is_scalar, logical_ops.logical_and(math_ops.equal(w_rank, v_rank), dims_fit))
    return check_ops.Assert(is_valid, [_BROADCAST_ERROR, "weights.shape=", weights.name, w_shape, "values.shape=",
                                       values.name, v_shape, "is_scalar=", is_scalar], name="is_valid_shape")


def broadcast_weights(weights, values) -> Tensor:
    """`weights` broadcast to the shape of `values` (`weights * ones_like(values)`), or as they are when the static
    shapes already match."""
    with name_scope(None, "broadcast_weights", [weights, values]) as scope:
        values = convert_to_tensor(values, name="values")
        weights = convert_to_tensor(weights, dtype=values.dtype.base_dtype, name="weights")
        if (weights.shape.is_fully_defined() and values.shape.is_fully_defined()
                and weights.shape.is_compatible_with(values.shape)):
            return weights
        with control_dependencies([assert_broadcastable(weights, values)]):
            return math_ops.multiply(weights, array_ops.ones_like(values), name=scope)


def remove_squeezable_dimensions(labels, predictions, expected_rank_diff: int = 0, name=None):
    """Squeeze the last dim of `predictions` or `labels` (if it is 1) when their ranks differ from
    `expected_rank_diff` by one (static ranks only). Returns (labels, predictions)."""
    with name_scope(name, "remove_squeezable_dimensions", [labels, predictions]):
        predictions = convert_to_tensor(predictions)
        labels = convert_to_tensor(labels)
        p_shape, l_shape = predictions.shape, labels.shape
        if p_shape.ndims is not None and l_shape.ndims is not None:
            rank_diff = p_shape.ndims - l_shape.ndims
            if rank_diff == expected_rank_diff + 1 and p_shape.dims[-1].is_compatible_with(1):
                predictions = array_ops.squeeze(predictions, [-1])
            elif rank_diff == expected_rank_diff - 1 and l_shape.dims[-1].is_compatible_with(1):
                labels = array_ops.squeeze(labels, [-1])
        return labels, predictions


def _squeeze_weights(labels: Tensor, predictions: Tensor, weights, expected_rank_diff: int):
    """remove_squeezable_dimensions, then squeeze `weights` when its rank is one more than the labels'."""
    labels, predictions = remove_squeezable_dimensions(labels, predictions, expected_rank_diff)
    if weights is not None:
        weights = convert_to_tensor(weights)
        w_rank, l_rank = weights.shape.ndims, labels.shape.ndims
        if w_rank is not None and l_rank is not None:
            if w_rank - l_rank == 1:
                weights = array_ops.squeeze(weights, [-1])
        elif w_rank is None or (w_rank > 0 and weights.shape.dims[-1].is_compatible_with(1)):
            weights = _squeeze_last_when_one_rank_more(weights, labels)
    return labels, predictions, weights


def _squeeze_last_when_one_rank_more(weights: Tensor, labels: Tensor) -> Tensor:
    """`weights` without its last dim when, at run time, its rank is one more than the labels' (TF builds a cond)."""
    w_shape = array_ops.shape(weights)
    rank_diff = array_ops.rank(weights) - array_ops.rank(labels)
    kept = array_ops.rank(weights) - math_ops.cast(math_ops.equal(rank_diff, 1), _dtypes.int32)
    return array_ops.reshape(weights, slicing_ops.slice_(w_shape, [0], array_ops.reshape(kept, [1])))


# --- reduction -------------------------------------------------------------------------------------------------------
def safe_div(numerator: Tensor, denominator: Tensor, name: str = "value") -> Tensor:
    """numerator / denominator, 0 where the denominator is not positive (TF1's _safe_div; no NaN in gradients)."""
    ones_where_zero = selection_ops.where(math_ops.equal(denominator, 0), array_ops.ones_like(denominator), denominator)
    return selection_ops.where(math_ops.greater(denominator, 0), math_ops.div(numerator, ones_where_zero),
                           array_ops.zeros_like(numerator), name=name)


def _safe_mean(losses: Tensor, num_present: Tensor) -> Tensor:
    return safe_div(reduction_ops.reduce_sum(losses), num_present)


def _num_elements(losses: Tensor) -> Tensor:
    with name_scope(None, "num_elements", [losses]) as scope:
        return math_ops.cast(array_ops.size(losses, name=scope), dtype=losses.dtype)


def _num_present(losses: Tensor, weights, per_batch: bool = False) -> Tensor:
    """How many losses have a nonzero weight (weights broadcast to the losses), in total or per batch row."""
    if isinstance(weights, float) and weights != 0.0:
        return _num_elements(losses)
    with name_scope(None, "num_present", [losses, weights]) as scope:
        weights = math_ops.to_float(weights)
        present = selection_ops.where(math_ops.equal(weights, 0.0), array_ops.zeros_like(weights),
                                  array_ops.ones_like(weights))
        present = broadcast_weights(present, losses)
        if per_batch:
            return reduction_ops.reduce_sum(present, axis=math_ops.range(1, array_ops.rank(present)),
                                            keepdims=True, name=scope)
        return reduction_ops.reduce_sum(present, name=scope)


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """`losses * weights`, reduced by `reduction` and cast back to the losses' dtype; added to `loss_collection`.

    Args:
      losses: `Tensor` of shape `[batch_size, d1, ... dN]`.
      weights: rank 0, or the rank of `losses` with each dim 1 or equal to the losses' dim.
      scope: name scope of the ops (default "weighted_loss").
      loss_collection: collection the loss is added to (None or "" adds it nowhere).
      reduction: a `Reduction` key.

    Returns:
      The losses' shape for Reduction.NONE, else a scalar.

    Raises:
      ValueError: an unknown `reduction`, or `weights` that do not broadcast to `losses`.
    """
    Reduction.validate(reduction)
    with name_scope(scope, "weighted_loss", [losses, weights]):
        with control_dependencies([assert_broadcastable(weights, losses)]):
            losses = convert_to_tensor(losses)
            input_dtype = losses.dtype.base_dtype
            losses = math_ops.to_float(losses)
            weights = math_ops.to_float(weights)
            weighted_losses = math_ops.multiply(losses, weights)
            if reduction == Reduction.NONE:
                loss = weighted_losses
            else:
                loss = reduction_ops.reduce_sum(weighted_losses)
                if reduction == Reduction.MEAN:
                    loss = _safe_mean(loss, reduction_ops.reduce_sum(array_ops.ones_like(losses) * weights))
                elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                    loss = _safe_mean(loss, _num_present(losses, weights))
                elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                    loss = _safe_mean(loss, _num_elements(losses))
            loss = math_ops.cast(loss, input_dtype)
            add_loss(loss, loss_collection)
            return loss


# --- the losses --------------------------------------------------------------------------------------------------
def _check_not_none(**values) -> None:
    for arg, value in values.items():
        if value is None:
            raise ValueError(f"{arg} must not be None.")


def _float_pair(labels, predictions) -> tuple[Tensor, Tensor]:
    """Both as float32, with static shapes that must be compatible (ValueError otherwise)."""
    predictions = math_ops.to_float(predictions)
    labels = math_ops.to_float(labels)
    predictions.shape.assert_is_compatible_with(labels.shape)
    return labels, predictions


def _pointwise_loss(default_name: str, labels, predictions, weights, scope, loss_collection, reduction, losses_of,
                    predictions_arg: str = "predictions") -> Tensor:
    """The frame of the losses of float labels and predictions: the None checks, the name scope, the float32 casts
    and shape check, then `losses_of(labels, predictions)` weighted and reduced by compute_weighted_loss."""
    _check_not_none(**{"labels": labels, predictions_arg: predictions})
    with name_scope(scope, default_name, [predictions, labels, weights]) as scope:
        labels, predictions = _float_pair(labels, predictions)
        return compute_weighted_loss(losses_of(labels, predictions), weights, scope, loss_collection,
                                     reduction=reduction)


def absolute_difference(labels, predictions, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted |predictions - labels| (tf.losses.absolute_difference)."""
    return _pointwise_loss("absolute_difference", labels, predictions, weights, scope, loss_collection, reduction,
                           lambda labels, predictions: math_ops.abs(math_ops.subtract(predictions, labels)))


def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted (predictions - labels)**2 (tf.losses.mean_squared_error)."""
    return _pointwise_loss("mean_squared_error", labels, predictions, weights, scope, loss_collection, reduction,
                           lambda labels, predictions: math_ops.squared_difference(predictions, labels))


def log_loss(labels, predictions, weights=1.0, epsilon: float = 1e-7, scope=None, loss_collection=GraphKeys.LOSSES,
             reduction=Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted -y*log(p + eps) - (1-y)*log(1 - p + eps) (tf.losses.log_loss)."""
    def losses_of(labels, predictions):
        return (-math_ops.multiply(labels, math_ops.log(predictions + epsilon))
                - math_ops.multiply((1 - labels), math_ops.log(1 - predictions + epsilon)))
    return _pointwise_loss("log_loss", labels, predictions, weights, scope, loss_collection, reduction, losses_of)


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted max(0, 1 - (2*labels - 1) * logits) for 0/1 labels (tf.losses.hinge_loss)."""
    def losses_of(labels, logits):
        all_ones = array_ops.ones_like(labels)
        labels = math_ops.subtract(2 * labels, all_ones)
        return math_ops.relu(math_ops.subtract(all_ones, math_ops.multiply(labels, logits)))
    return _pointwise_loss("hinge_loss", labels, logits, weights, scope, loss_collection, reduction, losses_of,
                           predictions_arg="logits")


def huber_loss(labels, predictions, weights=1.0, delta: float = 1.0, scope=None, loss_collection=GraphKeys.LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted Huber loss: 0.5*x**2 for |x| <= delta, else 0.5*delta**2 + delta*(|x| - delta)."""
    def losses_of(labels, predictions):
        abs_error = math_ops.abs(math_ops.subtract(predictions, labels))
        quadratic = math_ops.minimum(abs_error, delta)
        linear = math_ops.subtract(abs_error, quadratic)  # not maximum(abs_error - delta, 0): gradient 0 at delta
        return math_ops.add(math_ops.multiply(convert_to_tensor(0.5, dtype=quadratic.dtype),
                                              math_ops.multiply(quadratic, quadratic)),
                            math_ops.multiply(delta, linear))
    return _pointwise_loss("huber_loss", labels, predictions, weights, scope, loss_collection, reduction, losses_of)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                    reduction=Reduction.SUM_BY_NONZERO_WEIGHTS, dim=None) -> Tensor:
    """Weighted 1 - sum(labels * predictions, axis) for unit-normalized inputs (`dim` is the old name of `axis`)."""
    axis = deprecated_argument_lookup("dim", dim, "axis", axis)
    if axis is None:
        raise ValueError("You must specify 'axis'.")

    def losses_of(labels, predictions):
        radial_diffs = math_ops.multiply(predictions, labels)
        return 1 - reduction_ops.reduce_sum(radial_diffs, axis=(axis,), keepdims=True)
    return _pointwise_loss("cosine_distance_loss", labels, predictions, weights, scope, loss_collection, reduction,
                           losses_of)


def mean_pairwise_squared_error(labels, predictions, weights=1.0, scope=None,
                                loss_collection=GraphKeys.LOSSES) -> Tensor:
    """Sum over the batch of weights * mean over pairs (i, j), i != j, of ((p_i - p_j) - (y_i - y_j))**2, the pairs
    drawn within each example (tf.losses.mean_pairwise_squared_error; TF1 gives it no `reduction`).

        loss = tf.losses.mean_pairwise_squared_error([[0., 1., 3.]], [[0., 0., 0.]])   # (1 + 9 + 4) * 2 / 6
    """
    _check_not_none(labels=labels, predictions=predictions)
    with name_scope(scope, "mean_pairwise_squared_error", [predictions, labels, weights]):
        weights = math_ops.to_float(weights)
        labels = math_ops.to_float(labels)
        with control_dependencies([assert_broadcastable(weights, labels)]):
            predictions = math_ops.to_float(predictions)
            predictions.shape.assert_is_compatible_with(labels.shape)
            diffs = math_ops.subtract(predictions, labels)
            axis = math_ops.range(1, array_ops.rank(diffs))
            sum_squares_diff_per_batch = reduction_ops.reduce_sum(math_ops.square(diffs), axis=axis, keepdims=True)
            num_present_per_batch = _num_present(diffs, weights, per_batch=True)
            term1 = 2.0 * math_ops.div_no_nan(sum_squares_diff_per_batch,
                                              math_ops.maximum(num_present_per_batch - 1, 0), name="value")
            sum_diff = reduction_ops.reduce_sum(diffs, axis=axis, keepdims=True)
            pairs = math_ops.maximum(math_ops.multiply(num_present_per_batch, num_present_per_batch - 1), 0)
            term2 = 2.0 * math_ops.div_no_nan(math_ops.square(sum_diff), pairs, name="value")
            loss = reduction_ops.reduce_sum(math_ops.multiply(term1 - term2, weights))
            mean_loss = selection_ops.where(reduction_ops.reduce_sum(num_present_per_batch) > 0, loss,
                                            array_ops.zeros_like(loss), name="value")
            add_loss(mean_loss, loss_collection)
            return mean_loss


def _logits_and_labels(logits, labels) -> tuple[Tensor, Tensor]:
    """The logits as a Tensor and the labels cast to their dtype, with static shapes that must be compatible."""
    logits = convert_to_tensor(logits)
    labels = math_ops.cast(labels, logits.dtype)
    logits.shape.assert_is_compatible_with(labels.shape)
    return logits, labels


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted tf.nn.sigmoid_cross_entropy_with_logits; labels smoothed towards 1/2 by `label_smoothing`."""
    _check_not_none(multi_class_labels=multi_class_labels, logits=logits)
    with name_scope(scope, "sigmoid_cross_entropy_loss", [logits, multi_class_labels, weights]) as scope:
        logits, multi_class_labels = _logits_and_labels(logits, multi_class_labels)
        if label_smoothing > 0:
            multi_class_labels = multi_class_labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = nn_impl.sigmoid_cross_entropy_with_logits(labels=multi_class_labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=GraphKeys.LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted tf.nn.softmax_cross_entropy_with_logits_v2 (labels not differentiated); labels smoothed towards
    1/num_classes by `label_smoothing`. `weights` are per example: rank 0 or [batch_size]."""
    _check_not_none(onehot_labels=onehot_labels, logits=logits)
    with name_scope(scope, "softmax_cross_entropy_loss", [logits, onehot_labels, weights]) as scope:
        logits, onehot_labels = _logits_and_labels(logits, onehot_labels)
        if label_smoothing > 0:
            num_classes = math_ops.cast(array_ops.shape(onehot_labels)[1], logits.dtype)
            smooth_positives = 1.0 - label_smoothing
            smooth_negatives = label_smoothing / num_classes
            onehot_labels = onehot_labels * smooth_positives + smooth_negatives
        onehot_labels = array_ops.stop_gradient(onehot_labels, name="labels_stop_gradient")
        losses = cross_entropy_ops.softmax_cross_entropy_with_logits_v2(labels=onehot_labels, logits=logits,
                                                                      name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None, loss_collection=GraphKeys.LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS) -> Tensor:
    """Weighted tf.nn.sparse_softmax_cross_entropy_with_logits: `labels` are class ids, one rank below `logits`
    (a trailing dim of 1 on labels or weights is squeezed away)."""
    _check_not_none(labels=labels, logits=logits)
    with name_scope(scope, "sparse_softmax_cross_entropy_loss", [logits, labels, weights]) as scope:
        labels, logits, weights = _squeeze_weights(labels, logits, weights, expected_rank_diff=1)
        losses = cross_entropy_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction=reduction)


# --- the LOSSES collection (TF's losses/util.py) -------------------------------------------------------------------
def add_loss(loss, loss_collection=GraphKeys.LOSSES) -> None:
    """Add `loss` to `loss_collection` (nothing when it is None or empty)."""
    if loss_collection:
        add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES) -> list:
    """The losses in `loss_collection` whose names match `scope`."""
    return get_collection(loss_collection, scope)


def get_regularization_losses(scope=None) -> list:
    """The tensors in GraphKeys.REGULARIZATION_LOSSES (variable regularizers put them there)."""
    return get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name: str = "total_regularization_loss") -> Tensor:
    """The sum of the regularization losses, or a 0.0 constant when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return constant(0.0)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss", scope=None) -> Tensor:
    """The sum of the LOSSES collection, plus the regularization losses unless told otherwise.

    Raises:
      ValueError: no losses to add up (as TF's add_n of an empty list).
    """
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses += get_regularization_losses(scope=scope)
    return math_ops.add_n(losses, name=name)


__all__ = ["Reduction", "absolute_difference", "add_loss", "compute_weighted_loss", "cosine_distance",
           "get_losses", "get_regularization_loss", "get_regularization_losses", "get_total_loss", "hinge_loss",
           "huber_loss", "log_loss", "mean_pairwise_squared_error", "mean_squared_error", "sigmoid_cross_entropy",
           "softmax_cross_entropy", "sparse_softmax_cross_entropy"]
