"""Dense optimizer updates as one compiled loop each (Numba, the `jit` extra): every element of the variable, its
slots and the gradient is read once and the new values written once, where NumPy's `out=` calls
(kernels/state.py `_adam_into`, ...) pass over memory five to twelve times. Each loop keeps its reference's order of
operations in the variable's float type, so the values equal the reference's.

Adam, Momentum, RMSProp, centered RMSProp, Adagrad, Adadelta and FTRL (V1 and V2) have loops; their loop modules
are generated once per float type and cached on disk like the fused elementwise loops (adplace.kernels.cpu_fusion),
and run without the GIL. Each also has an in-place form (the same body writing the refs themselves: 28 bytes an
element of float32 Adam moved instead of 40, the new arrays being cold), which a step committing its updates after
its last kernel uses (runtime/deferred_updates.py; `in_place` below), and a form for variables under
kernels/state.py's RECYCLE_MIN_ELEMENTS that allocates its results (`small` below: compiled in a thread of its own,
NumPy's expressions until it is ready; a process forked meanwhile keeps NumPy's for that loop). The reference runs
instead without Numba, with ADPLACE_CPU_FUSION=0, for variables under LOOP_MIN_ELEMENTS (but over
RECYCLE_MIN_ELEMENTS), for use_nesterov, Adagrad without update_slots, FTRL with multiply_linear_by_lr, and for
arrays a loop does not take (not C-contiguous float32/float64 of one size).

FTRL with learning_rate_power -0.5 takes square roots, exact in both. Any other power keeps NumPy's `np.power`
(its SIMD pow differs from libm's, which Numba calls, in the last bit): the accumulator and both powers are computed
by NumPy as the reference does, then one loop does the rest.
"""
from __future__ import annotations

import hashlib
import threading
from typing import Callable, NamedTuple

import numpy as np

from adplace.kernels import cpu_fusion

# name -> (slot names, scalar names, loop body over g = grad[i] writing new_var[i] and new_<slot>[i])
_LOOPS = {
    "adam": (("m", "v"), ("alpha", "one_minus_beta1", "one_minus_beta2", "epsilon"), """\
        mi = m[i] + (g - m[i]) * one_minus_beta1
        vi = v[i] + (g * g - v[i]) * one_minus_beta2
        new_m[i] = mi
        new_v[i] = vi
        new_var[i] = var[i] - (mi * alpha) / (np.sqrt(vi) + epsilon)"""),
    "momentum": (("accum",), ("lr", "momentum"), """\
        a = accum[i] * momentum + g
        new_accum[i] = a
        new_var[i] = var[i] - a * lr"""),
    "rms_prop": (("ms", "mom"), ("lr", "one_minus_rho", "momentum", "epsilon"), """\
        msi = ms[i] + (g * g - ms[i]) * one_minus_rho
        momi = mom[i] * momentum + (g * lr) / np.sqrt(msi + epsilon)
        new_ms[i] = msi
        new_mom[i] = momi
        new_var[i] = var[i] - momi"""),
    "adagrad": (("accum",), ("lr",), """\
        a = accum[i] + g * g
        new_accum[i] = a
        new_var[i] = var[i] - (g * lr) / np.sqrt(a)"""),
    "centered_rms_prop": (("mg", "ms", "mom"), ("lr", "one_minus_rho", "momentum", "epsilon"), """\
        msi = ms[i] + (g * g - ms[i]) * one_minus_rho
        mgi = mg[i] + (g - mg[i]) * one_minus_rho
        momi = mom[i] * momentum + (g * lr) / np.sqrt((msi - mgi * mgi) + epsilon)
        new_ms[i] = msi
        new_mg[i] = mgi
        new_mom[i] = momi
        new_var[i] = var[i] - momi"""),
    "adadelta": (("accum", "accum_update"), ("lr", "rho", "one_minus_rho", "epsilon"), """\
        a = accum[i] * rho + (g * g) * one_minus_rho
        u = np.sqrt(accum_update[i] + epsilon) / np.sqrt(a + epsilon) * g
        new_accum[i] = a
        new_accum_update[i] = accum_update[i] * rho + (u * u) * one_minus_rho
        new_var[i] = var[i] - u * lr"""),
}

# FTRL (kernels/ftrl.py `_ftrl_into`): `pn`/`po` are the new/old accumulator to the power -lr_power; where |linear|
# > l1, var = (sign(linear) * l1 - linear) / (pn / lr + 2 * l2), else 0.
_FTRL_SQRT = """\
        a = accum[i]
        na = a + g * g
        pn = np.sqrt(na)
        po = np.sqrt(a)
"""
_FTRL_POWERS = """\
        na = new_accum[i]
        pn = new_var[i]
        po = new_linear[i]
"""
_FTRL_TAIL = """\
        sv = (pn - po) / lr * var[i]
        lin = linear[i] + ({shrunk} - sv)
        new_accum[i] = na
        new_linear[i] = lin
        if abs(lin) > l1:
            new_var[i] = ((l1 if lin > 0 else -l1) - lin) / (pn / lr + l2x2)
        else:
            new_var[i] = 0"""
for _name, _head in (("ftrl", _FTRL_SQRT), ("ftrl_powers", _FTRL_POWERS)):
    _LOOPS[_name] = (("accum", "linear"), ("lr", "l1", "l2x2"), _head + _FTRL_TAIL.format(shrunk="g"))
    _LOOPS[_name + "_v2"] = (("accum", "linear"), ("lr", "l1", "l2x2", "shrink2"),
                             _head + _FTRL_TAIL.format(shrunk="(var[i] * shrink2 + g)"))


class _Source(NamedTuple):
    text: str
    digest: str


def _source(name: str, dtype: str, in_place: bool = False) -> _Source:
    """The loop module of update `name`: into new arrays `new_<ref>`, or (`in_place`) into the refs themselves (each
    body reads every element of a ref before it writes it)."""
    slots, scalars, body = _LOOPS[name]
    refs = ("var", *slots)
    outs = () if in_place else tuple(f"new_{r}" for r in refs)
    if in_place:
        for r in refs:
            body = body.replace(f"new_{r}[i] =", f"{r}[i] =")
    params = ", ".join([*refs, "grad", *outs, *scalars])
    text = (f"# adplace fused {name} update ({dtype}{', in place' if in_place else ''})\nimport numpy as np\n\n\n"
            f"def update({params}):\n    for i in range(var.shape[0]):\n        g = grad[i]\n{body}\n")
    return _Source(text, hashlib.sha1(text.encode()).hexdigest()[:20])


# Smaller variables take the NumPy form. Adam's loop costs ~4.5 us a call besides the loop itself (checks, the
# split's scalars, a 0.65 us Numba call): on 512 float32 elements 4.7 us against NumPy's 6.2 (measured here), but
# compiling it (importing Numba, compiling or loading from the disk cache: 0.3-1 s once) for that takes a million calls
# to pay, and letting small variables take a loop another variable compiled cost the seed's tower fit ~1 us a step.
LOOP_MIN_ELEMENTS = 4096
_compiled: dict = {}  # (name, dtype char) -> compiled loop (dtype.name is a Python property: ~1 us a call)
_lock = threading.Lock()


def _loop(name: str, dtype: np.dtype, in_place: bool = False):
    key = (name, dtype.char, in_place)
    loop = _compiled.get(key)
    if loop is not None:
        return loop
    with _lock:
        if key not in _compiled:
            n_refs = 1 + len(_LOOPS[name][0])
            n_scalars = len(_LOOPS[name][1])

            def signature(numba):
                scalar, readonly, out = _types(numba, dtype, 1)
                arrays = [*[out] * n_refs, readonly] if in_place else [*[readonly] * (n_refs + 1), *[out] * n_refs]
                return numba.types.void(*arrays, *[scalar] * n_scalars)
            _compiled[key] = cpu_fusion.compiled_function(_source(name, dtype.name, in_place), "update", signature,
                                                          nogil=True)
        return _compiled[key]


_LOOP_TYPES = frozenset("fd")  # dtype.char of float32, float64


def _types(numba, dtype: np.dtype, ndim: int) -> tuple:
    """Numba's (scalar, read-only C array, writable C array) types of `dtype` for a loop's signature."""
    scalar = getattr(numba.types, dtype.name)
    return scalar, numba.types.Array(scalar, ndim, "C", readonly=True), numba.types.Array(scalar, ndim, "C")


def _typed(scalars, dtype: np.dtype) -> list:
    """A split's scalars as scalars of the loop's float type (the reference's own float math)."""
    return [s if type(s) is dtype.type else dtype.type(s) for s in scalars]

# Variables under kernels/state.py's RECYCLE_MIN_ELEMENTS take NumPy's expressions: ten or more ufunc calls of ~1 us on
# a few elements (Adam on the seed's 3 weights: ~9 us). Once Numba has compiled it, in a thread of its own (a short
# program never waits for it), one call of a loop allocating its results does the same (~4 us with its dispatch).
SMALL_LOOPS = True
_small: dict = {}  # (name, dtype char, ndim) -> compiled loop; None while it compiles; _FAILED when it could not
_small_threads: list = []
_FAILED = object()


def _small_source(name: str, dtype: str, ndim: int) -> _Source:
    """Loop `name` over small C-contiguous arrays of rank `ndim`: it checks their sizes and returns new arrays (the
    rank is in the text: compiled_function keeps one compiled function per text)."""
    slots, scalars, body = _LOOPS[name]
    refs = ("var", *slots)
    lines = [f"# adplace fused {name} update of a small variable ({dtype}, rank {ndim})", "import numpy as np", "", "",
             f"def update({', '.join([*(f'{r}_in' for r in refs), 'grad_in', *scalars])}):",
             f"    if {' or '.join(f'{r}_in.size != var_in.size' for r in (*refs[1:], 'grad'))}:",
             "        raise ValueError('sizes differ')"]
    lines += [f"    out_{r} = np.empty_like(var_in)" for r in refs]
    lines += [f"    {r} = {r}_in.reshape(-1)" for r in (*refs, "grad")]
    lines += [f"    new_{r} = out_{r}.reshape(-1)" for r in refs]
    lines += ["    for i in range(var.shape[0]):", "        g = grad[i]", body,
              f"    return {', '.join(f'out_{r}' for r in refs)}"]
    text = "\n".join(lines) + "\n"
    return _Source(text, hashlib.sha1(text.encode()).hexdigest()[:20])


def _compile_small(key: tuple, name: str, dtype: np.dtype, ndim: int) -> None:
    n_refs, n_scalars = 1 + len(_LOOPS[name][0]), len(_LOOPS[name][1])

    def signature(numba):
        scalar, readonly, array = _types(numba, dtype, ndim)
        return numba.types.Tuple([array] * n_refs)(*[readonly] * (n_refs + 1), *[scalar] * n_scalars)
    try:
        _small[key] = cpu_fusion.compiled_function(_small_source(name, dtype.name, ndim), "update", signature)
    except Exception:  # noqa: BLE001 - the NumPy expressions stay (a compiler error is not the program's)
        _small[key] = _FAILED


def wait_small_loops(timeout: float | None = None) -> bool:
    """Wait for the small variables' loops being compiled now; whether none is still compiling."""
    for thread in list(_small_threads):
        thread.join(timeout)
    return not any(t.is_alive() for t in _small_threads)


def _small_loop(name: str, var: np.ndarray):
    """The compiled small loop for `var`'s dtype and rank, or None: not compiled yet (its compile starts now in a
    thread of its own), not compilable, or not wanted (SMALL_LOOPS off, no Numba, ADPLACE_CPU_FUSION=0)."""
    dtype = var.dtype
    key = (name, dtype.char, var.ndim)
    loop = _small.get(key)
    if loop is not None:
        return None if loop is _FAILED else loop
    if key in _small or not SMALL_LOOPS or dtype.char not in _LOOP_TYPES or not dtype.isnative or \
            not cpu_fusion.enabled():
        return None
    with _lock:
        if key not in _small:
            _small[key] = None
            thread = threading.Thread(target=_compile_small, args=(key, name, dtype, var.ndim), daemon=True,
                                      name=f"adplace-compile-{name}")
            _small_threads[:] = [t for t in _small_threads if t.is_alive()] + [thread]
            thread.start()
    return None


def _compiled_update(name: str, reference: Callable, split: Callable, prepare: Callable | None = None) -> Callable:
    """`reference`'s signature `(attrs, out, *refs, *inputs)`, computed by loop `name` where it applies;
    `split(attrs, inputs)` gives (the loop's scalars, the gradient), or None where the loop does not apply. A split
    may name another loop of the same refs and scalars as a third item; `prepare(out, refs, inputs)` then runs first
    (FTRL's NumPy powers). Its `in_place(attrs, refs, inputs)` plans the same update in place (below)."""
    n_refs = 1 + len(_LOOPS[name][0])

    def loop_args(attrs, refs_and_inputs, out) -> tuple | None:
        """(the split, the loop's arrays flat, its scalars) where the loop applies, else None."""
        var = refs_and_inputs[0]
        dtype = var.dtype
        size = var.size
        if size < LOOP_MIN_ELEMENTS or dtype.char not in _LOOP_TYPES or not dtype.isnative or not cpu_fusion.enabled():
            return None
        parts = split(attrs, refs_and_inputs[n_refs:])
        if parts is None:
            return None
        arrays = (*refs_and_inputs[:n_refs], parts[1], *out)
        for a in arrays:  # the loop reads var.size elements of each: never past one's end
            if type(a) is not np.ndarray or a.size != size:
                return None
        if var.ndim != 1:  # flat views (a reshape would copy a non-contiguous array: the loop must write `out`)
            if not all(a.flags.c_contiguous for a in arrays):
                return None
            arrays = [a.reshape(-1) for a in arrays]
        return parts, arrays, _typed(parts[0], dtype)

    def loop_into(attrs, out, *refs_and_inputs):
        args = loop_args(attrs, refs_and_inputs, out)
        if args is None:
            return None
        parts, arrays, scalars = args
        loop = _loop(parts[2] if len(parts) > 2 else name, refs_and_inputs[0].dtype)
        if len(parts) > 2:
            prepare(out, refs_and_inputs[:n_refs], refs_and_inputs[n_refs:])
        try:
            loop(*arrays, *scalars)
        except TypeError:  # another dtype or a strided array: the loop has no such signature and wrote nothing
            return None
        return out

    def update_into(attrs, out, *refs_and_inputs):
        done = loop_into(attrs, out, *refs_and_inputs)
        return reference(attrs, out, *refs_and_inputs) if done is None else done

    def in_place(attrs, refs: list, inputs: tuple) -> Callable | None:
        """`apply(refs)`, updating these very arrays in place by the in-place form of the loop (the same values),
        or None where the loop does not apply or might refuse them (the caller computes out of place). `apply`
        holds the gradient and scalars only, never the refs: a commit counts the refs' references first."""
        args = loop_args(attrs, (*refs, *inputs), ())
        if args is None or len(args[0]) > 2:  # FTRL's powers loop reads its outputs as inputs: no in-place form
            return None
        arrays, scalars = args[1], args[2]
        dtype = refs[0].dtype
        for a in arrays:  # what the compiled signature takes: apply must not fail once a commit has begun
            if a.dtype != dtype or not a.flags.c_contiguous:
                return None
        if not all(a.flags.writeable for a in arrays[:n_refs]):
            return None
        loop, grad, flat = _loop(name, dtype, in_place=True), arrays[n_refs], refs[0].ndim != 1

        def apply(ref_arrays: list) -> None:
            if flat:
                ref_arrays = [a.reshape(-1) for a in ref_arrays]
            loop(*ref_arrays, grad, *scalars)
        return apply

    def small(attrs, refs: list, inputs: tuple) -> tuple | None:
        """The new arrays of a small variable's update by its compiled loop, or None (the caller's NumPy
        expressions run): no loop compiled, not one the loop takes, or a layout its signature refuses."""
        var = refs[0]
        loop = _small_loop(name, var)
        if loop is None or not cpu_fusion.enabled():
            return None
        parts = split(attrs, inputs)
        if parts is None or len(parts) > 2:
            return None
        try:
            return loop(*refs, parts[1], *_typed(parts[0], var.dtype))
        except (TypeError, ValueError):  # another dtype, a strided array, another size: nothing was written
            return None

    update_into.in_place = in_place
    update_into.small = small
    return update_into


def _adam_split(attrs, inputs):
    if attrs.get("use_nesterov"):
        return None
    beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad = inputs
    beta1, beta2 = beta1[()], beta2[()]  # array scalars: the reference's float math, without 0-d arrays' cost
    return (adam_alpha(np, lr[()], beta1_power[()], beta2_power[()]), 1 - beta1, 1 - beta2, epsilon), grad


def adam_alpha(xp, lr, beta1_power, beta2_power):
    """Adam's step size lr * sqrt(1 - beta2^t) / (1 - beta1^t), in the inputs' float type and TF's order (the loop,
    kernels/state.py's `_adam` and `_adam_into` all take it from here)."""
    return lr * xp.sqrt(1 - beta2_power) / (1 - beta1_power)


def _momentum_split(attrs, inputs):
    lr, grad, momentum = inputs
    return None if attrs.get("use_nesterov") else ((lr, momentum), grad)


def _rms_prop_split(attrs, inputs):
    lr, rho, momentum, epsilon, grad = inputs
    return (lr, 1 - rho[()], momentum, epsilon), grad


def _adagrad_split(attrs, inputs):
    lr, grad = inputs
    return ((lr,), grad) if attrs.get("update_slots", True) else None


def compiled_adam(reference: Callable) -> Callable:
    return _compiled_update("adam", reference, _adam_split)


def compiled_momentum(reference: Callable) -> Callable:
    return _compiled_update("momentum", reference, _momentum_split)


def compiled_rms_prop(reference: Callable) -> Callable:
    return _compiled_update("rms_prop", reference, _rms_prop_split)


def compiled_adagrad(reference: Callable) -> Callable:
    return _compiled_update("adagrad", reference, _adagrad_split)


def _adadelta_split(attrs, inputs):
    lr, rho, epsilon, grad = inputs
    return (lr, rho, 1 - rho[()], epsilon), grad


def compiled_centered_rms_prop(reference: Callable) -> Callable:
    return _compiled_update("centered_rms_prop", reference, _rms_prop_split)


def compiled_adadelta(reference: Callable) -> Callable:
    return _compiled_update("adadelta", reference, _adadelta_split)


def _ftrl_split(v2: bool) -> Callable:
    """FTRL's (scalars, grad[, the powers loop]); the V2 inputs carry l2_shrinkage before lr_power."""
    def split(attrs, inputs):
        if attrs.get("multiply_linear_by_lr"):
            return None
        grad, lr, l1, l2, *rest = inputs
        lr_power = rest[-1]
        scalars = (lr, l1, 2 * l2, 2 * rest[0]) if v2 else (lr, l1, 2 * l2)
        suffix = "_v2" if v2 else ""
        return (scalars, grad) if lr_power == -0.5 else (scalars, grad, "ftrl_powers" + suffix)
    return split


def _ftrl_powers(out, refs, inputs):
    """As the reference: new accum = accum + grad * grad, and its and the old accum's powers by NumPy's np.power,
    into new_accum, new_var and new_linear (the loop reads them there)."""
    new_var, new_accum, new_linear = out
    grad, exponent = inputs[0], -inputs[-1]
    np.multiply(grad, grad, out=new_accum)
    np.add(refs[1], new_accum, out=new_accum)
    np.power(new_accum, exponent, out=new_var)
    np.power(refs[1], exponent, out=new_linear)


def compiled_ftrl(reference: Callable) -> Callable:
    return _compiled_update("ftrl", reference, _ftrl_split(False), _ftrl_powers)


def compiled_ftrl_v2(reference: Callable) -> Callable:
    return _compiled_update("ftrl_v2", reference, _ftrl_split(True), _ftrl_powers)
