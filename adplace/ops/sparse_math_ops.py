"""Arithmetic on SparseTensors (TF's sparse_ops, second half): sparse x dense products, sparse + sparse and
sparse + dense sums, elementwise products and quotients with dense tensors (and the SparseTensor `*` and `/`
operators), sum and max reductions, softmax, and elementwise maximum/minimum of two SparseTensors. These compute new
values; sparse_ops.py, which they build on, only moves entries. Gradients are in sparse_grad.py, kernels in
adplace/kernels/sparse_math.py.

    st = tf.SparseTensor([[0, 0], [1, 2]], [1.0, 2.0], [2, 3])
    tf.sparse_tensor_dense_matmul(st, tf.ones([3, 1]))  # [[1], [2]]
    tf.sparse_reduce_sum(st, 1)                         # [1, 2]
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
from adplace.ops import array_ops, math_ops
from adplace.ops.op_builder import (apply_op, apply_op_1, check_dtype, check_same_dtype, constant_value,
                                    deprecated_argument_lookup, shape_from_tensor)
from adplace.ops.sparse_ops import INDEX_TYPES, check_ranks, convert_to_sparse_tensor, error_context, with_rank

_MATMUL_TYPES = frozenset({_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64,
                           _dtypes.complex64, _dtypes.complex128})


# --- SparseTensorDenseMatMul -----------------------------------------------------------------------------------------
def _matmul_infer(inputs, attrs, name):
    a_indices, a_values, a_shape, b = inputs
    op_type = "SparseTensorDenseMatMul"
    check_dtype(op_type, "a_indices", a_indices._dtype, INDEX_TYPES)
    check_dtype(op_type, "a_shape", a_shape._dtype, (_dtypes.int64,))
    check_dtype(op_type, "a_values", a_values._dtype, _MATMUL_TYPES)
    check_same_dtype(op_type, [a_values, b], ("a_values", "b"))
    with_rank(a_indices, 2, name, op_type, inputs)
    with_rank(a_values, 1, name, op_type, inputs)
    a_dims = shape_from_tensor(a_shape).as_tuple()
    if a_dims is not None and len(a_dims) != 2:
        raise ValueError(f"Shape must be rank 2 but is rank {len(a_dims)}{error_context(name, op_type, inputs)}")
    b_dims = with_rank(b, 2, name, op_type, inputs)
    a_dims = a_dims or (None, None)
    b_dims = b_dims or (None, None)
    adjoint_a, adjoint_b = attrs["adjoint_a"], attrs["adjoint_b"]
    inner_a, inner_b = a_dims[0 if adjoint_a else 1], b_dims[1 if adjoint_b else 0]
    if inner_a is not None and inner_b is not None and inner_a != inner_b:
        raise ValueError(f"Dimensions must be equal, but are {inner_a} and {inner_b}{error_context(name, op_type, inputs)}")
    return [(b._dtype.base_dtype, TensorShape([a_dims[1 if adjoint_a else 0], b_dims[0 if adjoint_b else 1]]))]


register_op("SparseTensorDenseMatMul", _matmul_infer)


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a: bool = False, adjoint_b: bool = False,
                               name: str | None = None) -> Tensor:
    """The matrix product of a rank-2 SparseTensor and a dense matrix (tf.sparse_tensor_dense_matmul,
    tf.sparse.sparse_dense_matmul, tf.sparse.matmul); `adjoint_a`/`adjoint_b` use the conjugate transposes.

    Repeated indices add up; the gradient flows to `sp_a.values` and `b`.

        tf.sparse_tensor_dense_matmul(tf.SparseTensor([[0, 1]], [2.0], [1, 2]), [[1.0], [3.0]])   # [[6.]]
    """
    sp_a = convert_to_sparse_tensor(sp_a)
    with name_scope(name, "SparseTensorDenseMatMul", [sp_a.indices, sp_a.values, b]) as scope:
        b = convert_to_tensor(b, name="b", dtype=None if isinstance(b, Tensor) else sp_a.dtype)
        return apply_op_1("SparseTensorDenseMatMul", [sp_a.indices, sp_a.values, sp_a.dense_shape, b],
                          {"T": b.dtype.base_dtype, "Tindices": sp_a.indices.dtype.base_dtype,
                           "adjoint_a": bool(adjoint_a), "adjoint_b": bool(adjoint_b)}, name=scope)


# --- SparseAdd, SparseAddGrad, SparseTensorDenseAdd ----------------------------------------------------------------
def _sparse_add_infer(inputs, attrs, name):
    a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh = inputs
    for arg, t in (("a_indices", a_indices), ("a_shape", a_shape), ("b_indices", b_indices), ("b_shape", b_shape)):
        check_dtype("SparseAdd", arg, t._dtype, (_dtypes.int64,))
    check_same_dtype("SparseAdd", [a_values, b_values], ("a_values", "b_values"))
    check_ranks("SparseAdd", inputs, (2, 1, 1, 2, 1, 1, 0), name)
    return [(_dtypes.int64, TensorShape([None, a_indices._shape.as_tuple()[1] if a_indices._shape.ndims else None])),
            (a_values._dtype.base_dtype, unknown_shape(1)), (_dtypes.int64, a_shape._shape)]


register_op("SparseAdd", _sparse_add_infer)
register_op("SparseAddGrad", lambda inputs, attrs, name: [(inputs[0]._dtype.base_dtype, unknown_shape(1))] * 2)


def _sparse_dense_add_infer(inputs, attrs, name):
    a_indices, a_values, a_shape, b = inputs
    check_dtype("SparseTensorDenseAdd", "a_indices", a_indices._dtype, INDEX_TYPES)
    check_same_dtype("SparseTensorDenseAdd", [a_indices, a_shape], ("a_indices", "a_shape"))
    check_same_dtype("SparseTensorDenseAdd", [a_values, b], ("a_values", "b"))
    check_ranks("SparseTensorDenseAdd", inputs, (2, 1, 1), name)
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
        a, b = convert_to_sparse_tensor(a), convert_to_sparse_tensor(b)
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
    a = convert_to_sparse_tensor(a)
    b = convert_to_tensor(b, dtype=None if isinstance(b, Tensor) else a.dtype, name="b")
    return apply_op_1("SparseTensorDenseAdd", [a.indices, a.values, a.dense_shape, b],
                      {"T": a.dtype.base_dtype, "Tindices": _dtypes.int64}, name="SparseTensorDenseAdd")


# --- SparseReduceSum, SparseReduceMax (+ their SparseTensor-output forms) -------------------------------------------
def _check_reduce_inputs(op_type: str, inputs, name: str) -> None:
    indices, _, shape, axes = inputs
    check_dtype(op_type, "input_indices", indices._dtype, (_dtypes.int64,))
    check_dtype(op_type, "input_shape", shape._dtype, (_dtypes.int64,))
    check_dtype(op_type, "reduction_axes", axes._dtype, (_dtypes.int32,))
    check_ranks(op_type, inputs, (2, 1, 1), name)


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
    sp_input = convert_to_sparse_tensor(sp_input)
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


# --- SparseDenseCwiseMul, SparseDenseCwiseDiv, SparseDenseCwiseAdd: sparse (op) dense, and SparseTensor operators ---
def _cwise_infer(op_type: str):
    def infer(inputs, attrs, name):
        indices, values, shape, dense = inputs
        check_dtype(op_type, "sp_indices", indices._dtype, (_dtypes.int64,))
        check_dtype(op_type, "sp_shape", shape._dtype, (_dtypes.int64,))
        check_same_dtype(op_type, [values, dense], ("sp_values", "dense"))
        dims = with_rank(indices, 2, name, op_type, inputs)
        check_ranks(op_type, inputs, (2, 1, 1), name)
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
    return _sparse_dense_cwise("SparseDenseCwiseAdd", convert_to_sparse_tensor(sp_t), dense_t, None)


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


def _dense_times_sparse(sp_y: SparseTensor, x) -> SparseTensor:
    """SparseTensor.__rmul__: dense * sparse is a SparseTensor (SparseDenseCwiseMul, as TF's _mul_dispatch); a
    Tensor's __mul__ hands a composite operand over to it."""
    with name_scope(None, "mul", [x] + list(sp_y._components())) as name:
        return _sparse_dense_cwise("SparseDenseCwiseMul", sp_y, convert_to_tensor(x, dtype=sp_y.dtype.base_dtype), name)


SparseTensor.__rmul__ = _dense_times_sparse


# --- SparseSoftmax ---------------------------------------------------------------------------------------------------
def _softmax_infer(inputs, attrs, name):
    indices, values, shape = inputs
    check_dtype("SparseSoftmax", "sp_values", values._dtype, (_dtypes.float16, _dtypes.float32, _dtypes.float64))
    check_ranks("SparseSoftmax", inputs, (2, 1, 1), name)
    return [(values._dtype.base_dtype, values._shape)]


register_op("SparseSoftmax", _softmax_infer)


def sparse_softmax(sp_input, name: str | None = None) -> SparseTensor:
    """Softmax over the last dimension of a SparseTensor of rank >= 2 in which only the values present take part
    (implicit zeros stay out): a SparseTensor with the same indices (tf.sparse_softmax, tf.sparse.softmax).

        sp = tf.SparseTensor([[0, 0], [0, 2], [1, 1]], [1.0, 1.0, 5.0], [2, 3])
        tf.sparse_softmax(sp).values        # [0.5, 0.5, 1.0]
    """
    sp_input = convert_to_sparse_tensor(sp_input)
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
        check_ranks(op_type, inputs, (2, 1, 1, 2, 1, 1), name)
        rank = a_indices._shape.as_tuple()[1] if a_indices._shape.ndims else None
        return [(_dtypes.int64, TensorShape([None, rank])), (a_values._dtype.base_dtype, TensorShape([None]))]
    return infer


for _op_type in ("SparseSparseMaximum", "SparseSparseMinimum"):
    register_op(_op_type, _sparse_sparse_infer(_op_type))


def _sparse_sparse(op_type: str, sp_a, sp_b, name: str | None) -> SparseTensor:
    sp_a, sp_b = convert_to_sparse_tensor(sp_a), convert_to_sparse_tensor(sp_b)
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
