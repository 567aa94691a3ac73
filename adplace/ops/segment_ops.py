"""Segment ops: unsorted_segment_sum (UnsortedSegmentSum), which sums rows into the segments their ids name."""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.ops.math_ops import NUMERIC
from adplace.ops.op_builder import apply_op_1, check_dtype, constant_value, shapes_text


def _unsorted_segment_sum_infer(inputs, attrs, name):
    data, ids, num_t = inputs
    check_dtype("UnsortedSegmentSum", "data", data._dtype, NUMERIC)
    check_dtype("UnsortedSegmentSum", "segment_ids", ids._dtype, (_dtypes.int32, _dtypes.int64))
    check_dtype("UnsortedSegmentSum", "num_segments", num_t._dtype, (_dtypes.int32, _dtypes.int64))
    d_dims, i_dims, num = data._shape.as_tuple(), ids._shape.as_tuple(), constant_value(num_t)
    context = f" for '{name}' (op: 'UnsortedSegmentSum') with input shapes: {shapes_text(inputs)}."
    if num_t._shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {num_t._shape.ndims}{context}")
    if d_dims is None or i_dims is None:
        return [(data._dtype.base_dtype, unknown_shape())]
    if len(d_dims) < len(i_dims):
        raise ValueError(f"Shape must be at least rank {len(i_dims)} but is rank {len(d_dims)}{context}")
    for d, i in zip(d_dims, i_dims):
        if d is not None and i is not None and d != i:
            raise ValueError(f"Dimensions must be equal, but are {d} and {i}{context}")
    rows = None if num is None else int(num)
    return [(data._dtype.base_dtype, TensorShape((rows,) + d_dims[len(i_dims):]))]


register_op("UnsortedSegmentSum", _unsorted_segment_sum_infer)


def unsorted_segment_sum(data, segment_ids, num_segments, name: str | None = None) -> Tensor:
    """output[i] = sum of data[j...] over the j... with segment_ids[j...] == i (tf.unsorted_segment_sum).

    `segment_ids` has the shape of a prefix of data's; the output has shape [num_segments] + the rest of data's.
    Negative ids are dropped; an id >= num_segments is an InvalidArgumentError, as in TF.

        tf.unsorted_segment_sum([1., 2., 3.], [1, 0, 1], 2)   # [2., 4.]
    """
    with name_scope(name, "UnsortedSegmentSum", [data, segment_ids, num_segments]) as scope:
        data = convert_to_tensor(data, name="data")
        ids = convert_to_tensor(segment_ids, name="segment_ids")
        num_t = convert_to_tensor(num_segments, name="num_segments")
        return apply_op_1("UnsortedSegmentSum", [data, ids, num_t],
                          {"T": data.dtype.base_dtype, "Tindices": ids.dtype.base_dtype,
                           "Tnumsegments": num_t.dtype.base_dtype}, name=scope)


