"""Kernels of the nn ops (adplace.ops.nn_ops, nn_impl, candidate_sampling_ops), for the CPU and, written against
`ctx.xp`, for (virtual and CUDA) GPUs; same conventions as adplace.kernels.cpu.

Softmax and the cross-entropy kernels subtract each row's maximum first, so no logit overflows exp.
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels import forwarding
from adplace.kernels.registration import NO_GPU, kernel, with_xp

FLOAT = _dtypes.FLOATING
REAL = _dtypes.FLOATING | _dtypes.INTEGER
INDEX = {_dtypes.int32, _dtypes.int64}
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# --- activations and their gradient ops ----------------------------------------------------------------------------
def _elu(xp):
    return lambda x: xp.where(x < 0, xp.expm1(xp.minimum(x, 0)), x)


def _selu(xp):
    return lambda x: xp.where(x < 0, (SELU_SCALE * SELU_ALPHA) * xp.expm1(xp.minimum(x, 0)), SELU_SCALE * x) \
        .astype(x.dtype, copy=False)


ACTIVATION_KERNELS = {  # op type -> (maker xp -> kernel, CPU dtypes)
    "Relu6": (lambda xp: lambda x: xp.minimum(xp.maximum(x, 0), 6).astype(x.dtype, copy=False), REAL),
    "Elu": (_elu, FLOAT),
    "Selu": (_selu, FLOAT),
    "Softplus": (lambda xp: lambda x: xp.logaddexp(xp.zeros((), dtype=x.dtype), x), FLOAT),
    "Softsign": (lambda xp: lambda x: x / (1 + xp.abs(x)), FLOAT),
    "Relu6Grad": (lambda xp: lambda dy, x: dy * ((x > 0) & (x < 6)), REAL),
    "EluGrad": (lambda xp: lambda dy, y: xp.where(y < 0, dy * (y + 1), dy), FLOAT),
    "SeluGrad": (lambda xp: lambda dy, y: xp.where(y < 0, dy * (y + SELU_SCALE * SELU_ALPHA), dy * SELU_SCALE)
                 .astype(dy.dtype, copy=False), FLOAT),
    "SoftplusGrad": (lambda xp: lambda dy, x: dy / (1 + xp.exp(-x)), FLOAT),
    "SoftsignGrad": (lambda xp: lambda dy, x: dy / xp.square(1 + xp.abs(x)), FLOAT),
}
for _op_type, (_make, _cpu_types) in ACTIVATION_KERNELS.items():
    kernel(_op_type, _cpu_types, FLOAT)(with_xp(_make))


@kernel("LeakyRelu", FLOAT, FLOAT)
def _leaky_relu(op, ctx):
    alpha, xp = op._attrs["alpha"], ctx.xp
    return lambda x: xp.where(x > 0, x, x * x.dtype.type(alpha))


@kernel("LeakyReluGrad", FLOAT, FLOAT)
def _leaky_relu_grad(op, ctx):
    alpha, xp = op._attrs["alpha"], ctx.xp
    return lambda dy, x: xp.where(x > 0, dy, dy * dy.dtype.type(alpha))


# --- BiasAdd --------------------------------------------------------------------------------------------------------
@kernel("BiasAdd", _dtypes.NUMERIC)
def _bias_add(op, ctx):
    channels_first, xp = op._attrs["data_format"] == "NCHW", ctx.xp

    def channels(value, bias):
        """The bias, checked against the value and shaped to broadcast along its channel axis."""
        ndim = value.ndim
        if ndim < 2:
            raise InvalidArgumentError(None, op, f"Input tensor must be at least 2D: {dims_text(value.shape)}")
        if bias.ndim != 1:
            raise InvalidArgumentError(None, op, f"Biases must be 1D: {dims_text(bias.shape)}")
        channel_axis = 1 if channels_first else ndim - 1
        if bias.shape[0] != value.shape[channel_axis]:
            raise InvalidArgumentError(None, op, f"Must provide as many biases as the last dimension of the input "
                                       f"tensor: {dims_text(bias.shape)} vs. {dims_text(value.shape)}")
        return xp.reshape(bias, (-1,) + (1,) * (ndim - 2)) if channels_first else bias

    def bias_add(value, bias):
        return xp.add(value, channels(value, bias))

    def bias_add_into(value, bias, out):
        bias = channels(value, bias)
        return np.add(value, bias, out=out) if bias.dtype == out.dtype else np.add(value, bias)
    bias_add.forwards = lambda position: forwarding.binary(bias_add, bias_add_into, 0) if position == 0 else None
    return bias_add


# --- Softmax, LogSoftmax --------------------------------------------------------------------------------------------
def _shifted(xp, logits):
    """The logits minus each row's maximum, and log(sum(exp)) of the result, along the last axis."""
    if xp is np:  # the ufuncs' reduce: the same values as np.max/np.sum without their Python wrappers
        shifted = logits - np.maximum.reduce(logits, axis=-1, keepdims=True)
        return shifted, np.log(np.add.reduce(np.exp(shifted), axis=-1, keepdims=True))
    shifted = logits - xp.max(logits, axis=-1, keepdims=True)
    return shifted, xp.log(xp.sum(xp.exp(shifted), axis=-1, keepdims=True))


def _softmax_family(log: bool):
    def factory(op, ctx):
        xp = ctx.xp

        def softmax(logits):
            if xp.ndim(logits) < 1:
                raise InvalidArgumentError(None, op, f"logits must have >= 1 dimension, got {dims_text(logits.shape)}")
            if logits.size == 0:
                return xp.array(logits, copy=True)
            shifted, log_sum = _shifted(xp, logits)
            return shifted - log_sum if log else xp.exp(shifted - log_sum)
        return softmax
    return factory


kernel("Softmax", FLOAT, FLOAT)(_softmax_family(log=False))
kernel("LogSoftmax", FLOAT, FLOAT)(_softmax_family(log=True))


# --- cross entropy --------------------------------------------------------------------------------------------------
@kernel("SoftmaxCrossEntropyWithLogits", FLOAT, FLOAT)
def _xent(op, ctx):
    xp = ctx.xp

    def xent(logits, labels):
        shape = logits.shape
        if labels.shape != shape:
            try:
                shape = np.broadcast_shapes(shape, labels.shape)
            except ValueError:
                raise InvalidArgumentError(None, op, f"logits and labels must be broadcastable: logits_size="
                                           f"{dims_text(logits.shape)} labels_size={dims_text(labels.shape)}") \
                    from None
            logits, labels = xp.broadcast_to(logits, shape), xp.broadcast_to(labels, shape)
        if len(shape) != 2:
            raise InvalidArgumentError(None, op, "logits and labels must be either 2-dimensional, or broadcasted to "
                                       "be 2-dimensional")
        if shape[1] == 0:
            raise InvalidArgumentError(None, op, "Must have at least one class, but got 0 classes")
        if logits.size == 0:
            return xp.zeros(shape[:1], logits.dtype), xp.zeros(shape, logits.dtype)
        shifted, log_sum = _shifted(xp, logits)
        loss = xp.sum(labels * (log_sum - shifted), axis=-1)
        probs = shifted - log_sum  # fresh arrays this kernel owns: exp and the backprop are written in place
        xp.exp(probs, out=probs)
        if logits.dtype != np.float64:
            return loss, xp.subtract(probs, labels, out=probs)
        return loss, _precise_backprop(xp, shifted, probs, labels)
    return xent


def _precise_backprop(xp, shifted, probs, labels):
    """probs - labels, with the entry of each row's largest logit taken as (1 - label) - (sum of the other probs):
    for a confident row p = 1 - tail rounds to 1, and the naive p - 1 would lose the tail (float64, as TF)."""
    is_top = xp.arange(shifted.shape[-1]) == xp.argmax(shifted, axis=-1)[:, None]
    others = xp.sum(xp.where(is_top, 0, probs), axis=-1, keepdims=True)
    return xp.where(is_top, (1 - labels) - others, probs - labels)


@kernel("SparseSoftmaxCrossEntropyWithLogits", FLOAT, FLOAT)
def _sparse_xent(op, ctx):
    """On the CPU a label outside [0, classes) is an error; on a CUDA GPU its row is NaN, as in TF (no sync)."""
    xp = ctx.xp

    def sparse_xent(logits, labels):
        if logits.ndim != 2:
            raise InvalidArgumentError(None, op, f"logits must be 2-D, but got shape {dims_text(logits.shape)}")
        if labels.ndim != 1:
            raise InvalidArgumentError(None, op, f"labels must be 1-D, but got shape {dims_text(labels.shape)}")
        batch, classes = logits.shape
        if labels.shape[0] != batch:
            raise InvalidArgumentError(None, op, f"logits and labels must have the same first dimension, got logits "
                                       f"shape {dims_text(logits.shape)} and labels shape {dims_text(labels.shape)}")
        if classes == 0 and batch:
            raise InvalidArgumentError(None, op, f"Must have at least one class, but got logits shape "
                                       f"{dims_text(logits.shape)}")
        labels = xp.asarray(labels)
        valid = (labels >= 0) & (labels < classes)
        if xp is np and not valid.all():
            bad = labels[~valid][0]
            raise InvalidArgumentError(None, op, f"Received a label value of {bad} which is outside the valid range "
                                       f"of [0, {classes}).  Label values: {' '.join(map(str, labels.tolist()))}")
        if batch == 0:
            return xp.zeros((0,), logits.dtype), xp.zeros(logits.shape, logits.dtype)
        shifted, log_sum = _shifted(xp, logits)
        log_probs = shifted - log_sum
        rows, safe = xp.arange(batch), xp.where(valid, labels, 0)
        loss = xp.where(valid, -log_probs[rows, safe] + 0, xp.nan).astype(logits.dtype, copy=False)  # + 0: no -0.0
        backprop = xp.exp(log_probs)
        backprop[rows, safe] -= 1
        return loss, xp.where(valid[:, None], backprop, xp.nan).astype(logits.dtype, copy=False)
    return sparse_xent


# --- L2Loss, InTopKV2 -----------------------------------------------------------------------------------------------
kernel("L2Loss", FLOAT, FLOAT)(with_xp(lambda xp: lambda t: (xp.sum(xp.square(t)) / 2).astype(t.dtype)))


@kernel("InTopKV2", INDEX, INDEX)
def _in_top_k(op, ctx):
    """Targets, k and the output are small: the predictions' row of each target is compared on the device."""
    xp = ctx.xp

    def in_top_k(predictions, targets, k):
        if predictions.ndim != 2:
            raise InvalidArgumentError(None, op, f"predictions must be 2-dimensional, got "
                                       f"{dims_text(predictions.shape)}")
        if xp.ndim(targets) != 1:
            raise InvalidArgumentError(None, op, f"targets must be 1-dimensional, got {dims_text(targets.shape)}")
        batch, classes = predictions.shape
        if targets.shape[0] != batch:
            raise InvalidArgumentError(None, op, f"First dimension of predictions {batch} must match length of "
                                       f"targets {targets.shape[0]}")
        targets, k = xp.asarray(targets), int(k)
        valid = (targets >= 0) & (targets < classes)
        target_values = predictions[xp.arange(batch), xp.where(valid, targets, 0)][:, None]
        higher = xp.sum(predictions > target_values, axis=1)
        return valid & xp.isfinite(target_values[:, 0]) & (higher < k)
    return in_top_k



# --- candidate samplers (CPU only, as in TF) -------------------------------------------------------------------------
class _LogUniform:
    """P(k) = log((k + 2) / (k + 1)) / log(range + 1): k = floor(exp(u * log(range + 1))) - 1 for uniform u."""

    def __init__(self, attrs):
        self.range = attrs["range_max"]
        self.log_range = np.log1p(self.range)

    def sample(self, rng, n: int) -> np.ndarray:
        return (np.exp(rng.random(n) * self.log_range).astype(np.int64) - 1) % self.range

    def probability(self, k: np.ndarray) -> np.ndarray:
        k = k.astype(np.float64)
        return np.log((k + 2.0) / (k + 1.0)) / self.log_range


class _Uniform:
    def __init__(self, attrs):
        self.range = attrs["range_max"]

    def sample(self, rng, n: int) -> np.ndarray:
        return rng.integers(0, self.range, size=n, dtype=np.int64)

    def probability(self, k: np.ndarray) -> np.ndarray:
        return np.full(k.shape, 1.0 / self.range)


class _FixedUnigram:
    """P(k) proportional to unigrams[k - num_reserved_ids] ** distortion; reserved ids have probability 0."""

    def __init__(self, attrs):
        weights = np.concatenate([np.zeros(attrs["num_reserved_ids"]),
                                  np.power(np.asarray(attrs["unigrams"], np.float64), attrs["distortion"])])
        self.range = attrs["range_max"]
        self.p = weights / weights.sum()

    def sample(self, rng, n: int) -> np.ndarray:
        return rng.choice(self.range, size=n, p=self.p).astype(np.int64)

    def probability(self, k: np.ndarray) -> np.ndarray:
        inside = (k >= 0) & (k < self.range)
        return np.where(inside, self.p[np.where(inside, k, 0)], 0.0)


def _draw_unique(sampler, rng, n: int) -> tuple[np.ndarray, int]:
    """n distinct classes in the order first drawn, and how many draws it took."""
    seen: dict = {}
    tries = 0
    while len(seen) < n:
        for value in sampler.sample(rng, max(2 * (n - len(seen)), 16)).tolist():
            tries += 1
            seen.setdefault(value, None)
            if len(seen) == n:
                break
    return np.fromiter(seen, np.int64, n), tries


def _expected_count(p: np.ndarray, n: int, tries: int) -> np.ndarray:
    """How often a class of probability p shows up in the draws: p * n, or 1 - (1 - p)^tries for unique draws."""
    if tries == n:
        return (p * n).astype(np.float32)
    return (-np.expm1(tries * np.log1p(-p))).astype(np.float32)


def _candidate_sampler(make_sampler):
    def factory(op, ctx):
        attrs, rng = op._attrs, ctx.random_generator(op)
        sampler, n, unique = make_sampler(attrs), attrs["num_sampled"], attrs["unique"]

        def sample(true_classes):
            if true_classes.ndim != 2 or true_classes.shape[1] != attrs["num_true"]:
                raise InvalidArgumentError(None, op, f"true_classes must be a matrix [batch, num_true = "
                                           f"{attrs['num_true']}], got {dims_text(true_classes.shape)}")
            if unique and n > sampler.range:
                raise InvalidArgumentError(None, op, "Sampler's range is too small.")
            sampled, tries = _draw_unique(sampler, rng, n) if unique else (sampler.sample(rng, n), n)
            return (sampled, _expected_count(sampler.probability(true_classes), n, tries),
                    _expected_count(sampler.probability(sampled), n, tries))
        return sample
    return factory


kernel("UniformCandidateSampler", None, NO_GPU)(_candidate_sampler(_Uniform))
kernel("LogUniformCandidateSampler", None, NO_GPU)(_candidate_sampler(_LogUniform))
kernel("FixedUnigramCandidateSampler", None, NO_GPU)(_candidate_sampler(_FixedUnigram))


@kernel("ComputeAccidentalHits", None, NO_GPU)
def _compute_accidental_hits(op, ctx):
    def compute_accidental_hits(true_classes, sampled):
        position = {value: i for i, value in enumerate(sampled.tolist())}  # a repeated candidate: its last position
        hits = [(row, position[value]) for row, values in enumerate(true_classes.tolist()) for value in values
                if value in position]
        rows, ids = (np.array(column, dtype) for column, dtype in zip(zip(*hits) if hits else ((), ()),
                                                                        (np.int32, np.int64)))
        return rows, ids, np.full(len(hits), -np.finfo(np.float32).max, np.float32)
    return compute_accidental_hits
