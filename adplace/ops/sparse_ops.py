"""Sparse ops (TF's sparse_ops): tf.SparseTensor to and from dense tensors, sparse x dense products, reordering,
sums, reductions, reshapes and masks, plus tf.sparse_placeholder. Their gradients are in sparse_grad.py, their
kernels in adplace/kernels/sparse.py.

    st = tf.SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [2, 3])
    tf.sparse_tensor_to_dense(st)                     # [[1, 0, 0], [0, 0, 2]]
    tf.sparse_tensor_dense_matmul(st, tf.ones([3, 1]))  # [[1], [2]]
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
from adplace.ops import array_ops, math_ops, reduction_ops, selection_ops, slicing_ops
from adplace.ops.op_builder import (apply_op, apply_op_1, check_dtype, check_same_dtype, constant_value,
                                    deprecated_argument_lookup, shape_from_tensor, shapes_text)

_INDEX_TYPES = (_dtypes.int32, _dtypes.int64)
_MATMUL_TYPES = frozenset({_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64,
                           _dtypes.complex64, _dtypes.complex128})


def _context(name: str, op_type: str, inputs) -> str:
    return f" for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}."


def _with_rank(t: Tensor, rank: int, name: str, op_type: str, inputs) -> tuple | None:
    """t's static dims, checked to have `rank` (TF's WithRank error) when the rank is known."""
    dims = t._shape.as_tuple()
    if dims is not None and len(dims) != rank:
        raise ValueError(f"Shape must be rank {rank} but is rank {len(dims)}{_context(name, op_type, inputs)}")
    return dims


def _convert_to_sparse_tensor(sp_input) -> SparseTensor:
    """A SparseTensor from a SparseTensor or SparseTensorValue; TypeError for anything else, as TF."""
    if isinstance(sp_input, SparseTensorValue):
        return SparseTensor.from_value(sp_input)
    if not isinstance(sp_input, SparseTensor):
        raise TypeError("Input must be a SparseTensor.")
    return sp_input


# --- SparseToDense ---------------------------------------------------------------------------------------------------
def _sparse_to_dense_infer(inputs, attrs, name):
    indices, output_shape, values, default = inputs
    check_dtype("SparseToDense", "sparse_indices", indices._dtype, _INDEX_TYPES)
    check_same_dtype("SparseToDense", [indices, output_shape], ("sparse_indices", "output_shape"))
    check_same_dtype("SparseToDense", [values, default], ("sparse_values", "default_value"))
    _with_rank(output_shape, 1, name, "SparseToDense", inputs)
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
    sp_input = _convert_to_sparse_tensor(sp_input)
    return sparse_to_dense(sp_input.indices, sp_input.dense_shape, sp_input.values, default_value=default_value,
                           validate_indices=validate_indices, name=name)


# --- SparseTensorDenseMatMul -----------------------------------------------------------------------------------------
def _matmul_infer(inputs, attrs, name):
    a_indices, a_values, a_shape, b = inputs
    op_type = "SparseTensorDenseMatMul"
    check_dtype(op_type, "a_indices", a_indices._dtype, _INDEX_TYPES)
    check_dtype(op_type, "a_shape", a_shape._dtype, (_dtypes.int64,))
    check_dtype(op_type, "a_values", a_values._dtype, _MATMUL_TYPES)
    check_same_dtype(op_type, [a_values, b], ("a_values", "b"))
    _with_rank(a_indices, 2, name, op_type, inputs)
    _with_rank(a_values, 1, name, op_type, inputs)
    a_dims = shape_from_tensor(a_shape).as_tuple()
    if a_dims is not None and len(a_dims) != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {len(a_dims)}{_context(name, op_type, inputs)}")
    b_dims = _with_rank(b, 2, name, op_type, inputs)
    a_dims = a_dims or (None, None)
    b_dims = b_dims or (None, None)
    adjoint_a, adjoint_b = attrs["adjoint_a"], attrs["adjoint_b"]
    inner_a, inner_b = a_dims[0 if adjoint_a else 1], b_dims[1 if adjoint_b else 0]
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise ValueError(f"Dimensions must be equal, but are {inner_a} and {inner_b}{_context(name, op_type, inputs)}")
    return [(b._dtype.base_dtype, TensorShape([a_dims[1 if adjoint_a else 0], b_dims[0 if adjoint_b else 1]]))]


register_op("SparseTensorDenseMatMul", _matmul_infer)


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a: bool = False, adjoint_b: bool = False,
                               name: str | None = None) -> Tensor:
    """The matrix product of a rank-2 SparseTensor and a dense matrix (tf.sparse_tensor_dense_matmul,
    tf.sparse.sparse_dense_matmul, tf.sparse.matmul); `adjoint_a`/`adjoint_b` use the conjugate transposes.

    Repeated indices add up; the gradient flows to `sp_a.values` and `b`.

        tf.sparse_tensor_dense_matmul(tf.SparseTensor([[0, 1]], [2.0], [1, 2]), [[1.0], [3.0]])   # [[6.]]
    """
    sp_a = _convert_to_sparse_tensor(sp_a)
    with name_scope(name, "SparseTensorDenseMatMul", [sp_a.indices, sp_a.values, b]) as scope:
        b = convert_to_tensor(b, name="b", dtype=None if isinstance(b, Tensor) else sp_a.dtype)
        return apply_op_1("SparseTensorDenseMatMul", [sp_a.indices, sp_a.values, sp_a.dense_shape, b],
                          {"T": b.dtype.base_dtype, "Tindices": sp_a.indices.dtype.base_dtype,
                           "adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)}, name=scope)


# --- SparseReorder ---------------------------------------------------------------------------------------------------
def _check_ranks(op_type: str, inputs, ranks: tuple, name: str) -> None:
    """TF's WithRank checks of the leading inputs (indices, values, shape, ...)."""
    for t, rank in zip(inputs, ranks):
        _with_rank(t, rank, name, op_type, inputs)


def _reorder_infer(inputs, attrs, name):
    indices, values, shape = inputs
    check_dtype("SparseReorder", "input_indices", indices._dtype, (_dtypes.int64,))
    check_dtype("SparseReorder", "input_shape", shape._dtype, (_dtypes.int64,))
    _check_ranks("SparseReorder", inputs, (2, 1, 1), name)
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
    sp_input = _convert_to_sparse_tensor(sp_input)
    reorder = apply_op("SparseReorder", [sp_input.indices, sp_input.values, sp_input.dense_shape],
                       {"T": sp_input.dtype.base_dtype}, name=name or "SparseReorder")
    return SparseTensor(reorder._outputs[0], reorder._outputs[1], _static_dense_shape(sp_input))


# --- SparseAdd, SparseAddGrad, SparseTensorDenseAdd ----------------------------------------------------------------
def _sparse_add_infer(inputs, attrs, name):
    a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh = inputs
    for arg, t in (("a_indices", a_indices), ("a_shape", a_shape), ("b_indices", b_indices), ("b_shape", b_shape)):
        check_dtype("SparseAdd", arg, t._dtype, (_dtypes.int64,))
    check_same_dtype("SparseAdd", [a_values, b_values], ("a_values", "b_values"))
    _check_ranks("SparseAdd", inputs, (2, 1, 1, 2, 1, 1, 0), name)
    return [(_dtypes.int64, TensorShape([None, a_indices._shape.as_tuple()[1] if a_indices._shape.ndims else None])),
            (a_values._dtype.base_dtype, unknown_shape(1)), (_dtypes.int64, a_shape._shape)]


register_op("SparseAdd", _sparse_add_infer)
register_op("SparseAddGrad", lambda inputs, attrs, name: [(inputs[0]._dtype.base_dtype, unknown_shape(1))] * 2)


def _sparse_dense_add_infer(inputs, attrs, name):
    a_indices, a_values, a_shape, b = inputs
    check_dtype("SparseTensorDenseAdd", "a_indices", a_indices._dtype, _INDEX_TYPES)
    check_same_dtype("SparseTensorDenseAdd", [a_indices, a_shape], ("a_indices", "a_shape"))
    check_same_dtype("SparseTensorDenseAdd", [a_values, b], ("a_values", "b"))
    _check_ranks("SparseTensorDenseAdd", inputs, (2, 1, 1), name)
    return [(b._dtype.base_dtype, b._shape)]


register_op("SparseTensorDenseAdd", _sparse_dense_add_infer)


def sparse_add(a, b, threshold=None, thresh=None):
    """a + b where at least one is a SparseTensor (tf.sparse_add, tf.sparse.add).

    Sparse + sparse is a SparseTensor (both sorted in row-major order); an entry present in both whose sum has a
    magnitude below `threshold` (TF1 alias `thresh`) is dropped. Sparse + dense is a dense Tensor.

        tf.sparse_add(tf.SparseTensor([[0, 0]], [1.0], [2, 2]), tf.ones([2, 2]))   # [[2, 1], [1, 1]]

    Raises:
      TypeError: neither operand is sparse (use tf.add).
    """
    threshold = deprecated_argument_lookup("threshold", threshold, "thresh", thresh)
    if threshold is None:
        threshold = 0
    sparse_classes = (SparseTensor, SparseTensorValue)
    if not any(isinstance(inp, sparse_classes) for inp in (a, b)):
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add()?")
    if all(isinstance(inp, sparse_classes) for inp in (a, b)):
        a, b = _convert_to_sparse_tensor(a), _convert_to_sparse_tensor(b)
        threshold = convert_to_tensor(threshold, dtype=a.values.dtype.real_dtype.base_dtype, name="threshold")
        add = apply_op("SparseAdd", [a.indices, a.values, a.dense_shape, b.indices, b.values, b.dense_shape,
                                     threshold],
                       {"T": a.dtype.base_dtype, "Treal": threshold.dtype.base_dtype}, name="SparseAdd")
        a.get_shape().assert_is_compatible_with(b.get_shape())
        static_shape = a.get_shape().merge_with(b.get_shape())
        dense_shape = static_shape.as_list() if static_shape.is_fully_defined() else add._outputs[2]
        return SparseTensor(add._outputs[0], add._outputs[1], dense_shape)
    if isinstance(b, sparse_classes):  # make `a` the sparse one
        a, b = b, a
    a = _convert_to_sparse_tensor(a)
    b = convert_to_tensor(b, dtype=None if isinstance(b, Tensor) else a.dtype, name="b")
    return apply_op_1("SparseTensorDenseAdd", [a.indices, a.values, a.dense_shape, b],
                      {"T": a.dtype.base_dtype, "Tindices": _dtypes.int64}, name="SparseTensorDenseAdd")


# --- SparseReduceSum -------------------------------------------------------------------------------------------------
def _reduce_sum_infer(inputs, attrs, name):
    indices, values, shape, axes = inputs
    check_dtype("SparseReduceSum", "input_indices", indices._dtype, (_dtypes.int64,))
    check_dtype("SparseReduceSum", "input_shape", shape._dtype, (_dtypes.int64,))
    check_dtype("SparseReduceSum", "reduction_axes", axes._dtype, (_dtypes.int32,))
    _check_ranks("SparseReduceSum", inputs, (2, 1, 1), name)
    dims, axes_value = constant_value(shape), constant_value(axes)
    if dims is None or axes_value is None:
        return [(values._dtype.base_dtype, unknown_shape())]
    dims = [int(d) for d in np.reshape(dims, [-1])]
    reduced = set()
    for axis in np.reshape(axes_value, [-1]).tolist():
        if not -len(dims) <= axis < len(dims):
            raise ValueError(f"Invalid reduction dimension {axis}, for input with {len(dims)} dimensions."
                             f"{_context(name, 'SparseReduceSum', inputs)[:-1]}")
        reduced.add(axis % len(dims))
    keep = attrs["keep_dims"]
    out = [1 if i in reduced else d for i, d in enumerate(dims) if keep or i not in reduced]
    return [(values._dtype.base_dtype, TensorShape(out))]


register_op("SparseReduceSum", _reduce_sum_infer)


def _reduction_axes(sp_input: SparseTensor, axis) -> Tensor:
    """The axes to reduce as int32: `axis`, or every axis of the dense shape (TF's _ReductionDims)."""
    if axis is not None:
        return convert_to_tensor(axis, dtype=_dtypes.int32, name="reduction_axes")
    rank = sp_input.shape.ndims
    if rank is not None:
        return convert_to_tensor(np.arange(rank, dtype=np.int32), name="reduction_axes")
    return math_ops.range(0, array_ops.size(sp_input.dense_shape))


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None) -> Tensor:
    """The sum of a SparseTensor's dense values over `axis` (all axes when None), as a dense Tensor
    (tf.sparse_reduce_sum, tf.sparse.reduce_sum; TF1 aliases `reduction_axes`, `keep_dims`).

        x = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [1, 1, 1], [2, 3])
        tf.sparse_reduce_sum(x, 1)                  # [2, 1]
        tf.sparse_reduce_sum(x, 1, keepdims=True)   # [[2], [1]]
    """
    keepdims = deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    axis = deprecated_argument_lookup("axis", axis, "reduction_axes", reduction_axes)
    sp_input = _convert_to_sparse_tensor(sp_input)
    return apply_op_1("SparseReduceSum", [sp_input.indices, sp_input.values, sp_input.dense_shape,
                                          _reduction_axes(sp_input, axis)],
                      {"T": sp_input.dtype.base_dtype, "keep_dims": bool(keepdims)}, name="SparseReduceSum")


# --- SparseReshape ---------------------------------------------------------------------------------------------------
def _reshape_infer(inputs, attrs, name):
    indices, shape, new_shape = inputs
    for arg, t in (("input_indices", indices), ("input_shape", shape), ("new_shape", new_shape)):
        check_dtype("SparseReshape", arg, t._dtype, (_dtypes.int64,))
    _check_ranks("SparseReshape", inputs, (2, 1, 1), name)
    rank = new_shape._shape.as_tuple()[0] if new_shape._shape.ndims else None
    return [(_dtypes.int64, TensorShape([indices._shape.as_tuple()[0] if indices._shape.ndims else None, rank])),
            (_dtypes.int64, TensorShape([rank]))]


register_op("SparseReshape", _reshape_infer)


def _static_reshape(old: TensorShape, new) -> list | None:
    """The new dense shape when the old one and the requested one are known while building (-1 inferred)."""
    if new is None or not old.is_fully_defined():
        return None
    new = [int(d) for d in np.reshape(new, [-1])]
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
    sp_input = _convert_to_sparse_tensor(sp_input)
    shape = math_ops.cast(shape, _dtypes.int64)
    with name_scope(name, "SparseReshape", [sp_input.indices, sp_input.values]) as scope:
        reshape = apply_op("SparseReshape", [sp_input.indices, sp_input.dense_shape, shape], {}, name=scope)
        static = _static_reshape(sp_input.shape, constant_value(shape))
        return SparseTensor(reshape._outputs[0], array_ops.identity(sp_input.values),
                            reshape._outputs[1] if static is None else static)


# --- composites: retain, from_dense, placeholders --------------------------------------------------------------------
def sparse_retain(sp_input, to_retain) -> SparseTensor:
    """The entries of `sp_input` where the bool vector `to_retain` (one per entry) is True (tf.sparse_retain,
    tf.sparse.retain).

        tf.sparse_retain(tf.SparseTensor([[0, 1], [1, 0]], [5, 6], [2, 2]), [False, True]).values   # [6]
    """
    sp_input = _convert_to_sparse_tensor(sp_input)
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
