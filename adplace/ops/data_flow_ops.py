"""DynamicPartition and DynamicStitch / ParallelDynamicStitch: split rows into lists by a partition id, and
interleave lists of rows back into one tensor by their target indices (TF's data_flow_ops). Gradients are in
data_flow_grad.py. A sharded tf.nn.embedding_lookup is built from them.

    parts = tf.dynamic_partition([10, 20, 30, 40], [1, 0, 1, 1], 2)          # [[20], [10, 30, 40]]
    tf.dynamic_stitch([[1], [0, 2, 3]], parts)                             # [10, 20, 30, 40]
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.ops.op_builder import apply_op, apply_op_1, check_dtype, check_same_dtype, constant_value, shapes_text


def _merge_prefix(data: Tensor, prefix: Tensor, where: str) -> tuple | None:
    """TF's MergePrefix: data's dims after `prefix`'s rank (None if a rank is unknown); ValueError on a mismatch."""
    d_dims, p_dims = data._shape.as_tuple(), prefix._shape.as_tuple()
    if d_dims is None or p_dims is None:
        return None
    if len(d_dims) < len(p_dims):
        raise ValueError(f"Shape must be at least rank {len(p_dims)} but is rank {len(d_dims)}{where}")
    for d, p in zip(d_dims, p_dims):
        if d is not None and p is not None and d != p:
            raise ValueError(f"Dimensions must be equal, but are {d} and {p}{where}")
    return d_dims[len(p_dims):]


# --- DynamicPartition -----------------------------------------------------------------------------------------------
def _dynamic_partition_infer(inputs, attrs, name):
    data, partitions = inputs
    check_dtype("DynamicPartition", "partitions", partitions._dtype, (_dtypes.int32,))
    where = f" for '{name}' (op: 'DynamicPartition') with input shapes: {shapes_text(inputs)}."
    rest = _merge_prefix(data, partitions, where) if partitions._shape.ndims is not None else None
    shape = unknown_shape() if rest is None else TensorShape((None,) + rest)
    return [(data._dtype.base_dtype, shape)] * attrs["num_partitions"]


register_op("DynamicPartition", _dynamic_partition_infer)


def dynamic_partition(data, partitions, num_partitions: int, name: str | None = None) -> list[Tensor]:
    """Split `data` into `num_partitions` tensors: the slices data[js...] with partitions[js...] == i, in order,
    make outputs[i] (tf.dynamic_partition). `partitions` (int32) has the shape of a prefix of data's.

    Each output has shape [count of i in partitions] + data.shape[partitions.ndim:], its first dim known only when
    it runs. A partition id outside [0, num_partitions) is TF's InvalidArgumentError.

        tf.dynamic_partition([10, 20, 30, 40, 50], [0, 0, 1, 1, 0], 2)   # [[10, 20, 50], [30, 40]]
    """
    if int(num_partitions) < 1:
        raise ValueError(f"Attr 'num_partitions' of 'DynamicPartition' Op passed {num_partitions} less than "
                         f"minimum 1.")
    with name_scope(name, "DynamicPartition", [data, partitions]) as scope:
        data = convert_to_tensor(data, name="data")
        partitions = convert_to_tensor(partitions, name="partitions")
        return apply_op("DynamicPartition", [data, partitions],
                        {"T": data.dtype.base_dtype, "num_partitions": int(num_partitions)}, name=scope).outputs


# --- DynamicStitch, ParallelDynamicStitch ---------------------------------------------------------------------------
def _stitch_infer(op_type: str):
    def infer(inputs, attrs, name):
        n = len(inputs) // 2
        indices, data = inputs[:n], inputs[n:]
        for t in indices:
            check_dtype(op_type, "indices", t._dtype, (_dtypes.int32,))
        dtype = check_same_dtype(op_type, data, ("data",))
        where = f" for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}."
        rest, max_index = None, -1
        for ix, d in zip(indices, data):
            value = constant_value(ix)  # the row count is known only when every index is a constant
            max_index = None if value is None or max_index is None else max(max_index, int(np.max(value, initial=-1)))
            if ix._shape.ndims is None:
                continue
            tail = _merge_prefix(d, ix, where)
            if tail is not None:
                if rest is not None and not TensorShape(rest).is_compatible_with(TensorShape(tail)):
                    raise ValueError(f"Shapes must be equal rank, but are {len(rest)} and {len(tail)}{where}"
                                     if len(rest) != len(tail) else
                                     f"Dimensions must be equal, but are {rest} and {tail}{where}")
                rest = tail if rest is None else TensorShape(rest).merge_with(TensorShape(tail)).as_tuple()
        rows = None if max_index is None else max_index + 1
        return [(dtype, unknown_shape() if rest is None else TensorShape((rows,) + tuple(rest)))]
    return infer


register_op("DynamicStitch", _stitch_infer("DynamicStitch"))
register_op("ParallelDynamicStitch", _stitch_infer("ParallelDynamicStitch"))


def _stitch(op_type: str, indices, data, name: str | None) -> Tensor:
    indices, data = list(indices), list(data)
    if not indices:
        raise ValueError(f"List argument 'indices' to '{op_type}' Op with length 0 shorter than minimum length 1.")
    if len(data) != len(indices):
        raise ValueError(f"List argument 'data' to '{op_type}' Op with length {len(data)} must match length "
                         f"{len(indices)} of argument 'indices'.")
    with name_scope(name, op_type, indices + data) as scope:
        indices = [convert_to_tensor(t, name=f"indices_{i}") for i, t in enumerate(indices)]
        first = next((t for t in data if isinstance(t, Tensor)), None)
        dtype = None if first is None else first.dtype.base_dtype
        data = [convert_to_tensor(t, dtype=dtype, name=f"data_{i}") for i, t in enumerate(data)]
        return apply_op_1(op_type, indices + data, {"T": data[0].dtype.base_dtype, "N": len(indices)}, name=scope)


def dynamic_stitch(indices, data, name: str | None = None) -> Tensor:
    """Interleave the rows of the `data` tensors into one tensor: merged[indices[m][i...]] = data[m][i...]
    (tf.dynamic_stitch). The output has max(index) + 1 rows; where an index repeats, the last write wins.

        tf.dynamic_stitch([[6], [4, 1], [[5, 2], [0, 3]]],
                          [[61., 62.], [[41., 42.], [11., 12.]], [[[51., 52.], [21., 22.]], [[1., 2.], [31., 32.]]]])
        # [[1., 2.], [11., 12.], [21., 22.], [31., 32.], [41., 42.], [51., 52.], [61., 62.]]
    """
    return _stitch("DynamicStitch", indices, data, name)


def parallel_dynamic_stitch(indices, data, name: str | None = None) -> Tensor:
    """tf.dynamic_stitch where the order of repeated indices is not specified (tf.parallel_dynamic_stitch)."""
    return _stitch("ParallelDynamicStitch", indices, data, name)
