"""Kernels of the constant, array, random and control-flow ops, for the CPU, virtual GPUs and CUDA GPUs, keyed by the
op types of adplace.ops, in the same order. The other op families' kernels sit beside this module (math.py, state.py,
nn.py, conv.py, array.py, linalg.py, checks.py); adplace.kernels.registration holds what they share.

A kernel factory runs once per (op, session) when a plan is built and returns the function the hot loop calls:
`factory(op, ctx) -> kernel(*inputs)`. Ref inputs (a variable's Assign target) are not passed; the factory binds the
variable's cell through `ctx.variable(op)` instead. Arrays are never written in place, so outputs may alias inputs.

Kernels are written against the array module `ctx.xp`: NumPy on the CPU and on virtual GPUs, CuPy on a CUDA GPU
(adplace.kernels.gpu supplies that context, its streams and its fused elementwise kernels). Shape-like inputs
(int32 shapes, axes, permutations) are host arrays on every device, as in TF's HostMemory inputs.

GPU dtype support follows TF's registrations (no int32 variables, no int32 MatMul, no strings on the GPU), which is
what the placer reads.
"""
from __future__ import annotations

import math

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import broadcast_reduction_axes, dims_text
from adplace.kernels.gpu import to_host
from adplace.kernels.registration import (ALL, GPU_ALL, constant_kernel, fixed, forward, int_tuple, kernel,
                                          multi_output, with_xp)


def host_ints(value) -> tuple:
    """int_tuple's value, taking the common case (a host array of rank 0 or 1: a shape, axes) without its generic
    conversions: kernels call this on every run."""
    if type(value) is np.ndarray and value.ndim <= 1:
        items = value.tolist()
        return tuple(items) if value.ndim else (items,)
    return int_tuple(value)


def host_int(value):
    """The first (usually only) element of a scalar shape-like input, as int_tuple(value)[0]."""
    if type(value) is np.ndarray and value.ndim == 0:
        return value.tolist()
    return int_tuple(value)[0]


_SHAPE_MEMO_SIZE = 64  # distinct input shapes a kernel remembers the output shape of (more: not remembered)


def unfed_placeholder_error(op) -> InvalidArgumentError:
    """TF's error for running a placeholder nobody fed."""
    return InvalidArgumentError(None, op, f"You must feed a value for placeholder tensor '{op.name}' with dtype "
                                f"{op._attrs['dtype'].name} and shape {dims_text(op._attrs['shape'].as_tuple())}"
                                f"\n\t [[{{{{node {op.name}}}}}]]")


# --- constant_op / array_ops ---------------------------------------------------------------------------------------
@kernel("Const", gpu_types=GPU_ALL)
def _const(op, ctx):
    value = ctx.to_device(op._attrs["value"])  # uploaded once, when the plan is built
    return constant_kernel(value)


@kernel("Placeholder", gpu_types=GPU_ALL)
def _placeholder(op, ctx):
    def unfed():  # plans refuse unfed placeholders before running; this guards direct kernel use
        raise unfed_placeholder_error(op)
    return unfed


# Identity also passes handles and datasets along (a TF function returning a dataset ends in Identity(variant)).
kernel("Identity", cpu_types=ALL | {_dtypes.resource, _dtypes.variant}, gpu_types=GPU_ALL)(fixed(forward))
kernel("StopGradient", gpu_types=GPU_ALL)(fixed(forward))
kernel("PreventGradient", gpu_types=GPU_ALL)(fixed(forward))


@kernel("Shape", gpu_types=GPU_ALL)
def _shape(op, ctx):
    out, xp = op._attrs["out_type"].as_numpy_dtype, ctx.xp
    return lambda x: np.array(xp.shape(x), dtype=out)


@kernel("Size", gpu_types=GPU_ALL)
def _size(op, ctx):
    out, xp = op._attrs["out_type"].as_numpy_dtype, ctx.xp
    return lambda x: out(xp.size(x))


kernel("Rank", gpu_types=GPU_ALL)(with_xp(lambda xp: lambda x: np.int32(xp.ndim(x))))


@kernel("Reshape", gpu_types=GPU_ALL)
def _reshape(op, ctx):
    xp = ctx.xp

    def reshape(x, shape):
        try:
            return (x if type(x) is np.ndarray else xp.asarray(x)).reshape(host_ints(shape))
        except ValueError:
            wanted = int_tuple(shape)
            known = math.prod(d for d in wanted if d != -1)
            need = f"requires a multiple of {known}" if -1 in wanted else f"has {known}"
            raise InvalidArgumentError(None, op, f"Input to reshape is a tensor with {xp.size(x)} values, but the "
                                       f"requested shape {need}") from None
    return reshape


kernel("Transpose", gpu_types=GPU_ALL)(with_xp(lambda xp: lambda x, perm: xp.transpose(x, int_tuple(perm))))


@kernel("Squeeze", gpu_types=GPU_ALL)
def _squeeze(op, ctx):
    axes, xp = tuple(op._attrs["squeeze_dims"]) or None, ctx.xp  # a list when imported from a GraphDef
    out_shapes = {}  # NumPy input shape -> output shape, kept once its checks passed: later runs just reshape

    def squeeze(x):
        if type(x) is np.ndarray:
            out_shape = out_shapes.get(x.shape)
            if out_shape is not None:
                return x.reshape(out_shape)
        if axes is not None:
            for a in axes:
                if xp.shape(x)[a] != 1:
                    raise InvalidArgumentError(None, op, f"Can not squeeze dim[{a}], expected a dimension of 1, got "
                                               f"{xp.shape(x)[a]}")
        out = xp.squeeze(x, axis=axes)
        if type(x) is np.ndarray:
            _remember(out_shapes, x.shape, out.shape)
        return out
    return squeeze


kernel("ExpandDims", gpu_types=GPU_ALL)(with_xp(lambda xp: lambda x, dim: xp.expand_dims(x, int_tuple(dim)[0])))


@kernel("Split", gpu_types=GPU_ALL)
def _split(op, ctx):
    n = op._attrs["num_split"]
    memo = {}  # (input shape, axis) -> the index of each piece, kept once its check passed

    def split(axis, x):
        axis = host_int(axis)
        key = (x.shape, axis)
        index = memo.get(key)
        if index is None:
            size = x.shape[axis]
            if size % n:
                raise InvalidArgumentError(None, op, f"Number of ways to split should evenly divide the split "
                                           f"dimension, but got split_dim {axis} (size = {size}) and num_split {n}")
            index = _piece_index([i * (size // n) for i in range(n + 1)], axis, len(x.shape))
            _remember(memo, key, index)
        return multi_output([x[i] for i in index])
    return split


def _piece_index(bounds: list, axis: int, ndim: int) -> list:
    """The index of each view x[bounds[i]:bounds[i + 1]] along `axis` of a rank-`ndim` x (xp.split's pieces)."""
    before = (slice(None),) * (axis % ndim)
    return [(*before, slice(start, end)) if before else slice(start, end) for start, end in zip(bounds, bounds[1:])]


def _remember(memo: dict, key, value) -> None:
    """memo[key] = value, unless the memo holds _SHAPE_MEMO_SIZE entries already (ever new shapes)."""
    if len(memo) < _SHAPE_MEMO_SIZE:
        memo[key] = value


@kernel("SplitV", gpu_types=GPU_ALL)
def _split_v(op, ctx):
    memo = {}  # (input shape, sizes, axis) -> the index of each piece, kept once its check passed

    def split_v(x, sizes, axis):
        axis, sizes = host_int(axis), host_ints(sizes)
        key = (x.shape, sizes, axis)
        index = memo.get(key)
        if index is None:
            size, sizes = x.shape[axis], list(sizes)
            if -1 in sizes:
                sizes[sizes.index(-1)] = size - (sum(sizes) + 1)
            if sum(sizes) != size:
                raise InvalidArgumentError(None, op, f"Determined shape must either match input shape along "
                                           f"split_dim exactly if fully specified, or be less than the size of the "
                                           f"input along split_dim if not fully specified. Got: {sum(sizes)} vs "
                                           f"{size}")
            bounds = [0]
            for s in sizes:
                bounds.append(bounds[-1] + s)
            index = _piece_index(bounds, axis, len(x.shape))
            _remember(memo, key, index)
        return multi_output([x[i] for i in index])
    return split_v


kernel("ConcatV2", gpu_types=GPU_ALL)(with_xp(lambda xp: lambda *args: xp.concatenate(args[:-1],
                                                                                       axis=host_int(args[-1]))))


@kernel("Pack", cpu_types=_dtypes.ALL | {_dtypes.resource}, gpu_types=GPU_ALL)
def _pack(op, ctx):
    axis, xp = op._attrs["axis"], ctx.xp
    if op._outputs[0]._dtype.base_dtype is _dtypes.resource:
        return _pack_handles
    if xp is not np:
        return lambda *xs: xp.stack(xs, axis=axis)
    targets = {}  # (input shape, count) -> (output shape, its axes with the new one first), once np.stack took them

    def pack(*xs):
        """np.stack's value; NumPy arrays of one shape and dtype are written into one fresh array (np.stack's own
        Python code costs several times as much on small inputs)."""
        first = xs[0]
        if type(first) is np.ndarray:
            shape, dtype = first.shape, first.dtype
            target = targets.get((shape, len(xs)))
            if target is not None and not dtype.hasobject:  # an object element may be an array: np.stack unpacks it
                for x in xs:
                    if type(x) is not np.ndarray or x.shape != shape or x.dtype != dtype:
                        break
                else:
                    out_shape, order = target
                    out = np.empty(out_shape, dtype)
                    rows = out if order is None else out.transpose(order)  # a view: rows[i] is input i's place
                    for i, x in enumerate(xs):
                        rows[i] = x
                    return out
        out = np.stack(xs, axis=axis)
        if type(first) is np.ndarray:
            at = axis % (first.ndim + 1)
            _remember(targets, (first.shape, len(xs)), (out.shape, (at, *range(at), *range(at + 1, first.ndim + 1))
                                                        if at else None))
        return out
    return pack


def _pack_handles(*handles):
    """Resource handles (0-d object arrays holding a queue, ...) as a vector of handles (QueueBase.from_list): filled
    one by one, since np.stack would look into the objects they hold."""
    out = np.empty(len(handles), dtype=object)
    for i, h in enumerate(handles):
        out[i] = h[()] if isinstance(h, np.ndarray) and h.ndim == 0 else h
    return out


@kernel("Unpack", gpu_types=GPU_ALL)
def _unpack(op, ctx):
    axis, num, xp = op._attrs["axis"], op._attrs["num"], ctx.xp

    def unpack(x):
        if xp.shape(x)[axis] != num:
            raise InvalidArgumentError(None, op, f"Input shape axis {axis} must equal {num}, got shape "
                                       f"{list(xp.shape(x))}")
        return multi_output(tuple(xp.moveaxis(x, axis, 0)))
    return unpack


@kernel("Fill", gpu_types=GPU_ALL)
def _fill(op, ctx):
    xp, dtype = ctx.xp, op._outputs[0]._dtype.as_numpy_dtype
    return lambda dims, value: xp.full(int_tuple(dims), value, dtype=dtype)


kernel("ZerosLike", gpu_types=GPU_ALL)(with_xp(lambda xp: xp.zeros_like))


@kernel("StridedSlice", gpu_types=GPU_ALL)
def _strided_slice(op, ctx):
    spec, xp = op._attrs["slice_spec"], ctx.xp

    def strided_slice(x):
        try:
            return xp.asarray(x)[spec]
        except IndexError as e:
            raise InvalidArgumentError(None, op, f"slice index out of bounds for shape {list(xp.shape(x))}: "
                                       f"{e}") from None
    return strided_slice


@kernel("StridedSliceGrad", gpu_types=GPU_ALL)
def _strided_slice_grad(op, ctx):
    spec, xp = op._attrs["slice_spec"], ctx.xp

    def strided_slice_grad(shape, dy):
        out = xp.zeros(int_tuple(shape), dtype=dy.dtype)
        out[spec] = dy
        return out
    return strided_slice_grad


@kernel("Tile", gpu_types=GPU_ALL)
def _tile(op, ctx):
    xp = ctx.xp

    def tile(x, multiples):
        if type(multiples) is not np.ndarray and hasattr(multiples, "get"):  # a device array (CuPy)
            multiples = multiples.get()
        multiples = np.asarray(multiples)
        if multiples.ndim != 1:
            raise InvalidArgumentError(None, op, f"Expected multiples to be 1-D, but got shape "
                                       f"{dims_text(multiples.shape)}")
        reps = tuple(multiples.tolist())
        if len(reps) != xp.ndim(x):
            raise InvalidArgumentError(None, op, f"Expected multiples argument to be a vector of length {xp.ndim(x)} "
                                       f"but got length {len(reps)}")
        if reps and min(reps) < 0:
            i = next(i for i, m in enumerate(reps) if m < 0)
            raise InvalidArgumentError(None, op, f"Expected multiples[{i}] >= 0, but got {reps[i]}")
        return xp.tile(x, reps)
    return tile


@kernel("Select", gpu_types=GPU_ALL)
def _select(op, ctx):
    xp = ctx.xp

    def select(cond, t, e):
        cond, t = xp.asarray(cond), xp.asarray(t)
        if cond.ndim == 1 and t.ndim > 1:  # TF1: a vector condition picks whole rows
            if cond.shape[0] != t.shape[0]:
                raise InvalidArgumentError(None, op, f"Condition vector has {cond.shape[0]} entries but the first "
                                           f"dimension of then/else is {t.shape[0]}")
            cond = cond.reshape((-1,) + (1,) * (t.ndim - 1))
        elif cond.ndim and cond.shape != t.shape:
            raise InvalidArgumentError(None, op, f"'then' and 'condition' must have the same shape: "
                                       f"{dims_text(cond.shape)} vs {dims_text(t.shape)}")
        if xp.shape(e) != t.shape:
            raise InvalidArgumentError(None, op, f"'then' and 'else' must have the same shape: "
                                       f"{dims_text(t.shape)} vs {dims_text(xp.shape(e))}")
        return xp.where(cond, t, e)
    return select


kernel("Where", gpu_types=GPU_ALL)(with_xp(lambda xp: lambda cond: xp.argwhere(cond).astype(np.int64)))


@kernel("BroadcastGradientArgs", {_dtypes.int32, _dtypes.int64})
def _broadcast_gradient_args(op, ctx):
    dtype = op._attrs["T"].as_numpy_dtype

    def broadcast_gradient_args(s0, s1):
        try:
            r0, r1 = broadcast_reduction_axes(tuple(int(d) for d in s0), tuple(int(d) for d in s1))
        except ValueError:
            raise InvalidArgumentError(None, op, f"Incompatible shapes: {dims_text(tuple(s0))} vs. "
                                       f"{dims_text(tuple(s1))}") from None
        return np.array(r0, dtype=dtype), np.array(r1, dtype=dtype)
    return broadcast_gradient_args


@kernel("InvertPermutation", {_dtypes.int32, _dtypes.int64})
def _invert_permutation(op, ctx):
    """Checked and inverted on the host (an int64 one on a CUDA GPU is copied back, then up again)."""
    xp = ctx.xp

    def invert_permutation(x):
        x = np.asarray(to_host(x))
        if sorted(x.tolist()) != list(range(x.size)):
            raise InvalidArgumentError(None, op, f"{x.tolist()} is not a permutation of 0..{x.size - 1}")
        out = np.empty_like(x)
        out[x] = np.arange(x.size, dtype=x.dtype)
        return xp.asarray(out)
    return invert_permutation



# --- random_ops -----------------------------------------------------------------------------------------------------
def _random(sample):
    def factory(op, ctx):
        rng = ctx.random_generator(op)
        dtype = op._attrs["dtype"].as_numpy_dtype
        return lambda shape: sample(rng, int_tuple(shape)).astype(dtype, copy=False)
    return factory


def _truncated(rng, shape):
    out = rng.standard_normal(shape, dtype=np.float64)
    bad = abs(out) > 2
    while bad.any():
        out[bad] = rng.standard_normal(int(bad.sum()), dtype=np.float64)
        bad = abs(out) > 2
    return out


@kernel("RandomUniformInt", {_dtypes.int32, _dtypes.int64}, {_dtypes.int32, _dtypes.int64})
def _random_uniform_int(op, ctx):
    rng, dtype = ctx.random_generator(op), op._attrs["Tout"].as_numpy_dtype

    def uniform_int(shape, lo, hi):
        if lo >= hi:
            raise InvalidArgumentError(None, op, f"Need minval < maxval: {lo} >= {hi}")
        return rng.integers(lo, hi, size=int_tuple(shape), dtype=dtype)
    return uniform_int


kernel("RandomUniform", _dtypes.FLOATING, _dtypes.FLOATING)(_random(lambda rng, s: rng.random(s)))
kernel("RandomStandardNormal", _dtypes.FLOATING, _dtypes.FLOATING)(_random(lambda rng, s: rng.standard_normal(s)))
kernel("TruncatedNormal", _dtypes.FLOATING, _dtypes.FLOATING)(_random(_truncated))



# --- control_flow_ops -----------------------------------------------------------------------------------------------
kernel("NoOp", None, None)(fixed(constant_kernel(None)))
