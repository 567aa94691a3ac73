"""Softmax cross entropy ops (tf.nn.softmax_cross_entropy_with_logits, its _v2 and the sparse form): TF's fused
ops, which give the loss and its gradient in one kernel, with TF's argument checks and op names.

    loss = tf.nn.softmax_cross_entropy_with_logits_v2(labels=onehot, logits=logits)   # one loss per row
    loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=class_ids, logits=logits)
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.ops import array_ops, math_ops
from adplace.ops.nn_ops import FLOAT, INDEX
from adplace.ops.op_builder import (apply_op, broadcast_dims, check_dtype, check_same_dtype,
                                    deprecated_argument_lookup, shapes_text)


# --- cross entropy --------------------------------------------------------------------------------------------------
def _xent_infer(inputs, attrs, name):
    features, labels = inputs
    dtype = check_same_dtype("SoftmaxCrossEntropyWithLogits", inputs, ("features", "labels"))
    check_dtype("SoftmaxCrossEntropyWithLogits", "T", dtype, FLOAT)
    dims = broadcast_dims(features._shape.as_tuple(), labels._shape.as_tuple(), name,
                          "SoftmaxCrossEntropyWithLogits", inputs)
    if dims is not None and len(dims) != 2:
        raise ValueError(f"Shape must be broadcasted with rank 2, but is rank {len(dims)} for '{name}' (op: "
                         f"'SoftmaxCrossEntropyWithLogits') with input shapes: {shapes_text(inputs)}.")
    batch = TensorShape([None if dims is None else dims[0]])
    return [(dtype, batch), (dtype, TensorShape(dims) if dims is not None else unknown_shape(2))]


def _sparse_xent_infer(inputs, attrs, name):
    features, labels = inputs
    op_type = "SparseSoftmaxCrossEntropyWithLogits"
    check_dtype(op_type, "features", features._dtype, FLOAT)
    check_dtype(op_type, "labels", labels._dtype, INDEX)
    dims, label_dims = features._shape.as_tuple(), labels._shape.as_tuple()
    for got, rank in ((dims, 2), (label_dims, 1)):
        if got is not None and len(got) != rank:
            raise ValueError(f"Shape must be rank {rank} but is rank {len(got)} for '{name}' (op: '{op_type}') with "
                             f"input shapes: {shapes_text(inputs)}.")
    batch, classes = dims or (None, None)
    label_batch = (label_dims or (None,))[0]
    if batch is not None and label_batch is not None and batch != label_batch:
        raise ValueError(f"Dimensions must be equal, but are {batch} and {label_batch} for '{name}' (op: "
                         f"'{op_type}') with input shapes: {shapes_text(inputs)}.")
    batch = batch if batch is not None else label_batch
    dtype = features._dtype.base_dtype
    return [(dtype, TensorShape([batch])), (dtype, TensorShape([batch, classes]))]


register_op("SoftmaxCrossEntropyWithLogits", _xent_infer)
register_op("SparseSoftmaxCrossEntropyWithLogits", _sparse_xent_infer)


def ensure_xent_args(name: str, sentinel, labels, logits) -> None:
    if sentinel is not None:
        raise ValueError(f"Only call `{name}` with named arguments (labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def _flatten_outer_dims(x: Tensor) -> Tensor:
    """`x` as a matrix: every axis but the last merged into the first (a Reshape, as TF)."""
    dims = x._shape.as_tuple()
    if dims is not None and dims and dims[-1] is not None:
        target = [-1, dims[-1]]
    else:
        target = array_ops.concat([[-1], array_ops.shape(x)[-1:]], 0)
    out = array_ops.reshape(x, target)
    if dims is not None and dims and None not in dims[:-1]:
        out.set_shape([int(np.prod(dims[:-1])), dims[-1]])
    return out


def _half_to_float(logits: Tensor) -> Tensor:
    """float16 logits are computed in float32, as TF does."""
    return math_ops.cast(logits, _dtypes.float32) if logits.dtype.base_dtype is _dtypes.float16 else logits


def softmax_cross_entropy_with_logits_v2(labels, logits, axis=None, name: str | None = None, dim=None) -> Tensor:
    """-sum(labels * log_softmax(logits), axis), one loss per example; gradients flow into the labels too.

    Args:
      labels: a probability distribution along `axis` for each example.
      logits: unscaled log probabilities, of the labels' shape.
      axis: the class axis (default -1); `dim` is its deprecated alias.
      name: the name scope (default "softmax_cross_entropy_with_logits", which also names the op).
    Returns:
      A Tensor of the logits' type, shaped like `labels` without `axis`.
    """
    axis = deprecated_argument_lookup("axis", axis, "dim", dim)
    axis = -1 if axis is None else axis
    with name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        logits = convert_to_tensor(logits, name="logits")
        labels = convert_to_tensor(labels, name="labels")
        precise = _half_to_float(logits)
        labels = math_ops.cast(labels, precise.dtype)
        shape = logits._shape.as_tuple()
        if axis != -1:
            if shape is None:
                raise ValueError(f"softmax_cross_entropy_with_logits over axis {axis} needs the rank of "
                                 f"{logits.name!r} known when the graph is built")
            last = axis % len(shape)
            perm = [i for i in range(len(shape)) if i != last] + [last]
            precise, labels = array_ops.transpose(precise, perm), array_ops.transpose(labels, perm)
        moved = precise._shape.as_tuple()
        outer = (list(moved[:-1]) if moved is not None and moved and None not in moved[:-1]
                 else array_ops.shape(precise)[:-1])
        cost = apply_op("SoftmaxCrossEntropyWithLogits", [_flatten_outer_dims(precise), _flatten_outer_dims(labels)],
                        {"T": precise.dtype.base_dtype}, name=scope)._outputs[0]
        cost = array_ops.reshape(cost, outer)
        if shape is not None:
            cost.set_shape([d for i, d in enumerate(shape) if i != axis % len(shape)])
        return math_ops.cast(cost, logits.dtype.base_dtype)


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1, name: str | None = None,
                                      axis=None) -> Tensor:
    """TF1's softmax cross entropy: like the _v2 op, but no gradient reaches the labels (they pass a StopGradient).

    Arguments must be named. `axis` is an alias of `dim`; as in TF, giving `axis` needs `dim=None`.
    """
    dim = deprecated_argument_lookup("axis", axis, "dim", dim)
    ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]) as scope:
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits, axis=dim, name=scope)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None,
                                             name: str | None = None) -> Tensor:
    """-log_softmax(logits)[label] per example, for integer class labels (tf.nn.sparse_softmax_cross_entropy_with_logits).

    Args:
      labels: int32/int64 class indices in [0, num_classes), shaped like `logits` without its last axis.
      logits: unscaled log probabilities [d_0, ..., d_{r-1}, num_classes].
      name: the op's name (the scope is "SparseSoftmaxCrossEntropyWithLogits" by default).
    Returns:
      A Tensor of the labels' shape and the logits' type.
    Raises:
      ValueError: scalar logits, or labels whose rank or static shape does not fit the logits.
      InvalidArgumentError: (when run) a label outside [0, num_classes).
    """
    ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = convert_to_tensor(labels)
        logits = convert_to_tensor(logits)
        precise = _half_to_float(logits)
        labels_shape, logits_shape = labels._shape, logits._shape
        if logits_shape.ndims == 0:
            raise ValueError(f"Logits cannot be scalars - received shape {logits_shape}.")
        if logits_shape.ndims is not None and labels_shape.ndims is not None \
                and labels_shape.ndims != logits_shape.ndims - 1:
            raise ValueError(f"Rank mismatch: Rank of labels (received {labels_shape.ndims}) should equal rank of "
                             f"logits minus 1 (received {logits_shape.ndims}).")
        if labels_shape.is_fully_defined() and logits_shape.ndims is not None \
                and TensorShape(logits_shape.as_list()[:-1]).is_fully_defined() \
                and labels_shape.as_list() != logits_shape.as_list()[:-1]:
            raise ValueError(f"Shape mismatch: The shape of labels (received {labels_shape}) should equal the shape "
                             f"of logits except for the last dimension (received {logits_shape}).")
        attrs = {"T": precise.dtype.base_dtype, "Tlabels": labels.dtype.base_dtype}
        op_name = name or "SparseSoftmaxCrossEntropyWithLogits"
        if logits_shape.ndims == 2:
            cost = apply_op("SparseSoftmaxCrossEntropyWithLogits", [precise, labels], attrs, name=op_name)._outputs[0]
            return math_ops.cast(cost, logits.dtype.base_dtype)
        classes = logits_shape.as_tuple()[-1] if logits_shape.ndims is not None else None
        flat_logits = array_ops.reshape(precise, [-1, classes if classes is not None else array_ops.shape(logits)[-1]])
        target = labels_shape.as_list() if labels_shape.is_fully_defined() else array_ops.shape(labels)
        cost = apply_op("SparseSoftmaxCrossEntropyWithLogits", [flat_logits, array_ops.reshape(labels, [-1])], attrs,
                        name=op_name)._outputs[0]
        cost = array_ops.reshape(cost, target)
        cost.set_shape(labels_shape)
        return math_ops.cast(cost, logits.dtype.base_dtype)
