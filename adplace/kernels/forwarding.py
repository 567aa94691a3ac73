"""Kernels that compute into a dying input's array (TF's `forward_input_or_allocate_output`), for the plans' pass
in adplace.runtime.buffer_forwarding.

A plan knows which input of a step no later step reads; the kernel built here writes its result into that input's
array instead of a new one when, at run time, nobody else can see it: a plain NumPy array that owns its memory, is
writeable, and whose reference count is the one a plan's own variable gives (no fetch, feed, variable, view, memo,
constant or other slot holds it). The values are the very ones the kernel computes out of place: the same NumPy
loop writes them, only into memory that is already in cache. That pays on arrays larger than the core's cache
(1.8x for an add on 4 MB here); on smaller ones a fresh array is the block malloc just took back, as hot, and the
checks would cost more than they save, so arrays under MIN_BYTES are left alone.
"""
from __future__ import annotations

import sys
from typing import Callable

import numpy as np

from adplace.framework import dtypes as _dtypes

MIN_BYTES = 1 << 19  # 512 KB

# Ops whose CPU kernel is the NumPy ufunc itself and whose float output has its input's type.
UNARY = {"Neg": np.negative, "Abs": np.abs, "Square": np.square, "Sqrt": np.sqrt, "Reciprocal": np.reciprocal,
         "Exp": np.exp, "Log": np.log, "Log1p": np.log1p, "Sin": np.sin, "Cos": np.cos, "Tan": np.tan,
         "Tanh": np.tanh, "Floor": np.floor, "Ceil": np.ceil, "Rint": np.rint, "Atan": np.arctan, "Asin": np.arcsin,
         "Acos": np.arccos, "Sinh": np.sinh, "Cosh": np.cosh, "Asinh": np.arcsinh, "Acosh": np.arccosh,
         "Atanh": np.arctanh, "Expm1": np.expm1, "Sign": np.sign}
BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.true_divide, "Pow": np.power,
          "Atan2": np.arctan2}
FLOATS = frozenset({_dtypes.float16, _dtypes.float32, _dtypes.float64})

_getrefcount = sys.getrefcount
_ndarray = np.ndarray


def _calibrated_free_count() -> int | None:
    """getrefcount(x) in a kernel that a plan's generated code called with a value only that code's variable holds:
    measured once, with code of the same shape, so that any other holder shows as a higher count. None where counts
    say nothing (no GIL, not CPython): nothing is forwarded there."""
    if sys.implementation.name != "cpython" or not getattr(sys, "_is_gil_enabled", lambda: True)():
        return None
    seen = []

    def kernel(x):
        seen.append(_getrefcount(x))
    namespace = {"k0": kernel, "_new": lambda: np.empty(1)}
    exec("def run():\n    v0 = _new()\n    v1 = k0(v0); del v0\n", namespace)  # noqa: S102 - fixed source
    namespace["run"]()
    return seen[0]


FREE_REFS = _calibrated_free_count()


# Each kernel below tests, in its own body (where FREE_REFS was measured): a plain array, large enough, nobody else
# refers to it, it owns its memory and may be written.
def unary(kernel: Callable, into: Callable) -> Callable:
    """`kernel(x)`, computed as `into(x, out=x)` when x dies here and nobody else holds it."""
    def forwarding(x):
        if type(x) is _ndarray and x.nbytes >= MIN_BYTES and _getrefcount(x) == FREE_REFS and x.base is None and \
                x.flags.writeable:
            return into(x, out=x)
        return kernel(x)
    return forwarding


def binary(kernel: Callable, into: Callable, position: int) -> Callable:
    """`kernel(x, y)`, computed as `into(x, y, out)` into the operand at `position` when it dies here and nobody
    else holds it; `into` checks the other operand."""
    if position == 0:
        def forwarding(x, y):
            if type(x) is _ndarray and x.nbytes >= MIN_BYTES and _getrefcount(x) == FREE_REFS and x.base is None \
                    and x.flags.writeable:
                return into(x, y, x)
            return kernel(x, y)
    else:
        def forwarding(x, y):
            if type(y) is _ndarray and y.nbytes >= MIN_BYTES and _getrefcount(y) == FREE_REFS and y.base is None \
                    and y.flags.writeable:
                return into(x, y, y)
            return kernel(x, y)
    return forwarding


def fits(other, out) -> bool:
    """Whether `other`, a binary ufunc's second operand, leaves the result `out`'s type and shape: an array of its
    type with its shape, or one broadcasting to it."""
    if type(other) is not _ndarray or other.dtype != out.dtype:
        return False
    shape, into = other.shape, out.shape
    if shape == into or not shape:
        return True
    return len(shape) <= len(into) and all(n == 1 or n == m for n, m in zip(reversed(shape), reversed(into)))


def ufunc_into(ufunc) -> Callable:
    """`into(x, y, out)` for a binary ufunc: `ufunc(x, y)` written into `out` (x or y) when the other operand fits
    it, else a new array."""
    def into(x, y, out):
        if fits(y if out is x else x, out):
            return ufunc(x, y, out=out)  # a keyword: NumPy deprecates a positional out for maximum/minimum
        return ufunc(x, y)
    return into


def forwarding_kernel(op, kernel: Callable, position: int) -> Callable | None:
    """A kernel for `op` (built as `kernel`, on NumPy) that may write its result into input `position`'s array, or
    None when the op has no such form: its output must have that input's float type and shape. Kernels with their
    own form carry `kernel.forwards(position) -> kernel or None` (Relu, ReluGrad, BiasAdd, Maximum, Minimum)."""
    if FREE_REFS is None or len(op._outputs) != 1 or op._outputs[0].dtype not in FLOATS or \
            op._inputs[position].dtype != op._outputs[0].dtype:
        return None
    shape, given = op._outputs[0]._shape, op._inputs[position]._shape
    if shape.is_fully_defined() and shape.num_elements() * op._outputs[0].dtype.size < MIN_BYTES or \
            not given.is_compatible_with(shape):
        return None  # too small to pay, or an operand the result outgrows (a scalar, a bias)
    op_type = op._type
    if kernel is UNARY.get(op_type):
        return unary(kernel, kernel)
    if kernel is BINARY.get(op_type):
        return binary(kernel, ufunc_into(kernel), position)
    forwards = getattr(kernel, "forwards", None)
    return forwards(position) if forwards is not None else None
