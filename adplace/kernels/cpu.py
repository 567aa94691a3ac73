"""NumPy kernels for the CPU and for virtual GPUs, keyed by the op types of adplace.ops, in the same order.

A kernel factory runs once per (op, session) when a plan is built and returns the function the hot loop calls:
`factory(op, ctx) -> kernel(*inputs)`. Ref inputs (a variable's Assign target) are not passed; the factory binds the
variable's cell through `ctx.variable(op)` instead. Arrays are never written in place, so outputs may alias inputs.

GPU dtype support follows TF's registrations (no int32 variables, no int32 MatMul, no strings on the GPU), which is
what the placer reads; virtual GPUs run these same NumPy functions.
"""
from __future__ import annotations

import functools
import math
import sys

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import FailedPreconditionError, InvalidArgumentError
from adplace.framework.registry import register_kernel
from adplace.framework.tensor_shape import broadcast_reduction_axes, dims_text

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
    """A factory for kernels that need nothing from the op."""
    return lambda op, ctx: fn


def _axes(axis) -> tuple:
    """A scalar or vector of axes (or dims) as a tuple of Python ints; `tolist` is the fast way out of NumPy."""
    return tuple(np.asarray(axis).ravel().tolist())


# --- constant_op / array_ops ---------------------------------------------------------------------------------------
@kernel("Const", gpu_types=GPU_ALL)
def _const(op, ctx):
    value = op._attrs["value"]
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
    out = op._attrs["out_type"].as_numpy_dtype
    return lambda x: np.array(np.shape(x), dtype=out)


@kernel("Size", gpu_types=GPU_ALL)
def _size(op, ctx):
    out = op._attrs["out_type"].as_numpy_dtype
    return lambda x: out(np.size(x))


kernel("Rank", gpu_types=GPU_ALL)(fixed(lambda x: np.int32(np.ndim(x))))


@kernel("Reshape", gpu_types=GPU_ALL)
def _reshape(op, ctx):
    def reshape(x, shape):
        try:
            return np.asarray(x).reshape(_axes(shape))
        except ValueError:
            wanted = [int(d) for d in shape]
            raise InvalidArgumentError(None, op, f"Input to reshape is a tensor with {np.size(x)} values, but the "
                                       f"requested shape {wanted} does not fit it") from None
    return reshape


kernel("Transpose", gpu_types=GPU_ALL)(fixed(lambda x, perm: np.transpose(x, _axes(perm))))


@kernel("Squeeze", gpu_types=GPU_ALL)
def _squeeze(op, ctx):
    axes = op._attrs["squeeze_dims"] or None

    def squeeze(x):
        if axes is not None:
            for a in axes:
                if np.shape(x)[a] != 1:
                    raise InvalidArgumentError(None, op, f"Can not squeeze dim[{a}], expected a dimension of 1, got "
                                               f"{np.shape(x)[a]}")
        return np.squeeze(x, axis=axes)
    return squeeze


kernel("ExpandDims", gpu_types=GPU_ALL)(fixed(lambda x, dim: np.expand_dims(x, int(dim))))


def _outputs(pieces):
    """A multi-output kernel's result: the pieces, or the one value itself (plans hold a 1-output op's value bare)."""
    return pieces if len(pieces) != 1 else pieces[0]


@kernel("Split", gpu_types=GPU_ALL)
def _split(op, ctx):
    n = op._attrs["num_split"]

    def split(axis, x):
        axis = int(axis)
        if np.shape(x)[axis] % n:
            raise InvalidArgumentError(None, op, f"Number of ways to split should evenly divide the split dimension, "
                                       f"but got split_dim {axis} (size = {np.shape(x)[axis]}) and num_split {n}")
        return _outputs(np.split(x, n, axis=axis))
    return split


@kernel("SplitV", gpu_types=GPU_ALL)
def _split_v(op, ctx):
    def split_v(x, sizes, axis):
        axis, sizes = int(axis), [int(s) for s in sizes]
        if -1 in sizes:
            sizes[sizes.index(-1)] = np.shape(x)[axis] - (sum(sizes) + 1)
        if sum(sizes) != np.shape(x)[axis]:
            raise InvalidArgumentError(None, op, f"Determined shape must either match input shape along split_dim "
                                       f"exactly if fully specified, or be less than the size of the input along "
                                       f"split_dim if not fully specified. Got: {sum(sizes)} vs {np.shape(x)[axis]}")
        return _outputs(np.split(x, np.cumsum(sizes)[:-1], axis=axis))
    return split_v


kernel("ConcatV2", gpu_types=GPU_ALL)(fixed(lambda *args: np.concatenate(args[:-1], axis=int(args[-1]))))


@kernel("Pack", gpu_types=GPU_ALL)
def _pack(op, ctx):
    axis = op._attrs["axis"]
    return lambda *xs: np.stack(xs, axis=axis)


@kernel("Unpack", gpu_types=GPU_ALL)
def _unpack(op, ctx):
    axis, num = op._attrs["axis"], op._attrs["num"]

    def unpack(x):
        if np.shape(x)[axis] != num:
            raise InvalidArgumentError(None, op, f"Input shape axis {axis} must equal {num}, got shape "
                                       f"{list(np.shape(x))}")
        return _outputs(tuple(np.moveaxis(x, axis, 0)))
    return unpack


kernel("Fill", gpu_types=GPU_ALL)(fixed(lambda dims, value: np.full(_axes(dims), value, dtype=np.asarray(value).dtype)))
kernel("ZerosLike", gpu_types=GPU_ALL)(fixed(np.zeros_like))


@kernel("StridedSlice", gpu_types=GPU_ALL)
def _strided_slice(op, ctx):
    spec = op._attrs["slice_spec"]

    def strided_slice(x):
        try:
            return np.asarray(x)[spec]
        except IndexError as e:
            raise InvalidArgumentError(None, op, f"slice index out of bounds for shape {list(np.shape(x))}: "
                                       f"{e}") from None
    return strided_slice


@kernel("StridedSliceGrad", gpu_types=GPU_ALL)
def _strided_slice_grad(op, ctx):
    spec = op._attrs["slice_spec"]

    def strided_slice_grad(shape, dy):
        out = np.zeros(_axes(shape), dtype=np.asarray(dy).dtype)
        out[spec] = dy
        return out
    return strided_slice_grad


kernel("Tile", gpu_types=GPU_ALL)(fixed(lambda x, multiples: np.tile(x, _axes(multiples))))


@kernel("Select", gpu_types=GPU_ALL)
def _select(op, ctx):
    def select(cond, t, e):
        cond, t = np.asarray(cond), np.asarray(t)
        if cond.ndim == 1 and t.ndim > 1:  # TF1: a vector condition picks whole rows
            if cond.shape[0] != t.shape[0]:
                raise InvalidArgumentError(None, op, f"Condition vector has {cond.shape[0]} entries but the first "
                                           f"dimension of then/else is {t.shape[0]}")
            cond = cond.reshape((-1,) + (1,) * (t.ndim - 1))
        elif cond.ndim and cond.shape != t.shape:
            raise InvalidArgumentError(None, op, f"'then' and 'condition' must have the same shape: "
                                       f"{dims_text(cond.shape)} vs {dims_text(t.shape)}")
        if np.shape(e) != t.shape:
            raise InvalidArgumentError(None, op, f"'then' and 'else' must have the same shape: "
                                       f"{dims_text(t.shape)} vs {dims_text(np.shape(e))}")
        return np.where(cond, t, e)
    return select


kernel("Where", gpu_types=GPU_ALL)(fixed(lambda cond: np.argwhere(cond).astype(np.int64)))


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
def _sigmoid(x):
    return np.exp(-np.logaddexp(np.zeros((), dtype=np.asarray(x).dtype), -x))


UNARY_KERNELS = {
    "Neg": np.negative, "Abs": np.abs, "Sign": np.sign, "Square": np.square, "Sqrt": np.sqrt,
    "Rsqrt": lambda x: 1 / np.sqrt(x), "Reciprocal": np.reciprocal, "Exp": np.exp, "Log": np.log,
    "Log1p": np.log1p, "Sin": np.sin, "Cos": np.cos, "Tan": np.tan, "Tanh": np.tanh, "Sigmoid": _sigmoid,
    "Relu": lambda x: np.maximum(x, 0), "Floor": np.floor, "Ceil": np.ceil,
}
for _op_type, _fn in UNARY_KERNELS.items():
    kernel(_op_type)(fixed(_fn))

BINARY_KERNELS = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.true_divide, "FloorDiv": np.floor_divide,
    "FloorMod": np.mod, "Pow": np.power, "Maximum": np.maximum, "Minimum": np.minimum,
    "SquaredDifference": lambda x, y: np.square(x - y), "Less": np.less, "LessEqual": np.less_equal,
    "Greater": np.greater, "GreaterEqual": np.greater_equal, "Equal": np.equal, "NotEqual": np.not_equal,
}
for _op_type, _fn in BINARY_KERNELS.items():
    if _op_type not in ("FloorDiv", "FloorMod"):
        kernel(_op_type)(fixed(_fn))


def _integer_division(np_fn):
    """FloorDiv/FloorMod: integer division by zero is an error in TF, not NumPy's silent 0."""
    def factory(op, ctx):
        if not op._attrs["T"].is_integer:
            return np_fn

        def divide(x, y):
            if not np.asarray(y).all() and np.broadcast(x, y).size:  # an empty result divides nothing, as TF
                raise InvalidArgumentError(None, op, "Integer division by zero")
            return np_fn(x, y)
        return divide
    return factory


kernel("FloorDiv")(_integer_division(np.floor_divide))
kernel("FloorMod")(_integer_division(np.mod))


@kernel("MatMul", gpu_types=GPU_FLOAT)
def _matmul(op, ctx):
    ta, tb = op._attrs["transpose_a"], op._attrs["transpose_b"]

    reuse = OutputBuffer()

    def matmul(a, b):
        a2, b2 = (a.T if ta else a), (b.T if tb else b)
        if np.ndim(a2) != 2 or np.ndim(b2) != 2 or a2.shape[1] != b2.shape[0]:
            raise InvalidArgumentError(None, op, f"Matrix size-incompatible: In[0]: {dims_text(np.shape(a))}, "
                                       f"In[1]: {dims_text(np.shape(b))}")
        rows, cols = a2.shape[0], b2.shape[1]
        if rows * cols < OutputBuffer.MIN_ELEMENTS:
            return a2 @ b2
        out = reuse.get((rows, cols), a2.dtype if a2.dtype == b2.dtype else np.result_type(a2, b2))
        return a2 @ b2 if out is None else np.matmul(a2, b2, out=out)
    return matmul


@kernel("BatchMatMulV2", gpu_types=GPU_FLOAT)
def _batch_matmul(op, ctx):
    adj_x, adj_y = op._attrs["adj_x"], op._attrs["adj_y"]

    def batch_matmul(x, y):
        x2, y2 = (np.swapaxes(x, -1, -2) if adj_x else x), (np.swapaxes(y, -1, -2) if adj_y else y)
        try:
            return np.matmul(x2, y2)
        except ValueError:
            raise InvalidArgumentError(None, op, f"In[0] and In[1] must have compatible batch dimensions and "
                                       f"matrix sizes: {dims_text(np.shape(x))} vs. {dims_text(np.shape(y))}") \
                from None
    return batch_matmul


def _reduction(np_fn, integer_fn=None):
    def factory(op, ctx):
        keep, dtype = op._attrs["keep_dims"], op._attrs["T"].as_numpy_dtype
        is_integer = op._attrs["T"].is_integer

        def reduce(x, axis):
            axes = _axes(axis)
            if is_integer and integer_fn is not None:
                return integer_fn(x, axes, keep).astype(dtype)
            return np.asarray(np_fn(x, axis=axes, keepdims=keep)).astype(dtype, copy=False)
        return reduce
    return factory


def _extremum(np_fn, lowest: bool):
    """Max/Min; an empty reduction gives the identity (-inf/lowest for Max, +inf/highest for Min), as TF does."""
    def reduce(x, axis, keepdims):
        x = np.asarray(x)
        if x.size:
            return np_fn(x, axis=axis, keepdims=keepdims)
        info = np.finfo(x.dtype) if x.dtype.kind == "f" else np.iinfo(x.dtype)
        identity = (-np.inf if lowest else np.inf) if x.dtype.kind == "f" else (info.min if lowest else info.max)
        return np_fn(x, axis=axis, keepdims=keepdims, initial=identity)
    return reduce


def _mean(x, axis, keepdims):
    """np.mean without its Python overhead for float32/float64 (the sum divided by the count, as np.mean does)."""
    x = np.asarray(x)
    if x.dtype.kind != "f" or x.dtype.itemsize < 4 or not x.size:
        return np.mean(x, axis=axis, keepdims=keepdims)
    total = np.add.reduce(x, axis=axis, keepdims=keepdims)
    return total / x.dtype.type(x.size // max(np.size(total), 1))


kernel("Sum")(_reduction(np.add.reduce, lambda x, a, k: np.sum(x, axis=a, keepdims=k)))
kernel("Mean")(_reduction(_mean, lambda x, a, k: np.trunc(np.mean(x, axis=a, keepdims=k))))
kernel("Max")(_reduction(_extremum(np.max, lowest=True)))
kernel("Min")(_reduction(_extremum(np.min, lowest=False)))
kernel("Prod")(_reduction(np.multiply.reduce, lambda x, a, k: np.prod(x, axis=a, keepdims=k)))


def _add_n(*xs):
    """Sum of same-shaped tensors, accumulated in one buffer (no temporary per input)."""
    if len(xs) == 1:
        return np.array(xs[0], copy=True)
    total = np.add(xs[0], xs[1])
    if type(total) is not np.ndarray:  # 0-d inputs give a NumPy scalar, which cannot be written in place
        return functools.reduce(np.add, xs[2:], total)
    for x in xs[2:]:
        np.add(total, x, out=total)
    return total


kernel("AddN")(fixed(_add_n))


def _cumulative(np_fn, identity: int):
    """Cumsum/Cumprod with TF's exclusive (shift in the identity) and reverse (run from the end) attributes."""
    def factory(op, ctx):
        exclusive, reverse = op._attrs["exclusive"], op._attrs["reverse"]

        def cumulative(x, axis):
            x, axis = np.asarray(x), int(axis)
            if not -x.ndim <= axis < x.ndim:
                raise InvalidArgumentError(None, op, f"axis {axis} is out of range for a tensor of rank {x.ndim}")
            if reverse:
                x = np.flip(x, axis)
            out = np_fn(x, axis=axis, dtype=x.dtype)
            if exclusive:
                head = np.full_like(np.take(out, [0], axis=axis), identity)
                out = np.concatenate([head, np.delete(out, -1, axis=axis)], axis=axis) if x.shape[axis] else out
            return np.flip(out, axis) if reverse else out
        return cumulative
    return factory


kernel("Cumsum")(_cumulative(np.cumsum, 0))
kernel("Cumprod")(_cumulative(np.cumprod, 1))


@kernel("Cast", gpu_types=GPU_ALL)
def _cast(op, ctx):
    dst = op._attrs["DstT"].as_numpy_dtype
    return lambda x: np.asarray(x).astype(dst)


@kernel("Range", gpu_types=GPU_NUMERIC)
def _range(op, ctx):
    dtype = op._outputs[0]._dtype.as_numpy_dtype
    return lambda start, limit, delta: np.arange(start, limit, delta, dtype=dtype)


# --- random_ops -----------------------------------------------------------------------------------------------------
def _random(sample):
    def factory(op, ctx):
        rng = ctx.random_generator(op)
        dtype = op._attrs["dtype"].as_numpy_dtype
        return lambda shape: sample(rng, _axes(shape)).astype(dtype, copy=False)
    return factory


def _truncated(rng, shape):
    out = rng.standard_normal(shape, dtype=np.float64)
    bad = np.abs(out) > 2
    while bad.any():
        out[bad] = rng.standard_normal(int(bad.sum()))
        bad = np.abs(out) > 2
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


def _assign_family(update):
    """Assign/AssignAdd/AssignSub: journal the old value (so a failed step can be undone), then replace it."""
    def factory(op, ctx):
        var_op = op._inputs[0]._op
        cell = ctx.variable(var_op)
        static = var_op._attrs["shape"]
        check_shape = op._attrs.get("validate_shape", True) and static.is_fully_defined()
        static_dims = tuple(static.as_list()) if check_shape else None
        is_assign = update is None

        def assign(value):
            old = cell.value
            if is_assign:
                if check_shape and np.shape(value) != static_dims:
                    raise InvalidArgumentError(None, op, f"Assign requires shapes of both tensors to match. lhs shape"
                                               f"= {dims_text(static_dims)} rhs shape= {dims_text(np.shape(value))}")
                new = np.array(value, copy=True)  # the variable owns its buffer: no fetch or feed aliases it
            else:
                if old is None:
                    raise _uninitialized(op, var_op)
                if np.shape(value) != np.shape(old):
                    raise InvalidArgumentError(None, op, f"Cannot update variable with shape "
                                               f"{dims_text(np.shape(old))} using a Tensor with shape "
                                               f"{dims_text(np.shape(value))}, shapes must be equal.")
                new = update(old, value)
            ctx.journal.append((cell, old))  # this thread's step journal, looked up when the step runs
            cell.value = new
            return new
        return assign
    return factory


kernel("Assign", gpu_types=GPU_VARIABLE)(_assign_family(None))
kernel("AssignAdd", gpu_types=GPU_VARIABLE)(_assign_family(np.add))
kernel("AssignSub", gpu_types=GPU_VARIABLE)(_assign_family(np.subtract))


@kernel("IsVariableInitialized", gpu_types=GPU_VARIABLE)
def _is_initialized(op, ctx):
    cell = ctx.variable(op._inputs[0]._op)
    return lambda: np.bool_(cell.value is not None)


@kernel("InitializedValue", gpu_types=GPU_VARIABLE)
def _initialized_value(op, ctx):
    cell = ctx.variable(op._inputs[0]._op)
    return lambda initial: initial if cell.value is None else cell.value


# --- control_flow_ops -----------------------------------------------------------------------------------------------
kernel("NoOp", None, None)(fixed(lambda *args: None))


# --- nn_ops ---------------------------------------------------------------------------------------------------------
@kernel("BiasAdd", _dtypes.NUMERIC)
def _bias_add(op, ctx):
    channels_first = op._attrs["data_format"] == "NCHW"

    def bias_add(value, bias):
        ndim = np.ndim(value)
        if ndim < 2:
            raise InvalidArgumentError(None, op, f"Input tensor must be at least 2D: {dims_text(np.shape(value))}")
        if np.ndim(bias) != 1:
            raise InvalidArgumentError(None, op, f"Biases must be 1D: {dims_text(np.shape(bias))}")
        channel_axis = 1 if channels_first else ndim - 1
        if np.shape(bias)[0] != np.shape(value)[channel_axis]:
            raise InvalidArgumentError(None, op, f"Must provide as many biases as the last dimension of the input "
                                       f"tensor: {dims_text(np.shape(bias))} vs. {dims_text(np.shape(value))}")
        if channels_first:
            bias = np.reshape(bias, (-1,) + (1,) * (ndim - 2))
        return np.add(value, bias)
    return bias_add


# --- training_ops ---------------------------------------------------------------------------------------------------
def _training_kernel(ref_names: tuple, value_names: tuple, update, grad_name: str = "grad"):
    """A training-op kernel (ApplyAdam, ...): check the var/slot cells and the inputs as training_ops.cc does, compute
    `update(attrs, *ref_values, *values) -> new ref values` in NumPy, journal every old value, then store the new
    arrays (never written in place: fetched values may alias them). Returns the variable's new value."""
    n_refs = len(ref_names)
    grad_at = value_names.index(grad_name)
    scalars = tuple((i, arg) for i, arg in enumerate(value_names) if i != grad_at)
    same_shape_names = ref_names[1:] + (grad_name,)

    def factory(op, ctx):
        ref_ops = [t._op for t in op._inputs[:n_refs]]
        cells = [ctx.variable(var_op) for var_op in ref_ops]
        step = functools.partial(update, op._attrs)

        def apply(*values):
            olds = [cell.value for cell in cells]
            for var_op, old in zip(ref_ops, olds):
                if old is None:
                    raise FailedPreconditionError(None, op, f"Attempting to use uninitialized variables: {var_op.name}")
            for i, arg in scalars:
                if np.ndim(values[i]) != 0:
                    raise InvalidArgumentError(None, op, f"{arg} is not a scalar: {dims_text(np.shape(values[i]))}")
            var_shape = np.shape(olds[0])
            for arg, value in zip(same_shape_names, olds[1:] + [values[grad_at]]):
                if np.shape(value) != var_shape:
                    raise InvalidArgumentError(None, op, f"var and {arg} do not have the same shape"
                                               f"{dims_text(var_shape)} {dims_text(np.shape(value))}")
            news = step(*olds, *values)
            journal = ctx.journal
            for cell, old, new in zip(cells, olds, news):
                journal.append((cell, old))
                cell.value = new
            return news[0]
        return apply
    return factory


def _gradient_descent(attrs, var, alpha, delta):
    return (var - delta * alpha,)


def _momentum(attrs, var, accum, lr, grad, momentum):
    accum = accum * momentum + grad
    if attrs.get("use_nesterov"):
        return var - (grad * lr + accum * momentum * lr), accum
    return var - accum * lr, accum


def _adam(attrs, var, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad):
    alpha = lr * np.sqrt(1 - beta2_power) / (1 - beta1_power)
    m = m + (grad - m) * (1 - beta1)
    v = v + (grad * grad - v) * (1 - beta2)
    if attrs.get("use_nesterov"):
        return var - ((grad * (1 - beta1) + beta1 * m) * alpha) / (np.sqrt(v) + epsilon), m, v
    return var - (m * alpha) / (np.sqrt(v) + epsilon), m, v


def _rms_prop(attrs, var, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms + (grad * grad - ms) * (1 - rho)
    mom = mom * momentum + (grad * lr) / np.sqrt(ms + epsilon)
    return var - mom, ms, mom


def _centered_rms_prop(attrs, var, mg, ms, mom, lr, rho, momentum, epsilon, grad):
    ms = ms + (grad * grad - ms) * (1 - rho)
    mg = mg + (grad - mg) * (1 - rho)
    mom = mom * momentum + (grad * lr) / np.sqrt((ms - mg * mg) + epsilon)
    return var - mom, mg, ms, mom


def _adagrad(attrs, var, accum, lr, grad):
    if attrs.get("update_slots", True):
        accum = accum + grad * grad
    return var - grad * lr / np.sqrt(accum), accum


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
