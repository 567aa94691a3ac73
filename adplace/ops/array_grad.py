"""Gradient functions of the array, state, random and control-flow ops (TF's array_grad.py and friends)."""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.default_graph import get_default_graph
from adplace.framework.indexed_slices import IndexedSlices
from adplace.framework.registry import NotDifferentiable, RegisterGradient
from adplace.ops import array_ops, math_ops, reduction_ops, segment_ops, selection_ops, slicing_ops
from adplace.ops.array_ops import reshape, shape, shape_internal
from adplace.ops.constant_op import constant
from adplace.ops.selection_ops import where
from adplace.ops.slicing_ops import _getitem
from adplace.ops.math_grad import static_dims, sum_to_shape_of
from adplace.ops.op_builder import constant_value

for _op_type in ("Placeholder", "Const", "StopGradient", "Shape", "Size", "Rank", "ZerosLike", "Where",
                 "BroadcastGradientArgs", "InvertPermutation", "RandomUniform", "RandomUniformInt",
                 "RandomStandardNormal", "TruncatedNormal", "VariableV2", "Assign", "AssignAdd", "AssignSub",
                 "IsVariableInitialized", "InitializedValue", "NoOp", "RandomShuffle", "Multinomial"):
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
    return [None, reduction_ops.reduce_sum(grad)]


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
    return reduction_ops.reduce_sum(math_ops.multiply(shape(t), math_ops.cast(positions, _dtypes.int32)))


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
    return [slicing_ops.strided_slice_grad(x_shape, grad, op._attrs["slice_spec"])]


RegisterGradient("StridedSliceGrad")(lambda op, grad: [None, _getitem(grad, op._attrs["slice_spec"])])


@RegisterGradient("Tile")
def _tile_grad(op, grad):
    """Reshape the gradient to [multiples[0], dims[0], multiples[1], dims[1], ...] and sum the multiples axes."""
    x, multiples = op._inputs  # int32 or int64 multiples: x's shape in the same dtype, as TF
    split_shape = reshape(array_ops.transpose(array_ops.stack([multiples, shape(x, out_type=multiples.dtype)])), [-1])
    axes = math_ops.range(0, array_ops.size(split_shape), 2)
    return [reshape(reduction_ops.reduce_sum(reshape(grad, split_shape), axes), shape_internal(x)), None]


@RegisterGradient("Select")
def _select_grad(op, grad):
    cond = op._inputs[0]
    zeros = array_ops.zeros_like(grad)
    return [None, where(cond, grad, zeros), where(cond, zeros, grad)]


# --- gather ---------------------------------------------------------------------------------------------------------
def _dim_of(t, axis: int):
    """t's static size along `axis`, else a scalar tensor computed at run time."""
    dims = t._shape.as_tuple()
    return dims[axis] if dims is not None and dims[axis] is not None else shape(t)[axis]


@RegisterGradient("GatherV2")
def _gather_grad(op, grad):
    """Along axis 0 an IndexedSlices: each gathered row's gradient, at the row it came from (never densified, so
    an embedding's update touches only the rows looked up). Along another axis, or with batch dims, a dense sum
    of the slices of `grad` into their rows (UnsortedSegmentSum), the indices' dimensions moved to the front."""
    params, indices, axis_t = op._inputs
    axis, p_rank, i_rank = constant_value(axis_t), params._shape.ndims, indices._shape.ndims
    batch_dims = op._attrs.get("batch_dims", 0)
    if axis is not None and int(axis) == 0 and not batch_dims:
        return [_gather_rows_grad(params, indices, grad), None, None]
    if axis is None or p_rank is None or ((int(axis) % p_rank != 0 or batch_dims) and i_rank is None):
        raise ValueError(f"The gradient of {op.name!r} (GatherV2) needs a constant axis and params and indices of "
                         "known rank; give them static shapes (tf.reshape or a placeholder shape).")
    axis = int(axis) % p_rank
    if batch_dims:
        return [_batch_gather_grad(params, indices, grad, axis, batch_dims), None, None]
    if axis == 0:
        return [segment_ops.unsorted_segment_sum(grad, indices, _dim_of(params, 0)), None, None]
    front = list(range(axis, axis + i_rank)) + list(range(axis)) + list(range(axis + i_rank, p_rank + i_rank - 1))
    summed = segment_ops.unsorted_segment_sum(array_ops.transpose(grad, front), indices, _dim_of(params, axis))
    back = list(range(1, axis + 1)) + [0] + list(range(axis + 1, p_rank))
    return [array_ops.transpose(summed, back), None, None]


def _gather_rows_grad(params, indices, grad) -> IndexedSlices:
    """TF's axis-0 gather gradient: values = grad reshaped to [size(indices)] + params.shape[1:], indices
    flattened, dense_shape = shape(params) computed next to params."""
    with get_default_graph().colocate_with(params.op):
        params_shape = shape(params)
    if params._shape.is_fully_defined() and indices._shape.is_fully_defined():
        size = indices._shape.num_elements()
        return IndexedSlices(reshape(grad, [size] + params._shape.as_list()[1:]), reshape(indices, [size]),
                             params_shape)
    size = array_ops.expand_dims(array_ops.size(indices), 0)
    values = reshape(grad, array_ops.concat([size, params_shape[1:]], 0))
    return IndexedSlices(values, reshape(indices, size), params_shape)


def _batch_gather_grad(params, indices, grad, axis: int, batch_dims: int):
    """The gradient of a gather with batch dims: `grad`'s index dims moved next to the batch dims, each batch
    element's indices offset into its own rows of a flattened [batch * size] axis, summed there, then moved back."""
    p_rank, i_rank = params._shape.ndims, indices._shape.ndims
    n_middle, n_index = axis - batch_dims, i_rank - batch_dims
    batch_axes = list(range(batch_dims))
    index_axes = list(range(axis, axis + n_index))
    middle_axes = list(range(batch_dims, axis))
    rest_axes = list(range(axis + n_index, p_rank + n_index - 1))
    grad = array_ops.transpose(grad, batch_axes + index_axes + middle_axes + rest_axes)
    p_shape = shape(params, out_type=indices.dtype)
    batch = reduction_ops.reduce_prod(p_shape[:batch_dims])
    size = p_shape[axis]
    flat_indices = reshape(indices, array_ops.stack([batch, -1]))
    offsets = array_ops.expand_dims(math_ops.range(0, batch) * size, -1)
    values_shape = array_ops.concat([[-1], shape(grad, out_type=indices.dtype)[batch_dims + n_index:]], 0)
    summed = segment_ops.unsorted_segment_sum(reshape(grad, values_shape), reshape(flat_indices + offsets, [-1]),
                                              batch * size)
    moved_shape = array_ops.concat([p_shape[:batch_dims], [size], p_shape[batch_dims:axis], p_shape[axis + 1:]], 0)
    summed = reshape(summed, moved_shape)  # [batch..., size, middle..., rest...]
    back = (batch_axes + [batch_dims + 1 + i for i in range(n_middle)] + [batch_dims] +
            list(range(batch_dims + 1 + n_middle, p_rank)))
    return array_ops.transpose(summed, back)


@RegisterGradient("SelectV2")
def _select_v2_grad(op, grad):
    """Each branch gets the gradient where it was chosen, summed back over the axes it was broadcast along."""
    cond, x, y = op._inputs
    zero = array_ops.zeros([], dtype=grad.dtype.base_dtype)
    gx, gy = selection_ops.where_v2(cond, grad, zero), selection_ops.where_v2(cond, zero, grad)
    return [None, sum_to_shape_of(gx, x), sum_to_shape_of(gy, y)]


RegisterGradient("OneHot")(lambda op, grad: [None, None, None, None])


# --- Slice, Pad, MirrorPad, ReverseV2, IdentityN --------------------------------------------------------------------
@RegisterGradient("Slice")
def _slice_grad(op, grad):
    """Zeros around the slice: `grad` padded by begin before and the rest of the input after, per axis."""
    x, begin = op._inputs[0], op._inputs[1]
    after = math_ops.subtract(math_ops.subtract(shape(x, out_type=begin.dtype), shape(op._outputs[0],
                                                                                      out_type=begin.dtype)), begin)
    paddings = array_ops.stack([begin, after], axis=1)
    return [slicing_ops.pad(grad, paddings), None, None]


def _pad_grad(op, grad):
    """The interior of `grad`: a slice from each axis' padding before, of the input's shape."""
    x, paddings = op._inputs[0], op._inputs[1]
    begin = reshape(slicing_ops.slice_(paddings, [0, 0], array_ops.stack([array_ops.rank(x), 1])), [-1])
    x_grad = slicing_ops.slice_(grad, begin, shape(x, out_type=paddings.dtype))
    return [x_grad, None] + [None] * (len(op._inputs) - 2)


RegisterGradient("Pad")(_pad_grad)
RegisterGradient("PadV2")(_pad_grad)
RegisterGradient("MirrorPad")(lambda op, grad: [slicing_ops.mirror_pad_grad(grad, op._inputs[1], op._attrs["mode"]),
                                                None])
RegisterGradient("MirrorPadGrad")(lambda op, grad: [slicing_ops.pad(grad, op._inputs[1], mode=op._attrs["mode"]),
                                                    None])
RegisterGradient("ReverseV2")(lambda op, grad: [slicing_ops.reverse(grad, op._inputs[1]), None])
RegisterGradient("IdentityN")(lambda op, *grads: list(grads))


# --- PlaceholderWithDefault, ShapeN, BroadcastTo, TopKV2, Unique, LinSpace -----------------------------------------
RegisterGradient("PlaceholderWithDefault")(lambda op, grad: [grad])
for _op_type in ("ShapeN", "Unique", "LinSpace"):
    NotDifferentiable(_op_type)
RegisterGradient("BroadcastTo")(lambda op, grad: [sum_to_shape_of(grad, op._inputs[0]), None])


@RegisterGradient("TopKV2")
def _top_k_grad(op, grad, _):
    """Each value's gradient goes back to the input position it was taken from (its row's offset + its index);
    every other position gets zero. The indices are distinct, so a segment sum places them."""
    x, indices = op._inputs[0], op._outputs[1]
    x_shape = shape(x)
    columns = shape(x, out_type=_dtypes.int32)[-1]
    rows = array_ops.size(x) // columns if x._shape.ndims != 1 else 1
    offsets = array_ops.expand_dims(math_ops.range(0, rows) * columns, -1)
    flat = reshape(reshape(indices, array_ops.stack([rows, -1])) + offsets, [-1])
    placed = segment_ops.unsorted_segment_sum(reshape(grad, [-1]), flat, array_ops.size(x))
    return [reshape(placed, x_shape), None]


@RegisterGradient("PreventGradient")
def _prevent_gradient_grad(op, grad):
    raise LookupError(f"Gradient explicitly disabled. Reason: {op.get_attr('message')}")
