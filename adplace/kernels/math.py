"""Kernels of the math ops (adplace.ops.math_ops, reduction_ops): elementwise unary and binary ops, integer
divisions, MatMul, reductions, AddN, Cumsum/Cumprod, Cast and Range; same conventions as adplace.kernels.cpu."""
from __future__ import annotations

import functools
import math
import threading

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.tensor_shape import dims_text
from adplace.kernels import blas_threads, forwarding, special
from adplace.kernels.cpu import host_ints
from adplace.kernels.output_buffer import OutputBuffer
from adplace.kernels.registration import GPU_ALL, GPU_FLOAT, GPU_NUMERIC, int_tuple, kernel, with_xp


def _sigmoid(xp):
    return lambda x: xp.exp(-xp.logaddexp(xp.zeros((), dtype=x.dtype), -x))


# Elementwise ops by the name of their array-module function (NumPy and CuPy share the names), or a maker `xp -> fn`.
UNARY_KERNELS = {
    "Neg": "negative", "Abs": "abs", "Sign": "sign", "Square": "square", "Sqrt": "sqrt",
    "Rsqrt": lambda xp: lambda x: 1 / xp.sqrt(x), "Reciprocal": "reciprocal", "Exp": "exp", "Log": "log",
    "Log1p": "log1p", "Sin": "sin", "Cos": "cos", "Tan": "tan", "Tanh": "tanh", "Sigmoid": _sigmoid,
    "Relu": lambda xp: _relu(xp), "Floor": "floor", "Ceil": "ceil",
    "Round": "round", "Rint": "rint", "Atan": "arctan", "Asin": "arcsin", "Acos": "arccos", "Sinh": "sinh",
    "Cosh": "cosh", "Asinh": "arcsinh", "Acosh": "arccosh", "Atanh": "arctanh", "Expm1": "expm1",
    "Erf": special.erf, "Erfc": special.erfc, "Lgamma": special.lgamma, "Digamma": special.digamma,
}
BINARY_KERNELS = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "RealDiv": "true_divide", "FloorDiv": "floor_divide",
    "FloorMod": "mod", "Pow": "power", "Maximum": lambda xp: _min_max(xp, "maximum"),
    "Minimum": lambda xp: _min_max(xp, "minimum"),
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
    "ReluGrad": lambda xp: _relu_grad(xp),
}


def _relu(xp):
    """max(x, 0); on the CPU Maximum's kernel against a 0-d zero of x's type, so a long x meets the kept read-only
    array of zeros (`filled`, shared by every op) and NumPy's SIMD loop."""
    if xp is not np:
        return lambda x: xp.maximum(x, 0)
    maximum = _min_max(np, "maximum")

    def relu(x, out=None):
        if type(x) is np.ndarray and x.dtype.kind in "fiu":
            return maximum(x, _zero(x.dtype), out)
        return np.maximum(x, 0, out=out)
    relu.forwards = lambda position: forwarding.unary(relu, relu)
    return relu


def _min_max(xp, name: str):
    """Maximum/Minimum. On the CPU a 0-d operand against an array of 2,048+ elements becomes a read-only array of its
    value (`filled`): NumPy's SIMD loop takes two arrays and with a scalar falls back to one ~3x slower (same ufunc,
    same values, NaN and signed zeros included)."""
    ufunc = getattr(xp, name)
    if xp is not np:
        return ufunc

    def extremum(x, y, out=None):
        if type(x) is np.ndarray and type(y) is np.ndarray and x.dtype == y.dtype and x.dtype.kind in "fiu":
            if not y.ndim and _FILLED_MIN <= x.size <= _FILLED_MAX:
                y = filled(y, x.shape)
            elif not x.ndim and _FILLED_MIN <= y.size <= _FILLED_MAX:
                x = filled(x, y.shape)
        return ufunc(x, y) if out is None else ufunc(x, y, out=out)
    into = forwarding.ufunc_into(extremum)
    extremum.forwards = lambda position: forwarding.binary(extremum, into, position)
    return extremum


_FILLED_MIN, _FILLED_MAX = 1 << 11, 1 << 22  # elements: below, the scalar loop is as fast; above, the memory
_FILLED_KEPT = 8                             # values kept (0 for relu-like maxima, a clip's two bounds, ...)
_filled: dict = {}                           # (dtype, value's bytes) -> read-only 1-D array of that value
_filled_views: dict = {}                     # (dtype, value's bytes, shape) -> a view of it (cleared as _filled changes)
_FILLED_VIEWS = 256                          # views kept
_filled_lock = threading.Lock()


def filled(scalar: np.ndarray, shape: tuple) -> np.ndarray:
    """A read-only array of `shape` holding the 0-d `scalar` everywhere: a view of a kept array per value."""
    value = (scalar.dtype, scalar.tobytes())
    view = _filled_views.get((*value, shape))
    if view is not None:
        return view
    size = math.prod(shape)
    with _filled_lock:
        kept = _filled.get(value)
        if kept is None or kept.size < size:
            kept = np.full(max(size, 0 if kept is None else kept.size), scalar, dtype=scalar.dtype)
            kept.flags.writeable = False
            _filled.pop(value, None)
            _filled[value] = kept
            while len(_filled) > _FILLED_KEPT:
                del _filled[next(iter(_filled))]
            _filled_views.clear()  # views pin their arrays: keep only views of kept ones
        if len(_filled_views) >= _FILLED_VIEWS:
            _filled_views.clear()
        view = _filled_views[(*value, shape)] = kept[:size].reshape(shape)
    return view


_ZEROS = {}  # dtype -> its 0-d zero


def _zero(dtype) -> np.ndarray:
    zero = _ZEROS.get(dtype)
    if zero is None:
        zero = _ZEROS[dtype] = np.zeros((), dtype)
    return zero


def _relu_grad(xp):
    """dy * (features > 0); on the CPU as the mask cast to dy's type times dy, in place in that fresh array (one
    temporary less; the same products, as multiplication commutes), or in dy's own array when the plan forwards it."""
    def relu_grad(dy, features):
        mask = features > 0
        if xp is not np or type(dy) is not np.ndarray or dy.shape != mask.shape:
            return dy * mask
        out = mask.astype(dy.dtype)
        out *= dy
        return out

    def relu_grad_into(dy, features, out):
        if type(features) is not np.ndarray or features.shape != dy.shape:
            return relu_grad(dy, features)
        return np.multiply(dy, features > 0, out=out)
    relu_grad.forwards = lambda position: forwarding.binary(relu_grad, relu_grad_into, 0) if position == 0 else None
    return relu_grad


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
    fn = elementwise_fn(op._type, xp)
    if op._attrs["T"].is_integer and op._type in ("TruncateDiv", "TruncateMod"):
        truncate_div = _truncate_div(xp)  # CuPy's integer fmod goes through double, which loses int64 precision
        fn = truncate_div if op._type == "TruncateDiv" else (lambda x, y: x - truncate_div(x, y) * y)
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
    """A transposed operand goes to BLAS as a transposed view (no copy); on the CPU the product runs on the BLAS
    thread count adplace.kernels.blas_threads picks for its size, into a reused output buffer when large."""
    ta, tb = op._attrs["transpose_a"], op._attrs["transpose_b"]
    on_cpu = ctx.xp is np
    reuse, small = OutputBuffer(), OutputBuffer.MIN_ELEMENTS  # on a CUDA GPU CuPy's memory pool reuses memory
    blas = blas_threads.BlasKernel()

    def matmul(a, b):
        a2, b2 = (a.T if ta else a), (b.T if tb else b)
        if a2.ndim != 2 or b2.ndim != 2 or a2.shape[1] != b2.shape[0]:
            raise InvalidArgumentError(None, op, f"Matrix size-incompatible: In[0]: {dims_text(a.shape)}, "
                                       f"In[1]: {dims_text(b.shape)}")
        if not on_cpu:
            return a2 @ b2
        rows, cols = a2.shape[0], b2.shape[1]
        mnk = rows * a2.shape[1] * cols
        out = None if rows * cols < small else \
            reuse.get((rows, cols), a2.dtype if a2.dtype == b2.dtype else np.result_type(a2, b2))
        return blas(np.matmul, mnk, a2, b2) if out is None else blas(np.matmul, mnk, a2, b2, out=out)
    return matmul


kernel("Conj", _dtypes.COMPLEX, _dtypes.COMPLEX)(with_xp(lambda xp: xp.conj))


@kernel("BatchMatMulV2", gpu_types=GPU_FLOAT)
def _batch_matmul(op, ctx):
    """An adjoint is a swapped-axes view (conjugated only for complex types: no copy for real ones); on the CPU the
    products run on the BLAS thread count picked for one matrix product's size."""
    adj_x, adj_y, xp = op._attrs["adj_x"], op._attrs["adj_y"], ctx.xp
    on_cpu, blas = xp is np, blas_threads.BlasKernel()

    def adjoint(t):
        t = xp.swapaxes(t, -1, -2)
        return xp.conj(t) if t.dtype.kind == "c" else t

    def batch_matmul(x, y):
        if on_cpu and type(x) is np.ndarray and type(y) is np.ndarray and x.ndim == 2 == y.ndim:
            # matrices: an adjoint is the .T view; a small product of BLAS types goes to np.dot (matmul's value for
            # matrices, with less overhead per call) without the BLAS thread policy
            x2 = (x.T.conj() if x.dtype.kind == "c" else x.T) if adj_x else x
            y2 = (y.T.conj() if y.dtype.kind == "c" else y.T) if adj_y else y
            (rows, inner), (inner_y, cols) = x2.shape, y2.shape
            if inner == inner_y:
                mnk = rows * inner * cols
                if mnk >= blas_threads.TINY_MNK:
                    return blas(np.matmul, mnk, x2, y2)
                return np.dot(x2, y2) if x.dtype in _BLAS_TYPES else np.matmul(x2, y2)
        x2, y2 = (adjoint(x) if adj_x else x), (adjoint(y) if adj_y else y)
        try:
            if not on_cpu or x2.ndim < 2 or y2.ndim < 2:
                return xp.matmul(x2, y2)
            return blas(np.matmul, x2.shape[-2] * x2.shape[-1] * y2.shape[-1], x2, y2)
        except ValueError:
            raise InvalidArgumentError(None, op, f"In[0] and In[1] must have compatible batch dimensions and "
                                       f"matrix sizes: {dims_text(x.shape)} vs. {dims_text(y.shape)}") \
                from None
    return batch_matmul


_BLAS_TYPES = frozenset(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))


def reduction_axes(op, axis, ndim: int) -> tuple:
    """A reduction's axes as a tuple, with TF's run-time errors for an axis out of range or given twice."""
    axes = int_tuple(axis)
    seen = set()
    for a in axes:
        if not -ndim <= a < ndim:
            raise InvalidArgumentError(None, op, f"Invalid reduction dimension ({a} for input with {ndim} "
                                       f"dimension(s)")
        if a % ndim in seen:
            raise InvalidArgumentError(None, op, f"Axes contains duplicate dimension: {a % ndim}")
        seen.add(a % ndim)
    return axes


def _reduction(name: str, integer_fn=None):
    """Sum/Mean/Max/Min/Prod: `name` is the reducing function of the array-module namespace below."""
    def factory(op, ctx):
        keep, dtype, xp = op._attrs["keep_dims"], op._attrs["T"].as_numpy_dtype, ctx.xp
        is_integer = op._attrs["T"].is_integer
        accumulate_in_float32 = op._attrs["T"] is _dtypes.bfloat16 and name not in ("max", "min")
        reducer = getattr(_CPU_REDUCERS if xp is np else _ARRAY_REDUCERS, name)(xp)
        identity_when_no_axes = name in ("sum", "prod", "max", "min")  # exact; a mean or norm may round
        scalar_when_0d = is_integer and integer_fn is not None  # integer_fn gives a NumPy scalar for a 0-d result
        checked = set()  # (axes, rank) pairs that passed reduction_axes: later runs skip its checks

        def reduce(x, axis):
            axes, ndim = host_ints(axis), (x.ndim if type(x) is np.ndarray else np.ndim(x))
            if not axes and identity_when_no_axes and type(x) is np.ndarray and x.dtype == dtype and \
                    (ndim or not scalar_when_0d):
                return x.copy()  # reducing no axis copies the input (Sum is no view op: its output is new)
            if (axes, ndim) not in checked:
                reduction_axes(op, axes, ndim)
                if len(checked) < 64:
                    checked.add((axes, ndim))
            if accumulate_in_float32:  # a bfloat16 sum rounds every partial sum to 8 bits; TF accumulates in float
                x = x.astype(np.float32)
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
            if x.dtype.kind in "iu":
                info = np.iinfo(x.dtype)
                identity = info.min if lowest else info.max
            else:  # float16/32/64 and bfloat16 (kind "V")
                identity = -np.inf if lowest else np.inf
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


def _euclidean_norm(xp):
    """sqrt(sum(x * conj(x))): TF's EuclideanNorm for float and complex inputs."""
    return lambda x, axis, keepdims: xp.sqrt(xp.sum(x * xp.conj(x), axis=axis, keepdims=keepdims))


class _CPU_REDUCERS:  # noqa: N801 - a namespace of makers, looked up by name like the array module's functions
    sum = staticmethod(lambda xp: np.add.reduce)  # the ufunc method skips np.sum's Python wrapper
    euclidean_norm = staticmethod(_euclidean_norm)
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
kernel("EuclideanNorm")(_reduction("euclidean_norm",
                                   lambda xp, x, a, k: xp.floor(xp.sqrt(xp.sum(xp.square(x.astype(np.float64)),
                                                                               axis=a, keepdims=k)))))


def _add_n(xp):
    def add_n(*xs):
        """Sum of same-shaped tensors, accumulated in one buffer (no temporary per input)."""
        if len(xs) == 1:
            return xp.array(xs[0], copy=True)
        total = xp.add(xs[0], xs[1])
        if len(xs) == 2:  # the common case (two gradient paths): nothing to accumulate
            return total
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
            x, axis = xp.asarray(x), int_tuple(axis)[0]
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

