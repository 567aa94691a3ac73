"""Gradients of the segment reductions (adplace.ops.segment_ops), formed as TF's math_grad.py forms them.

Each data row gets its segment's gradient row (gathered by segment id): scaled by 1/count for means, by
1/sqrt(count) for SqrtN, shared between the rows that hold a segment's max or min, and multiplied by the product of
the segment's other rows for products. Rows with a negative (dropped) unsorted id get zero.

    g, = tf.gradients(tf.segment_max([1., 3., 3.], [0, 0, 0]), x)   # [0, 0.5, 0.5]
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.operation import Tensor
from adplace.framework.registry import RegisterGradient
from adplace.ops import array_ops, logical_ops, math_ops, segment_ops
from adplace.ops.selection_ops import where_v2
from adplace.ops.slicing_ops import gather


def _dense(grad) -> Tensor:
    """The gradient as a Tensor: an IndexedSlices (from a gather of the output) is summed into one."""
    return convert_to_tensor(grad)


def _broadcastable(per_row: Tensor, like: Tensor) -> Tensor:
    """`per_row` (shaped like the ids) reshaped with trailing 1s to broadcast against `like` (ids + row shape)."""
    p_rank, l_rank = per_row._shape.ndims, like._shape.ndims
    if p_rank is not None and l_rank is not None:
        if p_rank == l_rank:
            return per_row
        ones = array_ops.ones([l_rank - p_rank], dtype=_dtypes.int32)
    else:
        ones = array_ops.ones(array_ops.expand_dims(array_ops.rank(like) - array_ops.rank(per_row), 0),
                              dtype=_dtypes.int32)
    return array_ops.reshape(per_row, array_ops.concat([array_ops.shape(per_row), ones], 0))


def _gather_drop_negatives(params: Tensor, ids: Tensor) -> tuple[Tensor, Tensor]:
    """params[ids] with the rows of negative ids zero, and the (broadcastable) mask of the rows kept."""
    gathered = gather(params, math_ops.maximum(ids, 0))
    kept = _broadcastable(math_ops.greater_equal(ids, 0), gathered)
    return where_v2(kept, gathered, array_ops.zeros([], dtype=gathered.dtype.base_dtype)), kept


# --- sums and means -----------------------------------------------------------------------------------------------
@RegisterGradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    """Each data element gets the gradient of its segment's row; elements with a negative (dropped) id get zero."""
    return [_gather_drop_negatives(_dense(grad), op._inputs[1])[0], None, None]


@RegisterGradient("SegmentSum")
def _segment_sum_grad(op, grad):
    return [gather(_dense(grad), op._inputs[1]), None]


@RegisterGradient("SegmentMean")
def _segment_mean_grad(op, grad):
    data, ids = op._inputs
    grad = _dense(grad)
    counts = segment_ops.segment_sum(_broadcastable(array_ops.ones_like(ids, dtype=grad.dtype), data), ids)
    return [gather(grad / counts, ids), None]


# --- max and min: the gradient is shared between the rows that hold the extremum ---------------------------------------
def _segment_min_or_max_grad(op, grad):
    data, ids = op._inputs
    grad = _dense(grad)
    chosen = math_ops.equal(data, gather(op._outputs[0], ids))
    count = segment_ops.segment_sum(math_ops.cast(chosen, grad.dtype), ids)
    picked = gather(grad / count, ids)
    return [where_v2(chosen, picked, array_ops.zeros_like(picked)), None]


def _unsorted_segment_min_or_max_grad(op, grad):
    data, ids, num_segments = op._inputs
    grad = _dense(grad)
    extremum, kept = _gather_drop_negatives(op._outputs[0], ids)
    chosen = logical_ops.logical_and(math_ops.equal(data, extremum), kept)
    count = segment_ops.unsorted_segment_sum(math_ops.cast(chosen, grad.dtype), ids, num_segments)
    picked = _gather_drop_negatives(grad / count, ids)[0]
    return [where_v2(chosen, picked, array_ops.zeros_like(picked)), None, None]


for _kind in ("Max", "Min"):
    RegisterGradient(f"Segment{_kind}")(_segment_min_or_max_grad)
    RegisterGradient(f"UnsortedSegment{_kind}")(_unsorted_segment_min_or_max_grad)


# --- products: d prod / d x = the product of the other rows (computed without dividing by a zero) -------------------
def _prod_grad(data: Tensor, ids: Tensor, num_segments, product: Tensor, grad: Tensor) -> Tensor:
    grad = _dense(grad)
    is_zero = math_ops.equal(data, array_ops.zeros([], dtype=data.dtype.base_dtype))
    zeros_per_segment = segment_ops.unsorted_segment_sum(math_ops.cast(is_zero, _dtypes.int32), ids, num_segments)
    grad = where_v2(_broadcastable(math_ops.greater(zeros_per_segment, 1), grad), array_ops.zeros_like(grad), grad)
    non_zero = where_v2(is_zero, array_ops.ones_like(data), data)
    non_zero_product = segment_ops.unsorted_segment_prod(non_zero, ids, num_segments)
    clipped = math_ops.maximum(ids, 0)
    others = where_v2(is_zero, gather(non_zero_product, clipped), gather(product, clipped) / data)
    return _gather_drop_negatives(grad, ids)[0] * others


@RegisterGradient("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(op, grad):
    data, ids, num_segments = op._inputs
    return [_prod_grad(data, ids, num_segments, op._outputs[0], grad), None, None]


@RegisterGradient("SegmentProd")
def _segment_prod_grad(op, grad):
    data, ids = op._inputs
    return [_prod_grad(data, ids, array_ops.shape(op._outputs[0])[0], op._outputs[0], grad), None]


# --- sparse segments: the rows data[indices[j]] get segment_ids[j]'s gradient row, summed per data row -------------
def _sparse_grad(op, grad, scale=None):
    data, indices, ids = op._inputs[:3]
    grad = _dense(grad)
    rows = gather(grad, ids)
    if scale is not None:
        counts = segment_ops.unsorted_segment_sum(array_ops.ones_like(ids, dtype=grad.dtype), ids,
                                                  array_ops.shape(grad)[0])
        rows = rows * _broadcastable(gather(scale(math_ops.maximum(counts, 1)), ids), rows)
    summed = segment_ops.unsorted_segment_sum(rows, indices, array_ops.shape(data)[0])
    return [summed] + [None] * (len(op._inputs) - 1)


for _suffix in ("", "WithNumSegments"):
    RegisterGradient(f"SparseSegmentSum{_suffix}")(_sparse_grad)
    RegisterGradient(f"SparseSegmentMean{_suffix}")(lambda op, grad: _sparse_grad(op, grad, math_ops.reciprocal))
    RegisterGradient(f"SparseSegmentSqrtN{_suffix}")(lambda op, grad: _sparse_grad(op, grad, math_ops.rsqrt))
