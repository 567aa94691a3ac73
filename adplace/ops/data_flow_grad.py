"""Gradients of DynamicPartition and (Parallel)DynamicStitch (adplace.ops.data_flow_ops), as TF 1.x forms them.

Partitioning moves rows, so its gradient stitches the partitions' gradients back to the rows they came from;
stitching's gradient gathers each input's rows out of the output gradient (a repeated index passes the gradient to
every input that wrote it, as in TF 1.x).
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.registry import RegisterGradient
from adplace.ops import array_ops, data_flow_ops, math_ops, reduction_ops
from adplace.ops.slicing_ops import gather


@RegisterGradient("DynamicPartition")
def _dynamic_partition_grads(op, *grads):
    data, partitions = op._inputs
    prefix_shape = array_ops.shape(partitions)
    original_positions = array_ops.reshape(math_ops.range(reduction_ops.reduce_prod(prefix_shape)), prefix_shape)
    positions = data_flow_ops.dynamic_partition(original_positions, partitions, op._attrs["num_partitions"])
    stitched = data_flow_ops.parallel_dynamic_stitch(positions, [convert_to_tensor(g) for g in grads])
    return [array_ops.reshape(stitched, array_ops.shape(data)), None]


@RegisterGradient("DynamicStitch")
@RegisterGradient("ParallelDynamicStitch")
def _dynamic_stitch_grads(op, grad):
    n = len(op._inputs) // 2
    grad = convert_to_tensor(grad)  # an IndexedSlices gradient summed into the dense output gradient
    indices = [t if t.dtype.base_dtype is _dtypes.int32 else math_ops.cast(t, _dtypes.int32)
               for t in op._inputs[:n]]
    return [None] * n + [gather(grad, t) for t in indices]
