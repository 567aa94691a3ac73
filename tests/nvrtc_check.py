"""Compile the CUDA C++ a CuPy ``ElementwiseKernel`` would compile, with NVRTC alone (no GPU, no CUDA toolkit).

``compile_elementwise(in_params, out_params, operation, name, preamble)`` builds a translation unit shaped like the one
CuPy generates (cupy/_core/_kernel.pyx: ``_get_elementwise_kernel_code`` / ``_get_simple_elementwise_kernel_code``)
and compiles it to PTX, raising ``CompileError`` with NVRTC's log.  Mimicked from CuPy:

- parameters parsed as ``[modifiers] <type> <name>``, comma-separated; ``<type>`` a NumPy dtype name (normalised by
  ``numpy.dtype``) mapped to CuPy's C type (cupy/_core/_scalar.pyx ``_typenames_base``: float64 -> double,
  int64 -> long long, bool -> bool, ...), or a one-letter placeholder (``T``) bound by ``type_map`` and emitted as
  ``typedef <ctype> T;`` before the preamble, as CuPy's ``_TypeMap.get_typedef_code`` does;
- kernel names must match ``[a-zA-Z_][a-zA-Z_0-9]*`` and ``i`` is not a parameter name (ValueError, as CuPy);
- ``extern "C" __global__`` kernel, ``#pragma unroll 1``, a grid-stride loop over ``ptrdiff_t i`` (carray.cuh
  ``CUPY_FOR``), and per element ``const T &x = _raw_x[...];`` for inputs, ``T &y = _raw_y[...];`` for outputs, then
  ``operation`` verbatim; ``_ind.size()`` / ``_ind.get()`` work;
- ``M_PI`` (carray.cuh) and CUDART_INF/NAN/PI(_F) (cupy/math_constants.h); CUDA math builtins come with NVRTC;
- options: ``-ftz=true`` (cupy/cuda/compiler.py ``_compile_with_cache_cuda``) and ``--std=c++14`` (CuPy's default,
  ``assemble_cupy_compiler_options``); ``--diag-suppress=177`` (ours: no unused-variable warnings in error logs).
  No ``-default-device``: as in CuPy, a preamble helper needs ``__device__``.

Not mimicked: ``CArray``/``CIndexer`` (arrays are flat pointers, so strided/broadcast indexing and ``raw`` params
are not modelled; ``raw`` raises ValueError), ``loop_prep``/``after_loop``, CuPy's other headers (complex.cuh,
atomics.cuh, cuda_fp16.h), hence float16 and complex dtypes raise ValueError: they need CUDA toolkit headers.

The library: ``$ADPLACE_NVRTC`` (a path) if set, else the ``nvidia-cuda-nvrtc-cu12`` wheel's ``nvidia/cuda_nvrtc/lib``,
else ``ctypes.util.find_library("nvrtc")``.  ``available()`` says whether it loaded, ``reason()`` why not.
"""
import ctypes
import ctypes.util
import functools
import glob
import importlib.util
import os
import re

import numpy as np

_CTYPES = {"float32": "float", "float64": "double", "int8": "signed char", "int16": "short", "int32": "int",
           "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short", "uint32": "unsigned int",
           "uint64": "unsigned long long", "bool": "bool"}
_NEEDS_HEADERS = ("float16", "complex64", "complex128")
OPTIONS = ("-ftz=true", "--std=c++14", "--diag-suppress=177")  # 177: unused variable, only log noise
_HEADER = """#define M_PI 3.1415926535897932384626433832795
#define CUDART_INF_F __int_as_float(0x7f800000)
#define CUDART_NAN_F __int_as_float(0x7fffffff)
#define CUDART_PI_F 3.141592654f
#define CUDART_INF __longlong_as_double(0x7ff0000000000000ULL)
#define CUDART_NAN __longlong_as_double(0xfff8000000000000ULL)
#define CUDART_PI 3.1415926535897931e+0
struct _nvrtc_check_indexer {
  ptrdiff_t size_, i_;
  __device__ ptrdiff_t size() const { return size_; }
  __device__ ptrdiff_t get() const { return i_; }
};
"""


class CompileError(Exception):
    """NVRTC rejected the source; ``log`` is NVRTC's log, ``source`` the whole translation unit."""

    def __init__(self, log, source, options):
        self.log, self.source, self.options = log, source, tuple(options)
        numbered = "\n".join(f"{n:4d}  {line}" for n, line in enumerate(source.splitlines(), 1))
        super().__init__(f"NVRTC compilation failed (options {' '.join(options)}):\n{log}\n--- source ---\n{numbered}")


def _candidates():
    if os.environ.get("ADPLACE_NVRTC"):
        return [os.environ["ADPLACE_NVRTC"]]
    found = []
    try:
        spec = importlib.util.find_spec("nvidia.cuda_nvrtc")
    except (ImportError, ValueError):
        spec = None
    for d in (spec.submodule_search_locations or []) if spec else []:
        found += sorted(p for p in glob.glob(os.path.join(d, "lib", "libnvrtc.so*")) if ".alt." not in p)
    return found + [p for p in [ctypes.util.find_library("nvrtc")] if p]


@functools.lru_cache(maxsize=None)
def _load():
    """(library, None) or (None, why not)."""
    errors = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
            lib.nvrtcGetErrorString.restype = ctypes.c_char_p
            return lib, None
        except (OSError, AttributeError) as e:
            errors.append(str(e) if path in str(e) else f"{path}: {e}")
    if not errors:
        return None, "NVRTC not found: set ADPLACE_NVRTC, or pip install nvidia-cuda-nvrtc-cu12"
    return None, "NVRTC failed to load: " + "; ".join(errors)


def available() -> bool:
    return _load()[0] is not None


def reason() -> str:
    return _load()[1] or ""


def _ctype(dtype, where):
    """CuPy's C type for a NumPy dtype name; ValueError for unknown or header-needing dtypes."""
    try:
        dname = np.dtype(dtype).name
    except TypeError as e:
        raise ValueError(f"unknown dtype {dtype!r} in {where!r}") from e
    if dname in _NEEDS_HEADERS:
        raise ValueError(f"dtype {dname} needs CUDA toolkit headers (cuda_fp16.h / thrust complex); not modelled")
    if dname not in _CTYPES:
        raise ValueError(f"unsupported dtype {dname} in {where!r}")
    return _CTYPES[dname]


def _parse(params, is_input, type_map):
    out = []
    for p in (s.strip() for s in params.split(",") if s.strip()):
        words = p.split()
        if len(words) != 2:
            raise ValueError(f"parameter {p!r}: expected '<dtype> <name>' (raw/_non_const are not modelled)")
        t, name = words
        if len(t) == 1 and t not in type_map:
            raise ValueError(f"type placeholder {t!r} in {p!r} has no entry in type_map")
        ctype = t if len(t) == 1 else _ctype(t, p)
        if name == "i":
            raise ValueError("Can not use 'i' as a parameter name")
        out.append((ctype, name, is_input))
    return out


def kernel_source(in_params, out_params, operation, name, preamble="", type_map=None):
    """The translation unit ``compile_elementwise`` compiles (see the module docstring)."""
    if not re.match(r"^[a-zA-Z_][a-zA-Z_0-9]*$", name):
        raise ValueError(f"Invalid kernel name: {name!r}")
    type_map = dict(type_map or {})
    params = _parse(in_params, True, type_map) + _parse(out_params, False, type_map)
    typedefs = "".join(f"typedef {_ctype(d, t)} {t};\n" for t, d in sorted(type_map.items()))
    args = ", ".join(f"{'const ' if c else ''}{t}* __restrict__ _raw_{n}" for t, n, c in params)
    decls = "".join(f"    {'const ' if c else ''}{t} &{n} = _raw_{n}[i];\n" for t, n, c in params)
    return (f"{_HEADER}{typedefs}{preamble}\n"
            f'extern "C" __global__ void {name}({args}{", " if args else ""}ptrdiff_t _n) {{\n'
            "  #pragma unroll 1\n"
            "  for (ptrdiff_t i = static_cast<ptrdiff_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < _n;\n"
            "       i += static_cast<ptrdiff_t>(blockDim.x) * gridDim.x) {\n"
            "    const _nvrtc_check_indexer _ind = {_n, i};\n"
            f"{decls}{operation};\n  }}\n}}\n")


def compile_elementwise(in_params: str, out_params: str, operation: str, name: str, preamble: str = "",
                        arch: str = "compute_90", type_map=None) -> str:
    """Compile the ElementwiseKernel-shaped source with NVRTC; the PTX text, or CompileError."""
    source = kernel_source(in_params, out_params, operation, name, preamble, type_map)
    lib, why = _load()
    if lib is None:
        raise RuntimeError(why)
    options = (f"--gpu-architecture={arch}",) + OPTIONS
    prog = ctypes.c_void_p()
    _check(lib, lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), f"{name}.cu".encode(), 0, None, None))
    try:
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        rc = lib.nvrtcCompileProgram(prog, len(options), opts)
        if rc != 0:
            raise CompileError(_read(lib, prog, "ProgramLog") or _err(lib, rc), source, options)
        return _read(lib, prog, "PTX")
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def _read(lib, prog, what):
    size = ctypes.c_size_t()
    _check(lib, getattr(lib, f"nvrtcGet{what}Size")(prog, ctypes.byref(size)))
    buf = ctypes.create_string_buffer(size.value)
    _check(lib, getattr(lib, f"nvrtcGet{what}")(prog, buf))
    return buf.value.decode(errors="replace")


def _err(lib, rc):
    return (lib.nvrtcGetErrorString(rc) or b"?").decode()


def _check(lib, rc):
    if rc != 0:
        raise RuntimeError(f"NVRTC call failed: {_err(lib, rc)}")
