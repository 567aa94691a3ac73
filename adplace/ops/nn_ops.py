"""Neural-network ops (TF's nn_ops.py): BiasAdd, the activations (Relu6, Elu, Selu, Softplus, Softsign, LeakyRelu
and their gradient ops; tf.nn.crelu), Softmax/LogSoftmax, L2Loss and InTopKV2, plus the composites
tf.nn.moments and tf.nn.batch_normalization, built from math ops as TF builds them. Gradients: adplace.ops.nn_grad.

    y = tf.nn.bias_add(tf.matmul(x, w), b)          # one BiasAdd op: b added along the last axis
    mean, var = tf.nn.moments(y, axes=[0])           # per-feature batch mean and (biased) variance
"""
from __future__ import annotations


from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import RegisterGradient, register_op
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.framework.errors import InvalidArgumentError
from adplace.ops import array_ops, math_ops, reduction_ops, selection_ops
from adplace.ops.op_builder import (apply_op_1, check_dtype, check_same_dtype, constant_value,
                                    deprecated_argument_lookup, merged_shape, shapes_text)

FLOAT = _dtypes.FLOATING
REAL = _dtypes.FLOATING | _dtypes.INTEGER
INDEX = frozenset({_dtypes.int32, _dtypes.int64})


# --- BiasAdd --------------------------------------------------------------------------------------------------------
def _bias_add_infer(inputs, attrs, name):
    value, bias = inputs
    dtype = check_same_dtype("BiasAdd", inputs, ("value", "bias"))
    check_dtype("BiasAdd", "T", dtype, _dtypes.NUMERIC)
    channels_first = attrs["data_format"] == "NCHW"
    min_rank = 3 if channels_first else 2
    dims, bias_dims = value._shape.as_tuple(), bias._shape.as_tuple()
    if dims is not None and len(dims) < min_rank:
        raise ValueError(f"Shape must be at least rank {min_rank} but is rank {len(dims)} for '{name}' (op: "
                         f"'BiasAdd') with input shapes: {shapes_text(inputs)}.")
    if bias_dims is not None and len(bias_dims) != 1:
        raise ValueError(f"Shape must be rank 1 but is rank {len(bias_dims)} for '{name}' (op: 'BiasAdd') with "
                         f"input shapes: {shapes_text(inputs)}.")
    if dims is None:
        return [(dtype, unknown_shape())]
    channel_axis = 1 if channels_first else len(dims) - 1  # "NC...": the channels follow the batch at any rank
    channels, bias_channels = dims[channel_axis], (bias_dims or (None,))[0]
    if channels is not None and bias_channels is not None and channels != bias_channels:
        raise ValueError(f"Dimensions must be equal, but are {channels} and {bias_channels} for '{name}' (op: "
                         f"'BiasAdd') with input shapes: {shapes_text(inputs)}.")
    out = list(dims)
    out[channel_axis] = channels if channels is not None else bias_channels
    return [(dtype, TensorShape(out))]


register_op("BiasAdd", _bias_add_infer)


@RegisterGradient("BiasAdd")
def _bias_add_grad(op, grad):
    """The value's gradient passes through; the bias's sums it over every axis but the channel axis."""
    channels_first = op.get_attr("data_format") == "NCHW"
    rank = grad.shape.ndims
    if rank is not None:
        axes = [0, *range(2, rank)] if channels_first else list(range(rank - 1))
    elif channels_first:
        axes = array_ops.concat([[0], math_ops.range(2, array_ops.rank(grad))], 0)
    else:
        axes = math_ops.range(0, array_ops.rank(grad) - 1)
    return [grad, reduction_ops.reduce_sum(grad, axes)]


def bias_add(value, bias, data_format: str | None = None, name: str | None = None) -> Tensor:
    """value + bias, with the 1-D `bias` added along the channel axis (last; axis 1 for "NC..." formats).

    Args:
      value: a Tensor of rank >= 2.
      bias: a 1-D Tensor of value's dtype, as long as the channel axis.
      data_format: None or "N...C" (channels last), or "NC..." (channels first).
      name: the op's name (default "BiasAdd").
    Returns:
      A Tensor shaped like `value`.
    Raises:
      ValueError: an invalid data_format, or shapes that do not fit.
    """
    with name_scope(name, "BiasAdd", [value, bias]) as scope:
        if data_format is not None:
            if data_format.startswith("NC"):
                data_format = "NCHW"
            elif data_format.startswith("N") and data_format.endswith("C"):
                data_format = "NHWC"
            else:
                raise ValueError("data_format must be of the form `N...C` or `NC...`")
        value = convert_to_tensor(value, name="input")
        bias = convert_to_tensor(bias, dtype=value.dtype.base_dtype, name="bias")
        return apply_op_1("BiasAdd", [value, bias], {"T": value.dtype.base_dtype,
                                                     "data_format": data_format or "NHWC"}, name=scope)


# --- activations: one op each, and a gradient op fed the forward input or output (TF's Relu6Grad, EluGrad, ...) --
ACTIVATION_OPS = {  # op type -> (allowed dtypes, its gradient op, that op's input names)
    "Relu6": (REAL, "Relu6Grad", ("gradients", "features")),
    "Elu": (FLOAT, "EluGrad", ("gradients", "outputs")),
    "Selu": (FLOAT, "SeluGrad", ("gradients", "outputs")),
    "Softplus": (FLOAT, "SoftplusGrad", ("gradients", "features")),
    "Softsign": (FLOAT, "SoftsignGrad", ("gradients", "features")),
    "LeakyRelu": (FLOAT, "LeakyReluGrad", ("gradients", "features")),
}


def _features_infer(op_type: str, allowed):
    def infer(inputs, attrs, name):
        check_dtype(op_type, "features", inputs[0]._dtype, allowed)
        return [(inputs[0]._dtype.base_dtype, inputs[0]._shape)]
    return infer


def _activation_grad_infer(op_type: str, allowed, arg_names):
    """Both inputs of one dtype and one shape: gradient ops do not broadcast."""
    def infer(inputs, attrs, name):
        dtype = check_same_dtype(op_type, inputs, arg_names)
        check_dtype(op_type, arg_names[0], dtype, allowed)
        return [(dtype, merged_shape(op_type, name, inputs))]
    return infer


for _op_type, (_allowed, _grad_type, _arg_names) in ACTIVATION_OPS.items():
    register_op(_op_type, _features_infer(_op_type, _allowed))
    register_op(_grad_type, _activation_grad_infer(_grad_type, _allowed, _arg_names))


def _activation(op_type: str, features, name: str | None, attrs: dict | None = None) -> Tensor:
    features = convert_to_tensor(features, name="features")
    return apply_op_1(op_type, [features], {"T": features.dtype.base_dtype, **(attrs or {})}, name=name or op_type)


def relu6(features, name: str | None = None) -> Tensor:
    """min(max(features, 0), 6) (tf.nn.relu6)."""
    with name_scope(name, "Relu6", [features]) as scope:
        return _activation("Relu6", features, scope)


def elu(features, name: str | None = None) -> Tensor:
    """features where positive, exp(features) - 1 elsewhere (tf.nn.elu)."""
    return _activation("Elu", features, name)


def selu(features, name: str | None = None) -> Tensor:
    """scale * elu(features) with alpha 1.6732632... and scale 1.0507009... (tf.nn.selu)."""
    return _activation("Selu", features, name)


def softplus(features, name: str | None = None) -> Tensor:
    """log(exp(features) + 1), without overflow for large features (tf.nn.softplus)."""
    return _activation("Softplus", features, name)


def softsign(features, name: str | None = None) -> Tensor:
    """features / (abs(features) + 1) (tf.nn.softsign)."""
    return _activation("Softsign", features, name)


def leaky_relu(features, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """features where positive, alpha * features elsewhere (tf.nn.leaky_relu); integers are computed as float32."""
    with name_scope(name, "LeakyRelu", [features, alpha]) as scope:
        features = convert_to_tensor(features, name="features")
        if features.dtype.is_integer:
            features = math_ops.cast(features, _dtypes.float32)
        return _activation("LeakyRelu", features, scope, {"alpha": float(alpha)})


def crelu(features, name: str | None = None, axis: int = -1) -> Tensor:
    """Concatenated ReLU (tf.nn.crelu): relu(concat([features, -features], axis)), so `axis` doubles in size.

        tf.nn.crelu([[-1., 2.]])        # [[0., 2., 1., 0.]]
    """
    with name_scope(name, "CRelu", [features]) as scope:
        features = convert_to_tensor(features, name="features")
        both = array_ops.concat([features, math_ops.negative(features)], axis, name=scope)
        return math_ops.relu(both)


def activation_grad(op_type: str, gradients, x, name: str | None = None, attrs: dict | None = None) -> Tensor:
    """A gradient op of ACTIVATION_OPS (Relu6Grad, EluGrad, ...): `gradients` times the activation's derivative at
    `x` (the forward input, or the output for EluGrad and SeluGrad)."""
    gradients = convert_to_tensor(gradients, name="gradients")
    x = convert_to_tensor(x, dtype=gradients.dtype.base_dtype, name="x")
    return apply_op_1(op_type, [gradients, x], {"T": gradients.dtype.base_dtype, **(attrs or {})},
                      name=name or op_type)


# --- Softmax, LogSoftmax --------------------------------------------------------------------------------------------
def _softmax_infer(op_type: str):
    def infer(inputs, attrs, name):
        logits = inputs[0]
        check_dtype(op_type, "logits", logits._dtype, FLOAT)
        if logits._shape.ndims == 0:
            raise ValueError(f"Shape must be at least rank 1 but is rank 0 for '{name}' (op: '{op_type}') with input "
                             f"shapes: [].")
        return [(logits._dtype.base_dtype, logits._shape)]
    return infer


register_op("Softmax", _softmax_infer("Softmax"))
register_op("LogSoftmax", _softmax_infer("LogSoftmax"))


def _swap_with_last(axis: Tensor, ndims: int) -> Tensor:
    """The permutation that swaps the run-time `axis` (negative counts from the end) with the last of `ndims` axes;
    an axis out of range gives an out-of-range entry, so the Transpose fails with InvalidArgumentError when run."""
    axis = convert_to_tensor(axis, dtype=_dtypes.int32)
    axis = selection_ops.where_v2(math_ops.less(axis, 0), axis + ndims, axis)
    positions, last = math_ops.range(ndims), ndims - 1
    return selection_ops.where_v2(math_ops.equal(positions, axis), last,
                                  selection_ops.where_v2(math_ops.equal(positions, last), axis, positions))


def _softmax(op_type: str, logits, axis, name: str | None) -> Tensor:
    """Softmax/LogSoftmax over `axis`: the op itself for the last axis; otherwise, as TF, the op between two
    transposes that swap `axis` with the last axis."""
    logits = convert_to_tensor(logits)
    attrs = {"T": logits.dtype.base_dtype}
    ndims = logits._shape.ndims
    if axis == -1 or (ndims is not None and axis == ndims - 1):
        return apply_op_1(op_type, [logits], attrs, name=name or op_type)
    value = constant_value(axis) if isinstance(axis, Tensor) else axis
    if ndims is None:
        raise ValueError(f"{op_type} over axis {axis} needs the rank of {logits.name!r} known when the graph is "
                         f"built; transpose the axis last yourself, or give the logits a static rank")
    if value is None:
        perm = _swap_with_last(axis, ndims)
        swapped = apply_op_1(op_type, [array_ops.transpose(logits, perm)], attrs, name=op_type)
        out = array_ops.transpose(swapped, perm, name=name or "transpose")
        out.set_shape(logits._shape)
        return out
    value = int(value)
    if not -ndims <= value < ndims:
        raise InvalidArgumentError(None, None, f"Dimension ({value}) must be in the range [{-ndims}, {ndims}) where "
                                   f"{ndims} is the number of dimensions in the input.")
    perm = list(range(ndims))
    perm[value % ndims], perm[-1] = perm[-1], perm[value % ndims]
    swapped = apply_op_1(op_type, [array_ops.transpose(logits, perm)], attrs, name=op_type)
    return array_ops.transpose(swapped, perm, name=name or "transpose")


def softmax(logits, axis=None, name: str | None = None, dim=None) -> Tensor:
    """exp(logits) / reduce_sum(exp(logits), axis), computed without overflow (tf.nn.softmax, TF1 signature).

    Args:
      logits: a non-empty float Tensor.
      axis: the axis to normalize (default -1, the last); `dim` is its deprecated alias.
      name: the name of the result.
    Returns:
      A Tensor of the type and shape of `logits`.
    Raises:
      InvalidArgumentError: `axis` is outside the logits' dimensions (when the graph is built, as TF).
    """
    axis = deprecated_argument_lookup("axis", axis, "dim", dim)
    return _softmax("Softmax", logits, -1 if axis is None else axis, name)


def log_softmax(logits, axis=None, name: str | None = None, dim=None) -> Tensor:
    """logits - log(reduce_sum(exp(logits), axis)), computed without overflow (tf.nn.log_softmax)."""
    axis = deprecated_argument_lookup("axis", axis, "dim", dim)
    return _softmax("LogSoftmax", logits, -1 if axis is None else axis, name)


# --- L2Loss, InTopKV2 -----------------------------------------------------------------------------------------------
def _l2_loss_infer(inputs, attrs, name):
    check_dtype("L2Loss", "t", inputs[0]._dtype, FLOAT)
    return [(inputs[0]._dtype.base_dtype, TensorShape([]))]


register_op("L2Loss", _l2_loss_infer)


def l2_loss(t, name: str | None = None) -> Tensor:
    """sum(t ** 2) / 2, a scalar (tf.nn.l2_loss): the usual weight-decay term."""
    t = convert_to_tensor(t, name="t")
    return apply_op_1("L2Loss", [t], {"T": t.dtype.base_dtype}, name=name or "L2Loss")


def _in_top_k_infer(inputs, attrs, name):
    predictions, targets, k = inputs
    check_dtype("InTopKV2", "predictions", predictions._dtype, {_dtypes.float32})
    check_dtype("InTopKV2", "T", targets._dtype, INDEX)
    dims, target_dims, k_dims = (t._shape.as_tuple() for t in inputs)
    for got, rank in ((dims, 2), (target_dims, 1), (k_dims, 0)):
        if got is not None and len(got) != rank:
            raise ValueError(f"Shape must be rank {rank} but is rank {len(got)} for '{name}' (op: 'InTopKV2') with "
                             f"input shapes: {shapes_text(inputs)}.")
    batch, target_batch = (dims or (None,))[0], (target_dims or (None,))[0]
    if batch is not None and target_batch is not None and batch != target_batch:
        raise ValueError(f"Dimensions must be equal, but are {batch} and {target_batch} for '{name}' (op: "
                         f"'InTopKV2') with input shapes: {shapes_text(inputs)}.")
    return [(_dtypes.bool, TensorShape([batch if batch is not None else target_batch]))]


register_op("InTopKV2", _in_top_k_infer)


def in_top_k(predictions, targets, k, name: str | None = None) -> Tensor:
    """Whether each target's prediction is among the `k` largest of its row (ties count as in) (tf.nn.in_top_k).

    Args:
      predictions: float32 [batch, classes].
      targets: int32/int64 [batch] class indices; one out of range, or a non-finite prediction, gives False.
      k: how many top predictions count (a scalar of the targets' dtype).
    Returns:
      A bool [batch] Tensor.
    """
    with name_scope(name, "in_top_k"):
        predictions = convert_to_tensor(predictions, name="predictions")
        targets = convert_to_tensor(targets, name="targets")
        k = convert_to_tensor(k, dtype=targets.dtype.base_dtype, name="k")
        return apply_op_1("InTopKV2", [predictions, targets, k], {"T": targets.dtype.base_dtype},
                          name=name or "InTopKV2")


# --- composites -----------------------------------------------------------------------------------------------------
def moments(x, axes, shift=None, name: str | None = None, keep_dims: bool | None = None,
            keepdims: bool | None = None) -> tuple[Tensor, Tensor]:
    """Mean and (biased) variance of `x` over `axes` (tf.nn.moments); `shift` is unused, as in TF.

    The variance is mean((x - stop_gradient(mean))**2): the mean's gradient through it is zero anyway. float16 is
    reduced in float32.
    """
    keep = bool(keepdims if keep_dims is None else keep_dims)
    with name_scope(name, "moments", [x, axes]):
        x = convert_to_tensor(x)
        y = math_ops.cast(x, _dtypes.float32) if x.dtype.base_dtype is _dtypes.float16 else x
        mean = reduction_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        variance = reduction_ops.reduce_mean(math_ops.squared_difference(y, array_ops.stop_gradient(mean)), axes,
                                             keepdims=True, name="variance")
        if not keep:
            mean, variance = array_ops.squeeze(mean, axes), array_ops.squeeze(variance, axes)
        if x.dtype.base_dtype is _dtypes.float16:
            return math_ops.cast(mean, _dtypes.float16), math_ops.cast(variance, _dtypes.float16)
        return mean, variance


def batch_normalization(x, mean, variance, offset, scale, variance_epsilon, name: str | None = None) -> Tensor:
    """scale * (x - mean) / sqrt(variance + variance_epsilon) + offset (tf.nn.batch_normalization).

    `offset` and `scale` may be None. Built in TF's order: inv = rsqrt(variance + eps) * scale, then
    x * inv + (offset - mean * inv).
    """
    with name_scope(name, "batchnorm", [x, mean, variance, scale, offset]):
        x = convert_to_tensor(x)
        inv = math_ops.rsqrt(variance + variance_epsilon)
        if scale is not None:
            inv *= scale
        scaled = x * math_ops.cast(inv, x.dtype)  # TF's op order (x * inv before mean * inv) gives TF's op names
        return scaled + math_ops.cast(offset - mean * inv if offset is not None else -mean * inv, x.dtype)


