"""tf.sparse: TF 1.15's sparse namespace, for the names adplace has (the ops live in adplace.ops.sparse_ops).

    tf.sparse.to_dense(tf.sparse.reorder(st))     # tf.sparse_tensor_to_dense(tf.sparse_reorder(st))
"""
from adplace.framework.sparse_tensor import SparseTensor
from adplace.ops.sparse_ops import (from_dense, sparse_add as add, sparse_placeholder as placeholder,
                                    sparse_reduce_sum as reduce_sum, sparse_reorder as reorder,
                                    sparse_reshape as reshape, sparse_retain as retain,
                                    sparse_tensor_dense_matmul as sparse_dense_matmul,
                                    sparse_tensor_to_dense as to_dense)
from adplace.ops.segment_ops import (sparse_segment_mean as segment_mean, sparse_segment_sqrt_n as segment_sqrt_n,
                                     sparse_segment_sum as segment_sum)

matmul = sparse_dense_matmul

__all__ = ["SparseTensor", "add", "from_dense", "matmul", "placeholder", "reduce_sum", "reorder", "reshape", "retain",
           "segment_mean", "segment_sqrt_n", "segment_sum", "sparse_dense_matmul", "to_dense"]
