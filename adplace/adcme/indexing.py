"""ADCME's sizes and 1-based indexing of tensors.

Julia hands each index over as: an int (1-based), `slice(None)` for `:`, an integer array (1-based; ranges arrive
collected), a boolean array (a mask), or an integer tensor (1-based, such as a loop index). One index on a tensor of
rank other than 1 selects along the first dimension (TF's `x[i]`, as ADCME does), except `x[:]`, which is `vec(x)`.
"""
import numpy as np

from adplace.adcme.layout import vec
from adplace.adcme.tensors import as_tensor, describe, is_tensor_like
from adplace.framework import dtypes
from adplace.framework.operation import Tensor
from adplace.ops.array_ops import concat, reshape, shape, stack
from adplace.ops.broadcast_ops import broadcast_to
from adplace.ops.grid_ops import meshgrid
from adplace.ops.math_ops import cast, range as tf_range, subtract
from adplace.ops.scatter_nd_ops import tensor_scatter_add, tensor_scatter_sub, tensor_scatter_update
from adplace.ops.slicing_ops import gather


def size(x, dim: int | None = None):
    """Julia's `size`: a tuple of the static dimensions (None where unknown), `()` for a scalar, None for an unknown
    rank; `size(x, d)` is dimension d counted from 1, and 1 past the rank (as for Julia arrays)."""
    known = x.shape.ndims is not None
    if dim is None:
        return tuple(x.shape.as_list()) if known else None
    if dim < 1:
        raise ValueError(f"size: dimension {dim} of {describe(x)} is out of range (dimensions count from 1)")
    if not known:
        return None
    dims = x.shape.as_list()
    return dims[dim - 1] if dim <= len(dims) else 1


def length(x):
    """Julia's `length`: the number of elements (None when a dimension is unknown); `len` of other Python objects."""
    if not is_tensor_like(x):
        return len(x)
    dims = size(x)
    if dims is None or None in dims:
        return None
    return int(np.prod(dims, dtype=np.int64))


def ndims(x) -> int:
    """Julia's `ndims`: the rank, which must be known."""
    if x.shape.ndims is None:
        raise ValueError(f"ndims: the rank of {describe(x)} is unknown; give it a shape with set_shape")
    return x.shape.ndims


def _is_colon(index) -> bool:
    return isinstance(index, slice) and index == slice(None)


def _bounds_checked(positions: np.ndarray, dim: int | None, x, axis: int) -> np.ndarray:
    """1-based `positions` as 0-based, checked against the static dimension (Julia's BoundsError at build time)."""
    bad = positions[(positions < 1) | ((positions > dim) if dim is not None else False)]
    if bad.size:
        raise ValueError(f"index {int(bad.flat[0])} is out of bounds for dimension {axis + 1} of {describe(x)} "
                         f"(size {dim}; indices count from 1)")
    return positions - 1


def _zero_based(x, axis: int, index, where: str):
    """Index `index` of dimension `axis` as a 0-based int, int64 array or integer tensor."""
    dim = x.shape.as_list()[axis] if x.shape.ndims is not None else None
    if is_tensor_like(index):
        index = as_tensor(index, where)
        if not index.dtype.base_dtype.is_integer:
            raise TypeError(f"{where}: index tensor {index.name} must be integer, got {index.dtype.base_dtype.name}")
        return subtract(index, 1)
    if isinstance(index, (bool, np.bool_)):
        raise TypeError(f"{where}: a Bool index ({index}) of dimension {axis + 1} of {describe(x)}; use a vector")
    if isinstance(index, np.ndarray) and index.ndim == 0 and index.dtype.kind in "iu":
        index = int(index)  # a 0-dimensional index drops its dimension, as an int does
    if isinstance(index, (int, np.integer)):
        return int(_bounds_checked(np.array([index]), dim, x, axis)[0])
    array = np.asarray(index)
    if array.dtype == np.bool_:
        if array.ndim != 1 or (dim is not None and array.shape[0] != dim):
            raise ValueError(f"{where}: a mask of {array.shape[0] if array.ndim == 1 else array.shape} for dimension "
                             f"{axis + 1} of {describe(x)}, which has {dim}")
        return np.flatnonzero(array).astype(np.int64)
    if array.size == 0:
        return np.zeros(array.shape, np.int64)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{where}: index {index!r} of dimension {axis + 1} of {describe(x)} is not an integer")
    return _bounds_checked(array.astype(np.int64), dim, x, axis)


def _checked_count(x, count: int, where: str) -> None:
    rank = x.shape.ndims
    if rank is not None and count != rank:
        raise ValueError(f"{where}: {count} indices for {describe(x)} of rank {rank}")


def getindex(x, *indices):
    """`x[indices...]` with Julia's 1-based indices: an int drops its dimension, `:` keeps it, a vector gathers."""
    x = as_tensor(x, "getindex")
    if not indices:
        return x
    if len(indices) == 1 and x.shape.ndims not in (0, 1):
        if _is_colon(indices[0]):
            return vec(x)
    else:
        _checked_count(x, len(indices), "getindex")
    # All indices checked against `x` itself before the first gather (errors name x, and add no gathers).
    positions = [None if _is_colon(index) else _zero_based(x, axis, index, "getindex")
                 for axis, index in enumerate(indices)]
    for axis in reversed(range(len(indices))):  # the last first: a dropped dimension leaves earlier axes in place
        if positions[axis] is not None:
            x = gather(x, positions[axis], axis=axis)
    return x


def _axis_positions(ref, axis: int, index, where: str):
    """0-based positions along `axis` as a vector (NumPy or tensor), and whether the index keeps the dimension."""
    if _is_colon(index):
        dim = ref.shape.as_list()[axis]
        return (np.arange(dim, dtype=np.int64) if dim is not None else tf_range(shape(ref, out_type=dtypes.int64)[axis])), True
    position = _zero_based(ref, axis, index, where)
    if isinstance(position, int):
        return np.array([position], np.int64), False
    if isinstance(position, np.ndarray):
        return position.reshape(-1), True
    keeps = position.shape.ndims != 0
    return reshape(cast(position, dtypes.int64), [-1]), keeps


def _scatter(where: str, scatter, ref, args):
    """`ref` with `ref[indices...] = updates` applied by `scatter` (a new tensor: tensors are values)."""
    if len(args) < 2:
        raise TypeError(f"{where}: expected indices and updates")
    *indices, updates = args
    ref = as_tensor(ref, where)
    if ref.shape.ndims is None:
        raise ValueError(f"{where}: the rank of {ref.name} is unknown")
    _checked_count(ref, len(indices), where)
    parts = [_axis_positions(ref, axis, index, where) for axis, index in enumerate(indices)]
    positions = [p for p, _ in parts]
    if all(isinstance(p, np.ndarray) for p in positions):
        grid = np.stack(np.meshgrid(*positions, indexing="ij"), axis=-1).reshape(-1, len(positions))
        kept = [p.size for p, keeps in parts if keeps]
    else:
        grid = reshape(stack(meshgrid(*[cast(p, dtypes.int64) if isinstance(p, Tensor) else p for p in positions],
                                      indexing="ij"), axis=-1), [-1, len(positions)])
        lengths = [shape(p, out_type=dtypes.int64)[0] if isinstance(p, Tensor) else np.int64(p.size)
                   for p, keeps in parts if keeps]
        kept = stack(lengths) if lengths else np.zeros(0, np.int64)
    values = as_tensor(updates, where) if is_tensor_like(updates) else None
    if values is None:
        values = as_tensor(np.asarray(updates, dtype=ref.dtype.base_dtype.as_numpy_dtype), where)
    elif values.dtype.base_dtype != ref.dtype.base_dtype:
        values = cast(values, ref.dtype.base_dtype)
    values = reshape(broadcast_to(_julia_broadcastable(values, sum(keeps for _, keeps in parts), kept), kept), [-1])
    return scatter(ref, grid, values)


def _julia_broadcastable(values, rank: int, kept):
    """`values` with trailing 1s up to `rank`, that of the indexed shape `kept`: Julia broadcasts from the first
    dimension, NumPy and TF from the last, so a vector set into `A[:, 1:2]` fills each column, as `A[:, 1:2] .= v`
    does in Julia. Values of higher rank whose dimensions other than 1s are those of `kept` take its shape, as
    Julia's `A[1, :] = ones(1, 3)` does (ADCME's tests write so)."""
    have = values.shape.ndims
    if have is not None and have > rank and isinstance(kept, list) and values.shape.is_fully_defined() and \
            [d for d in values.shape.as_list() if d != 1] == [d for d in kept if d != 1]:
        return reshape(values, kept)
    if have is None or have >= rank:
        return values
    if values.shape.is_fully_defined():
        return reshape(values, values.shape.as_list() + [1] * (rank - have))
    return reshape(values, concat([shape(values, out_type=dtypes.int64), np.ones(rank - have, np.int64)], 0))


def scatter_update(ref, *args):
    """ADCME's `scatter_update(A, i..., v)`: A with `A[i...] = v` (v broadcast to the indexed shape, as Julia does)."""
    return _scatter("scatter_update", tensor_scatter_update, ref, args)


def scatter_add(ref, *args):
    """ADCME's `scatter_add(A, i..., v)`: A with `A[i...] += v` (repeated indices add up)."""
    return _scatter("scatter_add", tensor_scatter_add, ref, args)


def scatter_sub(ref, *args):
    """ADCME's `scatter_sub(A, i..., v)`: A with `A[i...] -= v`."""
    return _scatter("scatter_sub", tensor_scatter_sub, ref, args)
