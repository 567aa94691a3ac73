"""Gradients of the sparse ops (TF's sparse_grad): they flow to the values of a SparseTensor and to dense operands,
never to indices or shapes.

    g, = tf.gradients(tf.sparse_tensor_dense_matmul(tf.SparseTensor(i, v, s), b), [v])   # one entry per value
"""
from __future__ import annotations

from adplace.framework import dtypes as _dtypes
from adplace.framework.registry import NotDifferentiable, RegisterGradient
from adplace.framework.sparse_tensor import SparseTensor
from adplace.ops import array_ops, linalg_ops, math_ops, reduction_ops, slicing_ops, sparse_math_ops, sparse_ops
from adplace.ops.op_builder import apply_op, apply_op_1


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


def _sparse_dense_cwise_grad(op, grad, is_mul: bool) -> list:
    """Each sparse entry i met the dense value y[scaled_i] (its index with the broadcast dimensions at 0): dx is
    grad * y (or grad / y), and dy adds up grad * x (or -grad * x / y**2) over the entries that read each element."""
    x_indices, x_values, x_shape, y = op._inputs
    y_shape = math_ops.cast(array_ops.shape(y), _dtypes.int64)
    added_dims = array_ops.expand_dims(array_ops.size(x_shape) - array_ops.size(y_shape), 0)
    augmented_y_shape = array_ops.concat([array_ops.ones(added_dims, _dtypes.int64), y_shape], 0)
    scaled = math_ops.floordiv(x_indices, math_ops.floordiv(x_shape, augmented_y_shape))
    scaled = slicing_ops.slice_(scaled, array_ops.concat([[0], added_dims], 0), [-1, -1])
    dense_values = sparse_ops.gather_at(y, scaled, y_shape)
    if is_mul:
        x_grad, y_values_grad = grad * dense_values, grad * x_values
    else:
        x_grad = grad / dense_values
        y_values_grad = grad * (-x_values / math_ops.square(dense_values))
    y_grad = sparse_math_ops.sparse_add(array_ops.zeros_like(y), SparseTensor(scaled, y_values_grad, y_shape))
    return [None, x_grad, None, y_grad]


RegisterGradient("SparseDenseCwiseMul")(lambda op, grad: _sparse_dense_cwise_grad(op, grad, True))
RegisterGradient("SparseDenseCwiseDiv")(lambda op, grad: _sparse_dense_cwise_grad(op, grad, False))


def _not_implemented(op_type: str):
    """TF registers these gradients only to refuse them."""
    def grad(op, *grads):
        raise NotImplementedError(f"Gradient for {op_type} is currently not implemented yet.")
    return grad


for _op_type in ("SparseDenseCwiseAdd", "SparseSparseMaximum", "SparseSparseMinimum"):
    RegisterGradient(_op_type)(_not_implemented(_op_type))


def _no_gradient(op, *grads):
    """TF defines no gradient for the sparse max reductions and the SparseTensor-output sums: differentiating
    through one is the LookupError TF gives."""
    raise LookupError(f"No gradient defined for operation '{op.name}' (op type: {op.type})")


for _op_type in ("SparseReduceMax", "SparseReduceMaxSparse", "SparseReduceSumSparse", "SparseSplit",
                 "SparseSliceGrad"):
    RegisterGradient(_op_type)(_no_gradient)


@RegisterGradient("SparseSlice")
def _sparse_slice_grad(op, unused_indices_grad, values_grad, unused_shape_grad):
    """Each input value kept by the slice gets its output's gradient; the others 0."""
    indices, values, _, start, _ = op._inputs
    grad = apply_op_1("SparseSliceGrad", [values_grad, indices, start, op._outputs[0]],
                      {"T": values_grad.dtype.base_dtype})
    grad.set_shape(values.shape)
    return [None, grad, None, None, None]


@RegisterGradient("SparseSoftmax")
def _sparse_softmax_grad(op, grad):
    """As SoftmaxGrad over the values present: (grad - sum_row(grad * softmax)) * softmax."""
    indices, _, shape = op._inputs
    softmax = op._outputs[0]
    row_sums = -sparse_math_ops.sparse_reduce_sum(SparseTensor(indices, softmax * grad, shape), [-1], keepdims=True)
    shifted = sparse_math_ops.sparse_dense_cwise_add(SparseTensor(indices, grad, shape), row_sums)
    return [None, shifted.values * softmax, None]


@RegisterGradient("SparseFillEmptyRows")
def _sparse_fill_empty_rows_grad(op, unused_indices_grad, values_grad, unused_indicator_grad, unused_map_grad):
    """Input values get the gradients of the outputs they moved to; the default value the sum of the rest."""
    grads = apply_op("SparseFillEmptyRowsGrad", [op._outputs[3], values_grad],
                     {"T": values_grad.dtype.base_dtype})._outputs
    return [None, grads[0], None, grads[1]]


for _op_type in ("SparseAddGrad", "SparseReshape", "SparseFillEmptyRowsGrad", "SparseConcat"):
    NotDifferentiable(_op_type)
