"""Reductions: reduce_sum/mean/max/min/prod/any/all (Sum, Mean, ..., All), reduce_logsumexp, count_nonzero, and
argmax/argmin (ArgMax, ArgMin)."""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.ops import array_ops, math_ops
from adplace.ops.array_ops import rank, reshape, shape, stop_gradient, zeros_like
from adplace.ops.math_ops import (NUMERIC, REAL, add, cast, exp, is_finite, log, not_equal, range,  # noqa: A004
                                  subtract)
from adplace.ops.op_builder import (apply_op_1, check_dtype, constant_value, deprecated_argument_lookup, int_const,
                                    keepdims_value, shapes_text)
from adplace.ops.selection_ops import where


# --- reductions -------------------------------------------------------------------------------------------------
def _reduction_infer(op_type):
    def infer(inputs, attrs, name):
        x, axis_t = inputs
        check_dtype(op_type, "input", x._dtype, _REDUCTION_DTYPES.get(op_type, REAL))
        dims, axes, keep = x._shape.as_tuple(), constant_value(axis_t), attrs["keep_dims"]
        dtype = x._dtype.base_dtype
        if axis_t._shape.ndims is not None and axis_t._shape.ndims > 1:
            raise ValueError(f"Shape must be at most rank 1 but is rank {axis_t._shape.ndims} for '{name}' (op: "
                             f"'{op_type}') with input shapes: {shapes_text(inputs)}.")
        if dims is None:
            return [(dtype, unknown_shape())]
        if axes is None:
            return [(dtype, unknown_shape(len(dims) if keep else None))]
        axes = {_reduction_axis(int(a), inputs, name, op_type) for a in np.reshape(axes, [-1])}
        out = [1 if i in axes else d for i, d in enumerate(dims)] if keep else [d for i, d in enumerate(dims)
                                                                               if i not in axes]
        return [(dtype, TensorShape(out))]
    return infer


def _reduction_axis(axis: int, inputs, name: str, op_type: str) -> int:
    """`axis` in [0, rank), or TF's shape-function error for an axis outside [-rank, rank)."""
    rank = inputs[0]._shape.ndims
    if not -rank <= axis < rank:
        raise ValueError(f"Invalid reduction dimension {axis} for input with {rank} dimensions. for '{name}' (op: "
                         f"'{op_type}') with input shapes: {shapes_text(inputs)} and with computed input tensors: "
                         f"input[1] = <{' '.join(str(int(a)) for a in np.reshape(constant_value(inputs[1]), [-1]))}>.")
    return axis % rank


_REDUCTION_DTYPES = {"Sum": NUMERIC, "Mean": NUMERIC, "Prod": NUMERIC, "EuclideanNorm": NUMERIC,
                     "Any": {_dtypes.bool}, "All": {_dtypes.bool}}
REDUCTION_OPS = ("Sum", "Mean", "Max", "Min", "Prod", "EuclideanNorm")
for _op_type in REDUCTION_OPS + ("Any", "All"):
    register_op(_op_type, _reduction_infer(_op_type))


def _reduce(op_type: str, default_name: str, input_tensor, axis, keepdims, name, reduction_indices, keep_dims):
    axis = reduction_indices if axis is None else axis
    keep = keepdims_value(keepdims, keep_dims)
    x = convert_to_tensor(input_tensor)
    reduces_all = axis is None
    if reduces_all:  # TF builds "all axes" outside the op's scope: a Const, or range(rank(x)) when rank is unknown
        axis = (int_const(list(np.arange(x._shape.ndims)), name="Const") if x._shape.ndims is not None
                else range(0, rank(x), 1))
    with name_scope(name, default_name, [x]) as scope:
        axis_t = int_const(axis, name="reduction_indices")
        out = apply_op_1(op_type, [x, axis_t], {"keep_dims": keep, "T": x.dtype.base_dtype}, name=scope)
    if reduces_all and not keep:  # TF's _may_reduce_to_scalar: a scalar even when x's rank is unknown
        out.set_shape([])
    return out


def reduce_sum(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """Sum over `axis` (all axes when None) (tf.reduce_sum)."""
    return _reduce("Sum", "Sum", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_mean(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """Mean over `axis` (all axes when None); integer means truncate, as in TF."""
    return _reduce("Mean", "Mean", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_max(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce("Max", "Max", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_min(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce("Min", "Min", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_prod(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    return _reduce("Prod", "Prod", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None) -> Tensor:
    """sqrt(sum(x * conj(x))) over `axis` (all axes when None), one EuclideanNorm op (tf.math.reduce_euclidean_norm).
    Integer inputs give the floor of the root, as in TF.

        tf.math.reduce_euclidean_norm([[3.0, 4.0]], 1)   # [5.0]
    """
    return _reduce("EuclideanNorm", "EuclideanNorm", input_tensor, axis, keepdims, name, None, None)


def reduced_shape(input_shape, axes) -> Tensor:
    """The shape `input_shape` reduces to with keepdims=True over `axes`: 1 at each reduced axis (negative axes
    count from the end) (TF's math_ops.reduced_shape, used by reduction gradients).

        reduced_shape([5, 3], [0])   # [1, 3]
    """
    input_shape = cast(convert_to_tensor(input_shape), _dtypes.int32)
    axes = cast(convert_to_tensor(axes), _dtypes.int32)
    static_shape, static_axes = constant_value(input_shape), constant_value(axes)
    if static_shape is not None and static_axes is not None:
        dims = [int(d) for d in np.reshape(static_shape, [-1])]
        for a in np.reshape(static_axes, [-1]):
            dims[int(a) % len(dims)] = 1
        return convert_to_tensor(np.asarray(dims, np.int32))
    rank_t = shape(input_shape)[0]
    axes = math_ops.floormod(add(reshape(axes, [-1]), rank_t), rank_t)
    hit = math_ops.equal(array_ops.expand_dims(range(0, rank_t, 1), 1), array_ops.expand_dims(axes, 0))
    reduced = _reduce("Any", "Any", hit, 1, False, None, None, None)
    return where(reduced, array_ops.ones_like(input_shape), input_shape)


def reduce_any(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """Logical OR of a bool tensor over `axis` (all axes when None) (tf.reduce_any)."""
    return _reduce("Any", "Any", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_all(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """Logical AND of a bool tensor over `axis` (all axes when None) (tf.reduce_all)."""
    return _reduce("All", "All", input_tensor, axis, keepdims, name, reduction_indices, keep_dims)


def reduce_logsumexp(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None, keep_dims=None):
    """log(sum(exp(x))) over `axis`, computed stably as TF does: the (finite) maximum is subtracted first and added
    back, with no gradient through it (tf.reduce_logsumexp).

        tf.reduce_logsumexp([0.0, 0.0])   # log(2)
    """
    axis = reduction_indices if axis is None else axis
    keep = keepdims_value(keepdims, keep_dims)
    with name_scope(name, "ReduceLogSumExp", [input_tensor]) as scope:
        x = convert_to_tensor(input_tensor, name="input_tensor")
        raw_max = reduce_max(x, axis=axis, keepdims=True)
        finite_max = stop_gradient(where(is_finite(raw_max), raw_max, zeros_like(raw_max)))
        result = log(reduce_sum(exp(subtract(x, finite_max)), axis, keepdims=keep))
        if not keep:
            finite_max = reshape(finite_max, shape(result))
        return add(result, finite_max, name=scope)


def count_nonzero(input_tensor, axis=None, keepdims=None, dtype=_dtypes.int64, name=None, reduction_indices=None,
                  keep_dims=None) -> Tensor:
    """The number of non-zero elements over `axis` (all axes when None), as `dtype` (tf.count_nonzero).

        tf.count_nonzero([[0, 1], [2, 0]], axis=1)   # [1, 1], int64
    """
    axis = reduction_indices if axis is None else axis
    with name_scope(name, "count_nonzero", [input_tensor]):
        x = convert_to_tensor(input_tensor, name="input_tensor")
        zero = convert_to_tensor(np.zeros((), dtype=x.dtype.base_dtype.as_numpy_dtype), name="zeros")
        nonzero = cast(not_equal(x, zero), _dtypes.int64)
        return cast(reduce_sum(nonzero, axis=axis, keepdims=keepdims_value(keepdims, keep_dims)), dtype=dtype)




# --- ArgMax, ArgMin ----------------------------------------------------------------------------------------------
def _arg_infer(op_type):
    def infer(inputs, attrs, name):
        x, dim_t = inputs
        check_dtype(op_type, "input", x._dtype, NUMERIC | {_dtypes.bool})
        check_dtype(op_type, "dimension", dim_t._dtype, (_dtypes.int32, _dtypes.int64))
        dims, axis = x._shape.as_tuple(), constant_value(dim_t)
        out = attrs["output_type"]
        if dim_t._shape.ndims not in (None, 0):
            raise ValueError(f"Shape must be rank 0 but is rank {dim_t._shape.ndims} for '{name}' (op: "
                             f"'{op_type}') with input shapes: {shapes_text(inputs)}.")
        if dims is None:
            return [(out, unknown_shape())]
        if axis is None:
            return [(out, unknown_shape(max(len(dims) - 1, 0)))]
        axis = int(axis)
        if not -max(len(dims), 1) <= axis < max(len(dims), 1):
            raise ValueError(f"Expected dimension in the range [{-len(dims)}, {len(dims)}), but got {axis} for "
                             f"'{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)} and with "
                             f"computed input tensors: input[1] = <{axis}>.")
        axis %= max(len(dims), 1)
        return [(out, TensorShape(dims[:axis] + dims[axis + 1:]))]
    return infer


for _op_type in ("ArgMax", "ArgMin"):
    register_op(_op_type, _arg_infer(_op_type))


def _arg(op_type: str, input, axis, name, dimension, output_type) -> Tensor:  # noqa: A002 - TF's argument name
    axis = deprecated_argument_lookup("dimension", dimension, "axis", axis)
    axis = 0 if axis is None else axis
    output_type = _dtypes.as_dtype(output_type).base_dtype
    if output_type not in (_dtypes.int32, _dtypes.int64):
        raise TypeError(f"Value passed to parameter 'output_type' has DataType {output_type.name} not in list of "
                        f"allowed values: int32, int64")
    with name_scope(name, op_type, [input, axis]) as scope:
        x = convert_to_tensor(input, name="input")
        dim_t = convert_to_tensor(axis, name="dimension")
        return apply_op_1(op_type, [x, dim_t], {"T": x.dtype.base_dtype, "Tidx": dim_t.dtype.base_dtype,
                                                "output_type": output_type}, name=scope)


def argmax(input, axis=None, name: str | None = None, dimension=None,  # noqa: A002 - TF's argument name
           output_type=_dtypes.int64) -> Tensor:
    """The index of the largest value along `axis` (0 when None; `dimension` is TF1's old name) (tf.argmax).
    Ties give the first index. Not differentiable.

        tf.argmax([[1, 9], [8, 2]], axis=1)   # [1, 0], int64
    """
    return _arg("ArgMax", input, axis, name, dimension, output_type)


def argmin(input, axis=None, name: str | None = None, dimension=None,  # noqa: A002 - TF's argument name
           output_type=_dtypes.int64) -> Tensor:
    """The index of the smallest value along `axis` (tf.argmin); as tf.argmax otherwise."""
    return _arg("ArgMin", input, axis, name, dimension, output_type)


