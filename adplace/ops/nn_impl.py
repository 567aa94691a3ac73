"""tf.nn functions composed of other ops (TF's nn_impl.py): logistic losses, l2_normalize, xw_plus_b, dropout and the
sampled losses nce_loss and sampled_softmax_loss. They need no kernels or gradients of their own.

    h = tf.nn.dropout(tf.nn.relu(tf.nn.xw_plus_b(x, w, b)), keep_prob=0.5)     # "dropout/mul_1"
    loss = tf.reduce_mean(tf.nn.nce_loss(weights, biases, labels, embed, num_sampled=64, num_classes=50000))
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.tensor_shape import TensorShape, as_shape
from adplace.ops import (array_ops, candidate_sampling_ops, cross_entropy_ops, math_ops, nn_ops, random_ops,
                         reduction_ops, selection_ops, slicing_ops)
from adplace.ops.op_builder import constant_value


# --- logistic losses ------------------------------------------------------------------------------------------------
def _same_shape(labels: Tensor, logits: Tensor, what: str = "logits and labels") -> None:
    first, second = (logits, labels) if what.startswith("logits") else (labels, logits)
    if not labels.shape.is_compatible_with(logits.shape):
        raise ValueError(f"{what} must have the same shape ({first.shape} vs {second.shape})")


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name: str | None = None) -> Tensor:
    """Elementwise logistic loss -labels*log(sigmoid(logits)) - (1-labels)*log(1-sigmoid(logits)), computed as
    max(logits, 0) - logits * labels + log(1 + exp(-|logits|)), which never overflows (TF's formula).

    Arguments must be named. Raises ValueError when labels and logits differ in shape.
    """
    cross_entropy_ops.ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        _same_shape(labels, logits)
        zeros = array_ops.zeros_like(logits, dtype=logits.dtype)
        cond = logits >= zeros
        relu_logits = selection_ops.where(cond, logits, zeros)
        neg_abs_logits = selection_ops.where(cond, -logits, logits)
        return math_ops.add(relu_logits - logits * labels, math_ops.log1p(math_ops.exp(neg_abs_logits)), name=scope)


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name: str | None = None,
                                       targets=None) -> Tensor:
    """The logistic loss with the positive term weighted by `pos_weight` (tf.nn.weighted_cross_entropy_with_logits):
    (1 - labels) * logits + (1 + (pos_weight - 1) * labels) * log(1 + exp(-logits)), stable for any logits.
    `targets` is the deprecated alias of `labels`."""
    labels = nn_ops.deprecated_argument_lookup("labels", labels, "targets", targets)
    with name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        _same_shape(labels, logits)
        log_weight = 1 + (pos_weight - 1) * labels
        softplus_neg = math_ops.log1p(math_ops.exp(-math_ops.abs(logits))) + math_ops.relu(-logits)
        return math_ops.add((1 - labels) * logits, log_weight * softplus_neg, name=scope)


def log_poisson_loss(targets, log_input, compute_full_loss: bool = False, name: str | None = None) -> Tensor:
    """exp(log_input) - log_input * targets, the Poisson negative log likelihood up to a constant; with
    `compute_full_loss`, plus the Stirling term for targets > 1 (tf.nn.log_poisson_loss)."""
    with name_scope(name, "log_poisson_loss", [log_input, targets]):
        log_input = convert_to_tensor(log_input, name="log_input")
        targets = convert_to_tensor(targets, name="targets")
        _same_shape(targets, log_input, "log_input and targets")
        result = math_ops.exp(log_input) - log_input * targets
        if compute_full_loss:
            stirling = targets * math_ops.log(targets) - targets + 0.5 * math_ops.log(2 * math.pi * targets)
            zeros = array_ops.zeros_like(targets, dtype=targets.dtype)
            in_unit = selection_ops.where(targets >= zeros, selection_ops.where(targets <= 1.0 + zeros, zeros, stirling),
                                      stirling)
            result += in_unit
        return result


# --- l2_normalize, xw_plus_b ----------------------------------------------------------------------------------------
def l2_normalize(x, axis=None, epsilon: float = 1e-12, name: str | None = None, dim=None) -> Tensor:
    """x / sqrt(max(sum(x**2, axis), epsilon)) (tf.nn.l2_normalize); `dim` is the deprecated alias of `axis`."""
    with name_scope(name, "l2_normalize", [x]) as scope:
        axis = nn_ops.deprecated_argument_lookup("axis", axis, "dim", dim)
        x = convert_to_tensor(x, name="x")
        square_sum = reduction_ops.reduce_sum(math_ops.square(x), axis, keepdims=True)
        x_inv_norm = math_ops.rsqrt(math_ops.maximum(square_sum, epsilon))
        return math_ops.multiply(x, x_inv_norm, name=scope)


def xw_plus_b(x, weights, biases, name: str | None = None) -> Tensor:
    """matmul(x, weights) + biases: a MatMul and a BiasAdd in the scope "xw_plus_b" (tf.nn.xw_plus_b)."""
    with name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        x = convert_to_tensor(x, name="x")
        weights = convert_to_tensor(weights, name="weights")
        biases = convert_to_tensor(biases, name="biases")
        return nn_ops.bias_add(math_ops.matmul(x, weights), biases, name=scope)


# --- dropout --------------------------------------------------------------------------------------------------------
def dropout(x, keep_prob=None, noise_shape=None, seed=None, name: str | None = None, rate=None) -> Tensor:
    """Each element of `x` kept with probability `keep_prob` and scaled by 1 / keep_prob, else 0 (tf.nn.dropout, TF1).

    Args:
      x: a float Tensor.
      keep_prob: the probability to keep an element, in (0, 1]; a float or a scalar Tensor (a placeholder).
      noise_shape: the shape of the keep/drop decisions, broadcast against `x` (default: x's shape).
      seed: the op seed; with tf.set_random_seed the mask sequence is reproducible.
      name: the name scope (default "dropout").
      rate: the probability to drop, 1 - keep_prob (give one of the two).
    Returns:
      A Tensor of x's shape; `x` itself when nothing is dropped (keep_prob 1).
    Raises:
      ValueError: keep_prob outside (0, 1] (as rate outside [0, 1)), an integer `x`, or neither rate nor keep_prob.
    """
    try:
        keep = 1. - keep_prob if keep_prob is not None else None
    except TypeError:
        raise ValueError(f"keep_prob must be a floating point number or Tensor (got {keep_prob!r})") from None
    rate = nn_ops.deprecated_argument_lookup("rate", rate, "keep_prob", keep)
    if rate is None:
        raise ValueError("You must provide a rate to dropout.")
    with name_scope(name, "dropout", [x]):
        x = convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise ValueError(f"x has to be a floating point tensor since it's going to be scaled. Got a <dtype: "
                             f"'{x.dtype.name}'> tensor instead.")
        if isinstance(rate, numbers.Real) and not 0 <= rate < 1:
            raise ValueError(f"rate must be a scalar tensor or a float in the range [0, 1), got {rate:g}")
        if isinstance(rate, numbers.Real) and rate == 0:
            return x
        rate = convert_to_tensor(rate, dtype=x.dtype.base_dtype, name="rate")
        rate.shape.assert_is_compatible_with(TensorShape([]))
        if constant_value(rate) is not None and constant_value(rate) == 0:
            return x
        random_tensor = random_ops.random_uniform(_noise_shape(x, noise_shape), seed=seed, dtype=x.dtype.base_dtype)
        scale = 1 / (1 - rate)
        keep_mask = random_tensor >= rate  # a uniform draw equal to rate is kept, as TF
        out = x * scale * math_ops.cast(keep_mask, x.dtype.base_dtype)
        out.set_shape(x.shape)
        return out


def _noise_shape(x: Tensor, noise_shape):
    """The mask's shape: x's own, or `noise_shape` with its unknown dims taken from x (TF's _get_noise_shape)."""
    if noise_shape is None:
        return array_ops.shape(x)
    try:
        wanted = as_shape(noise_shape)
    except (TypeError, ValueError):
        return noise_shape
    dims, wanted_dims = x.shape.as_tuple(), wanted.as_tuple()
    if dims is not None and wanted_dims is not None and len(dims) == len(wanted_dims) \
            and None not in [w if w is not None else d for w, d in zip(wanted_dims, dims)]:
        return [w if w is not None else d for w, d in zip(wanted_dims, dims)]
    return noise_shape


# --- sampled losses -------------------------------------------------------------------------------------------------
def _single_shard(params, what: str) -> Tensor:
    """The one weights/biases tensor of a sampled loss: sharded (partitioned) parameters are not supported yet."""
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError(f"{what} given as {len(params)} shards: sampled losses here take one tensor "
                                      f"(partition_strategy needs embedding_lookup over shards); concatenate the "
                                      f"shards with tf.concat(..., 0) if they were split by 'div'")
        params = params[0]
    return convert_to_tensor(params)


def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled: int, num_classes: int, num_true: int = 1,
                            sampled_values=None, subtract_log_q: bool = True, remove_accidental_hits: bool = False,
                            name: str | None = None, seed=None) -> tuple[Tensor, Tensor]:
    """Logits [batch, num_true + num_sampled] of the true classes then the sampled ones, and their target
    probabilities (1/num_true for each true class, 0 for the samples), as TF's _compute_sampled_logits."""
    weights, biases = _single_shard(weights, "weights"), _single_shard(biases, "biases")
    with name_scope(name, "compute_sampled_logits", [weights, biases, inputs, labels]):
        labels = math_ops.cast(convert_to_tensor(labels), _dtypes.int64)
        inputs = convert_to_tensor(inputs, name="inputs")
        labels_flat = array_ops.reshape(labels, [-1])
        if sampled_values is None:
            sampled_values = candidate_sampling_ops.log_uniform_candidate_sampler(
                true_classes=labels, num_true=num_true, num_sampled=num_sampled, unique=True, range_max=num_classes,
                seed=seed)
        sampled, true_expected_count, sampled_expected_count = (array_ops.stop_gradient(s) for s in sampled_values)
        sampled = math_ops.cast(sampled, _dtypes.int64)
        true_w = math_ops.cast(slicing_ops.gather(weights, labels_flat), inputs.dtype.base_dtype)
        sampled_w = math_ops.cast(slicing_ops.gather(weights, sampled), inputs.dtype.base_dtype)
        true_b = math_ops.cast(slicing_ops.gather(biases, labels_flat), inputs.dtype.base_dtype)
        sampled_b = math_ops.cast(slicing_ops.gather(biases, sampled), inputs.dtype.base_dtype)
        sampled_logits = math_ops.matmul(inputs, sampled_w, transpose_b=True) + sampled_b
        dim = true_w.shape.as_tuple()[-1] if true_w.shape.ndims is not None else None
        true_w = array_ops.reshape(true_w, [-1, num_true, dim if dim is not None else array_ops.shape(true_w)[1]])
        true_logits = reduction_ops.reduce_sum(array_ops.expand_dims(inputs, 1) * true_w, 2)
        true_logits += array_ops.reshape(true_b, [-1, num_true])
        if remove_accidental_hits:
            sampled_logits += _accidental_hit_penalty(labels, sampled, num_true, sampled_logits.dtype.base_dtype)
        if subtract_log_q:
            true_logits -= math_ops.log(math_ops.cast(true_expected_count, true_logits.dtype.base_dtype))
            sampled_logits -= math_ops.log(math_ops.cast(sampled_expected_count, sampled_logits.dtype.base_dtype))
        out_logits = array_ops.concat([true_logits, sampled_logits], 1)
        out_labels = array_ops.concat([array_ops.ones_like(true_logits) / num_true,
                                       array_ops.zeros_like(sampled_logits)], 1)
        return out_logits, out_labels


def _accidental_hit_penalty(labels: Tensor, sampled: Tensor, num_true: int, dtype) -> Tensor:
    """-FLT_MAX where a sampled class is one of the row's true classes, 0 elsewhere: [batch, num_sampled]. It is
    compute_accidental_hits scattered densely (TF adds the same values through sparse_to_dense)."""
    true_classes = array_ops.expand_dims(array_ops.reshape(labels, [-1, num_true]), 2)
    hits = math_ops.cast(math_ops.equal(true_classes, array_ops.reshape(sampled, [1, 1, -1])), dtype)
    return reduction_ops.reduce_max(hits, 1) * float(-np.finfo(np.float32).max)


def nce_loss(weights, biases, labels, inputs, num_sampled: int, num_classes: int, num_true: int = 1,
             sampled_values=None, remove_accidental_hits: bool = False, partition_strategy: str = "mod",
             name: str = "nce_loss") -> Tensor:
    """Noise-contrastive estimation loss per example, [batch] (tf.nn.nce_loss): a logistic loss of each true class
    against `num_sampled` classes drawn from a log-uniform (Zipfian) distribution.

    Args:
      weights: [num_classes, dim] class embeddings (a list of one tensor is accepted; several shards are not yet).
      biases: [num_classes] class biases.
      labels: int [batch, num_true] target classes.
      inputs: [batch, dim] activations.
      num_sampled: how many negative classes to sample per batch.
      num_classes: the number of classes.
      num_true: true classes per example.
      sampled_values: (sampled, true_expected_count, sampled_expected_count) from a candidate sampler; default:
        tf.nn.log_uniform_candidate_sampler(unique=True).
      remove_accidental_hits: whether a sampled class equal to a true class is left out of that example's loss.
      partition_strategy: "mod" or "div"; irrelevant for one weights tensor.
      name: the name scope.
    """
    del partition_strategy  # one shard: every strategy looks rows up the same way
    logits, labels = _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                                             sampled_values, subtract_log_q=True,
                                             remove_accidental_hits=remove_accidental_hits, name=name)
    losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="sampled_losses")
    return reduction_ops.reduce_sum(losses, 1)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled: int, num_classes: int, num_true: int = 1,
                         sampled_values=None, remove_accidental_hits: bool = True, partition_strategy: str = "mod",
                         name: str = "sampled_softmax_loss", seed=None) -> Tensor:
    """Softmax cross entropy over the true classes and `num_sampled` sampled ones, per example, [batch]
    (tf.nn.sampled_softmax_loss): a cheap training estimate of the full softmax loss. Arguments as nce_loss;
    accidental hits are removed by default and `seed` seeds the default sampler."""
    del partition_strategy
    logits, labels = _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                                             sampled_values, subtract_log_q=True,
                                             remove_accidental_hits=remove_accidental_hits, name=name, seed=seed)
    labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return cross_entropy_ops.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits)
