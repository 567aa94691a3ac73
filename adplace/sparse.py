"""tf.sparse: TF 1.15's sparse namespace, for the names adplace has (the ops live in adplace.ops.sparse_ops,
sparse_math_ops and sparse_slicing_ops).

    tf.sparse.to_dense(tf.sparse.reorder(st))     # tf.sparse_tensor_to_dense(tf.sparse_reorder(st))
"""
from adplace.framework.sparse_tensor import SparseTensor
from adplace.ops.sparse_math_ops import (sparse_add as add, sparse_maximum as maximum, sparse_minimum as minimum,
                                         sparse_reduce_max as reduce_max, sparse_reduce_max_sparse as reduce_max_sparse,
                                         sparse_reduce_sum as reduce_sum, sparse_reduce_sum_sparse as reduce_sum_sparse,
                                         sparse_softmax as softmax, sparse_tensor_dense_matmul as sparse_dense_matmul)
from adplace.ops.sparse_ops import (from_dense, sparse_fill_empty_rows as fill_empty_rows, sparse_merge as merge,
                                    sparse_placeholder as placeholder, sparse_reorder as reorder,
                                    sparse_reset_shape as reset_shape, sparse_reshape as reshape,
                                    sparse_retain as retain, sparse_tensor_to_dense as to_dense,
                                    sparse_to_indicator as to_indicator, sparse_transpose as transpose)
from adplace.ops.sparse_slicing_ops import sparse_concat as concat, sparse_slice as slice, sparse_split as split
from adplace.ops.segment_ops import (sparse_segment_mean as segment_mean, sparse_segment_sqrt_n as segment_sqrt_n,
                                     sparse_segment_sum as segment_sum)

matmul = sparse_dense_matmul

__all__ = ["SparseTensor", "add", "concat", "fill_empty_rows", "from_dense", "matmul", "maximum", "merge", "minimum",
           "placeholder", "reduce_max", "reduce_max_sparse", "reduce_sum", "reduce_sum_sparse", "reorder",
           "reset_shape", "reshape", "retain", "segment_mean", "segment_sqrt_n", "segment_sum", "slice", "softmax", "split",
           "sparse_dense_matmul", "to_dense", "to_indicator", "transpose"]
