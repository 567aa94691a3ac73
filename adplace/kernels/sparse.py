"""CPU kernels of the sparse ops (adplace.ops.sparse_ops): SparseToDense, SparseTensorDenseMatMul, SparseReorder,
SparseAdd (+ SparseAddGrad), SparseTensorDenseAdd, SparseReduceSum and SparseReshape. TF runs these on the CPU too
(SparseTensorDenseMatMul aside), so they are registered for the CPU only and placed there.

Indices are checked before anything is computed: a bad one is TF's InvalidArgumentError naming its position, value
and the dense shape ("indices[1] = [0,5] is out of bounds: need 0 <= index < [2,3]").
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.registration import ALL, NO_GPU, kernel

_NUMERIC = _dtypes.NUMERIC
_MATMUL = frozenset({_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64,
                     _dtypes.complex64, _dtypes.complex128})


def _index_text(row: np.ndarray) -> str:
    return "[" + ",".join(str(int(i)) for i in row) + "]"


def _shape_text(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def _out_of_bounds(indices: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """Per entry: whether any coordinate lies outside [0, shape)."""
    return ((indices < 0) | (indices >= shape)).any(axis=1)


def _order(indices: np.ndarray) -> np.ndarray:
    """Per entry after the first: the sign of its row-major comparison with the entry before (-1 out of order, 0
    repeated, 1 increasing)."""
    diff = np.sign(indices[1:] - indices[:-1])
    if diff.shape[1] == 0:
        return np.zeros(diff.shape[0], np.int64)
    first = np.argmax(diff != 0, axis=1)
    return diff[np.arange(diff.shape[0]), first]


def validate_indices(op, indices: np.ndarray, shape: np.ndarray, check_order: bool = True) -> None:
    """TF's SparseTensor::ValidateIndices: every index in bounds and, with `check_order`, strictly increasing in
    row-major order; the first bad entry is the error (bounds before order before repeats)."""
    n = indices.shape[0]
    if n == 0:
        return
    bad = _out_of_bounds(indices, shape)
    if check_order:
        order = _order(indices)
        bad = bad | np.r_[False, order <= 0]
    if not bad.any():
        return
    i = int(np.argmax(bad))
    where = f"indices[{i}] = {_index_text(indices[i])}"
    if _out_of_bounds(indices[i:i + 1], shape)[0]:
        raise InvalidArgumentError(None, op, f"{where} is out of bounds: need 0 <= index < {_shape_text(shape)}")
    if order[i - 1] < 0:
        raise InvalidArgumentError(None, op, f"{where} is out of order. Many sparse ops require sorted indices.\n"
                                             f"    Use `tf.sparse.reorder` to create a correctly ordered copy.\n\n")
    raise InvalidArgumentError(None, op, f"{where} is repeated")


def _check_components(op, indices: np.ndarray, values: np.ndarray, shape: np.ndarray, names=("indices", "values",
                                                                                             "shape")) -> None:
    """TF's component checks: indices a matrix, values and shape vectors, one value per index row, one index column
    per dimension."""
    if indices.ndim != 2:
        raise InvalidArgumentError(None, op, f"Input {names[0]} should be a matrix but received shape "
                                             f"{dims_text(indices.shape)}")
    if values.ndim != 1:
        raise InvalidArgumentError(None, op, f"Input {names[1]} should be a vector but received shape "
                                             f"{dims_text(values.shape)}")
    if shape.ndim != 1:
        raise InvalidArgumentError(None, op, f"Input {names[2]} should be a vector but received shape "
                                             f"{dims_text(shape.shape)}")
    if indices.shape[0] != values.shape[0]:
        raise InvalidArgumentError(None, op, f"Number of entries in {names[1]} ({values.shape[0]}) does not match "
                                             f"the number of rows of {names[0]} ({indices.shape[0]})")
    if indices.shape[1] != shape.shape[0]:
        raise InvalidArgumentError(None, op, f"Number of columns of {names[0]} ({indices.shape[1]}) does not match "
                                             f"the number of dimensions in {names[2]} ({shape.shape[0]})")


# --- SparseToDense ---------------------------------------------------------------------------------------------------
@kernel("SparseToDense", ALL, NO_GPU)
def _sparse_to_dense(op, ctx):
    validate = op._attrs["validate_indices"]

    def sparse_to_dense(indices, output_shape, values, default_value):
        indices, shape = np.asarray(indices), np.asarray(output_shape)
        values, default_value = np.asarray(values), np.asarray(default_value)
        if indices.ndim > 2:
            raise InvalidArgumentError(None, op, f"sparse_indices should be a scalar, vector, or matrix, got shape "
                                                 f"{dims_text(indices.shape)}")
        if shape.ndim != 1:
            raise InvalidArgumentError(None, op, f"output_shape should be a vector, got shape "
                                                 f"{dims_text(shape.shape)}")
        num_elems = indices.shape[0] if indices.ndim > 0 else 1
        num_dims = indices.shape[1] if indices.ndim > 1 else 1
        if not (values.ndim == 0 or (values.ndim == 1 and values.shape[0] == num_elems)):
            raise InvalidArgumentError(None, op, f"sparse_values has incorrect shape {dims_text(values.shape)}, "
                                                 f"should be [] or [{num_elems}]")
        if default_value.ndim != 0:
            raise InvalidArgumentError(None, op, "default_value should be a scalar.")
        if shape.size != num_dims:
            raise InvalidArgumentError(None, op, f"output_shape has incorrect number of elements: {shape.size} "
                                                 f"should be: {num_dims}")
        indices = indices.reshape(num_elems, num_dims).astype(np.int64, copy=False)
        if validate:
            validate_indices(op, indices, shape)
        elif _out_of_bounds(indices, shape).any():
            raise InvalidArgumentError(None, op, f"Indices are not valid (out of bounds).  Shape: "
                                                 f"{_shape_text(shape)}")
        out = np.full(tuple(int(d) for d in shape), default_value, dtype=op._outputs[0]._dtype.as_numpy_dtype)
        out[tuple(indices.T)] = values
        return out
    return sparse_to_dense


# --- SparseTensorDenseMatMul -----------------------------------------------------------------------------------------
@kernel("SparseTensorDenseMatMul", _MATMUL, NO_GPU)
def _sparse_tensor_dense_matmul(op, ctx):
    adjoint_a, adjoint_b = op._attrs["adjoint_a"], op._attrs["adjoint_b"]

    def sparse_tensor_dense_matmul(a_indices, a_values, a_shape, b):
        a_indices, a_values, a_shape, b = (np.asarray(x) for x in (a_indices, a_values, a_shape, b))
        for arg, x, rank in (("a_indices", a_indices, 2), ("a_values", a_values, 1), ("a_shape", a_shape, 1),
                             ("b", b, 2)):
            if x.ndim != rank:
                raise InvalidArgumentError(None, op, f"Tensor '{arg}' is not a {'matrix' if rank == 2 else 'vector'}")
        if a_shape.size != 2:
            raise InvalidArgumentError(None, op, "Tensor 'a_shape' must have 2 elements")
        if a_indices.shape[0] != a_values.shape[0]:
            raise InvalidArgumentError(None, op, "Number of rows of a_indices does not match number of entries in "
                                                 "a_values")
        if a_indices.shape[1] != a_shape.size:
            raise InvalidArgumentError(None, op, "Number of columns of a_indices does not match number of entries in "
                                                 "a_shape")
        rows_a, cols_a = int(a_shape[0]), int(a_shape[1])
        outer_left, inner_left = (cols_a, rows_a) if adjoint_a else (rows_a, cols_a)
        outer_right, inner_right = (b.shape[0], b.shape[1]) if adjoint_b else (b.shape[1], b.shape[0])
        if inner_left != inner_right:
            raise InvalidArgumentError(None, op, f"Cannot multiply A and B because inner dimension does not match: "
                                                 f"{inner_left} vs. {inner_right}.  Did you forget a transpose?  "
                                                 f"Dimensions of A: [{rows_a}, {cols_a}).  Dimensions of B: "
                                                 f"{dims_text(b.shape)}")
        m_col, k_col = (1, 0) if adjoint_a else (0, 1)
        for col, limit, letter in ((k_col, inner_left, "k"), (m_col, outer_left, "m")):
            bad = (a_indices[:, col] < 0) | (a_indices[:, col] >= limit)
            if bad.any():
                i = int(np.argmax(bad))
                raise InvalidArgumentError(None, op, f"{letter} ({int(a_indices[i, col])}) from index[{i},{col}] "
                                                     f"out of bounds (>={limit})")
        values = np.conj(a_values) if adjoint_a else a_values
        rhs = np.conj(b.T) if adjoint_b else b
        out = np.zeros((outer_left, outer_right), dtype=op._outputs[0]._dtype.as_numpy_dtype)
        np.add.at(out, a_indices[:, m_col], values[:, None] * rhs[a_indices[:, k_col]])
        return out
    return sparse_tensor_dense_matmul


# --- SparseReorder ---------------------------------------------------------------------------------------------------
def _row_major_order(indices: np.ndarray) -> np.ndarray:
    """The stable permutation sorting index rows in row-major (lexicographic) order."""
    if indices.shape[1] == 0:
        return np.arange(indices.shape[0])
    return np.lexsort(indices.T[::-1])


@kernel("SparseReorder", ALL, NO_GPU)
def _sparse_reorder(op, ctx):
    def sparse_reorder(indices, values, shape):
        indices, values, shape = np.asarray(indices), np.asarray(values), np.asarray(shape)
        _check_components(op, indices, values, shape)
        order = _row_major_order(indices)
        return indices[order], values[order]
    return sparse_reorder


# --- SparseAdd, SparseAddGrad, SparseTensorDenseAdd ------------------------------------------------------------------
def _merge(a_indices: np.ndarray, b_indices: np.ndarray):
    """Merge two row-major sorted index lists as TF's SparseAdd does: (merged order over the concatenation a ++ b,
    and for each merged entry the position of its partner from b when an index occurs in both, else -1)."""
    both = np.concatenate([a_indices, b_indices])
    source = np.r_[np.zeros(len(a_indices), np.int64), np.ones(len(b_indices), np.int64)]
    order = np.lexsort((source,) + tuple(both.T[::-1]))
    ordered = both[order]
    pairs = np.zeros(len(order), bool)
    if len(order) > 1:
        pairs[:-1] = (ordered[1:] == ordered[:-1]).all(axis=1) & (source[order][:-1] == 0) & \
            (source[order][1:] == 1)
    partner = np.where(pairs, np.r_[order[1:], -1], -1)
    kept = ~np.r_[False, pairs[:-1]]  # the b half of a pair is folded into its a entry
    return order[kept], partner[kept]


@kernel("SparseAdd", _NUMERIC, NO_GPU)
def _sparse_add(op, ctx):
    def sparse_add(a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh):
        a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh = (
            np.asarray(x) for x in (a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh))
        _check_components(op, a_indices, a_values, a_shape, ("a_indices", "a_values", "a_shape"))
        _check_components(op, b_indices, b_values, b_shape, ("b_indices", "b_values", "b_shape"))
        if a_shape.shape != b_shape.shape or (a_shape != b_shape).any():
            raise InvalidArgumentError(None, op, f"Operands' shapes do not match: got {_shape_text(a_shape)} and "
                                                 f"{_shape_text(b_shape)}")
        if thresh.ndim != 0:
            raise InvalidArgumentError(None, op, f"The magnitude threshold must be a scalar: got shape "
                                                 f"{dims_text(thresh.shape)}")
        order, partner = _merge(a_indices, b_indices)
        values = np.concatenate([a_values, b_values])
        summed = values[order]
        paired = partner >= 0
        summed[paired] = summed[paired] + values[partner[paired]]
        keep = ~paired | (np.abs(summed) >= thresh)
        return np.concatenate([a_indices, b_indices])[order][keep], summed[keep], a_shape
    return sparse_add


def _positions_in(rows: np.ndarray, table: np.ndarray) -> np.ndarray:
    """For each row of `rows`, its position among the rows of `table` (-1 when absent)."""
    if len(rows) == 0:
        return np.zeros(0, np.int64)
    unique, inverse = np.unique(np.concatenate([table, rows]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    where = np.full(len(unique), -1, np.int64)
    where[inverse[:len(table)]] = np.arange(len(table))
    return where[inverse[len(table):]]


@kernel("SparseAddGrad", _NUMERIC, NO_GPU)
def _sparse_add_grad(op, ctx):
    def sparse_add_grad(backprop_val_grad, a_indices, b_indices, sum_indices):
        grad = np.asarray(backprop_val_grad)
        sum_indices = np.asarray(sum_indices)
        results = []
        for indices in (np.asarray(a_indices), np.asarray(b_indices)):
            at = _positions_in(indices, sum_indices)
            results.append(np.where(at >= 0, grad[np.maximum(at, 0)] if len(grad) else 0, 0).astype(grad.dtype))
        return tuple(results)
    return sparse_add_grad


@kernel("SparseTensorDenseAdd", _NUMERIC, NO_GPU)
def _sparse_tensor_dense_add(op, ctx):
    def sparse_tensor_dense_add(a_indices, a_values, a_shape, b):
        a_indices, a_values, a_shape, b = (np.asarray(x) for x in (a_indices, a_values, a_shape, b))
        _check_components(op, a_indices, a_values, a_shape, ("a_indices", "a_values", "a_shape"))
        if a_shape.size != b.ndim:
            raise InvalidArgumentError(None, op, f"Two operands have different ranks; received: {a_shape.size} and "
                                                 f"{b.ndim}")
        for i, (sparse_dim, dense_dim) in enumerate(zip(a_shape.tolist(), b.shape)):
            if sparse_dim != dense_dim:
                raise InvalidArgumentError(None, op, f"Dimension {i} does not equal (no broadcasting is supported): "
                                                     f"sparse side {sparse_dim} vs dense side {dense_dim}")
        validate_indices(op, a_indices, a_shape, check_order=False)
        out = b.copy()
        np.add.at(out, tuple(a_indices.T), a_values)
        return out
    return sparse_tensor_dense_add


# --- SparseReduceSum -------------------------------------------------------------------------------------------------
@kernel("SparseReduceSum", _NUMERIC, NO_GPU)
def _sparse_reduce_sum(op, ctx):
    keep_dims = op._attrs["keep_dims"]

    def sparse_reduce_sum(indices, values, shape, reduction_axes):
        indices, values, shape = np.asarray(indices), np.asarray(values), np.asarray(shape)
        _check_components(op, indices, values, shape, ("input_indices", "input_values", "input_shape"))
        rank = shape.size
        reduced = set()
        for axis in np.asarray(reduction_axes).reshape(-1).tolist():
            if not -rank <= axis < rank:
                raise InvalidArgumentError(None, op, f"Invalid reduction dimension {axis}, for input with {rank} "
                                                     f"dimensions.")
            reduced.add(axis % rank)
        validate_indices(op, indices, shape, check_order=False)
        kept = [i for i in range(rank) if i not in reduced]
        if kept:
            out = np.zeros([int(shape[i]) for i in kept], dtype=values.dtype)
            np.add.at(out, tuple(indices[:, kept].T), values)
        else:
            out = np.asarray(values.sum(dtype=values.dtype))
        if keep_dims:
            out = out.reshape([1 if i in reduced else int(d) for i, d in enumerate(shape)])
        return out
    return sparse_reduce_sum


# --- SparseReshape ---------------------------------------------------------------------------------------------------
@kernel("SparseReshape", {_dtypes.int64}, NO_GPU)
def _sparse_reshape(op, ctx):
    def sparse_reshape(indices, input_shape, new_shape):
        indices, input_shape, new_shape = np.asarray(indices), np.asarray(input_shape), np.asarray(new_shape)
        if indices.ndim != 2:
            raise InvalidArgumentError(None, op, f"Input indices should be a matrix but received shape "
                                                 f"{dims_text(indices.shape)}")
        if input_shape.ndim != 1 or new_shape.ndim != 1:
            raise InvalidArgumentError(None, op, f"Input shape and target shape should be vectors but received "
                                                 f"shapes {dims_text(input_shape.shape)} and "
                                                 f"{dims_text(new_shape.shape)}")
        if indices.shape[1] != input_shape.size:
            raise InvalidArgumentError(None, op, f"Input indices shape {dims_text(indices.shape)} does not match "
                                                 f"the input shape {_shape_text(input_shape)}")
        validate_indices(op, indices, input_shape, check_order=False)
        dense_size = int(np.prod(input_shape))
        out_shape = [int(d) for d in new_shape]
        unknown = [i for i, d in enumerate(out_shape) if d == -1]
        if len(unknown) > 1:
            raise InvalidArgumentError(None, op, f"only one output dimension may be -1, not both {unknown[0]} and "
                                                 f"{unknown[1]}")
        product = int(np.prod([d for d in out_shape if d != -1]))
        if unknown:
            if product == 0 or dense_size % product:
                raise InvalidArgumentError(None, op, f"Input to reshape is a SparseTensor with {dense_size} dense "
                                                     f"values, but the requested shape requires a multiple of "
                                                     f"{product}. inputShape={_shape_text(input_shape)} "
                                                     f"outputShape={_shape_text(out_shape)}")
            out_shape[unknown[0]] = dense_size // product
        elif product != dense_size:
            raise InvalidArgumentError(None, op, f"Input to reshape is a tensor with {dense_size} dense values, but "
                                                 f"the requested shape has {product}. "
                                                 f"inputShape={_shape_text(input_shape)} "
                                                 f"outputShape={_shape_text(out_shape)}")
        out_shape = np.asarray(out_shape, np.int64)
        if indices.shape[0] == 0:
            return np.zeros((0, out_shape.size), np.int64), out_shape
        flat = np.ravel_multi_index(tuple(indices.T), tuple(int(d) for d in input_shape)) if indices.shape[1] else \
            np.zeros(indices.shape[0], np.int64)
        new_indices = np.stack(np.unravel_index(flat, tuple(out_shape.tolist())), axis=1) if out_shape.size else \
            np.zeros((indices.shape[0], 0), np.int64)
        return new_indices.astype(np.int64), out_shape
    return sparse_reshape
