"""CPU kernels of the sparse arithmetic ops (adplace.ops.sparse_math_ops): SparseTensorDenseMatMul, SparseAdd
(+ SparseAddGrad), SparseTensorDenseAdd, SparseReduceSum/Max (+ their SparseTensor-output forms),
SparseDenseCwiseMul/Div/Add, SparseSoftmax and SparseSparseMaximum/Minimum. Like the layout kernels in sparse.py,
whose index checks they reuse, they are registered for the CPU only (TF has a GPU kernel for
SparseTensorDenseMatMul alone) and placed there.
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.registration import NO_GPU, kernel
from adplace.kernels.sparse import NUMERIC, check_components, out_of_bounds, positions_in, shape_text, validate_indices

_MATMUL = frozenset({_dtypes.float16, _dtypes.float32, _dtypes.float64, _dtypes.int32, _dtypes.int64,
                     _dtypes.complex64, _dtypes.complex128})


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


@kernel("SparseAdd", NUMERIC, NO_GPU)
def _sparse_add(op, ctx):
    def sparse_add(a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh):
        a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh = (
            np.asarray(x) for x in (a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh))
        check_components(op, a_indices, a_values, a_shape, ("a_indices", "a_values", "a_shape"))
        check_components(op, b_indices, b_values, b_shape, ("b_indices", "b_values", "b_shape"))
        if a_shape.shape != b_shape.shape or (a_shape != b_shape).any():
            raise InvalidArgumentError(None, op, f"Operands' shapes do not match: got {shape_text(a_shape)} and "
                                                 f"{shape_text(b_shape)}")
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


@kernel("SparseAddGrad", NUMERIC, NO_GPU)
def _sparse_add_grad(op, ctx):
    def sparse_add_grad(backprop_val_grad, a_indices, b_indices, sum_indices):
        grad = np.asarray(backprop_val_grad)
        sum_indices = np.asarray(sum_indices)
        results = []
        for indices in (np.asarray(a_indices), np.asarray(b_indices)):
            at = positions_in(indices, sum_indices)
            results.append(np.where(at >= 0, grad[np.maximum(at, 0)] if len(grad) else 0, 0).astype(grad.dtype))
        return tuple(results)
    return sparse_add_grad


@kernel("SparseTensorDenseAdd", NUMERIC, NO_GPU)
def _sparse_tensor_dense_add(op, ctx):
    def sparse_tensor_dense_add(a_indices, a_values, a_shape, b):
        a_indices, a_values, a_shape, b = (np.asarray(x) for x in (a_indices, a_values, a_shape, b))
        check_components(op, a_indices, a_values, a_shape, ("a_indices", "a_values", "a_shape"))
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


# --- SparseReduceSum, SparseReduceMax and their SparseTensor-output forms -----------------------------------------
def _reduction_groups(op, indices, values, shape, reduction_axes):
    """The entries grouped by their kept coordinates: (kept axes, reduced axes, unique kept coordinates in row-major
    order, each entry's group). TF's ValidateInputs errors first, then the component checks."""
    indices, values, shape = np.asarray(indices), np.asarray(values), np.asarray(shape)
    if shape.ndim != 1:
        raise InvalidArgumentError(None, op, f"Expected input_shape to be a vector; got shape: {dims_text(shape.shape)}")
    axes = np.asarray(reduction_axes)
    if axes.ndim > 1:
        raise InvalidArgumentError(None, op, f"Expected reduction_axes to be a scalar or a vector; got shape: "
                                             f"{dims_text(axes.shape)}")
    rank = shape.size
    for axis in axes.reshape(-1).tolist():
        if not -rank <= axis < rank:
            raise InvalidArgumentError(None, op, f"Invalid reduction dimension {axis}, for input with {rank} "
                                                 f"dimensions.")
    check_components(op, indices, values, shape, ("input_indices", "input_values", "input_shape"))
    validate_indices(op, indices, shape, check_order=False)
    reduced = sorted({axis % rank for axis in axes.reshape(-1).tolist()})
    kept = [i for i in range(rank) if i not in reduced]
    if len(values) == 0:
        return kept, reduced, np.zeros((0, len(kept)), np.int64), np.zeros(0, np.int64)
    if not kept:  # reduce all: one group
        return kept, reduced, np.zeros((1, 0), np.int64), np.zeros(len(values), np.int64)
    groups, member = np.unique(indices[:, kept], axis=0, return_inverse=True)
    return kept, reduced, groups.astype(np.int64), member.reshape(-1)


def _reduce_values(values: np.ndarray, member: np.ndarray, count: int, reducer: str) -> np.ndarray:
    """One sum or max per group; a max only sees the values present (implicit zeros do not take part)."""
    if reducer == "sum":
        out = np.zeros(count, values.dtype)
        np.add.at(out, member, values)
        return out
    lowest = -np.inf if values.dtype.kind in "fc" else np.iinfo(values.dtype).min
    out = np.full(count, lowest, values.dtype)
    np.maximum.at(out, member, values)
    return out


def _reduced_dims(shape: np.ndarray, kept: list, reduced: list, keep_dims: bool) -> list:
    return [1 if i in reduced else int(d) for i, d in enumerate(shape) if keep_dims or i not in reduced]


def _sparse_reduce(reducer: str, sparse_output: bool):
    def factory(op, ctx):
        keep_dims = op._attrs["keep_dims"]

        def sparse_reduce(indices, values, shape, reduction_axes):
            kept, reduced, groups, member = _reduction_groups(op, indices, values, shape, reduction_axes)
            values, shape = np.asarray(values), np.asarray(shape)
            out_values = _reduce_values(values, member, len(groups), reducer)
            out_dims = _reduced_dims(shape, kept, reduced, keep_dims)
            if sparse_output:
                out_indices = np.zeros((len(groups), len(out_dims)), np.int64)
                out_indices[:, kept if keep_dims else list(range(len(kept)))] = groups
                return out_indices, out_values, np.asarray(out_dims, np.int64)
            out = np.zeros([int(shape[i]) for i in kept], values.dtype)
            if kept:
                out[tuple(groups.T)] = out_values
            elif len(out_values):
                out[()] = out_values[0]
            return out.reshape(out_dims)
        return sparse_reduce
    return factory


_REAL = NUMERIC - _dtypes.COMPLEX
kernel("SparseReduceSum", NUMERIC, NO_GPU)(_sparse_reduce("sum", False))
kernel("SparseReduceSumSparse", NUMERIC, NO_GPU)(_sparse_reduce("sum", True))
kernel("SparseReduceMax", _REAL, NO_GPU)(_sparse_reduce("max", False))
kernel("SparseReduceMaxSparse", _REAL, NO_GPU)(_sparse_reduce("max", True))


# --- SparseDenseCwiseMul, SparseDenseCwiseDiv, SparseDenseCwiseAdd ----------------------------------------------------
def _dense_at_entries(op, indices: np.ndarray, shape: np.ndarray, dense: np.ndarray) -> np.ndarray:
    """The dense operand, broadcast to the sparse shape (never the other way), read at each sparse index."""
    lhs, rhs = [int(d) for d in shape], list(dense.shape)
    fits = len(lhs) >= len(rhs) and all(r in (s, 1) and s >= r for s, r in zip(lhs[::-1], rhs[::-1]))
    if not fits:
        raise InvalidArgumentError(None, op, f"SparseDenseBinaryOpShared broadcasts dense to sparse only; got "
                                             f"incompatible shapes: {shape_text(lhs)} vs. {shape_text(rhs)}")
    if not 1 <= len(lhs) <= 5:
        raise InvalidArgumentError(None, op, f"Only tensors with ranks between 1 and 5 are currently supported.  "
                                             f"Tensor rank: {len(lhs)}")
    if out_of_bounds(indices, np.asarray(lhs)).any():
        raise InvalidArgumentError(None, op, "Provided indices are out-of-bounds w.r.t. dense side with broadcasted "
                                             "shape")
    padded = dense.reshape([1] * (len(lhs) - len(rhs)) + rhs)
    columns = tuple(np.zeros(len(indices), np.int64) if size == 1 else indices[:, d]
                    for d, size in enumerate(padded.shape))
    return padded[columns]


def _integer_divide(op, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C++ integer division (rounding toward zero), as TF's kernel computes it."""
    if (y == 0).any():
        raise InvalidArgumentError(None, op, "Integer division by zero")
    quotient = np.abs(x) // np.abs(y)
    return np.where((x < 0) != (y < 0), -quotient, quotient).astype(x.dtype)


def _sparse_dense_cwise(operation: str):
    def factory(op, ctx):
        def sparse_dense_cwise(sp_indices, sp_values, sp_shape, dense):
            indices, values, shape = np.asarray(sp_indices), np.asarray(sp_values), np.asarray(sp_shape)
            if indices.ndim != 2:
                raise InvalidArgumentError(None, op, f"Input sp_indices should be a matrix but received shape: "
                                                     f"{dims_text(indices.shape)}")
            if values.ndim != 1 or shape.ndim != 1:
                raise InvalidArgumentError(None, op, f"Inputs sp_values and sp_shape should be vectors but received "
                                                     f"shapes: {dims_text(values.shape)} and {dims_text(shape.shape)}")
            other = _dense_at_entries(op, indices, shape, np.asarray(dense))
            if operation == "mul":
                return values * other
            if operation == "add":
                return values + other
            if values.dtype.kind in "iu":
                return _integer_divide(op, values, other)
            return values / other
        return sparse_dense_cwise
    return factory


for _op_type, _operation in (("SparseDenseCwiseMul", "mul"), ("SparseDenseCwiseDiv", "div"),
                             ("SparseDenseCwiseAdd", "add")):
    kernel(_op_type, _REAL, NO_GPU)(_sparse_dense_cwise(_operation))


# --- SparseSoftmax -----------------------------------------------------------------------------------------------------
@kernel("SparseSoftmax", _dtypes.FLOATING, NO_GPU)
def _sparse_softmax(op, ctx):
    def sparse_softmax(sp_indices, sp_values, sp_shape):
        indices, values, shape = np.asarray(sp_indices), np.asarray(sp_values), np.asarray(sp_shape)
        if indices.ndim != 2:
            raise InvalidArgumentError(None, op, f"Input should be a matrix but received shape: "
                                                 f"{dims_text(indices.shape)}")
        if values.ndim != 1 or shape.ndim != 1:
            raise InvalidArgumentError(None, op, f"Inputs values and shape should be vectors but received shapes: "
                                                 f"{dims_text(values.shape)} and {dims_text(shape.shape)}")
        if shape.size < 2:
            raise InvalidArgumentError(None, op, f"Input should have rank >= 2, but received shape: "
                                                 f"{' '.join(str(int(d)) for d in shape)}")
        check_components(op, indices, values, shape)
        if len(values) == 0:
            return values.copy()
        _, row = np.unique(indices[:, :-1], axis=0, return_inverse=True)
        row = row.reshape(-1)
        row_max = np.full(row.max() + 1, -np.inf, values.dtype)
        np.maximum.at(row_max, row, values)
        shifted = np.exp(values - row_max[row])
        row_sum = np.zeros(len(row_max), values.dtype)
        np.add.at(row_sum, row, shifted)
        return (shifted / row_sum[row]).astype(values.dtype)
    return sparse_softmax


# --- SparseSparseMaximum, SparseSparseMinimum -----------------------------------------------------------------------
def _sparse_sparse_cwise(select):
    def factory(op, ctx):
        def sparse_sparse_cwise(a_indices, a_values, a_shape, b_indices, b_values, b_shape):
            a_indices, a_values, a_shape, b_indices, b_values, b_shape = (
                np.asarray(x) for x in (a_indices, a_values, a_shape, b_indices, b_values, b_shape))
            check_components(op, a_indices, a_values, a_shape, ("a_indices", "a_values", "a_shape"))
            check_components(op, b_indices, b_values, b_shape, ("b_indices", "b_values", "b_shape"))
            if a_shape.size != b_shape.size:
                raise InvalidArgumentError(None, op, f"Operands do not have the same ranks; got shapes: "
                                                     f"{' '.join(map(str, a_shape.tolist()))} and "
                                                     f"{' '.join(map(str, b_shape.tolist()))}")
            for i, (a_dim, b_dim) in enumerate(zip(a_shape.tolist(), b_shape.tolist())):
                if a_dim != b_dim:
                    raise InvalidArgumentError(None, op, f"Operands' shapes do not match: got {a_dim} and {b_dim} "
                                                         f"for dimension {i}")
            order, partner = _merge(a_indices, b_indices)
            na = len(a_indices)
            both = np.concatenate([a_values, b_values])
            zeros = np.zeros(len(order), both.dtype)
            from_a = order < na
            a_side = np.where(from_a, both[order], zeros)
            b_side = np.where(from_a, zeros, both[order])
            paired = partner >= 0
            b_side[paired] = both[partner[paired]]
            return np.concatenate([a_indices, b_indices])[order], select(a_side, b_side).astype(both.dtype)
        return sparse_sparse_cwise
    return factory


kernel("SparseSparseMaximum", _REAL, NO_GPU)(_sparse_sparse_cwise(np.maximum))
kernel("SparseSparseMinimum", _REAL, NO_GPU)(_sparse_sparse_cwise(np.minimum))
