"""Joining and cutting SparseTensors along a dimension of their dense shape (TF's sparse_ops): tf.sparse_concat,
tf.sparse_slice and tf.sparse_split, with the SparseSliceGrad op their gradient uses (sparse_grad.py). Kept apart
from sparse_ops.py (one SparseTensor's layout) because each handles several SparseTensors at once; kernels in
adplace/kernels/sparse.py.

    a = tf.SparseTensor([[0, 1]], [1], [2, 2]); b = tf.SparseTensor([[1, 0]], [2], [2, 3])
    tf.sparse_concat(1, [a, b])      # indices [[0, 1], [1, 2]], dense_shape [2, 5]
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.registry import register_op
from adplace.framework.sparse_tensor import SparseTensor
from adplace.framework.tensor_shape import TensorShape
from adplace.ops import array_ops, reduction_ops
from adplace.ops.op_builder import apply_op, check_dtype, check_same_dtype, constant_value, deprecated_argument_lookup
from adplace.ops.sparse_ops import check_ranks, convert_to_sparse_tensor, error_context


# --- SparseConcat ----------------------------------------------------------------------------------------------------
def _concat_infer(inputs, attrs, name):
    """TF's shape function: entry counts add up, index columns and dense-shape lengths merge (ValueError on a rank
    mismatch while building)."""
    count = attrs["N"]
    indices, values, shapes = inputs[:count], inputs[count:2 * count], inputs[2 * count:]
    for t in indices:
        check_dtype("SparseConcat", "indices", t._dtype, (_dtypes.int64,))
    for t in shapes:
        check_dtype("SparseConcat", "shapes", t._dtype, (_dtypes.int64,))
    check_same_dtype("SparseConcat", values, tuple("values" for _ in values))
    check_ranks("SparseConcat", inputs, (2,) * count + (1,) * (2 * count), name)
    rows, columns, shape = 0, TensorShape([None]), TensorShape([None])
    try:
        for ind, val, shp in zip(indices, values, shapes):
            ind_shape = ind._shape.with_rank(2) if ind._shape.ndims is None else ind._shape
            entries = ind_shape.dims[0].merge_with(val._shape.with_rank(1).dims[0])
            rows = None if rows is None or entries.value is None else rows + entries.value
            columns = columns.merge_with(TensorShape([ind_shape.dims[1]]))
            shape = shape.merge_with(shp._shape.with_rank(1))
    except ValueError as error:
        raise ValueError(f"{error}{error_context(name, 'SparseConcat', inputs)}") from error
    return [(_dtypes.int64, TensorShape([rows, columns.dims[0]])), (values[0]._dtype.base_dtype, TensorShape([rows])),
            (_dtypes.int64, shape)]


register_op("SparseConcat", _concat_infer)


def sparse_concat(axis, sp_inputs, name: str | None = None, expand_nonconcat_dim: bool = False, concat_dim=None,
                  expand_nonconcat_dims=None) -> SparseTensor:
    """The SparseTensors `sp_inputs` joined along `axis` of their dense shapes, in row-major order (tf.sparse_concat,
    tf.sparse.concat; TF1 alias `concat_dim`). Other dimensions must match, unless `expand_nonconcat_dim`, which
    widens every input to the largest size.

        a = tf.SparseTensor([[0, 1]], [1], [2, 2]); b = tf.SparseTensor([[1, 0]], [2], [2, 3])
        tf.sparse_concat(1, [a, b])      # indices [[0, 1], [1, 2]], dense_shape [2, 5]
    """
    if expand_nonconcat_dims is not None:
        expand_nonconcat_dim = expand_nonconcat_dims
    axis = deprecated_argument_lookup("axis", axis, "concat_dim", concat_dim)
    if not isinstance(sp_inputs, (list, tuple)):
        raise TypeError("Inputs must be a list or tuple.")
    sp_inputs = [convert_to_sparse_tensor(sp) for sp in sp_inputs]
    if len(sp_inputs) == 1:
        return sp_inputs[0]
    shapes = [sp.dense_shape for sp in sp_inputs]
    if expand_nonconcat_dim:
        widest = reduction_ops.reduce_max(array_ops.concat([array_ops.reshape(s, [1, -1]) for s in shapes], 0), 0)
        shapes = [array_ops.concat([widest[:axis], s[-1:] if axis == -1 else s[axis:axis + 1],
                                    widest[:0] if axis == -1 else widest[axis + 1:]], 0) for s in shapes]
    op = apply_op("SparseConcat", [sp.indices for sp in sp_inputs] + [sp.values for sp in sp_inputs] + shapes,
                  {"N": len(sp_inputs), "concat_dim": int(axis), "T": sp_inputs[0].dtype.base_dtype},
                  name=name or "SparseConcat")
    known = [constant_value(s) for s in shapes]
    dense_shape = op._outputs[2]
    if all(k is not None for k in known):
        dense_shape = [int(d) for d in known[0]]
        dense_shape[axis] = sum(int(k[axis]) for k in known)
    return SparseTensor(op._outputs[0], op._outputs[1], dense_shape)


# --- SparseSlice, SparseSplit ---------------------------------------------------------------------------------------
def _slice_infer(inputs, attrs, name):
    indices, values, shape, start, size = inputs
    for arg, t in (("indices", indices), ("shape", shape), ("start", start), ("size", size)):
        check_dtype("SparseSlice", arg, t._dtype, (_dtypes.int64,))
    check_ranks("SparseSlice", inputs, (2, 1, 1, 1, 1), name)
    rank = shape._shape.as_tuple()[0] if shape._shape.ndims else None
    return [(_dtypes.int64, TensorShape([None, rank])), (values._dtype.base_dtype, TensorShape([None])),
            (_dtypes.int64, TensorShape([rank]))]


def _slice_grad_infer(inputs, attrs, name):
    grad, input_indices, input_start, output_indices = inputs
    check_ranks("SparseSliceGrad", inputs, (1, 2, 1, 2), name)
    entries = input_indices._shape.as_tuple()[0] if input_indices._shape.ndims else None
    return [(grad._dtype.base_dtype, TensorShape([entries]))]


def _split_infer(inputs, attrs, name):
    split_dim, indices, values, shape = inputs
    check_dtype("SparseSplit", "split_dim", split_dim._dtype, (_dtypes.int64,))
    check_ranks("SparseSplit", inputs, (0, 2, 1, 1), name)
    rank = shape._shape.as_tuple()[0] if shape._shape.ndims else None
    count = attrs["num_split"]
    return ([(_dtypes.int64, TensorShape([None, rank]))] * count +
            [(values._dtype.base_dtype, TensorShape([None]))] * count + [(_dtypes.int64, TensorShape([rank]))] * count)


register_op("SparseSlice", _slice_infer)
register_op("SparseSliceGrad", _slice_grad_infer)
register_op("SparseSplit", _split_infer)


def sparse_slice(sp_input, start, size, name: str | None = None) -> SparseTensor:
    """The entries of `sp_input` inside the box [start, start + size) of its dense shape (clipped to it), their
    indices counted from `start` (tf.sparse_slice, tf.sparse.slice). The gradient flows to the values kept.

        tf.sparse_slice(tf.SparseTensor([[0, 1], [1, 4]], [1, 2], [2, 7]), [0, 3], [2, 4])
        # indices [[1, 1]], values [2], dense_shape [2, 4]
    """
    sp_input = convert_to_sparse_tensor(sp_input)
    start = convert_to_tensor(start, _dtypes.int64)
    size = convert_to_tensor(size, _dtypes.int64)
    with name_scope(name, "SparseSlice", [sp_input.indices, sp_input.values]) as scope:
        op = apply_op("SparseSlice", [sp_input.indices, sp_input.values, sp_input.dense_shape, start, size],
                      {"T": sp_input.dtype.base_dtype}, name=scope)
        return SparseTensor(*op._outputs)


def sparse_split(keyword_required=None, sp_input=None, num_split=None, axis=None, name: str | None = None,
                 split_dim=None) -> list:
    """`sp_input` cut along `axis` into `num_split` SparseTensors, the first (size % num_split) one longer
    (tf.sparse_split, tf.sparse.split; keyword arguments only, TF1 alias `split_dim`).

        a, b = tf.sparse_split(sp_input=tf.SparseTensor([[0, 1], [1, 4]], [1, 2], [2, 7]), num_split=2, axis=1)
        # a: indices [[0, 1]], dense_shape [2, 4]; b: indices [[1, 0]], dense_shape [2, 3]

    Raises:
      ValueError: an argument is given by position, or sp_input, num_split or axis is missing.
    """
    if keyword_required is not None:
        raise ValueError("Keyword arguments are required for this function.")
    if sp_input is None:
        raise ValueError("sp_input is required")
    if num_split is None:
        raise ValueError("num_split is required")
    axis = deprecated_argument_lookup("axis", axis, "split_dim", split_dim)
    if axis is None:
        raise ValueError("axis is required")
    sp_input = convert_to_sparse_tensor(sp_input)
    axis = convert_to_tensor(axis, _dtypes.int64, name="split_dim")
    op = apply_op("SparseSplit", [axis, sp_input.indices, sp_input.values, sp_input.dense_shape],
                  {"num_split": int(num_split), "T": sp_input.dtype.base_dtype}, name=name or "SparseSplit")
    outputs, count = op._outputs, int(num_split)
    return [SparseTensor(outputs[i], outputs[count + i], outputs[2 * count + i]) for i in range(count)]
