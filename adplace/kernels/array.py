"""Kernels of the array and math ops TF1 scripts reach first beyond the core set (gather, one_hot, argmax, pad,
logical and bitwise ops, ...), in the order of their ops modules. Same conventions as adplace.kernels.cpu: one
factory for the CPU and GPUs, written against `ctx.xp`, inputs never written in place.

GPU behaviour follows TF's GPU kernels where it differs from the CPU: an out-of-range gather index gives zeros there
instead of an error (checking would synchronise the stream).
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels.math import reduction_axes
from adplace.kernels.repeated_index import ufunc_at
from adplace.kernels.registration import GPU_ALL, NO_GPU, int_tuple, kernel, multi_output, object_scalar, with_xp

INDEX_TYPES = (_dtypes.int32, _dtypes.int64)


def _first_bad(bad: np.ndarray) -> tuple:
    """The multi-index of the first True of a host bool array."""
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(bad.ravel())), bad.shape))


def _index_text(index: tuple) -> str:
    """TF's SliceDebugString: [1,0] for an element of a rank-2 tensor, "" for a scalar."""
    return "[" + ",".join(str(i) for i in index) + "]" if index else ""


# --- array_ops ------------------------------------------------------------------------------------------------------
def _batch_take(xp, params, indices, axis: int, batch_dims: int):
    """np.take per batch element for the leading `batch_dims` dims, as one take: the batch is flattened and each
    batch element's indices are offset to its own rows of the flattened gather axis."""
    batch_shape = params.shape[:batch_dims]
    batch = int(np.prod(batch_shape, dtype=np.int64))
    middle = params.shape[batch_dims:axis]
    size = params.shape[axis]
    moved = xp.moveaxis(params.reshape((batch,) + params.shape[batch_dims:]), axis - batch_dims + 1, 1)
    rows = moved.reshape((batch * size,) + middle + params.shape[axis + 1:])
    flat_indices = indices.reshape((batch,) + indices.shape[batch_dims:])
    offsets = (xp.arange(batch, dtype=flat_indices.dtype) * size).reshape((batch,) + (1,) * (flat_indices.ndim - 1))
    out = xp.take(rows, flat_indices + offsets, axis=0)  # [batch] + index dims + middle + rest
    n_index, n_middle = flat_indices.ndim - 1, len(middle)
    perm = ([0] + list(range(1 + n_index, 1 + n_index + n_middle)) + list(range(1, 1 + n_index)) +
            list(range(1 + n_index + n_middle, out.ndim)))
    return xp.transpose(out, perm).reshape(batch_shape + middle + indices.shape[batch_dims:] +
                                           params.shape[axis + 1:])


@kernel("GatherV2", cpu_types=_dtypes.ALL | {_dtypes.resource}, gpu_types=GPU_ALL)
def _gather(op, ctx):
    xp, batch_dims = ctx.xp, op._attrs.get("batch_dims", 0)
    on_host = xp is np

    def gather(params, indices, axis):
        params = xp.asarray(params)
        axis = int_tuple(axis)[0]
        if not -params.ndim <= axis < params.ndim:
            raise InvalidArgumentError(None, op, f"Expected axis in the range [{-params.ndim}, {params.ndim}), but "
                                       f"got {axis}")
        axis %= params.ndim
        if batch_dims:
            indices = xp.asarray(indices)
            if params.shape[:batch_dims] != indices.shape[:batch_dims]:
                raise InvalidArgumentError(None, op, f"params.shape[:{batch_dims}] {dims_text(params.shape)} and "
                                           f"indices.shape[:{batch_dims}] {dims_text(indices.shape)} must be equal")
            bad = (indices < 0) | (indices >= params.shape[axis])
            if on_host and bad.any():
                at = _first_bad(bad)
                raise InvalidArgumentError(None, op, f"indices{_index_text(at)} = {int(indices[at])} is not in "
                                           f"[0, {params.shape[axis]})")
            out = _batch_take(xp, params, xp.where(bad, 0, indices), axis, batch_dims)
            if on_host:
                return out
            inside = ~bad  # TF's GPU kernel: zeros for an index out of range, no error
            mask = inside.reshape(inside.shape[:batch_dims] + (1,) * (axis - batch_dims) +
                                  inside.shape[batch_dims:] + (1,) * (params.ndim - axis - 1))
            return xp.where(mask, out, xp.zeros((), dtype=out.dtype))
        limit = params.shape[axis]
        if on_host:
            indices = np.asarray(indices)
            bad = (indices < 0) | (indices >= limit)
            if bad.any():
                at = _first_bad(bad)
                raise InvalidArgumentError(None, op, f"indices{_index_text(at)} = {int(indices[at])} is not in "
                                           f"[0, {limit})")
            out = np.take(params, indices, axis=axis)
            return _as_array(out) if params.dtype == object else out
        indices = xp.asarray(indices)
        inside = (indices >= 0) & (indices < limit)
        out = xp.take(params, xp.where(inside, indices, 0), axis=axis)  # TF's GPU kernel: zeros, no error
        mask = inside.reshape((1,) * axis + inside.shape + (1,) * (params.ndim - axis - 1))
        return xp.where(mask, out, xp.zeros((), dtype=out.dtype))
    return gather


def _as_array(value) -> np.ndarray:
    """A gathered object element as the 0-d object array handles travel in (np.take returns the object itself)."""
    return value if isinstance(value, np.ndarray) else object_scalar(value)


@kernel("SelectV2", gpu_types=GPU_ALL)
def _select_v2(op, ctx):
    xp = ctx.xp

    def select_v2(cond, t, e):
        try:
            return xp.where(cond, t, e)
        except ValueError:
            raise InvalidArgumentError(None, op, f"condition {dims_text(xp.shape(cond))}, then "
                                       f"{dims_text(xp.shape(t))}, and else {dims_text(xp.shape(e))} must be "
                                       f"broadcastable") from None
    return select_v2


@kernel("OneHot", gpu_types=GPU_ALL)
def _one_hot(op, ctx):
    axis, xp = op._attrs["axis"], ctx.xp

    def one_hot(indices, depth, on_value, off_value):
        indices, depth = xp.asarray(indices), int(int_tuple(depth)[0])
        if depth < 0:
            raise InvalidArgumentError(None, op, f"depth must be non-negative, got: {depth}")
        at = indices.ndim if axis == -1 else axis
        if at > indices.ndim:
            raise InvalidArgumentError(None, op, f"Expected axis to be -1 or between [0, {indices.ndim + 1}).  But "
                                       f"received: {axis}")
        positions = xp.arange(depth).reshape((depth,) + (1,) * (indices.ndim - at))
        hot = xp.expand_dims(indices, at) == positions
        return xp.where(hot, xp.asarray(on_value), xp.asarray(off_value))
    return one_hot


@kernel("Slice", gpu_types=GPU_ALL)
def _slice(op, ctx):
    xp = ctx.xp

    def slice_(x, begin, size):
        x = xp.asarray(x)
        begin, size = int_tuple(begin), int_tuple(size)
        if len(begin) != x.ndim or len(size) != x.ndim:
            raise InvalidArgumentError(None, op, f"Expected begin and size arguments to be 1-D tensors of size "
                                       f"{x.ndim}, but got shapes [{len(begin)}] and [{len(size)}] instead.")
        spec = []
        for i, (b, s, d) in enumerate(zip(begin, size, x.shape)):
            s = d - b if s == -1 else s
            if not 0 <= b <= d:
                raise InvalidArgumentError(None, op, f"Expected begin[{i}] in [0, {d}], but got {b}")
            if not 0 <= s <= d - b:
                raise InvalidArgumentError(None, op, f"Expected size[{i}] in [0, {d - b}], but got {s}")
            spec.append(slice(b, b + s))
        return x[tuple(spec)]
    return slice_


def _pairs(paddings, ndim: int, op) -> list:
    pairs = [tuple(int(v) for v in row) for row in np.asarray(int_tuple(paddings)).reshape(-1, 2)]
    if len(pairs) != ndim:
        raise InvalidArgumentError(None, op, f"The first dimension of paddings must be the rank of inputs"
                                   f"[{len(pairs)},2] [{ndim}]")
    for before, after in pairs:
        if before < 0 or after < 0:
            raise InvalidArgumentError(None, op, f"Paddings must be non-negative: {before} {after}")
    return pairs


@kernel("Pad", gpu_types=GPU_ALL)
def _pad(op, ctx):
    xp = ctx.xp
    return lambda x, paddings: xp.pad(xp.asarray(x), _pairs(paddings, xp.ndim(x), op) or 0, mode="constant")


@kernel("PadV2", gpu_types=GPU_ALL)
def _pad_v2(op, ctx):
    xp = ctx.xp

    def pad_v2(x, paddings, constant_values):
        x = xp.asarray(x)
        pairs = _pairs(paddings, x.ndim, op)
        out = xp.full(tuple(d + a + b for d, (a, b) in zip(x.shape, pairs)), constant_values, dtype=x.dtype)
        out[tuple(slice(a, a + d) for d, (a, _) in zip(x.shape, pairs))] = x  # a fresh array: filling it is safe
        return out
    return pad_v2


@kernel("MirrorPad", gpu_types=GPU_ALL)
def _mirror_pad(op, ctx):
    xp, mode = ctx.xp, op._attrs["mode"]
    offset = 1 if mode == "REFLECT" else 0

    def mirror_pad(x, paddings):
        x = xp.asarray(x)
        pairs = _pairs(paddings, x.ndim, op)
        for d, (before, after) in zip(x.shape, pairs):
            if before > d - offset or after > d - offset:
                relation = "less than" if offset else "no greater than"
                raise InvalidArgumentError(None, op, f"paddings must be {relation} the dimension size: {before}, "
                                           f"{after} not {relation} {d}")
        return xp.pad(x, pairs, mode="reflect" if offset else "symmetric")
    return mirror_pad


@kernel("MirrorPadGrad", _dtypes.NUMERIC)
def _mirror_pad_grad(op, ctx):
    xp, offset = ctx.xp, 1 if op._attrs["mode"] == "REFLECT" else 0

    def mirror_pad_grad(grad, paddings):
        out = xp.asarray(grad)
        for axis, (before, after) in enumerate(_pairs(paddings, out.ndim, op)):
            moved = xp.moveaxis(out, axis, 0)
            core = moved[before:moved.shape[0] - after].copy()
            n = core.shape[0]
            if before:
                core[offset:offset + before] += xp.flip(moved[:before], 0)
            if after:
                core[n - offset - after:n - offset] += xp.flip(moved[moved.shape[0] - after:], 0)
            out = xp.moveaxis(core, 0, axis)
        return out
    return mirror_pad_grad


kernel("ReverseV2", gpu_types=GPU_ALL)(with_xp(lambda xp: lambda x, axis: xp.flip(x, axis=int_tuple(axis))
                                               if int_tuple(axis) else x))


@kernel("IdentityN", None, None)
def _identity_n(op, ctx):
    return (lambda *xs: xs) if len(op._inputs) != 1 else (lambda x: x)


# --- math_ops -------------------------------------------------------------------------------------------------------
@kernel("UnsortedSegmentSum")
def _unsorted_segment_sum(op, ctx):
    xp = ctx.xp

    def unsorted_segment_sum(data, segment_ids, num_segments):
        data, ids = xp.asarray(data), xp.asarray(segment_ids)
        rows = int(int_tuple(num_segments)[0])
        if rows < 0:
            raise InvalidArgumentError(None, op, f"Input num_segments == {rows} must not be negative.")
        if data.shape[:ids.ndim] != ids.shape:
            raise InvalidArgumentError(None, op, f"data.shape = {list(data.shape)} does not start with "
                                       f"segment_ids.shape = {list(ids.shape)}")
        if xp is np and (ids >= rows).any():  # TF's GPU kernel drops such ids instead (no stream sync)
            at = _first_bad(ids >= rows)
            raise InvalidArgumentError(None, op, f"segment_ids{_index_text(at)} = {int(ids[at])} is out of range "
                                       f"[0, {rows})")
        out = xp.zeros((rows,) + data.shape[ids.ndim:], dtype=data.dtype)
        kept = (ids >= 0) & (ids < rows)  # TF drops negative ids
        if xp is not np or not kept.all():  # (on the host, dropping none: the data as they are)
            data = xp.where(kept.reshape(kept.shape + (1,) * (data.ndim - ids.ndim)), data, xp.zeros((), data.dtype))
            ids = xp.where(kept, ids, 0)
        ufunc_at(xp, "add", out, ids, data)
        return out
    return unsorted_segment_sum


def _arg_reduction(name: str):
    """ArgMax/ArgMin: the first index of the extremum along an axis; an empty axis is TF's InvalidArgumentError."""
    def factory(op, ctx):
        xp, out = ctx.xp, op._attrs["output_type"].as_numpy_dtype
        fn = getattr(xp, name)

        def arg_reduction(x, dimension):
            x, axis = xp.asarray(x), int(int_tuple(dimension)[0])
            if not -max(x.ndim, 1) <= axis < max(x.ndim, 1):
                raise InvalidArgumentError(None, op, f"Expected dimension in the range [{-x.ndim}, {x.ndim}), but "
                                           f"got {axis}")
            if x.shape[axis] == 0:
                raise InvalidArgumentError(None, op, f"Reduction axis {axis} is empty in shape {dims_text(x.shape)}")
            return fn(x, axis=axis).astype(out)
        return arg_reduction
    return factory


kernel("ArgMax", _dtypes.NUMERIC | {_dtypes.bool})(_arg_reduction("argmax"))
kernel("ArgMin", _dtypes.NUMERIC | {_dtypes.bool})(_arg_reduction("argmin"))


for _op_type, _fn in (("LogicalAnd", "logical_and"), ("LogicalOr", "logical_or"), ("LogicalNot", "logical_not")):
    kernel(_op_type, {_dtypes.bool}, {_dtypes.bool})(with_xp(lambda xp, _fn=_fn: getattr(xp, _fn)))
for _op_type, _fn in (("BitwiseAnd", "bitwise_and"), ("BitwiseOr", "bitwise_or"), ("BitwiseXor", "bitwise_xor"),
                      ("Invert", "invert"), ("LeftShift", "left_shift"), ("RightShift", "right_shift")):
    kernel(_op_type, _dtypes.INTEGER, _dtypes.INTEGER)(with_xp(lambda xp, _fn=_fn: getattr(xp, _fn)))


for _op_type, _fn in (("IsFinite", "isfinite"), ("IsNan", "isnan"), ("IsInf", "isinf")):
    kernel(_op_type, _dtypes.FLOATING, _dtypes.FLOATING)(with_xp(lambda xp, _fn=_fn: getattr(xp, _fn)))


@kernel("Any", {_dtypes.bool}, {_dtypes.bool})
def _any(op, ctx):
    keep, xp = op._attrs["keep_dims"], ctx.xp
    return lambda x, axis: xp.any(x, axis=reduction_axes(op, axis, np.ndim(x)), keepdims=keep)


@kernel("All", {_dtypes.bool}, {_dtypes.bool})
def _all(op, ctx):
    keep, xp = op._attrs["keep_dims"], ctx.xp
    return lambda x, axis: xp.all(x, axis=reduction_axes(op, axis, np.ndim(x)), keepdims=keep)



# --- random_ops -----------------------------------------------------------------------------------------------------
@kernel("RandomShuffle", gpu_types=NO_GPU)
def _random_shuffle(op, ctx):
    rng = ctx.random_generator(op)

    def random_shuffle(value):
        value = np.asarray(value)
        return value if value.ndim == 0 else value[rng.permutation(value.shape[0])]
    return random_shuffle


@kernel("Multinomial", _dtypes.FLOATING | _dtypes.INTEGER, NO_GPU)
def _multinomial(op, ctx):
    rng, out = ctx.random_generator(op), op._attrs["output_dtype"].as_numpy_dtype

    def multinomial(logits, num_samples):
        logits, num = np.asarray(logits, dtype=np.float64), int(num_samples)
        if logits.ndim != 2:
            raise InvalidArgumentError(None, op, f"logits should be a matrix, got shape {dims_text(logits.shape)}")
        if num < 0:
            raise InvalidArgumentError(None, op, f"num_samples should be nonnegative, got {num}")
        if logits.shape[1] == 0 and logits.shape[0] and num:
            raise InvalidArgumentError(None, op, "num_classes should be positive, got 0")
        weights = np.exp(logits - logits.max(axis=1, keepdims=True)) if logits.size else logits
        cdf = np.cumsum(weights, axis=1)
        draws = rng.random((logits.shape[0], num)) * (cdf[:, -1:] if logits.size else 0)
        picks = [np.searchsorted(row, u, side="right") for row, u in zip(cdf, draws)]
        return np.minimum(np.array(picks, dtype=out).reshape(logits.shape[0], num), max(logits.shape[1] - 1, 0))
    return multinomial


# --- array_ops: PlaceholderWithDefault, ShapeN; broadcast_ops: BroadcastTo ---------------------------------------------
kernel("PlaceholderWithDefault", gpu_types=GPU_ALL)(lambda op, ctx: lambda x: x)  # a fed value replaces the op


@kernel("ShapeN", gpu_types=GPU_ALL)
def _shape_n(op, ctx):
    out, xp = op._attrs["out_type"].as_numpy_dtype, ctx.xp
    return lambda *xs: multi_output(tuple(np.array(xp.shape(x), dtype=out) for x in xs))


@kernel("BroadcastTo", gpu_types=GPU_ALL)
def _broadcast_to(op, ctx):
    xp = ctx.xp

    def broadcast_to(x, shape):
        x, dims = xp.asarray(x), int_tuple(shape)
        try:
            return xp.broadcast_to(x, dims)
        except ValueError:
            raise InvalidArgumentError(None, op, f"Incompatible shapes: {dims_text(x.shape)} vs. "
                                       f"{dims_text(dims)}") from None
    return broadcast_to


# --- grid_ops: LinSpace -----------------------------------------------------------------------------------------------
@kernel("LinSpace", _dtypes.FLOATING, _dtypes.FLOATING)
def _lin_space(op, ctx):
    xp, dtype = ctx.xp, op._attrs["T"].as_numpy_dtype

    def lin_space(start, stop, num):
        for arg, value in (("start", start), ("stop", stop), ("num", num)):
            if np.ndim(value):
                raise InvalidArgumentError(None, op, f"{arg} must be a scalar, not shape {dims_text(np.shape(value))}")
        n = int(int_tuple(num)[0])
        if n <= 0:
            raise InvalidArgumentError(None, op, f"Requires num > 0: {n}")
        start, stop = dtype(int_tuple(start)[0]), dtype(int_tuple(stop)[0])
        step = (stop - start) / dtype(max(n - 1, 1))
        out = xp.arange(n, dtype=dtype) * step + start
        return out if n == 1 else xp.concatenate([out[:-1], xp.full((1,), stop, dtype=dtype)])
    return lin_space


# --- sort_ops: TopKV2, Unique -----------------------------------------------------------------------------------------
@kernel("TopKV2", _dtypes.FLOATING | _dtypes.INTEGER, _dtypes.FLOATING | set(INDEX_TYPES))
def _top_k(op, ctx):
    xp, index_type = ctx.xp, op._attrs.get("index_type", _dtypes.int32).as_numpy_dtype

    def top_k(x, k):
        x, k = xp.asarray(x), int(int_tuple(k)[0])
        if x.ndim < 1:
            raise InvalidArgumentError(None, op, f"input must be >= 1-D, got shape {dims_text(x.shape)}")
        if k < 0:
            raise InvalidArgumentError(None, op, f"Need k >= 0, got {k}")
        if x.shape[-1] < k:
            raise InvalidArgumentError(None, op, f"input must have at least k columns. Had {x.shape[-1]}, needed {k}")
        keys = ~x if x.dtype.kind in "iu" else -x  # descending; ~ reverses integers without overflow
        order = xp.argsort(keys, axis=-1, kind="stable") if xp is np else xp.argsort(keys, axis=-1)  # CuPy: stable
        indices = order[..., :k]
        return xp.take_along_axis(x, indices, axis=-1), indices.astype(index_type)
    return top_k


@kernel("Unique", gpu_types=NO_GPU)
def _unique(op, ctx):
    out = op._attrs["out_idx"].as_numpy_dtype

    def unique(x):
        x = np.asarray(x)
        if x.ndim != 1:
            raise InvalidArgumentError(None, op, f"unique expects a 1D vector. Got shape {dims_text(x.shape)}")
        values, first, inverse = np.unique(x, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")  # first appearance, as TF
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        return values[order], rank[inverse.reshape(-1)].astype(out)
    return unique
