"""How kernels are registered and built: `kernel` registers one factory for the CPU and (virtual and CUDA) GPUs,
with TF's dtype sets; `fixed` and `with_xp` build the common factory shapes; `int_tuple`, `multi_output` and the
object-scalar helpers (`object_scalar`, `object_in`, `handle_of`: handles and datasets in 0-d object arrays) are the
helpers every kernel module shares.

A kernel factory runs once per (op, session) when a plan is built and returns the function the hot loop calls:
`factory(op, ctx) -> kernel(*inputs)`. Kernels are written against the array module `ctx.xp` (NumPy on the CPU and
virtual GPUs, CuPy on a CUDA GPU) and never write an input in place, so outputs may alias inputs. The one exception
is chosen by the plan: adplace.kernels.forwarding's kernels write into an input the step reads last and nobody holds.
"""
from __future__ import annotations

import numpy as np

from adplace.framework import dtypes as _dtypes
from adplace.framework.errors import InvalidArgumentError
from adplace.framework.registry import register_kernel

ALL = _dtypes.ALL
NO_GPU_TYPES = frozenset({_dtypes.string, _dtypes.bfloat16})  # CuPy has no bfloat16: bfloat16 ops run on the CPU
GPU_FLOATING = _dtypes.FLOATING - NO_GPU_TYPES
GPU_ALL = ALL - NO_GPU_TYPES
GPU_NUMERIC = GPU_FLOATING | _dtypes.COMPLEX | {_dtypes.int32, _dtypes.int64}  # int32 in host memory, as TF
GPU_FLOAT = GPU_FLOATING | _dtypes.COMPLEX
GPU_VARIABLE = GPU_FLOATING | _dtypes.COMPLEX | {_dtypes.int64, _dtypes.bool}  # TF has no int32 GPU variable


NO_GPU = frozenset()


def kernel(op_type: str, cpu_types=ALL, gpu_types=GPU_NUMERIC):
    """Register one NumPy factory for the CPU and, with TF's GPU dtype set, for (virtual) GPUs.

    A dtype set of None accepts every dtype (NoOp); `gpu_types=NO_GPU` registers no GPU kernel. bfloat16 is dropped
    from every GPU set (CuPy has no bfloat16), so a bfloat16 op is placed on the CPU.
    """
    if gpu_types is not None:
        gpu_types = frozenset(_dtypes.as_dtype(d) for d in gpu_types) - {_dtypes.bfloat16}

    def decorate(factory):
        register_kernel(op_type, "CPU", cpu_types)(_rounding_to_bfloat16(factory))
        if gpu_types is None or gpu_types:
            register_kernel(op_type, "GPU", gpu_types)(factory)
        return factory
    return decorate


def _rounding_to_bfloat16(factory):
    """The factory, whose kernels round bfloat16 outputs that NumPy promoted (bfloat16 * 0.5 is float32 in NumPy).

    Decided once per op when the plan is built: ops without a bfloat16 output get the kernel itself.
    """
    def build(op, ctx):
        fn = factory(op, ctx)
        is_bfloat16 = tuple(t._dtype.base_dtype is _dtypes.bfloat16 for t in op._outputs)
        if not any(is_bfloat16):
            return fn
        bfloat16 = _dtypes.bfloat16.as_numpy_dtype

        def round_one(value):
            return value if getattr(value, "dtype", bfloat16) == bfloat16 else np.asarray(value).astype(bfloat16)

        if len(is_bfloat16) == 1:
            return lambda *inputs: round_one(fn(*inputs))

        def round_outputs(*inputs):
            return tuple(round_one(v) if rounds else v for v, rounds in zip(fn(*inputs), is_bfloat16))
        return round_outputs
    return build


def constant_kernel(value):
    """A kernel returning `value` whatever it is given; `constant` tells plans they may use the value itself."""
    def kernel(*args):
        return value
    kernel.constant = value
    return kernel


def forward(value):
    """The kernel of ops that pass their input on as it is (Identity, StopGradient); plans may alias the value."""
    return value


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


def int_tuple(axis) -> tuple:
    """A scalar or vector of axes (or dims) as a tuple of Python ints; `tolist` is the fast way out of NumPy."""
    if type(axis) is not np.ndarray and hasattr(axis, "get"):  # a device array (CuPy): shapes are tiny, fetch it
        axis = axis.get()
    return tuple(np.asarray(axis).ravel().tolist())


def object_scalar(value) -> np.ndarray:
    """`value` (a resource, a dataset, bytes) as the 0-d object array such values travel in between kernels."""
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def object_in(value):
    """The object a 0-d object array holds (object_scalar's inverse); any other value as it is."""
    return value[()] if isinstance(value, np.ndarray) and value.dtype == object and value.ndim == 0 else value


def handle_of(handle, cls: type, op, what: str):
    """The `cls` object behind a handle as kernels receive it; InvalidArgumentError naming `op` for anything else
    (`what`: "a queue handle")."""
    held = object_in(handle)
    if not isinstance(held, cls):
        raise InvalidArgumentError(None, op, f"Op '{op.name}' ({op.type}) got {type(held).__name__} where {what} was "
                                   f"expected")
    return held


def multi_output(pieces):
    """A multi-output kernel's result: the pieces, or the one value itself (plans hold a 1-output op's value bare)."""
    return pieces if len(pieces) != 1 else pieces[0]
