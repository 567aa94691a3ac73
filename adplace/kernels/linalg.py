"""Kernels of the linear-algebra ops (adplace.ops.linalg_ops), in the order of that module. Same conventions as
adplace.kernels.cpu: one factory per op type, written against `ctx.xp`, inputs never written in place.

The diagonal and band ops are elementwise work and run on GPUs as in TF. The decompositions and solvers (inverse,
determinant, Cholesky, solve, eigh) call `xp.linalg`, which CuPy has; they are registered for the CPU only until the
fake CuPy the GPU tests compare against (tests/fake_cupy.py) grows a `linalg` module.

    register: MatrixInverse on CPU for float32/float64/complex;  MatrixDiag on CPU and GPU for every numeric type
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.registration import GPU_ALL, NO_GPU, int_tuple, kernel, with_xp

SOLVER_TYPES = frozenset({_dtypes.float32, _dtypes.float64, _dtypes.complex64, _dtypes.complex128})
EIGH_TYPES = SOLVER_TYPES


# --- diagonals and bands ----------------------------------------------------------------------------------------
def _matrix_diag(xp):
    def matrix_diag(diagonal):
        n = diagonal.shape[-1]
        on_diagonal = xp.eye(n, dtype=bool)
        return xp.where(on_diagonal, diagonal[..., :, None], xp.zeros((), dtype=diagonal.dtype))  # no 0 * inf
    return matrix_diag


kernel("MatrixDiag", gpu_types=GPU_ALL)(with_xp(_matrix_diag))
kernel("MatrixDiagPart", gpu_types=GPU_ALL)(with_xp(lambda xp: lambda x: xp.diagonal(x, 0, -2, -1).copy()))


@kernel("MatrixSetDiag", gpu_types=GPU_ALL)
def _matrix_set_diag(op, ctx):
    xp = ctx.xp

    def matrix_set_diag(x, diagonal):
        k = min(x.shape[-2:])
        if diagonal.shape != x.shape[:-2] + (k,):
            raise InvalidArgumentError(None, op, f"must have diagonal.shape == input.shape[:-2] + "
                                       f"min(input.shape[-2:]), but received input shape: {dims_text(x.shape)} and "
                                       f"diagonal shape: {dims_text(diagonal.shape)}")
        out = x.copy()
        index = xp.arange(k)
        out[..., index, index] = diagonal
        return out
    return matrix_set_diag


def _diag(xp):
    def diag(diagonal):
        n = diagonal.size
        return xp.diag(diagonal.reshape(n)).reshape(diagonal.shape * 2)
    return diag


@kernel("DiagPart", gpu_types=GPU_ALL)
def _diag_part(op, ctx):
    xp = ctx.xp

    def diag_part(x):
        half = x.ndim // 2
        if x.ndim % 2 or x.shape[:half] != x.shape[half:]:
            raise InvalidArgumentError(None, op, f"Invalid shape {dims_text(x.shape)}: dimensions {half} and "
                                       f"{x.ndim} must match (the input must have shape s + s)")
        n = int(np.prod(x.shape[:half], dtype=np.int64))
        return xp.diagonal(x.reshape(n, n)).reshape(x.shape[:half]).copy()
    return diag_part


kernel("Diag", gpu_types=GPU_ALL)(with_xp(_diag))


@kernel("MatrixBandPart", gpu_types=GPU_ALL)
def _matrix_band_part(op, ctx):
    xp = ctx.xp

    def band_part(x, num_lower, num_upper):
        m, n = x.shape[-2:]
        lower, upper = int(int_tuple(num_lower)[0]), int(int_tuple(num_upper)[0])
        if lower > m:
            raise InvalidArgumentError(None, op, f"num_lower must be negative or less or equal to number of rows "
                                       f"({m}) got: {lower}")
        if upper > n:
            raise InvalidArgumentError(None, op, f"num_upper must be negative or less or equal to number of columns "
                                       f"({n}) got: {upper}")
        below = xp.arange(m)[:, None] - xp.arange(n)[None, :]  # i - j
        keep = ((below <= lower) if lower >= 0 else True) & ((-below <= upper) if upper >= 0 else True)
        return xp.where(keep, x, xp.zeros((), dtype=x.dtype))
    return band_part


# --- decompositions and solvers -----------------------------------------------------------------------------------
def _adjoint(xp, a):
    return xp.conj(xp.swapaxes(a, -1, -2))


def _solver(op, ctx, compute, failure: str):
    """A kernel calling `compute(xp, *inputs)`; LinAlgError (singular, not positive definite) becomes TF's error."""
    xp = ctx.xp
    linalg_error = xp.linalg.LinAlgError

    def solve(*inputs):
        try:
            return compute(xp, *inputs)
        except linalg_error:
            raise InvalidArgumentError(None, op, failure) from None
    return solve


def _inverse(xp, a, adjoint: bool):
    if a.shape[-1] == 0:
        return a.copy()
    return xp.linalg.inv(_adjoint(xp, a) if adjoint else a).astype(a.dtype, copy=False)


@kernel("MatrixInverse", SOLVER_TYPES, NO_GPU)
def _matrix_inverse(op, ctx):
    adjoint = op._attrs["adjoint"]
    return _solver(op, ctx, lambda xp, a: _inverse(xp, a, adjoint), "Input is not invertible.")


kernel("MatrixDeterminant", SOLVER_TYPES, NO_GPU)(with_xp(lambda xp: lambda a: xp.asarray(xp.linalg.det(a),
                                                                                      dtype=a.dtype)))


def _cholesky(xp, a):
    if a.shape[-1] == 0:
        return a.copy()
    return xp.linalg.cholesky(a).astype(a.dtype, copy=False)


@kernel("Cholesky", SOLVER_TYPES, NO_GPU)
def _cholesky_kernel(op, ctx):
    return _solver(op, ctx, _cholesky, "Cholesky decomposition was not successful. The input might not be valid.")


def _check_solve_shapes(op, matrix, rhs) -> None:
    if matrix.shape[:-1] != rhs.shape[:-1]:
        raise InvalidArgumentError(None, op, f"Input matrix and right-hand side must have the same number of rows "
                                   f"and batch dimensions: {dims_text(matrix.shape)} vs. {dims_text(rhs.shape)}")


def _solve(op, xp, matrix, rhs, adjoint: bool, triangle: str | None = None):
    _check_solve_shapes(op, matrix, rhs)
    if matrix.shape[-1] == 0 or rhs.shape[-1] == 0:
        return xp.zeros(rhs.shape, dtype=rhs.dtype)
    if triangle is not None:  # only the named triangle is read, as in TF
        matrix = xp.tril(matrix) if triangle == "lower" else xp.triu(matrix)
    out = xp.linalg.solve(_adjoint(xp, matrix) if adjoint else matrix, rhs)
    return out.astype(rhs.dtype, copy=False)


@kernel("MatrixSolve", SOLVER_TYPES, NO_GPU)
def _matrix_solve(op, ctx):
    adjoint = op._attrs["adjoint"]
    return _solver(op, ctx, lambda xp, a, b: _solve(op, xp, a, b, adjoint), "Input matrix is not invertible.")


@kernel("MatrixTriangularSolve", SOLVER_TYPES, NO_GPU)
def _matrix_triangular_solve(op, ctx):
    adjoint, triangle = op._attrs["adjoint"], "lower" if op._attrs["lower"] else "upper"
    return _solver(op, ctx, lambda xp, a, b: _solve(op, xp, a, b, adjoint, triangle),
                   "Input matrix is not invertible.")


@kernel("SelfAdjointEigV2", EIGH_TYPES, NO_GPU)
def _self_adjoint_eig(op, ctx):
    compute_v = op._attrs["compute_v"]

    def eigh(xp, a):
        e, v = xp.linalg.eigh(a)  # reads the lower triangle, as TF's kernels do
        e = e.astype(a.dtype.type(0).real.dtype, copy=False)
        return e, (v.astype(a.dtype, copy=False) if compute_v else xp.zeros((0,), dtype=a.dtype))
    return _solver(op, ctx, eigh, "Self-adjoint eigen decomposition was not successful. The input might not be "
                                  "valid.")


# --- einsum -------------------------------------------------------------------------------------------------------
@kernel("Einsum", _dtypes.FLOATING | _dtypes.COMPLEX | {_dtypes.int32, _dtypes.int64}, _dtypes.FLOATING | _dtypes.COMPLEX)
def _einsum(op, ctx):
    equation, xp = op._attrs["equation"], ctx.xp

    def einsum(*inputs):
        dtype = inputs[0].dtype
        if dtype.kind == "V":  # bfloat16, which np.einsum does not know: computed in float32 and rounded once
            return einsum(*(x.astype(np.float32) for x in inputs)).astype(dtype)
        try:
            return xp.asarray(xp.einsum(equation, *inputs))
        except ValueError as e:
            raise InvalidArgumentError(None, op, f"Einsum '{equation}' got input shapes "
                                       f"{', '.join(dims_text(x.shape) for x in inputs)}: {e}") from None
    return einsum
