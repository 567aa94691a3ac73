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
from adplace.ops import (array_ops, check_ops, control_flow_ops, math_ops, reduction_ops, selection_ops,
                         slicing_ops)
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


# --- SparseReduceSum, SparseReduceMax (+ their SparseTensor-output forms) -------------------------------------------
def _check_reduce_inputs(op_type: str, inputs, name: str) -> None:
    indices, _, shape, axes = inputs
    check_dtype(op_type, "input_indices", indices._dtype, (_dtypes.int64,))
    check_dtype(op_type, "input_shape", shape._dtype, (_dtypes.int64,))
    check_dtype(op_type, "reduction_axes", axes._dtype, (_dtypes.int32,))
    _check_ranks(op_type, inputs, (2, 1, 1), name)


def _reduce_infer(op_type: str):
    def infer(inputs, attrs, name):
        """The reduced shape when the dense shape and the axes are constants; an axis out of range is left to the
        kernel (TF 1.15 builds the op and fails at run time: "Invalid reduction dimension -3")."""
        _check_reduce_inputs(op_type, inputs, name)
        _, values, shape, axes = inputs
        dims, axes_value = constant_value(shape), constant_value(axes)
        if dims is None or axes_value is None:
            return [(values._dtype.base_dtype, unknown_shape())]
        dims = [int(d) for d in np.reshape(dims, [-1])]
        axes_value = np.reshape(axes_value, [-1]).tolist()
        if any(not -len(dims) <= axis < len(dims) for axis in axes_value):
            return [(values._dtype.base_dtype, unknown_shape())]
        reduced = {axis % len(dims) for axis in axes_value}
        keep = attrs["keep_dims"]
        out = [1 if i in reduced else d for i, d in enumerate(dims) if keep or i not in reduced]
        return [(values._dtype.base_dtype, TensorShape(out))]
    return infer


def _reduce_sparse_infer(op_type: str):
    def infer(inputs, attrs, name):
        _check_reduce_inputs(op_type, inputs, name)
        return [(_dtypes.int64, TensorShape([None, None])), (inputs[1]._dtype.base_dtype, TensorShape([None])),
                (_dtypes.int64, TensorShape([None]))]
    return infer


for _op_type in ("SparseReduceSum", "SparseReduceMax"):
    register_op(_op_type, _reduce_infer(_op_type))
    register_op(f"{_op_type}Sparse", _reduce_sparse_infer(f"{_op_type}Sparse"))


def _reduction_axes(sp_input: SparseTensor, axis) -> Tensor:
    """The axes to reduce as int32: `axis`, or every axis of the dense shape (TF's _ReductionDims)."""
    if axis is not None:
        return convert_to_tensor(axis, dtype=_dtypes.int32, name="reduction_axes")
    rank = sp_input.shape.ndims
    if rank is not None:
        return convert_to_tensor(np.arange(rank, dtype=np.int32), name="reduction_axes")
    return math_ops.range(0, array_ops.size(sp_input.dense_shape))


def _sparse_reduce(op_type: str, sp_input, axis, keepdims, reduction_axes, keep_dims, name: str | None = None):
    keepdims = deprecated_argument_lookup("keepdims", keepdims, "keep_dims", keep_dims)
    axis = deprecated_argument_lookup("axis", axis, "reduction_axes", reduction_axes)
    sp_input = _convert_to_sparse_tensor(sp_input)
    op = apply_op(op_type, [sp_input.indices, sp_input.values, sp_input.dense_shape, _reduction_axes(sp_input, axis)],
                  {"T": sp_input.dtype.base_dtype, "keep_dims": bool(keepdims)}, name=name or op_type)
    if len(op._outputs) == 1:
        return op._outputs[0]
    return SparseTensor(*op._outputs)


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None) -> Tensor:
    """The sum of a SparseTensor's dense values over `axis` (all axes when None), as a dense Tensor
    (tf.sparse_reduce_sum, tf.sparse.reduce_sum; TF1 aliases `reduction_axes`, `keep_dims`).

        x = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [1, 1, 1], [2, 3])
        tf.sparse_reduce_sum(x, 1)                  # [2, 1]
        tf.sparse_reduce_sum(x, 1, keepdims=True)   # [[2], [1]]
    """
    return _sparse_reduce("SparseReduceSum", sp_input, axis, keepdims, reduction_axes, keep_dims)


def sparse_reduce_sum_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None) -> SparseTensor:
    """sparse_reduce_sum with a SparseTensor result holding only the output elements some value was summed into
    (tf.sparse_reduce_sum_sparse, tf.sparse.reduce_sum_sparse). Not differentiable, as in TF.

        tf.sparse_reduce_sum_sparse(tf.SparseTensor([[0, 0], [0, 2]], [1, 1], [2, 3]), 1).indices   # [[0]]
    """
    return _sparse_reduce("SparseReduceSumSparse", sp_input, axis, keepdims, reduction_axes, keep_dims)


def sparse_reduce_max(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None) -> Tensor:
    """The maximum of the values present in each reduced group of a SparseTensor (implicit zeros take no part; a
    group with no value is 0), as a dense Tensor (tf.sparse_reduce_max, tf.sparse.reduce_max). Not differentiable.

        x = tf.SparseTensor([[0, 0], [1, 0], [1, 1]], [-7, 4, 3], [3, 2])
        tf.sparse_reduce_max(x, 1)                  # [-7, 4, 0]
    """
    return _sparse_reduce("SparseReduceMax", sp_input, axis, keepdims, reduction_axes, keep_dims)


def sparse_reduce_max_sparse(sp_input, axis=None, keepdims=None, reduction_axes=None,
                             keep_dims=None) -> SparseTensor:
    """sparse_reduce_max with a SparseTensor result (tf.sparse_reduce_max_sparse, tf.sparse.reduce_max_sparse)."""
    return _sparse_reduce("SparseReduceMaxSparse", sp_input, axis, keepdims, reduction_axes, keep_dims)


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
    sp_input = _convert_to_sparse_tensor(sp_input)
    shape = math_ops.cast(shape, _dtypes.int64)
    with name_scope(name, "SparseReshape", [sp_input.indices, sp_input.values]) as scope:
        reshape = apply_op("SparseReshape", [sp_input.indices, sp_input.dense_shape, shape], {}, name=scope)
        static = _static_reshape(sp_input.shape, constant_value(shape))
        return SparseTensor(reshape._outputs[0], array_ops.identity(sp_input.values),
                            reshape._outputs[1] if static is None else static)


# --- SparseDenseCwiseMul, SparseDenseCwiseDiv, SparseDenseCwiseAdd: sparse (op) dense, and SparseTensor operators ---
def _cwise_infer(op_type: str):
    def infer(inputs, attrs, name):
        indices, values, shape, dense = inputs
        check_dtype(op_type, "sp_indices", indices._dtype, (_dtypes.int64,))
        check_dtype(op_type, "sp_shape", shape._dtype, (_dtypes.int64,))
        check_same_dtype(op_type, [values, dense], ("sp_values", "dense"))
        dims = _with_rank(indices, 2, name, op_type, inputs)
        _check_ranks(op_type, inputs, (2, 1, 1), name)
        return [(values._dtype.base_dtype, TensorShape([dims[0] if dims else None]))]
    return infer


for _op_type in ("SparseDenseCwiseMul", "SparseDenseCwiseDiv", "SparseDenseCwiseAdd"):
    register_op(_op_type, _cwise_infer(_op_type))


def _sparse_dense_cwise(op_type: str, sp_t: SparseTensor, dense, name: str | None) -> SparseTensor:
    """`sp_t`'s values combined with the dense values at its indices (the dense side broadcast to the sparse
    shape only): a SparseTensor with `sp_t`'s indices and dense shape."""
    values = apply_op_1(op_type, [sp_t.indices, sp_t.values, sp_t.dense_shape, dense], {"T": sp_t.dtype.base_dtype},
                        name=name or op_type)
    return SparseTensor(sp_t.indices, values, sp_t.dense_shape)


def sparse_dense_cwise_add(sp_t, dense_t) -> SparseTensor:
    """`sp_t` plus the dense tensor `dense_t` (broadcast to sp_t's shape) at sp_t's indices only: a SparseTensor with
    sp_t's indices and shape (TF's sparse_ops.sparse_dense_cwise_add; TF defines no gradient for it).

        tf.sparse_dense_cwise_add(tf.SparseTensor([[0, 0], [1, 1]], [1, 1], [2, 2]), tf.ones([1], tf.int32))
        # values [2, 2], indices unchanged
    """
    return _sparse_dense_cwise("SparseDenseCwiseAdd", _convert_to_sparse_tensor(sp_t), dense_t, None)


_TRUEDIV_TYPES = {_dtypes.uint8: _dtypes.float32, _dtypes.int8: _dtypes.float32, _dtypes.uint16: _dtypes.float32,
                  _dtypes.int16: _dtypes.float32, _dtypes.int32: _dtypes.float64, _dtypes.int64: _dtypes.float64}


def _sparse_operator(op_type: str, scope: str, true_division: bool = False):
    """SparseTensor.__mul__ / __div__ / __truediv__ (TF's binary_op_wrapper_sparse): the dense operand takes the
    values' dtype; `/` first casts integer values and operand to floating point (int32 -> float64), as for Tensors."""
    def operator(sp_x: SparseTensor, y) -> SparseTensor:
        with name_scope(None, scope, list(sp_x._components()) + [y]) as name:
            y = convert_to_tensor(y, dtype=sp_x.dtype.base_dtype, name="y")
            target = _TRUEDIV_TYPES.get(sp_x.dtype.base_dtype) if true_division else None
            if target is not None:
                sp_x = sp_x.with_values(math_ops.cast(sp_x.values, target))
                y = math_ops.cast(y, target)
            return _sparse_dense_cwise(op_type, sp_x, y, name)
    operator.__name__ = f"__{scope}__"
    return operator


SparseTensor.__mul__ = _sparse_operator("SparseDenseCwiseMul", "mul")
SparseTensor.__div__ = _sparse_operator("SparseDenseCwiseDiv", "div")
SparseTensor.__truediv__ = _sparse_operator("SparseDenseCwiseDiv", "truediv", true_division=True)
_dense_mul = Tensor.__mul__


def _mul_dispatch(x: Tensor, y):
    """Tensor.__mul__: Dense * Sparse is a SparseTensor (SparseDenseCwiseMul, as TF's _mul_dispatch), anything else
    the dense Mul."""
    if not isinstance(y, SparseTensor):
        return _dense_mul(x, y)
    with name_scope(None, "mul", [x] + list(y._components())) as name:
        return _sparse_dense_cwise("SparseDenseCwiseMul", y, x, name)


Tensor.__mul__ = _mul_dispatch


# --- SparseSoftmax ---------------------------------------------------------------------------------------------------
def _softmax_infer(inputs, attrs, name):
    indices, values, shape = inputs
    check_dtype("SparseSoftmax", "sp_values", values._dtype, (_dtypes.float16, _dtypes.float32, _dtypes.float64))
    _check_ranks("SparseSoftmax", inputs, (2, 1, 1), name)
    return [(values._dtype.base_dtype, values._shape)]


register_op("SparseSoftmax", _softmax_infer)


def sparse_softmax(sp_input, name: str | None = None) -> SparseTensor:
    """Softmax over the last dimension of a SparseTensor of rank >= 2 in which only the values present take part
    (implicit zeros stay out): a SparseTensor with the same indices (tf.sparse_softmax, tf.sparse.softmax).

        sp = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [1.0, 1.0, 5.0], [2, 3])
        tf.sparse_softmax(sp).values        # [0.5, 0.5, 1.0]
    """
    sp_input = _convert_to_sparse_tensor(sp_input)
    with name_scope(name, "SparseSoftmax", [sp_input.indices, sp_input.values]) as scope:
        values = apply_op_1("SparseSoftmax", [sp_input.indices, sp_input.values, sp_input.dense_shape],
                            {"T": sp_input.dtype.base_dtype}, name=scope)
        return SparseTensor(sp_input.indices, values, sp_input.dense_shape)


# --- SparseSparseMaximum, SparseSparseMinimum ------------------------------------------------------------------------
def _sparse_sparse_infer(op_type: str):
    def infer(inputs, attrs, name):
        a_indices, a_values, a_shape, b_indices, b_values, b_shape = inputs
        for arg, t in (("a_indices", a_indices), ("a_shape", a_shape), ("b_indices", b_indices), ("b_shape", b_shape)):
            check_dtype(op_type, arg, t._dtype, (_dtypes.int64,))
        check_same_dtype(op_type, [a_values, b_values], ("a_values", "b_values"))
        _check_ranks(op_type, inputs, (2, 1, 1, 2, 1, 1), name)
        rank = a_indices._shape.as_tuple()[1] if a_indices._shape.ndims else None
        return [(_dtypes.int64, TensorShape([None, rank])), (a_values._dtype.base_dtype, TensorShape([None]))]
    return infer


for _op_type in ("SparseSparseMaximum", "SparseSparseMinimum"):
    register_op(_op_type, _sparse_sparse_infer(_op_type))


def _sparse_sparse(op_type: str, sp_a, sp_b, name: str | None) -> SparseTensor:
    sp_a, sp_b = _convert_to_sparse_tensor(sp_a), _convert_to_sparse_tensor(sp_b)
    with name_scope(name, op_type, [sp_a.indices, sp_a.values, sp_b.indices, sp_b.values]) as scope:
        op = apply_op(op_type, [sp_a.indices, sp_a.values, sp_a.dense_shape, sp_b.indices, sp_b.values,
                                sp_b.dense_shape], {"T": sp_a.dtype.base_dtype}, name=scope)
    return SparseTensor(op._outputs[0], op._outputs[1], sp_a.dense_shape)


def sparse_maximum(sp_a, sp_b, name: str | None = None) -> SparseTensor:
    """The elementwise maximum of two SparseTensors of one shape, over the union of their indices (a missing value
    counts as 0) (tf.sparse_maximum, tf.sparse.maximum). Indices must be in row-major order.

        tf.sparse_maximum(tf.SparseTensor([[0]], [-1], [3]), tf.SparseTensor([[1]], [2], [3]))
        # indices [[0], [1]], values [0, 2]
    """
    return _sparse_sparse("SparseSparseMaximum", sp_a, sp_b, name)


def sparse_minimum(sp_a, sp_b, name: str | None = None) -> SparseTensor:
    """The elementwise minimum of two SparseTensors of one shape (tf.sparse_minimum, tf.sparse.minimum); see
    sparse_maximum."""
    return _sparse_sparse("SparseSparseMinimum", sp_a, sp_b, name)


# --- SparseFillEmptyRows ---------------------------------------------------------------------------------------------
def _fill_empty_rows_infer(inputs, attrs, name):
    indices, values, shape, default_value = inputs
    check_dtype("SparseFillEmptyRows", "indices", indices._dtype, (_dtypes.int64,))
    check_dtype("SparseFillEmptyRows", "dense_shape", shape._dtype, (_dtypes.int64,))
    check_same_dtype("SparseFillEmptyRows", [values, default_value], ("values", "default_value"))
    _check_ranks("SparseFillEmptyRows", inputs, (2, 1, 1, 0), name)
    rank = indices._shape.as_tuple()[1] if indices._shape.ndims else None
    dense_rows = shape_from_tensor(shape)
    rows = dense_rows.as_tuple()[0] if dense_rows.ndims else None
    entries = indices._shape.as_tuple()[0] if indices._shape.ndims else None
    return [(_dtypes.int64, TensorShape([None, rank])), (values._dtype.base_dtype, TensorShape([None])),
            (_dtypes.bool, TensorShape([rows])), (_dtypes.int64, TensorShape([entries]))]


def _fill_empty_rows_grad_infer(inputs, attrs, name):
    reverse_index_map, grad_values = inputs
    check_dtype("SparseFillEmptyRowsGrad", "reverse_index_map", reverse_index_map._dtype, (_dtypes.int64,))
    _check_ranks("SparseFillEmptyRowsGrad", inputs, (1, 1), name)
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
    sp_input = _convert_to_sparse_tensor(sp_input)
    with name_scope(name, "SparseFillEmptyRows", [sp_input.indices, sp_input.values, sp_input.dense_shape]):
        default_value = convert_to_tensor(default_value, dtype=sp_input.values.dtype, name="default_value")
        op = apply_op("SparseFillEmptyRows", [sp_input.indices, sp_input.values, sp_input.dense_shape,
                                              default_value], {"T": sp_input.dtype.base_dtype})
        return SparseTensor(op._outputs[0], op._outputs[1], sp_input.dense_shape), op._outputs[2]


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
    _check_ranks("SparseConcat", inputs, (2,) * count + (1,) * (2 * count), name)
    rows, columns, shape = 0, TensorShape([None]), TensorShape([None])
    try:
        for ind, val, shp in zip(indices, values, shapes):
            ind_shape = ind._shape.with_rank(2) if ind._shape.ndims is None else ind._shape
            entries = ind_shape.dims[0].merge_with(val._shape.with_rank(1).dims[0])
            rows = None if rows is None or entries.value is None else rows + entries.value
            columns = columns.merge_with(TensorShape([ind_shape.dims[1]]))
            shape = shape.merge_with(shp._shape.with_rank(1))
    except ValueError as error:
        raise ValueError(f"{error}{_context(name, 'SparseConcat', inputs)}") from error
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
    sp_inputs = [_convert_to_sparse_tensor(sp) for sp in sp_inputs]
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
    _check_ranks("SparseSlice", inputs, (2, 1, 1, 1, 1), name)
    rank = shape._shape.as_tuple()[0] if shape._shape.ndims else None
    return [(_dtypes.int64, TensorShape([None, rank])), (values._dtype.base_dtype, TensorShape([None])),
            (_dtypes.int64, TensorShape([rank]))]


def _slice_grad_infer(inputs, attrs, name):
    grad, input_indices, input_start, output_indices = inputs
    _check_ranks("SparseSliceGrad", inputs, (1, 2, 1, 2), name)
    entries = input_indices._shape.as_tuple()[0] if input_indices._shape.ndims else None
    return [(grad._dtype.base_dtype, TensorShape([entries]))]


def _split_infer(inputs, attrs, name):
    split_dim, indices, values, shape = inputs
    check_dtype("SparseSplit", "split_dim", split_dim._dtype, (_dtypes.int64,))
    _check_ranks("SparseSplit", inputs, (0, 2, 1, 1), name)
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
    sp_input = _convert_to_sparse_tensor(sp_input)
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
    sp_input = _convert_to_sparse_tensor(sp_input)
    axis = convert_to_tensor(axis, _dtypes.int64, name="split_dim")
    op = apply_op("SparseSplit", [axis, sp_input.indices, sp_input.values, sp_input.dense_shape],
                  {"num_split": int(num_split), "T": sp_input.dtype.base_dtype}, name=name or "SparseSplit")
    outputs, count = op._outputs, int(num_split)
    return [SparseTensor(outputs[i], outputs[count + i], outputs[2 * count + i]) for i in range(count)]


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
        sp_ids = [_convert_to_sparse_tensor(sp) for sp in sp_ids]
        sp_values = _convert_to_sparse_tensor(sp_values)
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
    sp_input = _convert_to_sparse_tensor(sp_input)
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
    sp_input = _convert_to_sparse_tensor(sp_input)
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
    sp_input = _convert_to_sparse_tensor(sp_input)
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
