"""tf.linalg: TF 1.15's linear-algebra namespace, for the names adplace has.

    tf.linalg.inv(a)          # tf.matrix_inverse;  tf.linalg.det, tf.linalg.solve, tf.linalg.band_part, ...
"""
from adplace.nn import l2_normalize
from adplace.ops.einsum_ops import einsum, tensordot
from adplace.ops.linalg_ops import (adjoint, cholesky, diag as tensor_diag, diag_part as tensor_diag_part, eye,
                                    logdet, matrix_band_part as band_part, matrix_determinant as det,
                                    matrix_diag as diag, matrix_diag_part as diag_part, matrix_inverse as inv,
                                    matrix_set_diag as set_diag, matrix_solve as solve, matrix_transpose,
                                    matrix_triangular_solve as triangular_solve, matvec, norm,
                                    self_adjoint_eig as eigh, self_adjoint_eigvals as eigvalsh, trace)
from adplace.ops.math_ops import matmul

transpose = matrix_transpose

__all__ = ["adjoint", "band_part", "cholesky", "det", "diag", "diag_part", "eigh", "eigvalsh", "einsum", "eye", "inv",
           "l2_normalize", "logdet", "matmul", "matrix_transpose", "matvec", "norm", "set_diag", "solve",
           "tensor_diag", "tensor_diag_part", "tensordot", "trace", "transpose", "triangular_solve"]
