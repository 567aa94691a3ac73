"""CPU kernels of the SparseTensor layout ops (adplace.ops.sparse_ops, sparse_slicing_ops): SparseToDense,
SparseReorder, SparseReshape, SparseFillEmptyRows (+ Grad), SparseConcat, SparseSlice (+ Grad) and SparseSplit,
plus the index checks every sparse kernel shares (validate_indices, check_components), which the arithmetic kernels
in sparse_math.py import. TF runs these on the CPU, so they are registered for the CPU only and placed there.

Indices are checked before anything is computed: a bad one is TF's InvalidArgumentError naming its position, value
and the dense shape ("indices[1] = [0,5] is out of bounds: need 0 <= index < [2,3]").
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.registration import ALL, NO_GPU, kernel

NUMERIC = _dtypes.NUMERIC


def _index_text(row: np.ndarray) -> str:
    return "[" + ",".join(str(int(i)) for i in row) + "]"


def shape_text(shape) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def out_of_bounds(indices: np.ndarray, shape: np.ndarray) -> np.ndarray:
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
    bad = out_of_bounds(indices, shape)
    if check_order:
        order = _order(indices)
        bad = bad | np.r_[False, order <= 0]
    if not bad.any():
        return
    i = int(np.argmax(bad))
    where = f"indices[{i}] = {_index_text(indices[i])}"
    if out_of_bounds(indices[i:i + 1], shape)[0]:
        raise InvalidArgumentError(None, op, f"{where} is out of bounds: need 0 <= index < {shape_text(shape)}")
    if order[i - 1] < 0:
        raise InvalidArgumentError(None, op, f"{where} is out of order. Many sparse ops require sorted indices.\n"
                                             f"    Use `tf.sparse.reorder` to create a correctly ordered copy.\n\n")
    raise InvalidArgumentError(None, op, f"{where} is repeated")


def check_components(op, indices: np.ndarray, values: np.ndarray, shape: np.ndarray, names=("indices", "values",
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
        elif out_of_bounds(indices, shape).any():
            raise InvalidArgumentError(None, op, f"Indices are not valid (out of bounds).  Shape: "
                                                 f"{shape_text(shape)}")
        out = np.full(tuple(int(d) for d in shape), default_value, dtype=op._outputs[0]._dtype.as_numpy_dtype)
        out[tuple(indices.T)] = values
        return out
    return sparse_to_dense


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
        check_components(op, indices, values, shape)
        order = _row_major_order(indices)
        return indices[order], values[order]
    return sparse_reorder


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
                                                 f"the input shape {shape_text(input_shape)}")
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
                                                     f"{product}. inputShape={shape_text(input_shape)} "
                                                     f"outputShape={shape_text(out_shape)}")
            out_shape[unknown[0]] = dense_size // product
        elif product != dense_size:
            raise InvalidArgumentError(None, op, f"Input to reshape is a tensor with {dense_size} dense values, but "
                                                 f"the requested shape has {product}. "
                                                 f"inputShape={shape_text(input_shape)} "
                                                 f"outputShape={shape_text(out_shape)}")
        out_shape = np.asarray(out_shape, np.int64)
        if indices.shape[0] == 0:
            return np.zeros((0, out_shape.size), np.int64), out_shape
        flat = np.ravel_multi_index(tuple(indices.T), tuple(int(d) for d in input_shape)) if indices.shape[1] else \
            np.zeros(indices.shape[0], np.int64)
        new_indices = np.stack(np.unravel_index(flat, tuple(out_shape.tolist())), axis=1) if out_shape.size else \
            np.zeros((indices.shape[0], 0), np.int64)
        return new_indices.astype(np.int64), out_shape
    return sparse_reshape


# --- SparseFillEmptyRows, SparseFillEmptyRowsGrad ----------------------------------------------------------------------
@kernel("SparseFillEmptyRows", ALL, NO_GPU)
def _sparse_fill_empty_rows(op, ctx):
    def sparse_fill_empty_rows(indices, values, dense_shape, default_value):
        indices, values = np.asarray(indices), np.asarray(values)
        shape, default_value = np.asarray(dense_shape), np.asarray(default_value)
        for what, x, rank in (("indices", indices, 2), ("values", values, 1), ("dense_shape", shape, 1),
                              ("default_value", default_value, 0)):
            if x.ndim != rank:
                kind = {2: "a matrix", 1: "a vector", 0: "a scalar"}[rank]
                raise InvalidArgumentError(None, op, f"{what} must be {kind}, saw shape: {dims_text(x.shape)}")
        if shape.size == 0:
            raise InvalidArgumentError(None, op, "Dense shape cannot be empty.")
        dense_rows = int(shape[0])
        rows = indices[:, 0] if len(indices) else np.zeros(0, np.int64)
        bad = (rows < 0) | (rows >= dense_rows)
        if bad.any():
            i = int(np.argmax(bad))
            relation = f"{int(rows[i])} < 0" if rows[i] < 0 else f"{int(rows[i])} >= {dense_rows}"
            raise InvalidArgumentError(None, op, f"indices({i}, 0) is invalid: {relation}")
        empty = np.ones(dense_rows, bool)
        empty[rows] = False
        empty_rows = np.flatnonzero(empty)
        filler = np.zeros((len(empty_rows), shape.size), np.int64)
        filler[:, 0] = empty_rows
        all_indices = np.concatenate([indices.astype(np.int64).reshape(-1, shape.size), filler])
        all_values = np.concatenate([values, np.full(len(empty_rows), default_value, values.dtype)])
        order = np.argsort(all_indices[:, 0], kind="stable")  # by row; each row's entries keep their input order
        reverse_index_map = np.empty(len(order), np.int64)
        reverse_index_map[order] = np.arange(len(order))
        return all_indices[order], all_values[order], empty, reverse_index_map[:len(values)]
    return sparse_fill_empty_rows


@kernel("SparseFillEmptyRowsGrad", NUMERIC, NO_GPU)
def _sparse_fill_empty_rows_grad(op, ctx):
    def sparse_fill_empty_rows_grad(reverse_index_map, grad_values):
        reverse_index_map, grad_values = np.asarray(reverse_index_map), np.asarray(grad_values)
        if reverse_index_map.ndim != 1 or grad_values.ndim != 1:
            raise InvalidArgumentError(None, op, f"reverse_index_map and grad_values must be vectors, saw shapes: "
                                                 f"{dims_text(reverse_index_map.shape)} and "
                                                 f"{dims_text(grad_values.shape)}")
        bad = (reverse_index_map < 0) | (reverse_index_map >= len(grad_values))
        if bad.any():
            i = int(np.argmax(bad))
            raise InvalidArgumentError(None, op, f"Elements in reverse index must be in [0, {len(grad_values)}) but "
                                                 f"got {int(reverse_index_map[i])}")
        filled = np.ones(len(grad_values), bool)
        filled[reverse_index_map] = False
        return grad_values[reverse_index_map], np.asarray(grad_values[filled].sum(dtype=grad_values.dtype))
    return sparse_fill_empty_rows_grad


# --- SparseConcat --------------------------------------------------------------------------------------------------------
@kernel("SparseConcat", ALL, NO_GPU)
def _sparse_concat(op, ctx):
    count, concat_dim_attr = op._attrs["N"], op._attrs["concat_dim"]

    def sparse_concat(*arrays):
        inds, vals, shapes = ([np.asarray(x) for x in arrays[i * count:(i + 1) * count]] for i in range(3))
        for i, (ind, val, shp) in enumerate(zip(inds, vals, shapes)):
            for what, x, rank in (("indices", ind, 2), ("values", val, 1), ("shapes", shp, 1)):
                if x.ndim != rank:
                    kind = "a matrix" if rank == 2 else "a vector"
                    raise InvalidArgumentError(None, op, f"Input {what} should be {kind} but received shape "
                                                         f"{dims_text(x.shape)} at position {i}")
        rank = shapes[0].size
        concat_dim = concat_dim_attr + rank if concat_dim_attr < 0 else concat_dim_attr
        if not 0 <= concat_dim < rank:
            raise InvalidArgumentError(None, op, f"Concat dimension must be in range [{-rank}, {rank}), got "
                                                 f"{concat_dim_attr}")
        for i, shp in enumerate(shapes[1:], 1):
            if shp.size != rank:
                raise InvalidArgumentError(None, op, f"Ranks of all input tensors must match: expected {rank} but "
                                                     f"got {shp.size} at position {i}")
            for d in range(rank):
                if d != concat_dim and shp[d] != shapes[0][d]:
                    raise InvalidArgumentError(None, op, f"Input shapes must match: expected {int(shapes[0][d])} "
                                                         f"for dimension {d} but got {int(shp[d])} at position {i}")
        offsets = np.cumsum([0] + [int(s[concat_dim]) for s in shapes])
        shifted = []
        for ind, offset in zip(inds, offsets):
            ind = ind.astype(np.int64).copy()
            ind[:, concat_dim] += offset
            shifted.append(ind)
        out_indices, out_values = np.concatenate(shifted), np.concatenate(vals)
        order = _row_major_order(out_indices)
        out_shape = shapes[0].astype(np.int64).copy()
        out_shape[concat_dim] = offsets[-1]
        return out_indices[order], out_values[order], out_shape
    return sparse_concat


# --- SparseSlice, SparseSliceGrad, SparseSplit -----------------------------------------------------------------------
def _slice_entries(indices: np.ndarray, shape: np.ndarray, start: np.ndarray, size: np.ndarray):
    """(which entries lie in the box [start, start + size) clipped to the shape, the box's shape)."""
    end = np.minimum(start + size, shape)
    inside = ((indices >= start) & (indices < end)).all(axis=1)
    return inside, np.maximum(end - start, 0).astype(np.int64)


def positions_in(rows: np.ndarray, table: np.ndarray) -> np.ndarray:
    """For each row of `rows`, its position among the rows of `table` (-1 when absent)."""
    if len(rows) == 0:
        return np.zeros(0, np.int64)
    unique, inverse = np.unique(np.concatenate([table, rows]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    where = np.full(len(unique), -1, np.int64)
    where[inverse[:len(table)]] = np.arange(len(table))
    return where[inverse[len(table):]]


@kernel("SparseSlice", ALL, NO_GPU)
def _sparse_slice(op, ctx):
    def sparse_slice(indices, values, shape, start, size):
        indices, values, shape, start, size = (np.asarray(x) for x in (indices, values, shape, start, size))
        check_components(op, indices, values, shape)
        if start.shape != shape.shape or size.shape != shape.shape:
            raise InvalidArgumentError(None, op, f"Expected start and size to be vectors of length {shape.size} "
                                                 f"(the rank of the input), got {dims_text(start.shape)} and "
                                                 f"{dims_text(size.shape)}")
        inside, out_shape = _slice_entries(indices, shape, start, size)
        return (indices[inside] - start).astype(np.int64), values[inside], out_shape
    return sparse_slice


@kernel("SparseSliceGrad", NUMERIC, NO_GPU)
def _sparse_slice_grad(op, ctx):
    def sparse_slice_grad(backprop_val_grad, input_indices, input_start, output_indices):
        grad, input_indices = np.asarray(backprop_val_grad), np.asarray(input_indices)
        shifted = input_indices - np.asarray(input_start)
        at = positions_in(shifted, np.asarray(output_indices))
        return np.where(at >= 0, grad[np.maximum(at, 0)] if len(grad) else 0, 0).astype(grad.dtype)
    return sparse_slice_grad


@kernel("SparseSplit", ALL, NO_GPU)
def _sparse_split(op, ctx):
    num_split = op._attrs["num_split"]

    def sparse_split(split_dim, indices, values, shape):
        indices, values, shape = np.asarray(indices), np.asarray(values), np.asarray(shape)
        check_components(op, indices, values, shape)
        rank, axis = shape.size, int(split_dim)
        if not -rank <= axis < rank:
            raise InvalidArgumentError(None, op, f"Input split_dim should be between 0 and rank ({rank}), got "
                                                 f"{axis}")
        axis %= rank
        if not 1 <= num_split <= shape[axis]:
            raise InvalidArgumentError(None, op, f"Input num_split should be between 1 and the splitting dimension "
                                                 f"size ({int(shape[axis])}), got {num_split}")
        base, extra = divmod(int(shape[axis]), num_split)
        sizes = [base + 1 if i < extra else base for i in range(num_split)]
        starts = np.cumsum([0] + sizes[:-1])
        outputs = [], [], []
        for begin, length in zip(starts, sizes):
            start = np.zeros(rank, np.int64)
            start[axis] = begin
            size = shape.astype(np.int64).copy()
            size[axis] = length
            inside, out_shape = _slice_entries(indices, shape, start, size)
            for out, piece in zip(outputs, ((indices[inside] - start).astype(np.int64), values[inside], out_shape)):
                out.append(piece)
        return tuple(outputs[0] + outputs[1] + outputs[2])
    return sparse_split
