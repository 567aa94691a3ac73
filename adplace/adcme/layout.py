"""ADCME's column-major layout: Julia's `reshape(A, dims...)`, `vec(A)` and `A'` on tensors with the same indices.

A tensor holding a Julia array has the array's indices, so Julia's column-major order of its elements is the
row-major order of the tensor with all axes reversed. Reshaping in column-major order is therefore: reverse the axes,
reshape row-major to the reversed dimensions, reverse the axes back. (ADCME's `reshape(o, [m, n])` and
`reshape(o, (m, n))`, TF's row-major reshape, stay `tf.reshape`.)
"""
from adplace.adcme.tensors import as_tensor
from adplace.ops.array_ops import reshape as tf_reshape, transpose as tf_transpose
from adplace.ops.linalg_ops import matrix_transpose
from adplace.ops.math_ops import conj


def _reversed_axes(x):
    """`x` with its axes in reverse order (tf.transpose's default; ranks 0 and 1 unchanged)."""
    return x if x.shape.ndims is not None and x.shape.ndims <= 1 else tf_transpose(x)


def reshape(x, dims):
    """Julia's `reshape(x, dims...)`: the elements of `x` in column-major order, laid out column-major in `dims`
    (one of them may be -1, Julia's `:`)."""
    x = as_tensor(x, "reshape")
    dims = [int(d) for d in dims]
    return _reversed_axes(tf_reshape(_reversed_axes(x), dims[::-1]))


def vec(x):
    """Julia's `vec(x)`: all elements as a vector in column-major order (a scalar becomes a 1-vector)."""
    x = as_tensor(x, "vec")
    if x.shape.ndims == 1:
        return x
    return tf_reshape(_reversed_axes(x), [-1])


def rvec(x):
    """ADCME's `rvec`: the elements as a 1×n row, column-major."""
    return reshape(x, [1, -1])


def cvec(x):
    """ADCME's `cvec`: the elements as an n×1 column, column-major."""
    return reshape(x, [-1, 1])


def transpose(x):
    """Julia's `transpose`: a scalar as it is, a vector as a 1×n row, the last two dimensions swapped otherwise."""
    x = as_tensor(x, "transpose")
    rank = x.shape.ndims
    if rank == 0:
        return x
    if rank == 1:
        return tf_reshape(x, [1, -1])
    return matrix_transpose(x)


def adjoint(x):
    """Julia's `x'`: the conjugate of `transpose(x)` (ADCME leaves a complex vector unconjugated; Julia does not)."""
    return conj(transpose(x))
