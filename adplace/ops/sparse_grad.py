"""Gradients of the sparse ops (TF's sparse_grad): they flow to the values of a SparseTensor and to dense operands,
never to indices or shapes.

    g, = tf.gradients(tf.sparse_tensor_dense_matmul(tf.SparseTensor(i, v, s), b), [v])   # one entry per value
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.registry import NotDifferentiable, RegisterGradient
from adplace.framework.sparse_tensor import SparseTensor
from adplace.ops import array_ops, linalg_ops, math_ops, reduction_ops, slicing_ops, sparse_ops
from adplace.ops.op_builder import apply_op


@RegisterGradient("SparseToDense")
def _sparse_to_dense_grad(op, grad):
    indices, output_shape, values, _ = op._inputs
    coordinates = array_ops.reshape(math_ops.cast(indices, _dtypes.int64),
                                    [-1, array_ops.size(output_shape, out_type=_dtypes.int32)])
    values_grad = sparse_ops.gather_at(grad, coordinates, math_ops.cast(output_shape, _dtypes.int64))
    default_grad = reduction_ops.reduce_sum(grad) - reduction_ops.reduce_sum(values_grad)
    if values._shape.ndims == 0:  # one value used at every index
        values_grad = reduction_ops.reduce_sum(values_grad)
    return [None, None, values_grad, default_grad]


@RegisterGradient("SparseTensorDenseMatMul")
def _sparse_tensor_dense_matmul_grad(op, grad):
    """out = op(A) @ op(B): d values[i] = sum_j grad[m_i, j] * conj(op(B))[k_i, j] (conjugated again with
    adjoint_a), d B = op(A)^H @ grad, transposed back with adjoint_b."""
    a_indices, a_values, a_shape, b = op._inputs
    adjoint_a, adjoint_b = op._attrs["adjoint_a"], op._attrs["adjoint_b"]
    b_grad = apply_op("SparseTensorDenseMatMul", [a_indices, a_values, a_shape, grad],
                      {"T": grad.dtype.base_dtype, "Tindices": a_indices.dtype.base_dtype,
                       "adjoint_a": not adjoint_a, "adjoint_b": False})._outputs[0]
    if adjoint_b:
        b_grad = linalg_ops.matrix_transpose(b_grad, conjugate=True)
    rows, cols = a_indices[:, 0], a_indices[:, 1]
    m, k = (cols, rows) if adjoint_a else (rows, cols)
    rhs_conj = array_ops.transpose(b) if adjoint_b else math_ops.conj(b)
    values_grad = reduction_ops.reduce_sum(slicing_ops.gather(grad, m) * slicing_ops.gather(rhs_conj, k), 1)
    if adjoint_a:
        values_grad = math_ops.conj(values_grad)
    return [None, values_grad, None, b_grad]


@RegisterGradient("SparseReorder")
def _sparse_reorder_grad(op, unused_indices_grad, values_grad):
    """Send each reordered value's gradient back to the input position it came from."""
    indices, _, shape = op._inputs
    positions = math_ops.range(array_ops.shape(indices, out_type=_dtypes.int64)[0])
    reordered = sparse_ops.sparse_reorder(SparseTensor(indices, positions, shape))
    return [None, slicing_ops.gather(values_grad, array_ops.invert_permutation(reordered.values)), None]


@RegisterGradient("SparseAdd")
def _sparse_add_grad(op, unused_indices_grad, values_grad, unused_shape_grad):
    a_indices, b_indices, sum_indices = op._inputs[0], op._inputs[3], op._outputs[0]
    grads = apply_op("SparseAddGrad", [values_grad, a_indices, b_indices, sum_indices],
                     {"T": values_grad.dtype.base_dtype})._outputs
    return [None, grads[0], None, None, grads[1], None, None]


@RegisterGradient("SparseTensorDenseAdd")
def _sparse_tensor_dense_add_grad(op, grad):
    indices, shape = math_ops.cast(op._inputs[0], _dtypes.int64), math_ops.cast(op._inputs[2], _dtypes.int64)
    return [None, sparse_ops.gather_at(grad, indices, shape), None, grad]


@RegisterGradient("SparseReduceSum")
def _sparse_reduce_sum_grad(op, grad):
    """Each value gets the gradient of the output element it was summed into: its index with reduced axes at 0."""
    indices, _, shape, axes = op._inputs
    kept_shape = math_ops.cast(reduction_ops.reduced_shape(shape, axes), _dtypes.int64)
    kept_grad = array_ops.reshape(grad, kept_shape)
    scale = math_ops.floordiv(shape, kept_shape)
    return [None, sparse_ops.gather_at(kept_grad, math_ops.floordiv(indices, scale), kept_shape), None, None]


for _op_type in ("SparseAddGrad", "SparseReshape"):
    NotDifferentiable(_op_type)
