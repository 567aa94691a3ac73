"""Gradients of the linear-algebra ops (adplace.ops.linalg_ops), for real matrices, in the order of that module.

    y = tf.matrix_inverse(a);  tf.gradients(y, a)   # -inv(a)^T @ dy @ inv(a)^T
"""
from __future__ import annotations

from adplace.framework.registry import RegisterGradient
from adplace.ops import array_ops, linalg_ops, math_ops
from adplace.ops.linalg_ops import matrix_band_part, matrix_diag, matrix_diag_part, matrix_set_diag, matrix_transpose


def _mm(a, b, transpose_a: bool = False, transpose_b: bool = False):
    return math_ops.matmul(a, b, transpose_a=transpose_a, transpose_b=transpose_b)


# --- diagonals and bands ----------------------------------------------------------------------------------------
@RegisterGradient("MatrixDiag")
def _matrix_diag_grad(op, grad):
    return [matrix_diag_part(grad)]


@RegisterGradient("MatrixDiagPart")
def _matrix_diag_part_grad(op, grad):
    dims = op.inputs[0]._shape.as_tuple()
    if dims is not None and None not in dims[-2:] and dims[-2] == dims[-1]:
        return [matrix_diag(grad)]
    return [matrix_set_diag(array_ops.zeros_like(op.inputs[0]), grad)]


@RegisterGradient("MatrixSetDiag")
def _matrix_set_diag_grad(op, grad):
    return [matrix_set_diag(grad, array_ops.zeros_like(op.inputs[1])), matrix_diag_part(grad)]


@RegisterGradient("Diag")
def _diag_grad(op, grad):
    return [linalg_ops.diag_part(grad)]


@RegisterGradient("DiagPart")
def _diag_part_grad(op, grad):
    return [linalg_ops.diag(grad)]


@RegisterGradient("MatrixBandPart")
def _matrix_band_part_grad(op, grad):
    return [matrix_band_part(grad, op.inputs[1], op.inputs[2]), None, None]


# --- decompositions and solvers -----------------------------------------------------------------------------------
@RegisterGradient("MatrixInverse")
def _matrix_inverse_grad(op, grad):
    """Y = A^-1: dA = -Y^T dY Y^T; with adjoint (Y = A^-T): dA = -Y dY^T Y."""
    y = op.outputs[0]
    if op.get_attr("adjoint"):
        return [-_mm(y, _mm(grad, y, transpose_a=True))]
    return [-_mm(y, _mm(grad, y, transpose_b=True), transpose_a=True)]


@RegisterGradient("MatrixDeterminant")
def _matrix_determinant_grad(op, grad):
    """d det(A) / dA = det(A) A^-T, scaled per matrix by the incoming gradient."""
    scale = array_ops.expand_dims(array_ops.expand_dims(grad * op.outputs[0], -1), -1)
    return [scale * linalg_ops.matrix_inverse(op.inputs[0], adjoint=True)]


@RegisterGradient("Cholesky")
def _cholesky_grad(op, grad):
    """Murray's formula: with P = Φ(L^T dL) (lower triangle, half diagonal), dA = sym(L^-T P L^-1) / 2."""
    chol = op.outputs[0]
    chol_inverse = linalg_ops.matrix_inverse(chol)
    middle = _mm(chol, grad, transpose_a=True)
    middle = matrix_set_diag(middle, 0.5 * matrix_diag_part(middle))
    middle = matrix_band_part(middle, -1, 0)
    grad_a = _mm(_mm(chol_inverse, middle, transpose_a=True), chol_inverse)
    return [0.5 * (grad_a + matrix_transpose(grad_a))]


def _solve_grads(op, grad, solve):
    """Gradients of X = A^-1 B (A^-T B with adjoint): dB = A^-T dX, dA = -dB X^T (-X dB^T with adjoint)."""
    adjoint_a, x = op.get_attr("adjoint"), op.outputs[0]
    grad_b = solve(op.inputs[0], grad, not adjoint_a)
    grad_a = -_mm(x, grad_b, transpose_b=True) if adjoint_a else -_mm(grad_b, x, transpose_b=True)
    return grad_a, grad_b


@RegisterGradient("MatrixSolve")
def _matrix_solve_grad(op, grad):
    return list(_solve_grads(op, grad, lambda a, b, adj: linalg_ops.matrix_solve(a, b, adjoint=adj)))


@RegisterGradient("MatrixTriangularSolve")
def _matrix_triangular_solve_grad(op, grad):
    lower = op.get_attr("lower")
    grad_a, grad_b = _solve_grads(op, grad, lambda a, b, adj: linalg_ops.matrix_triangular_solve(
        a, b, lower=lower, adjoint=adj))
    return [matrix_band_part(grad_a, -1, 0) if lower else matrix_band_part(grad_a, 0, -1), grad_b]


@RegisterGradient("SelfAdjointEigV2")
def _self_adjoint_eig_grad(op, grad_e, grad_v):
    """A = V diag(e) V^T: dA = V (diag(de) + F * (V^T dV)) V^T with F_ij = 1 / (e_j - e_i) off the diagonal; only
    the lower triangle of A is read, so the symmetric part is folded onto it."""
    e, v = op.outputs
    inner = matrix_diag(grad_e)
    if op.get_attr("compute_v"):
        gaps = array_ops.expand_dims(e, -2) - array_ops.expand_dims(e, -1)
        f = matrix_set_diag(gaps * math_ops.reciprocal(gaps * gaps + 1e-20), array_ops.zeros_like(e))
        inner = inner + f * _mm(v, grad_v, transpose_a=True)
    else:
        v = linalg_ops.self_adjoint_eig(op.inputs[0])[1]
    grad_a = _mm(v, _mm(inner, v, transpose_b=True))
    grad_a = matrix_band_part(grad_a + matrix_transpose(grad_a), -1, 0)
    return [matrix_set_diag(grad_a, 0.5 * matrix_diag_part(grad_a))]
