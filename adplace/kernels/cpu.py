"""Array kernels for the CPU, virtual GPUs and CUDA GPUs, keyed by the op types of adplace.ops, in the same order.

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

import functools
import math
import sys
import time

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import FailedPreconditionError, InvalidArgumentError
from adplace.framework.operation import ref_variable
from adplace.framework.registry import register_kernel
from adplace.framework.tensor_shape import broadcast_reduction_axes, dims_text
from adplace.kernels import special

ALL = _dtypes.ALL
GPU_ALL = ALL - {_dtypes.string}
GPU_NUMERIC = _dtypes.FLOATING | _dtypes.COMPLEX | {_dtypes.int32, _dtypes.int64}  # int32 in host memory, as TF
GPU_FLOAT = _dtypes.FLOATING | _dtypes.COMPLEX
GPU_VARIABLE = _dtypes.FLOATING | _dtypes.COMPLEX | {_dtypes.int64, _dtypes.bool}  # TF has no int32 GPU variable


NO_GPU = frozenset()


def kernel(op_type: str, cpu_types=ALL, gpu_types=GPU_NUMERIC):
    """Register one NumPy factory for the CPU and, with TF's GPU dtype set, for (virtual) GPUs.

    A dtype set of None accepts every dtype (NoOp); `gpu_types=NO_GPU` registers no GPU kernel.
    """
    def decorate(factory):
        register_kernel(op_type, "CPU", cpu_types)(factory)
        if gpu_types is None or gpu_types:
            register_kernel(op_type, "GPU", gpu_types)(factory)
        return factory
    return decorate


def unfed_placeholder_error(op) -> InvalidArgumentError:
    """TF's error for running a placeholder nobody fed."""
    return InvalidArgumentError(None, op, f"You must feed a value for placeholder tensor '{op.name}' with dtype "
                                f"{op._attrs['dtype'].name} and shape {dims_text(op._attrs['shape'].as_tuple())}"
                                f"\n\t [[{{{{node {op.name}}}}}]]")


class OutputBuffer:
    """A kernel's output array from its previous run, handed back for reuse once nothing else refers to it.

    A large output written into fresh memory every step costs page faults (glibc returns big blocks to the OS);
    TF's allocators keep such memory. The buffer is reused only when the reference count shows that no fetch, view,
    variable or other thread holds it, so no value anyone can see is overwritten.
    """

    __slots__ = ("array",)
    MIN_ELEMENTS = 1 << 16  # smaller outputs: malloc reuses their memory well enough, and the check would cost more

    def __init__(self):
        self.array = None

    def get(self, shape: tuple, dtype):
        """The kept array if it is free and fits (else None, after keeping a new one for next time)."""
        array = self.array
        if array is not None and sys.getrefcount(array) == _FREE_REFS and array.shape == shape \
                and array.dtype == dtype:
            return array
        if _FREE_REFS is None or math.prod(shape) < self.MIN_ELEMENTS:
            self.array = None
            return None
        self.array = np.empty(shape, dtype)
        return self.array


# getrefcount(array) in OutputBuffer.get when only the buffer holds it: the slot, the local, the call's argument.
# Reference counts mean this only on a CPython with the GIL; elsewhere buffers are never reused.
_FREE_REFS = 3 if sys.implementation.name == "cpython" and getattr(sys, "_is_gil_enabled", lambda: True)() else None


def fixed(fn):
    """A factory for kernels that need nothing from the op or the device."""
    return lambda op, ctx: fn


def with_xp(make):
    """A factory for kernels that need only the device's array module: `make(xp) -> kernel`, built once per module."""
    built = {}

    def factory(op, ctx):
        xp = ctx.xp
        kernel = built.get(xp)
        if kernel is None:
            kernel = built[xp] = make(xp)
        return kernel
    return factory


def _axes(axis) -> tuple:
    """A scalar or vector of axes (or dims) as a tuple of Python ints; `tolist` is the fast way out of NumPy."""
    if type(axis) is not np.ndarray and hasattr(axis, "get"):  # a device array (CuPy): shapes are tiny, fetch it
        axis = axis.get()
    return tuple(np.asarray(axis).ravel().tolist())


# --- constant_op / array_ops ---------------------------------------------------------------------------------------
@kernel("Const", gpu_types=GPU_ALL)
def _const(op, ctx):
    value = ctx.to_device(op._attrs["value"])  # uploaded once, when the plan is built
    return lambda: value


@kernel("Placeholder", gpu_types=GPU_ALL)
def _placeholder(op, ctx):
    def unfed():  # plans refuse unfed placeholders before running; this guards direct kernel use
        raise unfed_placeholder_error(op)
    return unfed


kernel("Identity", gpu_types=GPU_ALL)(fixed(lambda x: x))
kernel("StopGradient", gpu_types=GPU_ALL)(fixed(lambda x: x))


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
            return xp.asarray(x).reshape(_axes(shape))
        except ValueError:
            wanted = list(_axes(shape))
            raise InvalidArgumentError(None, op, f"Input to reshape is a tensor with {xp.size(x)} values, but the "
                                       f"requested shape {wanted} does not fit it") from None
    return reshape


kernel("Transpose", gpu_types=GPU_ALL)(with_xp(lambda xp: lambda x, perm: xp.transpose(x, _axes(perm))))


@kernel("Squeeze", gpu_types=GPU_ALL)
def _squeeze(op, ctx):
    axes, xp = op._attrs["squeeze_dims"] or None, ctx.xp

    def squeeze(x):
        if axes is not None:
            for a in axes:
                if xp.shape(x)[a] != 1:
                    raise InvalidArgumentError(None, op, f"Can not squeeze dim[{a}], expected a dimension of 1, got "
                                               f"{xp.shape(x)[a]}")
        return xp.squeeze(x, axis=axes)
    return squeeze


kernel("ExpandDims", gpu_types=GPU_ALL)(with_xp(lambda xp: lambda x, dim: xp.expand_dims(x, _axes(dim)[0])))


def _outputs(pieces):
    """A multi-output kernel's result: the pieces, or the one value itself (plans hold a 1-output op's value bare)."""
    return pieces if len(pieces) != 1 else pieces[0]


@kernel("Split", gpu_types=GPU_ALL)
def _split(op, ctx):
    n, xp = op._attrs["num_split"], ctx.xp

    def split(axis, x):
        axis = _axes(axis)[0]
        if xp.shape(x)[axis] % n:
            raise InvalidArgumentError(None, op, f"Number of ways to split should evenly divide the split dimension, "
                                       f"but got split_dim {axis} (size = {xp.shape(x)[axis]}) and num_split {n}")
        return _outputs(xp.split(x, n, axis=axis))
    return split


@kernel("SplitV", gpu_types=GPU_ALL)
def _split_v(op, ctx):
    xp = ctx.xp

    def split_v(x, sizes, axis):
        axis, sizes = _axes(axis)[0], list(_axes(sizes))
        if -1 in sizes:
            sizes[sizes.index(-1)] = xp.shape(x)[axis] - (sum(sizes) + 1)
        if sum(sizes) != xp.shape(x)[axis]:
            raise InvalidArgumentError(None, op, f"Determined shape must either match input shape along split_dim "
                                       f"exactly if fully specified, or be less than the size of the input along "
                                       f"split_dim if not fully specified. Got: {sum(sizes)} vs {xp.shape(x)[axis]}")
        return _outputs(xp.split(x, np.cumsum(sizes)[:-1].tolist(), axis=axis))
    return split_v


kernel("ConcatV2", gpu_types=GPU_ALL)(with_xp(lambda xp: lambda *args: xp.concatenate(args[:-1],
                                                                                       axis=_axes(args[-1])[0])))


@kernel("Pack", gpu_types=GPU_ALL)
def _pack(op, ctx):
    axis, xp = op._attrs["axis"], ctx.xp
    return lambda *xs: xp.stack(xs, axis=axis)


@kernel("Unpack", gpu_types=GPU_ALL)
def _unpack(op, ctx):
    axis, num, xp = op._attrs["axis"], op._attrs["num"], ctx.xp

    def unpack(x):
        if xp.shape(x)[axis] != num:
            raise InvalidArgumentError(None, op, f"Input shape axis {axis} must equal {num}, got shape "
                                       f"{list(xp.shape(x))}")
        return _outputs(tuple(xp.moveaxis(x, axis, 0)))
    return unpack


@kernel("Fill", gpu_types=GPU_ALL)
def _fill(op, ctx):
    xp, dtype = ctx.xp, op._outputs[0]._dtype.as_numpy_dtype
    return lambda dims, value: xp.full(_axes(dims), value, dtype=dtype)


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
        out = xp.zeros(_axes(shape), dtype=dy.dtype)
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
    def invert_permutation(x):
        x = np.asarray(x)
        if sorted(x.tolist()) != list(range(x.size)):
            raise InvalidArgumentError(None, op, f"{x.tolist()} is not a permutation of 0..{x.size - 1}")
        out = np.empty_like(x)
        out[x] = np.arange(x.size, dtype=x.dtype)
        return out
    return invert_permutation


# --- math_ops -------------------------------------------------------------------------------------------------------
def _sigmoid(xp):
    return lambda x: xp.exp(-xp.logaddexp(xp.zeros((), dtype=x.dtype), -x))


# Elementwise ops by the name of their array-module function (NumPy and CuPy share the names), or a maker `xp -> fn`.
UNARY_KERNELS = {
    "Neg": "negative", "Abs": "abs", "Sign": "sign", "Square": "square", "Sqrt": "sqrt",
    "Rsqrt": lambda xp: lambda x: 1 / xp.sqrt(x), "Reciprocal": "reciprocal", "Exp": "exp", "Log": "log",
    "Log1p": "log1p", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Tanh": "tanh", "Sigmoid": _sigmoid,
    "Relu": lambda xp: lambda x: xp.maximum(x, 0), "Floor": "floor", "Ceil": "ceil",
    "Round": "round", "Rint": "rint", "Atan": "arctan", "Asin": "arcsin", "Acos": "arccos", "Sinh": "sinh",
    "Cosh": "cosh", "Asinh": "arcsinh", "Acosh": "arccosh", "Atanh": "arctanh", "Expm1": "expm1",
    "Erf": special.erf, "Erfc": special.erfc, "Lgamma": special.lgamma, "Digamma": special.digamma,
}
BINARY_KERNELS = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "RealDiv": "true_divide", "FloorDiv": "floor_divide",
    "FloorMod": "mod", "Pow": "power", "Maximum": "maximum", "Minimum": "minimum",
    "SquaredDifference": lambda xp: lambda x, y: xp.square(x - y), "Less": "less", "LessEqual": "less_equal",
    "Greater": "greater", "GreaterEqual": "greater_equal", "Equal": "equal", "NotEqual": "not_equal",
    "Atan2": "arctan2", "TruncateMod": "fmod", "Polygamma": special.polygamma,
    "TruncateDiv": "true_divide",  # floats; integers: _truncate_div below
    "DivNoNan": lambda xp: lambda x, y: xp.where(y == 0, xp.zeros((), dtype=xp.result_type(x, y)),
                                                 x / xp.where(y == 0, xp.ones((), dtype=xp.result_type(y)), y)),
    # gradients of unary ops from the forward output y and the gradient dy, in TF's (Eigen's) order of operations
    "TanhGrad": lambda xp: lambda y, dy: dy * (1 - y * y), "SigmoidGrad": lambda xp: lambda y, dy: dy * y * (1 - y),
    "SqrtGrad": lambda xp: lambda y, dy: 0.5 * dy / y, "RsqrtGrad": lambda xp: lambda y, dy: -0.5 * (dy * y) * (y * y),
    "ReciprocalGrad": lambda xp: lambda y, dy: -y * y * dy,
    "ReluGrad": lambda xp: lambda dy, features: dy * (features > 0),
}


def elementwise_fn(op_type: str, xp):
    """The array-module function computing the elementwise op `op_type`."""
    how = UNARY_KERNELS.get(op_type) or BINARY_KERNELS[op_type]
    return getattr(xp, how) if isinstance(how, str) else how(xp)


_INTEGER_DIVISIONS = ("FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod")
for _op_type in (*UNARY_KERNELS, *BINARY_KERNELS):
    if _op_type not in _INTEGER_DIVISIONS:
        kernel(_op_type)(with_xp(functools.partial(elementwise_fn, _op_type)))


def _truncate_div(xp):
    """C's integer `/` (toward zero) without a float round trip, which loses int64 precision."""
    def truncate_div(x, y):
        q = xp.floor_divide(x, y)
        return q + ((q * y != x) & ((x < 0) != (y < 0)))
    return truncate_div


def _integer_division(op, ctx):
    """FloorDiv/FloorMod/TruncateDiv/TruncateMod: integer division by zero is an error in TF, not NumPy's silent 0.
    Float FloorDiv is TF's floor(x / y) (NumPy's floor_divide differs where x / y rounds up to an integer: 1.0 // 0.1
    is 9.0 there); float TruncateDiv is plain x / y, as TF's kernel."""
    xp = ctx.xp
    fn = _truncate_div(xp) if op._type == "TruncateDiv" and op._attrs["T"].is_integer else elementwise_fn(op._type, xp)
    if not op._attrs["T"].is_integer:
        return (lambda x, y: xp.floor(xp.true_divide(x, y))) if op._type == "FloorDiv" else fn

    def divide(x, y):
        if not xp.asarray(y).all() and xp.broadcast(x, y).size:  # an empty result divides nothing, as TF
            raise InvalidArgumentError(None, op, "Integer division by zero")
        return fn(x, y)
    return divide


for _op_type in _INTEGER_DIVISIONS:
    kernel(_op_type)(_integer_division)


@kernel("MatMul", gpu_types=GPU_FLOAT)
def _matmul(op, ctx):
    ta, tb = op._attrs["transpose_a"], op._attrs["transpose_b"]

    reuse = OutputBuffer()
    small = OutputBuffer.MIN_ELEMENTS if ctx.xp is np else math.inf  # CuPy's memory pool already reuses memory

    def matmul(a, b):
        a2, b2 = (a.T if ta else a), (b.T if tb else b)
        if a2.ndim != 2 or b2.ndim != 2 or a2.shape[1] != b2.shape[0]:
            raise InvalidArgumentError(None, op, f"Matrix size-incompatible: In[0]: {dims_text(a.shape)}, "
                                       f"In[1]: {dims_text(b.shape)}")
        rows, cols = a2.shape[0], b2.shape[1]
        if rows * cols < small:
            return a2 @ b2
        out = reuse.get((rows, cols), a2.dtype if a2.dtype == b2.dtype else np.result_type(a2, b2))
        return a2 @ b2 if out is None else np.matmul(a2, b2, out=out)
    return matmul


@kernel("BatchMatMulV2", gpu_types=GPU_FLOAT)
def _batch_matmul(op, ctx):
    adj_x, adj_y, xp = op._attrs["adj_x"], op._attrs["adj_y"], ctx.xp

    def batch_matmul(x, y):
        x2, y2 = (xp.swapaxes(x, -1, -2) if adj_x else x), (xp.swapaxes(y, -1, -2) if adj_y else y)
        try:
            return xp.matmul(x2, y2)
        except ValueError:
            raise InvalidArgumentError(None, op, f"In[0] and In[1] must have compatible batch dimensions and "
                                       f"matrix sizes: {dims_text(x.shape)} vs. {dims_text(y.shape)}") \
                from None
    return batch_matmul


def _reduction(name: str, integer_fn=None):
    """Sum/Mean/Max/Min/Prod: `name` is the reducing function of the array-module namespace below."""
    def factory(op, ctx):
        keep, dtype, xp = op._attrs["keep_dims"], op._attrs["T"].as_numpy_dtype, ctx.xp
        is_integer = op._attrs["T"].is_integer
        reducer = getattr(_CPU_REDUCERS if xp is np else _ARRAY_REDUCERS, name)(xp)

        def reduce(x, axis):
            axes = _axes(axis)
            if is_integer and integer_fn is not None:
                return integer_fn(xp, x, axes, keep).astype(dtype)
            return xp.asarray(reducer(x, axis=axes, keepdims=keep)).astype(dtype, copy=False)
        return reduce
    return factory


def _extremum(name: str, lowest: bool):
    """Max/Min; an empty reduction gives the identity (-inf/lowest for Max, +inf/highest for Min), as TF does."""
    def make(xp):
        fn = getattr(xp, name)

        def reduce(x, axis, keepdims):
            x = xp.asarray(x)
            if x.size:
                return fn(x, axis=axis, keepdims=keepdims)
            info = np.finfo(x.dtype) if x.dtype.kind == "f" else np.iinfo(x.dtype)
            identity = (-np.inf if lowest else np.inf) if x.dtype.kind == "f" else (info.min if lowest else info.max)
            shape = np.empty(x.shape, np.bool_).sum(axis=axis, keepdims=keepdims).shape
            return xp.full(shape, identity, dtype=x.dtype)
        return reduce
    return make


def _mean(xp):
    """np.mean without its Python overhead for float32/float64 (the sum divided by the count, as np.mean does)."""
    def mean(x, axis, keepdims):
        x = np.asarray(x)
        if x.dtype.kind != "f" or x.dtype.itemsize < 4 or not x.size:
            return np.mean(x, axis=axis, keepdims=keepdims)
        total = np.add.reduce(x, axis=axis, keepdims=keepdims)
        return total / x.dtype.type(x.size // max(np.size(total), 1))
    return mean


class _CPU_REDUCERS:  # noqa: N801 - a namespace of makers, looked up by name like the array module's functions
    sum = staticmethod(lambda xp: np.add.reduce)  # the ufunc method skips np.sum's Python wrapper
    mean = staticmethod(_mean)
    prod = staticmethod(lambda xp: np.multiply.reduce)
    max = staticmethod(_extremum("max", lowest=True))
    min = staticmethod(_extremum("min", lowest=False))


class _ARRAY_REDUCERS(_CPU_REDUCERS):  # noqa: N801 - any array module (CuPy): its own functions
    sum = staticmethod(lambda xp: xp.sum)
    mean = staticmethod(lambda xp: xp.mean)
    prod = staticmethod(lambda xp: xp.prod)


kernel("Sum")(_reduction("sum", lambda xp, x, a, k: xp.sum(x, axis=a, keepdims=k)))
kernel("Mean")(_reduction("mean", lambda xp, x, a, k: xp.trunc(xp.mean(x, axis=a, keepdims=k))))
kernel("Max")(_reduction("max"))
kernel("Min")(_reduction("min"))
kernel("Prod")(_reduction("prod", lambda xp, x, a, k: xp.prod(x, axis=a, keepdims=k)))


def _add_n(xp):
    def add_n(*xs):
        """Sum of same-shaped tensors, accumulated in one buffer (no temporary per input)."""
        if len(xs) == 1:
            return xp.array(xs[0], copy=True)
        total = xp.add(xs[0], xs[1])
        if type(total) is not xp.ndarray:  # 0-d inputs give a NumPy scalar, which cannot be written in place
            return functools.reduce(xp.add, xs[2:], total)
        for x in xs[2:]:
            xp.add(total, x, out=total)
        return total
    return add_n


kernel("AddN")(with_xp(_add_n))


def _cumulative(name: str, identity: int):
    """Cumsum/Cumprod with TF's exclusive (shift in the identity) and reverse (run from the end) attributes."""
    def factory(op, ctx):
        exclusive, reverse, xp = op._attrs["exclusive"], op._attrs["reverse"], ctx.xp
        fn = getattr(xp, name)

        def cumulative(x, axis):
            x, axis = xp.asarray(x), _axes(axis)[0]
            if not -x.ndim <= axis < x.ndim:
                raise InvalidArgumentError(None, op, f"axis {axis} is out of range for a tensor of rank {x.ndim}")
            if reverse:
                x = xp.flip(x, axis)
            out = fn(x, axis=axis, dtype=x.dtype)
            if exclusive and x.shape[axis]:
                before = (slice(None),) * (axis % x.ndim)
                head = xp.full_like(out[(*before, slice(0, 1))], identity)
                out = xp.concatenate([head, out[(*before, slice(0, -1))]], axis=axis)
            return xp.flip(out, axis) if reverse else out
        return cumulative
    return factory


kernel("Cumsum")(_cumulative("cumsum", 0))
kernel("Cumprod")(_cumulative("cumprod", 1))


@kernel("Cast", gpu_types=GPU_ALL)
def _cast(op, ctx):
    dst, xp = op._attrs["DstT"].as_numpy_dtype, ctx.xp
    return lambda x: xp.asarray(x).astype(dst)


@kernel("Range", gpu_types=GPU_NUMERIC)
def _range(op, ctx):
    dtype, xp = op._outputs[0]._dtype.as_numpy_dtype, ctx.xp
    return lambda start, limit, delta: xp.arange(_scalar(start), _scalar(limit), _scalar(delta), dtype=dtype)


def _scalar(x):
    """A 0-d value as a Python number (a CuPy 0-d array is fetched: range bounds are host values in TF)."""
    return x.item() if hasattr(x, "item") else x


# --- random_ops -----------------------------------------------------------------------------------------------------
def _random(sample):
    def factory(op, ctx):
        rng = ctx.random_generator(op)
        dtype = op._attrs["dtype"].as_numpy_dtype
        return lambda shape: sample(rng, _axes(shape)).astype(dtype, copy=False)
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
        return rng.integers(lo, hi, size=_axes(shape), dtype=dtype)
    return uniform_int


kernel("RandomUniform", _dtypes.FLOATING, _dtypes.FLOATING)(_random(lambda rng, s: rng.random(s)))
kernel("RandomStandardNormal", _dtypes.FLOATING, _dtypes.FLOATING)(_random(lambda rng, s: rng.standard_normal(s)))
kernel("TruncatedNormal", _dtypes.FLOATING, _dtypes.FLOATING)(_random(_truncated))


# --- state_ops ------------------------------------------------------------------------------------------------------
def _uninitialized(op, var_op) -> FailedPreconditionError:
    return FailedPreconditionError(None, op, f"Attempting to use uninitialized value {var_op.name}")


@kernel("VariableV2", gpu_types=GPU_VARIABLE)
def _variable(op, ctx):
    cell = ctx.variable(op)

    def read():
        value = cell.value
        if value is None:
            raise _uninitialized(op, op)
        return value
    return read


@kernel("Assign", gpu_types=GPU_VARIABLE)
def _assign(op, ctx):
    """Store a copy of the value under the variable's lock, journaled so a failed step can undo it. Reading nothing
    old, it is the same with or without `use_locking`: a store is always whole."""
    var_op = ref_variable(op._inputs[0])
    cell = ctx.variable(var_op)
    steps, xp = ctx.steps, ctx.xp
    static = var_op._attrs["shape"]
    check_shape = op._attrs.get("validate_shape", True) and static.is_fully_defined()
    static_dims = tuple(static.as_list()) if check_shape else None

    def assign(value):
        if check_shape and xp.shape(value) != static_dims:
            raise InvalidArgumentError(None, op, f"Assign requires shapes of both tensors to match. lhs shape= "
                                       f"{dims_text(static_dims)} rhs shape= {dims_text(xp.shape(value))}")
        new = xp.array(value, copy=True)  # the variable owns its buffer: no fetch or feed aliases it
        cell.write(new, steps.slot.journal)
        return new
    return assign


def _update_family(update: str):
    """AssignAdd/AssignSub: `update(old value, input)`, stored under the variable's lock, journaled. With
    `use_locking` the lock is held from reading the old value to storing the new one, an atomic update; without it
    (TF's default) only the store is, and concurrent updates may be lost (Hogwild)."""
    def factory(op, ctx):
        var_op = ref_variable(op._inputs[0])
        cell = ctx.variable(var_op)
        steps, xp = ctx.steps, ctx.xp
        combine = getattr(xp, update)

        def checked_update(value):
            old = cell.value
            if old is None:
                raise _uninitialized(op, var_op)
            if xp.shape(value) != xp.shape(old):
                raise InvalidArgumentError(None, op, f"Cannot update variable with shape "
                                           f"{dims_text(xp.shape(old))} using a Tensor with shape "
                                           f"{dims_text(xp.shape(value))}, shapes must be equal.")
            return combine(old, value)

        if _use_locking(op, default=False):
            def update_locked(value):
                return cell.update(checked_update, value, steps.slot.journal)
            return update_locked

        def update_unlocked(value):
            new = checked_update(value)
            cell.write(new, steps.slot.journal)
            return new
        return update_unlocked
    return factory


def _use_locking(op, default: bool) -> bool:
    locking = op._attrs.get("use_locking")
    return default if locking is None else bool(locking)


kernel("AssignAdd", gpu_types=GPU_VARIABLE)(_update_family("add"))
kernel("AssignSub", gpu_types=GPU_VARIABLE)(_update_family("subtract"))


@kernel("IsVariableInitialized", gpu_types=GPU_VARIABLE)
def _is_initialized(op, ctx):
    cell = ctx.variable(ref_variable(op._inputs[0]))
    return lambda: np.bool_(cell.value is not None)


@kernel("InitializedValue", gpu_types=GPU_VARIABLE)
def _initialized_value(op, ctx):
    cell = ctx.variable(ref_variable(op._inputs[0]))

    def initialized_value(initial):
        value = cell.value  # read once: another thread may initialize it between a test and a second read
        return initial if value is None else value
    return initialized_value


# --- control_flow_ops -----------------------------------------------------------------------------------------------
kernel("NoOp", None, None)(fixed(lambda *args: None))


# --- nn_ops ---------------------------------------------------------------------------------------------------------
@kernel("BiasAdd", _dtypes.NUMERIC)
def _bias_add(op, ctx):
    channels_first, xp = op._attrs["data_format"] == "NCHW", ctx.xp

    def bias_add(value, bias):
        ndim = xp.ndim(value)
        if ndim < 2:
            raise InvalidArgumentError(None, op, f"Input tensor must be at least 2D: {dims_text(xp.shape(value))}")
        if xp.ndim(bias) != 1:
            raise InvalidArgumentError(None, op, f"Biases must be 1D: {dims_text(xp.shape(bias))}")
        channel_axis = 1 if channels_first else ndim - 1
        if xp.shape(bias)[0] != xp.shape(value)[channel_axis]:
            raise InvalidArgumentError(None, op, f"Must provide as many biases as the last dimension of the input "
                                       f"tensor: {dims_text(xp.shape(bias))} vs. {dims_text(xp.shape(value))}")
        if channels_first:
            bias = xp.reshape(bias, (-1,) + (1,) * (ndim - 2))
        return xp.add(value, bias)
    return bias_add


# --- training_ops ---------------------------------------------------------------------------------------------------
def _training_kernel(ref_names: tuple, value_names: tuple, update, grad_name: str = "grad"):
    """A training-op kernel (ApplyAdam, ...): check the var/slot cells and the inputs as training_ops.cc does, compute
    `update(xp, attrs, *ref_values, *values) -> new ref values` with the device's array module, then store the new
    arrays (never written in place: fetched values may alias them), journaled. With `use_locking` every variable's
    lock is held, in the cells' global order, from the first read to the last store (TF's
    MaybeLockVariableInputMutexesInOrder); without it each store is whole but updates may race (Hogwild).
    Returns the variable's new value."""
    n_refs = len(ref_names)
    grad_at = value_names.index(grad_name)
    scalars = tuple((i, arg) for i, arg in enumerate(value_names) if i != grad_at)
    same_shape_names = ref_names[1:] + (grad_name,)

    def factory(op, ctx):
        ref_ops = [ref_variable(t) for t in op._inputs[:n_refs]]
        cells = [ctx.variable(var_op) for var_op in ref_ops]
        steps, xp = ctx.steps, ctx.xp
        step = functools.partial(update, xp, op._attrs)
        locks = [cell.lock for cell in sorted(set(cells), key=_cell_order)]

        def new_values(values):
            olds = [cell.value for cell in cells]
            for var_op, old in zip(ref_ops, olds):
                if old is None:
                    raise FailedPreconditionError(None, op, f"Attempting to use uninitialized variables: {var_op.name}")
            for i, arg in scalars:
                if xp.ndim(values[i]) != 0:
                    raise InvalidArgumentError(None, op, f"{arg} is not a scalar: {dims_text(xp.shape(values[i]))}")
            var_shape = xp.shape(olds[0])
            for arg, value in zip(same_shape_names, olds[1:] + [values[grad_at]]):
                if xp.shape(value) != var_shape:
                    raise InvalidArgumentError(None, op, f"var and {arg} do not have the same shape"
                                               f"{dims_text(var_shape)} {dims_text(xp.shape(value))}")
            return step(*olds, *values)

        if _use_locking(op, default=False):
            def apply_locked(*values):
                return _holding(locks, _update_cells, cells, new_values, values, steps.slot.journal)
            return apply_locked

        def apply(*values):
            news = new_values(values)
            journal = steps.slot.journal
            for cell, new in zip(cells, news):
                cell.write(new, journal)
            return news[0]
        return apply
    return factory


def _cell_order(cell) -> int:
    return cell.order


def _update_cells(cells: list, new_values, values, journal):
    news = new_values(values)
    for cell, new in zip(cells, news):
        cell.store(new, journal)
    return news[0]


def _holding(locks: list, fn, *args):
    """fn(*args) with every lock of `locks` held, taken in order by nested `with` blocks (released on any error);
    before blocking on a held one it gives up the GIL once, as VariableCell.write does (no lock convoy)."""
    if not locks:
        return fn(*args)
    if locks[0].locked():
        time.sleep(0)
    with locks[0]:
        return _holding(locks[1:], fn, *args)


def _gradient_descent(xp, attrs, var, alpha, delta):
    return (var - delta * alpha,)


def _momentum(xp, attrs, var, accum, lr, grad, momentum):
    accum = accum * momentum + grad
    if attrs.get("use_nesterov"):
        return var - (grad * lr + accum * momentum * lr), accum
    return var - accum * lr, accum


def _adam(xp, attrs, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    alpha = lr * xp.sqrt(1 - beta2_power) / (1 - beta1_power)
    m = m + (grad - m) * (1 - beta1)
    v = v + (grad * grad - v) * (1 - beta2)
    if attrs.get("use_nesterov"):
        return var - ((grad * (1 - beta1) + beta1 * m) * alpha) / (xp.sqrt(v) + epsilon), m, v
    return var - (m * alpha) / (xp.sqrt(v) + epsilon), m, v


def _rms_prop(xp, attrs, var, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms + (grad * grad - ms) * (1 - rho)
    mom = mom * momentum + (grad * lr) / xp.sqrt(ms + epsilon)
    return var - mom, ms, mom


def _centered_rms_prop(xp, attrs, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms + (grad * grad - ms) * (1 - rho)
    mg = mg + (grad - mg) * (1 - rho)
    mom = mom * momentum + (grad * lr) / xp.sqrt((ms - mg * mg) + epsilon)
    return var - mom, mg, ms, mom


def _adagrad(xp, attrs, var, accum, lr, grad):
    if attrs.get("update_slots", True):
        accum = accum + grad * grad
    return var - grad * lr / xp.sqrt(accum), accum


for _op_type, _refs, _values, _update, _grad in (
        ("ApplyGradientDescent", ("var",), ("alpha", "delta"), _gradient_descent, "delta"),
        ("ApplyMomentum", ("var", "accum"), ("lr", "grad", "momentum"), _momentum, "grad"),
        ("ApplyAdam", ("var", "m", "v"), ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"),
         _adam, "grad"),
        ("ApplyRMSProp", ("var", "ms", "mom"), ("lr", "rho", "momentum", "epsilon", "grad"), _rms_prop, "grad"),
        ("ApplyCenteredRMSProp", ("var", "mg", "ms", "mom"), ("lr", "rho", "momentum", "epsilon", "grad"),
         _centered_rms_prop, "grad"),
        ("ApplyAdagrad", ("var", "accum"), ("lr", "grad"), _adagrad, "grad")):
    kernel(_op_type, GPU_FLOAT, GPU_FLOAT)(_training_kernel(_refs, _values, _update, _grad))
