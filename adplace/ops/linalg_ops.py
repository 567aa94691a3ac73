"""Linear-algebra ops: diagonals and bands, inverse, determinant, Cholesky, solves, eigh and Einsum, with TF1's
composites built on them (eye, trace, matrix_transpose, norm, logdet, matvec). tensordot and einsum's parsing live in
adplace.ops.einsum_ops; gradients in adplace.ops.linalg_grad.

    tf.matrix_inverse([[2., 0.], [0., 4.]])        # [[0.5, 0.], [0., 0.25]], op type MatrixInverse
    tf.trace(tf.eye(3))                            # 3.0: Sum of the MatrixDiagPart
"""
from __future__ import annotations

import numbers

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.conversion import convert_to_tensor
from adplace.framework.default_graph import name_scope
from adplace.framework.operation import Tensor
from adplace.framework.registry import register_op
from adplace.framework.tensor_shape import TensorShape, unknown_shape
from adplace.ops import array_ops, math_ops, reduction_ops
from adplace.ops.op_builder import apply_op, apply_op_1, check_dtype, check_same_dtype, keepdims_value, shapes_text

SOLVER_TYPES = frozenset({_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.complex64, _dtypes.complex128})


def _context(name: str, op_type: str, inputs) -> str:
    return f" for '{name}' (op: '{op_type}') with input shapes: {shapes_text(inputs)}."


def _at_least(t: Tensor, rank: int, name: str, op_type: str, inputs) -> tuple | None:
    """t's static dims, after TF's "Shape must be at least rank N" check (None when the rank is unknown)."""
    dims = t._shape.as_tuple()
    if dims is not None and len(dims) < rank:
        raise ValueError(f"Shape must be at least rank {rank} but is rank {len(dims)}{_context(name, op_type, inputs)}")
    return dims


def _equal_dims(a, b, name: str, op_type: str, inputs):
    """The merged dimension of two that must be equal (None if both are unknown)."""
    if a is not None and b is not None and a != b:
        raise ValueError(f"Dimensions must be equal, but are {a} and {b}{_context(name, op_type, inputs)}")
    return a if a is not None else b


def _square_dims(op_type: str, inputs, name: str) -> tuple | None:
    """Static dims of a (batch of) square matrices input: [..., M, M]."""
    dims = _at_least(inputs[0], 2, name, op_type, inputs)
    if dims is None:
        return None
    return dims[:-2] + (_equal_dims(dims[-2], dims[-1], name, op_type, inputs),) * 2


# --- diagonals and bands ----------------------------------------------------------------------------------------
def _matrix_diag_infer(inputs, attrs, name):
    dims = _at_least(inputs[0], 1, name, "MatrixDiag", inputs)
    return [(inputs[0]._dtype.base_dtype, unknown_shape() if dims is None else TensorShape(dims + dims[-1:]))]


def _matrix_diag_part_infer(inputs, attrs, name):
    dims = _at_least(inputs[0], 2, name, "MatrixDiagPart", inputs)
    if dims is None:
        return [(inputs[0]._dtype.base_dtype, unknown_shape())]
    m, n = dims[-2:]
    k = None if m is None or n is None else min(m, n)
    return [(inputs[0]._dtype.base_dtype, TensorShape(dims[:-2] + (k,)))]


def _matrix_set_diag_infer(inputs, attrs, name):
    x, diagonal = inputs
    dtype = check_same_dtype("MatrixSetDiag", inputs, ("input", "diagonal"))
    dims = _at_least(x, 2, name, "MatrixSetDiag", inputs)
    d_dims = _at_least(diagonal, 1, name, "MatrixSetDiag", inputs)
    if dims is not None and d_dims is not None:
        if len(d_dims) != len(dims) - 1:
            raise ValueError(f"Shape must be rank {len(dims) - 1} but is rank {len(d_dims)}"
                             f"{_context(name, 'MatrixSetDiag', inputs)}")
        m, n = dims[-2:]
        if m is not None and n is not None:
            _equal_dims(min(m, n), d_dims[-1], name, "MatrixSetDiag", inputs)
        batch = [_equal_dims(a, b, name, "MatrixSetDiag", inputs) for a, b in zip(dims[:-2], d_dims[:-1])]
        dims = tuple(batch) + dims[-2:]
    return [(dtype, x._shape if dims is None else TensorShape(dims))]


def _diag_infer(inputs, attrs, name):
    dims = _at_least(inputs[0], 1, name, "Diag", inputs)
    return [(inputs[0]._dtype.base_dtype, unknown_shape() if dims is None else TensorShape(dims * 2))]


def _diag_part_infer(inputs, attrs, name):
    dims = inputs[0]._shape.as_tuple()
    if dims is None:
        return [(inputs[0]._dtype.base_dtype, unknown_shape())]
    if not dims or len(dims) % 2:
        raise ValueError(f"Input must have even and non-zero rank, input rank is {len(dims)}"
                         f"{_context(name, 'DiagPart', inputs)}")
    half = len(dims) // 2
    out = tuple(_equal_dims(a, b, name, "DiagPart", inputs) for a, b in zip(dims[:half], dims[half:]))
    return [(inputs[0]._dtype.base_dtype, TensorShape(out))]


def _band_part_infer(inputs, attrs, name):
    _at_least(inputs[0], 2, name, "MatrixBandPart", inputs)
    return [(inputs[0]._dtype.base_dtype, inputs[0]._shape)]


register_op("MatrixDiag", _matrix_diag_infer)
register_op("MatrixDiagPart", _matrix_diag_part_infer)
register_op("MatrixSetDiag", _matrix_set_diag_infer)
register_op("Diag", _diag_infer)
register_op("DiagPart", _diag_part_infer)
register_op("MatrixBandPart", _band_part_infer)


def _only_main_diagonal(k, extra: dict) -> None:
    if k != 0 or any(v not in (-1, 0) for v in extra.values()):
        raise NotImplementedError(f"adplace supports only the main diagonal (k=0) with default num_rows, num_cols "
                                  f"and padding_value; got k={k}, {extra}")


def _unary(op_type: str, x, name: str, arg: str = "input") -> Tensor:
    x = convert_to_tensor(x, name=arg)
    return apply_op_1(op_type, [x], {"T": x.dtype.base_dtype}, name=name)


def matrix_diag(diagonal, name: str = "diag", k=0, num_rows=-1, num_cols=-1, padding_value=0) -> Tensor:
    """Batched diagonal matrices with `diagonal` ([..., N]) on their diagonal: shape [..., N, N] (tf.matrix_diag)."""
    _only_main_diagonal(k, {"num_rows": num_rows, "num_cols": num_cols, "padding_value": padding_value})
    return _unary("MatrixDiag", diagonal, name, "diagonal")


def matrix_diag_part(input, name: str = "diag_part", k=0, padding_value=0) -> Tensor:  # noqa: A002 - TF's name
    """The main diagonals of a batch of [M, N] matrices: shape [..., min(M, N)] (tf.matrix_diag_part)."""
    _only_main_diagonal(k, {"padding_value": padding_value})
    return _unary("MatrixDiagPart", input, name)


def matrix_set_diag(input, diagonal, name: str = "set_diag", k=0) -> Tensor:  # noqa: A002
    """`input` with its main diagonals replaced by `diagonal` (tf.matrix_set_diag)."""
    _only_main_diagonal(k, {})
    x = convert_to_tensor(input, name="input")
    d = convert_to_tensor(diagonal, dtype=x.dtype.base_dtype, name="diagonal")
    return apply_op_1("MatrixSetDiag", [x, d], {"T": x.dtype.base_dtype}, name=name)


def diag(diagonal, name: str | None = None) -> Tensor:
    """A tensor of rank 2k with `diagonal` (rank k) on its diagonal: out[i, j, k, l] = d[i, j] if (i, j) == (k, l)
    (tf.diag)."""
    return _unary("Diag", diagonal, name or "Diag", "diagonal")


def diag_part(input, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse of tf.diag: the diagonal of a tensor of shape s + s (tf.diag_part)."""
    return _unary("DiagPart", input, name or "DiagPart")


def matrix_band_part(input, num_lower, num_upper, name: str | None = None) -> Tensor:  # noqa: A002
    """Zero everything outside a band: `num_lower` subdiagonals and `num_upper` superdiagonals kept (negative: all)
    (tf.matrix_band_part). `band_part(x, -1, 0)` is the lower triangle."""
    with name_scope(name, "MatrixBandPart", [input, num_lower, num_upper]) as scope:
        x = convert_to_tensor(input, name="input")
        lower = convert_to_tensor(num_lower, dtype=_dtypes.int64, name="num_lower")
        upper = convert_to_tensor(num_upper, dtype=lower.dtype, name="num_upper")
        return apply_op_1("MatrixBandPart", [x, lower, upper], {"T": x.dtype.base_dtype,
                                                                "Tindex": lower.dtype.base_dtype}, name=scope)


# --- decompositions and solvers -----------------------------------------------------------------------------------
def _square_infer(op_type: str):
    def infer(inputs, attrs, name):
        check_dtype(op_type, "input", inputs[0]._dtype, SOLVER_TYPES)
        dims = _square_dims(op_type, inputs, name)
        return [(inputs[0]._dtype.base_dtype, unknown_shape() if dims is None else TensorShape(dims))]
    return infer


def _determinant_infer(inputs, attrs, name):
    check_dtype("MatrixDeterminant", "input", inputs[0]._dtype, SOLVER_TYPES)
    dims = _square_dims("MatrixDeterminant", inputs, name)
    return [(inputs[0]._dtype.base_dtype, unknown_shape() if dims is None else TensorShape(dims[:-2]))]


def _solve_infer(op_type: str):
    def infer(inputs, attrs, name):
        matrix, rhs = inputs
        dtype = check_same_dtype(op_type, inputs, ("matrix", "rhs"))
        check_dtype(op_type, "matrix", dtype, SOLVER_TYPES)
        dims = _square_dims(op_type, inputs, name)
        rhs_dims = _at_least(rhs, 2, name, op_type, inputs)
        if dims is None or rhs_dims is None:
            return [(dtype, unknown_shape() if rhs_dims is None else TensorShape((None,) * len(rhs_dims)))]
        if len(dims) != len(rhs_dims):
            raise ValueError(f"Shape must be rank {len(dims)} but is rank {len(rhs_dims)}"
                             f"{_context(name, op_type, inputs)}")
        batch = tuple(_equal_dims(a, b, name, op_type, inputs) for a, b in zip(dims[:-2], rhs_dims[:-2]))
        rows = _equal_dims(dims[-2], rhs_dims[-2], name, op_type, inputs)
        return [(dtype, TensorShape(batch + (rows, rhs_dims[-1])))]
    return infer


def _eig_infer(inputs, attrs, name):
    check_dtype("SelfAdjointEigV2", "input", inputs[0]._dtype, SOLVER_TYPES)
    dtype = inputs[0]._dtype.base_dtype
    real = _dtypes.float32 if dtype is _dtypes.complex64 else _dtypes.float64 if dtype.is_complex else dtype
    dims = _square_dims("SelfAdjointEigV2", inputs, name)
    if dims is None:
        return [(real, unknown_shape()), (dtype, unknown_shape())]
    return [(real, TensorShape(dims[:-1])), (dtype, TensorShape(dims if attrs["compute_v"] else [0]))]


register_op("MatrixInverse", _square_infer("MatrixInverse"))
register_op("MatrixDeterminant", _determinant_infer)
register_op("Cholesky", _square_infer("Cholesky"))
register_op("MatrixSolve", _solve_infer("MatrixSolve"))
register_op("MatrixTriangularSolve", _solve_infer("MatrixTriangularSolve"))
register_op("SelfAdjointEigV2", _eig_infer)


def matrix_inverse(input, adjoint: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse of each square matrix in `input` ([..., M, M]); with `adjoint`, of its adjoint
    (tf.matrix_inverse). A singular matrix is an InvalidArgumentError "Input is not invertible." at run time."""
    x = convert_to_tensor(input, name="input")
    return apply_op_1("MatrixInverse", [x], {"adjoint": bool(adjoint), "T": x.dtype.base_dtype},
                      name=name or "MatrixInverse")


def matrix_determinant(input, name: str | None = None) -> Tensor:  # noqa: A002
    """The determinant of each square matrix in `input`: shape [...] (tf.matrix_determinant)."""
    return _unary("MatrixDeterminant", input, name or "MatrixDeterminant")


def cholesky(input, name: str | None = None) -> Tensor:  # noqa: A002
    """The lower-triangular L with L L^H = input, for each Hermitian positive-definite matrix; only the lower
    triangle of `input` is read (tf.cholesky)."""
    return _unary("Cholesky", input, name or "Cholesky")


def matrix_solve(matrix, rhs, adjoint: bool = False, name: str | None = None) -> Tensor:
    """X with matrix @ X = rhs (adjoint(matrix) @ X = rhs with `adjoint`) for [..., M, M] and [..., M, K]
    (tf.matrix_solve)."""
    a = convert_to_tensor(matrix, name="matrix")
    b = convert_to_tensor(rhs, dtype=a.dtype.base_dtype, name="rhs")
    return apply_op_1("MatrixSolve", [a, b], {"adjoint": bool(adjoint), "T": a.dtype.base_dtype},
                      name=name or "MatrixSolve")


def matrix_triangular_solve(matrix, rhs, lower: bool = True, adjoint: bool = False,
                            name: str | None = None) -> Tensor:
    """matrix_solve for triangular matrices: only the lower (or, with lower=False, upper) triangle of `matrix` is
    read (tf.matrix_triangular_solve)."""
    a = convert_to_tensor(matrix, name="matrix")
    b = convert_to_tensor(rhs, dtype=a.dtype.base_dtype, name="rhs")
    return apply_op_1("MatrixTriangularSolve", [a, b], {"lower": bool(lower), "adjoint": bool(adjoint),
                                                        "T": a.dtype.base_dtype},
                      name=name or "MatrixTriangularSolve")


def _eig(tensor, compute_v: bool, name: str | None) -> list[Tensor]:
    x = convert_to_tensor(tensor, name="input")
    return apply_op("SelfAdjointEigV2", [x], {"compute_v": compute_v, "T": x.dtype.base_dtype},
                    name=name or "SelfAdjointEigV2").outputs


def self_adjoint_eig(tensor, name: str | None = None) -> tuple[Tensor, Tensor]:
    """Eigenvalues (ascending) and eigenvectors (columns) of each self-adjoint matrix, reading its lower triangle
    (tf.self_adjoint_eig)."""
    e, v = _eig(tensor, True, name)
    return e, v


def self_adjoint_eigvals(tensor, name: str | None = None) -> Tensor:
    """The eigenvalues (ascending) of each self-adjoint matrix (tf.self_adjoint_eigvals)."""
    return _eig(tensor, False, name)[0]


# --- composites -------------------------------------------------------------------------------------------------
def matrix_transpose(a, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """Swap the last two dimensions (tf.matrix_transpose / tf.linalg.transpose); `conjugate` also conjugates
    complex values, a no-op for real ones."""
    with name_scope(name, values=[a]):
        a = convert_to_tensor(a, name="a")
        if conjugate and a.dtype.is_complex:
            raise TypeError(f"matrix_transpose(conjugate=True) of {a.dtype.name} needs tf.conj, which adplace does "
                            f"not have yet; transpose and conjugate the real and imaginary parts separately")
        ndims = a.shape.ndims
        if ndims is not None:
            if ndims < 2:
                raise ValueError(f"Argument 'a' should be a (batch) matrix, with rank >= 2.  Found: {a.shape}")
            perm = list(range(ndims - 2)) + [ndims - 1, ndims - 2]
        else:
            a_rank = array_ops.rank(a)
            perm = array_ops.concat([math_ops.range(a_rank - 2), [a_rank - 1, a_rank - 2]], 0)
        return array_ops.transpose(a, perm=perm)


def adjoint(matrix, name: str | None = None) -> Tensor:
    """The conjugate transpose of the last two dimensions (tf.linalg.adjoint)."""
    with name_scope(name, "adjoint", [matrix]):
        return matrix_transpose(convert_to_tensor(matrix, name="matrix"), conjugate=True)


def trace(x, name: str | None = None) -> Tensor:
    """The sum of the main diagonal of each matrix in `x` ([..., M, N] -> [...]) (tf.trace)."""
    with name_scope(name, "Trace", [x]) as scope:
        x = convert_to_tensor(x, name="x")
        return reduction_ops.reduce_sum(matrix_diag_part(x), [-1], name=scope)


def eye(num_rows, num_columns=None, batch_shape=None, dtype=_dtypes.float32, name: str | None = None) -> Tensor:
    """An identity matrix, or a batch of them of shape batch_shape + [num_rows, num_columns] (tf.eye).

        tf.eye(2, 3)          # [[1., 0., 0.], [0., 1., 0.]]: MatrixSetDiag of zeros (square ones use MatrixDiag)
    """
    with name_scope(name, "eye", [num_rows, num_columns, batch_shape]):
        is_square = num_columns is None
        batch_shape = [] if batch_shape is None else batch_shape
        num_columns = num_rows if num_columns is None else num_columns
        if isinstance(num_rows, Tensor) or isinstance(num_columns, Tensor):
            diag_size = math_ops.minimum(num_rows, num_columns)
        else:
            if not isinstance(num_rows, numbers.Integral) or not isinstance(num_columns, numbers.Integral):
                raise TypeError("num_rows and num_columns must be positive integer values.")
            is_square = num_rows == num_columns
            diag_size = int(np.minimum(num_rows, num_columns))
        if isinstance(batch_shape, Tensor) or isinstance(diag_size, Tensor):
            batch_shape = convert_to_tensor(batch_shape, dtype=_dtypes.int32, name="shape")
            diag_shape = array_ops.concat([batch_shape, array_ops.stack([diag_size])], 0)
            if not is_square:
                shape = array_ops.concat([batch_shape, array_ops.stack([num_rows, num_columns])], 0)
        else:
            batch_shape = [int(d) for d in TensorShape(batch_shape).as_list()]
            diag_shape = batch_shape + [diag_size]
            if not is_square:
                shape = batch_shape + [num_rows, num_columns]
        diag_ones = array_ops.ones(diag_shape, dtype=dtype)
        if is_square:
            return matrix_diag(diag_ones)
        return matrix_set_diag(array_ops.zeros(shape, dtype=dtype), diag_ones)


def _is_int(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def norm(tensor, ord="euclidean", axis=None, keepdims=None, name: str | None = None,  # noqa: A002 - TF's names
         keep_dims=None) -> Tensor:
    """Vector norms (1, 2/'euclidean', inf, any p > 0) over `axis` (all values when None) and matrix norms
    ('fro'/'euclidean', 1, inf) over a 2-tuple `axis` (tf.norm). The matrix 2-norm needs an SVD adplace lacks.

        tf.norm([[3., 4.]])                 # 5.0
        tf.norm([[1., -2.], [3., 4.]], ord=1, axis=[0, 1])   # 6.0: the largest column sum of |x|
    """
    keepdims = keepdims_value(keepdims, keep_dims)
    is_matrix_norm = isinstance(axis, (tuple, list)) and len(axis) == 2
    if is_matrix_norm:
        axis = tuple(axis)
        if not _is_int(axis[0]) or not _is_int(axis[1]) or axis[0] == axis[1]:
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        supported = ["euclidean", "fro", 1, 2, np.inf]
        if ord not in supported:
            raise ValueError(f"'ord' must be a supported matrix norm in {supported}, got {ord}")
        if ord == 2:
            raise NotImplementedError("the matrix 2-norm (the largest singular value) needs tf.svd, which adplace "
                                      "does not have yet; use ord='fro', 1 or np.inf")
    else:
        if not (_is_int(axis) or axis is None):
            raise ValueError(f"'axis' must be None, an integer, or a tuple of 2 unique integers, got {axis}")
        if (not np.isreal(ord) or ord <= 0) and ord not in ["euclidean", 1, 2, np.inf]:
            raise ValueError(f"'ord' must be a supported vector norm, got {ord}")
        if axis is not None:
            axis = (axis,)
    with name_scope(name, "norm", [tensor]):
        tensor = convert_to_tensor(tensor)
        axes = None if axis is None else list(axis)
        if ord in ("fro", "euclidean", 2, 2.0):
            result = math_ops.sqrt(reduction_ops.reduce_sum(tensor * tensor, axes, keepdims=True))
        else:
            result = math_ops.abs(tensor)
            if ord == 1:
                result = reduction_ops.reduce_sum(result, None if axis is None else axis[0], keepdims=True)
                if is_matrix_norm:
                    result = reduction_ops.reduce_max(result, axis[-1], keepdims=True)
            elif ord == np.inf:
                if is_matrix_norm:
                    result = reduction_ops.reduce_sum(result, axis[1], keepdims=True)
                result = reduction_ops.reduce_max(result, None if axis is None else axis[0], keepdims=True)
            else:
                p = convert_to_tensor(ord, dtype=tensor.dtype.base_dtype)
                result = math_ops.pow(reduction_ops.reduce_sum(math_ops.pow(result, p), axes, keepdims=True), 1.0 / p)
        if not keepdims:
            result = array_ops.squeeze(result, axes)
        return result


def logdet(matrix, name: str | None = None) -> Tensor:
    """log(det(matrix)) of Hermitian positive-definite matrices, through their Cholesky factor (tf.linalg.logdet)."""
    with name_scope(name, "logdet", [matrix]):
        chol = cholesky(matrix)
        return 2.0 * reduction_ops.reduce_sum(math_ops.log(matrix_diag_part(chol)), axis=[-1])


def matvec(a, b, transpose_a: bool = False, adjoint_a: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, name: str | None = None) -> Tensor:
    """a @ b for matrices a ([..., M, N]) and vectors b ([..., N]) (tf.linalg.matvec)."""
    del a_is_sparse, b_is_sparse
    with name_scope(name, "MatVec", [a, b]):
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, dtype=a.dtype.base_dtype, name="b")
        product = math_ops.matmul(a, array_ops.expand_dims(b, -1), transpose_a=transpose_a or adjoint_a)
        return array_ops.squeeze(product, [-1])


