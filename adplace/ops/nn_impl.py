"""tf.nn functions composed of other ops (TF's nn_impl.py): logistic losses, l2_normalize, xw_plus_b, dropout and the
sampled losses nce_loss and sampled_softmax_loss, and N-D pooling (tf.nn.pool). They need no kernels or gradients
of their own.

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
from adplace.ops import (array_ops, candidate_sampling_ops, conv_ops, cross_entropy_ops, math_ops, nn_ops, random_ops,
                         reduction_ops, selection_ops, slicing_ops)
from adplace.ops.op_builder import constant_value, deprecated_argument_lookup


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
    labels = deprecated_argument_lookup("labels", labels, "targets", targets)
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
        axis = deprecated_argument_lookup("axis", axis, "dim", dim)
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
    rate = deprecated_argument_lookup("rate", rate, "keep_prob", keep)
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


# --- tf.nn.pool: N-D pooling from the 2-D pooling ops ----------------------------------------------------------------
def _pool_vector(value, n: int, what: str) -> np.ndarray:
    """strides/dilation_rate as n positive ints (default all ones), with TF's ValueErrors."""
    vector = np.ones(n, dtype=int) if value is None else np.asarray(value, dtype=int).reshape(-1)
    if len(vector) != n:
        raise ValueError(f"`len({what})` should be {n}. Received: {what}={value} of length {len(vector)}")
    if np.any(vector < 1):
        raise ValueError(f"all values of `{what}` must be positive. Received: {what}={value}")
    return vector


def _pool_2d_or_less(x: Tensor, window, strides, padding: str, pooling_type: str) -> Tensor:
    """MaxPool/AvgPool over the 1 or 2 spatial axes of a channels-last tensor (1-D as a height-1 image)."""
    pool_2d = conv_ops.max_pool if pooling_type == "MAX" else conv_ops.avg_pool
    if len(window) == 1:
        image = array_ops.expand_dims(x, 1)
        return array_ops.squeeze(pool_2d(image, [1, 1, window[0], 1], [1, 1, strides[0], 1], padding), [1])
    return pool_2d(x, [1, *window, 1], [1, *strides, 1], padding)


def _pool_undilated(x: Tensor, window, strides, padding: str, pooling_type: str) -> Tensor:
    """Pooling over 1-3 spatial axes. A 3-D window is a 2-D pool over (height, width) then one over depth: a box
    window separates, for the maximum and for the average of the cells inside the input, SAME padding included."""
    if len(window) < 3:
        return _pool_2d_or_less(x, window, strides, padding, pooling_type)
    shape = array_ops.shape(x)
    planes = array_ops.reshape(x, array_ops.concat([[-1], shape[2:]], 0))
    pooled = _pool_2d_or_less(planes, window[1:], strides[1:], padding, pooling_type)
    pooled_shape = array_ops.shape(pooled)
    columns = array_ops.reshape(pooled, array_ops.concat([shape[:2], [-1], shape[4:]], 0))
    deep = _pool_2d_or_less(columns, [window[0], 1], [strides[0], 1], padding, pooling_type)
    out = array_ops.reshape(deep, array_ops.concat([array_ops.shape(deep)[:2], pooled_shape[1:]], 0))
    out.set_shape(_pooled_static_shape(x.shape, window, strides, padding))
    return out


def _pooled_static_shape(shape: TensorShape, window, strides, padding: str) -> TensorShape:
    dims = shape.as_list() if shape.ndims is not None else None
    if dims is None:
        return TensorShape(None)
    spatial = []
    for size, k, s in zip(dims[1:-1], window, strides, strict=True):
        spatial.append(None if size is None else -(-(size if padding == "SAME" else size - k + 1) // s))
    return TensorShape([dims[0], *spatial, dims[-1]])


def _pool_dilated(x: Tensor, window, rates, pooling_type: str) -> Tensor:
    """VALID pooling with a dilated window (stride 1), as TF's with_space_to_batch: the input split into
    prod(rates) interleaved grids stacked on the batch axis, an undilated pool, and the grids woven back."""
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is None or None in dims[1:]:
        raise ValueError(f"tf.nn.pool with dilation_rate {list(rates)} needs the static shape of {x.name!r} (all "
                         f"but the batch size); got {x.shape}")
    n, sizes, channels = len(window), dims[1:-1], dims[-1]
    blocks = [-(-size // r) for size, r in zip(sizes, rates, strict=True)]
    x = slicing_ops.pad(x, [[0, 0]] + [[0, b * r - size] for b, r, size in zip(blocks, rates, sizes, strict=True)]
                        + [[0, 0]])
    split = array_ops.reshape(x, [-1] + [d for b, r in zip(blocks, rates, strict=True) for d in (b, r)] + [channels])
    phases_first = [2 * i + 2 for i in range(n)] + [0] + [2 * i + 1 for i in range(n)] + [2 * n + 1]
    batched = array_ops.reshape(array_ops.transpose(split, phases_first), [-1, *blocks, channels])
    pooled = _pool_undilated(batched, window, [1] * n, "VALID", pooling_type)
    pooled_blocks = [b - k + 1 for b, k in zip(blocks, window, strict=True)]
    grids = array_ops.reshape(pooled, [*rates, -1, *pooled_blocks, channels])
    woven = array_ops.transpose(grids, [n] + [d for i in range(n) for d in (n + 1 + i, i)] + [2 * n + 1])
    merged = array_ops.reshape(woven, [-1] + [b * r for b, r in zip(pooled_blocks, rates, strict=True)]
                               + [channels])
    out_sizes = [size - (k - 1) * r for size, k, r in zip(sizes, window, rates, strict=True)]
    return slicing_ops.slice_(merged, [0] * (n + 2), [-1, *out_sizes, -1])


def pool(input, window_shape, pooling_type: str, padding: str, dilation_rate=None, strides=None,  # noqa: A002
         name: str | None = None, data_format: str | None = None, dilations=None) -> Tensor:
    """Max or average pooling over 1, 2 or 3 spatial axes, with an optionally dilated window (tf.nn.pool).

        tf.nn.pool(x, [2, 2], "MAX", "VALID", strides=[2, 2])        # x: [N, H, W, C] -> [N, H/2, W/2, C]

    Args:
      input: a Tensor of rank len(window_shape) + 2, channels last (or second, for a data_format "NC...").
      window_shape: 1 to 3 positive ints.
      pooling_type: "MAX" or "AVG".
      padding: "SAME" or "VALID" ("VALID" only when the window is dilated).
      dilation_rate: positive ints, one per spatial axis (default 1); `dilations` is its alias.
      strides: positive ints no larger than the window, one per spatial axis (default 1); 1 when dilated.
      name: the name scope (default "max_pool" / "avg_pool").
      data_format: None, "NWC", "NHWC", "NDHWC" (channels last) or "NCW", "NCHW", "NCDHW".
    Returns:
      The pooled Tensor, of the input's dtype.
    Raises:
      ValueError: arguments TF rejects, or a dilated window on an input whose non-batch shape is unknown.
    """
    dilation_rate = deprecated_argument_lookup("dilations", dilations, "dilation_rate", dilation_rate)
    with name_scope(name, f"{pooling_type.lower()}_pool", [input]):
        x = convert_to_tensor(input, name="input")
        n = len(window_shape)
        if not 1 <= n <= 3:
            raise ValueError(f"`len(window_shape)` must be 1, 2, or 3. Received: window_shape={window_shape}")
        x.shape.with_rank(n + 2)
        strides, rates = _pool_vector(strides, n, "strides"), _pool_vector(dilation_rate, n, "dilation_rate")
        if np.any(strides > 1) and np.any(rates > 1):
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`. Received: "
                             f"strides={strides} and dilation_rate={rates}")
        if padding == "SAME" and np.any(rates > 1):
            raise ValueError(f"pooling with 'SAME' padding is not implemented for `dilation_rate` > 1. Received: "
                             f"padding={padding}, dilation_rate={rates}")
        if np.any(strides > np.asarray(window_shape)):
            raise ValueError(f"`strides` > `window_shape` not supported due to inconsistency between CPU and GPU "
                             f"implementations. Received: strides={strides}, window_shape={window_shape}")
        if pooling_type not in ("MAX", "AVG"):
            raise ValueError(f"Pooling type must be 'MAX' or 'AVG'. Received: pooling_type={pooling_type}")
        channels_first = data_format is not None and data_format.startswith("NC")
        if channels_first:
            x = array_ops.transpose(x, [0, *range(2, n + 2), 1])
        window, strides = [int(k) for k in window_shape], [int(s) for s in strides]
        if np.any(rates > 1):
            out = _pool_dilated(x, window, [int(r) for r in rates], pooling_type)
        else:
            out = _pool_undilated(x, window, strides, padding, pooling_type)
        return array_ops.transpose(out, [0, n + 1, *range(1, n + 1)]) if channels_first else out
