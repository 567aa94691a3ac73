"""Gradient functions of the array, state, random and control-flow ops (TF's array_grad.py and friends)."""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.registry import NotDifferentiable, RegisterGradient
from adplace.ops import array_ops, math_ops
from adplace.ops.constant_op import constant
from adplace.ops.array_ops import _getitem, shape_internal, reshape, shape, where
from adplace.ops.math_grad import static_dims
from adplace.ops.op_builder import constant_value

for _op_type in ("Placeholder", "Const", "StopGradient", "Shape", "Size", "Rank", "ZerosLike", "Where",
                 "BroadcastGradientArgs", "InvertPermutation", "RandomUniform", "RandomUniformInt",
                 "RandomStandardNormal", "TruncatedNormal", "VariableV2", "Assign", "AssignAdd", "AssignSub",
                 "IsVariableInitialized", "InitializedValue", "NoOp"):
    NotDifferentiable(_op_type)

RegisterGradient("Identity")(lambda op, grad: [grad])


def _reshape_to_input(op, grad):
    """Reshape/Squeeze/ExpandDims: the gradient takes the input's shape back (None for a shape input)."""
    return [reshape(grad, shape_internal(op._inputs[0]))] + [None] * (len(op._inputs) - 1)


for _op_type in ("Reshape", "Squeeze", "ExpandDims"):
    RegisterGradient(_op_type)(_reshape_to_input)


@RegisterGradient("Transpose")
def _transpose_grad(op, grad):
    perm_t = op._inputs[1]
    perm = constant_value(perm_t)
    inverse = list(np.argsort(np.reshape(perm, [-1]))) if perm is not None else array_ops.invert_permutation(perm_t)
    return [array_ops.transpose(grad, inverse), None]


@RegisterGradient("Fill")
def _fill_grad(op, grad):
    return [None, math_ops.reduce_sum(grad)]


# --- split / concat / stack ----------------------------------------------------------------------------------------
RegisterGradient("Split")(lambda op, *grads: [None, array_ops.concat(list(grads), op._inputs[0])])
RegisterGradient("SplitV")(lambda op, *grads: [array_ops.concat(list(grads), op._inputs[2]), None, None])


def _size_along(t, axis):
    """t's size along `axis` (an int when static; else a scalar tensor)."""
    dims = t._shape.as_tuple()
    if isinstance(axis, int):
        if dims is not None and dims[axis] is not None:
            return dims[axis]
        return shape(t)[axis]
    positions = math_ops.equal(math_ops.range(0, array_ops.rank(t)), axis)
    return math_ops.reduce_sum(math_ops.multiply(shape(t), math_ops.cast(positions, _dtypes.int32)))


@RegisterGradient("ConcatV2")
def _concat_grad(op, grad):
    """Split the gradient back into pieces the sizes of the inputs along the concat axis."""
    *values, axis_t = op._inputs
    axis = constant_value(axis_t)
    if axis is not None:
        rank = next((v._shape.ndims for v in values if v._shape.ndims is not None), None)
        axis = int(axis) % rank if rank is not None else int(axis) if int(axis) >= 0 else None
    if axis is None:
        rank = array_ops.rank(values[0])
        axis = math_ops.floormod(math_ops.add(axis_t, rank), rank)
    sizes = [_size_along(v, axis) for v in values]
    return array_ops.split(grad, sizes, axis=axis_t if not isinstance(axis, int) else axis) + [None]


RegisterGradient("Pack")(lambda op, grad: array_ops.unstack(grad, num=len(op._inputs), axis=op._attrs["axis"]))
RegisterGradient("Unpack")(lambda op, *grads: [array_ops.stack(list(grads), axis=op._attrs["axis"])])


# --- slicing, tiling, selection ------------------------------------------------------------------------------------
@RegisterGradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x = op._inputs[0]
    dims = static_dims(x)
    x_shape = constant(list(dims), dtype=_dtypes.int32) if dims is not None else shape(x)
    return [array_ops.strided_slice_grad(x_shape, grad, op._attrs["slice_spec"])]


RegisterGradient("StridedSliceGrad")(lambda op, grad: [None, _getitem(grad, op._attrs["slice_spec"])])


@RegisterGradient("Tile")
def _tile_grad(op, grad):
    """Reshape the gradient to [multiples[0], dims[0], multiples[1], dims[1], ...] and sum the multiples axes."""
    x, multiples = op._inputs  # int32 or int64 multiples: x's shape in the same dtype, as TF
    split_shape = reshape(array_ops.transpose(array_ops.stack([multiples, shape(x, out_type=multiples.dtype)])), [-1])
    axes = math_ops.range(0, array_ops.size(split_shape), 2)
    return [reshape(math_ops.reduce_sum(reshape(grad, split_shape), axes), shape_internal(x)), None]


@RegisterGradient("Select")
def _select_grad(op, grad):
    cond = op._inputs[0]
    zeros = array_ops.zeros_like(grad)
    return [None, where(cond, grad, zeros), where(cond, zeros, grad)]
