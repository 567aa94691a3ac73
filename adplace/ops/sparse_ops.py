"""SparseTensor construction and layout (TF's sparse_ops, first half): tf.sparse_placeholder, to and from dense
tensors, reordering, reshaping, retaining, resetting the shape, filling empty rows, merging ids, indicators and
transposes. These ops move or select a SparseTensor's entries without doing arithmetic on its values; that lives in
sparse_math_ops.py, joining and cutting in sparse_slicing_ops.py. The checks and conversion every sparse op module
shares (convert_to_sparse_tensor, with_rank, check_ranks) are here too, since the other two build on this one.
Gradients are in sparse_grad.py, kernels in adplace/kernels/sparse.py.

    st = tf.SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [2, 3])
    tf.sparse_tensor_to_dense(st)                     # [[1, 0, 0], [0, 0, 2]]
    tf.sparse_reorder(st).indices                     # [[0, 0], [1, 2]]
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.sparse_tensor import SparseTensor, SparseTensorValue
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.ops import (array_ops, check_ops, control_flow_ops, math_ops, reduction_ops, selection_ops,
                         slicing_ops)
from adplace.ops.op_builder import (apply_op, apply_op_1, check_dtype, check_same_dtype, constant_value,
                                    shape_from_tensor, shapes_text)

INDEX_TYPES = (_dtypes.int32, _dtypes.int64)


def error_context(name: str, op_type: str, inputs) -> str:
    """The end of TF's shape-inference errors: the op's name and type and its input shapes."""
    return f" for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}."


def with_rank(t: Tensor, rank: int, name: str, op_type: str, inputs) -> tuple | None:
    """t's static dims, checked to have `rank` (TF's WithRank error) when the rank is known."""
    dims = t._shape.as_tuple()
    if dims is not None and len(dims) != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {len(dims)}{error_context(name, op_type, inputs)}")
    return dims


def check_ranks(op_type: str, inputs, ranks: tuple, name: str) -> None:
    """TF's WithRank checks of the leading inputs (indices, values, shape, ...)."""
    for t, rank in zip(inputs, ranks):
        with_rank(t, rank, name, op_type, inputs)


def convert_to_sparse_tensor(sp_input) -> SparseTensor:
    """A SparseTensor from a SparseTensor or SparseTensorValue; TypeError for anything else, as TF."""
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError("Input must be a SparseTensor.")
    return sp_input


# --- SparseToDense ---------------------------------------------------------------------------------------------------
def _sparse_to_dense_infer(inputs, attrs, name):
    indices, output_shape, values, default = inputs
    check_dtype("SparseToDense", "sparse_indices", indices._dtype, INDEX_TYPES)
    check_same_dtype("SparseToDense", [indices, output_shape], ("sparse_indices", "output_shape"))
    check_same_dtype("SparseToDense", [values, default], ("sparse_values", "default_value"))
    with_rank(output_shape, 1, name, "SparseToDense", inputs)
    return [(values._dtype.base_dtype, shape_from_tensor(output_shape))]


register_op("SparseToDense", _sparse_to_dense_infer)


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0, validate_indices: bool = True,
                    name: str | None = None) -> Tensor:
    """A dense tensor of shape `output_shape` holding `sparse_values` at `sparse_indices`, `default_value` elsewhere
    (tf.sparse_to_dense).

    `sparse_indices` is a scalar, a vector (indices of a 1-D output) or an [N, rank] matrix; `sparse_values` is [N]
    or a scalar used at every index. With `validate_indices` the indices must be in bounds, sorted and unique
    (InvalidArgumentError "indices[1] = [0,5] is out of bounds: need 0 <= index < [2,3]").

        tf.sparse_to_dense([1, 3], [5], 1.0)     # [0., 1., 0., 1., 0.]
    """
    with name_scope(name, "SparseToDense", [sparse_indices, output_shape, sparse_values, default_value]) as scope:
        indices = convert_to_tensor(sparse_indices, name="sparse_indices")
        shape = convert_to_tensor(output_shape, name="output_shape",
                                  dtype=None if isinstance(output_shape, Tensor) else indices.dtype)
        values = convert_to_tensor(sparse_values, name="sparse_values")
        default = convert_to_tensor(default_value, name="default_value",
                                    dtype=None if isinstance(default_value, Tensor) else values.dtype)
        return apply_op_1("SparseToDense", [indices, shape, values, default],
                          {"validate_indices": bool(validate_indices), "T": values.dtype.base_dtype,
                           "Tindices": indices.dtype.base_dtype}, name=scope)


def sparse_tensor_to_dense(sp_input, default_value=0, validate_indices: bool = True, name: str | None = None):
    """The dense tensor `sp_input` describes, `default_value` where it has no value (tf.sparse_tensor_to_dense,
    tf.sparse.to_dense). Indices must be sorted and unique when `validate_indices` (tf.sparse_reorder sorts them).

        tf.sparse_tensor_to_dense(tf.SparseTensor([[0, 1]], [7], [2, 2]))   # [[0, 7], [0, 0]]
    """
    sp_input = convert_to_sparse_tensor(sp_input)
    return sparse_to_dense(sp_input.indices, sp_input.dense_shape, sp_input.values, default_value=default_value,
                           validate_indices=validate_indices, name=name)


# --- SparseReorder ---------------------------------------------------------------------------------------------------
def _reorder_infer(inputs, attrs, name):
    indices, values, shape = inputs
    check_dtype("SparseReorder", "input_indices", indices._dtype, (_dtypes.int64,))
    check_dtype("SparseReorder", "input_shape", shape._dtype, (_dtypes.int64,))
    check_ranks("SparseReorder", inputs, (2, 1, 1), name)
    return [(_dtypes.int64, indices._shape), (values._dtype.base_dtype, values._shape)]


register_op("SparseReorder", _reorder_infer)


def _static_dense_shape(sp_input: SparseTensor):
    """The dense shape as a Python list when it is fully known while building (TF then uses it as a constant, so the
    result's `shape` stays known), else an identity of `dense_shape`."""
    if sp_input.shape.is_fully_defined():
        return sp_input.shape.as_list()
    return array_ops.identity(sp_input.dense_shape)


def sparse_reorder(sp_input, name: str | None = None) -> SparseTensor:
    """`sp_input` with its entries in row-major (lexicographic) index order (tf.sparse_reorder, tf.sparse.reorder).

        tf.sparse_reorder(tf.SparseTensor([[1, 0], [0, 2]], [1, 2], [2, 3])).indices   # [[0, 2], [1, 0]]
    """
    sp_input = convert_to_sparse_tensor(sp_input)
    reorder = apply_op("SparseReorder", [sp_input.indices, sp_input.values, sp_input.dense_shape],
                       {"T": sp_input.dtype.base_dtype}, name=name or "SparseReorder")
    return SparseTensor(reorder._outputs[0], reorder._outputs[1], _static_dense_shape(sp_input))


# --- SparseReshape ---------------------------------------------------------------------------------------------------
def _reshape_infer(inputs, attrs, name):
    indices, shape, new_shape = inputs
    for arg, t in (("input_indices", indices), ("input_shape", shape), ("new_shape", new_shape)):
        check_dtype("SparseReshape", arg, t._dtype, (_dtypes.int64,))
    check_ranks("SparseReshape", inputs, (2, 1, 1), name)
    rank = new_shape._shape.as_tuple()[0] if new_shape._shape.ndims else None
    return [(_dtypes.int64, TensorShape([indices._shape.as_tuple()[0] if indices._shape.ndims else None, rank])),
            (_dtypes.int64, TensorShape([rank]))]


register_op("SparseReshape", _reshape_infer)


def _static_reshape(old: TensorShape, new) -> list | None:
    """The new dense shape when the old one and the requested one are known while building (-1 inferred)."""
    if new is None or not old.is_fully_defined():
        return None
    new = [int(d) for d in np.reshape(new, [-1])]
    if new.count(-1) > 1:
        raise ValueError(f"At most one dimension can be inferred (-1). Found: {np.asarray(new)}")
    size, known = old.num_elements(), int(np.prod([d for d in new if d != -1]))
    if new.count(-1) == 1 and known and size % known == 0:
        new[new.index(-1)] = size // known
    if -1 in new or int(np.prod(new)) != size:
        raise ValueError(f"Cannot reshape a tensor with {size} elements to shape {new} "
                         f"({int(np.prod(new))} elements).")
    return new


def sparse_reshape(sp_input, shape, name: str | None = None) -> SparseTensor:
    """`sp_input` as a SparseTensor of another dense shape with the same number of elements (one -1 is inferred),
    its entries in the same order (tf.sparse_reshape, tf.sparse.reshape).

        tf.sparse_reshape(tf.SparseTensor([[1, 2]], [5], [2, 3]), [-1]).indices   # [[5]]
    """
    sp_input = convert_to_sparse_tensor(sp_input)
    shape = math_ops.cast(shape, _dtypes.int64)
    with name_scope(name, "SparseReshape", [sp_input.indices, sp_input.values]) as scope:
        reshape = apply_op("SparseReshape", [sp_input.indices, sp_input.dense_shape, shape], {}, name=scope)
        static = _static_reshape(sp_input.shape, constant_value(shape))
        return SparseTensor(reshape._outputs[0], array_ops.identity(sp_input.values),
                            reshape._outputs[1] if static is None else static)


# --- SparseFillEmptyRows ---------------------------------------------------------------------------------------------
def _fill_empty_rows_infer(inputs, attrs, name):
    indices, values, shape, default_value = inputs
    check_dtype("SparseFillEmptyRows", "indices", indices._dtype, (_dtypes.int64,))
    check_dtype("SparseFillEmptyRows", "dense_shape", shape._dtype, (_dtypes.int64,))
    check_same_dtype("SparseFillEmptyRows", [values, default_value], ("values", "default_value"))
    check_ranks("SparseFillEmptyRows", inputs, (2, 1, 1, 0), name)
    rank = indices._shape.as_tuple()[1] if indices._shape.ndims else None
    dense_rows = shape_from_tensor(shape)
    rows = dense_rows.as_tuple()[0] if dense_rows.ndims else None
    entries = indices._shape.as_tuple()[0] if indices._shape.ndims else None
    return [(_dtypes.int64, TensorShape([None, rank])), (values._dtype.base_dtype, TensorShape([None])),
            (_dtypes.bool, TensorShape([rows])), (_dtypes.int64, TensorShape([entries]))]


def _fill_empty_rows_grad_infer(inputs, attrs, name):
    reverse_index_map, grad_values = inputs
    check_dtype("SparseFillEmptyRowsGrad", "reverse_index_map", reverse_index_map._dtype, (_dtypes.int64,))
    check_ranks("SparseFillEmptyRowsGrad", inputs, (1, 1), name)
    return [(grad_values._dtype.base_dtype, reverse_index_map._shape),
            (grad_values._dtype.base_dtype, TensorShape([]))]


register_op("SparseFillEmptyRows", _fill_empty_rows_infer)
register_op("SparseFillEmptyRowsGrad", _fill_empty_rows_grad_infer)


def sparse_fill_empty_rows(sp_input, default_value, name: str | None = None) -> tuple[SparseTensor, Tensor]:
    """A copy of the 2-D (or higher) `sp_input` with `default_value` at [row, 0, ...] of every row that has no
    value, ordered by row, and the bool vector saying which rows were empty (tf.sparse_fill_empty_rows,
    tf.sparse.fill_empty_rows). The gradient flows to the values and to `default_value`.

        sp, empty = tf.sparse_fill_empty_rows(tf.SparseTensor([[1, 2]], [5], [3, 4]), -1)
        # sp.indices [[0, 0], [1, 2], [2, 0]], sp.values [-1, 5, -1]; empty [True, False, True]
    """
    sp_input = convert_to_sparse_tensor(sp_input)
    with name_scope(name, "SparseFillEmptyRows", [sp_input.indices, sp_input.values, sp_input.dense_shape]):
        default_value = convert_to_tensor(default_value, dtype=sp_input.values.dtype, name="default_value")
        op = apply_op("SparseFillEmptyRows", [sp_input.indices, sp_input.values, sp_input.dense_shape,
                                              default_value], {"T": sp_input.dtype.base_dtype})
        return SparseTensor(op._outputs[0], op._outputs[1], sp_input.dense_shape), op._outputs[2]


# --- composites: indicator, merge, reset_shape, transpose ---------------------------------------------------------
def sparse_merge(sp_ids, sp_values, vocab_size, name: str | None = None, already_sorted: bool = False):
    """One SparseTensor from a batch of feature ids and their values (tf.sparse_merge, tf.sparse.merge): the last
    index column of `sp_ids` is replaced by its ids (several id SparseTensors and vocabulary sizes add one column
    each), the values are `sp_values.values`, and the last dense dimension becomes `vocab_size`. The result is
    reordered row-major unless `already_sorted`.

        ids = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], [4, 1, 3], [2, 2])
        vals = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], [0.5, 2.0, 3.0], [2, 2])
        tf.sparse_merge(ids, vals, 5)     # indices [[0, 4], [1, 1], [1, 3]], values [0.5, 2, 3], shape [2, 5]

    Raises:
      TypeError: `vocab_size` is not a Tensor or int (a list of them for a list of `sp_ids`).
      ValueError: `sp_ids` and `vocab_size` are lists of different lengths.
    """
    if isinstance(sp_ids, (SparseTensor, SparseTensorValue)):
        if not isinstance(vocab_size, (Tensor, int, np.integer)):
            raise TypeError(f"vocab_size has to be a Tensor or Python int. Found {type(vocab_size)}")
        sp_ids, vocab_size = [sp_ids], [vocab_size]
    else:
        if not isinstance(sp_ids, (list, tuple)):
            raise TypeError(f"sp_ids has to be a SparseTensor or list thereof. Found {type(sp_ids)}")
        if not isinstance(vocab_size, (list, tuple)):
            raise TypeError(f"vocab_size has to be a list of Tensors or Python ints. Found {type(vocab_size)}")
        for size in vocab_size:
            if not isinstance(size, (Tensor, int, np.integer)):
                raise TypeError(f"vocab_size has to be a list of Tensors or Python ints. Found {type(size)}")
    if len(sp_ids) != len(vocab_size):
        raise ValueError("sp_ids and vocab_size have to have equal lengths.")
    with name_scope(name, "SparseMerge", [sp.values for sp in sp_ids if isinstance(sp, SparseTensor)]):
        sp_ids = [convert_to_sparse_tensor(sp) for sp in sp_ids]
        sp_values = convert_to_sparse_tensor(sp_values)
        ids = [array_ops.expand_dims(math_ops.cast(sp.values, _dtypes.int64), 1) for sp in sp_ids]
        sizes = [math_ops.cast(convert_to_tensor(size), _dtypes.int64) for size in vocab_size]
        new_indices = array_ops.concat([sp_ids[0].indices[:, :-1]] + ids, 1)
        new_shape = array_ops.concat([sp_ids[0].dense_shape[:-1], array_ops.stack(sizes)], 0)
        static = sp_ids[0].shape[:-1].concatenate([constant_value(size) for size in sizes]) \
            if sp_ids[0].shape.ndims is not None else unknown_shape()
        result = SparseTensor(new_indices, sp_values.values, new_shape)
        if not already_sorted:
            ordered = sparse_reorder(result)
            result = SparseTensor(ordered.indices, ordered.values, new_shape)
        result.set_shape(static)
        return result


def sparse_to_indicator(sp_input, vocab_size, name: str | None = None) -> Tensor:
    """A dense bool tensor marking the ids of a SparseTensor: for dense shape [D0, ..., Dn, K], the result has shape
    [D0, ..., Dn, vocab_size] and is True at [d0, ..., dn, id] for each id in row [d0, ..., dn]
    (tf.sparse_to_indicator, tf.sparse.to_indicator). Repeated ids are allowed.

        tf.sparse_to_indicator(tf.SparseTensor([[0, 0], [1, 0], [1, 1]], [2, 0, 2], [2, 2]), 3)
        # [[False, False, True], [True, False, True]]
    """
    sp_input = convert_to_sparse_tensor(sp_input)
    with name_scope(name, "SparseToIndicator", [sp_input.indices, sp_input.values]) as scope:
        entries = array_ops.shape(sp_input.indices)[0]
        trues = array_ops.fill(array_ops.expand_dims(entries, 0), True)
        merged = sparse_merge(sp_input, SparseTensor(sp_input.indices, trues, sp_input.dense_shape), vocab_size,
                              scope)
        return sparse_tensor_to_dense(merged, default_value=False, validate_indices=False, name=scope)


def sparse_reset_shape(sp_input, new_shape=None) -> SparseTensor:
    """`sp_input` with the same indices and values and another dense shape (tf.sparse_reset_shape,
    tf.sparse.reset_shape): `new_shape`, which must be at least as large in every dimension, or by default the tight
    bounding box of the indices (all zeros when there are none).

        tf.sparse_reset_shape(tf.SparseTensor([[0, 2]], [1], [3, 5])).dense_shape   # [1, 3]

    Raises:
      ValueError: while building, `new_shape` has another rank or (both shapes known) a smaller dimension; when they
        are known only at run time, InvalidArgumentError "x == y did not hold" / "x <= y did not hold".
    """
    sp_input = convert_to_sparse_tensor(sp_input)
    in_indices, in_values = array_ops.identity(sp_input.indices), array_ops.identity(sp_input.values)
    in_shape = array_ops.identity(sp_input.dense_shape)
    if new_shape is None:
        bound = reduction_ops.reduce_max(in_indices, axis=0)
        output_shape = math_ops.maximum(convert_to_tensor(0, dtype=_dtypes.int64), bound + array_ops.ones_like(in_shape))
        return SparseTensor(in_indices, in_values, output_shape)
    output_shape = convert_to_tensor(new_shape)
    output_shape.shape.assert_has_rank(1)
    output_shape = math_ops.cast(output_shape, _dtypes.int64)
    if output_shape.shape.ndims is not None:
        output_shape.shape.dims[0].merge_with(in_shape.shape.with_rank(1).dims[0])
    requested = constant_value(output_shape)
    if requested is not None and sp_input.shape.is_fully_defined():
        current = np.array(sp_input.shape.as_list())
        if not np.all(current <= requested):
            raise ValueError(f"Requested new_shape should have dimension sizes >= sp_input.shape.  Found new_shape "
                             f"({current}), sp_input.shape ({requested}).")
        return SparseTensor(in_indices, in_values, requested)
    output_shape = control_flow_ops.with_dependencies(
        [check_ops.assert_equal(array_ops.shape(in_shape), array_ops.shape(output_shape))], output_shape)
    output_shape = control_flow_ops.with_dependencies([check_ops.assert_less_equal(in_shape, output_shape)],
                                                      output_shape)
    return SparseTensor(in_indices, in_values, output_shape)


def sparse_transpose(sp_input, perm=None, name: str | None = None) -> SparseTensor:
    """`sp_input` with its dimensions permuted: dimension i of the result is dimension perm[i] of the input (reversed
    by default), in row-major order (tf.sparse_transpose, tf.sparse.transpose).

        tf.sparse_transpose(tf.SparseTensor([[0, 2], [1, 0]], [5, 6], [2, 3])).indices   # [[0, 1], [2, 0]]
    """
    sp_input = convert_to_sparse_tensor(sp_input)
    with name_scope(name, "SparseTranspose", [sp_input.indices, sp_input.values]):
        if perm is None:
            rank = sp_input.shape.ndims
            if rank is not None:
                perm = list(range(rank - 1, -1, -1))
            else:
                rank = array_ops.size(sp_input.dense_shape)
                perm = (rank - 1) - math_ops.range(0, rank, 1)
        transposed_indices = array_ops.transpose(slicing_ops.gather(array_ops.transpose(sp_input.indices), perm))
        static_perm = constant_value(convert_to_tensor(perm))
        if static_perm is not None and sp_input.shape.is_fully_defined():
            old = sp_input.shape.as_list()
            dense_shape = [old[int(p)] for p in np.reshape(static_perm, [-1])]
        else:
            dense_shape = slicing_ops.gather(sp_input.dense_shape, perm)
        return sparse_reorder(SparseTensor(transposed_indices, sp_input.values, dense_shape))


# --- composites: retain, from_dense, placeholders --------------------------------------------------------------------
def sparse_retain(sp_input, to_retain) -> SparseTensor:
    """The entries of `sp_input` where the bool vector `to_retain` (one per entry) is True (tf.sparse_retain,
    tf.sparse.retain).

        tf.sparse_retain(tf.SparseTensor([[0, 1], [1, 0]], [5, 6], [2, 2]), [False, True]).values   # [6]
    """
    sp_input = convert_to_sparse_tensor(sp_input)
    to_retain = convert_to_tensor(to_retain)
    retain_shape = to_retain.get_shape()
    retain_shape.assert_has_rank(1)
    if sp_input.values.get_shape().ndims is not None:
        sp_input.values.get_shape().dims[0].merge_with(retain_shape.dims[0])
    where_true = array_ops.reshape(selection_ops.where(to_retain), [-1])
    return SparseTensor(slicing_ops.gather(sp_input.indices, where_true),
                        slicing_ops.gather(sp_input.values, where_true), array_ops.identity(sp_input.dense_shape))


def gather_at(dense: Tensor, coordinates: Tensor, dense_shape: Tensor) -> Tensor:
    """dense[tuple(coordinates[i])] for each row of the int64 [N, rank] `coordinates` (TF's gather_nd for full
    indices), as a gather from the flattened tensor: sparse gradients and from_dense read dense values this way."""
    strides = math_ops.cumprod(dense_shape, exclusive=True, reverse=True)
    flat = reduction_ops.reduce_sum(coordinates * strides, 1)
    return slicing_ops.gather(array_ops.reshape(dense, [-1]), flat)


def from_dense(tensor, name: str | None = None) -> SparseTensor:
    """The non-zero elements of a dense tensor as a SparseTensor, in row-major order (tf.sparse.from_dense).

        tf.sparse.from_dense([[0, 3], [4, 0]]).indices   # [[0, 1], [1, 0]]
    """
    with name_scope(name, "dense_to_sparse", [tensor]):
        tensor = convert_to_tensor(tensor)
        indices = selection_ops.where(math_ops.not_equal(tensor, array_ops.zeros_like(tensor)))
        dense_shape = array_ops.shape(tensor, out_type=_dtypes.int64)
        return SparseTensor(indices, gather_at(tensor, indices, dense_shape), dense_shape)


def sparse_placeholder(dtype, shape=None, name: str | None = None) -> SparseTensor:
    """A SparseTensor to feed (tf.sparse_placeholder, tf.sparse.placeholder): placeholders `name/values`,
    `name/indices` and `name/shape` (a constant when `shape` is fully known; fed or not, `shape` sets its `.shape`).

        sp = tf.sparse_placeholder(tf.float32, shape=[None, 3])
        sess.run(tf.sparse_reduce_sum(sp), {sp: ([[0, 1]], [2.0], [4, 3])})   # 2.0
    """
    shape_name = None if name is None else f"{name}/shape"
    static = TensorShape(shape)
    rank = static.ndims
    if static.is_fully_defined():
        dense_shape = convert_to_tensor(np.asarray(static.as_list(), np.int64), name=shape_name)
    else:
        dense_shape = array_ops.placeholder(_dtypes.int64, shape=[rank], name=shape_name)
    result = SparseTensor(
        values=array_ops.placeholder(dtype, shape=[None], name=None if name is None else f"{name}/values"),
        indices=array_ops.placeholder(_dtypes.int64, shape=[None, rank],
                                      name=None if name is None else f"{name}/indices"),
        dense_shape=dense_shape)
    result.set_shape(static)
    return result
