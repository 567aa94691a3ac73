"""Fused elementwise GPU kernels: CUDA source for a chain of elementwise ops, compiled once per chain signature.

A chain computes every member into a register temporary and writes only its last op's output, so k ops read their
inputs once and write once instead of k times. Each member is an op type of FUSIBLE with float32 or float64 inputs;
its CUDA expression is written in the small subset CuPy's ElementwiseKernel body needs: declarations, arithmetic,
comparisons, CUDA math functions and the `ad_*` helpers of PREAMBLE (written once for float and double).

    source = chain_source(members, leaves)   # members: (op type, dtype, argument names), in order
    kernel = compiled(cupy, source)          # a cupy.ElementwiseKernel, cached by the source text
"""
from __future__ import annotations

import hashlib
import threading
from typing import NamedTuple

from adplace.framework import dtypes as _dtypes
from adplace.kernels.gpu import once

C_TYPES = {_dtypes.float32: "float", _dtypes.float64: "double", _dtypes.bool: "bool"}
FLOAT_TYPES = frozenset({_dtypes.float32, _dtypes.float64})

# op type -> CUDA expression over its arguments {0}, {1}; {f} is the float-function suffix ("f" for float, else "").
# Elementwise ops left out (Round, Atan, Erf, Lgamma, Digamma, Atan2, DivNoNan, ...) run as kernels of their own:
# their CPU kernels are series or NumPy functions the fused CUDA subset (and tests' fake CuPy) does not cover.
FUSIBLE = {
    "Neg": "-{0}", "Abs": "fabs{f}({0})", "Sign": "ad_sign({0})", "Square": "{0} * {0}", "Sqrt": "sqrt{f}({0})",
    "Rsqrt": "rsqrt{f}({0})", "Reciprocal": "1 / {0}", "Exp": "exp{f}({0})", "Log": "log{f}({0})",
    "Log1p": "log1p{f}({0})", "Sin": "sin{f}({0})", "Cos": "cos{f}({0})", "Tan": "tan{f}({0})",
    "Tanh": "tanh{f}({0})", "Sigmoid": "ad_sigmoid({0})", "Relu": "ad_relu({0})", "Floor": "floor{f}({0})",
    "Ceil": "ceil{f}({0})",
    "Add": "{0} + {1}", "Sub": "{0} - {1}", "Mul": "{0} * {1}", "RealDiv": "{0} / {1}",
    "FloorDiv": "ad_floordiv({0}, {1})", "FloorMod": "ad_floormod({0}, {1})", "Pow": "pow{f}({0}, {1})",
    "Maximum": "ad_max({0}, {1})", "Minimum": "ad_min({0}, {1})", "SquaredDifference": "ad_sqdiff({0}, {1})",
    "Less": "{0} < {1}", "LessEqual": "{0} <= {1}", "Greater": "{0} > {1}", "GreaterEqual": "{0} >= {1}",
    "Equal": "{0} == {1}", "NotEqual": "{0} != {1}",
    # TF's order of operations; TF's 0.5 * x is written x / 2 (the same value): a double literal would compute in double
    "TanhGrad": "{1} * (1 - {0} * {0})", "SigmoidGrad": "{1} * {0} * (1 - {0})", "SqrtGrad": "{1} / 2 / {0}",
    "RsqrtGrad": "-({1} * {0}) / 2 * ({0} * {0})", "ReciprocalGrad": "-{0} * {0} * {1}",
    "ReluGrad": "{0} * ({1} > 0)",  # TF's gradients * (features > 0): a NaN gradient stays NaN
}

_HELPERS = """\
__device__ {T} ad_sign({T} x) {{ return x > 0 ? ({T})1 : (x < 0 ? ({T})-1 : x); }}
__device__ {T} ad_relu({T} x) {{ return (x > 0 || x != x) ? x : ({T})0; }}
__device__ {T} ad_sigmoid({T} x) {{ return ({T})1 / (({T})1 + exp{f}(-x)); }}
__device__ {T} ad_floordiv({T} x, {T} y) {{ return floor{f}(x / y); }}
__device__ {T} ad_floormod({T} x, {T} y) {{ {T} r = fmod{f}(x, y); return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r; }}
__device__ {T} ad_sqdiff({T} x, {T} y) {{ {T} d = x - y; return d * d; }}
__device__ {T} ad_max({T} x, {T} y) {{ return (x != x || x > y) ? x : y; }}
__device__ {T} ad_min({T} x, {T} y) {{ return (x != x || x < y) ? x : y; }}
"""
# NaN handling as NumPy's (and TF's Eigen) maximum/minimum/relu/sign: a NaN argument gives NaN.
PREAMBLE = _HELPERS.format(T="float", f="f") + _HELPERS.format(T="double", f="")


class Member(NamedTuple):
    """One op of a chain: its type, its input dtype (selects float or double math) and output dtype, its args."""

    op_type: str
    in_dtype: _dtypes.DType
    out_dtype: _dtypes.DType
    args: tuple  # argument names: leaf params `x<k>` or earlier temporaries `t<k>`


class ChainSource(NamedTuple):
    in_params: str
    out_params: str
    operation: str
    name: str


def fusible(op_type: str, in_dtype) -> bool:
    return op_type in FUSIBLE and in_dtype in FLOAT_TYPES


def _numpy_name(dtype) -> str:
    return dtype.as_numpy_dtype.__name__ if dtype != _dtypes.bool else "bool"


def chain_source(members: list[Member], leaf_dtypes: list) -> ChainSource:
    """ElementwiseKernel parts for members computed in order into t0, t1, ...; the last one is the output `y`."""
    lines = []
    for k, m in enumerate(members):
        expr = FUSIBLE[m.op_type].format(*m.args, f="f" if m.in_dtype == _dtypes.float32 else "")
        target = "y" if k == len(members) - 1 else f"{C_TYPES[m.out_dtype]} t{k}"
        lines.append(f"{target} = {expr};")
    in_params = ", ".join(f"{_numpy_name(d)} x{k}" for k, d in enumerate(leaf_dtypes))
    out_params = f"{_numpy_name(members[-1].out_dtype)} y"
    operation = "\n".join(lines)
    digest = hashlib.sha1(f"{in_params}|{out_params}|{operation}".encode()).hexdigest()[:12]
    return ChainSource(in_params, out_params, operation, f"adplace_fused_{digest}")


_cache: dict = {}
_cache_lock = threading.Lock()


def compiled(cp, source: ChainSource):
    """The ElementwiseKernel for a chain, one per distinct source per CuPy module (CuPy caches the binary)."""
    return once(_cache, (id(cp), source), lambda: cp.ElementwiseKernel(
        source.in_params, source.out_params, source.operation, source.name, preamble=PREAMBLE), _cache_lock)
