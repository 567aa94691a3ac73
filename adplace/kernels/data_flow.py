"""Kernels of the index-driven data movement ops, in the order of their ops modules: GatherNd, ScatterNd and
TensorScatter* (adplace.ops.scatter_nd_ops), DynamicPartition and (Parallel)DynamicStitch (adplace.ops.data_flow_ops),
and the sorted, unsorted and sparse segment reductions (adplace.ops.segment_ops; UnsortedSegmentSum is in array.py).
Conventions of adplace.kernels.cpu: one factory for the CPU and GPUs, written against `ctx.xp`, inputs never written
in place.

Indices, partitions and segment ids are read on the host (int32 ones live there on a GPU already; an int64 one on a
CUDA GPU is copied back, one sync) and checked before anything is computed, so a bad index is TF's CPU error, with
TF's message, on every device. Where an index repeats, additions add up and the last write wins.
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.gpu import to_host
from adplace.kernels.repeated_index import ufunc_at
from adplace.kernels.registration import GPU_FLOATING, GPU_NUMERIC, NO_GPU, int_tuple, kernel, multi_output

_REAL = _dtypes.FLOATING | _dtypes.INTEGER
_GPU_REAL = GPU_FLOATING | {_dtypes.int32, _dtypes.int64}


def _host(indices) -> np.ndarray:
    return np.asarray(to_host(indices))


def _at(shape: tuple, flat: int) -> str:
    """TF's SliceDebugString: the multi-index of element `flat` of an array of `shape` ("" for a scalar)."""
    return "[" + ",".join(str(int(i)) for i in np.unravel_index(flat, shape)) + "]" if shape else ""


# --- GatherNd, ScatterNd, TensorScatter* -----------------------------------------------------------------------------
def _slice_rows(op, indices: np.ndarray, shape: tuple, what: str) -> np.ndarray:
    """The flat slice number of each index tuple of `indices` into `shape`; TF's error for a tuple out of range."""
    k = indices.shape[-1]
    tuples = indices.reshape(int(np.prod(indices.shape[:-1], dtype=np.int64)), k)
    bad = np.flatnonzero(((tuples < 0) | (tuples >= np.array(shape[:k], np.int64))).any(axis=1))
    if bad.size:
        raise InvalidArgumentError(None, op, f"indices{_at(indices.shape[:-1], bad[0])} = "
                                   f"[{', '.join(str(c) for c in tuples[bad[0]])}] does not index into {what} "
                                   f"{dims_text(shape)}")
    if not k:
        return np.zeros(len(tuples), np.int64)
    return np.ravel_multi_index(tuple(tuples.T), shape[:k]) if len(tuples) else np.zeros(0, np.int64)


def _as_slices(xp, array, k: int):
    """`array` viewed as rows of the slices an index tuple of length k names (a view: writes reach `array`)."""
    return array.reshape((int(np.prod(array.shape[:k], dtype=np.int64)),) + array.shape[k:])


@kernel("GatherNd", _dtypes.ALL, GPU_NUMERIC)
def _gather_nd(op, ctx):
    xp = ctx.xp

    def gather_nd(params, indices):
        params, indices = xp.asarray(params), _host(indices)
        if params.ndim < 1:
            raise InvalidArgumentError(None, op, "params must be at least a vector")
        if indices.ndim < 1:
            raise InvalidArgumentError(None, op, "indices must be at least a vector")
        k = indices.shape[-1]
        if k > params.ndim:
            raise InvalidArgumentError(None, op, f"index innermost dimension length must be <= params rank; saw: "
                                       f"{k} vs. {params.ndim}")
        out_shape = indices.shape[:-1] + params.shape[k:]
        if int(np.prod(indices.shape[:-1], dtype=np.int64)) and params.size == 0:
            raise InvalidArgumentError(None, op, f"Requested more than 0 entries, but params is empty.  Params "
                                       f"shape: {dims_text(params.shape)}")
        rows = _slice_rows(op, indices, params.shape, "param shape")
        return _as_slices(xp, params, k)[xp.asarray(rows)].reshape(out_shape)
    return gather_nd


def _check_scatter_nd(op, indices: np.ndarray, up_shape: tuple, shape: tuple) -> None:
    """TF 1.x's ScatterNd/TensorScatter* checks: updates = indices.shape[:-1] + shape[indices.shape[-1]:]."""
    if indices.ndim < 1:
        raise InvalidArgumentError(None, op, f"Indices shape must have rank at least one. Found:"
                                   f"{dims_text(indices.shape)}")
    if len(up_shape) < 1:
        raise InvalidArgumentError(None, op, f"Updates shape must have rank at least one. Found:"
                                   f"{dims_text(up_shape)}")
    if not shape:
        raise InvalidArgumentError(None, op, f"Output must be at least 1-D, got shape: {dims_text(shape)}")
    if int(np.prod(shape, dtype=np.int64)) == 0 and (indices.size or int(np.prod(up_shape, dtype=np.int64))):
        raise InvalidArgumentError(None, op, "Indices and updates specified for empty output shape")
    outer, k = indices.ndim - 1, indices.shape[-1]
    if up_shape[:outer] != indices.shape[:outer]:
        raise InvalidArgumentError(None, op, f"Outer dimensions of indices and update must match. Indices shape: "
                                   f"{dims_text(indices.shape)}, updates shape:{dims_text(up_shape)}")
    if len(up_shape) - outer != len(shape) - k:
        raise InvalidArgumentError(None, op, f"Inner dimensions of output shape must match inner dimensions of "
                                   f"updates shape. Output: {dims_text(shape)} updates: {dims_text(up_shape)}")
    if up_shape[outer:] != shape[k:]:
        inner = len(up_shape) - outer
        raise InvalidArgumentError(None, op, f"The inner {inner} dimensions of output.shape={dims_text(shape)} must "
                                   f"match the inner {inner} dimensions of updates.shape={dims_text(up_shape)}")


def _write_slices(xp, op, target, indices: np.ndarray, updates, how: str):
    """Write `updates` into the slices of the fresh array `target` named by `indices`; returns `target`."""
    _check_scatter_nd(op, indices, xp.shape(updates), target.shape)
    k = indices.shape[-1]
    rows = _slice_rows(op, indices, target.shape, "shape")
    slices = _as_slices(xp, target, k)
    values = xp.asarray(updates).reshape((rows.size,) + target.shape[k:])
    if how == "update":
        last = np.full(slices.shape[0], -1, np.int64)  # the last write wins, on every device
        np.maximum.at(last, rows, np.arange(rows.size))
        written = np.flatnonzero(last >= 0)
        slices[xp.asarray(written)] = values[xp.asarray(last[written])]
    else:
        ufunc_at(xp, how, slices, rows, values)
    return target


@kernel("ScatterNd", _dtypes.ALL, GPU_NUMERIC)
def _scatter_nd(op, ctx):
    """Updates added into zeros; strings (CPU only) start empty and repeats concatenate in index order, as TF's CPU
    kernel: scatter_nd([[1], [1]], [b"a", b"b"], [2]) is [b"", b"ab"]."""
    xp = ctx.xp

    def scatter_nd(indices, updates, shape):
        updates = xp.asarray(updates)
        if updates.dtype == object:
            target = np.full(int_tuple(shape), b"", dtype=object)
        else:
            target = xp.zeros(int_tuple(shape), dtype=updates.dtype)
        return _write_slices(xp, op, target, _host(indices), updates, "add")
    return scatter_nd


def _tensor_scatter(how: str):
    def factory(op, ctx):
        xp = ctx.xp

        def tensor_scatter(tensor, indices, updates):
            return _write_slices(xp, op, xp.array(tensor, copy=True), _host(indices), updates, how)
        return tensor_scatter
    return factory


kernel("TensorScatterUpdate", _dtypes.ALL, GPU_NUMERIC)(_tensor_scatter("update"))
kernel("TensorScatterAdd", _dtypes.NUMERIC, GPU_NUMERIC)(_tensor_scatter("add"))
kernel("TensorScatterSub", _dtypes.NUMERIC, GPU_NUMERIC)(_tensor_scatter("subtract"))


# --- DynamicPartition, DynamicStitch, ParallelDynamicStitch ---------------------------------------------------------
@kernel("DynamicPartition", _dtypes.ALL, GPU_NUMERIC)
def _dynamic_partition(op, ctx):
    xp, n = ctx.xp, op._attrs["num_partitions"]

    def dynamic_partition(data, partitions):
        data, partitions = xp.asarray(data), _host(partitions)
        if data.shape[:partitions.ndim] != partitions.shape:
            raise InvalidArgumentError(None, op, f"data.shape must start with partitions.shape, got data.shape = "
                                       f"{dims_text(data.shape)}, partitions.shape = {dims_text(partitions.shape)}")
        flat = partitions.ravel()
        bad = np.flatnonzero((flat < 0) | (flat >= n))
        if bad.size:
            raise InvalidArgumentError(None, op, f"partitions{_at(partitions.shape, bad[0])} = {flat[bad[0]]} is "
                                       f"not in [0, {n})")
        rows = data.reshape((flat.size,) + data.shape[partitions.ndim:])
        grouped = rows[xp.asarray(np.argsort(flat, kind="stable"))]  # one gather, partition after partition
        ends = np.cumsum(np.bincount(flat, minlength=n))
        return multi_output(tuple(grouped[int(start):int(end)] for start, end in zip(np.r_[0, ends[:-1]], ends)))
    return dynamic_partition


def _dynamic_stitch(op, ctx):
    xp = ctx.xp

    def stitch(*indices_and_data):
        n = len(indices_and_data) // 2
        indices = [_host(t) for t in indices_and_data[:n]]
        data = [xp.asarray(t) for t in indices_and_data[n:]]
        for m, (ix, d) in enumerate(zip(indices, data)):
            if d.shape[:ix.ndim] != ix.shape:
                raise InvalidArgumentError(None, op, f"data[{m}].shape = {dims_text(d.shape)} does not start with "
                                           f"indices[{m}].shape = {dims_text(ix.shape)}")
            if m and d.shape[ix.ndim:] != data[0].shape[indices[0].ndim:]:
                raise InvalidArgumentError(
                    None, op, f"Need data[0].shape[{indices[0].ndim}:] = data[{m}].shape[{ix.ndim}:], got "
                    f"data[0].shape = {dims_text(data[0].shape)}, data[{m}].shape = {dims_text(d.shape)}, "
                    f"indices[0].shape = {dims_text(indices[0].shape)}, indices[{m}].shape = {dims_text(ix.shape)}")
        for ix in indices:
            negative = np.flatnonzero(ix.ravel() < 0)
            if negative.size:
                raise InvalidArgumentError(None, op, f"indices[{negative[0]}] is out of range")
        flat = np.concatenate([ix.ravel() for ix in indices]).astype(np.int64)
        row_shape = data[0].shape[indices[0].ndim:]
        rows = xp.concatenate([d.reshape((ix.size,) + row_shape) for ix, d in zip(indices, data)])
        last = np.full(int(flat.max(initial=-1)) + 1, -1, np.int64)  # the last write of each row wins
        np.maximum.at(last, flat, np.arange(flat.size))
        out = xp.zeros((last.size,) + row_shape, dtype=data[0].dtype)
        written = np.flatnonzero(last >= 0)
        out[xp.asarray(written)] = rows[xp.asarray(last[written])]
        return out
    return stitch


kernel("DynamicStitch", _dtypes.ALL, GPU_NUMERIC)(_dynamic_stitch)
kernel("ParallelDynamicStitch", _dtypes.ALL, GPU_NUMERIC)(_dynamic_stitch)


# --- segment reductions ---------------------------------------------------------------------------------------------
def _reduce_segments(xp, kind: str, rows, ids: np.ndarray, num: int, empty_value):
    """out[s] = the `kind` reduction of rows[i] over the i with ids[i] == s (every id in [0, num)); a segment with
    no rows is `empty_value`."""
    row_shape, dtype = rows.shape[1:], rows.dtype
    counts = np.bincount(ids, minlength=num)[:num] if ids.size else np.zeros(num, np.int64)
    at = xp.asarray(ids)
    if kind in ("Sum", "Mean", "SqrtN"):
        out = xp.zeros((num,) + row_shape, dtype=dtype)
        ufunc_at(xp, "add", out, ids, rows)
    elif kind in ("Max", "Min"):
        out = xp.zeros((num,) + row_shape, dtype=dtype)
        if ids.size:
            first = np.full(num, ids.size, np.int64)
            np.minimum.at(first, ids, np.arange(ids.size))  # start from a real row: no dtype limits needed
            out[at] = rows[xp.asarray(first[ids])]
            ufunc_at(xp, "maximum" if kind == "Max" else "minimum", out, ids, rows)
    else:  # Prod
        out = xp.ones((num,) + row_shape, dtype=dtype)
        ufunc_at(xp, "multiply", out, ids, rows)
    counts_col = counts.reshape((num,) + (1,) * len(row_shape))
    if kind == "Mean":
        divisor = xp.asarray(np.maximum(counts_col, 1).astype(dtype))
        out = out // divisor + ((out % divisor != 0) & (out < 0)) if dtype.kind in "iu" else out / divisor
    elif kind == "SqrtN":
        out = out / xp.asarray(np.sqrt(np.maximum(counts_col, 1)).astype(dtype))
    if empty_value is not None and (counts == 0).any():
        out[xp.asarray(np.flatnonzero(counts == 0))] = empty_value
    return out.astype(dtype, copy=False)


def _check_sorted_runs(op, ids: np.ndarray, num: int, indices: np.ndarray | None = None, rows: int = 0) -> None:
    """TF's sorted-segment checks, in the order its kernels loop over the runs of equal ids: ids must not decrease,
    each run's id must be in [0, num), and (sparse ops) each run's indices in [0, rows)."""
    if not ids.size:
        return
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    run_ids = ids[starts]
    decreasing = np.r_[run_ids[1:] < run_ids[:-1], False]
    outside = (run_ids < 0) | (run_ids >= num)
    bad_index = np.zeros(ids.size, bool) if indices is None else (indices < 0) | (indices >= rows)
    flags = decreasing | outside | np.logical_or.reduceat(bad_index, starts)
    if not flags.any():
        return
    r = int(np.argmax(flags))
    if decreasing[r]:
        raise InvalidArgumentError(None, op, "segment ids are not increasing")
    if outside[r]:
        raise InvalidArgumentError(None, op, f"Segment id {run_ids[r]} out of range [0, {num}), possibly because "
                                   f"'segment_ids' input is not sorted.")
    at = int(starts[r] + np.argmax(bad_index[starts[r]:]))
    raise InvalidArgumentError(None, op, f"Bad: indices[{at}] == {indices[at]} out of range [0, {rows})")


def _check_rows(op, ids: np.ndarray, num: int) -> None:
    """TF's first check of sorted ids, before their order: the output has rows (last id + 1 or num_segments), and
    it has at least one when there are ids, so a negative last id fails here: [0, 0, -1] is "must be >= 0"."""
    if num < 0 or (ids.size and num == 0):
        raise InvalidArgumentError(None, op, "segment ids must be >= 0")


def _segment(kind: str):
    """SegmentX(data, segment_ids): sorted ids, last id + 1 rows, empty segments 0 (1 for products), as TF."""
    def factory(op, ctx):
        xp = ctx.xp

        def segment(data, segment_ids):
            data, ids = xp.asarray(data), _host(segment_ids)
            if ids.ndim != 1:
                raise InvalidArgumentError(None, op, "segment_ids should be a vector.")
            if data.ndim < 1 or ids.size != data.shape[0]:
                raise InvalidArgumentError(None, op, "segment_ids should be the same size as dimension 0 of input.")
            num = int(ids[-1]) + 1 if ids.size else 0
            _check_rows(op, ids, num)
            _check_sorted_runs(op, ids, num)
            return _reduce_segments(xp, kind, data, ids, num, 1 if kind == "Prod" else 0)
        return segment
    return factory


def _unsorted_segment(kind: str):
    """UnsortedSegmentX(data, segment_ids, num_segments): negative ids dropped; an empty segment is the identity of
    the reduction, the dtype's lowest (max) or highest (min) value, as TF."""
    def factory(op, ctx):
        xp, dtype = ctx.xp, op._outputs[0]._dtype.base_dtype
        empty_value = 1 if kind == "Prod" else dtype.min if kind == "Max" else dtype.max

        def unsorted_segment(data, segment_ids, num_segments):
            data, ids = xp.asarray(data), _host(segment_ids)
            num = int(int_tuple(num_segments)[0])
            if data.shape[:ids.ndim] != ids.shape:
                raise InvalidArgumentError(None, op, f"data.shape = {dims_text(data.shape)} does not start with "
                                           f"segment_ids.shape = {dims_text(ids.shape)}")
            if num < 0:
                raise InvalidArgumentError(None, op, f"Input num_segments == {num} must not be negative.")
            flat = ids.ravel().astype(np.int64)
            bad = np.flatnonzero(flat >= num)
            if bad.size:
                raise InvalidArgumentError(None, op, f"segment_ids{_at(ids.shape, bad[0])} = {flat[bad[0]]} is out "
                                           f"of range [0, {num})")
            kept = np.flatnonzero(flat >= 0)
            rows = data.reshape((flat.size,) + data.shape[ids.ndim:])
            if kept.size != flat.size:
                rows = rows[xp.asarray(kept)]
            return _reduce_segments(xp, kind, rows, flat[kept], num, empty_value)
        return unsorted_segment
    return factory


def _sparse_segment(kind: str, with_num_segments: bool):
    """SparseSegmentX(data, indices, segment_ids[, num_segments]): the rows data[indices] reduced by sorted ids."""
    def factory(op, ctx):
        xp = ctx.xp

        def sparse_segment(data, indices, segment_ids, num_segments=None):
            data, indices, ids = xp.asarray(data), _host(indices), _host(segment_ids)
            if indices.ndim != 1:
                raise InvalidArgumentError(None, op, "indices should be a vector.")
            if ids.ndim != 1:
                raise InvalidArgumentError(None, op, "segment_ids should be a vector.")
            if indices.size != ids.size:
                raise InvalidArgumentError(None, op, "segment_ids and indices should have same size.")
            last = int(ids[-1]) + 1 if ids.size else 0
            num = int(int_tuple(num_segments)[0]) if with_num_segments else last
            if num < 0:
                raise InvalidArgumentError(None, op, "segment ids must be >= 0")
            if with_num_segments and num < last:
                raise InvalidArgumentError(None, op, "segment ids must be < num_segments")
            _check_rows(op, ids, num)
            _check_sorted_runs(op, ids, num, indices, data.shape[0])
            return _reduce_segments(xp, kind, data[xp.asarray(indices)], ids, num, 0)
        return sparse_segment
    return factory


_SORTED_TYPES = {"Sum": (_dtypes.NUMERIC, GPU_NUMERIC), "Mean": (_dtypes.NUMERIC, GPU_NUMERIC),
                 "Prod": (_dtypes.NUMERIC, GPU_NUMERIC), "Max": (_REAL, _GPU_REAL), "Min": (_REAL, _GPU_REAL)}
for _kind in ("Sum", "Mean", "Max", "Min", "Prod"):
    kernel(f"Segment{_kind}", *_SORTED_TYPES[_kind])(_segment(_kind))
for _kind in ("Max", "Min", "Prod"):
    kernel(f"UnsortedSegment{_kind}", *_SORTED_TYPES[_kind])(_unsorted_segment(_kind))
for _kind in ("Sum", "Mean", "SqrtN"):
    for _with_num in (False, True):
        kernel(f"SparseSegment{_kind}" + ("WithNumSegments" if _with_num else ""),
               _REAL if _kind == "Sum" else _dtypes.FLOATING, NO_GPU)(_sparse_segment(_kind, _with_num))
