"""Fused elementwise CPU kernels: one Numba loop per chain of elementwise ops, compiled once and cached on disk.

A chain (adplace.kernels.fusion.Member's, computed in order into t0, t1, ...) becomes the Python source of a loop
over the flattened leaves (scalar leaves broadcast) that computes every member in registers and writes only the
last: k ops read their inputs once and write once instead of k times, in one call instead of k. Each expression
keeps the NumPy kernel's semantics: float32 stays float32 (constants are typed), maximum/minimum/relu/sign give
NaN for a NaN argument, FloorDiv is floor(x / y), FloorMod is NumPy's mod, comparisons give bool. Library functions
(sin, exp, ...) are the C library's, which may differ from NumPy's SIMD ones by an ulp or two; float64 tanh, through
expm1, by up to 3. Float32 tanh is a rational function (tools/fit_tanh.py), pure arithmetic so that its loop vectorizes,
within 5.5 ulp of the exact value, as XLA's (4.5) and TF's (5.4) are (NumPy's SIMD tanh: 1.4). A product and the sum
it feeds may round once (FMA contraction), as nvrtc's fused GPU loops do.

The source is written to `<cache>/fused/adplace_fused_<digest>.py` (`$ADPLACE_CACHE_DIR`, else
`$XDG_CACHE_HOME/adplace` or `~/.cache/adplace`) and compiled with `numba.njit(cache=True)`, so Numba's cache next
to it keeps the machine code for later processes (in Numba's own format, which pickles its index: the directory is
per user and must be as trusted as the code); an unwritable cache compiles in memory (one warning). Numba is the
optional `jit` extra: `available()` says whether it is installed.

    source = loop_source(members, leaf_dtypes, leaf_is_array)
    kernel = fused_kernel(source, shape, fallback)   # fallback(*leaves): the unfused kernels, for unexpected inputs
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import time
import warnings
from typing import Callable, NamedTuple

import numpy as np

from adplace.kernels.fusion import Member

# op type -> expression over argument names {0}, {1}, in the nopython subset of Python; c0, c1, c2, ch, cmh are 0,
# 1, 2, 0.5 and -0.5 of the chain's float type (an untyped literal would compute a float32 chain in float64).
EXPRESSIONS = {
    "Neg": "-{0}", "Abs": "abs({0})", "Sign": "(c1 if {0} > c0 else (-c1 if {0} < c0 else {0}))",
    "Square": "{0} * {0}", "Sqrt": "math.sqrt({0})", "Rsqrt": "c1 / math.sqrt({0})", "Reciprocal": "c1 / {0}",
    "Exp": "math.exp({0})", "Log": "math.log({0})", "Log1p": "math.log1p({0})", "Sin": "math.sin({0})",
    "Cos": "math.cos({0})", "Tan": "math.tan({0})",
    # through expm1 (~3 ulp): libm's tanh costs 5x more; |x| > cth (9 in float32, 20 in float64) rounds to +-1
    "Tanh": "(np.copysign(c1, {0}) if abs({0}) > cth else {r} / ({r} + c2))",
    "Sigmoid": "(c1 / (c1 + {r}) if {0} >= c0 else {r} / (c1 + {r}))",  # r = exp(-|x|): never overflows
    "Relu": "({0} if ({0} > c0 or {0} != {0}) else c0)", "Floor": "np.floor({0})", "Ceil": "np.ceil({0})",
    "Add": "{0} + {1}", "Sub": "{0} - {1}", "Mul": "{0} * {1}", "RealDiv": "{0} / {1}",
    "FloorDiv": "np.floor({0} / {1})", "Pow": "{0} ** {1}",
    # NumPy's mod: fmod moved to the divisor's sign, a zero result with the divisor's sign, NaN for a zero divisor
    "FloorMod": "({r} if {1} == c0 else (({r} + {1} if ({1} < c0) != ({r} < c0) else {r}) if {r} != c0 else "
                "np.copysign(c0, {1})))",
    "Maximum": "({0} if ({0} != {0} or {0} > {1}) else {1})", "Minimum": "({0} if ({0} != {0} or {0} < {1}) else {1})",
    "SquaredDifference": "({0} - {1}) * ({0} - {1})",
    "Less": "{0} < {1}", "LessEqual": "{0} <= {1}", "Greater": "{0} > {1}", "GreaterEqual": "{0} >= {1}",
    "Equal": "{0} == {1}", "NotEqual": "{0} != {1}",
    # the NumPy kernels' order of operations (adplace.kernels.math): dy * (1 - y * y), 0.5 * dy / y, ...
    "TanhGrad": "{1} * (c1 - {0} * {0})", "SigmoidGrad": "{1} * {0} * (c1 - {0})", "SqrtGrad": "ch * {1} / {0}",
    "RsqrtGrad": "cmh * ({1} * {0}) * ({0} * {0})", "ReciprocalGrad": "-{0} * {0} * {1}",
    "ReluGrad": "{0} * (c1 if {1} > c0 else c0)",
}
# what an expression's {r} is: a value it reads more than once, computed once before it
_PRELUDES = {"FloorMod": "np.fmod({0}, {1})", "Tanh": "math.expm1(c2 * {0})", "Sigmoid": "math.exp(-abs({0}))"}
# tanh(x) ~= x * P(x*x) / Q(x*x) for |x| <= TANH_F32_LIMIT, coefficients lowest first (tools/fit_tanh.py fits them)
TANH_P = (0.9999999977636841, 0.13657199850387125, 0.0038399147460488163, 2.7437906167769082e-05,
          2.9234365096798074e-08, -1.1223479187924467e-11)
TANH_Q = (1.0, 0.46990531050203327, 0.02714171849446593, 0.00038886601677872156, 1.2478088349181645e-06)
TANH_F32_LIMIT = 9.5  # float32 tanh rounds to +-1 from 9.011


def _horner(coefficients: tuple, variable: str) -> str:
    head, *rest = (f"np.float32({c!r})" for c in coefficients)
    return head if not rest else f"{head} + {variable} * ({_horner(coefficients[1:], variable)})"


# float32 forms that replace a library call by float32 arithmetic: LLVM vectorizes their loops, where one scalar
# call per element costs ~15x more (and more than NumPy's SIMD loop on long arrays); {r} is x * x
_FLOAT32 = {"Tanh": ("{0} * {0}", "(np.copysign(c1, {0}) if abs({0}) > cth else {0} * (%s) / (%s))"
                     % (_horner(TANH_P, "{r}"), _horner(TANH_Q, "{r}")))}
# ops whose loop calls a scalar math library function: Numba cannot vectorize these, so on long arrays NumPy's SIMD
# loops beat the fused loop (runtime/fusion.py keeps them out of long groups)
LIBRARY_CALLS = frozenset({"Exp", "Log", "Log1p", "Sin", "Cos", "Tan", "Tanh", "Sigmoid", "Pow", "FloorMod"})


def calls_library(op_type: str, dtype_name: str) -> bool:
    """Whether the op's loop code calls a scalar math library function for inputs of this dtype (float32, ...)."""
    return op_type in LIBRARY_CALLS and not (dtype_name == "float32" and op_type in _FLOAT32)


_CONSTANTS = {"c0": 0.0, "c1": 1.0, "c2": 2.0, "ch": 0.5, "cmh": -0.5}
_TANH_SATURATES = {"float32": TANH_F32_LIMIT, "float64": 20.0}
_NUMPY_NAMES = {"float32": "np.float32", "float64": "np.float64", "bool": "np.bool_"}
BLOCK = 512  # elements a loop cut into passes (_passes) takes through all of them at a time: its buffers fit L1


class LoopSource(NamedTuple):
    """The generated module's text and what its `loop(n, x0, x1, ...)` takes: per leaf, its dtype and whether it is
    an array (else a scalar); its output dtype."""

    text: str
    leaf_dtypes: tuple   # NumPy dtype names
    leaf_is_array: tuple
    out_dtype: str
    digest: str


def loop_source(members: list[Member], leaf_dtypes: list, leaf_is_array: list) -> LoopSource:
    """The module defining `loop(n, x0, ...)`: members in order over leaves `x<k>` (1-d arrays of n or scalars),
    returning the last member's values as a new 1-d array of n."""
    names = tuple(np.dtype(d.as_numpy_dtype).name for d in leaf_dtypes)
    is_array = tuple(bool(a) for a in leaf_is_array)
    float_type = _NUMPY_NAMES[np.dtype(members[0].in_dtype.as_numpy_dtype).name]
    out = _dtype_name(members[-1].out_dtype)
    params = ", ".join(f"x{k}" for k in range(len(names)))
    lines = [f"# adplace fused elementwise loop (FMA contraction); leaves {list(zip(names, is_array))} -> {out}",
             "import math",
             "import numpy as np", "", "", f"def loop(n{', ' if params else ''}{params}):"]
    arrays = [k for k, a in enumerate(is_array) if a]
    if arrays:
        lines.append(f"    if {' or '.join(f'x{k}.shape[0] != n' for k in arrays)}:")
        lines.append("        raise ValueError('a leaf is not of the fused shape')")
    lines.append(f"    y = np.empty(n, {_NUMPY_NAMES[out]})")
    constants = {**_CONSTANTS, "cth": _TANH_SATURATES[np.dtype(members[0].in_dtype.as_numpy_dtype).name]}
    lines += [f"    {name} = {float_type}({value})" for name, value in constants.items()]
    passes = _passes(members)
    if len(passes) == 1:
        lines.append("    for i in range(n):")
        lines += _pass_body(members, passes[0], is_array, set(), "        ")
    else:  # each pass over a block of BLOCK elements in turn; values later passes read wait in block buffers
        defined_in = {f"t{k}": p for p, span in enumerate(passes) for k in span}
        carried = sorted({int(a[1:]) for p, span in enumerate(passes) for k in span for a in members[k].args
                          if defined_in.get(a, p) < p})
        lines += [f"    b{k} = np.empty({BLOCK}, {_NUMPY_NAMES[_dtype_name(members[k].out_dtype)]})" for k in carried]
        lines += [f"    for s in range(0, n, {BLOCK}):", f"        e = min(s + {BLOCK}, n)"]
        for span in passes:
            lines.append("        for i in range(s, e):")
            lines += _pass_body(members, span, is_array, set(carried), "            ")
    lines.append("    return y")
    text = "\n".join(lines) + "\n"
    return LoopSource(text, names, is_array, out, hashlib.sha1(text.encode()).hexdigest()[:20])


def _dtype_name(dtype) -> str:
    return "bool" if dtype.is_bool else np.dtype(dtype.as_numpy_dtype).name


def _passes(members: list[Member]) -> list[range]:
    """The members' index ranges that loop over the elements one after another: one range, or, where two or more
    members are vectorized float32 approximations, a cut after each but the last. Each approximation is a long chain
    of dependent multiplies and a division; two or more in one loop body make it too long for the CPU to overlap
    elements (3 tanh in a loop cost 4x one), while a pass of its own overlaps them fully."""
    heavy = [k for k, m in enumerate(members) if m.in_dtype.name == "float32" and m.op_type in _FLOAT32]
    bounds = [0, *(k + 1 for k in heavy[:-1]), len(members)]
    return [range(a, b) for a, b in zip(bounds, bounds[1:])]


def _pass_body(members: list[Member], span: range, is_array: tuple, carried: set, indent: str) -> list[str]:
    """One pass's loop body for element i: read the leaves and carried values it uses, compute its members, store
    what later passes read (block buffers b<k>, at i - s) and, in the last pass, the result."""
    used = {a for k in span for a in members[k].args}
    lines = [f"a{k} = x{k}[i]" for k, a in enumerate(is_array) if a and f"x{k}" in used]
    lines += [f"t{k} = b{k}[i - s]" for k in sorted(carried) if k < span.start and f"t{k}" in used]
    arg_name = {f"x{k}": f"a{k}" for k, a in enumerate(is_array) if a}
    for k in span:
        member = members[k]
        args = tuple(arg_name.get(a, a) for a in member.args)
        prelude, expression = _PRELUDES.get(member.op_type), EXPRESSIONS[member.op_type]
        if member.in_dtype.name == "float32" and member.op_type in _FLOAT32:
            prelude, expression = _FLOAT32[member.op_type]
        if prelude is not None:
            lines.append(f"r{k} = {prelude.format(*args)}")
        lines.append(f"t{k} = {expression.format(*args, r=f'r{k}')}")
    lines += [f"b{k}[i - s] = t{k}" for k in sorted(carried) if k in span]
    if span.stop == len(members):
        lines.append(f"y[i] = t{len(members) - 1}")
    return [indent + line for line in lines]


def available() -> bool:
    """Whether Numba (the `jit` extra) is installed: a dict lookup once it is imported."""
    if "numba" in sys.modules:
        return sys.modules["numba"] is not None  # None: its import is blocked
    try:
        return importlib.util.find_spec("numba") is not None
    except (ImportError, ValueError):
        return False


_ENV = "ADPLACE_CPU_FUSION"
# os.environ's own dict of encoded names and values (CPython's os._Environ, which os.environ[...] = ... updates): a
# dict read instead of `os.environ.get`'s encode and decode, ~2 us on a slow core, paid by every small update.
_environ_data, _env_key = getattr(os.environ, "_data", None), getattr(os.environ, "encodekey", str)(_ENV)
_OFF = getattr(os.environ, "encodevalue", str)("0")


def enabled() -> bool:
    """Whether compiled loops are used at all: Numba is installed and ADPLACE_CPU_FUSION is not 0 (read each call)."""
    if type(_environ_data) is dict:
        return _environ_data.get(_env_key) != _OFF and available()
    return os.environ.get(_ENV, "1") != "0" and available()


def cache_dir() -> str:
    """Where fused loops' sources (and Numba's cache of their machine code, in __pycache__) are kept."""
    root = os.environ.get("ADPLACE_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "adplace")
    return os.path.join(root, "fused")


# loops compiled, loaded from Numba's disk cache, reused in this process; seconds spent compiling and loading
STATS = {"compiled": 0, "disk_hits": 0, "memory_hits": 0, "seconds": 0.0}
_loops: dict = {}           # source digest -> (source, compiled loop: a Numba dispatcher)
_lock = threading.Lock()
_warned: list = []


def _write_source(source: LoopSource) -> str | None:
    """The path of the source's module in the cache, written atomically once (an existing file is kept as it is:
    rewriting it would change its time stamp and make Numba's cache of it stale); None when it cannot be written."""
    directory = cache_dir()
    path = os.path.join(directory, f"adplace_fused_{source.digest}.py")
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == source.text:
                return path
    except OSError:
        pass
    try:
        os.makedirs(directory, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=directory, prefix=".adplace_fused_", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(source.text)
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError as exc:
        if not _warned:
            _warned.append(path)
            warnings.warn(f"adplace: cannot write fused kernels to {directory} ({exc}); compiling them in memory, "
                          f"for this process only (set ADPLACE_CACHE_DIR to a writable directory)", stacklevel=2)
        return None
    return path


def _signature(numba, source: LoopSource):
    types = numba.types
    leaves = [types.Array(getattr(types, d), 1, "C", readonly=True) if a else getattr(types, d)
              for d, a in zip(source.leaf_dtypes, source.leaf_is_array)]
    out = types.boolean if source.out_dtype == "bool" else getattr(types, source.out_dtype)
    return types.Array(out, 1, "C")(types.intp, *leaves)


def compiled_loop(source: LoopSource):
    """The compiled `loop` of a source: from this process's cache, else from Numba's cache on disk, else compiled
    (and saved there). Leaf arrays are typed read-only, so writable and read-only arrays both match it."""
    return compiled_function(source, "loop", lambda numba: _signature(numba, source), fastmath={"contract"})


def compiled_function(source, name: str, signature: Callable, nogil: bool = False, fastmath: set | bool = False):
    """Function `name` of a generated module (anything with `text` and `digest`, such as a LoopSource), compiled by
    Numba for `signature(numba)` (and `fastmath`, LLVM's fast-math flags): from this process's cache, else Numba's
    cache on disk, else compiled and saved. The flags must be the same for one source: they are not in its digest."""
    with _lock:
        known = _loops.get(source.digest)
        if known is not None:
            STATS["memory_hits"] += 1
            return known[1]
        import numba  # noqa: PLC0415 - the optional `jit` extra, loaded only when something is fused

        start = time.perf_counter()
        path = _write_source(source)
        if path is not None:
            module_name = f"adplace_fused_{source.digest}"
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[module_name] = module  # Numba's cache finds a function's module by name when it loads it
            function = getattr(module, name)
        else:
            namespace: dict = {}
            exec(compile(source.text, f"<adplace fused {source.digest}>", "exec"), namespace)  # noqa: S102 - generated
            function = namespace[name]
        compiled = numba.njit([signature(numba)], cache=path is not None, error_model="numpy", nogil=nogil,
                              fastmath=fastmath)(function)
        hits = sum(compiled.stats.cache_hits.values())
        STATS["disk_hits" if hits else "compiled"] += 1
        STATS["seconds"] += time.perf_counter() - start
        _loops[source.digest] = (source, compiled)
        return compiled


def forget_compiled() -> list[LoopSource]:
    """Drop this process's compiled loops (the disk cache stays); returns their sources (benchmarks, tests)."""
    with _lock:
        sources = [source for source, _ in _loops.values() if isinstance(source, LoopSource)]
        _loops.clear()
        return sources


def _refuse(*args):
    raise TypeError("inputs the fused loop refused before")


def fused_kernel(source: LoopSource, shape: tuple, fallback: Callable) -> Callable:
    """The kernel of a fused chain: leaves (arrays of `shape`, or scalars) -> the chain's output of `shape`.
    Array leaves are passed flattened (C order), scalars as floats. Inputs the loop does not take (another dtype or
    size) go to `fallback`, the unfused kernels, and so do all later calls: Numba takes ~100 us to refuse a call."""
    loop = compiled_loop(source)
    size = int(np.prod(shape, dtype=np.int64))
    params = ", ".join(f"x{k}" for k in range(len(source.leaf_is_array)))
    args = ", ".join([str(size), *(f"x{k}.ravel()" if a else f"float(x{k})"
                                   for k, a in enumerate(source.leaf_is_array))])
    reshape = "" if len(shape) == 1 else ".reshape(_shape)"
    text = (f"def fused({params}):\n    global _loop\n    try:\n        return _loop({args}){reshape}\n"
            f"    except (AttributeError, TypeError, ValueError):\n        _loop = _refuse\n"
            f"        return _fallback({params})\n")
    namespace = {"_loop": loop, "_refuse": _refuse, "_shape": tuple(shape), "_fallback": fallback}
    exec(compile(text, "<adplace fused kernel>", "exec"), namespace)  # noqa: S102 - generated from fixed names
    return namespace["fused"]
